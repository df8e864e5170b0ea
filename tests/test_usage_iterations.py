"""Claude ``usage.iterations[]``: the billed sampling steps that the top-level ``usage`` leaves
out (a server-side ``compaction``, an ``advisor_message``) are readings of their own, in both
twins, counted once however often their line repeats, priced per request (docs/usage.md
"Rules", docs/events.md "Usage")."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from checkfu_fast import UsageFold, normalize, reference, usage_totals
from conftest import ROOT

CLAUDE = ROOT / "vectors" / "events" / "claude"
SESSION = CLAUDE / "session-file-compaction.input.jsonl"
RESUMED = ROOT / "vectors" / "usage" / "inputs" / "claude-compaction-resume.jsonl"
STREAM = CLAUDE / "stream-compaction.input.jsonl"


def _usages(events: list[dict]) -> list[tuple]:
    return [
        (e.get("messageId"), e["usage"]["model"], e["usage"].get("inputTokens"))
        for e in events
        if e["kind"] == "usage"
    ]


def _assistant(usage: dict, mid: str | None = "msg_1", **line: object) -> bytes:
    m: dict = {"model": "claude-opus-4-6", "content": [], "usage": usage}
    if mid is not None:
        m["id"] = mid
    return json.dumps({"type": "assistant", "message": m, **line}).encode() + b"\n"


def _both(data: bytes) -> list[dict]:
    events = normalize(data, "claude")
    assert events == reference.normalize(data, "claude")
    return events


def _fold(paths: list[Path]) -> dict:
    fold = UsageFold()
    for p in paths:
        fold.start_stream()
        for ev in normalize(p.read_bytes()):
            fold.add(ev)
        fold.end_stream()
    return fold.totals()


def test_only_billed_extra_iterations_become_readings():
    usage = {
        "input_tokens": 4,
        "output_tokens": 10,
        "iterations": [
            {"type": "compaction", "input_tokens": 100, "cache_read_input_tokens": 900},
            {"type": "message", "input_tokens": 4, "output_tokens": 10},
            {"type": "advisor_message", "model": "claude-fable-5", "input_tokens": 50},
            {"type": "fallback_message", "model": "claude-opus-4-8", "input_tokens": 4},
            {"type": "web_search", "input_tokens": 9},
            {"type": "advisor_message"},  # no count: nothing to read
            "not an object",
        ],
    }
    assert _usages(_both(_assistant(usage))) == [
        ("msg_1", "claude-opus-4-6", 4),
        ("msg_1#compaction0", "claude-opus-4-6", 1000),  # the request's model
        ("msg_1#advisor_message2", "claude-fable-5", 50),  # its own model
    ]


def test_iteration_ids_without_a_message_id():
    usage = {"iterations": [{"type": "advisor_message", "input_tokens": 5, "output_tokens": 1}]}
    with_request = _both(_assistant(usage, None, requestId="req_9"))
    # an advisor iteration without its model is not priced as the executor
    assert _usages(with_request)[1] == ("req_9#advisor_message0", "unknown", 5)
    assert "messageId" not in _both(_assistant(usage, None))[-1]
    for bad in ({"iterations": {"type": "compaction"}}, {"iterations": None}, {}):
        assert len(_usages(_both(_assistant(bad)))) == 1


def test_a_compaction_only_response_keeps_its_zero_top_level():
    usage = {
        "input_tokens": 0,
        "output_tokens": 0,
        "iterations": [{"type": "compaction", "input_tokens": 54453, "output_tokens": 883}],
    }
    events = _both(_assistant(usage))
    assert _usages(events) == [
        ("msg_1", "claude-opus-4-6", 0),
        ("msg_1#compaction0", "claude-opus-4-6", 54453),
    ]
    t = usage_totals(events)["total"]
    assert (t["inputTokens"], t["outputTokens"]) == (54453, 883)


@pytest.mark.parametrize("times", [1, 3])
def test_repeated_lines_count_each_iteration_once(times):
    usage = {
        "input_tokens": 4,
        "output_tokens": 10,
        "iterations": [
            {"type": "compaction", "input_tokens": 100, "output_tokens": 30},
            {"type": "message", "input_tokens": 4, "output_tokens": 10},
        ],
    }
    line = _assistant(usage, sessionId="s", requestId="req_1", parentUuid=None)
    t = usage_totals(_both(line * times))["total"]
    assert (t["inputTokens"], t["outputTokens"]) == (104, 40)
    stream = _assistant(usage, session_id="s")  # stream-json: per messageId in the stream
    t = usage_totals(_both(stream * times))["total"]
    assert (t["inputTokens"], t["outputTokens"]) == (104, 40)


def test_session_files_and_their_resumed_copy_count_each_iteration_once():
    """The resumed file copies both messages (with their iterations): every reading counts
    once, at its own model, and each request is priced on its own (the compaction's 206,820
    input tokens take the > 200k tier of claude-sonnet-4-6 on 2026-03-10; the message's
    21,504 do not)."""
    t = _fold([SESSION, RESUMED])
    assert sorted(t["byModel"]) == ["claude-opus-4-6", "claude-sonnet-4-6"]
    sonnet, opus = t["byModel"]["claude-sonnet-4-6"], t["byModel"]["claude-opus-4-6"]
    assert (sonnet["inputTokens"], sonnet["outputTokens"]) == (
        21504 + 206820 + 23866 + 26783,
        412 + 3500 + 531 + 96,
    )
    assert (opus["inputTokens"], opus["outputTokens"]) == (22300, 1612)
    # per Mtok, prices in force on 2026-03-10/11 (python/checkfu_fast/data/prices.json)
    usd = (
        Decimal(4 * 3 + 21500 * 3.75 + 412 * 15)  # message A
        + Decimal(1840 * 6 + 204980 * Decimal("0.6") + 3500 * Decimal("22.5"))  # A's compaction
        + Decimal(2 * 3 + 21504 * Decimal("0.3") + 2360 * Decimal("3.75") + 531 * 15)  # B
        + Decimal(22300 * 5 + 1612 * 25)  # B's advisor, claude-opus-4-6
        + Decimal(3 * 3 + 25600 * Decimal("0.3") + 1180 * Decimal("3.75") + 96 * 15)  # C
    ) / 10**6
    assert t["total"]["costUsd"] == pytest.approx(float(usd), abs=1e-9)
    assert t["total"]["source"] == "estimated"
    assert _fold([RESUMED, SESSION])["total"] == t["total"]  # whatever the file order


def test_a_result_covers_the_iterations_before_it():
    """stream-json: the result's counter is the CLI's own total; the messages and their
    iterations before it are covered, not added."""
    events = _both(STREAM.read_bytes())
    assert [u[0] for u in _usages(events)].count("msg_01JbT4kWq8Zr2Nc6Vd9XfG3xX#compaction0") == 1
    result = json.loads(STREAM.read_bytes().splitlines()[-1])
    t = usage_totals(events)["total"]
    assert t["costUsd"] == result["total_cost_usd"] and t["source"] == "reported"
    # a run cut before its result: the messages and the compaction iterations count
    cut = b"".join(STREAM.read_bytes().splitlines(keepends=True)[:-1])
    t = usage_totals(_both(cut))["total"]
    assert (t["inputTokens"], t["outputTokens"]) == (
        18406 + 160510 + 0 + 152500 + 15904,
        377 + 4100 + 0 + 2900 + 58,
    )


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in sorted((ROOT / "vectors" / "usage").glob("*.totals.json"))
        if "billedByModel" in p.read_text()
    ],
    ids=lambda p: p.name,
)
def test_session_file_totals_equal_the_billed_rule(path):
    """regen.py's independent reader: ccusage's entries plus each billed iteration, per model;
    ccusage's own rule (top-level usage only) counts less."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    keys = ("inputTokens", "outputTokens", "cachedTokens")
    got = {m: {k: t[k] for k in keys} for m, t in doc["totals"]["byModel"].items()}
    assert got == {m: {k: t[k] for k in keys} for m, t in doc["billedByModel"].items()}
    top = doc["ccusageTopLevelByModel"]
    assert sum(t["inputTokens"] for t in top.values()) < doc["totals"]["total"]["inputTokens"]
