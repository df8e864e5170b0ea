"""grok, pi, opencode and ``auto`` as they print in 2026 (issue 10 section 2,
docs/formats-2026.md sections 6-9): events on both paths and the oneshot endings they give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import reference
from checkfu_fast.oneshot import TurnRequest, observe, validate_contract

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples-2026"
IMPLS = ["native", "reference"]


def contract():
    return validate_contract(
        {
            "image": "ghcr.io/acme/agent:1.0",
            "entrypoint": "/usr/local/bin/agent",
            "protocol": "oneshot-v1",
            "argv": ["-p"],
            "prompt_transport": "stdin",
            "output_mode": "stream_json",
        }
    )


def jsonl(*lines) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def both(data: bytes, dialect: str) -> list[dict]:
    native = checkfu_fast.normalize(data, dialect)
    assert reference.normalize(data, dialect) == native
    return native


def ending(data: bytes, dialect: str, impl: str) -> dict:
    obs, _ = observe(contract(), TurnRequest("x"), data, dialect=dialect, implementation=impl)
    return obs[-1]


def observed(data: bytes, dialect: str, impl: str) -> list[dict]:
    obs, _ = observe(contract(), TurnRequest("x"), data, dialect=dialect, implementation=impl)
    return obs[1:]


# -- grok --------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_grok_token_chunks_are_one_observation_per_response(impl):
    data = (EXAMPLES / "grok-2026.jsonl").read_bytes()
    obs = observed(data, "grok", impl)
    texts = [
        (o["type"], o["payload"]["content"])
        for o in obs
        if o["type"] in ("observation.agent_thinking", "observation.agent_message")
    ]
    assert texts == [
        (
            "observation.agent_thinking",
            "The user wants the failing test fixed. Run the tests first.",
        ),
        ("observation.agent_message", "Running the tests first."),
        ("observation.agent_message", "Fixed: parse_range now keeps the inclusive end."),
    ]


def test_grok_reasoning_is_inside_output_tokens():
    # the xAI doc's own example: 7210 + 41000 + 0 + 1893 = 50103, reasoning 412 not in the sum
    inside = {
        "input_tokens": 7210,
        "cache_read_input_tokens": 41000,
        "cache_creation_input_tokens": 0,
        "output_tokens": 1893,
        "reasoning_tokens": 412,
        "total_tokens": 50103,
    }
    # an older build (EndTurn): 16016 + 11264 + 125 + 62 = 27467, reasoning counted apart
    apart = {
        "input_tokens": 16016,
        "cache_read_input_tokens": 11264,
        "output_tokens": 125,
        "reasoning_tokens": 62,
        "total_tokens": 27467,
    }
    no_total = {"input_tokens": 10, "output_tokens": 5, "reasoning_tokens": 3}
    evs = both(
        jsonl(
            {"type": "end", "stopReason": "end_turn", "usage": inside},
            {"type": "end", "stopReason": "EndTurn", "usage": apart},
            {"type": "usage", "messageId": "m", "usage": no_total},
        ),
        "grok",
    )
    outputs = [e["usage"]["outputTokens"] for e in evs if e["kind"] == "usage"]
    assert outputs == [1893, 187, 5]


@pytest.mark.parametrize("impl", IMPLS)
def test_superagent_run_finish_keeps_the_earlier_error(impl):
    data = (EXAMPLES / "grok-superagent-2026.jsonl").read_bytes()
    end = ending(data, "grok", impl)
    assert end == {
        "type": "observation.retryable_failure",
        "payload": {
            "error": {
                "type": "model.platform_supply_unavailable",
                "message": "503 Service Unavailable: upstream connect error",
            }
        },
    }


@pytest.mark.parametrize("impl", IMPLS)
def test_superagent_failed_run_without_an_error_line_fails(impl):
    data = jsonl(
        {"type": "step_start", "stepNumber": 1},
        {"type": "step_finish", "stepNumber": 1, "finishReason": "stop", "usage": {}},
        {"type": "run_finish", "success": False, "exitCode": 2, "errorCount": 0},
    )
    assert ending(data, "grok", impl)["payload"]["error"] == {
        "type": "runtime.harness_failed",
        "message": "run failed (exit code 2)",
    }
    ok = jsonl({"type": "run_finish", "success": True, "exitCode": 0, "errorCount": 0})
    assert ending(ok, "grok", impl)["type"] == "observation.finished"


def test_superagent_step_finish_without_ticks_has_no_cost():
    evs = both(
        jsonl({"type": "step_finish", "finishReason": "stop", "usage": {"inputTokens": 3}}),
        "grok",
    )
    assert evs[1]["usage"] == {
        "inputTokens": 3,
        "outputTokens": 0,
        "cachedTokens": 0,
        "model": "unknown",
    }


# -- pi ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_pi_malformed_tool_call_is_the_terminal_error(impl):
    data = (EXAMPLES / "pi-2026-failure.jsonl").read_bytes()
    obs = observed(data, "pi", impl)
    assert [o["type"] for o in obs] == ["observation.tool_use", "observation.failed"]
    assert obs[0]["payload"]["args"] == {}
    assert obs[-1]["payload"]["error"] == {
        "type": "runtime.harness_failed",
        "message": "Bad control character in string literal in JSON at position 62",
    }


def test_pi_compaction_and_queue_records():
    evs = both((EXAMPLES / "pi-2026.jsonl").read_bytes(), "pi")
    assert not [e for e in evs if e["subtype"] == "unknown"]
    compaction = [e for e in evs if e["subtype"] == "compaction"]
    assert [(e["nativeType"], e["text"], e.get("tokensBefore")) for e in compaction] == [
        ("compaction_start", "threshold", None),
        ("compaction_end", "threshold", 171204),
    ]
    queues = [e["text"] for e in evs if e.get("nativeType") == "queue_update"]
    assert queues == ["queue: 1 steering, 0 follow-up", "queue: 0 steering, 0 follow-up"]
    # message_update usage is the running total of the message in flight: never reported
    usage = [e for e in evs if e["kind"] == "usage"]
    assert [e["nativeType"] for e in usage] == ["message_end", "message_end"]


def test_pi_compaction_failures():
    end = {"type": "compaction_end", "reason": "overflow"}
    evs = both(
        jsonl(
            {**end, "willRetry": True, "errorMessage": "529 overloaded"},
            {**end, "willRetry": False, "errorMessage": "prompt is too long"},
            {**end, "reason": "threshold", "aborted": True},
        ),
        "pi",
    )
    assert [(e["kind"], e["subtype"], e.get("retry")) for e in evs] == [
        ("error", "retry", True),
        ("error", "compaction_error", None),
        ("status", "compaction", None),
    ]
    assert evs[2]["text"] == "aborted"


# -- opencode ----------------------------------------------------------------------------------
@pytest.mark.parametrize("impl", IMPLS)
def test_opencode_keeps_the_actionable_error(impl):
    data = (EXAMPLES / "opencode-2026-failure.jsonl").read_bytes()
    message = ending(data, "opencode", impl)["payload"]["error"]["message"]
    assert message.startswith("Model not found: openrouter/does-not-exist-xyz.")
    generic_only = data.splitlines(keepends=True)[1]
    message = ending(generic_only, "opencode", impl)["payload"]["error"]["message"]
    assert message == "Unexpected server error. Check server logs for details."


@pytest.mark.parametrize("impl", IMPLS)
def test_opencode_zero_tokens_with_a_cost_are_unknown(impl):
    data = (EXAMPLES / "opencode-2026.jsonl").read_bytes()
    evs = both(data, "opencode")
    zero = [
        e
        for e in evs
        if e["kind"] == "usage" and e.get("nativeId") == "prt_0881a2b3c007XyZ1aBcDeFgH"
    ]
    assert [e["usage"] for e in zero] == [
        {"costUsd": 0.0094112, "model": "unknown", "unknown": True}
    ]
    # the cost still counts: 18273 + 9411 + 10120 micro-USD (each step's cost rounded)
    assert ending(data, "opencode", impl)["payload"]["vendor_reported_cost_microusd"] == 37804


def test_opencode_real_zeros_stay_zeros():
    step = {
        "type": "step_finish",
        "part": {"reason": "stop", "cost": 0, "tokens": {"input": 0, "output": 0}},
    }
    evs = both(jsonl(step), "opencode")
    assert evs[1]["usage"] == {
        "inputTokens": 0,
        "outputTokens": 0,
        "cachedTokens": 0,
        "costUsd": 0,
        "model": "unknown",
    }


# -- auto --------------------------------------------------------------------------------------
CLAUDE_INIT = {"type": "system", "subtype": "init", "session_id": "s", "model": "m"}


@pytest.mark.parametrize(
    ("line", "dialect"),
    [
        ({**CLAUDE_INIT, "claude_code_version": "2.1.226"}, "claude"),
        ({**CLAUDE_INIT, "capabilities": {}}, "claude"),
        ({**CLAUDE_INIT, "output_style": "default"}, "claude"),
        ({**CLAUDE_INIT, "apiKeySource": "login"}, "cursor"),  # cursor's init has it too
        ({"type": "error", "message": "Couldn't start session: ..."}, "grok"),
        ({"type": "error", "message": "x", "total_cost_usd": 0.1, "usage": {}}, "grok"),
        ({"type": "error", "sessionID": "s", "message": "503", "timestamp": 1}, "grok"),
        ({"type": "compaction_start", "reason": "manual"}, "pi"),
        ({"type": "queue_update", "steering": [], "followUp": []}, "pi"),
    ],
)
def test_auto_tells(line, dialect):
    data = jsonl(line)
    for normalize in (checkfu_fast.normalize, reference.normalize):
        assert normalize(data, "auto")[0]["dialect"] == dialect


def test_an_error_line_with_other_keys_decides_nothing():
    data = jsonl({"type": "error", "message": "x", "code": "E1"})
    for normalize in (checkfu_fast.normalize, reference.normalize):
        assert normalize(data, "auto")[0]["subtype"] == "dialect_fallback"


def test_a_codex_error_after_thread_started_stays_codex():
    data = jsonl({"type": "thread.started", "thread_id": "t"}, {"type": "error", "message": "boom"})
    assert {e["dialect"] for e in both(data, "auto")} == {"codex"}
