"""oneshot-v1 section 4: harness stdout (+ the process outcome) -> normalized observations.

Deterministic: the same contract, request, stdout and process outcome give the same
observations, so vectors replay byte for byte. Every rule is in docs/oneshot.md section 4.
"""

from __future__ import annotations

import hashlib
import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from .contract import compact_json
from .plan import TurnRequest

Observation = dict[str, Any]

MAX_CONTENT = 262_144
MAX_MESSAGE = 4_096
MAX_NAME = 256
MAX_COUNT = 1_000_000
MAX_WALL_MS = 604_800_000

FRAMING_ERRORS = {
    "invalid_utf8",
    "invalid_json",
    "line_too_long",
    "too_deep",
    "too_many_nodes",
    "stream_is_utf16",
}
NON_TERMINAL_ERRORS = FRAMING_ERRORS | {"retry", "item_error"}

SHELL_TOOLS = {
    "bash",
    "shell",
    "command_execution",
    "exec_command",
    "run_terminal_cmd",
    "run_shell_command",
    "execute_command",
    "terminal",
    "local_shell",
}
FILESYSTEM_TOOLS = {
    "read",
    "write",
    "edit",
    "multiedit",
    "glob",
    "grep",
    "ls",
    "list",
    "notebookedit",
    "notebookread",
    "view",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "search_files",
    "delete",
    "delete_file",
    "str_replace_based_edit_tool",
    "apply_patch",
    "file_change",
}
STOP_REASONS = {
    "end_turn": "end_turn",
    "stop": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "end_turn",
    "toolUse": "end_turn",
    "pause_turn": "end_turn",
    "completed": "end_turn",
    "max_tokens": "max_tokens",
    "length": "max_tokens",
    "max_turn_requests": "max_turn_requests",
    "max_turns": "max_turn_requests",
    "refusal": "refusal",
    "content_filter": "refusal",
    "cancelled": "interrupted",
    "canceled": "interrupted",
    "aborted": "interrupted",
    "interrupted": "interrupted",
}
DISPOSITIONS = {
    "completed": "completed",
    "failed": "failed",
    "error": "failed",
    "stopped": "canceled",
    "killed": "canceled",
    "canceled": "canceled",
    "cancelled": "canceled",
}
FILE_EVENTS = {"add": "create", "delete": "delete", "update": "modify"}
_MCP_KINDS = ("mcp_tool_call", "mcp_tool_call_begin", "mcpToolCall")
# legacy codex ({"id","msg"}) begin lines -> the current item type naming the same tool
_LEGACY_CODEX_TOOLS = {
    "exec_command_begin": "command_execution",
    "patch_apply_begin": "file_change",
}
_WS = re.compile(r"\s")


