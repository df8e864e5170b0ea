"""Issue 24: the runner, ready for real CLIs.

Shipped contracts (``oneshot.contracts``), typed errors in words, no silent success, usage and
session id on the result, an awaitable async result, the dialect from a shipped contract, and
``TurnBudget`` guards stopping a runaway fake harness on both normalizer paths.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from checkfu_fast.oneshot import (
    ContractError,
    Observer,
    TurnBudget,
    TurnRequest,
    astream_turn,
    contracts,
    observe,
    plan_exchange,
    run_turn,
    stream_turn,
    validate_contract,
)
from livehelp import FAST, contract

ROOT = Path(__file__).resolve().parents[1]
RUNAWAY = str(Path(__file__).with_name("stubs") / "runaway.py")
PRIOR = {"schema_version": 1, "turn": 1, "last_response": "ok"}
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def runaway(mode: str) -> dict:
    return {"entrypoint": sys.executable, "entrypoint_prefix": (RUNAWAY, mode), **FAST}


# -- shipped contracts ------------------------------------------------------------------------


@pytest.mark.parametrize("name", contracts.NAMES)
def test_every_shipped_contract_is_valid_and_names_its_dialect(name):
    c = contracts.get(name, entrypoint=f"/opt/bin/{name}")
    assert validate_contract(dict(c)) == dict(c)
    assert isinstance(c, dict) and c.name == name and c.dialect == name
    assert c["entrypoint"] == f"/opt/bin/{name}"
    assert json.loads(json.dumps(c)) == dict(c)  # a plain JSON object
    # planning works for a first and a resumed turn with an answer schema
    for prior in (None, PRIOR):
        exchange = plan_exchange(c, TurnRequest("do it", prior, SCHEMA))
        assert exchange["prompt"] == "do it"
        if c["prompt_transport"] == "stdin":
            assert exchange["stdin"] == "do it"
        else:
            assert exchange["staged_files"][0]["content"] == "do it"


def test_the_shipped_argv_are_the_documented_ones():
    argv = {n: contracts.get(n)["argv"] for n in contracts.NAMES}
    assert argv == {
        "claude": ["-p", "--output-format", "stream-json", "--verbose"],
        "codex": ["exec", "--json", "--skip-git-repo-check", "-"],
        "cursor": ["-p", "--output-format", "stream-json"],
        "opencode": [
            "run",
            "--format",
            "json",
            "Follow the instructions in the attached file.",
            "--file",
            "{prompt_path}",
        ],
        "pi": ["--mode", "json"],
        "grok": ["--prompt-file", "{prompt_path}", "--output-format", "streaming-json"],
    }


def test_resume_needs_a_fixed_working_directory_where_the_cli_finds_sessions_by_it():
    for name in ("claude", "cursor", "opencode", "pi", "grok"):
        assert contracts.get(name).get("resume_flag") is None  # a fresh dir every turn
        c = contracts.get(name, working_directory="/srv/work")
        assert c["resume_flag"] == "--continue" and c["working_directory"] == "/srv/work"
        assert contracts.get(name, working_directory="/srv/w", resume=False)["resume_flag"] is None
    # codex exec resume is a subcommand: one appended argument cannot express it
    assert contracts.get("codex", working_directory="/srv/work")["resume_flag"] is None


def test_claude_resumes_with_continue_and_takes_the_schema_inline():
    c = contracts.get("claude", working_directory="/srv/work", model="sonnet")
    exchange = plan_exchange(c, TurnRequest("go", PRIOR, SCHEMA))
    assert exchange["argv"] == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "sonnet",
        "--continue",
        "--json-schema",
        json.dumps(SCHEMA, separators=(",", ":")),
    ]
    assert exchange["stdin"] == "go" and exchange["staged_files"] == []


def test_codex_gets_the_schema_as_a_file_and_grok_the_prompt_as_a_file():
    exchange = plan_exchange(contracts.get("codex"), TurnRequest("go", None, SCHEMA))
    assert exchange["argv"][-2:] == ["--output-schema", "/run/checkfu/oneshot/output-schema.json"]
    exchange = plan_exchange(contracts.get("grok"), TurnRequest("go"))
    assert exchange["argv"][:2] == ["--prompt-file", "/run/checkfu/oneshot/prompt.txt"]


def test_options_flags_and_extra_args():
    c = contracts.get("cursor", force=True, model="gpt-5", extra_args=["--sandbox", "enabled"])
    assert c["argv"][3:] == ["--force", "--model", "gpt-5", "--sandbox", "enabled"]  # as given
    assert contracts.get("cursor", force=False)["argv"] == ["-p", "--output-format", "stream-json"]
    assert set(contracts.options("claude")) >= {"model", "permission_mode", "allowed_tools"}


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: contracts.get("gemini"), "no shipped contract is named 'gemini'"),
        (lambda: contracts.get("claude", colour="red"), "claude has no option 'colour'"),
        (lambda: contracts.get("claude", model=""), "takes a non-empty string"),
        (lambda: contracts.get("cursor", force="yes"), "is a flag"),
        (lambda: contracts.get("pi", extra_args="--x"), "a list of arguments"),
        (lambda: contracts.get("pi", entrypoint="pi"), "must be an absolute path"),
    ],
)
def test_bad_shipped_contract_options_are_contract_errors_in_words(call, words):
    with pytest.raises(ContractError) as e:
        call()
    assert words in str(e.value)


# -- no made-up flag anywhere -----------------------------------------------------------------

MADE_UP = ("--resume-last", "--json-schema-file", "--output-schema-json", "--prompt-file=")


def _texts():
    """The README, the docs and every vector file (the vectors' notes, which say what was
    replaced, are left out)."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / "vectors").rglob("*.json"))
    return [(p, p.read_text(encoding="utf-8")) for p in files]


