"""Issue 10/12 leftovers: claude tasks, cursor plans, reasoning tokens, stream endings."""

from __future__ import annotations

import json

import pytest

from checkfu_fast import UsageFold, normalize, reference, usage_totals
from checkfu_fast.oneshot import TurnRequest, observe, validate_contract
from checkfu_fast.oneshot.observe import NON_TERMINAL_ERRORS as OBSERVE_NON_TERMINAL
from checkfu_fast.usage import NON_TERMINAL_ERRORS
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


# -- claude tasks ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_a_task_ended_by_update_and_notification_completes_once(impl):
    stdout = (EVENTS / "claude" / "tasks-2026.input.jsonl").read_bytes()
    obs, _ = observe(contract(), TurnRequest("x"), stdout, dialect="claude", implementation=impl)
    started = [o["payload"] for o in obs if o["type"] == "observation.subagent_started"]
    done = [o["payload"] for o in obs if o["type"] == "observation.subagent_completed"]
    agent = started[0]["subagent"]
    # task_updated names the agent by task_id (t_01), task_notification by tool_use_id: one end
    assert [d for d in done if d["subagent"] == agent] == [
        {"subagent": agent, "disposition": "completed"}
    ]
    assert sorted(d["disposition"] for d in done) == ["canceled", "completed", "failed"]


def test_task_started_prompt_and_task_updated_patch():
    evs = both(
        jsonl(
            {
                "type": "system",
                "subtype": "task_started",
                "task_id": "t1",
                "tool_use_id": "toolu_1",
                "description": "d",
                "prompt": "Do the thing.",
            },
            {"type": "system", "subtype": "task_updated", "task_id": "t1", "patch": {}},
            {
                "type": "system",
                "subtype": "task_updated",
                "task_id": "t1",
                "patch": {"status": "running"},
            },
        ),
        "claude",
    )
    assert evs[0]["subagent"] == {
        "id": "toolu_1",
        "phase": "started",
        "description": "d",
        "prompt": "Do the thing.",
        "alias": "t1",
    }
    assert [(e["subtype"], e["text"], "subagent" in e) for e in evs[1:]] == [
        ("subagent", "task_updated", False),
        ("subagent", "running", False),  # not terminal: no end
    ]


def test_local_command_output_is_system_text_not_the_answer():
    line = {"type": "system", "subtype": "local_command_output", "content": "ok"}
    (ev,) = both(jsonl(line), "claude")
    assert (ev["kind"], ev["subtype"], ev["role"]) == ("message", "text", "system")
    assert ev["text"] == "ok"


@pytest.mark.parametrize(
    ("result", "extra", "empty"),
    [
        ("", {}, True),
        (" \n\t", {}, True),
        (None, {}, True),
        ("", {"structured_output": None}, True),
        ("", {"structured_output": {}}, True),
        ("", {"structured_output": {"answer": 1}}, False),
        ("", {"structured_output": 0}, False),
        ("done", {}, False),
        ("\u00a0", {}, False),  # not JSON whitespace: text the CLI printed
    ],
)
def test_claude_empty_success_result(result, extra, empty):
    line = {"type": "result", "subtype": "success", "is_error": False, **extra}
    if result is not None:
        line["result"] = result
    (ev,) = both(jsonl(line), "claude")
    assert ev["kind"] == "status" and ev.get("emptyResult", False) is empty
    # an error result is an error, never an empty success
    (err,) = both(jsonl({**line, "is_error": True}), "claude")
    assert err["kind"] == "error" and "emptyResult" not in err


# -- cursor plan mode -----------------------------------------------------------------------


@pytest.mark.parametrize("impl", IMPLS)
def test_cursor_plan_is_the_last_response(impl):
    plan = "1. Reproduce\n2. Fix"
    stdout = jsonl(
        {"type": "system", "subtype": "init", "session_id": "s", "model": "Auto"},
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Planning."}]},
            "session_id": "s",
        },
        {
            "type": "interaction_query",
            "subtype": "request",
            "query_type": "createPlanRequestQuery",
            "query": {"id": 0, "createPlanRequestQuery": {"args": {"plan": plan}}},
            "session_id": "s",
        },
        {
            "type": "interaction_query",
            "subtype": "response",
            "query_type": "createPlanRequestQuery",
            "result": {"approved": {}},
            "session_id": "s",
        },
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Plan made."}]},
            "session_id": "s",
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "Planning.Plan made.",
            "session_id": "s",
        },
    )
    obs, state = observe(
        contract(), TurnRequest("x"), stdout, dialect="cursor", implementation=impl
    )
    assert state["last_response"] == plan
    assert obs[-1]["type"] == "observation.finished"
    # a failed run keeps its error text
    failed = stdout.replace(b'"is_error": false', b'"is_error": true')
    _, state = observe(contract(), TurnRequest("x"), failed, dialect="cursor", implementation=impl)
    assert state["last_response"] != plan


