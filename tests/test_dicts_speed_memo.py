"""One line's repeated values in the event dicts (rust/py/convert.rs ``LineMemo``).

The dicts of one line share the objects of the values they repeat (a usage event's
``messageId`` and ``modelCallId``, the ``position`` and ``lineBytes`` of the line's events);
values that only look alike (ids of one length, other bytes) stay apart, and every dict equals
the reference twin's, also past the memo's four strings and four ints a line.
"""

from __future__ import annotations

import json

import pytest

import checkfu_fast
from checkfu_fast import reference


def assistant(blocks: list[dict], msg_id: str = "msg_01ABCDEFGHIJKLMNOPQRSTUV") -> bytes:
    line = {
        "type": "assistant",
        "message": {
            "model": "claude-sonnet-4-5-20250929",
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "content": blocks,
            "usage": {"input_tokens": 4, "output_tokens": 3, "cache_read_input_tokens": 5291},
        },
        "session_id": "2fac7ddd-70a0-4be9-87fa-640d3f33eaf2",
    }
    return json.dumps(line).encode() + b"\n"


def tool_uses(n: int) -> list[dict]:
    # ids of one length, other bytes (a memo by length alone would give every event the first)
    return [
        {"type": "tool_use", "id": f"toolu_{i:022d}", "name": "Bash", "input": {"n": i}}
        for i in range(n)
    ]


# the second line starts past 256 (CPython's cached ints): its position is an int object
PAD = b'{"type":"system","subtype":"init","session_id":"s","cwd":"' + b"x" * 300 + b'"}\n'


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 20])
@pytest.mark.parametrize("fields", [None, "lean"])
def test_many_events_of_one_line_equal_the_reference(n: int, fields: str | None) -> None:
    data = PAD + assistant([{"type": "text", "text": "héllo 😀"}, *tool_uses(n)]) + PAD
    got = checkfu_fast.normalize(data, "claude", fields=fields)
    assert got == reference.normalize(data, "claude", fields=fields)
    ids = [e["tool"]["id"] for e in got if e["kind"] == "tool_call"]
    assert ids == [f"toolu_{i:022d}" for i in range(n)]
    line = [e for e in got if e["position"] == len(PAD)]
    assert len(line) >= n + 2
    if fields == "lean":
        assert {e["lineBytes"] for e in line} == {len(data) - 2 * len(PAD) - 1}
    assert [e["seq"] for e in got] == list(range(len(got)))


def test_a_lines_repeated_values_are_one_object() -> None:
    data = PAD + assistant([{"type": "text", "text": "hi"}, *tool_uses(3)])
    got = checkfu_fast.normalize(data, "claude", fields="lean")
    assert got == reference.normalize(data, "claude", fields="lean")
    line = [e for e in got if e["position"] == len(PAD)]
    usage = next(e for e in line if e["kind"] == "usage")
    assert usage["messageId"] == usage["modelCallId"] == "msg_01ABCDEFGHIJKLMNOPQRSTUV"
    assert usage["messageId"] is usage["modelCallId"]
    assert len({id(e["position"]) for e in line}) == 1
    assert len({id(e["lineBytes"]) for e in line}) == 1
    assert len({id(e["modelCallId"]) for e in line}) == 1


def test_lines_do_not_share_values_that_differ() -> None:
    # two lines of one length whose ids differ: each line's own values
    a = assistant([{"type": "text", "text": "one"}], "msg_01AAAAAAAAAAAAAAAAAAAAAA")
    b = assistant([{"type": "text", "text": "two"}], "msg_01BBBBBBBBBBBBBBBBBBBBBB")
    assert len(a) == len(b)
    data = PAD + a + b
    got = checkfu_fast.normalize(data, "claude", fields="lean")
    assert got == reference.normalize(data, "claude", fields="lean")
    assert [e["modelCallId"] for e in got if "modelCallId" in e] == [
        "msg_01AAAAAAAAAAAAAAAAAAAAAA",
        "msg_01AAAAAAAAAAAAAAAAAAAAAA",
        "msg_01BBBBBBBBBBBBBBBBBBBBBB",
        "msg_01BBBBBBBBBBBBBBBBBBBBBB",
    ]


# --- the values of a low-cardinality field across lines (convert.rs ``Slot``) ---


def user_text(text: str, session: str, cwd: str) -> bytes:
    line = {
        "type": "user",
        "message": {"role": "user", "content": text},
        "session_id": session,
        "cwd": cwd,
    }
    return json.dumps(line).encode() + b"\n"


def init(session: str, cwd: str, model: str) -> bytes:
    line = {
        "type": "system",
        "subtype": "init",
        "session_id": session,
        "cwd": cwd,
        "model": model,
    }
    return json.dumps(line).encode() + b"\n"


@pytest.mark.parametrize("fields", [None, "lean"])
def test_many_values_of_a_repeating_field_equal_the_reference(fields: str | None) -> None:
    # more sessions, cwds and models than a field's slot holds (8), cycling, of one length and
    # of others, some past what the slot keeps (256 bytes) and past the kept map's 48
    sessions = [f"2fac7ddd-70a0-4be9-87fa-{i:012d}" for i in range(11)] + ["s", "é" * 3]
    cwds = [f"/home/u/{'p' * (i * 29)}" for i in range(13)]
    models = [f"claude-{i % 5}" for i in range(13)]
    lines = []
    for round_ in range(3):
        for i, (s, c, m) in enumerate(zip(sessions, cwds, models, strict=True)):
            j = (i * 5 + round_) % len(sessions)
            lines.append(init(sessions[j], c, m))
            lines.append(user_text(f"hi {i}", s, cwds[j]))
            lines.append(assistant([{"type": "text", "text": "ok"}, *tool_uses(i % 3)]))
    data = b"".join(lines)
    got = checkfu_fast.normalize(data, "claude", fields=fields)
    assert got == reference.normalize(data, "claude", fields=fields)
    assert {e["sessionId"] for e in got if "sessionId" in e} == set(sessions) | {
        "2fac7ddd-70a0-4be9-87fa-640d3f33eaf2"
    }
    assert {e["cwd"] for e in got if "cwd" in e} == set(cwds)


def test_a_sessions_repeated_values_are_one_object_across_lines() -> None:
    cwd = "/home/u/" + "project/" * 12  # past the kept map's 48 bytes, within the slot's 256
    data = init("sess-1", cwd, "claude-a") + b"".join(
        user_text(f"hi {i}", "sess-1", cwd) for i in range(5)
    )
    got = checkfu_fast.normalize(data, "claude", fields="lean")
    assert got == reference.normalize(data, "claude", fields="lean")
    assert len({id(e["sessionId"]) for e in got}) == 1
    assert len({id(e["kind"]) for e in got if e["kind"] == "message"}) == 1
    assert len({id(e["cwd"]) for e in got if "cwd" in e}) == 1
