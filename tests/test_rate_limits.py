"""``rateLimits`` (docs/events.md): codex ``rate_limits`` of every generation and claude
``rate_limit_event`` as typed readings, the same from both twins.

The lines are the CLIs' own shapes: codex rollouts of 2026 (``resets_at``, ``limit_id``), late
2025 (``resets_in_seconds``), the first flat ``primary_used_percent`` generation, the legacy
``{"id","msg"}`` envelope; claude ``rate_limit_event`` with ``utilization`` and a newer build's
``unifiedWindows``. The expected readings are written out by hand (times checked against
``datetime``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import checkfu_fast
from checkfu_fast import reference
from checkfu_fast.golden import strict_key


def readings(line: dict[str, Any], dialect: str) -> list[list[dict[str, Any]] | None]:
    """Each event's ``rateLimits`` (``None``: absent), asserting both twins agree exactly."""
    data = (json.dumps(line) + "\n").encode()
    native = checkfu_fast.normalize(data, dialect=dialect)
    ref = reference.normalize(data, dialect=dialect)
    assert strict_key(native) == strict_key(ref)
    assert checkfu_fast.normalize_jsonl(data, dialect=dialect) == reference.normalize_jsonl(
        data, dialect=dialect
    )
    return [ev.get("rateLimits") for ev in native]


def rollout(ts: str, rate_limits: Any, info: Any = None) -> dict[str, Any]:
    payload = {"type": "token_count", "info": info, "rate_limits": rate_limits}
    return {"timestamp": ts, "type": "event_msg", "payload": payload}


