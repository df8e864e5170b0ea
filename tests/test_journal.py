"""Runner journal validation against the events schema's $defs, both paths.

Expected violations are worked out by hand from the schema (../shared/seeds/003_…).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import reference
from checkfu_fast.reference.journal import is_date_time, journal
from conftest import SHARED, needs_shared

IMPLS = {"native": checkfu_fast.validate_journal, "reference": reference.validate_journal}

GOOD = [
    {"kind": "provision.failed", "taskId": "t", "cmd": None, "exitCode": 2, "logTail": "oops"},
    {
        "kind": "attempt.started",
        "task": "t1",
        "phase": "implement",
        "ordinal": 1,
        "attemptId": "a1",
        "leaseId": "l1",
        "processGeneration": 1,
    },
    {
        "kind": "review.verdict",
        "task": "t1",
        "phase": "review",
        "binding": "b",
        "baseHead": "h0",
        "taskHead": "h1",
        "verdict": "pass",
    },
    {
        "kind": "rate-limit.parked",
        "task": "t",
        "phase": "p",
        "binding": "b",
        "baseHead": "x",
        "taskHead": "y",
        "failureClass": "quota",
        "failureFingerprint": "f",
        "parkCount": 2,
        "resetAt": "2026-12-02T17:00:00.5+01:00",
    },
    {
        "kind": "attempt.ownership",
        "generation": 3,
        "ownership": {
            "pid": 4242,
            "startTime": "123456",
            "processGroup": 4242,
            "cgroup": "/sys/x",
            "generation": 3,
        },
    },
    {
        "kind": "supervision.registered",
        "generation": 1,
        "token": "run-1.a_b",
        "unit": "harness-run@run-1.service",
    },
    {
        "kind": "supervision.restart-scheduled",
        "generation": 2,
        "delayMs": 120000,
        "nextRestartAt": 0,
    },
    {"kind": "queue.window-bypassed", "requestedAt": "2024-02-29t23:59:60z"},
    {"kind": "task.duration", "task": "t", "phase": "fix", "durationMs": 1.5},
    {"kind": "watchdog.incident", "generation": 1.0, "reason": "stall"},  # 1.0 is an integer
]


def jsonl(records: list) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


@needs_shared
def test_schema_copy_is_the_seed() -> None:
    shipped = Path(checkfu_fast.__file__).parent / "schemas" / "events-v1.schema.json"
    assert shipped.read_bytes() == (SHARED / "seeds" / "003_4dc6804f576ea617.txt").read_bytes()


def test_every_listed_kind_is_known() -> None:
    kinds = set(journal().by_kind)
    for k in (
        "attempt.started",
        "gate0.fail",
        "provision.failed",
        "review.complete",
        "task.duration",
        "task.diff",
        "acceptance.result",
        "run.start",
        "review.attempt",
        "review.verdict",
        "fix.rung",
        "binding.fallback.attempt",
        "retry.attempt",
        "rate-limit.parked",
        "rate-limit.heartbeat",
        "rate-limit.woken",
        "quarantine",
        "retry.stop-loss",
        "engine.migrated",
        "supervision.registered",
        "queue.launch",
        "queue.window-bypassed",
        "supervision.heartbeat",
        "supervision.crashed",
        "supervision.restart-scheduled",
        "supervision.restart-refused",
        "attempt.ownership",
        "watchdog.incident",
        "resource.limit",
    ):
        assert k in kinds


@pytest.mark.parametrize("impl", IMPLS.values(), ids=IMPLS.keys())
def test_valid_records_have_no_violations(impl) -> None:
    assert impl(jsonl(GOOD)) == []


BAD = [
    (
        {"kind": "provision.failed", "taskId": "t", "cmd": 1, "exitCode": 2.5, "logTail": "x"},
        [("/cmd", "type"), ("/exitCode", "type")],
    ),
    (
        {
            "kind": "attempt.started",
            "task": "t",
            "phase": "deploy",
            "ordinal": 0,
            "attemptId": "",
            "leaseId": "l",
        },
        [
            ("", "required"),
            ("/phase", "enum"),
            ("/ordinal", "minimum"),
            ("/attemptId", "minLength"),
        ],
    ),
    (
        {
            "kind": "attempt.ownership",
            "generation": 0,
            "ownership": {
                "pid": True,
                "startTime": "12a",
                "processGroup": 1,
                "cgroup": "c",
                "generation": 1,
                "extra": 1,
            },
        },
        [
            ("/generation", "minimum"),
            ("/ownership/pid", "type"),
            ("/ownership/startTime", "pattern"),
            ("/ownership/extra", "additionalProperties"),
        ],
    ),
    (
        {
            "kind": "rate-limit.parked",
            "task": "t",
            "phase": "p",
            "binding": "b",
            "baseHead": "x",
            "taskHead": "y",
            "failureClass": "q",
            "failureFingerprint": "f",
            "parkCount": 1,
            "resetAt": "2023-02-29T00:00:00Z",
        },
        [("/resetAt", "format")],
    ),
    (
        {"kind": "review.verdict", "task": "", "phase": "p", "binding": "b", "baseHead": "x"},
        # allOf in order: qualityEvent (required taskHead, then /task), then the verdict branch
        [("", "required"), ("/task", "minLength"), ("", "required")],
    ),
    (
        {
            "kind": "supervision.registered",
            "generation": 1,
            "token": "a b",
            "unit": "harness-run@x.service\n",
        },
        [("/token", "pattern"), ("/unit", "pattern")],
    ),
    (
        {
            "kind": "supervision.restart-scheduled",
            "generation": 1,
            "delayMs": 1000,
            "nextRestartAt": 1.5,
        },
        [("/delayMs", "enum"), ("/nextRestartAt", "type")],
    ),
    (
        {
            "kind": "review.complete",
            "verdict": "pass",
            "findings": [{"severity": "major", "message": "m"}, {"severity": "nit"}, "x"],
        },
        [("/findings/1", "required"), ("/findings/1/severity", "enum"), ("/findings/2", "type")],
    ),
    ({"kind": "no.such.kind"}, [("/kind", "unknown_kind")]),
    ({"task": "t"}, [("/kind", "kind")]),
    ([1, 2], [("", "type")]),
]


@pytest.mark.parametrize("impl", IMPLS.values(), ids=IMPLS.keys())
@pytest.mark.parametrize(("record", "want"), BAD, ids=[str(i) for i in range(len(BAD))])
def test_violations_have_pointer_and_keyword(impl, record, want) -> None:
    got = impl(jsonl([GOOD[0], record]))
    assert [(v["pointer"], v["keyword"]) for v in got] == want
    assert all(v["line"] == 2 and v["position"] == len(json.dumps(GOOD[0])) + 1 for v in got)
    assert all(v["message"] for v in got)


@pytest.mark.parametrize("impl", IMPLS.values(), ids=IMPLS.keys())
def test_framing_errors_and_blank_lines(impl) -> None:
    data = b'\n{"kind":"quarantine"\n\xff\n  \n' + b"[" * 70 + b"]\n"
    got = [(v["line"], v["keyword"]) for v in impl(data)]
    assert got == [(2, "invalid_json"), (3, "invalid_utf8"), (5, "too_deep")]


def test_type_lists_in_messages() -> None:
    rec = {"kind": "provision.failed", "taskId": "t", "cmd": 1, "exitCode": 2, "logTail": None}
    (v,) = checkfu_fast.validate_journal(jsonl([rec]))
    assert v["message"] == "expected string or null"


def test_messages_agree() -> None:
    data = jsonl([r for r, _ in BAD])
    assert checkfu_fast.validate_journal(data) == reference.validate_journal(data)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("2026-12-02T17:00:00Z", True),
        ("2024-02-29T00:00:00+00:00", True),
        ("2023-02-29T00:00:00Z", False),
        ("2026-12-02T24:00:00Z", False),
        ("2026-12-02T23:59:60Z", True),
        ("2026-12-02T17:00:00", False),
        ("2026-12-02 17:00:00Z", False),
        ("2026-12-02T17:00:00+24:00", False),
        ("2026-12-02t17:00:00.123456789z", True),
        ("２026-12-02T17:00:00Z", False),
        # a leap second only at 23:59:60 UTC, the offset applied (local - offset = UTC)
        ("2016-12-31T23:59:60+01:00", False),
        ("2017-01-01T00:59:60+01:00", True),
        ("2016-12-31T18:59:60-05:00", True),
        ("2016-12-31T23:59:60-05:00", False),
        ("2016-12-31T23:29:60-00:30", True),
        ("2016-12-31T23:59:60-00:00", True),
        ("2017-01-01T23:58:60+23:59", True),
        ("2016-12-31T00:00:60-23:59", True),
        ("2016-12-31T12:00:60Z", False),
        ("2016-12-31T23:58:60Z", False),
        ("2016-12-31T23:59:60.999z", True),
    ],
)
def test_date_time(text: str, ok: bool) -> None:
    assert is_date_time(text) is ok
    rec = {"kind": "queue.window-bypassed", "requestedAt": text}
    assert (checkfu_fast.validate_journal(jsonl([rec])) == []) is ok
    assert (reference.validate_journal(jsonl([rec])) == []) is ok


@given(
    hour=st.integers(0, 24),
    minute=st.integers(0, 60),
    second=st.sampled_from([0, 59, 60, 61]),
    offset=st.one_of(
        st.just("Z"),
        st.tuples(st.sampled_from("+-"), st.integers(0, 24), st.integers(0, 60)).map(
            lambda t: f"{t[0]}{t[1]:02d}:{t[2]:02d}"
        ),
    ),
)
def test_date_time_agrees_and_leap_seconds_are_2359_utc(hour, minute, second, offset) -> None:
    text = f"2016-12-31T{hour:02d}:{minute:02d}:{second:02d}{offset}"
    rec = {"kind": "queue.window-bypassed", "requestedAt": text}
    native = checkfu_fast.validate_journal(jsonl([rec])) == []
    assert native is (reference.validate_journal(jsonl([rec])) == []) is is_date_time(text)
    # worked out independently of the code under test: shift the local time to UTC
    oh, om = (0, 0) if offset == "Z" else (int(offset[1:3]), int(offset[4:]))
    sign = -1 if offset.startswith("-") else 1
    utc = divmod((hour * 60 + minute - sign * (oh * 60 + om)) % 1440, 60)
    want = hour <= 23 and minute <= 59 and oh <= 23 and om <= 59 and second <= 60
    assert native is (want and (second < 60 or utc == (23, 59)))


field_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200000),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(
        ["", "implement", "2026-12-02T17:00:00Z", "pass", "harness-run@a.service", "memory"]
    ),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@given(
    base=st.sampled_from(GOOD + [r for r, _ in BAD if isinstance(r, dict)]),
    edits=st.dictionaries(
        st.sampled_from(sorted({k for r in GOOD for k in r})), field_values, max_size=4
    ),
    drop=st.lists(st.sampled_from(sorted({k for r in GOOD for k in r})), max_size=2),
)
def test_random_records_agree(base: dict, edits: dict, drop: list) -> None:
    rec = {**base, **edits}
    for k in drop:
        rec.pop(k, None)
    data = jsonl([rec])
    assert checkfu_fast.validate_journal(data) == reference.validate_journal(data)