def test_no_made_up_cli_flag_in_readme_docs_or_vectors():
    for path, text in _texts():
        for flag in MADE_UP:
            assert flag not in text, f"{path}: {flag}"


def test_prompt_file_is_only_given_to_grok_in_the_vectors():
    for path in sorted((ROOT / "vectors").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for v in data.get("vectors", []) if isinstance(data, dict) else []:
            a = v["authoring"]
            if "--prompt-file" in a["argv"]:
                assert a["entrypoint"].endswith("/grok"), (path.name, a["entrypoint"])
            for flag in (a.get("resume_flag"), a.get("output_schema_flag")):
                assert flag is None or " " not in flag, (path.name, flag)  # one argument


# -- typed errors in words --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda c: run_turn(c, "a prompt"),
        lambda c: stream_turn(c, "a prompt"),
        lambda c: astream_turn(c, "a prompt"),
        lambda c: plan_exchange(c, "a prompt"),
        lambda c: observe(c, "a prompt", b""),
        lambda c: Observer(c, "a prompt"),
    ],
)
def test_a_str_where_a_turn_request_belongs_is_a_contract_error(call):
    with pytest.raises(ContractError) as e:
        call(validate_contract(contract()))
    assert e.value.rule == "request.type"
    assert "must be a TurnRequest, not a str (wrap the prompt: TurnRequest(prompt))" in str(e.value)


def test_a_ref_with_a_non_ascii_digit_is_a_contract_error():
    c = contract(configuration_schema={"allOf": [{"type": "object"}], "$ref": "#/allOf/²"})
    with pytest.raises(ContractError) as e:
        validate_contract(c)
    assert e.value.rule == "configuration_schema.ref" and "does not resolve" in str(e.value)
    ok = contract(configuration_schema={"allOf": [{"type": "object"}], "$ref": "#/allOf/0"})
    assert validate_contract(ok) == ok


@pytest.mark.parametrize(
    ("over", "rule", "words"),
    [
        ({"entrypoint": "/usr/bin/my tool"}, "schema.pattern", "must be an absolute path"),
        ({"entrypoint": "bin/claude"}, "schema.pattern", "is not absolute (it must start with /)"),
        ({"working_directory": "work"}, "schema.anyOf", "working_directory must be an absolute"),
        ({"resume_flag": ""}, "schema.anyOf", "resume_flag must not be empty"),
        ({"output_schema_flag": 7}, "schema.anyOf", "must be a non-empty string or null, not 7"),
    ],
)
def test_schema_errors_say_what_is_wrong_in_words(over, rule, words):
    with pytest.raises(ContractError) as e:
        validate_contract(contract(**over))
    assert e.value.rule == rule and words in str(e.value)
    assert "^\\/" not in str(e.value) and "not valid under any of" not in str(e.value)