def test_only_a_plan_request_is_an_answer():
    line = {
        "type": "interaction_query",
        "subtype": "request",
        "query_type": "shellRequestQuery",
        "query": {"id": 1, "shellRequestQuery": {"args": {"command": "ls"}}},
    }
    (ev,) = both(jsonl(line), "cursor")
    assert "answer" not in ev
    empty_plan = {
        **line,
        "query_type": "createPlanRequestQuery",
        "query": {"createPlanRequestQuery": {"args": {"plan": ""}}},
    }
    (ev,) = both(jsonl(empty_plan), "cursor")
    assert "answer" not in ev and ev["text"] == "createPlanRequestQuery"


# -- codex, grok, pi ------------------------------------------------------------------------


def test_codex_thread_compacted():
    (ev,) = both(jsonl({"type": "thread.compacted", "usage": {}}), "codex")
    assert (ev["kind"], ev["subtype"], ev["text"]) == ("status", "compaction", "compacted")
    assert "tokensBefore" not in ev
    (ev,) = both(jsonl({"type": "thread.compacted", "tokens_before": 9, "tokens_after": 2}))
    assert (ev["tokensBefore"], ev["tokensAfter"]) == (9, 2)


def test_grok_auto_compact_reason_is_the_text():
    evs = both(
        jsonl(
            {"type": "auto_compact_start", "reason": "threshold"},
            {"type": "auto_compact_start", "reason": ""},
            {"type": "auto_compact_end", "aborted": True, "reason": "threshold"},
        ),
        "grok",
    )
    assert [e["text"] for e in evs] == ["threshold", "auto_compact_start", "aborted"]


def test_pi_malformed_tool_call_keeps_its_partial_json():
    block = {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {}, "partialJson": '{"a'}
    m = {"role": "assistant", "content": [block], "stopReason": "error", "errorMessage": "Bad"}
    evs = both(jsonl({"type": "message_end", "message": m}), "pi")
    assert evs[0]["tool"]["arguments"] == {} and evs[0]["partialArguments"] == '{"a'
    del block["partialJson"]
    evs = both(jsonl({"type": "message_end", "message": m}), "pi")
    assert "partialArguments" not in evs[0]


# -- reasoning tokens -------------------------------------------------------------------------


def test_reasoning_tokens_per_dialect():
    codex = jsonl(
        {"type": "thread.started", "thread_id": "th"},
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": 10,
                "cached_input_tokens": 4,
                "output_tokens": 7,
                "reasoning_output_tokens": 5,
            },
        },
    )
    ev = both(codex, "codex")[-1]
    assert ev["reasoningTokens"] == 5 and ev["usage"]["outputTokens"] == 7
    t = usage_totals(normalize(codex, "codex"))["total"]
    assert (t["outputTokens"], t["reasoningTokens"]) == (7, 5)

    step = {
        "type": "step_finish",
        "part": {"cost": 0.1, "tokens": {"input": 3, "output": 2, "reasoning": 4, "cache": {}}},
    }
    ev = both(jsonl(step), "opencode")[-1]
    assert (ev["usage"]["outputTokens"], ev["reasoningTokens"]) == (6, 4)
    # all-zero tokens with a cost are unknown usage: no reasoning count either
    zero = {"type": "step_finish", "part": {"cost": 0.1, "tokens": {"input": 0, "reasoning": 0}}}
    ev = both(jsonl(zero), "opencode")[-1]
    assert ev["usage"]["unknown"] is True and "reasoningTokens" not in ev

    grok = {"type": "usage", "messageId": "r", "usage": {"input_tokens": 1, "output_tokens": 9}}
    grok["usage"]["reasoning_tokens"] = 3
    ev = both(jsonl(grok), "grok")[-1]
    assert (ev["usage"]["outputTokens"], ev["reasoningTokens"]) == (9, 3)

    # no reasoning field: no reasoningTokens in the event nor in the totals
    claude = {"type": "result", "subtype": "success", "result": "x", "usage": {"input_tokens": 1}}
    evs = both(jsonl(claude), "claude")
    assert all("reasoningTokens" not in e for e in evs)
    assert "reasoningTokens" not in usage_totals(evs)["total"]


