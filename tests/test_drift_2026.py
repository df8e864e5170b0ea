"""Issue 25: the CLIs as they print at the end of 2026 (docs/formats-2026.md section 13)."""

from __future__ import annotations

import json

import pytest

from checkfu_fast import normalize, reference
from checkfu_fast.audit import audit_files
from checkfu_fast.oneshot import TurnRequest, observe, validate_contract
from checkfu_fast.oneshot.observe import stop_reason_of
from conftest import ROOT

EVENTS = ROOT / "vectors" / "events"
IMPLS = ["native", "reference"]


def contract():
    return validate_contract(
        {
            "image": "ghcr.io/acme/agent:1",
            "entrypoint": "/usr/local/bin/agent",
            "protocol": "oneshot-v1",
            "argv": ["-p"],
            "prompt_transport": "stdin",
            "output_mode": "stream_json",
        }
    )


def jsonl(*lines) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def both(data: bytes, dialect: str = "auto") -> list[dict]:
    native = normalize(data, dialect)
    assert reference.normalize(data, dialect) == native
    return native


def ending(data: bytes, dialect: str, impl: str) -> dict:
    obs, _ = observe(contract(), TurnRequest("x"), data, dialect=dialect, implementation=impl)
    return obs[-1]


SYNTH = {"model": "<synthetic>", "role": "assistant", "type": "message"}


def synthetic(text: str) -> dict:
    return {"type": "assistant", "message": {**SYNTH, "content": [{"type": "text", "text": text}]}}


# -- claude: a local command's answer is not an API error --------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # /context on 2.1.2xx: no `error`, no `is_api_error_message`: the command's table
        (synthetic("## Context Usage\n| Messages | 23.3k |"), None),
        ({**synthetic("Current: 12% used"), "local_command_run": {"command": "usage"}}, None),
        # marked API errors, whatever the text
        ({**synthetic("## a table"), "error": "server_error"}, "transport"),
        ({**synthetic("## a table"), "is_api_error_message": True}, "semantic"),
        # builds that mark none: the text reads as an API failure
        (synthetic('API Error: 404 {"type":"error"}'), "semantic"),
        (synthetic("Weekly limit reached ∙ resets 5am"), "quota"),
        (synthetic("Invalid API key · Fix external API key"), "semantic"),
    ],
)
def test_synthetic_lines(line, kind):
    (ev,) = both(jsonl(line), "claude")
    if kind is None:
        assert (ev["kind"], ev["subtype"], ev["role"]) == ("message", "text", "system")
    else:
        assert (ev["kind"], ev["error"]["errorKind"]) == ("error", kind)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_local_command_turn_finishes_and_is_not_the_answer(impl):
    data = jsonl(
        synthetic("## Context Usage"),
        {"type": "result", "subtype": "success", "is_error": False, "num_turns": 0, "result": ""},
    )
    obs, _ = observe(contract(), TurnRequest("x"), data, dialect="claude", implementation=impl)
    assert obs[-1]["type"] == "observation.finished"
    assert not [o for o in obs if o["type"] == "observation.agent_message"]


def test_control_channel_goals_and_task_sets_are_progress():
    evs = both(
        jsonl(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": "req_2", "response": {}},
            },
            {
                "type": "control_response",
                "response": {"subtype": "error", "request_id": "req_3", "error": "no such task"},
            },
            {"type": "control_request", "request_id": "r1", "request": {"subtype": "can_use_tool"}},
            {"type": "control_cancel_request", "request_id": "r1"},
            {"type": "active_goal", "value": None, "uuid": "u"},
            {"type": "active_goal", "value": {"condition": "tests pass", "iterations": 1}},
            {"type": "system", "subtype": "commands_changed", "commands": [{"name": "a"}]},
            {"type": "system", "subtype": "background_tasks_changed", "tasks": []},
            {
                "type": "system",
                "subtype": "background_tasks_changed",
                "tasks": [{"task_id": "t1", "description": "npm test"}, {"task_id": "t2"}],
            },
        ),
        "claude",
    )
    assert {(e["kind"], e["subtype"]) for e in evs} == {("status", "progress")}
    assert [e["text"] for e in evs] == [
        "control_response success req_2",
        "control_response error req_3: no such task",
        "control_request can_use_tool r1",
        "control_cancel_request r1",
        "active_goal: none",
        "active_goal: tests pass",
        "commands_changed: 1",
        "background tasks: none",
        "background tasks: npm test; t2",
    ]
    # the typed extras a runner uses: the reply's request id and payload, the live task set
    assert [e.get("controlRequestId") for e in evs[:4]] == ["req_2", "req_3", "r1", "r1"]
    assert evs[0]["controlResponse"] == {} and "controlResponse" not in evs[1]
    assert evs[7]["backgroundTasks"] == [] and len(evs[8]["backgroundTasks"]) == 2
    assert not [e for e in evs[4:7] if {"controlRequestId", "backgroundTasks"} & e.keys()]


def test_the_late_2026_example_is_audit_clean():
    report, failed = audit_files([str(ROOT / "docs" / "examples-2026")])
    assert failed == []
    for name, d in report["dialects"].items():
        assert d["unknown_fields"] == [], name
        assert d["unregistered_records"] == [], name
    claude = report["dialects"]["claude"]["records"]
    for t in ("control_response", "active_goal", "system/background_tasks_changed"):
        assert t in claude


# -- grok 0.2.x -------------------------------------------------------------------------------


