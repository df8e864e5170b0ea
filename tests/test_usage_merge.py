"""The fold across streams in the core (``usage.CoreFold``, rust/usage_merge.rs) gives what the
Python fold (``usage.UsageFold``) gives, value for value: totals, byModel, bySession, byDay,
rows of every dimension, blocks and the active block, in several zones (offsets of 45 minutes,
DST changes), with windows, estimates off and a price file; and where its sums could differ
(a float count, reported costs with blocks) it says so (``usage.Inexact``) and the report
folds in Python, with the same document."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from checkfu_fast import Normalizer, usage
from checkfu_fast import prices as prices_mod
from checkfu_fast import report as report_mod
from conftest import CORPUS, ROOT

native = pytest.importorskip("checkfu_fast._native")

BUDGET = report_mod.BUDGET


def _files() -> list[Path]:
    out: list[Path] = []
    for d in ("vectors/samples", "docs/examples-sessions", "vectors/usage/inputs"):
        out += sorted((ROOT / d).glob("*.jsonl"))
    out += sorted((ROOT / "vectors" / "events").glob("*/*.input.*"))
    if CORPUS.is_dir():
        out += sorted(CORPUS.rglob("*.jsonl"))
    return out


FILES = _files()
SESSION_FILES = sorted((ROOT / "docs" / "examples-sessions").glob("*.jsonl")) + sorted(
    (ROOT / "vectors" / "usage" / "inputs").glob("*.jsonl")
)


def _feed(fold: Any, data: bytes, project: str | None) -> None:
    n = Normalizer("auto", fields=list(report_mod.FOLD_FIELDS))
    fold.start_stream(project)
    for ev in [*n.feed(data), *n.finish()]:
        fold.add(ev)
    fold.end_stream()


def _folds(paths: list[Path], **opts: Any) -> tuple[usage.CoreFold, usage.UsageFold]:
    core = usage.CoreFold(native, **opts)
    py = usage.UsageFold(**opts)
    for p in paths:
        project = report_mod.claude_project(str(p))
        (res,) = native._usage_fold_files([(str(p), project)], "auto", *BUDGET, 1, handles=True)
        if res is None:
            data = p.read_bytes()
            _feed(core, data, project)
            _feed(py, data, project)
            continue
        core.merge(res[0])
        py.merge(usage.StreamSummary.of(res[0].as_tuple()))
    return core, py


def _same(core: usage.CoreFold, py: usage.UsageFold, nows: list[float] = ()) -> None:  # type: ignore[assignment]
    assert core.totals(by_day=True) == py.totals(by_day=True)
    assert core.rows() == py.rows()
    # the same types too (the dicts the core makes: an int cost stays an int, --csv writes it)
    for a, b in ((core.totals(by_day=True), py.totals(by_day=True)), (core.rows(), py.rows())):
        assert json.dumps(report_mod._finite(a)) == json.dumps(report_mod._finite(b))
    # report --json's lazy parts (usage.Lazy, written item by item): the same items
    lazy = core.totals(by_day=True, lazy=True)
    assert isinstance(lazy["bySession"], usage.Lazy)
    assert {**lazy, "bySession": dict(lazy["bySession"])} == py.totals(by_day=True)
    rows = core.rows(lazy=True)
    assert list(rows) == py.rows() and len(rows) == len(py.rows())
    # the text report.write_json writes (the core writing the sessions' entries and rows:
    # Lazy.text) is the stdlib's json.dumps of the Python fold's document, byte for byte
    doc = {"files": 1, **core.totals(by_day=True, lazy=True), "rows": core.rows(lazy=True)}
    if core.by == ("session",):
        assert doc["bySession"].text is not None and doc["rows"].text is not None
    buf = io.StringIO()
    report_mod.write_json(doc, buf.write)
    want = {"files": 1, **py.totals(by_day=True), "rows": py.rows()}
    assert buf.getvalue() == json.dumps(report_mod._finite(want), indent=2, allow_nan=False) + "\n"
    for now in nows:
        assert core.active_block(now) == py.active_block(now)


OPTIONS: list[dict[str, Any]] = [
    {"by": ["session"]},
    {"by": ["model"]},
    {"by": ["day", "model"], "tz": ZoneInfo("America/New_York")},
    {"by": ["week", "project"], "tz": ZoneInfo("Asia/Kathmandu")},
    {"by": ["month", "session", "model"], "tz": ZoneInfo("Australia/Lord_Howe")},
    {"by": ["block", "model"]},
    {"by": ["project", "block"], "tz": ZoneInfo("Europe/Berlin")},
    {"by": ["day"], "since": "2025-01-01", "until": "2026-06-30"},
    {"by": ["block"], "since": "2025-10-01", "active": True},
    {"by": ["day", "model"], "estimate": False},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}" for k in o))
def test_every_input_the_same_as_the_python_fold(opts: dict[str, Any]) -> None:
    """Every input at once; with blocks or the active block, the CLIs' reported costs are
    summed per second in Python (their sum depends on that order): the core says so, and
    the session files and rollouts (no reported costs) are compared."""
    core, py = _folds(FILES, **opts)
    if "block" in opts["by"] or opts.get("active"):
        with pytest.raises(usage.Inexact, match="reported costs"):
            _same(core, py)
        core, py = _folds(SESSION_FILES, **opts)
    _same(core, py)


def _claude(mid: str, ts: str, out: int, model: str = "claude-sonnet-4-5", **kv: Any) -> str:
    msg = {
        "id": mid,
        "model": model,
        "role": "assistant",
        "content": [{"type": "text", "text": "x"}],
        "usage": {
            "input_tokens": 10 + out,
            "output_tokens": out,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 2 * out,
        },
    }
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": kv.pop("session", "s1"),
            "requestId": "req_" + mid,
            "timestamp": ts,
            "cwd": "/w",
            "message": msg,
            "uuid": "u" + mid,
            **kv,
        }
    )


def test_edges_of_quarter_hours_days_and_blocks(tmp_path: Path) -> None:
    """Readings on a quarter hour's first second, a second before it, a block's last second
    (exactly 5 h after its start), after a gap, at local midnights of a +05:45 zone and across
    a DST change; a long-context request (> 200k input tokens); an unknown model; a model
    priced from a file; two files sharing messages (the best copy counts)."""
    times = [
        "2026-03-29T00:00:00Z",
        "2026-03-29T00:14:59.999Z",
        "2026-03-29T00:15:00Z",
        "2026-03-29T00:15:00.001Z",
        "2026-03-29T05:00:00Z",
        "2026-03-29T05:00:01Z",
        "2026-03-29T18:15:00Z",  # 00:00 in Kathmandu
        "2026-03-29T18:14:59Z",
        "2026-03-29T01:00:00Z",  # Berlin's DST change
        "2026-03-29T00:59:59Z",
        "2026-10-25T00:59:59Z",
        "2026-10-25T01:00:00Z",
        "2026-11-01T05:59:59Z",
        "2026-11-01T06:00:00Z",
        "2026-03-29T23:59:59.9999Z",
    ]
    models = ["claude-sonnet-4-5", "claude-opus-4-1", "mystery-model", "my-own-model"]
    a = [_claude(f"m{i}", t, i * 7 + 1, models[i % 4]) for i, t in enumerate(times)]
    a.append(_claude("big", "2026-03-29T02:00:00Z", 250_000))
    b = [_claude(f"m{i}", t, i * 7 + 3, models[i % 4], session="s2") for i, t in enumerate(times)]
    b.append(_claude("m1", times[1], 1, isSidechain=True))
    paths = []
    for name, lines in (("a", a), ("b", b)):
        p = tmp_path / "projects" / "-w" / f"{name}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n")
        paths.append(p)
    own = tmp_path / "prices.json"
    own.write_text(
        json.dumps(
            {
                "format": prices_mod.FORMAT,
                "date": "2026-12-01",
                "models": [
                    {
                        "id": "my-own-model",
                        "prices": [
                            {"input": 1.1, "output": 2.3, "cacheRead": 0.11},
                            {
                                "since": "2026-06-01",
                                "input": {"base": 1.7, "tiers": [{"above": 20, "price": 3.3}]},
                                "output": 4.9,
                            },
                        ],
                    }
                ],
            }
        )
    )
    snap = prices_mod.load(str(own))
    for tz in ("UTC", "Asia/Kathmandu", "Europe/Berlin", "America/St_Johns"):
        for by in (["day", "model"], ["block", "session"], ["week", "month", "project"]):
            for prices in (None, snap):
                core, py = _folds(paths, tz=ZoneInfo(tz), by=by, prices=prices, active=True)
                nows = [1774746000.0 + k * 3000 for k in range(-2, 10)] + [1793000000.0]
                _same(core, py, nows)


def test_float_counts_are_inexact_and_the_report_folds_in_python(tmp_path: Path, capsys) -> None:
    from checkfu_fast import cli

    line = json.loads(_claude("f1", "2026-03-29T00:00:00Z", 5))
    line["message"]["usage"]["output_tokens"] = 5.5
    p = tmp_path / "f.jsonl"
    p.write_text(json.dumps(line) + "\n" + _claude("f2", "2026-03-29T00:01:00Z", 2) + "\n")
    core, py = _folds([p], by=["day"])
    with pytest.raises(usage.Inexact):
        core.totals()
    assert py.totals()["total"]["outputTokens"] == 7.5
    argv = ["report", "--json", "--no-cache", "--tz", "UTC", "--by", "day", str(p)]
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == py.totals()["total"]
    assert doc["rows"] == py.rows()


def test_reported_costs_in_reading_order(tmp_path: Path) -> None:
    """The CLIs' costs are floats summed in reading order, as the Python fold sums them; with
    blocks they are summed per second there: the core says Inexact."""
    lines = []
    for i, cost in enumerate([0.1, 0.2, 0.3, 1e-17, 123.456, 0.7]):
        lines.append(
            json.dumps(
                {
                    "type": "result",
                    "subtype": "success",
                    "session_id": f"r{i % 2}",
                    "total_cost_usd": cost,
                    "usage": {"input_tokens": 3, "output_tokens": 4},
                    "modelUsage": {},
                    "result": "ok",
                }
            )
        )
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n")
    core, py = _folds([p, p], by=["session", "model"])
    _same(core, py)
    assert core.totals()["total"]["source"] == "reported"
    core, py = _folds([p], by=["block"])
    with pytest.raises(usage.Inexact):
        core.rows()


def test_a_damaged_cache_summary_is_refused_whole() -> None:
    m = native._UsageMerge(None)
    with pytest.raises(ValueError):
        m.merge([[], [["s", "claude", ["m", 1, 2]]], [], "ok", "s", "claude", True])
    with pytest.raises(ValueError):
        m.merge([[], [], [], "strange", "s", "claude", True])
    assert m.times() == []


def test_the_cores_text_of_unusual_values(tmp_path: Path) -> None:
    """report --json's per-session text written by the core (``_UsageSessions.write_json``)
    against the stdlib's ``json.dumps`` of the Python fold's document: session names and
    models to escape (quotes, backslashes, control characters, non-ASCII, a character beyond
    the BMP), sums beyond 64 bits, several unpriced models (sorted), reported costs whose sum
    is not finite (null), reported and estimated costs together (mixed), sessions with only
    an ending."""
    odd = ['s"q\\b', "s\u00e9\u2028", "s\x01\x1f\x7f", "s\U0001f600", "plain"]
    lines = []
    for i, sid in enumerate(odd):
        for j, model in enumerate(["zz-model\t", "aa-\u00fcmodel", "claude-sonnet-4-5"]):
            lines.append(_claude(f"o{i}x{j}", "2026-03-29T00:00:00Z", 3 + j, model, session=sid))
    for k in range(3):  # 3 * 2**62 input tokens: beyond 64 bits
        big = json.loads(_claude(f"big{k}", "2026-03-29T01:00:00Z", 1, session="plain"))
        big["message"]["usage"]["input_tokens"] = 2**62
        lines.append(json.dumps(big))
    result = {"type": "result", "subtype": "success", "result": "ok", "modelUsage": {}}
    paths = [tmp_path / "projects" / "-w" / "odd.jsonl"]
    paths[0].parent.mkdir(parents=True)
    paths[0].write_text("\n".join(lines) + "\n")
    # the same session's costs in two streams: 1e308 + 1e308 is not finite; a session with
    # only an ending
    for i, (sid, cost, answer) in enumerate(
        (("inf", 1e308, "ok"), ("inf", 1e308, "ok"), ("s\u00e9\u2028", 0.25, "ok"), ("end", 0, ""))
    ):
        usage_ = {"input_tokens": 3, "output_tokens": 4} if cost else {}
        line = {**result, "session_id": sid, "total_cost_usd": cost, "usage": usage_}
        paths.append(tmp_path / f"r{i}.jsonl")
        paths[-1].write_text(json.dumps({**line, "result": answer}) + "\n")
    for estimate in (True, False):
        core, py = _folds(paths, by=["session"], estimate=estimate)
        _same(core, py)
        text = io.StringIO()
        report_mod.write_json({"rows": core.rows(lazy=True)}, text.write)
        assert "\\ud83d\\ude00" in text.getvalue() and '"costUsd": null' in text.getvalue()
