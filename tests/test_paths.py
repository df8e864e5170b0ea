"""Directory input (checkfu_fast.paths): one rule for normalize_files, audit_files, report and
the CLI commands normalize/report/audit; and the CLI's progress line on stderr."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import paths
from checkfu_fast.audit import audit_files
from checkfu_fast.progress import Progress
from checkfu_fast.report import iter_files

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "vectors" / "samples"
LINE = b'{"type":"result","subtype":"success","result":"ok","usage":{"input_tokens":3}}\n'


def tree(tmp_path: Path) -> Path:
    top = tmp_path / "logs"
    for rel in [
        "top.jsonl",
        "b.ndjson",
        "a/x.jsonl",
        "a/y.log",
        "a/z.json",
        "a/w.jsonl.gz",
        "a/v.jsonl.zst",
        "a/u.ndjson.gz",
        "B/upper.jsonl",
        "c/d/e.jsonl",
        # not taken: other suffixes, hidden files and hidden directories
        "notes.txt",
        "a/x.jsonl.bak",
        "a/.hidden.jsonl",
        ".git/objects.jsonl",
        "a/.cache/k.jsonl",
    ]:
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(LINE)
    return top


WANT = [
    "b.ndjson",
    "top.jsonl",
    "B/upper.jsonl",
    "a/u.ndjson.gz",
    "a/v.jsonl.zst",
    "a/w.jsonl.gz",
    "a/x.jsonl",
    "a/y.log",
    "a/z.json",
    "c/d/e.jsonl",
]


def rel(top: Path, found: list[str]) -> list[str]:
    return [os.path.relpath(p, top) for p in found]


def test_the_rule_recursive_filtered_sorted(tmp_path: Path) -> None:
    top = tree(tmp_path)
    assert rel(top, paths.expand([top])) == WANT
    # a file named directly is always taken, whatever its name; '-' and missing paths as given
    assert paths.expand([top / "notes.txt", "-", tmp_path / "missing"]) == [
        str(top / "notes.txt"),
        "-",
        str(tmp_path / "missing"),
    ]
    # the directory given is walked even when its own name is hidden
    hidden = tmp_path / ".sessions"
    (hidden / "2026").mkdir(parents=True)
    (hidden / "2026" / "r.jsonl").write_bytes(LINE)
    assert rel(hidden, paths.expand([hidden])) == ["2026/r.jsonl"]
    assert paths.empty_dirs([top, tmp_path / "missing", top / "a" / ".cache"]) == []
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    assert paths.empty_dirs([tmp_path / "empty"]) == [str(tmp_path / "empty")]


def test_symlink_loops_are_walked_once(tmp_path: Path) -> None:
    top = tree(tmp_path)
    os.symlink(top, top / "c" / "loop")  # a loop back to the top
    os.symlink(top / "a", top / "again")  # a second name for a directory already walked
    assert rel(top, paths.expand([top])) == WANT
    # a link to a directory outside the tree is followed
    other = tmp_path / "other"
    other.mkdir()
    (other / "o.jsonl").write_bytes(LINE)
    os.symlink(other, top / "link")
    assert rel(top, paths.expand([top])) == [*WANT, "link/o.jsonl"]


def test_every_entry_point_uses_the_rule(tmp_path: Path) -> None:
    top = tree(tmp_path)
    found = paths.expand([top])
    assert list(iter_files([str(top)])) == found
    want = checkfu_fast.normalize_files(found)
    assert checkfu_fast.normalize_files([top]) == want
    report, failed = audit_files([str(top)])
    assert failed == [] and report["files"] == len(WANT)


def cli(*args: str, **kw: object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args],
        capture_output=True,
        cwd=ROOT,
        check=False,
        **kw,  # type: ignore[arg-type]
    )


def test_cli_commands_take_directories(tmp_path: Path) -> None:
    top = tree(tmp_path)
    files = paths.expand([top])
    by_dir = cli("normalize", str(top))
    by_files = cli("normalize", *files)
    assert by_dir.returncode == 0, by_dir.stderr
    assert by_dir.stdout == by_files.stdout != b""
    assert cli("normalize", "--jobs", "2", str(top)).stdout == by_files.stdout
    rep = cli("report", "--json", str(top))
    assert rep.returncode == 0 and b'"files": 10' in rep.stdout
    aud = cli("audit", "--json", str(top))
    assert aud.returncode == 0 and aud.stdout.startswith(b'{"files": 10,')
    (tmp_path / "empty").mkdir()
    for cmd in ("normalize", "report", "audit"):
        res = cli(cmd, str(tmp_path / "empty"))
        assert res.returncode == 1, cmd
        assert b"empty: no stream files" in res.stderr, cmd


# -- progress ----------------------------------------------------------------------------------


def test_progress_line_and_eta() -> None:
    now = [0.0]
    out = io.StringIO()
    files = [str(SAMPLES / "claude-session.jsonl"), str(SAMPLES / "codex-session.jsonl")]
    sizes = [os.path.getsize(f) for f in files]
    p = Progress(files, True, out, clock=lambda: now[0])
    now[0] = 2.0
    p.read(sizes[0])
    p.file_done(files[0])
    line = out.getvalue()
    total = sum(sizes) / 1e6
    assert line == (
        f"checkfu-fast: 1/2 files, {sizes[0] / 1e6:.1f}/{total:.1f} MB, "
        f"{sizes[0] / 2e6:.1f} MB/s, ETA 0:0{round(2 * sizes[1] / sizes[0])}\n"
    )
    p.close()  # not a terminal: one line per file, nothing at the end
    assert out.getvalue() == line
    off = io.StringIO()
    q = Progress(files, False, off)
    q.read(10)
    q.file_done(files[0])
    q.close()
    assert off.getvalue() == ""


@pytest.mark.parametrize("command", ["normalize", "report", "audit"])
def test_progress_forced_or_not_and_stdout_unchanged(command: str) -> None:
    plain = cli(command, str(SAMPLES))
    forced = cli(command, "--progress", str(SAMPLES))
    off = cli(command, "--no-progress", str(SAMPLES))
    assert plain.returncode == forced.returncode == off.returncode == 0
    assert plain.stdout == forced.stdout == off.stdout
    # stderr is a pipe here: nothing extra unless forced
    assert plain.stderr == off.stderr == b""
    lines = forced.stderr.decode().splitlines()
    assert len(lines) == 8 and lines[-1].startswith("checkfu-fast: 8/8 files, ")
    assert all(" MB/s, ETA " in line for line in lines)
    assert b"\r" not in forced.stderr and b"\x1b" not in forced.stderr


def test_progress_on_a_terminal() -> None:
    # stderr a pty: the line is redrawn in place and ended with a newline; stdout unchanged
    leader, follower = pty.openpty()
    try:
        res = subprocess.run(
            [sys.executable, "-m", "checkfu_fast", "normalize", str(SAMPLES)],
            stdout=subprocess.PIPE,
            stderr=follower,
            cwd=ROOT,
            check=False,
        )
        os.close(follower)
        follower = -1
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the pty's other side is closed
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert res.returncode == 0
    assert res.stdout == cli("normalize", str(SAMPLES)).stdout
    assert seen.startswith(b"\rcheckfu-fast: ") and seen.endswith(b"\x1b[K\r\n")
    assert b"8/8 files, " in seen and b" MB/s, ETA " in seen
    # --no-progress on a terminal: nothing
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-m", "checkfu_fast", "normalize", "--no-progress", str(SAMPLES)],
            stdout=subprocess.DEVNULL,
            stderr=follower,
            cwd=ROOT,
            check=True,
        )
        os.set_blocking(leader, False)
        try:
            rest = os.read(leader, 65536)
        except (BlockingIOError, OSError):
            rest = b""
    finally:
        os.close(follower)
        os.close(leader)
    assert rest == b""
