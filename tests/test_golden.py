"""Golden files: every vectors/events/<dialect>/<name>.input.jsonl, both paths, named and auto."""

from __future__ import annotations

from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import golden, reference

ROOT = Path(__file__).resolve().parents[1] / "vectors" / "events"
CASES = list(golden.cases(ROOT))
IDS = [f"{d}/{i.name.removesuffix('.input.jsonl')}" for d, i, _ in CASES]


def test_there_are_golden_files_for_each_dialect() -> None:
    assert {d for d, _, _ in CASES} >= {"claude", "cursor", "codex"}
    assert all(e.exists() for _, _, e in CASES)


@pytest.mark.parametrize(("dialect", "inp", "exp"), CASES, ids=IDS)
@pytest.mark.parametrize("impl", [checkfu_fast, reference], ids=["native", "reference"])
def test_golden(impl, dialect: str, inp: Path, exp: Path) -> None:
    diffs = golden.check(dialect, inp, exp, impl.normalize)
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize(("dialect", "inp", "exp"), CASES, ids=IDS)
def test_auto_matches_named(dialect: str, inp: Path, exp: Path) -> None:
    data = inp.read_bytes()
    named = checkfu_fast.normalize(data, dialect)
    auto = checkfu_fast.normalize(data, "auto")
    assert auto == reference.normalize(data, "auto")
    if any(e["subtype"] == "dialect_fallback" for e in auto):
        pytest.skip("no decisive line: auto falls back by design")
    assert auto == named


def test_diff_reports_pointers() -> None:
    exp = [{"a": {"b": 1, "c/d": [1, 2]}, "x": 1}]
    act = [{"a": {"b": 1.0, "c/d": [1]}, "y": 2}]
    assert golden.diff(exp, act) == [
        "/0/a/b: expected 1, got 1.0",
        "/0/a/c~1d/1: expected 2, got (absent)",
        "/0/x: expected 1, got (absent)",
        "/0/y: expected (absent), got 2",
    ]
    assert golden.diff(exp, exp) == []
