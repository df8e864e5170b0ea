"""Claude Code session files (~/.claude/projects/*.jsonl) as a generation of the claude dialect.

The expected values are the hand-computed ones of docs/session-files-2026.md section 1.5 and the
record mapping of section 1.6 as implemented (docs/events.md, "claude session files").
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import UsageFold, normalize, reference, usage_totals
from checkfu_fast.usage import utc_day
from conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples-sessions"
SESSION = (EXAMPLES / "claude-session.jsonl").read_bytes()
SUBAGENT = (EXAMPLES / "claude-subagent.jsonl").read_bytes()
SID = "7f6c1e4a-2b8d-4c3e-9a51-0d2f6b8e4c17"
SONNET = "claude-sonnet-4-5-20250929"
HAIKU = "claude-haiku-4-5-20251001"
IMPLS = pytest.mark.parametrize("impl", [checkfu_fast, reference], ids=["native", "reference"])


def counts(t: dict) -> tuple:
    return (t["inputTokens"], t["cachedTokens"], t["outputTokens"])


def fold(*streams: bytes, norm=normalize, by_day: bool = False) -> dict:
    f = UsageFold()
    for data in streams:
        f.start_stream()
        for ev in norm(data):
            f.add(ev)
        f.end_stream()
    return f.totals(by_day=by_day)


@IMPLS
def test_auto_reads_both_files_as_claude_with_nothing_unknown(impl):
    for data in (SESSION, SUBAGENT):
        events = impl.normalize(data)
        assert {e["dialect"] for e in events} == {"claude"}
        assert not [e for e in events if e["subtype"] in ("unknown", "dialect_fallback")]


@IMPLS
@pytest.mark.parametrize(
    "line",
    [
        {"type": "summary", "summary": "t", "leafUuid": "u"},
        {"type": "file-history-snapshot", "messageId": "u", "snapshot": {}},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
        {"type": "permission-mode", "permissionMode": "default", "sessionId": "s"},
        {"type": "ai-title", "aiTitle": "x", "sessionId": "s"},
        {"type": "last-prompt", "lastPrompt": "x", "sessionId": "s"},
        {"type": "progress", "data": {"type": "hook_progress"}},
        {"type": "system", "subtype": "turn_duration", "parentUuid": None, "durationMs": 5},
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "hi"}},
    ],
    ids=lambda d: d["type"] + ("/" + d["subtype"] if "subtype" in d else ""),
)
def test_one_session_line_decides_auto(impl, line):
    events = impl.normalize(json.dumps(line).encode())
    assert [e["dialect"] for e in events] == ["claude"]
    assert events[0]["subtype"] not in ("unknown", "dialect_fallback")


@IMPLS
def test_record_mapping(impl):
    events = impl.normalize(SESSION)
    by_type: dict = {}
    for e in events:
        by_type.setdefault(e.get("nativeType"), []).append(e)
    assert by_type["summary"][0]["text"] == "Add --verbose flag to the CLI"
    assert [e["text"] for e in by_type["queue-operation"]] == [
        "enqueue: also mention the flag in the README",
        "dequeue",
    ]
    progress = by_type["progress"]
    assert [(e["kind"], e["subtype"], e["text"]) for e in progress] == [
        ("status", "progress", "agent_progress")  # its embedded message is never expanded
    ]
    assert progress[0]["parentToolUseId"] == "toolu_01Ab3Cd5Ef7Gh9Ij1Kl3ddD"
    assert progress[0]["agentId"] == "a3f9c2e1b7d4e5f60"
    system = [(e["kind"], e["subtype"]) for e in by_type["system"]]
    assert system == [("error", "retry"), ("status", "turn_completed"), ("status", "compaction")]
    retry = by_type["system"][0]
    assert retry["retry"] is True and retry["retryAfterMs"] == 601
    assert retry["error"]["errorKind"] == "transport"  # error.status 529
    assert by_type["system"][2]["text"] == "manual"  # compactMetadata.trigger
    # the summary injected after the compaction is not the user's text
    summaries = [e for e in by_type["user"] if e.get("role") == "system"]
    assert len(summaries) == 1 and summaries[0]["text"].startswith("This session is being")
    synthetic = by_type["assistant"][-1]
    assert (synthetic["kind"], synthetic["error"]["code"]) == ("error", "rate_limit")
    assert synthetic["error"]["errorKind"] == "quota"  # apiErrorStatus 429
    assert synthetic["requestId"] == "req_011CeDqS8rTy1UiOp2AsfF"
    kinds = [(e["kind"], e["subtype"]) for e in by_type["assistant"]]
    assert ("message", "thinking") in kinds and ("tool_call", "tool_use") in kinds


@IMPLS
def test_line_fields_and_their_order(impl):
    events = impl.normalize(SUBAGENT)
    first = events[0]
    assert first["sessionId"] == SID  # camelCase; the parent's session
    assert first["timestamp"] == "2026-08-20T10:22:09.702Z"
    assert first["agentId"] == "a3f9c2e1b7d4e5f60" and first["sidechain"] is True
    assert "parentToolUseId" not in first  # not on the line (docs/session-files-2026.md 1.6)
    keys = list(first)
    assert keys.index("sessionId") + 1 == keys.index("timestamp")
    assert keys.index("timestamp") < keys.index("nativeType") < keys.index("agentId")
    usage = [e for e in events if e["kind"] == "usage"]
    assert all(e["requestId"].startswith("req_") for e in usage)
    # a line without timestamp has none (the metadata records)
    assert "timestamp" not in impl.normalize(SESSION)[0]


@IMPLS
def test_usage_equals_the_hand_computed_totals(impl):
    t = fold(SESSION, SUBAGENT, norm=impl.normalize)
    assert counts(t["byModel"][SONNET]) == (108_287, 98_160, 965)
    assert counts(t["byModel"][HAIKU]) == (8_816, 4_210, 365)
    assert counts(t["total"]) == (117_103, 102_370, 1_330)
    # session files carry no cost: every message is estimated at list prices (docs/prices.md)
    assert t["total"]["source"] == "estimated" and t["total"]["unpricedModels"] == []
    assert t["total"]["costUsd"] == t["total"]["estimatedUsd"] > 0
    assert list(t["bySession"]) == [SID]  # the sub-agent's spend lands in its parent session
    # summing every line instead gives the doc's naive numbers: the dedup is what changes them
    naive = [e["usage"] for e in normalize(SESSION) if e["kind"] == "usage"]
    assert sum(u["inputTokens"] for u in naive) == 147_205
    assert sum(u["outputTokens"] for u in naive) == 981


def _spend(t: dict) -> dict:
    """The totals without ``endings`` (those count streams: a third file is a third stream)."""
    if isinstance(t, dict):
        return {k: _spend(v) for k, v in t.items() if k != "endings"}
    return t


def test_a_copy_in_another_file_counts_once_in_any_order():
    """A resumed session's file repeats the earlier messages (same message ids)."""
    once = fold(SESSION, SUBAGENT)
    assert _spend(fold(SESSION, SUBAGENT, SESSION)) == _spend(once)
    assert _spend(fold(SUBAGENT, SESSION, SUBAGENT)) == _spend(once)
    # the main file ends on a synthetic API error line, the sub-agent file on no outcome
    assert fold(SESSION, SUBAGENT, SESSION)["total"]["endings"] == {
        "ok": 0,
        "empty": 0,
        "failed": 2,
        "none": 1,
    }