def test_stop_reasons_in_rust_enum_spelling():
    assert stop_reason_of("EndTurn") == "end_turn"
    assert stop_reason_of("Cancelled") == "interrupted"
    assert stop_reason_of("MaxTokens") == "max_tokens"
    assert stop_reason_of("MaxTurnRequests") == "max_turn_requests"
    assert stop_reason_of("Refusal") == "refusal"
    assert stop_reason_of("toolUse") == "end_turn"
    assert stop_reason_of("SomethingNew") == "end_turn"


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    ("name", "stop"),
    [("0.2-2026", "end_turn"), ("0.2-cancelled-2026", "interrupted"), ("0.2-max-turns-2026", None)],
)
def test_grok_endings(impl, name, stop):
    data = (EVENTS / "grok" / f"{name}.input.jsonl").read_bytes()
    end = ending(data, "grok", impl)
    assert end["type"] == "observation.finished"
    assert end["payload"]["stop_reason"] == (stop or "max_turn_requests")


@pytest.mark.parametrize("impl", IMPLS)
def test_a_broken_grok_stream_is_retryable(impl):
    data = (EVENTS / "grok" / "0.2-transport-2026.input.jsonl").read_bytes()
    end = ending(data, "grok", impl)
    assert end["type"] == "observation.retryable_failure"
    assert end["payload"]["error"]["type"] == "model.platform_supply_unavailable"


# -- transport: structured statuses first; what the CLI retries is never semantic --------------


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("terminated", "transport"),  # undici's cut connection, retried by pi
        ("fetch failed", "transport"),
        ("401: invalid x-api-key (connection 4)", "semantic"),
        ("403: forbidden, timeout", "semantic"),
        ("429: slow down", "quota"),
        ("529: overloaded", "transport"),
        ("400: prompt is too long", "semantic"),
        ("Bad control character in string literal in JSON at position 62", "semantic"),
    ],
)
def test_pi_error_kinds(message, kind):
    line = {
        "type": "message_end",
        "message": {"role": "assistant", "stopReason": "error", "errorMessage": message},
    }
    (ev,) = both(jsonl(line), "pi")
    assert ev["error"]["errorKind"] == kind


def test_pi_auto_retry_is_never_semantic_but_a_status_decides():
    evs = both(
        jsonl(
            {"type": "auto_retry_start", "attempt": 1, "delayMs": 500, "errorMessage": "boom"},
            {"type": "auto_retry_start", "attempt": 1, "errorMessage": "401: unauthorized"},
        ),
        "pi",
    )
    assert [e["error"]["errorKind"] for e in evs] == ["transport", "semantic"]
    assert evs[0]["retryAfterMs"] == 500


@pytest.mark.parametrize("impl", IMPLS)
def test_pi_cut_connection_ends_retryable(impl):
    data = jsonl(
        {
            "type": "message_end",
            "message": {
                "role": "assistant",
                "content": [],
                "stopReason": "error",
                "errorMessage": "terminated",
            },
        },
        {"type": "auto_retry_start", "attempt": 1, "delayMs": 2000, "errorMessage": "terminated"},
    )
    assert ending(data, "pi", impl)["type"] == "observation.retryable_failure"


def test_opencode_status_code_decides_first():
    evs = both((EVENTS / "opencode" / "statuses-2026.input.jsonl").read_bytes(), "opencode")
    assert [e["error"]["errorKind"] for e in evs] == ["semantic", "transport", "transport"]


def test_grok_transport_text():
    line = {"type": "error", "message": 'Internal error: "reqwest error stream: Transport error"'}
    (ev,) = both(jsonl(line), "grok")
    assert ev["error"]["errorKind"] == "transport"


# -- auto: a line two dialects share is not decisive -------------------------------------------


def test_codex_stream_that_fails_before_thread_started_is_codex():
    data = jsonl(
        {"type": "error", "message": "stream disconnected before completion"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    )
    evs = both(data)
    assert {e["dialect"] for e in evs} == {"codex"}
    assert not [e for e in evs if e["subtype"] == "dialect_fallback"]


def test_a_bare_error_alone_is_still_grok():
    evs = both(jsonl({"type": "error", "message": "Couldn't start session: ..."}))
    assert [(e["dialect"], e["kind"]) for e in evs] == [("grok", "error")]


def test_a_bare_error_before_a_decisive_grok_line():
    data = jsonl({"type": "error", "message": "x"}, {"type": "end", "stopReason": "EndTurn"})
    assert {e["dialect"] for e in both(data)} == {"grok"}


# -- codex: failures told in plain text ---------------------------------------------------------


@pytest.mark.parametrize("name", ["plain-failures-2026", "plain-failures-stream-2026"])
def test_codex_plain_text_failures(name):
    evs = both((EVENTS / "codex" / f"{name}.input.jsonl").read_bytes(), "codex")
    results = [e["tool"]["isError"] for e in evs if e["subtype"] == "tool_result"]
    assert results == ([True, False, True] if name == "plain-failures-2026" else [True])


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("Exit code: 1\nWall time: 0.1 seconds\nOutput:\n", True),
        ("Exit code: 0\nWall time: 0.1 seconds\n", False),
        ("Exit code: 00\n", False),
        ("Exit code: -1\n", True),
        ("Exit code: \n", False),
        ("Output: Exit code: 1", False),  # only at the start
        ("failed in sandbox: exit code: 2", True),
    ],
)
def test_codex_plain_exit_codes(text, failed):
    line = {
        "type": "response_item",
        "payload": {"type": "function_call_output", "call_id": "c", "output": text},
    }
    (ev,) = both(jsonl(line), "codex")
    assert ev["tool"]["isError"] is failed
