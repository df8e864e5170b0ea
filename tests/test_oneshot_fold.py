"""The dialect-free, incremental fold of docs/oneshot.md section 4 (``Observer``)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checkfu_fast import DIALECTS
from checkfu_fast.oneshot import Observer, TurnRequest, _schema, observe, validate_contract
from checkfu_fast.oneshot.observe import (
    MAX_COST_MICROUSD,
    MAX_HELD_CHARS,
    MAX_HELD_CHUNKS,
    microusd,
)

ROOT = Path(__file__).resolve().parents[1]
OBSERVE = ROOT / "python" / "checkfu_fast" / "oneshot" / "observe.py"


def _vectors():
    files = sorted((ROOT / "vectors" / "oneshot").glob("*.json"))
    files.append(ROOT / "vectors" / "oneshot-v1-author-kit.json")
    for f in files:
        for i, v in enumerate(json.loads(f.read_text())["vectors"]):
            yield pytest.param(v, id=f"{f.stem}#{i}")


VECTORS = list(_vectors())


def _request(v):
    x = v["exchange"]
    return TurnRequest(x["prompt"], x["prior_state"], x["output_schema"])


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


def valid(observations):
    v = _schema.observation_validator()
    for o in observations:
        errors = [f"{e.instance_path}: {e.message}" for e in v.iter_errors(o)]
        assert not errors, (o, errors)
    return observations


def jsonl(*lines) -> bytes:
    return "".join(json.dumps(x) + "\n" for x in lines).encode()


def process(**over):
    p = dict(
        spawn_error=None,
        spawn_error_message=None,
        output_truncated=False,
        timed_out=False,
        signal=None,
        exit_code=0,
        wall_time_ms=1200,
        stderr_tail=b"",
    )
    p.update(over)
    return SimpleNamespace(**p)


# -- observe reads events only ------------------------------------------------------------------


def test_observe_module_holds_no_dialect_name_and_no_parsed_access():
    tree = ast.parse(OBSERVE.read_text())
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.update(re.findall(r"[A-Za-z_]+", node.value))
        elif isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            words.add(node.name)
    assert "parsed" not in words
    assert not words & set(DIALECTS), words & set(DIALECTS)
    assert "dialect ==" not in OBSERVE.read_text()


# -- any chunking, the same observations ---------------------------------------------------------


def _chunked(v, cuts, impl="native", proc=None):
    c = validate_contract(v["authoring"])
    data = v["exchange"]["stdout"].encode("utf-8", "surrogatepass")
    o = Observer(c, _request(v), implementation=impl)
    out = []
    last = 0
    for at in sorted(set(cuts)):
        at = at % (len(data) + 1)
        if at < last:
            continue
        out += o.feed(data[last:at])
        last = at
    out += o.feed(data[last:])
    out += o.finish(proc)
    return out, o.state


@pytest.mark.parametrize("v", VECTORS)
def test_every_vector_one_byte_at_a_time(v):
    c = validate_contract(v["authoring"])
    stdout = v["exchange"]["stdout"]
    whole = observe(c, _request(v), stdout)
    data = stdout.encode("utf-8", "surrogatepass")
    o = Observer(c, _request(v))
    out = []
    for i in range(len(data)):
        out += o.feed(data[i : i + 1])
    out += o.finish()
    assert (out, o.state) == whole
    assert out == v["normalized_observations"]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from([p.values[0] for p in VECTORS]),
    st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    st.sampled_from(["native", "reference"]),
)
def test_any_chunking_gives_identical_observations(v, cuts, impl):
    c = validate_contract(v["authoring"])
    whole = observe(c, _request(v), v["exchange"]["stdout"], implementation=impl)
    assert _chunked(v, cuts, impl) == whole


def test_ready_comes_first_even_from_an_empty_feed():
    o = Observer(contract(), TurnRequest("hi"))
    first = o.feed(b"")
    assert [x["type"] for x in first] == ["observation.ready"]
    assert o.feed(b"") == []
    rest = o.finish()
    assert [x["type"] for x in rest] == ["observation.failed"]  # no JSON at all: no success
    assert rest[0]["payload"]["error"]["message"].startswith("no JSON on stdout")
    with pytest.raises(ValueError):
        o.feed(b"x")


def test_observations_arrive_with_the_line_that_causes_them():
    o = Observer(contract(), TurnRequest("hi"), dialect="claude")
    line = {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "A"}]},
    }
    data = jsonl(line)
    assert [x["type"] for x in o.feed(data[:-1])] == ["observation.ready"]
    assert [x["payload"]["content"] for x in o.feed(data[-1:])] == ["A"]


def test_redact_is_applied_to_every_string_of_every_payload_and_the_state():
    def redact(text: str) -> str:
        return text.replace("s3cret", "[redacted]")

    o = Observer(contract(), TurnRequest("hi"), redact=redact)
    line = b'{"type":"assistant","message":{"content":"my s3cret key"}}\n'
    out = o.feed(line) + o.finish()
    assert "s3cret" not in repr(out) and "s3cret" not in repr(o.state)
    assert out[1]["payload"]["content"] == "my [redacted] key"
    assert o.state["last_response"] == "my [redacted] key"
    plain = Observer(contract(), TurnRequest("hi"))
    assert (plain.feed(line) + plain.finish())[1]["payload"]["content"] == "my s3cret key"


def test_text_mode_incremental_equals_whole():
    c = contract(output_mode="text")
    text = ("héllo wörld " * 30000 + "\r\n").encode()
    whole = observe(c, TurnRequest("hi"), text)
    o = Observer(c, TurnRequest("hi"))
    out = []
    for i in range(0, len(text), 7):
        out += o.feed(text[i : i + 7])
    out += o.finish()
    assert (out, o.state) == whole
    assert whole[0][1]["payload"]["content"].endswith("chars]")


# -- cancel ----------------------------------------------------------------------------------------


def test_cancel_before_the_outcome_is_interrupted():
    line = {
        "type": "assistant",
        "message": {"id": "m1", "content": [{"type": "text", "text": "A"}]},
    }
    obs, _ = observe(
        contract(), TurnRequest("hi"), jsonl(line), process=process(signal=9, cancelled=True)
    )
    assert valid(obs)[-1] == {
        "type": "observation.finished",
        "payload": {
            "stop_reason": "interrupted",
            "turn": {
                "execution": "model_only",
                "shell_commands": 0,
                "filesystem_commands": 0,
                "mcp_calls": 0,
                "model_calls": 1,
                "wall_time_ms": 1200,
            },
        },
    }


def test_cancel_after_the_outcome_keeps_the_streams_ending():
    lines = jsonl(
        {"type": "assistant", "message": {"content": "A"}},
        {"type": "result", "subtype": "success", "result": "A", "stop_reason": "max_tokens"},
    )
    obs, _ = observe(
        contract(), TurnRequest("hi"), lines, process=process(signal=15, cancelled=True)
    )
    assert obs[-1]["type"] == "observation.finished"
    assert obs[-1]["payload"]["stop_reason"] == "max_tokens"
    # not cancelled: the signal is a failure, as before
    obs, _ = observe(contract(), TurnRequest("hi"), lines, process=process(signal=15))
    assert obs[-1]["type"] == "observation.failed"


# -- cross-line rules on event flags -------------------------------------------------------------


def _cursor(text, partial=True, mid="mc_1"):
    line = {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "model_call_id": mid,
    }
    if partial:
        line["timestamp_ms"] = 1
    return line


CURSOR = dict(
    image="ghcr.io/acme/cursor-agent:1",
    entrypoint="/usr/local/bin/cursor-agent",
    argv=["-p", "--output-format", "stream-json"],
)


def messages(obs):
    return [x["payload"]["content"] for x in obs if x["type"] == "observation.agent_message"]


def test_partial_chunks_repeated_by_a_whole_text_are_dropped():
    data = jsonl(_cursor("Hel"), _cursor("lo"), _cursor("Hello", partial=False), _cursor("x"))
    obs, state = observe(contract(**CURSOR), TurnRequest("hi"), data, dialect="cursor")
    assert messages(obs) == ["Hello"]
    assert state["last_response"] == "Hello"


def test_partial_texts_before_a_tool_call_are_whole_messages():
    call = {
        "type": "tool_call",
        "subtype": "started",
        "call_id": "c1",
        "tool_call": {"readToolCall": {"args": {"path": "a"}}},
    }
    data = jsonl(_cursor("First."), call, _cursor("Second."))
    obs, state = observe(contract(**CURSOR), TurnRequest("hi"), data, dialect="cursor")
    kinds = [x["type"] for x in obs[1:-1]]
    assert kinds == [
        "observation.agent_message",
        "observation.tool_use",
        "observation.agent_message",
    ]
    assert state["last_response"] == "Second."


def test_the_hold_is_bounded():
    chunks = [_cursor(f"c{i} ") for i in range(MAX_HELD_CHUNKS + 5)]
    o = Observer(contract(**CURSOR), TurnRequest("hi"), dialect="cursor")
    out = o.feed(jsonl(*chunks))
    assert len(messages(out)) == MAX_HELD_CHUNKS  # released when the hold was full
    assert len(o._fold.held) == 5
    assert len(messages(o.finish())) == 5


def test_the_hold_is_bounded_in_characters_too():
    size = MAX_HELD_CHARS // 4 - 10_000  # four fit, a fifth would overflow the hold
    o = Observer(contract(**CURSOR), TurnRequest("hi"), dialect="cursor")
    out = o.feed(jsonl(*[_cursor(c * size) for c in "abcde"]))
    assert [m[0] for m in messages(out)] == ["a", "b", "c", "d"]
    assert [m[0] for m in messages(o.finish())] == ["e"]


def test_thinking_deltas_are_joined_across_feeds():
    d = [{"type": "thinking", "subtype": "delta", "text": t, "model_call_id": "m"} for t in "abc"]
    o = Observer(contract(**CURSOR), TurnRequest("hi"), dialect="cursor")
    out = o.feed(jsonl(*d))
    assert [x["type"] for x in out] == ["observation.ready"]  # held: more may follow
    out = o.feed(jsonl({"type": "thinking", "subtype": "completed"}))
    assert [x["payload"]["content"] for x in out] == ["abc"]


# -- numbers from the stream never raise ---------------------------------------------------------


@pytest.mark.parametrize(
    "cost, expected",
    [
        (1e22, MAX_COST_MICROUSD),
        (1e300, MAX_COST_MICROUSD),
        (-0.0, 0),
        (0.0856255, 85626),
        (9_223_372_036_854_775_807, MAX_COST_MICROUSD),
    ],
)
def test_microusd_clamps(cost, expected):
    assert microusd(cost) == expected


def test_microusd_non_finite_is_no_cost():
    assert microusd(float("inf")) is None
    assert microusd(float("nan")) is None


@pytest.mark.parametrize(
    "raw", ["1e22", "1e400", "-0", "-0.0", "123456789012345678901234567890", "1e-400", "0.5e308"]
)
@pytest.mark.parametrize("impl", ["native", "reference"])
def test_odd_numbers_give_a_valid_ending(raw, impl):
    line = (
        '{"type":"result","subtype":"success","result":"ok","total_cost_usd":RAW,'
        '"duration_ms":RAW,"usage":{"input_tokens":RAW,"output_tokens":1}}\n'
    ).replace("RAW", raw)
    compact = (
        '{"type":"system","subtype":"compact_boundary",'
        '"compact_metadata":{"pre_tokens":RAW,"post_tokens":RAW}}\n'
    ).replace("RAW", raw)
    obs, _ = observe(contract(), TurnRequest("hi"), compact + line, implementation=impl)
    valid(obs)
    # 1e400 overflows the parser: the result line is invalid JSON, so the stream has no outcome
    # and no answer (a failure, not a silent success)
    ending = "observation.failed" if raw == "1e400" else "observation.finished"
    assert obs[-1]["type"] == ending
    obs, _ = observe(
        contract(), TurnRequest("hi"), compact + line, implementation=impl, process=process()
    )
    valid(obs)


def test_stream_retries_are_counted():
    lines = jsonl(
        {"type": "error", "message": "Reconnecting... 1/5"},
        {"type": "error", "message": "Reconnecting... 2/5"},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 1}},
    )
    c = contract(
        image="ghcr.io/acme/codex:1", entrypoint="/usr/local/bin/codex", argv=["exec", "--json"]
    )
    obs, _ = observe(c, TurnRequest("hi"), lines, dialect="codex", process=process())
    assert valid(obs)[-1]["payload"]["turn"]["model_transient_retries"] == 2


# -- a mapping-defined dialect gets full oneshot support -----------------------------------------

MAPPED = [
    {"ev": "start", "session": "s1"},
    {"ev": "say", "call": "mc1", "id": "p1", "text": "Looking."},
    {"ev": "tool", "call": "mc1", "tool": "Bash", "args": {"cmd": "ls"}, "tid": "t1"},
    {"ev": "tool_done", "tid": "t1", "out": [{"type": "text", "text": "a.txt"}], "failed": False},
    {"ev": "mcp", "call": "mc2", "tool": "issues", "server_tool": "list_issues", "raw": {"q": 1},
     "args": {"q": "1"}, "tid": "t2"},
    {"ev": "tool_done", "tid": "t2", "out": None, "failed": True},
    {"ev": "edit", "path": "a.txt", "change": "modify"},
    {"ev": "agent", "agent": "sa1", "name": "explorer", "desc": "look around"},
    {"ev": "agent_end", "agent": "sa1", "status": "completed"},
    {"ev": "compact", "before": 100, "after": 10},
    {"ev": "retrying", "message": "overloaded, retrying"},
    {"ev": "think", "delta": "hm"},
    {"ev": "think", "delta": "m"},
    {"ev": "done", "reason": "max_tokens", "ms": 1500, "final": "All done.", "answer": {"a": 1}},
]  # fmt: skip


def h(prefix: str, native: str) -> str:
    import hashlib

    return prefix + hashlib.sha256(native.encode()).hexdigest()[:32]


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_a_mapped_dialect_reaches_every_observation(impl):
    import checkfu_fast
    from checkfu_fast import reference

    loader = reference.load_dialect if impl == "reference" else checkfu_fast.load_dialect
    dialect = loader(ROOT / "tests" / "data" / "oneshot.mapping.json")
    c = contract(image="ghcr.io/acme/made-up:1", entrypoint="/bin/made-up", argv=["-p"])
    obs, state = observe(c, TurnRequest("hi"), jsonl(*MAPPED), dialect=dialect, implementation=impl)
    assert valid(obs)[1:] == [
        {
            "type": "observation.agent_message",
            "payload": {"content": "Looking.", "event_id": h("evt_", "p1")},
        },
        {
            "type": "observation.tool_use",
            "payload": {
                "tool_use_id": "t1",
                "tool": "harness:Bash",
                "args": {"cmd": "ls"},
                "provider_tool_name": "Bash",
            },
        },
        {
            "type": "observation.tool_result",
            "payload": {"tool_use_id": "t1", "result": [{"type": "text", "text": "a.txt"}]},
        },
        {
            "type": "observation.tool_use",
            "payload": {
                "tool_use_id": "t2",
                "tool": "harness:list_issues",
                "args": {"q": 1},
                "provider_tool_name": "list_issues",
            },
        },
        {
            "type": "observation.tool_result",
            "payload": {
                "tool_use_id": "t2",
                "result": None,
                "error": {"type": "runtime.harness_failed", "message": "tool failed"},
            },
        },
        {"type": "observation.file_changed", "payload": {"event": "modify", "path": "a.txt"}},
        {
            "type": "observation.subagent_started",
            "payload": {
                "subagent": h("subg_", "sa1"),
                "name": "explorer",
                "description": "look around",
            },
        },
        {
            "type": "observation.subagent_completed",
            "payload": {"subagent": h("subg_", "sa1"), "disposition": "completed"},
        },
        {
            "type": "observation.context_compacted",
            "payload": {"strategy": "native", "tokens_before": 100, "tokens_after": 10},
        },
        {"type": "observation.agent_thinking", "payload": {"content": "hmm"}},
        {
            "type": "observation.finished",
            "payload": {
                "stop_reason": "max_tokens",
                "turn": {
                    "execution": "shell",
                    "shell_commands": 1,
                    "filesystem_commands": 1,
                    "mcp_calls": 1,
                    "model_calls": 2,
                    "wall_time_ms": 1500,
                    "model_transient_retries": 1,
                },
            },
        },
    ]
    assert state["last_response"] == "All done."
    with_schema = TurnRequest("hi", None, {"type": "object"})
    _, state = observe(c, with_schema, jsonl(*MAPPED), dialect=dialect, implementation=impl)
    assert state["last_response"] == '{"a":1}'


def test_mapped_extras_are_the_same_on_both_paths():
    import checkfu_fast
    from checkfu_fast import reference

    path = ROOT / "tests" / "data" / "oneshot.mapping.json"
    data = jsonl(*MAPPED)
    native = checkfu_fast.normalize(data, checkfu_fast.load_dialect(path))
    ref = reference.normalize(data, reference.load_dialect(path))
    assert native == ref
    assert [list(e) for e in native] == [list(e) for e in ref]  # the same key order


# -- hostile stream content never raises --------------------------------------------------------

_KEYS = st.sampled_from(
    [
        "type", "subtype", "message", "content", "text", "id", "tool_use_id", "task_id",
        "subagent_type", "task_type", "description", "status", "result", "usage", "stop_reason",
        "stopReason", "reason", "duration_ms", "durationMs", "total_cost_usd", "item", "msg",
        "changes", "call_id", "part", "state", "output", "error", "tool_call", "model_call_id",
        "timestamp_ms", "messages", "role", "input", "name", "compact_metadata", "pre_tokens",
        "post_tokens", "structured_output", "rawOutput", "toolCallId", "cost", "responseId",
    ]
)  # fmt: skip
_TYPES = st.sampled_from(
    [
        "assistant", "user", "result", "system", "item.completed", "item.started", "turn.completed",
        "message_end", "turn_end", "agent_end", "tool_execution_end", "tool_call", "thinking",
        "tool_use", "step_finish", "text", "error", "end", "task_started", "task_notification",
        "compact_boundary", "command_execution", "mcp_tool_call", "file_change",
        "patch_apply_begin", "patch_apply_end", "exec_command_end", "tool_result",
        "auto_retry_start", "Task", "success",
    ]
)  # fmt: skip
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False)
    | _TYPES
    | st.text(max_size=6)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
_LINE = st.dictionaries(_KEYS, _VALUES, max_size=6).map(
    lambda d: {"type": d.pop("type", "assistant"), **d}
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(_LINE, min_size=1, max_size=6),
    st.sampled_from(["claude", "codex", "cursor", "opencode", "pi", "grok", "north"]),
    st.booleans(),
)
def test_hostile_lines_give_valid_observations(lines, dialect, with_schema):
    request = TurnRequest("hi", None, {"type": "object"} if with_schema else None)
    data = jsonl(*lines)
    native = observe(contract(), request, data, dialect=dialect, process=process())
    valid(native[0])
    endings = [o for o in native[0] if o["type"].split(".")[1] in ENDINGS]
    assert len(endings) == 1 and native[0][-1] is endings[0]
    assert (
        observe(
            contract(),
            request,
            data,
            dialect=dialect,
            process=process(),
            implementation="reference",
        )
        == native
    )


ENDINGS = ("finished", "failed", "retryable_failure")


def test_a_later_result_line_without_text_ends_the_earlier_result_text():
    lines = [
        {"type": "assistant", "message": {"content": "the answer"}},
        {"type": "result", "subtype": "success", "result": "first run"},
        {"type": "result", "subtype": "error_during_execution", "is_error": True},
    ]
    for impl in ("native", "reference"):
        _, state = observe(contract(), TurnRequest("hi"), jsonl(*lines), implementation=impl)
        assert state["last_response"] == "the answer"
        _, state = observe(contract(), TurnRequest("hi"), jsonl(*lines[:2]), implementation=impl)
        assert state["last_response"] == "first run"


# -- the 2026 example streams (docs/formats-2026.md sections 4 and 5) ----------------------------

EXAMPLES = ROOT / "docs" / "examples-2026"


def _example(name, dialect, impl="native"):
    data = (EXAMPLES / name).read_bytes()
    return observe(
        contract(**CURSOR), TurnRequest("hi"), data, dialect=dialect, implementation=impl
    )


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_cursor_default_mode_segments_are_whole_messages_and_the_answer_is_the_last(impl):
    obs, state = _example("cursor-2026.jsonl", "cursor", impl)
    segment1 = "\nI'll run the tests to see which one fails.\n"
    final = "\nFixed: parse_range now keeps the inclusive end; all 14 tests pass.\n"
    assert messages(obs) == [segment1, final]
    # result.result joins both segments: the final answer is the last one
    assert state["last_response"] == final
    assert obs[-1]["type"] == "observation.finished"
    assert obs[-1]["payload"]["turn"]["model_transient_retries"] == 1


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_cursor_partial_mode_resends_replace_their_chunks(impl):
    obs, state = _example("cursor-2026-partial.jsonl", "cursor", impl)
    final = "`sample.txt` contained:\n\n```\nhello\n```"
    assert messages(obs) == ["Checking now.", final]
    assert state["last_response"] == final


@pytest.mark.parametrize("impl", ["native", "reference"])
def test_cursor_stream_that_stops_after_reconnects_is_a_transport_failure(impl):
    obs, state = _example("cursor-2026-failure.jsonl", "cursor", impl)
    assert obs[-1] == {
        "type": "observation.retryable_failure",
        "payload": {
            "error": {
                "type": "model.platform_supply_unavailable",
                "message": "reconnecting (attempt 2)",
            }
        },
    }
    assert state["last_response"] == ""


def test_a_whole_text_that_does_not_repeat_the_held_chunks_releases_them():
    data = jsonl(_cursor("First."), _cursor("Second.", partial=False))
    obs, state = observe(contract(**CURSOR), TurnRequest("hi"), data, dialect="cursor")
    assert messages(obs) == ["First.", "Second."]
    assert state["last_response"] == "Second."


def test_a_result_without_text_after_the_last_tool_keeps_its_own_text():
    call = {
        "type": "tool_call",
        "subtype": "started",
        "call_id": "c1",
        "tool_call": {"readToolCall": {"args": {"path": "a"}}},
    }
    result = {"type": "result", "subtype": "success", "is_error": False, "result": "A.B."}
    data = jsonl(_cursor("A.", partial=False), _cursor("B.", partial=False), call, result)
    _, state = observe(contract(**CURSOR), TurnRequest("hi"), data, dialect="cursor")
    assert state["last_response"] == "A.B."


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        (
            "codex-2026-failure.jsonl",
            "model.platform_supply_unavailable",
            "We're currently experiencing high demand, which may cause temporary errors.",
        ),
        (
            "codex-2026-failure-concurrency.jsonl",
            "model.platform_capacity_reached",
            "stream disconnected before completion: Concurrency limit exceeded for user, "
            "please retry later",
        ),
        (
            "codex-2026-failure-budget.jsonl",
            "model.platform_capacity_reached",
            "shared rollout token budget exhausted",
        ),
    ],
)
def test_codex_2026_failures(name, kind, message):
    for impl in ("native", "reference"):
        obs, _ = _example(name, "codex", impl)
        assert obs[-1] == {
            "type": "observation.retryable_failure",
            "payload": {"error": {"type": kind, "message": message}},
        }


def test_codex_collab_keeps_the_prompt_and_the_reply():
    obs, state = _example("codex-2026.jsonl", "codex")
    uses = {
        o["payload"]["tool_use_id"]: o["payload"] for o in obs if o["type"].endswith("tool_use")
    }
    results = {
        o["payload"]["tool_use_id"]: o["payload"] for o in obs if o["type"].endswith("tool_result")
    }
    prompt = (
        "Find why tests/test_range.py::test_inclusive_end fails and reply with the one-line cause."
    )
    assert uses["item_6"]["args"] == {"prompt": prompt, "receiver_thread_ids": []}
    reply = "parse_range uses range(start, end) so the inclusive end is dropped."
    child = "01a0bb3b-9c37-79f3-82e2-02c7a1a20ea9"
    assert results["item_7"]["result"] == {child: {"status": "completed", "message": reply}}
    started = [o["payload"] for o in obs if o["type"] == "observation.subagent_started"]
    completed = [o["payload"] for o in obs if o["type"] == "observation.subagent_completed"]
    assert [s["description"] for s in started] == [prompt]
    assert [c["disposition"] for c in completed] == ["completed"]
    assert started[0]["subagent"] == completed[0]["subagent"]
    search = uses["ws_06adad68e217ee90016aabb953ced487d085c482afedfc2915"]
    assert search["args"]["queries"] == ["pytest 9 release notes", "pytest 9 deprecations"]
    assert (
        state["last_response"]
        == "Fixed: parse_range now keeps the inclusive end; all 14 tests pass."
    )


def test_mapped_result_joins_messages_flag():
    import checkfu_fast
    from checkfu_fast import reference

    path = ROOT / "tests" / "data" / "oneshot.mapping.json"
    lines = [{"ev": "done", "final": "A.B.", "joined": True}, {"ev": "done", "final": "C."}]
    for impl in (checkfu_fast, reference):
        evs = impl.normalize(jsonl(*lines), impl.load_dialect(path))
        assert [e.get("resultJoinsMessages") for e in evs] == [True, None]
        assert [e.get("resultText") for e in evs] == ["A.B.", "C."]


def test_codex_2026_file_change_counts_once_and_carries_its_diff():
    import checkfu_fast
    from checkfu_fast import reference

    data = (EXAMPLES / "codex-2026.jsonl").read_bytes()
    for impl in (checkfu_fast, reference):
        evs = [e for e in impl.normalize(data, "codex") if e["subtype"] == "file_change"]
        assert [e.get("toolClass") for e in evs] == [None, "filesystem"]  # started, completed
        diff = (
            "@@ -12 +12 @@\n-    return list(range(start, end))\n"
            "+    return list(range(start, end + 1))\n"
        )
        path = "/home/dev/work/parser/src/parser/range.py"
        assert evs[1]["fileChanges"] == [{"event": "modify", "path": path, "diff": diff}]


RETRY_429 = (
    b'{"type":"system","subtype":"init","session_id":"s","tools":["Bash"]}\n'
    b'{"type":"system","subtype":"api_retry","attempt":3,"max_retries":3,"retry_delay_ms":4000,'
    b'"error_status":429,"error":"rate_limit","session_id":"s"}\n'
)


@pytest.mark.parametrize("implementation", ["native", "reference"])
def test_a_retryable_failure_carries_the_streams_own_retry_time(implementation):
    o = Observer(contract(), TurnRequest("hi"), implementation=implementation)
    out = o.feed(RETRY_429) + o.finish()
    assert out[-1]["type"] == "observation.retryable_failure"
    assert o.retry == (None, 4000)  # the api_retry's retry_delay_ms, nothing guessed
    reset = b'{"type":"result","subtype":"error_during_execution","is_error":true,"result":"x"}\n'
    done = Observer(contract(), TurnRequest("hi"), implementation=implementation)
    done.feed(RETRY_429 + reset)
    done.finish()
    assert done.retry is None  # the stream's own later outcome decided, and it gave no time


@pytest.mark.parametrize("implementation", ["native", "reference"])
def test_a_rate_limit_without_a_stated_time_gives_no_retry_time(implementation):
    line = (
        b'{"type":"result","subtype":"success","is_error":true,'
        b'"result":"You\'ve hit your limit \\u00b7 resets 5am (UTC)"}\n'
    )
    o = Observer(contract(), TurnRequest("hi"), implementation=implementation)
    out = o.feed(line) + o.finish()
    assert out[-1]["type"] == "observation.retryable_failure"
    assert o.retry is None
