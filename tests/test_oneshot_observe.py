"""oneshot-v1 section 4: stdout -> observations (docs/oneshot.md). Expected values by hand."""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkfu_fast.oneshot import TurnRequest, _schema, observe, validate_contract
from checkfu_fast.oneshot.observe import cut, microusd
from conftest import CORPUS, CORPUS_DIALECTS, needs_shared

ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def h(prefix: str, native: str) -> str:
    return prefix + hashlib.sha256(native.encode()).hexdigest()[:32]


def contract(**over):
    c = {
        "image": "ghcr.io/acme/claude-code:2.1.0",
        "entrypoint": "/usr/local/bin/claude",
        "protocol": "oneshot-v1",
        "argv": ["-p", "--output-format", "stream-json", "--verbose"],
        "prompt_transport": "stdin",
        "output_mode": "stream_json",
    }
    c.update(over)
    return validate_contract(c)


def jsonl(*lines) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)


def valid(observations):
    v = _schema.observation_validator()
    for o in observations:
        errors = [f"{e.instance_path}: {e.message}" for e in v.iter_errors(o)]
        assert not errors, (o, errors)
    return observations


def run(stdout, impl="native", request=None, process=None, **over):
    obs, state = observe(
        contract(**over),
        request or TurnRequest("hi"),
        stdout,
        implementation=impl,
        process=process,
    )
    return valid(obs), state


def test_ready_capabilities_follow_the_contract():
    obs, _ = run("", output_mode="text")
    assert obs[0] == {
        "type": "observation.ready",
        "payload": {
            "capability_set": {
                "event_fidelity": "text_only",
                "continuation": "rebuild_only",
                "checkpoint": "conversation_only",
                "approval_delivery": "unsupported",
                "interrupt": "kill_only",
                "mid_run_input": "unsupported",
                "model_control": "opaque",
                "usage_authority": "unknown",
                "multiagent_shared_environment": False,
                "subagents": "flatten",
            }
        },
    }
    caps = run("", resume_flag="--continue", model_wire_dialects=["anthropic_messages"])[0][0]
    cs = caps["payload"]["capability_set"]
    assert (cs["event_fidelity"], cs["continuation"], cs["checkpoint"]) == (
        "structured",
        "next_turn",
        "disk_only",
    )
    assert (cs["model_control"], cs["usage_authority"], cs["subagents"]) == (
        "compatible",
        "harness_reported",
        "observed",
    )


@pytest.mark.parametrize(
    ("stdout", "content"),
    [
        ("Hello\n", "Hello"),
        ("Hello\r\n", "Hello"),
        ("Hello\n\n", "Hello\n"),
        ("  two\nlines  ", "  two\nlines  "),
        ("\n", None),
        ("", None),
    ],
)
def test_text_mode(stdout, content):
    obs, state = run(stdout, output_mode="text")
    middle = obs[1:-1]
    if content is None:
        assert middle == [] and state["last_response"] == ""
    else:
        assert middle == [{"type": "observation.agent_message", "payload": {"content": content}}]
        assert state["last_response"] == content
    assert obs[-1] == {"type": "observation.finished", "payload": {"stop_reason": "end_turn"}}


def test_text_mode_invalid_utf8_is_replaced_not_fatal():
    obs, _ = run(b"ok \xff\n", output_mode="text")
    assert obs[1]["payload"]["content"] == "ok \ufffd"