@pytest.mark.parametrize("text", ["contract.json", "./claude.json", "/etc/checkfu/contract.json"])
def test_a_path_where_contract_json_belongs_is_named_a_path(text):
    with pytest.raises(ContractError) as e:
        validate_contract(text)
    assert "looks like a file path, not JSON text" in str(e.value)


def test_cli_run_accepts_the_state_line_it_printed(tmp_path):
    c = contract(entrypoint="/bin/echo", argv=["Done."], output_mode="text")
    (tmp_path / "c.json").write_text(json.dumps(c))
    (tmp_path / "p.txt").write_text("hi")

    def run(*extra: str) -> list[dict]:
        cmd = [sys.executable, "-m", "checkfu_fast", "run", str(tmp_path / "c.json")]
        cmd += ["--prompt-file", str(tmp_path / "p.txt"), *extra]
        out = subprocess.run(cmd, capture_output=True, check=True, timeout=60).stdout
        (tmp_path / "out.jsonl").write_bytes(out)
        return [json.loads(line) for line in out.splitlines()]

    first = run()
    state = {"schema_version": 1, "turn": 1, "last_response": "Done."}
    assert first[-1] == {"resulting_state": state}
    (tmp_path / "state.json").write_text(json.dumps(first[-1]) + "\n")  # the line as printed
    assert run("--state", str(tmp_path / "state.json"))[-1]["resulting_state"]["turn"] == 2
    # the whole output of the previous run works too (its last line is the state)
    assert run("--state", str(tmp_path / "out.jsonl"))[-1]["resulting_state"]["turn"] == 3


# -- no silent success ------------------------------------------------------------------------


def _ending(stdout: bytes, impl: str = "native") -> tuple[dict, dict]:
    obs, state = observe(
        validate_contract(contract()), TurnRequest("hi"), stdout, implementation=impl
    )
    return obs[-1], state


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_a_stream_json_turn_without_json_fails_and_says_why(impl):
    ending, state = _ending(b"Sure, done!\nAll good.\n", impl)
    assert ending["type"] == "observation.failed"
    assert ending["payload"]["error"]["type"] == "runtime.harness_failed"
    assert ending["payload"]["error"]["message"].startswith("no JSON on stdout")
    assert "--output-format stream-json" in ending["payload"]["error"]["message"]
    assert state["last_response"] == ""


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_json_without_an_outcome_or_an_answer_fails(impl):
    init = {"type": "system", "subtype": "init", "session_id": "s1", "tools": []}
    ending, _ = _ending(json.dumps(init).encode() + b"\n", impl)
    assert ending["type"] == "observation.failed"
    assert "without an outcome record" in ending["payload"]["error"]["message"]
    # an answer without an outcome record is still an answer
    msg = {"type": "assistant", "message": {"id": "m", "role": "assistant", "content": []}}
    msg["message"]["content"] = [{"type": "text", "text": "the answer"}]
    ending, state = _ending((json.dumps(init) + "\n" + json.dumps(msg) + "\n").encode(), impl)
    assert ending == {"type": "observation.finished", "payload": {"stop_reason": "end_turn"}}
    assert state["last_response"] == "the answer"


# -- the dialect from the shipped contract ----------------------------------------------------


def test_the_dialect_comes_from_the_shipped_contract():
    for name in contracts.NAMES:
        assert Observer(contracts.get(name), TurnRequest("x")).dialect == name
    assert Observer(validate_contract(contract()), TurnRequest("x")).dialect == "auto"
    assert Observer(contracts.get("pi"), TurnRequest("x"), dialect="claude").dialect == "claude"