def _line(mid: str, out: int, *, inp: int = 10, sidechain: bool = False, sid: str = "s1") -> str:
    return json.dumps(
        {
            "parentUuid": None,
            "isSidechain": sidechain,
            "sessionId": sid,
            "type": "assistant",
            "message": {
                "id": mid,
                "model": "m",
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}],
                "usage": {"input_tokens": inp, "output_tokens": out},
            },
            "requestId": "req_" + mid,
            "timestamp": "2026-08-20T23:59:59.999+01:00",
        }
    )


def test_keep_the_largest_output_and_prefer_the_main_copy():
    # the final block's input may drop; its output is the largest: it counts whole
    lines = [_line("a", 5, inp=100), _line("a", 50, inp=90)]
    t = usage_totals(normalize("\n".join(lines).encode()))["total"]
    assert (t["inputTokens"], t["outputTokens"]) == (90, 50)
    # a sidechain copy (a /btw replay) never beats the main one, even with more output
    lines = [_line("b", 70, sidechain=True, sid="side"), _line("b", 40, sid="main")]
    t = usage_totals(normalize("\n".join(lines).encode()))
    assert t["total"]["outputTokens"] == 40 and list(t["bySession"]) == ["main"]


def test_by_day_uses_the_utc_day():
    lines = [_line("a", 5), _line("b", 7)]
    t = usage_totals(normalize("\n".join(lines).encode()), by_day=True)
    assert list(t["byDay"]) == ["2026-08-20"]  # 23:59 at +01:00 is 22:59 UTC
    t = usage_totals(normalize(SESSION), by_day=True)
    assert list(t["byDay"]) == ["2026-08-20"] and "byDay" not in usage_totals(normalize(SESSION))