CLAUDE = jsonl(
    {"type": "system", "subtype": "init", "session_id": "s1", "tools": ["Bash"], "model": "m"},
    {
        "type": "assistant",
        "message": {
            "id": "msg_01A",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "Let me look.", "signature": "x"},
                {"type": "text", "text": "Listing files."},
                {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        "parent_tool_use_id": None,
        "session_id": "s1",
    },
    {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": [{"type": "text", "text": "a.txt"}],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_02",
                    "content": "<tool_use_error>no such file</tool_use_error>",
                    "is_error": True,
                },
            ],
        },
        "session_id": "s1",
    },
    {
        "type": "assistant",
        "message": {
            "id": "msg_01B",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "One file: a.txt"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 20, "output_tokens": 7},
        },
        "session_id": "s1",
    },
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 2851,
        "result": "One file: a.txt",
        "total_cost_usd": 0.0856255,
        "usage": {"input_tokens": 30, "output_tokens": 12},
        "session_id": "s1",
        "structured_output": {"answer": "a.txt"},
    },
)


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_claude_stream(impl):
    obs, state = run(CLAUDE, impl)
    a, b = h("evt_", "msg_01A"), h("evt_", "msg_01B")
    assert obs[1:] == [
        {
            "type": "observation.agent_thinking",
            "payload": {"content": "Let me look.", "event_id": a},
        },
        {
            "type": "observation.agent_message",
            "payload": {"content": "Listing files.", "event_id": a},
        },
        {
            "type": "observation.tool_use",
            "payload": {
                "tool_use_id": "toolu_01",
                "tool": "harness:Bash",
                "args": {"command": "ls"},
                "provider_tool_name": "Bash",
            },
        },
        {
            "type": "observation.tool_result",
            "payload": {"tool_use_id": "toolu_01", "result": [{"type": "text", "text": "a.txt"}]},
        },
        {
            "type": "observation.tool_result",
            "payload": {
                "tool_use_id": "toolu_02",
                "result": "<tool_use_error>no such file</tool_use_error>",
                "error": {
                    "type": "runtime.harness_failed",
                    "message": "<tool_use_error>no such file</tool_use_error>",
                },
            },
        },
        {
            "type": "observation.agent_message",
            "payload": {"content": "One file: a.txt", "event_id": b},
        },
        {
            "type": "observation.finished",
            "payload": {
                "stop_reason": "end_turn",
                # 0.0856255 USD = 85,625.5 micro-USD; half-even rounds to the even 85,626
                "vendor_reported_cost_microusd": 85626,
                "turn": {
                    "execution": "shell",
                    "shell_commands": 1,
                    "filesystem_commands": 0,
                    "mcp_calls": 0,
                    "model_calls": 2,
                    "wall_time_ms": 2851,
                },
            },
        },
    ]
    assert state == {"schema_version": 1, "turn": 1, "last_response": "One file: a.txt"}


def test_structured_output_is_the_last_response_when_a_schema_was_given():
    _, state = run(
        CLAUDE,
        request=TurnRequest("hi", {"schema_version": 1, "turn": 2, "last_response": ""}, ANSWER),
    )
    assert state == {"schema_version": 1, "turn": 3, "last_response": '{"answer":"a.txt"}'}


def test_microusd_half_even_in_decimal():
    assert microusd(0.0856255) == 85626  # .5 -> even (6)
    assert microusd(0.0856245) == 85624  # .5 -> even (4)
    assert microusd(0.0000005) == 0
    assert microusd(0.0000015) == 2
    assert microusd(0.14746179999999998) == 147462
    assert microusd(0) == 0


def test_subagent_lines_carry_the_hashed_parent_id():
    stdout = jsonl(
        {
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_task",
                        "name": "Task",
                        "input": {"description": "find", "subagent_type": "Explore"},
                    }
                ],
            },
        },
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "t1",
            "tool_use_id": "toolu_task",
            "description": "find",
            "task_type": "local_agent",  # the agent type comes from the Task call
        },
        {
            "type": "assistant",
            "parent_tool_use_id": "toolu_task",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "searching"},
                    {
                        "type": "tool_use",
                        "id": "toolu_g",
                        "name": "Grep",
                        "input": {"pattern": "x"},
                    },
                ],
            },
        },
        {
            "type": "system",
            "subtype": "task_notification",
            "task_id": "t1",
            "tool_use_id": "toolu_task",
            "status": "completed",
            "summary": "done",
        },
        {"type": "result", "subtype": "success", "is_error": False},  # the outcome, no text
    )
    obs, state = run(stdout)
    sub = h("subg_", "toolu_task")
    types = [o["type"].removeprefix("observation.") for o in obs]
    assert types == [
        "ready",
        "tool_use",
        "subagent_started",
        "agent_message",
        "tool_use",
        "subagent_completed",
        "finished",
    ]
    assert obs[2]["payload"] == {"subagent": sub, "name": "Explore", "description": "find"}
    assert obs[3]["payload"] == {
        "content": "searching",
        "event_id": h("evt_", "msg_2"),
        "subagent": sub,
    }
    assert obs[4]["payload"]["subagent"] == sub and "subagent" not in obs[1]["payload"]
    assert obs[5]["payload"] == {"subagent": sub, "disposition": "completed"}
    assert state["last_response"] == ""  # a sub-agent's message is not the answer
    assert obs[-1]["payload"] == {"stop_reason": "end_turn"}  # no duration reported: no turn


