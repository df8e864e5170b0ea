"""Differential (native vs reference) property tests over realistic and hostile streams."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import checkfu_fast
import checkfu_fast.reference
from checkfu_fast.golden import strict_key
from conftest import IMPLS, assert_valid, assert_wide_stream, wide_encoding

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

DIALECTS = ("claude", "cursor", "codex", "auto")
WHITESPACE = b" \t\r\n\x0b\x0c"
BOM = b"\xef\xbb\xbf"


# -- strict comparison: types, key order and float bits matter --------------------------------


canon = strict_key


def assert_same(native: list[dict], ref: list[dict], data: bytes, label: str) -> None:
    if canon(native) == canon(ref):
        return
    for i in range(max(len(native), len(ref))):
        a = native[i] if i < len(native) else None
        b = ref[i] if i < len(ref) else None
        if a is None or b is None or canon(a) != canon(b):
            raise AssertionError(
                f"{label}: native != reference at event #{i}\n input={data!r}\n"
                f" native   ={a!r}\n reference={b!r}"
            )


def nonblank_starts(data: bytes) -> tuple[set[int], set[int]]:
    """(start offsets of non-blank lines, start offsets of whitespace-only lines)."""
    offset = 3 if data.startswith(BOM) else 0
    pos = 0
    nonblank, blank = set(), set()
    for piece in data[offset:].split(b"\n"):
        (nonblank if piece.strip(WHITESPACE) else blank).add(offset + pos)
        pos += len(piece) + 1
    return nonblank, blank


def check_stream(data: bytes, dialect: str, **budgets) -> list[dict]:
    native = checkfu_fast.normalize(data, dialect, **budgets)
    ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert_same(native, ref, data, f"dialect={dialect} budgets={budgets}")
    assert_valid(native)
    assert [e["seq"] for e in native] == list(range(len(native)))
    if wide_encoding(data):
        # a UTF-16/UTF-32 stream (its first bytes say so) is one event, not lines
        assert_wide_stream(native, data)
        assert native[0]["dialect"] == ("claude" if dialect == "auto" else dialect)
        return native
    positions = [e["position"] for e in native]
    assert positions == sorted(positions)
    nonblank, blank = nonblank_starts(data)
    seen = set(positions)
    assert nonblank <= seen, f"lines lost at {sorted(nonblank - seen)}"
    # an over-long whitespace-only line may legitimately be reported as line_too_long
    extra = seen - nonblank
    assert extra <= blank, f"events at non-line positions {sorted(extra)}"
    for e in native:
        if e["position"] in extra:
            assert e["subtype"] in ("line_too_long", "dialect_fallback")
    if dialect != "auto":
        assert {e["dialect"] for e in native} <= {dialect}
    else:
        assert len({e["dialect"] for e in native}) <= 1
    return native


# -- building blocks --------------------------------------------------------------------------

SURROGATE_TEXT = st.sampled_from(["\ud800", "a\udfffb", "\ud83d", "\ude00x", "\ud83d\ude00"])
texts = st.integers(0, 5).flatmap(
    lambda i: [
        st.text(max_size=20),
        st.text(max_size=20),
        st.text(st.characters(codec="ascii"), max_size=20),
        st.text(st.characters(codec="ascii"), max_size=20),
        st.sampled_from(
            [
                "",
                "hello",
                "é中😀",
                "line\nbreak",
                "tab\t",
                "\x00nul",
                "\u2028",
                "\ufeff",
                "\\",
                '"quoted"',
                "\r\n",
            ]
        ),
        SURROGATE_TEXT,
    ][i]
)
error_messages = st.one_of(
    st.sampled_from(
        [
            "Rate limit exceeded",
            "HTTP 429 Too Many Requests",
            "You've hit your usage limit",
            "503 Service Unavailable",
            "stream disconnected before completion",
            "Connection reset",
            "Invalid API key · Please run /login",
            "401 Unauthorized",
            "Reached max turns (3)",
            "Overloaded",
            "Credit balance is too low",
            "Request timed out",
            "API Error: 500",
            "exceeded retry limit, last status: 429",
            "error 4290",
            "",
        ]
    ),
    texts,
)
big_ints = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -0, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30, 3999]).map(
        lambda n: 10**n if n == 3999 else n
    ),
)
floats = st.floats(allow_nan=False, allow_infinity=False)
leaves = st.one_of(st.none(), st.booleans(), big_ints, floats, texts)
json_values = st.recursive(
    leaves,
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(texts, kids, max_size=4)),
    max_leaves=12,
)


def loose(s):
    """Mostly the right type, sometimes anything (wrong types in fields)."""
    wrong = st.one_of(leaves, json_values)
    return st.integers(0, 9).flatmap(lambda i: wrong if i == 0 else s)


counts = st.one_of(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    big_ints,
    floats,
    st.just(-1),
    st.just("12"),
    st.booleans(),
    st.none(),
)
ids = st.one_of(st.sampled_from(["toolu_01", "call_abc", "msg_01XYZ", "item_1"]), texts)
extras = st.dictionaries(
    st.sampled_from(
        [
            "uuid",
            "session_id",
            "parent_tool_use_id",
            "x",
            "extra",
            "type_",
            "ts",
            "model_call_id",
            "request_id",
            "thread_id",
            "msg",
            "id",
        ]
    )
    | texts,
    json_values,
    max_size=2,
)


@st.composite
def record(draw, required: dict, fields: dict):
    """All fields present, then a few dropped (missing fields) and extra keys mixed in."""
    base = draw(st.fixed_dictionaries({**required, **fields}))
    for key in draw(st.lists(st.sampled_from(sorted(fields)), max_size=3)) if fields else ():
        base.pop(key, None)
    more = draw(extras)
    return {**more, **base} if draw(st.integers(0, 3)) else {**base, **more}


# claude ----------------------------------------------------------------------------------------

claude_usage = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": counts,
        "output_tokens": counts,
        "cache_read_input_tokens": counts,
        "cache_creation_input_tokens": counts,
        "service_tier": texts,
    },
)
claude_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text")}, optional={"text": loose(texts)}),
    st.fixed_dictionaries(
        {"type": st.just("thinking")}, optional={"thinking": loose(texts), "signature": texts}
    ),
    st.fixed_dictionaries({"type": st.just("redacted_thinking")}, optional={"data": texts}),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["tool_use", "server_tool_use"])},
        optional={
            "id": loose(ids),
            "name": loose(st.sampled_from(["Bash", "Read", ""])),
            "input": json_values,
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_result")},
        optional={
            "tool_use_id": loose(ids),
            "is_error": loose(st.booleans()),
            "content": st.one_of(
                texts,
                st.lists(
                    st.fixed_dictionaries(
                        {"type": st.sampled_from(["text", "image"])},
                        optional={"text": loose(texts)},
                    ),
                    max_size=3,
                ),
                json_values,
            ),
        },
    ),
    st.fixed_dictionaries({"type": loose(st.sampled_from(["image", "document", "new_block"]))}),
    json_values,
)
claude_content = st.one_of(texts, st.lists(claude_block, max_size=4), json_values)
claude_records = st.one_of(
    record(
        {"type": st.just("system")},
        {
            "subtype": loose(
                st.sampled_from(
                    [
                        "init",
                        "compact_boundary",
                        "task_started",
                        "hook_response",
                        "session_start",
                        "status",
                        "new_thing",
                    ]
                )
            ),
            "session_id": loose(ids),
            "tools": st.lists(texts, max_size=3),
            "model": loose(texts),
            "description": loose(texts),
        },
    ),
    record(
        {"type": st.just("assistant")},
        {
            "message": loose(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "model": loose(st.sampled_from(["claude-sonnet-4-5", "<synthetic>", ""])),
                        "id": loose(ids),
                        "content": claude_content,
                        "usage": loose(claude_usage),
                    },
                )
            ),
            "error": st.integers(0, 3).flatmap(
                lambda i: (
                    st.none()
                    if i
                    else loose(
                        st.sampled_from(
                            [
                                "rate_limit",
                                "billing_error",
                                "server_error",
                                "authentication_failed",
                                "unknown",
                                "",
                            ]
                        )
                    )
                )
            ),
            "parent_tool_use_id": loose(ids),
            "session_id": ids,
        },
    ),
    record(
        {"type": st.just("user")},
        {
            "message": loose(
                st.fixed_dictionaries(
                    {"role": st.just("user")}, optional={"content": claude_content}
                )
            ),
            "session_id": ids,
        },
    ),
    record(
        {"type": st.just("result")},
        {
            "subtype": loose(
                st.sampled_from(
                    ["success", "error_max_turns", "error_during_execution", "errorish"]
                )
            ),
            "is_error": loose(st.booleans()),
            "result": loose(error_messages),
            "usage": loose(claude_usage),
            "total_cost_usd": counts,
            "modelUsage": loose(st.dictionaries(texts, json_values, max_size=2)),
            "num_turns": counts,
            "errors": loose(st.lists(loose(error_messages), max_size=3)),
            "api_error_status": loose(st.sampled_from([429, 500, 529, 401, 200, None])),
        },
    ),
    record(
        {"type": st.just("stream_event")},
        {
            "event": loose(
                st.fixed_dictionaries(
                    {
                        "type": loose(
                            st.sampled_from(["content_block_delta", "message_start", "ping"])
                        )
                    },
                    optional={
                        "delta": loose(
                            st.fixed_dictionaries(
                                {
                                    "type": loose(
                                        st.sampled_from(
                                            ["text_delta", "thinking_delta", "input_json_delta"]
                                        )
                                    )
                                },
                                optional={"text": loose(texts), "thinking": loose(texts)},
                            )
                        )
                    },
                )
            )
        },
    ),
    record(
        {"type": st.just("rate_limit_event")},
        {
            "rate_limit_info": loose(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "status": loose(
                            st.sampled_from(["allowed", "rejected", "allowed_warning"])
                        ),
                        "rateLimitType": loose(st.sampled_from(["five_hour", "seven_day"])),
                    },
                )
            )
        },
    ),
    record({"type": st.just("conversation_reset")}, {}),
)

# cursor ----------------------------------------------------------------------------------------

cursor_result = st.dictionaries(
    st.sampled_from(["success", "error", "rejected", "failure"]),
    loose(
        st.fixed_dictionaries(
            {},
            optional={
                f: loose(texts)
                for f in (
                    "command",
                    "reason",
                    "content",
                    "stdout",
                    "resultForModel",
                    "diffString",
                    "output",
                    "stderr",
                    "message",
                    "error",
                )
            },
        )
    ),
    max_size=2,
)
cursor_tool_body = st.fixed_dictionaries(
    {},
    optional={
        "args": loose(
            st.fixed_dictionaries({}, optional={"path": texts, "toolName": loose(texts)})
        ),
        "result": loose(cursor_result),
        "name": loose(texts),
        "arguments": json_values,
    },
)
cursor_records = st.one_of(
    record(
        {"type": st.just("system")},
        {
            "subtype": loose(
                st.sampled_from(["init", "background_shell_timeout", "task_notification"])
            ),
            "model": loose(texts),
            "session_id": loose(ids),
            "apiKeySource": texts,
        },
    ),
    record(
        {"type": st.sampled_from(["user", "assistant"])},
        {
            "message": loose(
                st.fixed_dictionaries({}, optional={"role": texts, "content": claude_content})
            ),
            "session_id": ids,
        },
    ),
    record(
        {"type": st.just("thinking")},
        {"subtype": loose(st.sampled_from(["delta", "completed"])), "text": loose(texts)},
    ),
    record(
        {"type": st.just("tool_call")},
        {
            "subtype": loose(st.sampled_from(["started", "completed", "updated"])),
            "call_id": loose(ids),
            "model_call_id": ids,
            "tool_call": loose(
                st.dictionaries(
                    st.sampled_from(
                        [
                            "readToolCall",
                            "shellToolCall",
                            "mcpToolCall",
                            "function",
                            "ToolCall",
                            "editToolCall",
                            "weird",
                        ]
                    ),
                    loose(cursor_tool_body),
                    max_size=2,
                )
            ),
        },
    ),
    record(
        {"type": st.sampled_from(["connection", "retry", "interaction_query"])},
        {
            "subtype": loose(
                st.sampled_from(
                    ["reconnecting", "reconnected", "starting", "resuming", "request", "response"]
                )
            ),
            "attempt": loose(st.one_of(counts, st.just(2**70))),
            "query_type": loose(
                st.sampled_from(["createPlanRequestQuery", "askQuestionRequestQuery"])
            ),
            "query": loose(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "createPlanRequestQuery": loose(
                            st.fixed_dictionaries(
                                {},
                                optional={
                                    "args": loose(
                                        st.fixed_dictionaries({}, optional={"plan": loose(texts)})
                                    )
                                },
                            )
                        ),
                    },
                )
            ),
            "result": loose(
                st.dictionaries(
                    st.sampled_from(["approved", "rejected"]),
                    loose(st.fixed_dictionaries({}, optional={"reason": loose(texts)})),
                    max_size=2,
                )
            ),
            "timestamp_ms": counts,
        },
    ),
    record(
        {"type": st.just("result")},
        {
            "subtype": loose(st.just("success")),
            "is_error": loose(st.booleans()),
            "result": loose(error_messages),
            "request_id": ids,
            "duration_ms": counts,
            "usage": loose(
                st.fixed_dictionaries(
                    {},
                    optional={
                        k: counts
                        for k in (
                            "inputTokens",
                            "outputTokens",
                            "cacheReadTokens",
                            "cacheWriteTokens",
                        )
                    },
                )
            ),
        },
    ),
)

# codex -----------------------------------------------------------------------------------------

codex_item = st.fixed_dictionaries(
    {
        "type": loose(
            st.sampled_from(
                [
                    "agent_message",
                    "assistant_message",
                    "reasoning",
                    "command_execution",
                    "mcp_tool_call",
                    "web_search",
                    "file_change",
                    "todo_list",
                    "plan",
                    "collab_tool_call",
                    "error",
                    "new_item",
                ]
            )
        )
    },
    optional={
        "id": loose(ids),
        "text": loose(texts),
        "command": loose(texts),
        "aggregated_output": loose(texts),
        "exit_code": loose(st.sampled_from([0, 1, 127, -1])),
        "status": loose(st.sampled_from(["completed", "failed", "declined", "in_progress"])),
        "tool": loose(texts),
        "arguments": json_values,
        "query": loose(texts),
        "result": loose(st.fixed_dictionaries({}, optional={"content": claude_content})),
        "error": loose(st.fixed_dictionaries({}, optional={"message": loose(error_messages)})),
        "changes": loose(
            st.lists(
                loose(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "path": loose(texts),
                            "kind": loose(st.sampled_from(["add", "update", "delete"])),
                            "diff": loose(texts),
                        },
                    )
                ),
                max_size=3,
            )
        ),
        "items": loose(
            st.lists(
                loose(
                    st.fixed_dictionaries(
                        {}, optional={"text": loose(texts), "completed": loose(st.booleans())}
                    )
                ),
                max_size=3,
            )
        ),
        "message": loose(error_messages),
        "action": loose(
            st.fixed_dictionaries(
                {"type": loose(st.sampled_from(["search", "open_page", "find_in_page", "other"]))},
                optional={
                    "query": loose(texts),
                    "queries": loose(st.lists(loose(texts), max_size=3)),
                    "url": loose(texts),
                    "pattern": loose(texts),
                },
            )
        ),
        "prompt": loose(texts),
        "receiver_thread_ids": loose(st.lists(loose(ids), max_size=2)),
        "agents_states": loose(
            st.dictionaries(
                ids,
                loose(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "status": loose(
                                st.sampled_from(
                                    [
                                        "pending_init",
                                        "running",
                                        "completed",
                                        "errored",
                                        "shutdown",
                                        "not_found",
                                    ]
                                )
                            ),
                            "message": loose(texts),
                        },
                    )
                ),
                max_size=3,
            )
        ),
    },
)
codex_usage = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": counts,
        "cached_input_tokens": counts,
        "output_tokens": counts,
        "reasoning_output_tokens": counts,
    },
)
legacy_msg = st.fixed_dictionaries(
    {
        "type": loose(
            st.sampled_from(
                [
                    "session_configured",
                    "task_started",
                    "task_complete",
                    "agent_message",
                    "agent_reasoning",
                    "agent_reasoning_raw_content",
                    "exec_command_begin",
                    "exec_command_end",
                    "patch_apply_begin",
                    "patch_apply_end",
                    "mcp_tool_call_begin",
                    "mcp_tool_call_end",
                    "web_search_begin",
                    "web_search_end",
                    "token_count",
                    "error",
                    "stream_error",
                    "turn_aborted",
                    "turn_diff",
                    "background_event",
                    "plan_update",
                    "brand_new",
                ]
            )
        )
    },
    optional={
        "message": loose(error_messages),
        "text": loose(texts),
        "call_id": loose(ids),
        "command": json_values,
        "exit_code": loose(st.sampled_from([0, 1, 2])),
        "aggregated_output": loose(texts),
        "stdout": loose(texts),
        "stderr": loose(texts),
        "success": loose(st.booleans()),
        "changes": json_values,
        "model": loose(texts),
        "last_agent_message": loose(texts),
        "unified_diff": loose(texts),
        "reason": loose(texts),
        "invocation": loose(
            st.fixed_dictionaries({}, optional={"tool": loose(texts), "arguments": json_values})
        ),
        "result": loose(
            st.one_of(
                st.fixed_dictionaries(
                    {
                        "Ok": loose(
                            st.fixed_dictionaries(
                                {},
                                optional={
                                    "content": claude_content,
                                    "isError": loose(st.booleans()),
                                },
                            )
                        )
                    }
                ),
                st.fixed_dictionaries({"Err": loose(texts)}),
            )
        ),
        "info": loose(
            st.fixed_dictionaries({}, optional={"total_token_usage": loose(codex_usage)})
        ),
        "input_tokens": counts,
        "output_tokens": counts,
        "query": loose(texts),
        "session_id": loose(ids),
    },
)
codex_records = st.one_of(
    record(
        {"type": st.sampled_from(["thread.started", "session.created"])}, {"thread_id": loose(ids)}
    ),
    record({"type": st.just("turn.started")}, {}),
    record({"type": st.just("turn.completed")}, {"usage": loose(codex_usage)}),
    record(
        {"type": st.just("turn.failed")},
        {"error": loose(st.fixed_dictionaries({}, optional={"message": loose(error_messages)}))},
    ),
    record({"type": st.just("error")}, {"message": loose(error_messages)}),
    record(
        {"type": st.sampled_from(["item.started", "item.updated", "item.completed"])},
        {"item": loose(codex_item)},
    ),
    record(
        {"type": st.sampled_from(["item.plan.delta", "request_user_input", "thread.x"])},
        {"delta": loose(texts)},
    ),
    st.fixed_dictionaries({"id": loose(ids), "msg": legacy_msg}),
    st.fixed_dictionaries({"prompt": loose(texts)}),
    st.fixed_dictionaries(
        {"model": loose(texts)},
        optional={"provider": texts, "sandbox": texts, "approval": texts, "workdir": texts},
    ),
)

records = st.one_of(claude_records, cursor_records, codex_records)


@st.composite
def json_line(draw, rec=records) -> bytes:
    value = draw(rec)
    ascii_only = draw(st.booleans())
    text = json.dumps(
        value, ensure_ascii=ascii_only, separators=draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    )
    if draw(st.integers(0, 9)) == 0:
        text = " " + text + "\t"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # a lone surrogate written raw is invalid UTF-8; mostly escape it instead
        if draw(st.integers(0, 3)):
            text = json.dumps(value, ensure_ascii=True)
        return text.encode("utf-8", "surrogatepass")


_NUMERIC_LINES = (
    b'{"type":"result","total_cost_usd":NaN}',
    b'{"a":Infinity}',
    b"[-Infinity]",
    b'{"type":"turn.completed","usage":{"input_tokens":1e400}}',
    b"[1e400]",
    b"[-1e-400]",
    b'{"x":1E+2,"y":-0,"z":-0.0,"w":0.1e-5}',
    b"[01]",
    b"[1.]",
    b"[.5]",
    b"[+1]",
    b'{"type":"turn.completed","usage":{"input_tokens":' + b"9" * 4001 + b"}}",
    b'{"type":"turn.completed","usage":{"input_tokens":' + b"9" * 4000 + b"}}",
    b'{"type":"turn.completed","usage":{"input_tokens":' + b"9" * 25 + b',"output_tokens":1.5}}',
    b"[" + b"1" * 5000 + b"]",
    b"[0." + b"1" * 5000 + b"]",
    b"[1" + b"0" * 400 + b".0]",
)


@st.composite
def hostile_line(draw) -> bytes:
    kind = draw(st.integers(0, 17))
    if kind == 0:
        return draw(st.binary(max_size=30))
    if kind == 1:  # truncated JSON
        line = draw(json_line())
        return line[: draw(st.integers(0, max(0, len(line) - 1)))]
    if kind == 2:  # deep nesting around and beyond the default max_depth
        n = draw(st.sampled_from([63, 64, 65, 100, 1000]))
        opener = draw(st.sampled_from([b"[", b'{"a":']))
        closer = b"]" if opener == b"[" else b"}"
        tail = b"1" if opener != b"[" else b""
        return opener * n + tail + closer * draw(st.sampled_from([0, n]))
    if kind == 3:
        esc = draw(
            st.sampled_from(
                [
                    b"\\ud800",
                    b"\\udfff",
                    b"\\ud83d\\ude00",
                    b"\\ud83dx",
                    b"\\uDBFF\\uDFFF",
                    b"\\ud800\\ud800",
                    b"\\u0000",
                ]
            )
        )
        t = draw(st.sampled_from([b"assistant", b"turn.failed", b"error", b"result"]))
        return (
            b'{"type":"'
            + t
            + b'","message":"'
            + esc
            + b'","result":"'
            + esc
            + b'","error":{"message":"'
            + esc
            + b'"},"k'
            + esc
            + b'":1}'
        )
    if kind == 4:
        return _NUMERIC_LINES[draw(st.integers(0, len(_NUMERIC_LINES) - 1))]
    if kind == 5:  # duplicate keys
        return draw(
            st.sampled_from(
                [
                    b'{"type":"x","type":"turn.started"}',
                    b'{"type":"turn.started","type":"x"}',
                    b'{"a":1,"b":2,"a":3}',
                    b'{"type":"error","message":"a","message":"rate limit"}',
                    b'{"type":"assistant","message":{"content":"a"},"message":{"content":[{"type":"text","text":"b"}]}}',
                ]
            )
        )
    if kind == 6:
        return BOM + draw(json_line())
    if kind == 7:  # CR inside
        line = draw(json_line())
        i = draw(st.integers(0, len(line)))
        return line[:i] + b"\r" + line[i:]
    if kind == 8:
        return draw(st.sampled_from([b"", b"   ", b"\t", b"\x0b", b"\x0c", b"\r", b" \r "]))
    if kind == 9:  # banners / non-JSON text
        return draw(
            st.sampled_from(
                [
                    b"Reading prompt from stdin...",
                    b"[2025-01-01T00:00:00Z] WARN x",
                    b"{not json",
                    b"[ERROR] boom",
                    b"true",
                    b"null",
                    b"123abc",
                    b'"a"',
                    b"-",
                    b"\xc3\xa9t\xc3\xa9",
                ]
            )
        )
    if kind == 10:  # escaped keys / values that decide the mapping
        return draw(
            st.sampled_from(
                [
                    b'{"ty\\u0070e":"turn.started"}',
                    b'{"type":"turn\\u002estarted"}',
                    b'{"type":"turn.started\\u0000"}',
                    b'{"type":"\\u0074urn.completed","usage":{"input_tokens":5}}',
                    b'{"type":"system","subtype":"in\\u0069t","tools":[]}',
                    b'{"type":"assistant","message":{"content":[{"type":"te\\u0078t","text":"\\n\\t\\/\\b\\f\\r"}]}}',
                ]
            )
        )
    if kind == 11:  # raw control characters / invalid escapes
        return draw(
            st.sampled_from(
                [
                    b'{"a":"\x01"}',
                    b'{"a":"\\x41"}',
                    b'{"a":"\\u12"}',
                    b'{"a":"\\',
                    b'{"a":"\t"}',
                    b'["\x7f"]',
                    b'{"a"\x00:1}',
                ]
            )
        )
    if kind == 12:  # invalid UTF-8 inside JSON
        bad = draw(
            st.sampled_from(
                [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80"]
            )
        )
        return b'{"type":"assistant","message":{"content":"' + bad + b'"}}'
    if kind == 13:  # JSON with surrounding whitespace, other top-level values
        return draw(
            st.sampled_from(
                [
                    b" [] ",
                    b"\t{}\t",
                    b"[]x",
                    b"{} {}",
                    b"[[]]]",
                    b'"\\ud800"',
                    b"[\r1\r]",
                    b"\x0c{}",
                    b"{}\x0b",
                ]
            )
        )
    if kind == 14:
        return json.dumps(draw(json_values), ensure_ascii=draw(st.booleans())).encode(
            "utf-8", "surrogatepass"
        )
    if kind == 15:  # huge-ish node counts
        return b"[" + b",".join([b"0"] * draw(st.sampled_from([10, 1000]))) + b"]"
    if kind == 16:
        return draw(st.text(max_size=20)).encode("utf-8")
    # floats near the edges of the representable range, odd spellings
    f = draw(
        st.sampled_from(
            [
                b"5e-324",
                b"2.2250738585072014e-308",
                b"1.7976931348623157e308",
                b"1.7976931348623159e308",
                b"4.9e-324",
                b"1e-400",
                b"123456789012345678901234567890.5",
                b"0.30000000000000004",
                b"1E22",
                b"1e23",
                b"-0e0",
                b"9007199254740993",
            ]
        )
    )
    return (
        b'{"type":"turn.completed","usage":{"input_tokens":' + f + b',"output_tokens":' + f + b"}}"
    )


lines = st.one_of(json_line(), json_line(), hostile_line())
endings = st.sampled_from([b"\n", b"\n", b"\r\n", b"\n\n", b"\r\r\n"])


@st.composite
def streams(draw) -> bytes:
    parts = draw(st.lists(st.tuples(lines, endings), max_size=12))
    out = b"".join(line + end for line, end in parts)
    if draw(st.booleans()) and parts:
        out = out[: len(out) - len(parts[-1][1])]  # no final newline
    if draw(st.integers(0, 7)) == 0:
        out = BOM + out
    return out


budget_options = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "max_line_bytes": st.integers(1, 200),
            "max_depth": st.integers(1, 8),
            "max_nodes": st.integers(1, 40),
        },
    ),
)


# -- (a) realistic + hostile streams -----------------------------------------------------------


@given(data=streams())
def test_streams_native_equals_reference(data: bytes):
    note(repr(data))
    for dialect in DIALECTS:
        check_stream(data, dialect)


@given(data=streams(), budgets=budget_options)
def test_streams_with_budgets(data: bytes, budgets: dict):
    note(repr(data))
    for dialect in DIALECTS:
        check_stream(data, dialect, **budgets)


@given(rec=records, ascii_only=st.booleans())
def test_single_record_every_dialect(rec, ascii_only: bool):
    data = json.dumps(rec, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    for dialect in DIALECTS:
        ev = check_stream(data, dialect)
        assert ev
        # a parsed object line keeps its value (surrogates repaired to U+FFFD)
        if ev[-1]["parsed"] is not None:
            assert isinstance(ev[-1]["parsed"], dict)


@given(line=hostile_line())
def test_hostile_line_alone(line: bytes):
    for dialect in DIALECTS:
        check_stream(line, dialect)


# -- (b) random chunking ------------------------------------------------------------------------


def feed_all(impl, data: bytes, cuts: list[int], dialect: str, budgets: dict) -> list[dict]:
    n = impl.Normalizer(dialect, **budgets)
    out: list[dict] = []
    prev = 0
    for c in [*cuts, len(data)]:
        out += n.feed(data[prev:c])
        prev = c
    out += n.finish()
    return out


@st.composite
def chunked(draw):
    data = draw(st.one_of(streams(), st.binary(max_size=80)))
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    # bias towards awkward points: inside CRLF, inside multi-byte sequences, after a BOM byte
    awkward = [i for i in range(1, len(data)) if data[i] in (0x0A, 0xBB, 0xBF) or data[i] >= 0x80]
    if awkward:
        cuts = sorted(cuts + draw(st.lists(st.sampled_from(awkward), max_size=6)))
    return data, cuts


@given(case=chunked(), dialect=st.sampled_from(DIALECTS), budgets=budget_options)
def test_random_chunking_gives_normalize_events(case, dialect: str, budgets: dict):
    data, cuts = case
    note(f"data={data!r} cuts={cuts}")
    whole_native = checkfu_fast.normalize(data, dialect, **budgets)
    whole_ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert_same(whole_native, whole_ref, data, "normalize")
    for name, impl in IMPLS.items():
        got = feed_all(impl, data, cuts, dialect, budgets)
        assert_same(
            got, whole_native if name == "native" else whole_ref, data, f"{name} chunked {cuts}"
        )


@given(data=streams(), dialect=st.sampled_from(DIALECTS))
def test_byte_at_a_time(data: bytes, dialect: str):
    want = checkfu_fast.reference.normalize(data, dialect)
    for name, impl in IMPLS.items():
        assert_same(feed_all(impl, data, list(range(len(data))), dialect, {}), want, data, name)


# -- (c) arbitrary bytes -------------------------------------------------------------------------

byte_soup = st.lists(
    st.one_of(
        st.binary(max_size=8),
        st.sampled_from(
            [
                b"\n",
                b"\r",
                b"\r\n",
                b"{",
                b"}",
                b"[",
                b"]",
                b'"',
                b":",
                b",",
                b"\\",
                b"\\u",
                b"d800",
                b" ",
                BOM,
                b"\xc3",
                b"\xa9",
                b"\xf0\x9f",
                b"1",
                b"-",
                b"e",
                b"true",
                b'"type"',
                b'"turn.started"',
            ]
        ),
    ),
    max_size=40,
).map(b"".join)


@given(data=st.one_of(st.binary(max_size=200), byte_soup), dialect=st.sampled_from(DIALECTS))
def test_arbitrary_bytes_never_raise_and_lose_nothing(data: bytes, dialect: str):
    note(repr(data))
    check_stream(data, dialect)


@given(data=byte_soup, budgets=budget_options)
def test_arbitrary_bytes_with_budgets(data: bytes, budgets: dict):
    for dialect in DIALECTS:
        check_stream(data, dialect, **budgets)


def test_canon_distinguishes_what_eq_hides():
    assert canon([0.0]) != canon([-0.0])
    assert canon([1]) != canon([1.0])
    assert canon([True]) != canon([1])
    assert canon({"a": 1, "b": 2}) != canon({"b": 2, "a": 1})


# -- hand-picked edge cases the generators reach rarely ----------------------------------------

EDGE_CASES = {
    "auto_hold_63_then_decisive": b'{"type":"assistant"}\n' * 63 + b'{"type":"turn.started"}\n',
    "auto_hold_64_then_decisive": b'{"type":"assistant"}\n' * 64 + b'{"type":"turn.started"}\n',
    "auto_hold_bytes": (b'"' + b"a" * (1 << 19) + b'"\n') * 2 + b'{"type":"turn.started"}\n',
    "auto_hold_bytes_under": (b'"' + b"a" * ((1 << 19) - 3) + b'"\n') * 2
    + b'{"type":"turn.started"}\n',
    "auto_held_too_long": b"x" * 50 + b'\n{"type":"turn.started"}\n',
    "usage_i64_max_plus_float": b'{"type":"turn.completed","usage":'
    b'{"input_tokens":9223372036854775807,'
    b'"cached_input_tokens":1.5,"output_tokens":9223372036854775807}}',
    "usage_claude_overflowing_sum": b'{"type":"result","usage":{"input_tokens":9223372036854775807,'
    b'"cache_read_input_tokens":9223372036854775807,"cache_creation_input_tokens":0.5,'
    b'"output_tokens":1e308},"total_cost_usd":1e308}',
    "usage_float_sum": b'{"type":"result","usage":{"input_tokens":0.1,'
    b'"cache_read_input_tokens":0.2,'
    b'"cache_creation_input_tokens":0.3,"output_tokens":1}}',
    "usage_negative_zero": b'{"type":"result","usage":{"input_tokens":-0.0,"output_tokens":-0},'
    b'"total_cost_usd":-0.0}',
    "usage_beyond_i64": b'{"type":"turn.completed","usage":{"input_tokens":9223372036854775808,'
    b'"output_tokens":18446744073709551616}}',
    "surrogate_pair_key": b'{"\\ud83d\\ude00":1,"type":"x"}',
    "lone_surrogate_in_type": b'{"type":"turn.started\\ud800"}',
    "repair_count": b'{"a":"\\ud800\\udc00\\udc00\\ud800", "\\ud800":"\\udfff"}',
    "duplicate_key_order": b'{"a":1,"b":2,"a":3}',
    "nul_line": b"\x00\n",
    "vt_ff_around_json": b"\x0b{}\x0b\n\x0c[]\x0c\n",
    "int_4000_digits": b"[" + b"1" * 4000 + b"]",
    "int_4001_digits_negative": b"[-" + b"1" * 4001 + b"]",
    "float_5000_digits": b"[" + b"1" * 5000 + b".5]",
    "huge_exponent": b"[1e99999999999999999999]",
    "tiny_exponent": b"[1e-99999999999999999999]",
    "zero_huge_exponent": b"[0e99999]",
}


@pytest.mark.parametrize("name", list(EDGE_CASES))
@pytest.mark.parametrize("budgets", [{}, {"max_line_bytes": 40}], ids=["default", "short_lines"])
def test_edge_cases_agree(name: str, budgets: dict):
    data = EDGE_CASES[name]
    for dialect in DIALECTS:
        check_stream(data, dialect, **budgets)
        want = checkfu_fast.reference.normalize(data, dialect, **budgets)
        for label, impl in IMPLS.items():
            got = feed_all(impl, data, list(range(0, len(data), 4096)), dialect, budgets)
            assert_same(got, want, data[:200], f"{label} chunked")


def test_auto_hold_limits():
    ev = checkfu_fast.normalize(EDGE_CASES["auto_hold_63_then_decisive"])
    assert {e["dialect"] for e in ev} == {"codex"}
    assert "dialect_fallback" not in {e["subtype"] for e in ev}
    # nothing decisive among the first 64 lines: fallback is announced once, first
    ev = checkfu_fast.normalize(EDGE_CASES["auto_hold_64_then_decisive"])
    assert ev[0]["subtype"] == "dialect_fallback" and ev[0]["position"] == 0
    assert [e["subtype"] for e in ev].count("dialect_fallback") == 1
    assert len({e["dialect"] for e in ev}) == 1
