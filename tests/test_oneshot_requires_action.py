"""Issue 24, blocked on a human: a headless turn that stopped because it needs an approval (or an
answer) ends with the seed's ``observation.requires_action``, not ``finished``/``end_turn``.

The shapes are the CLIs' own (docs/events.md, ``requiresAction``): claude ``permission_denials``
(the real line of ``meawoppl/rust-claude-codes``), ``system/permission_denied``, refused tool
results and ``deferred_tool_use``; codex ``request_user_input``; cursor ``rejected`` results;
opencode's auto-rejected permissions. Both normalizer paths, replayed and live.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap

import pytest

from checkfu_fast.oneshot import Observer, TurnBudget, TurnRequest, observe, run_turn
from checkfu_fast.oneshot.observe import MAX_ACTIONS
from livehelp import FAST
from test_oneshot_observe import contract, valid

IMPLS = ("native", "reference")
REQUEST = TurnRequest("list /tmp")


def jsonl(*lines: dict) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def replay(stdout: bytes, impl: str, dialect: str = "auto", process=None):
    obs, state = observe(
        contract(), REQUEST, stdout, implementation=impl, dialect=dialect, process=process
    )
    return valid(obs), state


def tool(i: str) -> dict:
    return {"kind": "custom_tool", "tool_use_id": i}


def ending(obs: list[dict]) -> list[dict]:
    """The observations after the last non-ending one: the turn's ending(s)."""
    assert not [o for o in obs[:-1] if o["type"] == "observation.finished"]
    tail = []
    for o in reversed(obs):
        if o["type"] != "observation.requires_action" and tail:
            break
        tail.insert(0, o)
        if o["type"] != "observation.requires_action":
            break
    return tail


# the real result line (claudecodes-single-lines.jsonl line 2, ../shared/corpus/real/claude):
# Claude Code 2026-01, two Bash calls refused for want of an approval, exit 0, a polite answer
REAL_RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "duration_ms": 21236,
    "num_turns": 4,
    "result": "… This operation requires approval as it accesses system files outside the "
    "working directory. …",
    "session_id": "1f2f4a66-82a4-42e2-b93d-089998d779e6",
    "total_cost_usd": 0.0395976,
    "usage": {"input_tokens": 10, "output_tokens": 368},
    "permission_denials": [
        {
            "tool_name": "Bash",
            "tool_input": {"command": "ls -la /tmp", "description": "List files in /tmp"},
            "tool_use_id": "toolu_018kLBCpZ5RKL62RscZpC1JB",
        },
        {
            "tool_name": "Bash",
            "tool_input": {"command": "test -f /etc/passwd"},
            "tool_use_id": "toolu_016VF29kybAcKAb7Xnpu1iFt",
        },
    ],
    "errors": [],
    "uuid": "c9722460-63c7-4fcd-8168-3ee28f3e1b04",
}


@pytest.mark.parametrize("impl", IMPLS)
def test_claude_permission_denials_end_with_requires_action(impl):
    obs, state = replay(jsonl(REAL_RESULT), impl)
    assert obs[-2:] == [
        {"type": "observation.requires_action", "payload": {"action": tool(i)}}
        for i in ("toolu_018kLBCpZ5RKL62RscZpC1JB", "toolu_016VF29kybAcKAb7Xnpu1iFt")
    ]
    assert [o["type"] for o in obs] == ["observation.ready"] + ["observation.requires_action"] * 2
    assert state["last_response"] == REAL_RESULT["result"]  # the answer is still the answer


@pytest.mark.parametrize("impl", IMPLS)
def test_the_same_result_without_denials_still_finishes(impl):
    line = {**REAL_RESULT, "permission_denials": []}
    obs, _ = replay(jsonl(line), impl)
    assert obs[-1]["type"] == "observation.finished"
    assert obs[-1]["payload"]["stop_reason"] == "end_turn"


CALL = {
    "type": "assistant",
    "message": {
        "id": "msg_1",
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_W", "name": "Write", "input": {"file_path": "/x"}}
        ],
    },
    "session_id": "s1",
}
DENIED = {
    "type": "system",
    "subtype": "permission_denied",
    "tool_name": "Write",
    "tool_use_id": "toolu_W",
    "message": "Claude requested permissions to write to /x, but you haven't granted it yet.",
    "uuid": "u1",
    "session_id": "s1",
}
REFUSED = {
    "type": "user",
    "message": {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_W",
                "content": "Claude requested permissions to write to /x, but you haven't granted "
                "it yet.",
                "is_error": True,
            }
        ],
    },
    "tool_result_meta": [{"id": "toolu_W", "non_execution_kind": "user-rejected"}],
    "session_id": "s1",
}
RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "I could not write /x.",
    "session_id": "s1",
    "permission_denials": [{"tool_name": "Write", "tool_use_id": "toolu_W", "tool_input": {}}],
}