@pytest.mark.parametrize(
    ("lines", "ending"),
    [
        (
            [
                {
                    "type": "result",
                    "subtype": "success",
                    "is_error": True,
                    "result": "Weekly limit reached ∙ resets 5am",
                }
            ],
            (
                "retryable_failure",
                {
                    "error": {
                        "type": "model.platform_capacity_reached",
                        "message": "Weekly limit reached ∙ resets 5am",
                    }
                },
            ),
        ),
        (
            [
                {"type": "error", "message": "stream error: 503 Service Unavailable"},
                {
                    "type": "turn.failed",
                    "error": {"message": "stream error: 503 Service Unavailable"},
                },
            ],
            (
                "retryable_failure",
                {
                    "error": {
                        "type": "model.platform_supply_unavailable",
                        "message": "stream error: 503 Service Unavailable",
                    }
                },
            ),
        ),
        (
            [
                {
                    "type": "result",
                    "subtype": "error_max_turns",
                    "is_error": True,
                    "duration_ms": 10,
                    "errors": ["Reached maximum number of turns (1)"],
                }
            ],
            (
                "finished",
                {
                    "stop_reason": "max_turn_requests",
                    "turn": {
                        "execution": "model_only",
                        "shell_commands": 0,
                        "filesystem_commands": 0,
                        "mcp_calls": 0,
                        "model_calls": 0,
                        "wall_time_ms": 10,
                    },
                },
            ),
        ),
        (
            [
                {
                    "type": "result",
                    "subtype": "error_during_execution",
                    "is_error": True,
                    "errors": ["boom"],
                }
            ],
            ("failed", {"error": {"type": "runtime.harness_failed", "message": "boom"}}),
        ),
        (
            # an error the harness recovered from does not decide the ending
            [
                {"type": "thread.started", "thread_id": "t"},
                {"type": "error", "message": "Reconnecting... 1/5"},
                {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
            ],
            ("finished", {"stop_reason": "end_turn"}),
        ),
    ],
)
def test_endings(lines, ending):
    obs, _ = run(jsonl(*lines))
    assert obs[-1] == {"type": f"observation.{ending[0]}", "payload": ending[1]}
    assert (
        sum(
            o["type"]
            in ("observation.finished", "observation.failed", "observation.retryable_failure")
            for o in obs
        )
        == 1
    )


def test_garbage_lines_and_a_half_written_last_line_still_finish():
    stdout = (
        "Traceback (most recent call last):\n<html>502</html>\n"
        + jsonl(
            {
                "type": "assistant",
                "message": {
                    "id": "m",
                    "role": "assistant",
                    "content": [{"type": "text", "text": "hi"}],
                },
            }
        )
        + '{"type":"result","subtype":"succ'
    )
    obs, state = run(stdout)
    assert [o["type"] for o in obs] == [
        "observation.ready",
        "observation.agent_message",
        "observation.finished",
    ]
    assert state["last_response"] == "hi"


def proc(**over):
    base = dict(
        stdout=b"",
        stderr_tail=b"",
        exit_code=0,
        signal=None,
        timed_out=False,
        killed_by_us=False,
        output_truncated=False,
        wall_time_ms=1234,
        spawn_error=None,
        spawn_error_message=None,
        escaped_descendants=False,
        stdin_broken=False,
    )
    base.update(over)
    return SimpleNamespace(**base)


@pytest.mark.parametrize(
    ("process", "kind", "error_type"),
    [
        (
            proc(spawn_error="not_found", spawn_error_message="entrypoint /x not found"),
            "failed",
            "runtime.harness_unavailable",
        ),
        (
            proc(output_truncated=True, killed_by_us=True, exit_code=None, signal=9),
            "failed",
            "validation.payload_too_large",
        ),
        (
            proc(timed_out=True, killed_by_us=True, exit_code=None, signal=2),
            "failed",
            "runtime.turn_deadline_exceeded",
        ),
        (
            proc(exit_code=3, stderr_tail=b"warn\nfatal: bad flag\n"),
            "failed",
            "runtime.harness_failed",
        ),
        (proc(exit_code=None, signal=9), "failed", "runtime.harness_failed"),
        (proc(exit_code=None, signal=None), "failed", "runtime.harness_failed"),  # status lost
    ],
)
def test_live_endings(process, kind, error_type):
    obs, _ = run("", process=process)
    assert obs[-1]["type"] == f"observation.{kind}"
    assert obs[-1]["payload"]["error"]["type"] == error_type
    if process.exit_code == 3:
        assert (
            obs[-1]["payload"]["error"]["message"]
            == "harness exited with status 3: fatal: bad flag"
        )


def test_live_success_always_has_a_measured_turn():
    obs, _ = run('{"type":"result","subtype":"success","result":"ok"}\n', process=proc())
    assert obs[-1]["payload"]["turn"]["wall_time_ms"] == 1234
    obs, _ = run("ok\n", process=proc(), output_mode="text")
    assert obs[-1]["payload"]["turn"] == {
        "execution": "model_only",
        "shell_commands": 0,
        "filesystem_commands": 0,
        "mcp_calls": 0,
        "model_calls": 0,
        "wall_time_ms": 1234,
    }


def test_quota_error_in_stream_wins_over_the_exit_status():
    stdout = jsonl(
        {"type": "result", "subtype": "success", "is_error": True, "result": "429 rate limit"}
    )
    obs, _ = run(stdout, process=proc(exit_code=1))
    assert obs[-1]["type"] == "observation.retryable_failure"


def test_cut_is_visible_and_fits():
    s = "é" * 300_000
    out = cut(s, 262_144)
    assert len(out) == 262_144 and out.endswith(" chars]") and "truncated" in out
    assert cut("short", 10) == "short"
    obs, _ = run(s + "\n", output_mode="text")
    assert len(obs[1]["payload"]["content"]) == 262_144
    # exactly at the maximum (in code points, whatever the UTF-8 length) nothing is cut
    for at_max in ("a" * 262_144, "é✓" * 131_072):
        assert cut(at_max, 262_144) == at_max
        assert run(at_max + "\r\n", output_mode="text")[0][1]["payload"]["content"] == at_max
    over = "a" * 262_140 + "é" * 5
    assert cut(over, 262_144) == "a" * 262_123 + "…[truncated 22 chars]"  # 21-char marker


def test_codex_file_changes_and_tool_classes():
    stdout = jsonl(
        {"type": "thread.started", "thread_id": "th"},
        {
            "type": "item.started",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "bash -lc ls",
                "aggregated_output": "",
                "status": "in_progress",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "command_execution",
                "command": "bash -lc ls",
                "aggregated_output": "a\n",
                "exit_code": 0,
                "status": "completed",
            },
        },
        {
            "type": "item.completed",
            "item": {
                "id": "item_2",
                "type": "file_change",
                "changes": [
                    {"path": "/w/a.txt", "kind": "update"},
                    {"path": "/w/b.txt", "kind": "add"},
                ],
                "status": "completed",
            },
        },
        {
            "type": "item.started",
            "item": {
                "id": "item_3",
                "type": "mcp_tool_call",
                "server": "docs",
                "tool": "search",
                "arguments": {"q": "x"},
                "status": "in_progress",
            },
        },
        {
            "type": "turn.completed",
            "usage": {"input_tokens": 5, "cached_input_tokens": 0, "output_tokens": 2},
        },
    )
    obs, _ = run(stdout)
    kinds = [(o["type"].removeprefix("observation."), o["payload"]) for o in obs[1:-1]]
    assert kinds[0] == (
        "tool_use",
        {
            "tool_use_id": "item_1",
            "tool": "harness:command_execution",  # the item type, not events/v1's "shell"
            "args": {"command": "bash -lc ls"},
            "provider_tool_name": "command_execution",
        },
    )
    assert kinds[1] == ("tool_result", {"tool_use_id": "item_1", "result": "a\n"})
    assert kinds[2:4] == [
        ("file_changed", {"event": "modify", "path": "/w/a.txt"}),
        ("file_changed", {"event": "create", "path": "/w/b.txt"}),
    ]
    assert kinds[4][1]["tool"] == "harness:search"
    finished = observe(contract(), TurnRequest("x"), stdout, process=proc())[0][-1]
    assert finished["payload"]["turn"] == {
        "execution": "shell",
        "shell_commands": 1,
        "filesystem_commands": 1,
        "mcp_calls": 1,
        "model_calls": 0,
        "wall_time_ms": 1234,
    }


