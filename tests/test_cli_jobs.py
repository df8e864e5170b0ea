"""``checkfu-fast normalize --jobs N``: every file larger than a range cut at newlines into
ranges (rust/split.rs) that the workers take in order, their JSONL written in input order with
``seq`` numbered on across a file's ranges: byte for byte the output of ``--jobs 1`` (and of
``normalize_jsonl``), with the per-file errors, exit status and progress lines of ``--jobs 1``.

The range size is set small (``cli.range_bytes``) so that test files are cut into many ranges:
in this process for ``-o FILE`` (the ranges written by the core, appended to the file) and
through a real standard output in a child process (written by the core to descriptor 1)."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import checkfu_fast
from checkfu_fast import _native, cli
from conftest import CORPUS, ROOT

REAL = sorted(CORPUS.glob("*/*.jsonl"))
GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))
JOBS = ("1", "2", "3")


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    monkeypatch.setattr(cli, "range_bytes", lambda jobs: 997)
    yield 997


def normalize(tmp_path: Path, *argv: str) -> tuple[int, bytes]:
    out = tmp_path / "out.jsonl"
    out.unlink(missing_ok=True)
    status = cli.main(["normalize", "--no-progress", *argv, "-o", str(out)])
    return status, out.read_bytes() if out.exists() else b""


def by_jobs(tmp_path: Path, *argv: str) -> dict[str, tuple[int, bytes]]:
    return {j: normalize(tmp_path, "--jobs", j, *argv) for j in JOBS}


def split_count(path: Path, target: int = 997) -> int:
    ranges, _, _ = _native._split_plan(str(path), "auto", target)
    return len(ranges)


def test_split_files_same_bytes_as_one_job(tmp_path: Path, small_ranges: int) -> None:
    files = [p for p in GOLDEN + REAL if p.stat().st_size > 3 * small_ranges]
    assert sum(split_count(p) > 2 for p in files) > 20  # really cut into ranges
    names = [str(p) for p in files]
    got = by_jobs(tmp_path, *names)
    assert got["1"][0] == 0 and got["1"][1]
    assert got["2"] == got["1"] and got["3"] == got["1"]
    # each file's seq from 0 and on, with its source tag: one stream per file
    assert got["1"] == (0, b"".join(tagged(n) for n in names))


def tagged(name: str) -> bytes:
    n = checkfu_fast.Normalizer(source=name)
    return n.feed_jsonl(Path(name).read_bytes()) + n.finish_jsonl()


def test_one_split_file_equals_normalize_jsonl(tmp_path: Path, small_ranges: int) -> None:
    for p in sorted(REAL, key=lambda p: p.stat().st_size)[-3:]:
        assert split_count(p) > 5
        want = checkfu_fast.normalize_jsonl(p.read_bytes())
        for j in JOBS:
            assert normalize(tmp_path, "--jobs", j, str(p)) == (0, want), (p, j)
        for fields in ("lean", "kind,text,usage"):
            assert by_jobs(tmp_path, "--fields", fields, str(p))["3"] == normalize(
                tmp_path, "--fields", fields, str(p)
            )


CONTEXT = b'{"type":"turn_context","payload":{"cwd":"/p","model":"%s"}}\n'
COUNT = (
    b'{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
    b'{"input_tokens":%d,"output_tokens":1}}}}\n'
)


def test_codex_model_context_carries_across_ranges(tmp_path: Path, small_ranges: int) -> None:
    # the model of the last turn_context before a cut names the readings after it
    lines = []
    for turn in range(8):
        lines.append(CONTEXT % f"gpt-{turn}".encode())
        lines += [COUNT % (turn * 100 + i) for i in range(1, 30 + 7 * turn)]
    p = tmp_path / "rollout.jsonl"
    p.write_bytes(b"".join(lines))
    _, resume, contexts = _native._split_plan(str(p), "auto", small_ranges)
    assert resume == "codex" and len(set(contexts[1:])) == 8  # every turn's model crosses a cut
    want = checkfu_fast.normalize_jsonl(p.read_bytes())
    usage = [json.loads(x)["usage"]["model"] for x in want.splitlines() if b'"usage"' in x]
    assert len(set(usage)) == 8
    for dialect in ("auto", "codex"):
        got = by_jobs(tmp_path, "--dialect", dialect, str(p))
        assert got["1"] == (0, want)
        assert got["2"] == got["1"] and got["3"] == got["1"], dialect


TEXT = b'{"type":"assistant","message":{"content":[{"type":"text","text":"%s"}]}}\n'
INIT = b'{"type":"system","subtype":"init","session_id":"s","tools":[]}\n'


def test_bad_lines_at_range_edges(tmp_path: Path, small_ranges: int) -> None:
    # bad lines (not JSON, invalid UTF-8, over the line budget) among good ones, some right
    # after a cut and some right before one: each gives its error event at its own position,
    # seq running on
    bad = [b"{not json\n", b'{"bad":"\xff"}\n', b"[" * 3000 + b"\n"]
    data = INIT
    for i in range(300):
        data += TEXT % (b"x" * (40 + i % 50))
        if i % 3 == 1:
            data += bad[i % 9 // 3]
    p = tmp_path / "bad.jsonl"
    p.write_bytes(data)
    ranges, _, _ = _native._split_plan(str(p), "auto", small_ranges, 2000)
    assert len(ranges) > 20
    assert any(data[s:].startswith(tuple(bad)) for s, _ in ranges[1:])  # a bad line opens a range
    assert any(data[:e].endswith(tuple(bad)) for _, e in ranges[:-1])  # and one closes a range
    want = checkfu_fast.normalize_jsonl(data, max_line_bytes=2000)
    assert want.count(b'"kind":"error"') == 100
    got = by_jobs(tmp_path, "--max-line-bytes", "2000", str(p))
    assert got["1"] == (0, want)
    assert got["2"] == got["1"] and got["3"] == got["1"]


def test_gz_input_is_one_unit_beside_split_files(tmp_path: Path, small_ranges: int) -> None:
    big = max(REAL, key=lambda p: p.stat().st_size)
    gz = tmp_path / "big.jsonl.gz"
    gz.write_bytes(gzip.compress(big.read_bytes()))
    assert gz.stat().st_size > 3 * small_ranges
    units = list(cli._ranges(cli.build_parser().parse_args(["normalize", "--jobs", "2",
                                                             str(gz), str(big)]),
                             [str(gz), str(big)], (64 << 20, 64, 1_000_000)))  # fmt: skip
    assert [u.k for u in units if u.name == str(gz)] == [None]
    assert len([u for u in units if u.name == str(big)]) > 5
    got = by_jobs(tmp_path, str(big), str(gz), str(big))
    assert got["2"] == got["1"] and got["3"] == got["1"]
    one = normalize(tmp_path, "--jobs", "2", str(gz))
    assert one == (0, checkfu_fast.normalize_jsonl(big.read_bytes()))


def test_unreadable_file_between_split_files(
    tmp_path: Path, small_ranges: int, capsys: pytest.CaptureFixture[str]
) -> None:
    big = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-2:]]
    names = [big[0], str(tmp_path / "missing.jsonl"), big[1]]
    got = {}
    for j in JOBS:
        got[j] = (*normalize(tmp_path, "--jobs", j, *names), capsys.readouterr().err)
    assert got["1"][0] == 1 and "missing.jsonl: No such file or directory" in got["1"][2]
    assert got["2"] == got["1"] and got["3"] == got["1"]


def test_progress_lines_as_one_job(tmp_path: Path, small_ranges: int) -> None:
    names = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-3:]]

    def lines(jobs: str) -> list[str]:
        res = child(tmp_path, "--jobs", jobs, "--progress", *names)
        assert res.returncode == 0
        # the rate and the time left vary from run to run
        return [re.sub(r"[0-9.]+ MB/s.*", "", x) for x in res.stderr.decode().splitlines()]

    one = lines("1")
    assert len(one) == 3
    assert lines("2") == one and lines("3") == one


CHILD = """
import sys
from checkfu_fast import cli
cli.range_bytes = lambda jobs: 997
sys.exit(cli.main(sys.argv[1:]))
"""


def child(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, "normalize", *argv], capture_output=True, check=False
    )


def test_split_files_to_standard_output(tmp_path: Path) -> None:
    names = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-4:]]
    runs = {j: child(tmp_path, "--jobs", j, *names) for j in JOBS}
    assert runs["1"].returncode == 0 and runs["1"].stdout
    for j in JOBS:
        assert (runs[j].returncode, runs[j].stdout, runs[j].stderr) == (
            runs["1"].returncode, runs["1"].stdout, runs["1"].stderr
        )  # fmt: skip
    # a reader that goes away: quiet, as with one job
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, "normalize", "--jobs", "2", *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(1000)
    p.stdout.close()
    assert p.wait(60) == 0
    assert p.stderr.read() == b""


def test_the_fallback_when_the_output_is_no_file(small_ranges: int) -> None:
    # an output that is neither descriptor 1 nor a file: the ranges renumbered in Python's hands
    import argparse
    import io

    from checkfu_fast.progress import Progress

    names = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-2:]]
    args = cli.build_parser().parse_args(["normalize", "--jobs", "2", *names])
    args.fields = None
    out = io.BytesIO()
    assert isinstance(args, argparse.Namespace)
    assert cli._parallel(args, names, out, True, Progress(names, False)) == 0
    assert out.getvalue() == b"".join(tagged(n) for n in names)


def test_parquet_same_bytes_for_every_jobs(tmp_path: Path, small_ranges: int) -> None:
    pytest.importorskip("pyarrow")
    names = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-3:]]
    got = {}
    for j in JOBS:
        out = tmp_path / f"out{j}.parquet"
        argv = ["normalize", "--no-progress", "--jobs", j, "--format", "parquet", "-o", str(out)]
        assert cli.main([*argv, *names]) == 0
        got[j] = out.read_bytes()
    assert got["2"] == got["1"] and got["3"] == got["1"]


def test_rebase_and_write_number_on(tmp_path: Path) -> None:
    n = checkfu_fast.Normalizer()
    part = n.feed_jsonl((INIT + TEXT % b"a" + TEXT % b"b") * 4)
    lines = part.splitlines(keepends=True)
    assert len(lines) >= 8
    want = b"".join(re.sub(rb'"seq":\d+', b'"seq":%d' % (98 + i), x, count=1)
                    for i, x in enumerate(lines))  # fmt: skip
    assert _native._rebase_jsonl(part, 98) == (want, len(lines))
    assert _native._rebase_jsonl(part, 0) == (part, len(lines))
    f = tmp_path / "w.jsonl"
    f.write_bytes(b"head\n")
    assert _native._write_jsonl(part, 98, str(f)) == len(lines)
    assert _native._write_jsonl(part, None, str(f)) == len(lines)
    assert f.read_bytes() == b"head\n" + want + part
    with pytest.raises(FileNotFoundError):
        _native._write_jsonl(part, 1, str(tmp_path / "no" / "such"))


def test_core_leaves_compressed_files_to_python(
    tmp_path: Path, small_ranges: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # plain files (large, small, empty) go through the core's ordered run; a gz file among
    # them (and a run of two) is done by the Python units in its place; same bytes
    real = sorted(REAL, key=lambda p: p.stat().st_size)
    big, small = real[-1], real[0]
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    gz = tmp_path / "a.jsonl.gz"
    gz.write_bytes(gzip.compress(real[-2].read_bytes()))
    gz2 = tmp_path / "b.jsonl"  # compressed whatever its name
    gz2.write_bytes(gzip.compress(small.read_bytes()))
    names = [str(p) for p in (big, gz, small, empty, gz, gz2, big, empty)]
    seen: list[list[str]] = []
    units = cli._parallel_units

    def spy(args: Any, files: list[str], *rest: Any) -> int:
        seen.append(files)
        return units(args, files, *rest)

    monkeypatch.setattr(cli, "_parallel_units", spy)
    got = by_jobs(tmp_path, *names)
    assert got["1"][0] == 0
    assert got["2"] == got["1"] and got["3"] == got["1"]
    assert got["1"][1] == b"".join(tagged_any(n) for n in names)
    assert seen == [[str(gz)], [str(gz), str(gz2)]] * 2  # --jobs 2 and 3; never a plain file


def tagged_any(name: str) -> bytes:
    from checkfu_fast.inputs import open_input

    with open_input(name) as f:
        data = f.read()
    n = checkfu_fast.Normalizer(source=name)
    return n.feed_jsonl(data) + n.finish_jsonl()


def test_errors_and_progress_in_order(tmp_path: Path) -> None:
    # a missing file, an unreadable one, a damaged gz file between split files: the messages
    # and the per-file progress lines of --jobs 1, in the same order, the same exit status
    real = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-2:]]
    damaged = tmp_path / "damaged.jsonl.gz"
    damaged.write_bytes(gzip.compress(b'{"type":"x"}\n' * 1000)[:-30])
    locked = tmp_path / "locked.jsonl"
    locked.write_bytes(b"{}\n")
    locked.chmod(0)
    names = [real[0], str(tmp_path / "missing.jsonl"), real[1], str(damaged), str(locked), real[0]]

    def run(jobs: str) -> tuple[int, bytes, list[str]]:
        res = child(tmp_path, "--jobs", jobs, "--progress", *names)
        lines = [re.sub(r"[0-9.]+ MB/s.*", "", x) for x in res.stderr.decode().splitlines()]
        return res.returncode, res.stdout, lines

    one = run("1")
    assert one[0] == 1 and len(one[2]) == len(names) + 2 + (0 if _readable(locked) else 1)
    assert any("missing.jsonl: No such file or directory" in x for x in one[2])
    assert any("damaged.jsonl.gz" in x and "damaged gzip data" in x for x in one[2])
    assert run("2") == one and run("3") == one


def _readable(p: Path) -> bool:
    try:
        p.read_bytes()
        return True
    except OSError:
        return False


def test_ctrl_c_leaves_no_output_file(tmp_path: Path) -> None:
    # Ctrl-C in the middle of a run to -o OUT: exit status 130, neither OUT nor its temporary
    # file left (as with one job), the workers stopped (the process exits)
    import signal
    import time

    big = max(REAL, key=lambda p: p.stat().st_size).read_bytes()
    data = tmp_path / "data"
    data.mkdir()
    for i in range(4):
        (data / f"{i}.jsonl").write_bytes(big * max(1, (40 << 20) // len(big)))
    outdir = tmp_path / "out"
    outdir.mkdir()
    for jobs in ("1", "2"):
        out = outdir / "out.jsonl"
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "checkfu_fast",
                "normalize",
                "--jobs",
                jobs,
                "-o",
                str(out),
                str(data),
            ],
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while not any(x.stat().st_size for x in outdir.iterdir()):  # writing has begun
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)
        p.send_signal(signal.SIGINT)
        assert p.wait(60) == 130, jobs
        assert p.stderr is not None and p.stderr.read() == b""
        assert list(outdir.iterdir()) == [], jobs


def test_write_errors_as_one_job(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    names = [str(p) for p in sorted(REAL, key=lambda p: p.stat().st_size)[-2:]]
    runs = {}
    for j in JOBS:
        with open("/dev/full", "wb") as full:
            res = subprocess.run([sys.executable, "-c", CHILD, "normalize", "--jobs", j, *names],
                                 stdout=full, stderr=subprocess.PIPE, check=False)  # fmt: skip
        runs[j] = (res.returncode, res.stderr)
    assert runs["1"] == (1, b"checkfu-fast: standard output: No space left on device\n")
    assert runs["2"] == runs["1"] and runs["3"] == runs["1"]


def test_the_command_turns_huge_pages_off(tmp_path: Path) -> None:
    # `checkfu-fast normalize` (the entry point, with sys.argv) sets no transparent huge pages
    # for the process (cli._no_huge_pages); a call of cli.main with a list does not
    status = Path("/proc/self/status")
    if "THP_enabled" not in (status.read_text() if status.exists() else ""):
        pytest.skip("no THP_enabled in /proc/self/status")
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    code = (
        "import sys\nfrom checkfu_fast import _launch, cli\n"
        "sys.argv = ['checkfu-fast', *sys.argv[1:]]\nassert _launch.main() == 0\n"
        "print([x for x in open('/proc/self/status') if x.startswith('THP_enabled')][0])\n"
    )
    res = subprocess.run([sys.executable, "-c", code, "normalize", str(empty)],
                         capture_output=True, check=True)  # fmt: skip
    assert res.stdout.split() == [b"THP_enabled:", b"0"]
    code = code.replace("_launch.main()", "cli.main(sys.argv[1:])")
    res = subprocess.run([sys.executable, "-c", code, "normalize", str(empty)],
                         capture_output=True, check=True)  # fmt: skip
    assert (
        res.stdout.split()[-1] != b"0"
        or "[never]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    )