def test_reasoning_tokens_of_a_repeated_message_count_once():
    line = {
        "type": "usage",
        "messageId": "r",
        "usage": {"input_tokens": 1, "output_tokens": 9, "reasoning_tokens": 3},
    }
    t = usage_totals(normalize(jsonl(line, line), "grok"))["total"]
    assert (t["outputTokens"], t["reasoningTokens"]) == (9, 3)


# -- endings ----------------------------------------------------------------------------------


def test_non_terminal_errors_agree_with_observe():
    assert NON_TERMINAL_ERRORS == OBSERVE_NON_TERMINAL


def _ending(*lines, dialect="claude") -> dict:
    return usage_totals(normalize(jsonl(*lines), dialect))["total"]["endings"]


def test_endings_of_streams():
    ok = {"type": "result", "subtype": "success", "is_error": False, "result": "hi"}
    empty = {**ok, "result": ""}
    failed = {**ok, "is_error": True, "result": "API Error: 500"}
    retry = {
        "type": "system",
        "subtype": "api_retry",
        "attempt": 1,
        "max_retries": 3,
        "error_status": 529,
        "error": "server_error",
    }
    assert _ending(ok) == {"ok": 1, "empty": 0, "failed": 0, "none": 0}
    assert _ending(empty)["empty"] == 1
    assert _ending(failed)["failed"] == 1
    # a transient retry is not an ending, but a stream that stops while retrying failed
    assert _ending(retry)["failed"] == 1
    assert _ending({"type": "system", "subtype": "init"})["none"] == 1
    assert _ending(retry, ok)["ok"] == 1
    # the last outcome decides (several results in one process)
    assert _ending(failed, ok)["ok"] == 1
    assert _ending(ok, empty)["empty"] == 1
    # codex: turn.failed after a completed turn is a failure behind exit 0
    codex = [{"type": "turn.completed", "usage": {}}, {"type": "turn.failed", "error": {}}]
    assert _ending(*codex, dialect="codex")["failed"] == 1


def test_endings_by_session_and_across_streams():
    fold = UsageFold()
    for sid, result in (("a", "x"), ("a", ""), ("b", "y")):
        fold.start_stream()
        line = {"type": "result", "subtype": "success", "result": result, "session_id": sid}
        line["usage"] = {"input_tokens": 1, "output_tokens": 1}
        for ev in normalize(jsonl(line), "claude"):
            fold.add(ev)
        fold.end_stream()
    t = fold.totals()
    assert t["total"]["endings"] == {"ok": 2, "empty": 1, "failed": 0, "none": 0}
    assert t["bySession"]["a"]["endings"] == {"ok": 1, "empty": 1, "failed": 0, "none": 0}
    assert "endings" not in t["byModel"]["unknown"]


# -- mappings ---------------------------------------------------------------------------------


def test_mapping_empty_result_and_answer_flags(tmp_path):
    import checkfu_fast

    doc = {
        "checkfu_dialect": 1,
        "dialect": "north",
        "rules": [
            {
                "match": {"/type": "plan"},
                "emit": [
                    {"kind": "status", "subtype": "progress", "text": "/plan", "answer": True}
                ],
            },
            {
                "match": {"/type": "done", "/text": ""},
                "emit": [{"kind": "status", "subtype": "result", "emptyResult": True}],
            },
        ],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(doc))
    data = jsonl({"type": "plan", "plan": "p"}, {"type": "done", "text": ""})
    native = checkfu_fast.normalize(data, checkfu_fast.load_dialect(path))
    assert reference.normalize(data, reference.load_dialect(path)) == native
    assert native[0]["answer"] is True and native[1]["emptyResult"] is True
    assert usage_totals(native)["total"]["endings"]["empty"] == 1
    bad = {**doc, "rules": [{"match": {}, "emit": [{"kind": "status", "subtype": "x"}]}]}
    bad["rules"][0]["emit"][0]["answer"] = "yes"
    path.write_text(json.dumps(bad))
    for impl in (checkfu_fast, reference):
        with pytest.raises(Exception, match="answer: expected true or false"):
            impl.load_dialect(path)