def test_tool_names_with_whitespace_and_missing_ids():
    stdout = jsonl(
        {"type": "tool_call", "toolName": "run my tool", "rawInput": {"a": 1}, "sessionId": "s"}
    )
    obs, _ = observe(contract(), TurnRequest("x"), stdout, dialect="grok")
    tool = [o["payload"] for o in valid(obs) if o["type"] == "observation.tool_use"]
    assert tool == [
        {
            "tool_use_id": "checkfu:0:0",
            "tool": "harness:run_my_tool",
            "args": {"a": 1},
            "provider_tool_name": "run my tool",
        }
    ]


CORPUS_FILES = sorted(p for d in CORPUS_DIALECTS for p in (CORPUS / d).glob("*.jsonl"))


@needs_shared
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_observations_are_valid_and_identical_across_paths(path):
    data = path.read_bytes()
    native = run(data, "native")
    reference = run(data, "reference")
    assert native == reference
    obs = native[0]
    assert obs[0]["type"] == "observation.ready"
    endings = {"observation.finished", "observation.failed", "observation.retryable_failure"}
    blocked = [o for o in obs if o["type"] == "observation.requires_action"]
    if blocked:  # a turn blocked on a human ends with its actions (docs/oneshot.md 4, step 5)
        assert obs[-len(blocked) :] == blocked and not any(o["type"] in endings for o in obs)
    else:
        assert obs[-1]["type"] in endings and not any(o["type"] in endings for o in obs[:-1])