@pytest.mark.parametrize("impl", IMPLS)
def test_one_refused_call_is_one_action_however_often_the_stream_says_it(impl):
    obs, _ = replay(jsonl(CALL, DENIED, REFUSED, RESULT), impl)
    types = [o["type"] for o in obs]
    assert types == [
        "observation.ready",
        "observation.tool_use",
        "observation.tool_result",
        "observation.requires_action",
    ]
    assert obs[-1]["payload"]["action"] == tool("toolu_W")
    # each line alone says it too (the system line, the refused result, the result)
    for line in (DENIED, REFUSED, {**RESULT}):
        assert replay(jsonl(CALL, line), impl)[0][-1]["payload"] == {"action": tool("toolu_W")}


@pytest.mark.parametrize("impl", IMPLS)
def test_a_call_that_ran_after_all_is_no_longer_pending(impl):
    ran = {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_W", "content": "ok"}],
        },
    }
    done = {**RESULT, "permission_denials": []}
    obs, _ = replay(jsonl(CALL, DENIED, ran, done), impl)
    assert obs[-1]["type"] == "observation.finished"


@pytest.mark.parametrize("impl", IMPLS)
def test_a_deferred_tool_use_waits_for_the_host(impl):
    line = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "stop_reason": "tool_deferred",
        "session_id": "s1",
        "permission_denials": [],
        "deferred_tool_use": {"id": "toolu_D", "name": "Bash", "input": {"command": "git push"}},
    }
    obs, _ = replay(jsonl(line), impl)
    assert obs[-1] == {
        "type": "observation.requires_action",
        "payload": {"action": tool("toolu_D")},
    }


QUESTIONS = [
    {
        "question": "Which database?",
        "header": "DB",
        "options": [
            {"label": "Postgres", "description": "the usual"},
            {"label": "SQLite", "description": "a file"},
        ],
        "multiSelect": False,
    },
    {"question": "Which extras?", "header": "Extras", "options": [], "multiSelect": True},
]


@pytest.mark.parametrize("impl", IMPLS)
def test_an_unanswered_ask_user_question_is_a_question(impl):
    line = {
        **RESULT,
        "permission_denials": [
            {
                "tool_name": "AskUserQuestion",
                "tool_use_id": "toolu_Q",
                "tool_input": {"questions": QUESTIONS},
            }
        ],
    }
    obs, _ = replay(jsonl(line), impl)
    assert obs[-1]["payload"]["action"] == {
        "kind": "question",
        "question": "qst_" + hashlib.sha256(b"toolu_Q").hexdigest()[:32],
        "items": [
            {
                "id": "q1",
                "prompt": "Which database?",
                "header": "DB",
                "options": [
                    {"label": "Postgres", "description": "the usual"},
                    {"label": "SQLite", "description": "a file"},
                ],
                "allow_multiple": False,
            },
            {
                "id": "q2",
                "prompt": "Which extras?",
                "header": "Extras",
                "options": [],
                "allow_multiple": True,
            },
        ],
    }


@pytest.mark.parametrize("impl", IMPLS)
def test_codex_request_user_input_is_a_question(impl):
    questions = [
        {
            "id": "scope_1",
            "header": "Scope",
            "question": "Should I also update the CHANGELOG?",
            "isOther": True,
            "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}],
        },
        {"id": "bad id!", "header": "", "question": "Anything else?"},
        {"id": "x", "question": ""},  # no question: not an item
        *({"id": f"more{i}", "question": f"q{i}?"} for i in range(5)),
    ]
    stdout = jsonl(
        {"type": "thread.started", "thread_id": "th_1"},
        {"type": "turn.started"},
        {"type": "request_user_input", "id": "r1", "call_id": "call_Q", "questions": questions},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}},
    )
    obs, _ = replay(stdout, impl)
    action = obs[-1]["payload"]["action"]
    assert action["kind"] == "question"
    assert action["question"] == "qst_" + hashlib.sha256(b"call_Q").hexdigest()[:32]
    assert action["items"] == [
        {
            "id": "scope_1",
            "prompt": "Should I also update the CHANGELOG?",
            "header": "Scope",
            "options": [{"label": "Yes"}, {"label": "No"}],
            "allow_multiple": False,
        },
        {"id": "q2", "prompt": "Anything else?", "options": [], "allow_multiple": False},
        {"id": "more0", "prompt": "q0?", "options": [], "allow_multiple": False},
        {"id": "more1", "prompt": "q1?", "options": [], "allow_multiple": False},
    ]  # at most 4 items (the schema's maxItems)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_question_with_nothing_usable_is_its_call(impl):
    stdout = jsonl(
        {"type": "thread.started", "thread_id": "th_1"},
        {"type": "request_user_input", "id": "r1", "call_id": "call_Q", "questions": [{}]},
        {"type": "turn.completed", "usage": {"input_tokens": 5, "output_tokens": 2}},
    )
    assert replay(stdout, impl)[0][-1]["payload"]["action"] == tool("call_Q")


