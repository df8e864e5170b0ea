"""Mapping-defined dialects: the built-in three, a user's own file, and load-time validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import MappingError, reference

DATA = Path(__file__).parent / "data"
GEMINI = b"\n".join(
    [
        b'{"type":"init","timestamp":"2025-10-10T12:00:00Z","session_id":"s-1","model":"gemini-2.5-pro"}',
        b'{"type":"message","role":"user","content":"list files","timestamp":"t"}',
        b'{"type":"message","role":"assistant","content":"Sure","delta":true,"timestamp":"t"}',
        b'{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"ls"}}',
        b'{"type":"tool_result","tool_id":"t1","status":"success","output":"a.txt"}',
        b'{"type":"error","severity":"error","message":"Quota exceeded for gemini-2.5-pro"}',
        b'{"type":"result","status":"success","stats":{"total_tokens":30,"input_tokens":20,'
        b'"output_tokens":10,"duration_ms":5,"tool_calls":1}}',
        b'{"type":"something_new"}',
    ]
)


@pytest.mark.parametrize("impl", [checkfu_fast, reference], ids=["native", "reference"])
def test_a_fresh_format_by_mapping_file_alone(impl, validator) -> None:
    gemini = impl.load_dialect(DATA / "gemini-cli.mapping.json")
    events = impl.normalize(GEMINI, gemini)
    got = [(e["kind"], e["subtype"], e.get("role")) for e in events]
    assert got == [
        ("status", "init", None),
        ("message", "text", "user"),
        ("message", "text", "assistant"),
        ("tool_call", "tool_use", "assistant"),
        ("message", "tool_result", "tool"),
        ("error", "api_error", None),
        ("status", "result", None),
        ("usage", "cumulative", None),
        ("status", "unknown", None),
    ]
    assert events[2]["delta"] is True
    assert events[3]["tool"] == {
        "name": "run_shell_command",
        "arguments": {"command": "ls"},
        "id": "t1",
    }
    assert events[4]["tool"] == {"name": "unknown", "id": "t1", "isError": False}
    assert events[4]["text"] == "a.txt"
    assert events[5]["error"] == {
        "code": "error",
        "message": "Quota exceeded for gemini-2.5-pro",
        "errorKind": "quota",
    }
    assert events[7]["usage"] == {
        "inputTokens": 20,
        "outputTokens": 10,
        "cachedTokens": 0,
        "model": "unknown",
    }
    assert all(e["sessionId"] == "s-1" for e in events[:1])
    assert {e["dialect"] for e in events} == {"north"}
    for e in events:
        validator.validate(e)
    assert events == reference.normalize(
        GEMINI, reference.load_dialect(DATA / "gemini-cli.mapping.json")
    )


def test_mapping_works_with_the_incremental_normalizer() -> None:
    gemini = checkfu_fast.load_dialect(DATA / "gemini-cli.mapping.json")
    n = checkfu_fast.Normalizer(gemini)
    events = [e for i in range(0, len(GEMINI), 7) for e in n.feed(GEMINI[i : i + 7])]
    assert events + n.finish() == checkfu_fast.normalize(GEMINI, gemini)


BASE = {"checkfu_dialect": 1, "dialect": "north", "rules": []}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({**BASE, "checkfu_dialect": 2}, "/checkfu_dialect: expected 1"),
        ({**BASE, "dialect": "gemini"}, "/dialect: expected one of claude"),
        ({**BASE, "extra": 1}, "unknown key 'extra'"),
        (
            {**BASE, "rules": [{"match": {"type": "x"}, "emit": []}]},
            "/rules/0/match: JSON pointer must start with '/'",
        ),
        (
            {**BASE, "rules": [{"match": {"/a": {"gt": 1}}, "emit": []}]},
            "/rules/0/match/~1a: unknown test 'gt'",
        ),
        (
            {**BASE, "rules": [{"match": {}, "emit": [{"kind": "message", "subtype": "text"}]}]},
            '/rules/0/emit/0: a message needs "text"',
        ),
        (
            {
                **BASE,
                "rules": [
                    {
                        "match": {},
                        "emit": [{"kind": "usage", "subtype": "turn", "usage": {"input": 3}}],
                    }
                ],
            },
            "/rules/0/emit/0/usage/input: expected a JSON pointer string",
        ),
        (
            {
                **BASE,
                "rules": [
                    {"match": {}, "emit": [{"kind": "status", "subtype": "x", "role": "robot"}]}
                ],
            },
            "/rules/0/emit/0/role: expected one of assistant",
        ),
        (
            {
                **BASE,
                "rules": [
                    {
                        "match": {},
                        "emit": [
                            {
                                "kind": "error",
                                "subtype": "x",
                                "error": {"code": "c", "message": "/m", "errorKind": "fatal"},
                            }
                        ],
                    }
                ],
            },
            "/rules/0/emit/0/error/errorKind: expected quota",
        ),
    ],
)
def test_malformed_mappings_are_rejected_at_load(tmp_path: Path, doc, message: str) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(MappingError) as exc:
        checkfu_fast.load_dialect(path)
    assert message in str(exc.value)
    assert str(path) in str(exc.value)
    assert exc.value.code == "mapping.invalid"


def test_unreadable_and_non_json_mappings(tmp_path: Path) -> None:
    with pytest.raises(MappingError, match="cannot read mapping"):
        checkfu_fast.load_dialect(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MappingError, match="not valid JSON"):
        checkfu_fast.load_dialect(bad)


def test_builtin_mapping_files_compile_in_rust() -> None:
    from checkfu_fast import _native

    for name in ("north", "canary", "solweb"):
        text = (Path(checkfu_fast.__file__).parent / "mappings" / f"{name}.json").read_text()
        assert _native.Mapping(text).dialect == name


@pytest.mark.parametrize(
    ("line", "dialect"),
    [
        (b'{"id":"c","object":"chat.completion.chunk","choices":[]}', "north"),
        (b'{"type":"message_start","message":{"id":"msg_1","usage":{}}}', "canary"),
        (b'{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}', "solweb"),
    ],
)
def test_auto_sniffs_mapped_dialects(line: bytes, dialect: str) -> None:
    events = checkfu_fast.normalize(line + b"\n")
    assert events[0]["dialect"] == dialect
    assert events == reference.normalize(line + b"\n")
