"""The per-stream usage fold in the core (rust/usage.rs, ``_native._usage_fold_files``) equals
the Python fold (``usage._Stream``) summary for summary, and ``report`` gives the same output
with it as with the Python fold alone, on every golden input, session example, sample and
corpus file, plus streams made to reach the edges (timestamps, counts, continuations)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import Normalizer, usage
from checkfu_fast import report as report_mod
from conftest import CORPUS, ROOT

native = pytest.importorskip("checkfu_fast._native")

BUDGET = report_mod.BUDGET


def _inputs() -> list[tuple[Path, str]]:
    out = [(p, p.parent.name) for p in sorted((ROOT / "vectors" / "events").glob("*/*.input.*"))]
    out += [(p, "auto") for p in sorted((ROOT / "vectors" / "events").glob("*/*.input.*"))]
    for d in ("vectors/samples", "docs/examples-sessions", "vectors/usage/inputs"):
        out += [(p, "auto") for p in sorted((ROOT / d).glob("*.jsonl"))]
    if CORPUS.is_dir():
        out += [(p, "auto") for p in sorted(CORPUS.rglob("*.jsonl"))]
    return out


INPUTS = _inputs()


def python_summary(data: bytes, dialect: str, project: str | None) -> tuple[Any, int, int]:
    n = Normalizer(dialect, fields=list(report_mod.FOLD_FIELDS))
    st = usage._Stream(project)
    known = unknown = 0
    for ev in [*n.feed(data), *n.finish()]:
        if ev["kind"] == "status" and ev["subtype"] == "unknown":
            unknown += 1
        elif ev["kind"] != "error":
            known += 1
        st.add(ev)
    return _lists(st.summary().as_tuple()), known, unknown


def _lists(v: Any) -> Any:
    """Tuples as lists, recursively (the two sides build them differently)."""
    if isinstance(v, (list, tuple)):
        return [_lists(x) for x in v]
    return v


def core_summary(path: Path, dialect: str, project: str | None) -> Any:
    (res,) = native._usage_fold_files([(str(path), project)], dialect, *BUDGET)
    if res is None:
        return None
    summary, known, unknown = res
    return _lists(summary), known, unknown


def test_inputs_found() -> None:
    assert len(INPUTS) > 100


@pytest.mark.parametrize(
    ("path", "dialect"), INPUTS, ids=[f"{p.parent.name}/{p.name}:{d}" for p, d in INPUTS]
)
def test_core_summary_equals_the_python_fold(path: Path, dialect: str) -> None:
    if dialect not in ("auto", *usage_dialects()):
        pytest.skip(f"{dialect}: not a dialect name")
    project = "proj" if "claude" in path.name else None
    got = core_summary(path, dialect, project)
    assert got is not None, "the core left an ordinary stream to the Python fold"
    assert got == python_summary(path.read_bytes(), dialect, project)


def usage_dialects() -> tuple[str, ...]:
    return tuple(native.DIALECTS)


def _line(**kv: Any) -> str:
    return json.dumps(kv)


def _assistant(mid: str, ts: Any, out: int, **extra: Any) -> str:
    msg = {
        "id": mid,
        "model": "claude-sonnet-4-5",
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "usage": {
            "input_tokens": 10,
            "output_tokens": out,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 2,
        },
    }
    return _line(
        type="assistant",
        sessionId="s1",
        requestId="req_" + mid,
        timestamp=ts,
        cwd="/w",
        message=msg,
        uuid="u" + mid,
        **extra,
    )


EDGE_TIMES = [
    "2026-03-29T01:30:00.123456Z",
    "2026-03-29T01:30:00+02:00",
    "2026-03-29T01:30:00.5-09:30",
    "2026-03-29 01:30:00z",
    "2026-02-30T00:00:00Z",
    "2024-02-29T23:59:60.999Z",
    "0001-01-01T00:00:00+00:01",
    "9999-12-31T23:59:59-00:01",
    "2026-03-29T24:00:00Z",
    "2026-03-29T01:30:00",
    "2026-03-29T01:30:00.Z",
    "",
    7,
    None,
]


def test_core_edges_equal_the_python_fold(tmp_path: Path) -> None:
    lines = [_assistant(f"m{i}", ts, i + 1) for i, ts in enumerate(EDGE_TIMES)]
    # a repeat (smaller output), a sidechain copy, a message without id
    lines += [
        _assistant("m3", EDGE_TIMES[3], 1),
        _assistant("m4", EDGE_TIMES[4], 99, isSidechain=True),
    ]
    p = tmp_path / "edges.jsonl"
    p.write_text("\n".join(lines) + "\n")
    for dialect in ("auto", "claude"):
        got = core_summary(p, dialect, None)
        assert got is not None
        assert got == python_summary(p.read_bytes(), dialect, None)
        assert len(got[0][2]) == len(EDGE_TIMES)  # one reading per message id


def test_non_ascii_digits_are_left_to_the_python_fold(tmp_path: Path) -> None:
    """Python's regex ``\\d`` takes Arabic-Indic digits; the core leaves such a stream to the
    Python fold, and the report's totals are the same either way."""
    p = tmp_path / "s.jsonl"
    p.write_text(_assistant("m1", "٢٠٢٦-03-29T01:30:00Z", 5) + "\n", encoding="utf-8")
    assert core_summary(p, "auto", None) is None
    assert _report([str(p)], native_fold=True) == _report([str(p)], native_fold=False)