@pytest.mark.parametrize("impl", IMPLS)
def test_cursor_rejected_and_write_permission_denied(impl):
    def call(cid: str, sub: str, result: dict | None = None) -> dict:
        body: dict = {"args": {"command": "rm -rf build"}}
        if result is not None:
            body["result"] = result
        return {
            "type": "tool_call",
            "subtype": sub,
            "call_id": cid,
            "tool_call": {"shellToolCall": body},
            "session_id": "c1",
        }

    stdout = jsonl(
        {"type": "system", "subtype": "init", "session_id": "c1", "model": "gpt-5"},
        call("c1", "started"),
        call("c1", "completed", {"rejected": {"command": "rm -rf build", "reason": ""}}),
        call("c2", "started"),
        call("c2", "completed", {"writePermissionDenied": {"path": "/etc/x"}}),
        call("c3", "started"),
        call("c3", "completed", {"success": {"exitCode": 0, "stdout": "ok"}}),
        {"type": "result", "subtype": "success", "is_error": False, "result": "Could not."},
    )
    obs, _ = replay(stdout, impl, "cursor")
    assert [o["payload"] for o in ending(obs)] == [{"action": tool("c1")}, {"action": tool("c2")}]


@pytest.mark.parametrize("impl", IMPLS)
def test_opencode_auto_rejected_permissions(impl):
    rejected = {
        "type": "tool_use",
        "sessionID": "ses_1",
        "part": {
            "id": "prt_1",
            "messageID": "msg_1",
            "callID": "call_B",
            "tool": "bash",
            "state": {
                "status": "error",
                "input": {"command": "cat /nonexistent"},
                "error": "The user rejected permission to use this specific tool call.",
            },
        },
    }
    finish = {
        "type": "step_finish",
        "sessionID": "ses_1",
        "part": {"messageID": "msg_1", "reason": "stop", "tokens": {"input": 4, "output": 1}},
    }
    # opencode #44267: the run exits 0 with an empty answer
    obs, _ = replay(jsonl(rejected, finish), impl, "opencode")
    assert [o["payload"] for o in ending(obs)] == [{"action": tool("call_B")}]
    # done.rejected[] names the permission requests it rejected
    done = {
        "type": "done",
        "sessionID": "ses_1",
        "reason": "idle",
        "rejected": [{"id": "per_1", "permission": "bash", "tool": {"callID": "call_C"}}, 7],
    }
    obs, _ = replay(jsonl(finish, done), impl, "opencode")
    endings = [o["payload"]["action"] for o in ending(obs)]
    assert endings[0] == tool("call_C")
    assert endings[1]["kind"] == "custom_tool" and endings[1]["tool_use_id"].startswith("checkfu:")
    # an error that is not a rejection is an ordinary failed tool result
    other = json.loads(json.dumps(rejected))
    other["part"]["state"]["error"] = "command not found"
    assert replay(jsonl(other, finish), impl, "opencode")[0][-1]["type"] == "observation.finished"


@pytest.mark.parametrize("impl", IMPLS)
def test_failures_and_other_stop_reasons_keep_their_endings(impl):
    from test_oneshot_observe import proc

    stdout = jsonl(REAL_RESULT)
    failed, _ = replay(stdout, impl, process=proc(exit_code=2))
    assert failed[-1]["type"] == "observation.failed"
    cancelled, _ = replay(jsonl(CALL, DENIED), impl, process=proc(cancelled=True))
    assert cancelled[-1]["payload"]["stop_reason"] == "interrupted"
    max_turns = {**REAL_RESULT, "subtype": "error_max_turns", "is_error": True}
    obs, _ = replay(jsonl(max_turns), impl)
    assert obs[-1]["payload"]["stop_reason"] == "max_turn_requests"


