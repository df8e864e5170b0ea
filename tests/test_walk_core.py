"""``paths.walk`` in the core (``_native._walk``, rust/walk.rs) lists what the Python walk lists,
in the same order, with the same stamps and the same warnings: suffixes, hidden entries, links
to files and directories (a loop, a second name, a dangling link), a FIFO, an unreadable
directory, a name that is not UTF-8 (the core declines: the Python walk), with and without
stamps, every suffix or none, a top given with a trailing slash."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import paths

native = pytest.importorskip("checkfu_fast._native")

LINE = b'{"type":"result","subtype":"success","result":"ok"}\n'


def _tree(tmp_path: Path) -> Path:
    top = tmp_path / "logs"
    for rel in [
        "top.jsonl",
        "b.ndjson",
        "Zed.json",
        "a/x.jsonl",
        "a/y.log",
        "a/w.jsonl.gz",
        "a/\u00e9t\u00e9.jsonl",
        "a/\u4e2d.jsonl",
        "B/upper.jsonl",
        "c/d/e.jsonl",
        "c/d/f.txt",
        "notes.txt",
        "a/.hidden.jsonl",
        ".git/objects.jsonl",
        "a/.cache/k.jsonl",
    ]:
        p = top / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(LINE)
    os.symlink(top, top / "c" / "loop")
    os.symlink(top / "a", top / "again")
    os.symlink(top / "a" / "x.jsonl", top / "c" / "link.jsonl")
    os.symlink(top / "missing.jsonl", top / "c" / "dangling.jsonl")
    os.symlink(top / "missing-dir", top / "c" / "dangling-dir")
    os.mkfifo(top / "a" / "pipe.jsonl")
    locked = top / "locked"
    locked.mkdir()
    (locked / "l.jsonl").write_bytes(LINE)
    locked.chmod(0)
    return top


def _walk(top: str, suffixes: Any, stats: bool, core: bool, monkeypatch: Any) -> Any:
    if not core:
        monkeypatch.setattr(paths, "_native_walk", lambda *a: None)
    got: dict[str, paths.Stamp] | None = {} if stats else None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        found = list(paths.walk(top, suffixes, got))
    monkeypatch.undo()
    return found, got, [str(w.message) for w in seen]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks and FIFOs")
def test_the_core_walks_as_python(tmp_path: Path, monkeypatch: Any) -> None:
    top = _tree(tmp_path)
    try:
        for start in (str(top), str(top) + "/", str(top / "c")):
            for suffixes in (paths.SUFFIXES, (".jsonl",), None):
                for stats in (False, True):
                    want = _walk(start, suffixes, stats, False, monkeypatch)
                    assert (
                        native._walk(start, None if suffixes is None else list(suffixes), stats)
                        is not None
                    )
                    got = _walk(start, suffixes, stats, True, monkeypatch)
                    assert got == want, (start, suffixes, stats)
        found, _, warned = _walk(str(top), paths.SUFFIXES, False, True, monkeypatch)
        assert warned == [f"{top / 'a' / 'pipe.jsonl'}: a FIFO, not a regular file: skipped"]
        assert str(top / "c" / "dangling.jsonl") in found
        assert str(top / "c" / "link.jsonl") in found
        assert paths.empty_dirs([top]) == []
    finally:
        (top / "locked").chmod(0o755)


def test_a_name_not_utf8_is_walked_in_python(tmp_path: Path, monkeypatch: Any) -> None:
    top = tmp_path / "t"
    top.mkdir()
    (top / "a.jsonl").write_bytes(LINE)
    try:
        with open(os.fsencode(str(top)) + b"/b\xff.jsonl", "wb") as f:
            f.write(LINE)
    except OSError:
        pytest.skip("the file system takes no such name")
    assert native._walk(str(top), [".jsonl"], False) is None
    assert _walk(str(top), paths.SUFFIXES, True, True, monkeypatch) == _walk(
        str(top), paths.SUFFIXES, True, False, monkeypatch
    )
    assert len(list(paths.walk(str(top)))) == 2
