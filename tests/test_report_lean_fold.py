"""``report --no-cache`` folds each file without what its totals never read (the codex
``rateLimits`` readings are not made: ``usage::fold_file_totals``), one line at a time, with
the parse's containers and scalars written in place. Its document must stay the per-file
path's (``report.fold_files``, whose folds keep every reading) on every golden input, usage
input and sample stream, and ``report --limits`` must still see the readings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import _native, cli
from checkfu_fast import report as report_mod
from conftest import ROOT

pytestmark = pytest.mark.skipif(
    report_mod._native_module() is None, reason="the core is not built (reference fallback)"
)

STREAMS = sorted(
    [
        *(ROOT / "vectors" / "events").glob("*/*.input.jsonl"),
        *(ROOT / "vectors" / "usage" / "inputs").glob("*.jsonl"),
        *(ROOT / "vectors" / "samples").glob("*.jsonl"),
        *(ROOT / "docs" / "examples-sessions").glob("*.jsonl"),
    ]
)


def _tree(root: Path) -> list[str]:
    """Every stream, each a file of its own (claude-looking names under ``projects/``)."""
    names = []
    for i, src in enumerate(STREAMS):
        sub = "projects/-home-x" if "claude" in src.name else "sessions"
        p = root / sub / f"{i:03d}-{src.name}"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, p)
        names.append(str(p))
    return names


def _report(argv: list[str], capsys: Any, monkeypatch: Any, cache: Path) -> tuple[int, str]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    rc = cli.main(["report", *argv])
    out, _ = capsys.readouterr()
    return rc, out


def test_there_are_streams_with_rate_limits() -> None:
    assert len(STREAMS) > 20
    assert any(b'"rate_limits"' in p.read_bytes() for p in STREAMS)


@pytest.mark.parametrize("by", ["session", "model,day", "project,block"])
def test_no_cache_equals_the_per_file_path_on_every_stream(
    by: str, capsys: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    names = _tree(tmp_path / "t")
    argv = ["--json", "--tz", "UTC", "--by", by, *names]
    lean = _report(["--no-cache", *argv], capsys, monkeypatch, tmp_path / "c0")
    full = _report(argv, capsys, monkeypatch, tmp_path / "c1")
    assert lean == full
    assert json.loads(lean[1])["files"] == len(names)


def test_each_file_alone_the_same(capsys: Any, tmp_path: Path, monkeypatch: Any) -> None:
    for i, name in enumerate(_tree(tmp_path / "t")):
        argv = ["--json", "--tz", "UTC", name]
        lean = _report(["--no-cache", *argv], capsys, monkeypatch, tmp_path / f"a{i}")
        full = _report(argv, capsys, monkeypatch, tmp_path / f"b{i}")
        assert lean == full, name


def test_the_limits_path_keeps_its_readings(tmp_path: Path) -> None:
    rollouts = [p for p in STREAMS if b'"rate_limits"' in p.read_bytes()]
    budget = report_mod.BUDGET
    got = _native._usage_fold_limits([(str(p), None) for p in rollouts], "auto", *budget)
    readings = [r[3] for r in got if r is not None]
    assert any(readings), "no rateLimits reading on any stream that has rate_limits"