# Endings of the real transcripts that do not simply finish, reviewed against each file's
# content (its source note says what the run was); every other corpus file ends `finished`.
CORPUS_ENDINGS = {
    "claude/hivemind-719-weekly-limit.jsonl": (
        "retryable_failure",
        "model.platform_capacity_reached",
    ),
    "claude/hivemind-789-api-error-404-model.jsonl": ("failed", "runtime.harness_failed"),
    "claude/single-result-error-max-turns.jsonl": ("finished", "max_turn_requests"),
    # line 2: a real result whose permission_denials name two refused Bash calls (the answer
    # says "This operation requires approval"): blocked on a human, the last of its actions
    "claude/claudecodes-single-lines.jsonl": ("requires_action", "toolu_016VF29kybAcKAb7Xnpu1iFt"),
    "codex/new-hivemind-715-auth401-retries.jsonl": ("failed", "runtime.harness_failed"),
    "codex/new-hivemind-719-usage-limit.jsonl": (
        "retryable_failure",
        "model.platform_capacity_reached",
    ),
    "codex/old-vibekanban-config-prompt-error.jsonl": ("failed", "runtime.harness_failed"),
    "opencode/issue47972-unknown-error.jsonl": ("failed", "runtime.harness_failed"),
    "opencode/takopi-run-json-edited.jsonl": (
        "retryable_failure",
        "model.platform_supply_unavailable",
    ),
    # pi: the assistant message_end stops with "error"; turn_end/agent_end only repeat it
    "pi/causeflow-anthropic-out-of-usage.jsonl": (
        "retryable_failure",
        "model.platform_capacity_reached",
    ),
    "pi/causeflow-openai-codex-usage-limit.jsonl": (
        "retryable_failure",
        "model.platform_capacity_reached",
    ),
}


@needs_shared
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_corpus_endings(path):
    ending = run(path.read_bytes())[0][-1]
    kind, detail = CORPUS_ENDINGS.get(f"{path.parent.name}/{path.name}", ("finished", "end_turn"))
    assert ending["type"] == f"observation.{kind}"
    payload = ending["payload"]
    if kind == "requires_action":
        assert payload["action"] == {"kind": "custom_tool", "tool_use_id": detail}
        return
    assert (payload["stop_reason"] if kind == "finished" else payload["error"]["type"]) == detail