def test_a_shipped_contract_is_not_held_by_auto():
    """A pi ``message_end`` decides no dialect under ``auto`` (held, then read as the claude
    fallback: no message at all); under the shipped pi contract its message is observed by the
    ``feed`` that completes the line."""
    line = {
        "type": "message_end",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "hello"}],
            "stopReason": "stop",
        },
    }
    data = json.dumps(line).encode() + b"\n"
    shipped = Observer(contracts.get("pi"), TurnRequest("x"))
    got = shipped.feed(data)
    assert [x["type"] for x in got] == ["observation.ready", "observation.agent_message"]
    assert got[1]["payload"]["content"] == "hello"
    plain = Observer(validate_contract(contract()), TurnRequest("x"))
    assert [x["type"] for x in plain.feed(data)] == ["observation.ready"]  # held by auto


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_auto_holds_observations_at_most_eight_lines(tmp_path, impl):
    """Under auto, a stream whose first lines decide no dialect is decided after 8 lines (the
    fallback): the harness prints 8 such lines and then waits for a flag that the consumer
    makes only when it has seen their first message, so a longer hold would end in its
    10 s timeout with the answer "no flag" instead of "done"."""
    from livehelp import harness

    flag = tmp_path / "flag"
    with stream_turn(
        validate_contract(contract()),
        TurnRequest("go"),
        implementation=impl,
        deadline_s=30,
        **harness("stream-wait-undecided", str(flag), "10"),
    ) as turn:
        for obs in turn:
            if obs["type"] == "observation.agent_message" and not flag.exists():
                assert turn.running
                flag.touch()
    assert turn.result.resulting_state["last_response"] == "done"
    texts = [o["payload"]["content"] for o in turn.result.observations if "content" in o["payload"]]
    assert texts[:8] == [f"part {i}" for i in range(8)]


# -- usage, session id, await -----------------------------------------------------------------


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_the_result_has_usage_and_the_session_id(impl):
    result = run_turn(
        validate_contract(contract()),
        TurnRequest("go"),
        budget=TurnBudget(tool_calls=2),
        implementation=impl,
        **runaway("vary"),
    )
    assert result.session_id == "ses_runaway"
    total = result.usage["total"]
    steps = total["endings"]["ok"]
    steps_done = total["inputTokens"] // 100  # each finished step: 100 in, 10 out, 0.01 USD
    assert steps_done >= 2 and total["inputTokens"] == 100 * steps_done
    assert total["outputTokens"] == 10 * steps_done
    assert total["source"] == "reported"
    assert total["costUsd"] == pytest.approx(0.01 * steps_done)
    assert steps == 1  # one stream
    assert set(result.usage) == {"total", "byModel", "bySession"}
    assert "ses_runaway" in result.usage["bySession"]


def test_await_the_async_turn():
    c = contract(entrypoint="/bin/echo", argv=["Done."], output_mode="text")

    async def main():
        turn = astream_turn(c, TurnRequest("hi"))
        result = await turn
        again = await turn.wait()
        return result, again

    result, again = asyncio.run(main())
    assert result is again and result.resulting_state["last_response"] == "Done."


def test_await_does_not_block_the_loop():
    """While ``await turn.wait()`` waits for a slow harness, other tasks keep running."""

    async def main():
        turn = astream_turn(
            validate_contract(contract()),
            TurnRequest("go"),
            budget=TurnBudget(wall_s=0.6),
            **runaway("idle"),
        )
        ticks = 0

        async def tick():
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        ticker = asyncio.create_task(tick())
        result = await turn.wait()
        ticker.cancel()
        return result, ticks

    result, ticks = asyncio.run(main())
    assert result.stopped_by == "budget.wall_s"
    assert ticks >= 10  # the loop ran while the turn did


# -- budgets ----------------------------------------------------------------------------------

LIMITS = [
    ("usd", TurnBudget(usd=0.05), "vary"),
    ("tokens", TurnBudget(tokens=550), "vary"),
    ("tool_calls", TurnBudget(tool_calls=5), "vary"),
    ("repeats", TurnBudget(repeats=4), "same"),
    ("wall_s", TurnBudget(wall_s=0.5), "idle"),
]


@pytest.mark.parametrize("impl", ["native", "reference"])
@pytest.mark.parametrize(("limit", "budget", "mode"), LIMITS, ids=[x[0] for x in LIMITS])
def test_a_budget_stops_a_runaway_turn(limit, budget, mode, impl):
    start = time.monotonic()
    with stream_turn(
        validate_contract(contract()),
        TurnRequest("go"),
        budget=budget,
        implementation=impl,
        **runaway(mode),
    ) as turn:
        observations = list(turn)
    result = turn.result
    assert result.stopped_by == f"budget.{limit}"
    assert observations[-1]["type"] == "observation.finished"
    assert observations[-1]["payload"]["stop_reason"] == "interrupted"
    assert result.process.cancelled
    tools = sum(o["type"] == "observation.tool_use" for o in observations)
    assert tools < 1000  # long before the 3,000 steps (lines in the pipe are still seen)
    if limit == "tool_calls":
        assert tools >= 6  # the crossing call was observed
    if limit == "repeats":
        assert tools >= 4
    if limit in ("usd", "tokens"):
        total = result.usage["total"]
        crossed = (
            total["costUsd"] > 0.05
            if limit == "usd"
            else (total["inputTokens"] + total["outputTokens"] > 550)
        )
        assert crossed
    assert time.monotonic() - start < 20