def _report(argv: list[str], native_fold: bool, monkeypatch: Any = None) -> Any:
    from checkfu_fast import cli

    saved = report_mod._native_module
    out = io.StringIO()
    old = sys.stdout
    try:
        if not native_fold:
            report_mod._native_module = lambda: None  # type: ignore[assignment]
        sys.stdout = out
        status = cli.main(["report", "--json", "--tz", "UTC", "--by", "day,model", *argv])
    finally:
        sys.stdout = old
        report_mod._native_module = saved  # type: ignore[assignment]
    return status, json.loads(out.getvalue())


def test_report_same_with_the_core_fold(tmp_path: Path) -> None:
    """Every input at once (codex threads and session-file messages across files, in order):
    the same document from the core's summaries as from the Python fold."""
    names = [str(p) for p, d in INPUTS if d == "auto"]
    assert _report(names, native_fold=True) == _report(names, native_fold=False)
    by_session = ["--by", "session"]
    a = _report([*names, *by_session], native_fold=True)
    assert a == _report([*names, *by_session], native_fold=False)


def test_unreadable_file_is_left_to_the_python_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    assert core_summary(missing, "auto", None) is None
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert core_summary(bad, "auto", None) is None


def test_compressed_and_tiny_files(tmp_path: Path) -> None:
    """A gzip file (by its magic, whatever its name) is decompressed as read; files shorter
    than a magic and empty files are folded like any other."""
    import gzip

    data = (ROOT / "docs" / "examples-sessions" / "claude-session.jsonl").read_bytes()
    gz = tmp_path / "s.jsonl"
    gz.write_bytes(gzip.compress(data))
    assert core_summary(gz, "auto", "p") == python_summary(data, "auto", "p")
    for tiny in (b"", b"{", b"{}\n", b"\x1f"):
        t = tmp_path / "t.jsonl"
        t.write_bytes(tiny)
        assert core_summary(t, "auto", None) == python_summary(tiny, "auto", None), tiny


def test_the_core_ends_a_stream_on_the_same_error_subtypes() -> None:
    """rust/usage.rs spells ``NON_TERMINAL_ERRORS`` again (a const of the core): it must be
    usage.py's set, or the two folds would give a stream different endings."""
    import re

    src = (ROOT / "rust" / "usage.rs").read_text()
    m = re.search(r"const NON_TERMINAL_ERRORS: \[&str; (\d+)\] = \[(.*?)\];", src, re.S)
    assert m is not None, "NON_TERMINAL_ERRORS not found in rust/usage.rs"
    names = re.findall(r'"([a-z_0-9]+)"', m.group(2))
    assert len(names) == int(m.group(1))
    assert frozenset(names) == usage.NON_TERMINAL_ERRORS