def test_pi_error_then_successful_auto_retry_finishes():
    def end(stop, text, **extra):
        m = {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": stop}
        return {"type": "message_end", "message": {**m, **extra}}

    failed = end("error", "", errorMessage="503 upstream overloaded")
    ok = end("stop", "Fixed.")
    stdout = jsonl(
        {"type": "session", "version": 3, "id": "s1"},
        failed,
        {"type": "auto_retry_start", "attempt": 1, "errorMessage": "503 upstream overloaded"},
        ok,
        {"type": "auto_retry_end", "success": True, "attempt": 1},
        {"type": "turn_end", "message": ok["message"]},
        {"type": "agent_end", "messages": [failed["message"], ok["message"]]},
    )
    for impl in ("native", "reference"):
        obs, state = run(stdout, impl)
        assert obs[-1] == {"type": "observation.finished", "payload": {"stop_reason": "end_turn"}}
        assert state["last_response"] == "Fixed."
    # without the retry, the same error is the ending although turn_end/agent_end follow
    stdout = jsonl(
        failed,
        {"type": "turn_end", "message": failed["message"]},
        {"type": "agent_end", "messages": [failed["message"]]},
    )
    assert run(stdout)[0][-1]["payload"]["error"] == {
        "type": "model.platform_supply_unavailable",
        "message": "503 upstream overloaded",
    }


_LINES = st.sampled_from(
    [
        b'{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"hi"}]}}',
        b'{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}',
        b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":true}]}}',
        b'{"type":"result","subtype":"success","is_error":false,"result":"done","duration_ms":5,"total_cost_usd":0.1}',
        b'{"type":"result","subtype":"success","is_error":true,"result":"429 rate limit"}',
        b'{"type":"item.completed","item":{"id":"i","type":"file_change","changes":[{"path":"a","kind":"add"}],"status":"completed"}}',
        b'{"type":"turn.failed","error":{"message":"stream error: 502"}}',
        b'{"type":"system","subtype":"task_started","tool_use_id":"t1","description":"d"}',
        b'{"type":"system","subtype":"compact_boundary","compact_metadata":{"pre_tokens":9,"post_tokens":3}}',
        b"not json at all",
        b'{"type":"result","subtype":"succ',
        b"\xff\xfe\x00",
        b"[" * 100,
    ]
)


@given(
    lines=st.lists(st.one_of(_LINES, st.binary(max_size=40)), max_size=12),
    text=st.booleans(),
)
def test_any_stdout_gives_valid_observations_and_one_ending(lines, text):
    stdout = b"\n".join(lines)
    over = {"output_mode": "text"} if text else {}
    native = run(stdout, "native", **over)
    assert native == run(stdout, "reference", **over)
    obs = native[0]
    endings = {"observation.finished", "observation.failed", "observation.retryable_failure"}
    assert obs[0]["type"] == "observation.ready" and obs[-1]["type"] in endings
    assert not any(o["type"] in endings for o in obs[1:-1])


def test_cursor_partial_output_repeats_are_not_observed_twice():
    sid = "96c630ba"
    mcid = "3f8e2a1c-0"

    def line(text, **extra):
        msg = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        return {"type": "assistant", "message": msg, "session_id": sid, **extra}

    stdout = jsonl(
        {"type": "system", "subtype": "init", "session_id": sid, "model": "Auto"},
        line("po", model_call_id=mcid, timestamp_ms=1),
        line("ng", model_call_id=mcid, timestamp_ms=2),
        line("pong", model_call_id=mcid, timestamp_ms=3),
        line("pong"),
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 7,
            "result": "pong",
            "session_id": sid,
            "request_id": "r",
        },
    )
    obs, _ = observe(contract(), TurnRequest("x"), stdout, dialect="cursor")
    messages = [o["payload"] for o in valid(obs) if o["type"] == "observation.agent_message"]
    assert messages == [{"content": "pong"}]  # the whole message; it carries no id
    assert obs[-1]["payload"]["turn"]["model_calls"] == 1
    # a build that only prints tagged lines keeps them, with the model call as the id
    obs, _ = observe(
        contract(), TurnRequest("x"), jsonl(line("hi", model_call_id=mcid)), dialect="cursor"
    )
    assert obs[1]["payload"] == {"content": "hi", "event_id": h("evt_", mcid)}


