"""The core's error paths for an allocation that failed, under ``RLIMIT_AS``: a ``MemoryError``
(or the documented fallback), never a signal.

Each case runs in a child Python that calls one path again and again, the address-space limit
set a few MiB higher each time (``vm() + headroom``, the limit lifted between calls), so the
allocation that fails, and what is left after it, differ from call to call. The child runs with
mimalloc reserving 32 MiB at a time (``MIMALLOC_ARENA_RESERVE``; 1 GiB by default, which an
input this small never fills): the limit then bites after a few MiB, as it did in CI with the
default reserve and GBs of output (``tests/test_files.py``).

An OutOfMemory used to be made an ``io::Error`` by formatting its message, a ``String``, while
the buffers that took the memory were still held; that allocation failed in turn and Rust
aborted (``normalize --jobs``'s plan of a 40 MiB line: SIGABRT, "memory allocation of 34 bytes
failed", 2 runs in 15 of this sweep). A worker thread that was still starting when the others
had taken the memory left aborted in glibc ("failed to register TLS destructor: out of memory",
3 runs in 15): the workers now all start before any work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")

SWEEP = r"""
import os, resource, sys
import checkfu_fast
from checkfu_fast import _native

def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024

how, path, warm, out = sys.argv[1:5]
lo, hi, step = (int(x) for x in sys.argv[5:8])
budget = (64 << 20, 64, 1_000_000)

def call(path):
    # what the path returns when it did its work, or when it left the file to Python
    if how == "fold":
        r = _native._usage_fold_files([(path, None)], "claude", *budget, 1)
        return "left" if r == [None] else "ok"
    if how == "resume":
        r = _native._usage_fold_resume([(path, None, None)], "claude", *budget, 1)
        return "left" if r == [None] else "ok"
    if how == "merge":
        merged, _ = _native._UsageMerge(None).fold_files([path], "claude", *budget, 1)
        return "ok" if merged == 1 else "left"
    if how == "files":
        checkfu_fast.normalize_files([path], jobs=1)
        return "ok"
    if how == "split":
        checkfu_fast.normalize_files([path], jobs=2, _split_bytes=128 << 10)
        return "ok"
    if how == "ordered":
        open(out, "wb").close()
        try:
            _native._normalize_ordered([path], "claude", *budget, None, False, 2, 248 << 10,
                                       16 << 20, out, lambda *a: None)
        finally:
            os.unlink(out)
        return "ok"
    raise SystemExit(how)

assert call(warm) == "ok"  # the module, its threads' first allocations
for h in range(lo, hi, step):
    resource.setrlimit(resource.RLIMIT_AS, (vm() + (h << 20), resource.RLIM_INFINITY))
    try:
        got = call(path)
    except MemoryError:
        got = "MemoryError"
    except BaseException as exc:
        got = f"{type(exc).__name__}: {exc}"
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    print(h, got, flush=True)
print("after", call(path), flush=True)  # the process is sound: the same call without the limit
"""

#: one line of 40 MiB of assistant text: the framer's pending line and the event's JSONL
BIG_TEXT = 40 << 20


def _big_line(tmp_path: Path) -> Path:
    text = "a" * BIG_TEXT
    small = '{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}\n'
    big = small.replace('"hi"', f'"{text}"')
    p = tmp_path / "big.jsonl"
    p.write_text(small + big + small)
    return p


def _junk(tmp_path: Path) -> Path:
    # 256 k junk lines: ~30 MiB of JSONL grown in memory, one status/unknown event each
    p = tmp_path / "junk.jsonl"
    p.write_bytes(b"y\n" * (256 << 10))
    return p


def sweep(how: str, path: Path, tmp_path: Path, lo: int, hi: int, step: int) -> list[str]:
    warm = tmp_path / "warm.jsonl"
    warm.write_bytes(path.read_bytes()[:200])
    env = dict(os.environ, MIMALLOC_ARENA_RESERVE="32MiB")
    args = [how, str(path), str(warm), str(tmp_path / "out.jsonl"), str(lo), str(hi), str(step)]
    r = subprocess.run(
        [sys.executable, "-c", SWEEP, *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    # an abort is -SIGABRT, with "memory allocation of N bytes failed" on stderr
    assert r.returncode == 0, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    lines = r.stdout.splitlines()
    assert lines[-1] == "after ok", r.stdout[-2000:]
    got = [line.split(" ", 1)[1] for line in lines[:-1]]
    return [NO_THREADS if g.startswith(NO_THREADS) else g for g in got]


#: thread pools that could not be made under the limit (rayon: no memory for the stacks)
NO_THREADS = "ValueError: cannot start the worker threads"


@pytest.mark.parametrize("how", ["fold", "resume", "merge"])
def test_the_usage_fold_leaves_a_file_it_has_no_memory_for_to_python(
    tmp_path: Path, how: str
) -> None:
    """``report``'s folds (``_usage_fold_files``, the cache's ``_usage_fold_resume``,
    ``_UsageMerge.fold_files``): a file whose fold ran out of memory is left to the Python fold
    (which raises ``MemoryError`` in its place), the process lives."""
    got = sweep(how, _big_line(tmp_path), tmp_path, 0, 120, 4)
    assert set(got) <= {"left", "ok", NO_THREADS}, got
    assert "left" in got, got  # the fold did run out of memory


@pytest.mark.parametrize("how", ["files", "split"])
def test_normalize_files_in_memory_runs_out_with_memory_error(tmp_path: Path, how: str) -> None:
    """``normalize_files`` into memory, whole (``split::normalize_file``'s growing output) and
    cut into ranges (``normalize_range``, ``rebase``): ``MemoryError``."""
    got = sweep(how, _junk(tmp_path), tmp_path, 0, 48, 2)
    assert set(got) <= {"MemoryError", "ok", NO_THREADS}, got
    assert got.count("MemoryError") >= len(got) // 2, got


def test_normalize_jobs_runs_out_with_memory_error(tmp_path: Path) -> None:
    """``checkfu-fast normalize --jobs 2`` (``_normalize_ordered``, rust/ordered.rs) on a file
    with a 40 MiB line: its plan (the framing of the line) or its worker runs out of memory;
    the run stops and raises ``MemoryError`` once its workers are gone."""
    got = sweep("ordered", _big_line(tmp_path), tmp_path, 8, 200, 4)
    assert set(got) <= {"MemoryError", "ok"}, got
    assert "MemoryError" in got, got
