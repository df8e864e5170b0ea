"""``checkfu-fast report``'s cache (docs/usage.md, "The cache"): a re-run over unchanged files
prints the same as a run without the cache, a changed file is read again, and a corrupt,
foreign or other-version cache is ignored and rebuilt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import cli, report_cache
from conftest import ROOT

pytest.importorskip("checkfu_fast._native")

EXAMPLES = ROOT / "docs" / "examples-sessions"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "projects" / "-home-dev-p").mkdir(parents=True)
    (root / "sessions").mkdir()
    for name in ("claude-session.jsonl", "claude-subagent.jsonl"):
        shutil.copy(EXAMPLES / name, root / "projects" / "-home-dev-p" / name)
    for p in EXAMPLES.glob("codex-*.jsonl"):
        shutil.copy(p, root / "sessions" / p.name)
    age(root)
    return root


def age(root: Path, seconds: int = 3600) -> None:
    """Every file's modification time ``seconds`` ago: a file modified just now is not
    memoized (report_cache.RACY_NS)."""
    t = time.time_ns() - seconds * 1_000_000_000
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, ns=(t, t))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    status = cli.main(["report", "--tz", "UTC", *argv])
    return status, capsys.readouterr().out


def cache_files() -> dict[str, Path]:
    d = Path(report_cache.cache_dir())
    return {str(p.relative_to(d)): p for p in d.rglob("*") if p.is_file()} if d.is_dir() else {}


@pytest.mark.parametrize("by", ["session", "day,model", "block,project"])
def test_rerun_prints_what_a_run_without_cache_prints(tree, capsys, monkeypatch, by) -> None:
    fresh = run(capsys, "--no-cache", "--json", "--by", by, str(tree))
    assert cache_files() == {}  # --no-cache writes nothing
    assert run(capsys, "--json", "--by", by, str(tree)) == fresh  # builds the cache
    files = set(cache_files())
    assert "report-cache.json" in files and len(files) == 2
    assert [f for f in files if f.startswith("memo/")]
    assert run(capsys, "--json", "--by", by, str(tree)) == fresh  # the memo
    # without the memo: every file from the per-file cache, no file read by the core
    for name, p in cache_files().items():
        if name.startswith("memo/"):
            os.unlink(p)
    from checkfu_fast import report

    monkeypatch.setattr(report, "_native_module", lambda: _NoFold())
    assert run(capsys, "--json", "--by", by, str(tree)) == fresh


class _NoFold:
    """The core with its fold taken away (fingerprints still taken)."""

    def _usage_fold_files(self, files, *a, **k):
        if files:
            raise AssertionError(f"folded again: {files}")
        return []

    _usage_fold_resume = _usage_fold_files


def test_a_changed_file_is_read_again(tree, capsys) -> None:
    run(capsys, "--json", str(tree))
    f = tree / "projects" / "-home-dev-p" / "claude-session.jsonl"
    lines = f.read_text().splitlines(keepends=True)
    f.write_text("".join(lines[: len(lines) // 2]))  # the same head, another size
    age(tree)
    expected = run(capsys, "--no-cache", "--json", str(tree))
    assert run(capsys, "--json", str(tree)) == expected
    # the same size and time, another head: read again too
    g = tree / "sessions" / "codex-rollout.jsonl"
    st = g.stat()
    data = bytearray(g.read_bytes())
    data[data.index(b"019b")] = ord("1")
    g.write_bytes(bytes(data))
    os.utime(g, ns=(st.st_atime_ns, st.st_mtime_ns))  # the change time moves on
    expected = run(capsys, "--no-cache", "--json", str(tree))
    assert run(capsys, "--json", str(tree)) == expected


@pytest.mark.parametrize(
    "damage",
    ["garbage", "truncated", "version", "format", "hash", "entries", "empty"],
)
def test_corrupt_or_foreign_cache_is_ignored_and_rebuilt(tree, capsys, damage) -> None:
    fresh = run(capsys, "--no-cache", "--json", "--by", "day,model", str(tree))
    run(capsys, "--json", "--by", "day,model", str(tree))
    files = cache_files()
    for name, p in files.items():
        data = p.read_bytes()
        head, body = data.split(b"\n", 1)
        meta = json.loads(head)
        if damage == "garbage":
            p.write_bytes(os.urandom(200))
        elif damage == "truncated":
            p.write_bytes(data[: len(data) // 2])
        elif damage == "version":
            meta["version"] = "0.0.0/0"
            p.write_bytes(json.dumps(meta).encode() + b"\n" + body)
        elif damage == "format":
            meta["format"] = "someone else's"
            p.write_bytes(json.dumps(meta).encode() + b"\n" + body)
        elif damage == "hash":  # a changed byte in the entries
            p.write_bytes(head + b"\n" + body.replace(b"1", b"2", 1))
        elif damage == "entries":  # the right hash over entries of the wrong shape
            if "memo" in name:  # the right hash over another text: cannot be told apart
                continue
            report_cache._write(str(p), meta["format"], {})
            if name == "report-cache.json":  # each entry: the right key and fingerprint
                lines = []
                for line in body.split(b"\n"):
                    key, _, rest = line.partition(b"\t")
                    fp = json.loads(rest.partition(b"\t")[0])[0]
                    lines.append(
                        key
                        + b"\t"
                        + json.dumps([fp, [[["x"]], 5], "k", None, [1]]).encode()
                        + b"\t[[1]]"
                    )
                report_cache._write_body(str(p), meta["format"], b"\n".join(lines))
        else:
            p.write_bytes(b"")
    assert run(capsys, "--json", "--by", "day,model", str(tree)) == fresh
    # rebuilt: a valid cache again, used by the next run
    rebuilt = report_cache.SummaryCache()
    assert len(rebuilt.old) == len(list(tree.rglob("*.jsonl")))
    rebuilt.discard()
    assert run(capsys, "--json", "--by", "day,model", str(tree)) == fresh


def test_memo_follows_the_options_and_the_files(tree, capsys) -> None:
    for argv in (["--json"], ["--csv", "--by", "day"], ["--by", "model"], ["--json"]):
        expected = run(capsys, "--no-cache", *argv, str(tree))
        assert run(capsys, *argv, str(tree)) == expected
        assert run(capsys, *argv, str(tree)) == expected
    assert len(report_cache.Memo().entries()) == 3
    # --active depends on the time: never kept
    run(capsys, "--active", str(tree))
    assert len(report_cache.Memo().entries()) == 3
    # at most MEMO_ENTRIES kept, the oldest dropped
    memo = report_cache.Memo()
    for i in range(report_cache.MEMO_ENTRIES + 3):
        memo.put(f"k{i}", "x")
    assert len(memo.entries()) == report_cache.MEMO_ENTRIES


def test_cache_dir_follows_xdg(monkeypatch, tmp_path) -> None:
    assert report_cache.cache_dir({"XDG_CACHE_HOME": "/x/y", "HOME": "/h"}) == "/x/y/checkfu_fast"
    assert report_cache.cache_dir({"XDG_CACHE_HOME": "rel", "HOME": "/h"}) == (
        "/h/.cache/checkfu_fast"
    )
    assert report_cache.cache_dir({"HOME": "/h"}) == "/h/.cache/checkfu_fast"


def test_unwritable_cache_dir_is_not_an_error(tree, capsys, monkeypatch, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where a directory should be
    expected = run(capsys, "--no-cache", "--json", str(tree))
    assert run(capsys, "--json", str(tree)) == expected


def test_a_file_modified_just_now_is_not_memoized(tree, capsys) -> None:
    """Its stamp may not tell a change made within the same tick of the file system's clock."""
    f = tree / "sessions" / "codex-rollout.jsonl"
    f.write_bytes(f.read_bytes())
    expected = run(capsys, "--json", str(tree))
    assert report_cache.Memo().entries() == []
    age(tree)
    assert run(capsys, "--json", str(tree)) == expected
    assert len(report_cache.Memo().entries()) == 1