def test_codex_item_id_is_the_event_id_but_not_a_model_call():
    stdout = jsonl(
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "hmm"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": "ok"}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )
    obs, _ = observe(contract(), TurnRequest("x"), stdout, process=proc())
    assert [o["payload"].get("event_id") for o in obs[1:3]] == [
        h("evt_", "item_0"),
        h("evt_", "item_1"),
    ]
    assert obs[-1]["payload"]["turn"]["model_calls"] == 0


def test_an_error_result_line_still_gives_its_text_as_last_response():
    """Spec section 4.3: "the stream's final result text when it reports one", also when the
    result line reports an error (the answer is the error text, not the last agent message)."""
    stdout = jsonl(
        {
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "Working on it."}],
            },
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": True,
            "result": "5-hour limit reached ∙ resets 3pm",
        },
    )
    obs, state = run(stdout)
    assert obs[-1]["type"] == "observation.retryable_failure"
    assert state["last_response"] == "5-hour limit reached ∙ resets 3pm"
    no_text = jsonl(  # an error result without a result string: the last agent message
        {
            "type": "assistant",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "text", "text": "Working on it."}],
            },
        },
        {"type": "result", "subtype": "error_during_execution", "is_error": True},
    )
    assert run(no_text)[1]["last_response"] == "Working on it."


def cursor_text(text, **extra):
    m = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return {"type": "assistant", "message": m, "session_id": "s", **extra}


def test_cursor_partial_output_chunks_are_not_repeated_and_thinking_is_one_observation():
    stdout = jsonl(
        {"type": "thinking", "subtype": "delta", "text": "Read the", "timestamp_ms": 1},
        {"type": "thinking", "subtype": "delta", "text": " config.", "timestamp_ms": 2},
        {"type": "thinking", "subtype": "completed", "timestamp_ms": 3},
        # chunks (timestamp_ms), one of them twice (with and without model_call_id) ...
        cursor_text("I'll", timestamp_ms=4),
        cursor_text("I'll", model_call_id="mc_1", timestamp_ms=5),
        cursor_text(" check.", model_call_id="mc_1", timestamp_ms=6),
        # ... then the whole segment (no timestamp_ms)
        cursor_text("I'll check.", model_call_id="mc_1"),
        {"type": "result", "subtype": "success", "is_error": False, "result": "I'll check."},
    )
    message = {"content": "I'll check.", "event_id": h("evt_", "mc_1")}
    for impl in ("native", "reference"):
        obs, _ = run(stdout, impl)
        assert [(o["type"], o["payload"]) for o in obs[1:-1]] == [
            ("observation.agent_thinking", {"content": "Read the config."}),
            ("observation.agent_message", message),
        ]
        assert obs[-1]["payload"] == {"stop_reason": "end_turn"}
    # without a whole-segment line every text line is a message of its own
    only_lines = jsonl(cursor_text("One.", timestamp_ms=1), cursor_text("Two.", timestamp_ms=2))
    texts = [o["payload"]["content"] for o in run(only_lines)[0][1:-1]]
    assert texts == ["One.", "Two."]


def test_a_result_the_stream_does_not_give_is_omitted_not_null():
    stdout = jsonl(
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": None}]},
        },
    )
    results = [o["payload"] for o in run(stdout)[0][1:-1]]
    assert results == [{"tool_use_id": "t1"}, {"tool_use_id": "t2", "result": None}]


def test_codex_mcp_result_is_its_content_blocks_and_web_search_has_no_result():
    blocks = [{"type": "text", "text": "#42 Panic"}]
    mcp = {"id": "i1", "type": "mcp_tool_call", "server": "gh", "tool": "get_issue"}
    search = {"id": "i2", "type": "web_search", "query": "acme panic"}
    stdout = jsonl(
        {"type": "item.started", "item": {**mcp, "arguments": {"n": 42}, "status": "in_progress"}},
        {
            "type": "item.completed",
            "item": {**mcp, "result": {"content": blocks, "structured_content": None}},
        },
        {"type": "item.completed", "item": {**mcp, "id": "i3", "error": {"message": "boom"}}},
        {"type": "item.completed", "item": search},
    )
    payloads = [(o["type"], o["payload"]) for o in run(stdout)[0][1:-1]]
    assert payloads[1] == ("observation.tool_result", {"tool_use_id": "i1", "result": blocks})
    assert "result" not in payloads[2][1]  # failed call: no result content, only its error
    assert payloads[-2:] == [
        (
            "observation.tool_use",
            {
                "tool_use_id": "i2",
                "tool": "harness:web_search",
                "args": {"query": "acme panic"},
                "provider_tool_name": "web_search",
            },
        ),
        ("observation.tool_result", {"tool_use_id": "i2"}),
    ]


