"""The core under memory pressure and shared between threads (issue 11, containment).

- An allocation whose size comes from the input fails with ``MemoryError``, never an abort:
  each case runs in a child Python under ``RLIMIT_AS`` (the allocations that used to abort the
  process were the framer's pending line, the span vector of a chunk and the parse tree). A
  chunk is now framed a window at a time: 64 M blank lines in one chunk need no memory of
  their size at all.
- A ``Normalizer`` shared by threads serializes their calls: every line fed is in the output
  exactly once, each chunk's lines together, on both paths.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

import checkfu_fast
from checkfu_fast import reference

IMPLS = {"native": checkfu_fast, "reference": reference}

CHILD = r"""
import resource, sys
import checkfu_fast
from checkfu_fast import reference
impl, case = sys.argv[1], sys.argv[2]
mod = checkfu_fast if impl == "native" else reference
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
big = dict(max_line_bytes=1 << 40, max_nodes=1 << 40)
if case == "pending":  # one line without LF, fed in 16 MiB chunks: the pending line grows
    n = mod.Normalizer("claude", **big)
    chunk = b"x" * (16 << 20)
elif case == "tree":  # one 200 MB line of 100 M array items: the parse tree
    data = b"[" + b"1," * (100 << 20) + b"1]\n"
elif case == "journal":  # a journal record holding a 200 MB array: its parse tree
    data = b'{"kind":"quarantine","x":[' + b"1," * (100 << 20) + b"1]}\n"
else:  # 64 M blank lines in one chunk: framed a window at a time (was a vector of 64 M spans)
    data = b"\n" * (64 << 20)
resource.setrlimit(resource.RLIMIT_AS, (vm() + (256 << 20), resource.RLIM_INFINITY))
try:
    if case == "pending":
        for _ in range(64):
            n.feed(chunk)
    elif case == "journal":
        mod.validate_journal(data, **big)
    else:
        out = mod.normalize(data, "claude", **big)
        assert out == [], out[:3]
except MemoryError:
    print("MemoryError")
else:
    print("no error")
    sys.exit(0)
if case == "pending":  # the stream state is lost: later calls say so, on both paths
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    for call in (lambda: n.feed(b"{}\n"), n.finish):
        try:
            call()
        except ValueError as exc:
            print("ValueError", exc)
"""


@pytest.mark.parametrize(
    ("impl", "case"),
    [
        ("native", "pending"),
        ("native", "tree"),
        ("native", "lines"),
        ("native", "journal"),
        ("reference", "pending"),
        ("reference", "tree"),
        ("reference", "journal"),
    ],
)
def test_allocation_failure_is_memory_error_not_an_abort(impl, case):
    p = subprocess.run(
        [sys.executable, "-c", CHILD, impl, case], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]  # an abort would be -SIGABRT
    lines = p.stdout.splitlines()
    expected = "no error" if case == "lines" else "MemoryError"
    assert lines[0] == expected, p.stdout + p.stderr[-2000:]
    if case == "pending":
        lost = "ValueError the Normalizer ran out of memory earlier; its stream state is lost"
        assert lines[1:] == [lost, lost]


THREADS = 8
CHUNKS = 40


def chunk_of(t: int, c: int) -> bytes:
    # whole lines; every 5th chunk is large enough (>= 64 KiB) for the native GIL release
    n = 1200 if c % 5 == 0 else 3
    return b"".join(b'{"type":"x","t":%d,"c":%d,"i":%d}\n' % (t, c, i) for i in range(n))


@pytest.mark.parametrize("impl", IMPLS.values(), ids=IMPLS.keys())
def test_a_shared_normalizer_serializes_threads(impl):
    n = impl.Normalizer("claude")
    results: list[list[dict]] = [[] for _ in range(THREADS)]
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(t: int) -> None:
        try:
            start.wait()
            for c in range(CHUNKS):
                results[t].append((c, n.feed(chunk_of(t, c))))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert n.finish() == []
    events = []
    for t in range(THREADS):
        for c, got in results[t]:
            # each call returns exactly the lines of its own chunk, in order, contiguously
            want = chunk_of(t, c).decode().splitlines()
            assert [e["raw"] for e in got] == want
            pos = [e["position"] for e in got]
            assert pos == [pos[0] + sum(len(w) + 1 for w in want[:i]) for i in range(len(want))]
            events += got
    # every line accounted for exactly once; seq numbers are a permutation of 0..N-1
    total = sum(len(chunk_of(t, c).splitlines()) for t in range(THREADS) for c in range(CHUNKS))
    assert len(events) == total
    assert sorted(e["seq"] for e in events) == list(range(total))
    assert len({e["position"] for e in events}) == total
    # seq order is stream order: sorting by seq sorts by position
    by_seq = sorted(events, key=lambda e: e["seq"])
    assert [e["position"] for e in by_seq] == sorted(e["position"] for e in events)