def launch(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from checkfu_fast import _launch

    status = _launch.main(["report", *argv])
    return status, capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["--json"],
        ["--by", "day,model", "--csv", "--tz", "Europe/Berlin"],
        ["--by=block", "--since", "2020-01-01", "--until=2030-12-31", "--no-estimate"],
        ["--dialect", "auto", "--by", "model", "--no-progress"],
    ],
)
def test_the_entry_point_answers_a_rerun_from_the_memo(tree, capsys, monkeypatch, argv) -> None:
    expected = run(capsys, "--no-cache", *argv, str(tree))
    assert launch(capsys, "--tz", "UTC", *argv, str(tree)) == expected  # the full run
    assert report_cache.memo_hit(["--tz", "UTC", *argv, str(tree)]) == expected[1]
    from checkfu_fast import cli

    monkeypatch.setattr(cli, "main", lambda *a: pytest.fail("not answered from the memo"))
    assert launch(capsys, "--tz", "UTC", *argv, str(tree)) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["--js"],  # argparse takes abbreviations: left to it
        ["--active"],
        ["--no-cache"],
        ["--json", "-"],
        ["--bogus"],
        ["--by"],
        ["--dialect", "mapping.json"],
        ["--since", "yesterday"],
        ["--tz", "Not/AZone"],
    ],
)
def test_the_memo_shortcut_leaves_other_runs_to_the_command(tree, capsys, argv) -> None:
    run(capsys, "--json", str(tree))  # a memo for --json
    assert report_cache.memo_hit(["--tz", "UTC", *argv, str(tree)]) is None


