"""Retry times of quota and transport errors: rust/retry.rs == reference/retry.py == the table."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import _native, reference
from checkfu_fast.reference.retry import DELAY_PHRASES, KEYS, TIME_PHRASES, parse
from conftest import assert_valid

# (message, retryAt, retryAfterMs). Real wording first (corpus, golden inputs, CLI sources).
TABLE = [
    # real captures: a time of day without a date or zone says neither
    ("Weekly limit reached ∙ resets 5am", None, None),
    (
        "You've hit your usage limit. To get more access now, send a request to your admin or "
        "try again at 12:16 PM.",
        None,
        None,
    ),
    ("Codex error: The usage limit has been reached", None, None),
    ("Try again at Sep 12th, 2025 3:04 PM.", None, None),
    ("Reconnecting... 2/5", None, None),
    ("429 Too Many Requests", None, None),
    ("exceeded retry limit, last status: 401 Unauthorized", None, None),
    # claude rate_limit_event (the dialect writes resetsAt into the message)
    ("rate limit rejected: seven_day (resetsAt 1767225600)", "2026-01-01T00:00:00Z", None),
    ("rate limit rejected: five_hour (resetsAt 1760000000)", "2025-10-09T08:53:20Z", None),
    # codex usage-limit texts
    (
        "You've hit your usage limit. Upgrade to Pro (https://openai.com/chatgpt/pricing) or "
        "try again in 2 hours 14 minutes.",
        None,
        8_040_000,
    ),
    ("You've hit your usage limit. Try again in 3 days 4 hours 12 minutes.", None, 274_320_000),
    (
        '{"error":{"type":"usage_limit_reached","resets_in_seconds":4211,"resets_at":1757520000}}',
        "2025-09-10T16:00:00Z",
        4_211_000,
    ),
    # OpenAI rate-limit bodies (north/solweb golden inputs)
    ("Rate limit reached for gpt-4o ... Please try again in 644ms. Visit ...", None, 644),
    ("Rate limit reached ... Please try again in 2.528s.", None, 2528),
    ("Rate limit exceeded, please retry after 20s", None, 20_000),
    # delays
    ("usage limit: resets in 3h 20m", None, 12_000_000),
    ("Please retry in 37.2s.", None, 37_200),
    ("rate limited, retry after 30 seconds", None, 30_000),
    ("try again in 1m30s", None, 90_000),
    ("try again in 2 hours and 5 minutes", None, 7_500_000),
    ("quota exceeded; wait ~5 min", None, 300_000),
    ("try again in about 1 hour", None, 3_600_000),
    ("HTTP 429, Retry-After: 120", None, 120_000),
    ('{"retry_after_ms": 1500}', None, 1500),
    ('{"retryAfter": 7}', None, 7000),
    ("try again in 30", None, None),  # no unit: not said
    ("retry in 5 parsecs", None, None),
    # absolute times with a zone
    ("quota: try again at 2026-07-01T12:00:00Z", "2026-07-01T12:00:00Z", None),
    ("limit resets at 2026-07-01 14:30 +02:00", "2026-07-01T12:30:00Z", None),
    ("limit resets at 2026-07-01 14:30 UTC", "2026-07-01T14:30:00Z", None),
    ("blocked until 2026-07-01T00:00:00.5-05:00", "2026-07-01T05:00:00.500Z", None),
    ("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT", "2015-10-21T07:28:00Z", None),
    ('{"resetsAt":1760000000123}', "2025-10-09T08:53:20.123Z", None),
    ('{"resets_at":"2026-03-01T08:00:00Z"}', "2026-03-01T08:00:00Z", None),
    # no zone, impossible dates, out of range: nothing
    ("try again at 2026-07-01T12:00:00", None, None),
    ("until 2026-02-30T00:00:00Z", None, None),
    ("until 2026-07-01T24:00:00Z", None, None),
    ("resetsAt 99999999999999", "5138-11-16T09:46:39.999Z", None),
    ("resetsAt 999999999999999", None, None),
    ("try again at 2026-07-01T12:00:00Zulu", None, None),
    # both
    ("resets in 3h 20m (resetsAt 1760000000)", "2025-10-09T08:53:20Z", 12_000_000),
    # first of each kind wins
    ("retry in 5s, or retry in 10s", None, 5000),
    # a trigger must start a word
    ("overwait 5 minutes", None, None),
]


@pytest.mark.parametrize(("message", "at", "after"), TABLE, ids=lambda x: str(x)[:40])
def test_table_both_implementations(message, at, after):
    assert parse(message) == (at, after)
    assert _native.parse_retry(message) == (at, after)


FRAGMENTS = [
    *(t.decode() for t, _ in KEYS),
    *(t.decode() for t in DELAY_PHRASES),
    *(t.decode() for t in TIME_PHRASES),
    " ", ":", "=", '"', "~", "about ", "and ", ", ", ".", "+", "-", "T", "Z", "UTC", "GMT",
    "ms", "s", "m", "h", "d", "min", "hours", "Wed, ", "Oct", "2026-07-01", "12:30", ":59",
    "2026-02-29", "2025-02-29", "0", "1", "99", "1760000000", "100000000000", "0.5",
]  # fmt: skip

near_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.integers(0, 10**16).map(str), st.text(max_size=3)),
    max_size=12,
).map("".join)
any_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]))


@given(st.one_of(near_text, any_text))
def test_same_answer_on_any_text(text):
    got = parse(text)
    assert _native.parse_retry(text) == got
    at, after = got
    assert at is None or (len(at) in (20, 24) and at.endswith("Z"))
    assert after is None or (isinstance(after, int) and 0 <= after <= 10**15)


def _events(line: dict, dialect: str) -> list[dict]:
    data = json.dumps(line).encode()
    native = checkfu_fast.normalize(data, dialect)
    assert native == reference.normalize(data, dialect)
    assert_valid(native)
    return [e for e in native if e["kind"] == "error"]


def test_claude_rate_limit_event_carries_retry_at():
    line = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "rejected",
            "rateLimitType": "five_hour",
            "resetsAt": 1760000000,
        },
        "session_id": "s",
    }
    (ev,) = _events(line, "claude")
    assert ev["retryAt"] == "2025-10-09T08:53:20Z" and "retryAfterMs" not in ev
    keys = list(ev)
    assert keys.index("error") + 1 == keys.index("retryAt")  # right after the error object
    assert set(ev["error"]) == {"code", "message", "errorKind"}  # the schema admits no more


def test_transport_error_with_delay_and_semantic_error_without():
    (ev,) = _events({"type": "error", "message": "stream error: retry in 2s"}, "codex")
    assert ev["error"]["errorKind"] == "transport" and ev["retryAfterMs"] == 2000
    (ev,) = _events({"type": "error", "message": "bad request; retry in 2s"}, "codex")
    assert ev["error"]["errorKind"] == "semantic"
    assert "retryAfterMs" not in ev and "retryAt" not in ev


def test_a_message_without_a_time_gives_neither():
    msg = "You've hit your usage limit. To get more access now, try again at 12:16 PM."
    for ev in _events({"type": "error", "message": msg}, "codex"):
        assert ev["error"]["errorKind"] == "quota"
        assert "retryAt" not in ev and "retryAfterMs" not in ev


def test_mapping_dialects_too():
    line = {
        "error": {
            "message": "Rate limit reached. Please try again in 644ms.",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    (ev,) = _events(line, "north")
    assert ev["error"]["errorKind"] == "quota" and ev["retryAfterMs"] == 644


def test_pi_auto_retry_delay_is_the_streams_own():
    line = {
        "type": "auto_retry_start",
        "attempt": 1,
        "maxAttempts": 3,
        "delayMs": 2000,
        "errorMessage": '529 {"type":"error","error":{"type":"overloaded_error"}} retry in 9s',
    }
    (ev,) = _events(line, "pi")
    assert ev["error"]["errorKind"] == "transport" and ev["retryAfterMs"] == 2000
    for bad in (-1, 2.5, True, "2000", 1 << 63):
        (ev,) = _events({**line, "delayMs": bad}, "pi")
        assert ev["retryAfterMs"] == 9000  # falls back to the text
