"""Exports (checkfu_fast.export): events/s of to_atif, to_html and the OTel emitter on a claude
session file repeated with fresh ids, and the cost of one live trajectory write."""

from __future__ import annotations

from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast.export import OtelEmitter, to_atif, to_html
from checkfu_fast.export._live import LiveExport

ROOT = Path(__file__).resolve().parents[1]
SESSION = ROOT / "docs" / "examples-sessions" / "claude-session.jsonl"


def session_copies(n: int) -> list[dict]:
    """The session's lean events n times over, each copy with its own call and message ids."""
    base = [
        {k: v for k, v in e.items() if k not in ("raw", "parsed")}
        for e in checkfu_fast.normalize(SESSION.read_bytes())
    ]
    out = []
    for i in range(n):
        for e in base:
            e = dict(e)
            for k in ("modelCallId", "messageId", "requestId"):
                if k in e:
                    e[k] = f"{e[k]}-{i}"
            if isinstance(e.get("tool"), dict) and "id" in e["tool"]:
                e["tool"] = {**e["tool"], "id": f"{e['tool']['id']}-{i}"}
            out.append(e)
    return out


def _otel(events: list[dict]) -> int:
    from opentelemetry.sdk.trace import TracerProvider

    em = OtelEmitter(TracerProvider().get_tracer("bench"))
    for e in events:
        em.add(e)
    em.close()
    return em.spans


@pytest.mark.parametrize("what", ["atif", "html", "otel"])
def test_bench_export(benchmark, what: str) -> None:
    n = 5 if benchmark.disabled else 500
    events = session_copies(n)
    if what == "otel":
        pytest.importorskip("opentelemetry.sdk", reason="the otel extra is absent")
    fn = {"atif": to_atif, "html": to_html, "otel": _otel}[what]
    benchmark.group = "export"
    result = benchmark.pedantic(fn, args=(events,), rounds=3, iterations=1)
    assert result
    benchmark.extra_info["events"] = len(events)
    if benchmark.stats is not None:
        benchmark.extra_info["events_per_s"] = round(len(events) / benchmark.stats.stats.median)


def test_bench_live_trajectory(benchmark, tmp_path: Path) -> None:
    """One event per batch (the worst case: a write after each) over a turn of n copies."""
    n = 2 if benchmark.disabled else 20
    events = session_copies(n)

    def run() -> int:
        live = LiveExport(tmp_path / "t.json")
        for e in events:
            live.feed([e])
        live.finish([])
        return live.writes

    benchmark.group = "export-live"
    writes = benchmark.pedantic(run, rounds=3, iterations=1)
    assert writes > len(events) // 2
    benchmark.extra_info["writes"] = writes
    if benchmark.stats is not None:
        benchmark.extra_info["ms_per_write"] = round(benchmark.stats.stats.median / writes * 1e3, 2)