def digest_id(prefix: str, native_id: str) -> str:
    """``prefix`` + the first 32 hex digits of SHA-256 of the native id's UTF-8 bytes."""
    return prefix + hashlib.sha256(native_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def cut(text: str, limit: int) -> str:
    """``text`` if it fits, else cut to leave room for a visible marker (code point boundary)."""
    if len(text) <= limit:
        return text
    keep = limit
    while True:
        marker = f"…[truncated {len(text) - keep} chars]"
        if keep + len(marker) <= limit:
            return text[:keep] + marker
        keep = limit - len(marker)


def microusd(cost: float) -> int:
    """USD -> micro-USD, half-even, in decimal from the float's shortest repr."""
    return int((Decimal(repr(cost)) * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def capability_set(contract: dict[str, Any]) -> dict[str, Any]:
    structured = contract["output_mode"] == "stream_json"
    resumable = contract.get("resume_flag") is not None
    return {
        "event_fidelity": "structured" if structured else "text_only",
        "continuation": "next_turn" if resumable else "rebuild_only",
        "checkpoint": "disk_only" if resumable else "conversation_only",
        "approval_delivery": "unsupported",
        "interrupt": "kill_only",
        "mid_run_input": "unsupported",
        "model_control": "compatible"
        if contract.get("model_wire_dialects") is not None
        else "opaque",
        "usage_authority": "harness_reported" if structured else "unknown",
        "multiagent_shared_environment": False,
        "subagents": "observed" if structured else "flatten",
    }


def _error(kind: str, message: str) -> dict[str, str]:
    return {"type": kind, "message": cut(message, MAX_MESSAGE)}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _Turn:
    """Counters for ``observation.finished.turn``."""

    def __init__(self) -> None:
        self.shell = 0
        self.filesystem = 0
        self.mcp = 0
        self.tools = 0
        self.model_ids: set[str] = set()

    def tool(self, name: str, native_kind: str | None) -> None:
        self.tools += 1
        low = name.lower()
        if low in SHELL_TOOLS:
            self.shell += 1
        elif low in FILESYSTEM_TOOLS:
            self.filesystem += 1
        elif low.startswith("mcp_") or native_kind in _MCP_KINDS:
            self.mcp += 1

    def payload(self, wall_time_ms: int) -> dict[str, Any]:
        return {
            "execution": "shell" if self.tools else "model_only",
            "shell_commands": min(self.shell, MAX_COUNT),
            "filesystem_commands": min(self.filesystem, MAX_COUNT),
            "mcp_calls": min(self.mcp, MAX_COUNT),
            "model_calls": min(len(self.model_ids), MAX_COUNT),
            "wall_time_ms": min(max(wall_time_ms, 0), MAX_WALL_MS),
        }


def _native_kind(event: dict[str, Any]) -> str | None:
    """The native item/tool type behind a tool event (codex item type, cursor *ToolCall key)."""
    parsed = _dict(event.get("parsed"))
    dialect = event.get("dialect")
    if dialect == "codex":
        item = parsed.get("item")
        if isinstance(item, dict):
            return _str(item.get("type"))
        return _str(_dict(parsed.get("msg")).get("type"))
    if dialect == "cursor":
        for key in _dict(parsed.get("tool_call")):
            if key.endswith("ToolCall"):
                return key
    return None


def _provider_call(event: dict[str, Any], tool: dict[str, Any]) -> tuple[str, Any]:
    """The tool name and arguments as the harness reports them. The events/v1 vocabulary calls
    a codex ``command_execution`` item tool ``shell`` with the command string as arguments;
    the harness's own name for it is the item type, and its arguments the item's command."""
    name = tool.get("name") if isinstance(tool.get("name"), str) else ""
    args = tool.get("arguments")
    if event.get("dialect") == "codex":
        item = _dict(_dict(event.get("parsed")).get("item"))
        if item.get("type") == "command_execution":
            return "command_execution", {"command": item.get("command")}
        if item.get("type") == "web_search":
            return name or "web_search", {"query": item.get("query")}
        msg = _dict(_dict(event.get("parsed")).get("msg"))
        legacy = _LEGACY_CODEX_TOOLS.get(msg.get("type"))  # type: ignore[arg-type]
        if legacy is not None:  # the same tools under their current names; args = the line
            return legacy, {k: v for k, v in msg.items() if k not in ("type", "call_id")}
    return name or "unknown", args


def _pi_ended_in_error(e: dict[str, Any]) -> bool:
    """pi's ``turn_end`` / ``agent_end`` repeat the turn's last assistant message; when that
    message stopped with ``error`` or ``aborted`` they are not a successful outcome (its
    ``message_end`` gave the error event). After a successful auto-retry they are."""
    if e.get("dialect") != "pi":
        return False
    parsed = _dict(e.get("parsed"))
    messages = parsed.get("messages")
    candidates = messages if isinstance(messages, list) else [parsed.get("message")]
    for m in reversed(candidates):
        m = _dict(m)
        if m.get("role") == "assistant":
            return m.get("stopReason") in ("error", "aborted")
    return False


def _opencode_part_id(e: dict[str, Any]) -> str | None:
    """An opencode text/reasoning part's own id: the native id of that event (its
    ``messageID``, one model call, is what ``model_calls`` counts)."""
    if e.get("dialect") != "opencode":
        return None
    return _str(_dict(_dict(e.get("parsed")).get("part")).get("id"))


def _codex_item_id(e: dict[str, Any]) -> str | None:
    """A codex item's own id: the native id of an agent_message / reasoning item (not a model
    call: one model call makes several items, so it is not counted in ``model_calls``)."""
    if e.get("dialect") != "codex":
        return None
    return _str(_dict(_dict(e.get("parsed")).get("item")).get("id"))


def _is_cursor_text(e: dict[str, Any]) -> bool:
    return (
        e.get("dialect") == "cursor"
        and e.get("kind") == "message"
        and e.get("subtype") == "text"
        and e.get("role") == "assistant"
    )


def _is_cursor_thinking_delta(e: dict[str, Any]) -> bool:
    return (
        e.get("dialect") == "cursor"
        and e.get("subtype") == "thinking"
        and e.get("kind") == "message"
        and e.get("delta") is True
    )


_MISSING: Any = object()  # the stream gives no result content: the field is omitted


def _content_blocks(result: Any) -> Any:
    """A result object's ``content`` (the content blocks) when it has one, else the result."""
    return result["content"] if isinstance(result, dict) and "content" in result else result


def _tool_result(event: dict[str, Any]) -> Any:
    """The result content exactly as the stream gives it (docs/oneshot.md, tool_result), or
    ``_MISSING`` when it gives none."""
    parsed = _dict(event.get("parsed"))
    tool = _dict(event.get("tool"))
    dialect = event.get("dialect")
    if dialect == "claude":
        for block in _dict(parsed.get("message")).get("content") or []:
            if (
                isinstance(block, dict)
                and str(block.get("type")).endswith("tool_result")  # also server tools
                and block.get("tool_use_id") == tool.get("id")
            ):
                return block.get("content", _MISSING)
    elif dialect == "codex":
        item = parsed.get("item")
        if isinstance(item, dict):
            kind = item.get("type")
            if kind == "command_execution":
                return item.get("aggregated_output", _MISSING)
            if kind == "mcp_tool_call":  # structured_content is not content
                return _content_blocks(item.get("result", _MISSING))
            if kind == "web_search":
                return _MISSING  # the item reports the query, no result content
        msg = _dict(parsed.get("msg"))
        if msg.get("type") == "exec_command_end":
            return msg.get("aggregated_output", msg.get("stdout", _MISSING))
        if msg.get("type") == "mcp_tool_call_end":
            result = msg.get("result", _MISSING)  # {"Ok": {content, isError}} or {"Err": text}
            if isinstance(result, dict) and len(result) == 1:
                return _content_blocks(result.get("Ok", result.get("Err", result)))
            return result
    elif dialect == "opencode":
        state = _dict(_dict(parsed.get("part")).get("state"))
        if "output" in state or "error" in state:
            return state.get("output") if state.get("status") != "error" else state.get("error")
    elif dialect == "pi":
        return _content_blocks(parsed.get("result", _MISSING))  # details are not content
    elif dialect == "cursor":
        call = _dict(parsed.get("tool_call"))
        for key, value in call.items():
            if key.endswith("ToolCall") and isinstance(value, dict) and "result" in value:
                return value["result"]
    elif dialect == "grok":
        if "rawOutput" in parsed:
            return parsed["rawOutput"]
        if "content" in parsed:
            return parsed["content"]
    text = event.get("text")
    return text if isinstance(text, str) else _MISSING


def _compaction_counts(parsed: dict[str, Any]) -> tuple[int, int] | None:
    pairs = (("pre_tokens", "post_tokens"), ("tokens_before", "tokens_after"))
    pairs += (("tokensBefore", "tokensAfter"),)
    for holder in (
        parsed,
        _dict(parsed.get("compact_metadata")),
        _dict(parsed.get("compactMetadata")),
        _dict(parsed.get("result")),
    ):
        for before_key, after_key in pairs:
            before, after = _int(holder.get(before_key)), _int(holder.get(after_key))
            if before is not None and after is not None:
                return before, after
    return None


def _stop_reason(final: dict[str, Any] | None, last_assistant: dict[str, Any] | None) -> str:
    candidates: list[Any] = []
    if final is not None:
        parsed = _dict(final.get("parsed"))
        for holder in (parsed, _dict(parsed.get("part"))):
            candidates += [
                holder.get("stop_reason"),
                holder.get("stopReason"),
                holder.get("reason"),
            ]
    if last_assistant is not None:
        message = _dict(_dict(last_assistant.get("parsed")).get("message"))
        candidates += [message.get("stop_reason"), message.get("stopReason")]
    for value in candidates:
        if isinstance(value, str):
            return STOP_REASONS.get(value, "end_turn")
    return "end_turn"


def _ending_from_error(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    err = _dict(event.get("error"))
    code = err.get("code") or ""
    message = err.get("message") if isinstance(err.get("message"), str) else code
    if code == "error_max_turns" or event.get("subtype") == "max_turns":
        return "finished", {"stop_reason": "max_turn_requests"}
    if event.get("subtype") == "aborted":
        return "finished", {"stop_reason": "interrupted"}
    kind = err.get("errorKind")
    if kind == "quota":
        return "retryable_failure", {"error": _error("model.platform_capacity_reached", message)}
    if kind == "transport":
        return "retryable_failure", {"error": _error("model.platform_supply_unavailable", message)}
    return "failed", {"error": _error("runtime.harness_failed", message)}


def _normalize(stdout: bytes, dialect: Any, implementation: str) -> list[dict[str, Any]]:
    if implementation == "reference":
        from .. import reference

        return reference.normalize(stdout, dialect)
    from .. import normalize

    return normalize(stdout, dialect)


class _Stream:
    """Maps events to observations and remembers what the ending needs."""

    def __init__(self, output_schema: Any) -> None:
        self.out: list[Observation] = []
        self.turn = _Turn()
        self.output_schema = output_schema
        self.last_main_message: str | None = None
        self.result_text: str | None = None
        self.final: dict[str, Any] | None = None  # last outcome event
        self.last_assistant: dict[str, Any] | None = None
        self.cumulative_cost: float | None = None
        self.turn_costs: list[float] = []
        self.message_costs: dict[str, float] = {}
        self.line_ids: dict[int, str] = {}
        self.skip_cursor_chunks = False
        self.cursor_thinking: list[dict[str, Any]] = []  # pending thinking deltas
        self.tool_inputs: dict[str, dict[str, Any]] = {}  # call id -> arguments (for Task)
        self.legacy_patches: dict[str, dict[str, Any]] = {}  # codex call id -> its changes

    def run(self, events: list[dict[str, Any]]) -> None:
        chunks = whole = False
        for e in events:
            if e.get("kind") == "usage" and isinstance(e.get("messageId"), str):
                self.line_ids.setdefault(e["position"], e["messageId"])
            if _is_cursor_text(e):
                if "timestamp_ms" in _dict(e.get("parsed")):
                    chunks = True
                else:
                    whole = True
        # cursor --stream-partial-output prints each text chunk as it arrives (lines with
        # timestamp_ms, some twice: with and without model_call_id) and then the whole segment
        # (a line without timestamp_ms). When a stream has both kinds the chunks are repeats.
        self.skip_cursor_chunks = chunks and whole
        index_in_line: dict[int, int] = {}
        for e in events:
            n = index_in_line.get(e["position"], 0)
            index_in_line[e["position"]] = n + 1
            if _is_cursor_thinking_delta(e):
                self.cursor_thinking.append(e)
                continue
            self.flush_cursor_thinking()
            self.event(e, n)
        self.flush_cursor_thinking()

    def flush_cursor_thinking(self) -> None:
        """cursor prints thinking only as deltas (then a text-less ``thinking/completed``):
        the run of deltas is one ``agent_thinking``."""
        if not self.cursor_thinking:
            return
        deltas, self.cursor_thinking = self.cursor_thinking, []
        text = "".join(e.get("text") or "" for e in deltas)
        if not text:
            return
        payload: dict[str, Any] = {"content": cut(text, MAX_CONTENT)}
        ids = [self.native_message_id(e) for e in deltas]
        mid = next((i for i in ids if i is not None), None)
        if mid is not None:
            payload["event_id"] = digest_id("evt_", mid)
        self.out.append({"type": "observation.agent_thinking", "payload": payload})

    def native_message_id(self, e: dict[str, Any]) -> str | None:
        found = self.line_ids.get(e["position"])
        if found is not None:
            return found
        parsed = _dict(e.get("parsed"))
        found = _str(_dict(parsed.get("message")).get("id"))
        if found is None and e.get("dialect") == "cursor":
            found = _str(parsed.get("model_call_id"))
        if found is None and e.get("dialect") == "opencode":
            found = _str(_dict(parsed.get("part")).get("messageID"))
        return found

    def event(self, e: dict[str, Any], n: int) -> None:
        kind, subtype = e.get("kind"), e.get("subtype")
        parsed = _dict(e.get("parsed"))
        subagent = e.get("parentToolUseId")
        sub = {"subagent": digest_id("subg_", subagent)} if isinstance(subagent, str) else {}
        if e.get("role") == "assistant" and not e.get("delta"):
            self.last_assistant = e
            mid = self.native_message_id(e)
            if mid is not None:
                self.turn.model_ids.add(mid)
        if kind == "message" and subtype in ("text", "thinking") and not e.get("delta"):
            if subtype == "text" and e.get("role") != "assistant":
                return
            if self.skip_cursor_chunks and _is_cursor_text(e) and "timestamp_ms" in parsed:
                return
            text = e.get("text") or ""
            if not text:
                return
            payload: dict[str, Any] = {"content": cut(text, MAX_CONTENT)}
            mid = _opencode_part_id(e) or self.native_message_id(e) or _codex_item_id(e)
            if mid is not None:
                payload["event_id"] = digest_id("evt_", mid)
            payload.update(sub)
            name = "agent_message" if subtype == "text" else "agent_thinking"
            self.out.append({"type": f"observation.{name}", "payload": payload})
            if subtype == "text" and not sub:
                self.last_main_message = payload["content"]
        elif kind == "tool_call" and subtype == "tool_use":
            tool = _dict(e.get("tool"))
            name, args = _provider_call(e, tool)
            self.turn.tool(name, _native_kind(e))
            if isinstance(tool.get("id"), str) and isinstance(tool.get("arguments"), dict):
                self.tool_inputs[tool["id"]] = tool["arguments"]
            msg = _dict(parsed.get("msg"))
            if e.get("dialect") == "codex" and msg.get("type") == "patch_apply_begin":
                self.legacy_patches[str(msg.get("call_id"))] = _dict(msg.get("changes"))
            payload = {
                "tool_use_id": self.tool_id(tool, e, n),
                "tool": cut("harness:" + _WS.sub("_", name), MAX_NAME),
                "args": args,
            }
            if name != "unknown":  # events/v1 names a tool the stream does not name "unknown"
                payload["provider_tool_name"] = cut(name, MAX_NAME)
            payload.update(sub)
            self.out.append({"type": "observation.tool_use", "payload": payload})
        elif kind == "message" and subtype == "tool_result":
            self.legacy_patch_applied(parsed)
            tool = _dict(e.get("tool"))
            payload = {"tool_use_id": self.tool_id(tool, e, n)}
            result = _tool_result(e)
            if result is not _MISSING:
                payload["result"] = result
            if tool.get("isError") is True:
                text = e.get("text") if isinstance(e.get("text"), str) else ""
                payload["error"] = _error("runtime.harness_failed", text or "tool failed")
            payload.update(sub)
            self.out.append({"type": "observation.tool_result", "payload": payload})
        elif kind == "status" and subtype == "file_change":
            self.file_change(parsed)
        elif kind == "status" and subtype == "compaction":
            counts = _compaction_counts(parsed)
            if counts is not None:
                self.out.append(
                    {
                        "type": "observation.context_compacted",
                        "payload": {
                            "strategy": "native",
                            "tokens_before": counts[0],
                            "tokens_after": counts[1],
                        },
                    }
                )
        elif kind == "status" and subtype == "subagent" and e.get("dialect") == "claude":
            self.subagent(parsed)
        elif kind == "usage":
            self.usage(e)
        if kind == "status" and subtype in ("result", "turn_completed"):
            if _pi_ended_in_error(e):
                return  # repeats a message whose error event came before: that one stands
            self.final = e
            if subtype == "result":
                self.result_text = self.final_text(parsed)
        elif kind == "error" and subtype not in NON_TERMINAL_ERRORS:
            self.final = e
            if parsed.get("type") == "result":  # an error result line still reports its text
                self.result_text = self.final_text(parsed)

    def tool_id(self, tool: dict[str, Any], e: dict[str, Any], n: int) -> str:
        native = tool.get("id")
        if isinstance(native, str) and native:
            return cut(native, MAX_NAME)
        return f"checkfu:{e['position']}:{n}"

    def final_text(self, parsed: dict[str, Any]) -> str | None:
        if self.output_schema is not None and "structured_output" in parsed:
            return compact_json(parsed["structured_output"])
        result = parsed.get("result")
        return result if isinstance(result, str) else None

    def legacy_patch_applied(self, parsed: dict[str, Any]) -> None:
        """Legacy codex: ``patch_apply_begin`` lists the changes (``{path: {"add"|"update"|
        "delete": …}}``), ``patch_apply_end`` says whether they were applied; a successful end
        reports them, one ``file_changed`` each, before its ``tool_result``."""
        msg = _dict(parsed.get("msg"))
        if msg.get("type") != "patch_apply_end" or msg.get("success") is not True:
            return
        for path, change in self.legacy_patches.pop(str(msg.get("call_id")), {}).items():
            kind = next(iter(_dict(change)), None)
            event = FILE_EVENTS.get(kind) if isinstance(kind, str) else None
            if event is not None and path:
                self.file_changed(event, path)

    def file_changed(self, event: str, path: str) -> None:
        self.out.append(
            {
                "type": "observation.file_changed",
                "payload": {"event": event, "path": cut(path, MAX_MESSAGE)},
            }
        )

    def file_change(self, parsed: dict[str, Any]) -> None:
        item = _dict(parsed.get("item"))
        if item.get("type") != "file_change":
            return
        self.turn.tools += 1
        self.turn.filesystem += 1
        if item.get("status") != "completed":
            return
        for change in item.get("changes") or []:
            change = _dict(change)
            event = FILE_EVENTS.get(change.get("kind"))  # type: ignore[arg-type]
            path = change.get("path")
            if event is None or not isinstance(path, str) or not path:
                continue
            self.file_changed(event, path)

    def subagent(self, parsed: dict[str, Any]) -> None:
        native = _str(parsed.get("tool_use_id")) or _str(parsed.get("task_id"))
        if native is None:
            return
        sid = digest_id("subg_", native)
        if parsed.get("subtype") == "task_started":
            task_input = self.tool_inputs.get(native, {})
            name = (
                _str(parsed.get("subagent_type"))
                or _str(task_input.get("subagent_type"))
                or _str(parsed.get("task_type"))
                or "task"
            )
            description = parsed.get("description", task_input.get("description"))
            self.out.append(
                {
                    "type": "observation.subagent_started",
                    "payload": {
                        "subagent": sid,
                        "name": cut(name, MAX_NAME),
                        "description": cut(description, MAX_MESSAGE)
                        if isinstance(description, str)
                        else None,
                    },
                }
            )
        elif parsed.get("subtype") == "task_notification":
            disposition = DISPOSITIONS.get(parsed.get("status"))  # type: ignore[arg-type]
            if disposition is not None:
                self.out.append(
                    {
                        "type": "observation.subagent_completed",
                        "payload": {"subagent": sid, "disposition": disposition},
                    }
                )

    def usage(self, e: dict[str, Any]) -> None:
        cost = _dict(e.get("usage")).get("costUsd")
        if not isinstance(cost, (int, float)) or isinstance(cost, bool) or cost < 0:
            return
        scope = e.get("usageScope") or e.get("subtype")
        if scope == "cumulative":
            self.cumulative_cost = float(cost)
        elif scope == "turn":
            self.turn_costs.append(float(cost))
        elif scope == "message":
            self.message_costs.setdefault(e.get("messageId") or f"@{e['position']}", float(cost))

    def cost(self) -> int | None:
        if self.cumulative_cost is not None:
            return microusd(self.cumulative_cost)
        if self.turn_costs:
            return sum(microusd(c) for c in self.turn_costs)
        if self.message_costs:
            return sum(microusd(c) for c in self.message_costs.values())
        return None

    def duration_ms(self) -> int | None:
        if self.final is None:
            return None
        parsed = _dict(self.final.get("parsed"))
        for key in ("duration_ms", "durationMs"):
            value = _int(parsed.get(key))
            if value is not None:
                return value
        return None


def observe(
    contract: dict[str, Any],
    request: TurnRequest,
    stdout: bytes | str,
    *,
    process: Any = None,
    dialect: Any = "auto",
    implementation: str = "native",
) -> tuple[list[Observation], dict[str, Any]]:
    """Observations for one turn and the resulting state.

    ``process`` is the executor's ``ProcessResult`` of a live run, or ``None`` for a replay
    (then the stream alone decides the ending). ``contract`` must be validated.
    """
    if isinstance(stdout, str):
        stdout = stdout.encode("utf-8", "surrogatepass")
    out: list[Observation] = [
        {"type": "observation.ready", "payload": {"capability_set": capability_set(contract)}}
    ]
    stream: _Stream | None = None
    last_response = ""
    if contract["output_mode"] == "text":
        text = stdout.decode("utf-8", "replace")
        if text.endswith("\r\n"):
            text = text[:-2]
        elif text.endswith("\n"):
            text = text[:-1]
        if text:
            content = cut(text, MAX_CONTENT)
            out.append({"type": "observation.agent_message", "payload": {"content": content}})
            last_response = content
    else:
        stream = _Stream(request.output_schema)
        stream.run(_normalize(stdout, dialect, implementation))
        out += stream.out
        if stream.result_text is not None:
            last_response = stream.result_text
        elif stream.last_main_message is not None:
            last_response = stream.last_main_message
    out.append(_ending(stream, process))
    prior = request.prior_state
    state = {
        "schema_version": 1,
        "turn": int(prior["turn"]) + 1 if prior is not None else 1,
        "last_response": last_response,
    }
    return out, state


def _ending(stream: _Stream | None, process: Any) -> Observation:
    def failed(kind: str, message: str) -> Observation:
        return {"type": "observation.failed", "payload": {"error": _error(kind, message)}}

    if process is not None:
        if process.spawn_error is not None:
            return failed(
                "runtime.harness_unavailable",
                process.spawn_error_message or f"entrypoint {process.spawn_error}",
            )
        if process.output_truncated:
            return failed(
                "validation.payload_too_large",
                "harness output reached the output cap; the process group was killed",
            )
        if process.timed_out:
            return failed(
                "runtime.turn_deadline_exceeded",
                f"turn deadline exceeded after {process.wall_time_ms} ms; "
                "the process group was killed",
            )
    ending, payload = "finished", {}
    if stream is not None and stream.final is not None and stream.final.get("kind") == "error":
        ending, payload = _ending_from_error(stream.final)
    if ending == "finished" and process is not None:
        if process.signal is not None:
            return failed("runtime.harness_failed", _exit_message(process))
        if process.exit_code != 0:  # None without a signal: the status was lost
            return failed("runtime.harness_failed", _exit_message(process))
    if ending != "finished":
        return {"type": f"observation.{ending}", "payload": payload}
    finished: dict[str, Any] = {
        "stop_reason": payload.get("stop_reason")
        or _stop_reason(stream.final if stream else None, stream.last_assistant if stream else None)
    }
    if stream is not None:
        cost = stream.cost()
        if cost is not None:
            finished["vendor_reported_cost_microusd"] = cost
    wall = process.wall_time_ms if process is not None else None
    if wall is None and stream is not None:
        wall = stream.duration_ms()
    if wall is not None:
        finished["turn"] = (stream.turn if stream is not None else _Turn()).payload(wall)
    return {"type": "observation.finished", "payload": finished}


def _exit_message(process: Any) -> str:
    if process.signal is not None:
        head = f"harness killed by signal {process.signal}"
    elif process.exit_code is None:
        head = "harness exit status unknown (lost)"
    else:
        head = f"harness exited with status {process.exit_code}"
    tail = process.stderr_tail.decode("utf-8", "replace").strip().splitlines()
    return f"{head}: {tail[-1]}" if tail else head


# ---- TEMPORARY SHIM (runner branch) -------------------------------------------------------
# Stands in for the incremental ``Observer`` of the "fold" branch, whose interface it has, until
# that branch is merged (then this block goes). It buffers stdout and runs ``observe`` in
# ``finish``, so ``feed`` returns nothing until the end. It adds what the runner needs of the
# real one: ``process.cancelled`` ends the turn with ``finished``/``interrupted`` unless the
# stream's own outcome was an error (the shim cannot tell a successful outcome from none), a
# ``host_resources`` spawn error is a ``retryable_failure`` ``runtime.runner_unavailable``
# (the host ran out of something, not the harness's fault), and ``redact`` is applied deep to
# every payload and to ``last_response``.
class Observer:
    def __init__(
        self,
        contract: dict[str, Any],
        request: TurnRequest,
        *,
        dialect: Any = "auto",
        implementation: str = "native",
        redact: Any = None,
    ) -> None:
        self._args = (contract, request, dialect, implementation)
        self._redact = redact
        self._stdout = bytearray()
        self._state: dict[str, Any] | None = None

    def feed(self, data: bytes) -> list[Observation]:
        self._stdout += data
        return []

    def finish(self, process: Any = None) -> list[Observation]:
        import dataclasses

        contract, request, dialect, implementation = self._args
        stdout, self._stdout = bytes(self._stdout), bytearray()
        kw = {"dialect": dialect, "implementation": implementation}
        out, state = observe(contract, request, stdout, process=process, **kw)
        spawn_error = getattr(process, "spawn_error", None)
        if spawn_error == "host_resources":
            message = cut(process.spawn_error_message or "host resources exhausted", 4096)
            out[-1] = {
                "type": "observation.retryable_failure",
                "payload": {"error": _error("runtime.runner_unavailable", message)},
            }
        elif (
            getattr(process, "cancelled", False)
            and spawn_error is None
            and not process.output_truncated
            and not process.timed_out
        ):
            calm = dataclasses.replace(process, exit_code=0, signal=None, cancelled=False)
            ending = observe(contract, request, stdout, process=calm, **kw)[0][-1]
            if ending["type"] == "observation.finished":
                ending["payload"]["stop_reason"] = "interrupted"
            out[-1] = ending
        if self._redact is not None:
            from .redact import redact_deep

            out = [{**o, "payload": redact_deep(o["payload"], self._redact)} for o in out]
            state = {**state, "last_response": self._redact(state["last_response"])}
        self._state = state
        return out

    @property
    def state(self) -> dict[str, Any]:
        if self._state is None:
            raise RuntimeError("Observer.state is known only after finish()")
        return self._state
