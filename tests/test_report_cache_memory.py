"""The report cache's compact state (docs/usage.md, "The cache"): the inputs' stamps packed by
the core, the old entries' places in arrays (a key's first line is its entry), and the memo
read and written a piece at a time."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import cli, paths, report_cache
from conftest import ROOT

pytest.importorskip("checkfu_fast._native")

EXAMPLES = ROOT / "docs" / "examples-sessions"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "projects" / "-home-dev-p").mkdir(parents=True)
    (root / "sessions").mkdir()
    shutil.copy(EXAMPLES / "claude-session.jsonl", root / "projects" / "-home-dev-p" / "s.jsonl")
    for p in EXAMPLES.glob("codex-*.jsonl"):
        shutil.copy(p, root / "sessions" / p.name)
    t = time.time_ns() - 3600 * 10**9  # not "racy": memoized
    for p in root.rglob("*.jsonl"):
        os.utime(p, ns=(t, t))
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = cli.main(["report", "--tz", "UTC", *argv])
    return status, capsys.readouterr().out


def test_stamp_table_is_os_stat_packed(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"{}\n")
    names = [str(a), str(tmp_path / "absent.jsonl"), str(a)]
    table = report_cache.stamp_table(names)
    assert len(table) == 15
    assert report_cache.row(table, 0) == list(paths.stamp_of(os.stat(a)))
    assert report_cache.row(table, 1) is None
    assert list(table[5:10]) == [-1] * 5
    assert report_cache.row(table, 2) == report_cache.row(table, 0)
    assert report_cache.row(table, 3) is None  # past the end
    # the memo's view: one input that cannot be examined, or was just modified, leaves none
    assert report_cache.stamps(names) is None
    assert report_cache.stamps([str(a)]) is None  # modified just now
    t = time.time_ns() - 3600 * 10**9
    os.utime(a, ns=(t, t))
    st = report_cache.stamps([str(a)])
    assert st is not None and list(st) == list(paths.stamp_of(os.stat(a)))
    assert report_cache.stamps([str(a)], {str(a): paths.stamp_of(os.stat(a))}) == st


def test_a_key_given_twice_has_its_first_line(tmp_path: Path) -> None:
    """Two lines of one key (the same new file named twice in one run): the first is the
    entry, and the second is not copied again."""
    summary: list[Any] = [[], [], [], "none", "s", "claude", False]
    cache = report_cache.SummaryCache(str(tmp_path))
    cache.put("a", [1, 2, 3], [summary, 1, 0, None], [])
    cache.put("b", [4, 5, 6], [summary, 2, 0, None], [])
    cache.put("a", [7, 8, 9], [summary, 3, 0, None], [])
    cache.save()
    again = report_cache.SummaryCache(str(tmp_path))
    assert len(again.old) == 3
    assert again.get("a", [1, 2, 3]) == [summary, 1, 0]
    assert again.get("a", [7, 8, 9]) is None
    again.put("c", [1, 1, 1], [summary, 4, 0, None], [])  # a change: the file is rewritten
    again.save()
    body = (tmp_path / report_cache.NAME).read_bytes().split(b"\n", 1)[1]
    assert [line.split(b"\t", 1)[0] for line in body.split(b"\n")] == [b"a", b"c", b"b"]


def test_the_old_entries_are_found_by_tag_and_copied_in_file_order(tmp_path: Path) -> None:
    summary: list[Any] = [[], [], [], "none", "s", "claude", False]
    cache = report_cache.SummaryCache(str(tmp_path))
    keys = [f"k{i}" for i in range(300)]
    for i, k in enumerate(keys):
        cache.put(k, [i, i, i], [summary, i, 0, None], [])
    cache.save()
    again = report_cache.SummaryCache(str(tmp_path))
    taken = [(i, k) for i, k in enumerate(keys) if i % 3 == 0][::-1]
    for i, k in taken:
        assert again.get(k, [i, i, i]) == [summary, i, 0]
    assert again.get("absent", [0, 0, 0]) is None
    again.put("new", [1, 2, 3], [summary, 1, 0, None], [])
    again.save()
    body = (tmp_path / report_cache.NAME).read_bytes().split(b"\n", 1)[1]
    got = [line.split(b"\t", 1)[0].decode() for line in body.split(b"\n")]
    # this run's entries in the order they came, then the others in the old file's order
    assert got == [k for _, k in taken] + ["new"] + [k for i, k in enumerate(keys) if i % 3]


def test_the_memo_is_read_a_piece_at_a_time(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(report_cache, "_PIECE", 7)
    memo = report_cache.Memo(str(tmp_path))
    text = "héllo wörld, " * 20 + "€"  # multi-byte characters across the pieces
    memo.put("k", text)
    pieces: list[str] = []
    assert memo.copy("k", pieces.append)
    assert "".join(pieces) == text and len(pieces) > 10
    assert memo.get("k") == text
    assert not memo.copy("absent", pieces.append)
    # damaged: nothing written
    path = Path(memo._path("k"))
    data = path.read_bytes()
    for damaged in (data[:-3], data.replace("wörld".encode(), b"world", 1)):
        path.write_bytes(damaged)
        got: list[str] = []
        assert not memo.copy("k", got.append) and got == []
        assert memo.get("k") is None
    # the right hash over text that is not UTF-8: not an output
    head, body = data.split(b"\n", 1)
    report_cache._write_body(str(path), report_cache.MEMO_FORMAT, body[:-1] + b"\xff")
    assert memo.get("k") is None
    assert json.loads(head)["format"] == report_cache.MEMO_FORMAT


def test_memo_hit_streams_to_write(tree: Path, capsys, monkeypatch) -> None:
    expected = run(capsys, "--json", str(tree))  # fills the memo
    assert expected == run(capsys, "--json", str(tree))  # report answers from it too
    monkeypatch.setattr(report_cache, "_PIECE", 100)
    pieces: list[str] = []
    argv = ["--json", "--tz", "UTC", "--no-progress", str(tree)]
    assert report_cache.memo_hit(argv, pieces.append) == ""
    assert len(pieces) > 3 and "".join(pieces) == expected[1]
    assert report_cache.memo_hit(argv) == expected[1]
    missing: list[str] = []
    assert report_cache.memo_hit(["--json", "--no-progress", str(tree)], missing.append) is None
    assert missing == []  # another zone, no output kept: nothing written


def test_the_full_run_takes_the_walk_the_memo_made(tree: Path, capsys, monkeypatch) -> None:
    """``checkfu-fast report`` asks the memo first (a walk, a stat per file): when nothing is
    kept, the full run of the same command line takes that walk and those stamps instead of
    walking the tree again, and prints what a run of its own prints."""
    from checkfu_fast import _launch, report

    expected = run(capsys, "--no-cache", "--json", "--by", "day", str(tree))
    walks: list[Any] = []
    real = report.expand

    def spy(p: Any) -> list[str]:
        walks.append(p)
        return real(p)

    monkeypatch.setattr(report, "expand", spy)
    argv = ["checkfu-fast", "report", "--json", "--tz", "UTC", "--by", "day", str(tree)]
    monkeypatch.setattr("sys.argv", argv)
    assert _launch.main() == 0  # the first run: no memo
    assert capsys.readouterr().out == expected[1]
    assert walks == [] and report_cache._walked is None  # taken, once
    # called otherwise (not this process's command line): the run walks itself
    assert report_cache.memo_hit(["--json", "--by", "model", str(tree)]) is None
    assert report_cache._walked is None
    monkeypatch.setattr("sys.argv", ["checkfu-fast", "report", "--json", str(tree)])
    assert report_cache.memo_hit(["--json", str(tree)]) is None
    assert report_cache.take_walk([str(tree), str(tree)]) is None  # other paths
    assert report_cache._walked is None
    assert run(capsys, "--json", "--by", "day", str(tree)) == expected  # the memo (report)
    assert walks == [[str(tree)]]


class _Failing:
    """A standard output whose writes fail with ``exc``."""

    def __init__(self, exc: OSError) -> None:
        self.exc = exc

    def write(self, text: str) -> int:
        raise self.exc

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError("no descriptor")


def test_the_entry_point_streams_the_memo(tree: Path, capsys, monkeypatch) -> None:
    """The entry point's own command line answered from the memo: the output goes to standard
    output a piece at a time (memo_hit returns ""), and an error writing it is the entry
    point's: a closed pipe quietly, another one said, exit status 1."""
    from checkfu_fast import _launch

    argv = ["checkfu-fast", "report", "--json", "--tz", "UTC", "--no-progress", str(tree)]
    monkeypatch.setattr("sys.argv", argv)
    assert _launch.main() == 0  # the full run: keeps its output
    expected = capsys.readouterr().out
    monkeypatch.setattr(report_cache, "_PIECE", 64)
    got: list[str] = []
    out = _Failing(OSError())
    out.write = got.append  # type: ignore[method-assign,assignment]
    monkeypatch.setattr("sys.stdout", out)
    assert report_cache.memo_hit(argv[2:]) == ""
    assert len(got) > 3 and "".join(got) == expected
    monkeypatch.setattr("sys.stdout", _Failing(BrokenPipeError()))
    assert report_cache.memo_hit(argv[2:]) == ""
    monkeypatch.setattr("sys.stdout", _Failing(OSError(28, "No space left on device")))
    with pytest.raises(SystemExit) as exit_:
        report_cache.memo_hit(argv[2:])
    assert exit_.value.code == 1
    assert "standard output: No space left on device" in capsys.readouterr().err