def utc(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


INFO = {
    "total_token_usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 5},
    "last_token_usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 5},
}


def test_codex_2026_resets_at_epoch_seconds() -> None:
    rl = {
        "limit_id": "codex",
        "primary": {"used_percent": 4.0, "window_minutes": 300, "resets_at": 1788765600},
        "secondary": {"used_percent": 9.0, "window_minutes": 10080, "resets_at": 1789200000},
        "plan_type": "plus",
    }
    got = readings(rollout("2026-09-07T03:00:00.000Z", rl, INFO), "codex")
    assert utc(1788765600) == "2026-09-07T07:20:00Z"
    assert got == [
        [
            {
                "window": "5h",
                "usedPercent": 4.0,
                "resetsAt": "2026-09-07T07:20:00Z",
                "limitType": "primary",
            },
            {
                "window": "7d",
                "usedPercent": 9.0,
                "resetsAt": "2026-09-12T08:00:00Z",
                "limitType": "secondary",
            },
        ]
    ]


def test_codex_readings_ride_on_the_lines_one_event() -> None:
    rl = {"primary": {"used_percent": 12.0, "window_minutes": 300, "resets_at": 1784028330}}
    data = (json.dumps(rollout("2026-07-14T09:12:10Z", rl, INFO)) + "\n").encode()
    (ev,) = checkfu_fast.normalize(data, dialect="codex")
    assert ev["kind"] == "usage" and ev["rateLimits"][0]["usedPercent"] == 12.0
    data = (json.dumps(rollout("2026-07-14T09:12:10Z", rl)) + "\n").encode()
    (ev,) = checkfu_fast.normalize(data, dialect="codex")
    assert (ev["kind"], ev["subtype"], ev["text"]) == ("status", "progress", "rate_limits")
    assert ev["rateLimits"][0]["limitType"] == "primary"


def test_codex_late_2025_resets_in_seconds_count_from_the_lines_timestamp() -> None:
    rl = {
        "primary": {"used_percent": 12.0, "window_minutes": 299, "resets_in_seconds": 8121},
        "secondary": {"used_percent": 41, "window_minutes": 10079, "resets_in_seconds": 401233},
    }
    got = readings(rollout("2025-10-01T10:00:00.500+00:00", rl), "codex")
    base = datetime(2025, 10, 1, 10, 0, 0, 500_000, UTC)
    assert base + timedelta(seconds=8121) == datetime(2025, 10, 1, 12, 15, 21, 500_000, UTC)
    assert base + timedelta(seconds=401233) == datetime(2025, 10, 6, 1, 27, 13, 500_000, UTC)
    assert got == [
        [
            {
                "window": "5h",
                "usedPercent": 12.0,
                "resetsAt": "2025-10-01T12:15:21.500Z",
                "limitType": "primary",
            },
            {
                "window": "7d",
                "usedPercent": 41,
                "resetsAt": "2025-10-06T01:27:13.500Z",
                "limitType": "secondary",
            },
        ]
    ]
    # another zone: the same instant
    got = readings(rollout("2025-10-01T12:00:00.500+02:00", rl), "codex")
    assert got[0] is not None and got[0][0]["resetsAt"] == "2025-10-01T12:15:21.500Z"
    # no usable timestamp: no reset time, the reading stays
    got = readings(rollout("yesterday", rl), "codex")
    assert got[0] is not None and [r.get("resetsAt") for r in got[0]] == [None, None]


def test_codex_first_generation_is_flat() -> None:
    rl = {
        "primary_used_percent": 12.5,
        "secondary_used_percent": 40.0,
        "primary_to_secondary_ratio_percent": 75.0,
        "primary_window_minutes": 300,
        "secondary_window_minutes": 10080,
        "primary_reset_after_seconds": 600,
    }
    got = readings(rollout("2025-09-20T10:00:00Z", rl), "codex")
    assert got == [
        [
            {
                "window": "5h",
                "usedPercent": 12.5,
                "resetsAt": "2025-09-20T10:10:00Z",
                "limitType": "primary",
            },
            {"window": "7d", "usedPercent": 40.0, "limitType": "secondary"},
        ]
    ]


def test_codex_legacy_envelope_has_no_time_base() -> None:
    line = {
        "id": "1",
        "msg": {
            "type": "token_count",
            "info": {"total_token_usage": INFO["total_token_usage"]},
            "rate_limits": {
                "primary": {"used_percent": 12.0, "window_minutes": 299, "resets_in_seconds": 1},
                "secondary": {"used_percent": 41.0, "window_minutes": 10079, "resets_at": 0},
            },
        },
    }
    assert readings(line, "codex") == [
        [
            {"window": "5h", "usedPercent": 12.0, "limitType": "primary"},
            {
                "window": "7d",
                "usedPercent": 41.0,
                "resetsAt": "1970-01-01T00:00:00Z",
                "limitType": "secondary",
            },
        ]
    ]


def test_codex_other_limits_windows_and_junk() -> None:
    rl = {
        "limit_id": "codex_bengalfox",
        "primary": {"used_percent": 1, "window_minutes": 60},
        "secondary": {"used_percent": 2, "window_minutes": 1440},
    }
    got = readings(rollout("2026-01-01T00:00:00Z", rl), "codex")
    assert got == [
        [
            {"window": "1h", "usedPercent": 1, "limitType": "codex_bengalfox.primary"},
            {"window": "1d", "usedPercent": 2, "limitType": "codex_bengalfox.secondary"},
        ]
    ]
    rl = {
        "primary": {"used_percent": 3, "window_minutes": 15, "resets_at": -5},
        "secondary": {"used_percent": 4},  # no length: the limit names the window
    }
    got = readings(rollout("2026-01-01T00:00:00Z", rl), "codex")
    assert got == [
        [
            {"window": "15m", "usedPercent": 3, "limitType": "primary"},
            {"window": "secondary", "usedPercent": 4, "limitType": "secondary"},
        ]
    ]
    for junk in (
        None,
        [],
        "x",
        {"primary": {"used_percent": -1}},
        {"primary": {"used_percent": True}},
        {"primary": {"used_percent": "12"}},
        {"primary": None, "secondary": {"window_minutes": 300}},
    ):
        assert readings(rollout("2026-01-01T00:00:00Z", junk), "codex") == [None], junk


def event(info: Any) -> dict[str, Any]:
    return {"type": "rate_limit_event", "rate_limit_info": info, "uuid": "u", "session_id": "s"}


def test_claude_utilization_is_a_fraction() -> None:
    info = {
        "status": "allowed_warning",
        "resetsAt": 1767225600,
        "rateLimitType": "five_hour",
        "utilization": 0.57,
        "overageStatus": "allowed",
    }
    assert 0.57 * 100 != 57.0  # the decimal point is moved, not multiplied
    assert readings(event(info), "claude") == [
        [
            {
                "window": "5h",
                "usedPercent": 57.0,
                "resetsAt": "2026-01-01T00:00:00Z",
                "limitType": "five_hour",
            }
        ]
    ]
    rejected = dict(info, status="rejected", rateLimitType="seven_day_opus", utilization=1)
    data = (json.dumps(event(rejected)) + "\n").encode()
    (ev,) = checkfu_fast.normalize(data, dialect="claude")
    assert (ev["kind"], ev["subtype"]) == ("error", "rate_limit")
    assert ev["rateLimits"] == [
        {
            "window": "7d",
            "usedPercent": 100,
            "resetsAt": "2026-01-01T00:00:00Z",
            "limitType": "seven_day_opus",
        }
    ]
    assert readings(event(rejected), "claude") == [ev["rateLimits"]]


def test_claude_unified_windows() -> None:
    info = {
        "status": "allowed",
        "resetsAt": 1790190000,
        "rateLimitType": "five_hour",
        "overageStatus": "allowed",
        "overageResetsAt": 1790812800,
        "isUsingOverage": False,
        "unifiedWindows": {
            "five_hour": {"utilization": 0.09, "resetsAt": 1790190000},
            "seven_day": {"utilization": 0.43, "resetsAt": 1790492400000},  # milliseconds
        },
    }
    assert utc(1790190000) == "2026-09-23T19:00:00Z" and utc(1790492400) == "2026-09-27T07:00:00Z"
    want = [
        {
            "window": "5h",
            "usedPercent": 9.0,
            "resetsAt": "2026-09-23T19:00:00Z",
            "limitType": "five_hour",
        },
        {
            "window": "7d",
            "usedPercent": 43.0,
            "resetsAt": "2026-09-27T07:00:00Z",
            "limitType": "seven_day",
        },
    ]
    assert readings(event(info), "claude") == [want]
    # the info's own reading is kept when no window of its type is given
    own = dict(info, rateLimitType="overage", utilization=0.5)
    del own["resetsAt"]
    got = readings(event(own), "claude")
    assert got == [[*want, {"window": "overage", "usedPercent": 50.0, "limitType": "overage"}]]
    # and dropped when one is
    assert readings(event(dict(info, utilization=0.99)), "claude") == [want]


@pytest.mark.parametrize(
    "info",
    [
        None,
        {"status": "allowed", "resetsAt": 1786249200, "rateLimitType": "five_hour"},
        {"status": "allowed", "utilization": 0.5},  # no type: no window
        {"status": "allowed", "rateLimitType": "five_hour", "utilization": "0.5"},
        {"status": "allowed", "rateLimitType": "five_hour", "utilization": -0.1},
        {"status": "allowed", "unifiedWindows": {"five_hour": {"resetsAt": 1}}},
    ],
)
def test_claude_no_number_no_reading(info: Any) -> None:
    assert readings(event(info), "claude") == [None]


def test_arrow_column_is_json_text() -> None:
    pa = pytest.importorskip("pyarrow")
    rl = {"primary": {"used_percent": 4.0, "window_minutes": 300, "resets_at": 1788765600}}
    data = (json.dumps(rollout("2026-09-07T03:00:00Z", rl)) + "\n").encode()
    table = pa.table(checkfu_fast.normalize_arrow(data, dialect="codex"))
    cell = table.column("rate_limits")[0].as_py()
    assert json.loads(cell) == checkfu_fast.normalize(data, dialect="codex")[0]["rateLimits"]