def test_a_turn_within_its_budget_is_not_stopped():
    c = contract(entrypoint="/bin/echo", argv=['{"type":"result","subtype":"success"}'])
    result = run_turn(c, TurnRequest("hi"), budget=TurnBudget(usd=1, tokens=10, repeats=2))
    assert result.stopped_by is None
    assert result.observations[-1]["type"] == "observation.finished"


@pytest.mark.parametrize(
    "kwargs",
    [{"usd": -1}, {"tokens": 1.5}, {"tool_calls": True}, {"repeats": 0}, {"wall_s": "1"}],
)
def test_a_bad_budget_is_a_contract_error_in_words(kwargs):
    with pytest.raises(ContractError) as e:
        TurnBudget(**kwargs)
    assert "budget" in str(e.value) and e.value.rule == "budget.value"
    with pytest.raises(ContractError):
        stream_turn(validate_contract(contract()), TurnRequest("x"), budget={"usd": 1})


# -- estimated cost where the CLI reports none ------------------------------------------------

SONNET = "claude-sonnet-4-5-20250929"


def _claude_usage_stream(steps: int) -> bytes:
    init = {"type": "system", "subtype": "init", "session_id": "s1", "tools": [], "model": SONNET}
    lines = [init]
    for i in range(steps):
        message = {
            "id": f"msg_{i}",
            "role": "assistant",
            "model": SONNET,
            "content": [{"type": "text", "text": f"step {i}"}],
            "usage": {"input_tokens": 10_000, "output_tokens": 1_000},
        }
        lines.append({"type": "assistant", "message": message, "session_id": "s1"})
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_usage_has_an_estimate_where_the_cli_reports_no_cost(impl):
    from checkfu_fast import prices

    o = Observer(validate_contract(contract()), TurnRequest("x"), implementation=impl)
    o.feed(_claude_usage_stream(3))
    o.finish()
    total = o.usage["total"]  # usage_totals: the estimate at the shipped price snapshot
    assert total["source"] == "estimated"
    want = 3 * (prices.cost(SONNET, input_tokens=10_000) + prices.cost(SONNET, output_tokens=1_000))
    assert total["costUsd"] == pytest.approx(want) and total["estimatedUsd"] == total["costUsd"]
    assert want == pytest.approx(3 * 0.045)  # $3 / $15 per million tokens
    assert o.session_id == "s1"


def test_no_estimate_for_an_unpriced_model_and_the_reported_cost_where_there_is_one():
    data = _claude_usage_stream(1).replace(SONNET.encode(), b"some-unpriced-model-x")
    o = Observer(validate_contract(contract()), TurnRequest("x"))
    o.feed(data)
    o.finish()
    total = o.usage["total"]
    assert total["costUsd"] is None  # never a made-up number
    assert total["unpricedModels"] == ["some-unpriced-model-x"]
    result = {"type": "result", "subtype": "success", "result": "ok", "total_cost_usd": 0.5}
    o = Observer(validate_contract(contract()), TurnRequest("x"))
    o.feed(_claude_usage_stream(1) + json.dumps(result).encode() + b"\n")
    o.finish()
    assert o.usage["total"]["costUsd"] == 0.5 and o.usage["total"]["source"] == "reported"


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_the_usd_budget_uses_the_estimate_when_the_cli_reports_no_cost(impl):
    with stream_turn(
        validate_contract(contract()),
        TurnRequest("go"),
        budget=TurnBudget(usd=0.2),
        implementation=impl,
        **runaway("priced"),
    ) as turn:
        observations = list(turn)
    result = turn.result
    assert result.stopped_by == "budget.usd"
    assert observations[-1]["payload"]["stop_reason"] == "interrupted"
    assert result.usage["total"]["source"] == "estimated"
    assert result.usage["total"]["costUsd"] > 0.2
    # stopped long before the harness's 3,000 messages; not a tighter count: the lines already
    # in the pipe when the budget is crossed are still observed (a loaded machine gave 122)
    assert sum(o["type"] == "observation.agent_message" for o in observations) < 1000