def test_paths_after_an_option_or_another_path_are_keyed_apart(tree, capsys) -> None:
    run(capsys, "--json", str(tree))
    assert report_cache.memo_hit(["--tz", "UTC", "--json", str(tree)]) is not None
    assert report_cache.memo_hit(["--tz", "UTC", str(tree), "--json"]) is None
    empty = tree.parent / "empty"
    empty.mkdir()
    # the same inputs, but the full run warns about the empty directory (exit 1)
    assert report_cache.memo_hit(["--tz", "UTC", "--json", str(tree), str(empty)]) is None


def test_a_memo_hit_imports_neither_the_fold_nor_the_reference(tree, capsys) -> None:
    """The re-run answered by the entry point before the fold, the prices and the pure-Python
    twin are imported (most of the package's import time)."""
    expected = run(capsys, "--json", str(tree))
    code = (
        "import sys\n"
        "from checkfu_fast._launch import main\n"
        f"status = main(['report', '--tz', 'UTC', '--json', {str(tree)!r}])\n"
        "mods = [m for m in sys.modules if m.startswith('checkfu_fast.')]\n"
        "print(repr(sorted(mods)), file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert (0, out.stdout) == expected
    mods = eval(out.stderr.strip().splitlines()[-1])
    for heavy in ("reference", "usage", "prices", "report", "cli", "arrow"):
        assert f"checkfu_fast.{heavy}" not in mods


def test_unchanged_files_are_known_by_their_stamp(tree, capsys, monkeypatch) -> None:
    """The per-file cache takes a file whose size, mtime, ctime, inode and device are the ones
    its entry was made with without reading its head (the walk's stat); a file touched back to
    its mtime (another ctime) has its head hashed again, and keeps its entry."""
    expected = run(capsys, "--json", str(tree))
    memo = Path(report_cache.cache_dir()) / "memo"
    shutil.rmtree(memo)
    read: list[str] = []
    real = report_cache.fingerprints

    def spy(paths: list[str]) -> Any:
        read.extend(os.path.basename(p) for p in paths)
        return real(paths)

    monkeypatch.setattr(report_cache, "fingerprints", spy)
    assert run(capsys, "--json", str(tree)) == expected
    assert read == []
    f = tree / "sessions" / "codex-rollout.jsonl"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same bytes and mtime, a new ctime
    shutil.rmtree(memo)
    assert run(capsys, "--json", str(tree)) == expected
    assert read == ["codex-rollout.jsonl"]
    shutil.rmtree(memo)
    assert run(capsys, "--json", str(tree)) == expected  # restamped: no head read again
    assert read == ["codex-rollout.jsonl"]


def test_the_memo_parser_knows_the_report_options_as_cli_spells_them() -> None:
    """memo_hit reads report's argv without argparse (cli is not imported on a hit): its two
    option sets must be report's options as cli.build_parser spells them, flags as flags and
    valued options as valued, so a new or renamed option cannot be read apart by the memo."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a.choices, dict) and "report" in a.choices)
    rep = sub.choices["report"]
    flags, valued = set(), set()
    for action in rep._actions:
        for name in action.option_strings:
            if name.startswith("--"):
                (flags if action.nargs == 0 else valued).add(name)
    left_to_the_command = {"--help", "--active", "--no-cache"}
    assert flags - left_to_the_command == report_cache._FLAGS
    assert valued == report_cache._VALUED


def _summary(session: str) -> list[Any]:
    return [[], [], [], "none", session, "claude", False]


def test_the_cache_holds_no_entry_text_while_it_is_filled_or_read(tmp_path) -> None:
    """A big tree's cache is written as its entries come and read where each one is used: the
    cache object's memory does not grow with the entries' text (5 MB of entries here)."""
    import tracemalloc

    n, size = 500, 10_000
    cache = report_cache.SummaryCache(str(tmp_path))
    tracemalloc.start()
    try:
        for i in range(n):
            cache.put(f"k{i}", [1, 2, i], [_summary(f"{i:05d}" + "x" * size), 1, 0, None], [])
        _, filling = tracemalloc.get_traced_memory()
        cache.save()
        again = report_cache.SummaryCache(str(tmp_path))
        tracemalloc.reset_peak()
        assert len(again.old) == n
        got = again.get("k7", [1, 2, 7])
        _, reading = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        again.discard()
    assert got == [_summary("00007" + "x" * size), 1, 0]
    assert filling < n * size // 10, filling
    assert reading < n * size // 10, reading
    assert [p.name for p in tmp_path.iterdir()] == [report_cache.NAME]


def test_a_run_cut_short_leaves_the_old_cache_and_no_temporary_file(tmp_path) -> None:
    cache = report_cache.SummaryCache(str(tmp_path))
    cache.put("a", [1, 2, 3], [_summary("s"), 1, 0, None], [])
    cache.save()
    before = (tmp_path / report_cache.NAME).read_bytes()
    cut = report_cache.SummaryCache(str(tmp_path))
    assert cut.get("a", [1, 2, 3]) == [_summary("s"), 1, 0]
    cut.put("b", [4, 5, 6], [_summary("t"), 2, 0, None], [])  # the new file is being written
    assert len(list(tmp_path.iterdir())) == 2
    cut.discard()  # instead of save: an error, an interrupt
    assert [p.name for p in tmp_path.iterdir()] == [report_cache.NAME]
    assert (tmp_path / report_cache.NAME).read_bytes() == before
    # a run that changed nothing writes nothing; one that did keeps this run's entries first
    same = report_cache.SummaryCache(str(tmp_path))
    assert same.get("a", [1, 2, 3]) is not None
    same.save()
    assert (tmp_path / report_cache.NAME).read_bytes() == before
    grown = report_cache.SummaryCache(str(tmp_path))
    grown.put("b", [4, 5, 6], [_summary("t"), 2, 0, None], [])
    grown.save()
    body = (tmp_path / report_cache.NAME).read_bytes().split(b"\n", 1)[1]
    assert [line.split(b"\t", 1)[0] for line in body.split(b"\n")] == [b"b", b"a"]