@pytest.mark.parametrize("impl", IMPLS)
def test_pending_actions_are_bounded(impl):
    many = {
        **RESULT,
        "permission_denials": [
            {"tool_name": "Bash", "tool_use_id": f"toolu_{i}"} for i in range(MAX_ACTIONS + 10)
        ],
    }
    obs, _ = replay(jsonl(many), impl)
    assert len(ending(obs)) == MAX_ACTIONS
    assert ending(obs)[-1]["payload"]["action"] == tool(f"toolu_{MAX_ACTIONS - 1}")


def test_any_chunking_gives_the_same_actions():
    stdout = jsonl(CALL, DENIED, REFUSED, REAL_RESULT)
    whole, _ = replay(stdout, "native")
    for cut in range(1, len(stdout), 97):
        o = Observer(contract(), REQUEST)
        assert o.feed(stdout[:cut]) + o.feed(stdout[cut:]) + o.finish() == whole
        assert o.requires_action == [a["payload"]["action"] for a in ending(whole)]
    o = Observer(contract(), REQUEST)
    o.feed(jsonl(RESULT | {"permission_denials": []}))
    o.finish()
    assert o.requires_action is None


# -- live ------------------------------------------------------------------------------------

HARNESS = textwrap.dedent(
    """
    import sys, time
    sys.stdin.read()
    for line in sys.argv[2:]:
        print(line, flush=True)
    time.sleep(float(sys.argv[1]))  # a runaway waits to be stopped
    """
)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_live_turn_blocked_on_approval(tmp_path, impl):
    script = tmp_path / "claude_stub.py"
    script.write_text(HARNESS)
    lines = [json.dumps(x) for x in (CALL, DENIED, REFUSED, REAL_RESULT)]
    c = contract(argv=["0", *lines])
    result = run_turn(
        c,
        REQUEST,
        entrypoint=sys.executable,
        entrypoint_prefix=(str(script),),
        implementation=impl,
        dialect="claude",
        deadline_s=60,
        **FAST,
    )
    assert result.process.exit_code == 0  # the CLI says success
    expected = [tool("toolu_W"), tool("toolu_018kLBCpZ5RKL62RscZpC1JB")]
    expected.append(tool("toolu_016VF29kybAcKAb7Xnpu1iFt"))
    assert result.requires_action == expected
    assert [o["payload"] for o in result.observations[-3:]] == [{"action": a} for a in expected]
    assert not [o for o in result.observations if o["type"] == "observation.finished"]
    assert result.session_id == REAL_RESULT["session_id"] and result.stopped_by is None
    # live == replay
    replayed, _ = replay(result.process.stdout, impl, "claude")
    strip = [o for o in result.observations if o["type"] != "observation.requires_action"]
    assert strip[1:] == [o for o in replayed if o["type"] != "observation.requires_action"][1:]


def test_a_budget_stop_still_ends_interrupted(tmp_path):
    script = tmp_path / "claude_stub.py"
    script.write_text(HARNESS)
    lines = [json.dumps(x) for x in (CALL, DENIED, CALL, CALL, REAL_RESULT)]
    result = run_turn(
        contract(argv=["60", *lines]),
        REQUEST,
        entrypoint=sys.executable,
        entrypoint_prefix=(str(script),),
        dialect="claude",
        budget=TurnBudget(repeats=3),
        deadline_s=60,
        **FAST,
    )
    assert result.stopped_by == "budget.repeats"
    assert result.observations[-1]["payload"]["stop_reason"] == "interrupted"
    assert result.requires_action is None


def test_cli_run_exits_1_and_says_the_turn_needs_a_human(tmp_path):
    script = tmp_path / "claude_stub.py"
    script.write_text(HARNESS)
    c = contract(
        entrypoint=sys.executable, argv=[str(script), "0", json.dumps(CALL), json.dumps(RESULT)]
    )
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(c))
    prompt = tmp_path / "p.txt"
    prompt.write_text("list /tmp")
    r = subprocess.run(
        [sys.executable, "-m", "checkfu_fast", "run", str(path), "--prompt-file", str(prompt)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert lines[-2] == {
        "type": "observation.requires_action",
        "payload": {"action": tool("toolu_W")},
    }
    assert "resulting_state" in lines[-1]
    assert r.returncode == 1
    assert "turn ended with observation.requires_action: custom_tool toolu_W" in r.stderr