def test_legacy_codex_tools_use_the_current_names_and_applied_patches_are_file_changes():
    changes = {"/w/README.md": {"update": {"unified_diff": "@@"}}, "/w/NEW.md": {"add": {}}}
    stdout = jsonl(
        {"id": "1", "msg": {"type": "exec_command_begin", "call_id": "c1", "command": ["ls"]}},
        {"id": "1", "msg": {"type": "patch_apply_begin", "call_id": "p1", "changes": changes}},
        {"id": "1", "msg": {"type": "patch_apply_end", "call_id": "p1", "success": True}},
        {"id": "1", "msg": {"type": "patch_apply_begin", "call_id": "p2", "changes": changes}},
        {"id": "1", "msg": {"type": "patch_apply_end", "call_id": "p2", "success": False}},
        {
            "id": "1",
            "msg": {
                "type": "mcp_tool_call_end",
                "call_id": "m1",
                "invocation": {"server": "t", "tool": "create_issue", "arguments": {}},
                "result": {"Ok": {"content": [{"type": "text", "text": "#7"}], "isError": False}},
            },
        },
    )
    obs = [(o["type"].removeprefix("observation."), o["payload"]) for o in run(stdout)[0][1:-1]]
    assert obs[0] == (
        "tool_use",
        {
            "tool_use_id": "c1",
            "tool": "harness:command_execution",
            "args": {"command": ["ls"]},
            "provider_tool_name": "command_execution",
        },
    )
    assert obs[1][1]["tool"] == "harness:file_change" and obs[1][1]["args"] == {"changes": changes}
    # applied: one file_changed per path, before the result; the failed patch reports none
    assert obs[2:4] == [
        ("file_changed", {"event": "modify", "path": "/w/README.md"}),
        ("file_changed", {"event": "create", "path": "/w/NEW.md"}),
    ]
    assert [kind for kind, _ in obs[4:7]] == ["tool_result", "tool_use", "tool_result"]
    assert obs[-1] == (
        "tool_result",
        {"tool_use_id": "m1", "result": [{"type": "text", "text": "#7"}]},
    )


def test_pi_tool_result_is_its_content_blocks():
    blocks = [{"type": "text", "text": "/root\n"}]
    stdout = jsonl(
        {
            "type": "tool_execution_end",
            "toolCallId": "t1",
            "toolName": "bash",
            "result": {"content": blocks, "details": {"exitCode": 0}},
            "isError": False,
        }
    )
    assert run(stdout)[0][1]["payload"] == {"tool_use_id": "t1", "result": blocks}


def test_a_tool_the_stream_does_not_name_has_no_provider_tool_name():
    stdout = jsonl(
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "content": [{"type": "tool_use", "id": "t1", "name": "", "input": {}}],
            },
        }
    )
    assert run(stdout)[0][1]["payload"] == {
        "tool_use_id": "t1",
        "tool": "harness:unknown",
        "args": {},
    }


def test_opencode_event_id_is_the_part_id_and_model_calls_count_messages():
    def part(kind, pid, mid, text):
        p = {"id": pid, "sessionID": "ses_1", "messageID": mid, "type": kind, "text": text}
        return {"type": kind, "sessionID": "ses_1", "part": p}

    stdout = jsonl(
        part("reasoning", "prt_1", "msg_1", "Plan."),
        part("text", "prt_2", "msg_1", "Done."),
        part("text", "prt_3", "msg_2", "Really done."),
    )
    obs, _ = run(stdout, process=proc())
    ids = [o["payload"].get("event_id") for o in obs[1:-1]]
    assert ids == [h("evt_", "prt_1"), h("evt_", "prt_2"), h("evt_", "prt_3")]
    assert obs[-1]["payload"]["turn"]["model_calls"] == 2