@pytest.mark.parametrize(
    ("ts", "day"),
    [
        ("2026-08-20T10:21:50.098Z", "2026-08-20"),
        ("2026-08-20T23:30:00-02:00", "2026-08-21"),
        ("2026-08-20T00:30:00+01:00", "2026-08-19"),
        ("2026-08-20 00:30:00z", "2026-08-20"),
        ("2026-12-31T23:00:00-01:00", "2027-01-01"),
        ("2026-02-30T00:00:00Z", "unknown"),
        ("2026-08-20T10:21:50", "unknown"),  # no offset: not RFC 3339
        ("yesterday", "unknown"),
        (1784028330, "unknown"),
        (None, "unknown"),
    ],
)
def test_utc_day(ts, day):
    assert utc_day(ts) == day


@given(st.data())
def test_totals_invariant_to_repeating_a_session_line(data):
    lines = SESSION.split(b"\n")
    usage_lines = [i for i, ln in enumerate(lines) if b'"usage"' in ln and b'"assistant"' in ln]
    i = data.draw(st.sampled_from(usage_lines))
    where = data.draw(st.integers(min_value=0, max_value=len(lines)))
    repeated = lines[:where] + [lines[i]] * data.draw(st.integers(1, 3)) + lines[where:]
    assert usage_totals(normalize(b"\n".join(repeated))) == usage_totals(normalize(SESSION))


@given(st.lists(st.integers(min_value=0, max_value=len(SESSION)), max_size=20))
def test_totals_invariant_to_chunking(cuts):
    n = checkfu_fast.Normalizer()
    events: list = []
    prev = 0
    for c in sorted(set(cuts)):
        events += n.feed(SESSION[prev:c])
        prev = c
    events += n.feed(SESSION[prev:]) + n.finish()
    assert usage_totals(events, by_day=True) == usage_totals(normalize(SESSION), by_day=True)


@IMPLS
def test_mapping_meta_timestamp(impl, tmp_path):
    m = {
        "checkfu_dialect": 1,
        "dialect": "north",
        "meta": {"sessionId": "/sid", "timestamp": ["/ts", "/time"]},
        "rules": [{"match": {}, "emit": [{"kind": "status", "subtype": "progress"}]}],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m))
    d = impl.load_dialect(path)
    events = impl.normalize(b'{"sid":"s","time":"2026-01-02T03:04:05Z","type":"x"}\n{"ts":5}', d)
    assert list(events[0])[list(events[0]).index("sessionId") + 1] == "timestamp"
    assert events[0]["timestamp"] == "2026-01-02T03:04:05Z"
    assert "timestamp" not in events[1]  # not a string


@IMPLS
@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("Claude AI usage limit reached|1784028330", "2026-07-14T11:25:30Z"),
        ("Claude AI usage limit reached|", None),
        ("Claude AI usage limit reached|12a", None),
        ("Claude AI usage limit reached|1234567890123", None),  # 13 digits
        ("You've hit your limit · resets 3pm (UTC)", None),  # no date: nothing is guessed
    ],
)
def test_old_limit_text_gives_the_reset_time(impl, text, at):
    line = {
        "type": "assistant",
        "isApiErrorMessage": True,
        "error": "rate_limit",
        "message": {"model": "<synthetic>", "content": [{"type": "text", "text": text}]},
    }
    (ev,) = impl.normalize(json.dumps(line).encode(), "claude")
    assert ev["error"]["errorKind"] == "quota"
    assert ev.get("retryAt") == at
