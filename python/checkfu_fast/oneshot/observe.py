"""oneshot-v1 section 4: harness stdout (+ the process outcome) -> normalized observations.

Deterministic: the same contract, request, stdout and process outcome give the same
observations, so vectors replay byte for byte. Every rule is in docs/oneshot.md section 4.
"""

from __future__ import annotations

import codecs
import copy
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import ROUND_HALF_EVEN, Context, Decimal
from typing import Any

from ..reference.sniff import FALLBACK
from ..usage import UsageFold
from .contract import compact_json
from .plan import TurnRequest, check_request
from .redact import redact_payload, redactor

Observation = dict[str, Any]

MAX_CONTENT = 262_144
MAX_MESSAGE = 4_096
MAX_NAME = 256
MAX_COUNT = 1_000_000
MAX_WALL_MS = 604_800_000
REPLAY_CHUNK = 1 << 16  # observe() feeds a stored stdout in pieces of this size (a pipe read)
# the normalizer gets at most this many bytes at a time: its events of one call are alive
# together (an event of a 2-byte junk line is about 3 KiB of Python objects: 2 KiB of such
# lines, 1,024 events, about 3.5 MiB; a whole 64 KiB read was 105 MiB)
FEED_PIECE = 1 << 11

FRAMING_ERRORS = {
    "invalid_utf8",
    "invalid_json",
    "line_too_long",
    "too_deep",
    "too_many_nodes",
    "stream_is_utf16",
}
NON_TERMINAL_ERRORS = FRAMING_ERRORS | {"retry", "item_error"}

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
_WS = re.compile(r"\s")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def stop_reason_of(native: str) -> str:
    """The oneshot stop reason of a native one: ``STOP_REASONS``, matched as written, else in
    snake case (harnesses that print Rust enum names: ``EndTurn``, ``Cancelled``,
    ``MaxTurnRequests``), else ``end_turn``."""
    hit = STOP_REASONS.get(native)
    if hit is None:
        hit = STOP_REASONS.get(_CAMEL.sub("_", native).lower())
    return hit or "end_turn"


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


MAX_COST_MICROUSD = (1 << 63) - 1  # int64: what a consumer can hold
_COST_CONTEXT = Context(prec=400, rounding=ROUND_HALF_EVEN)  # any finite float, exactly
# The bounded hold (docs/oneshot.md section 4): at most this many partial text chunks wait for
# the next line to say whether a whole message repeats them, and at most this many ids are
# remembered for a later line (sub-agent names, proposed file changes).
# ``auto`` in the oneshot (docs/oneshot.md section 3.1): the dialect is decided by the first
# decisive line among the first 8 lines (and 1 MiB); with none there, the fallback is used, so
# no observation waits longer than 8 lines for a decision.
AUTO_DECIDE_LINES = 8
AUTO_DECIDE_BYTES = 1 << 20
AUTO_FALLBACK = FALLBACK  # auto's own fallback dialect
_AUTO = frozenset({"auto"})
# a blocked turn (docs/oneshot.md section 4): at most this many pending actions are remembered
# (one ``observation.requires_action`` each); a question keeps at most 4 items of 32 options
MAX_ACTIONS = 32
MAX_QUESTION_ITEMS = 4
MAX_QUESTION_OPTIONS = 32
_ITEM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_HELD_CHUNKS = 1_024
MAX_HELD_CHARS = 1 << 20
MAX_REMEMBERED = 4_096


def microusd(cost: float) -> int | None:
    """USD -> micro-USD, half-even, in decimal from the float's shortest repr; clamped to
    ``0..MAX_COST_MICROUSD``; ``None`` for a non-finite cost (docs/oneshot.md section 4)."""
    if isinstance(cost, float) and not math.isfinite(cost):
        return None
    d = _COST_CONTEXT.multiply(Decimal(repr(cost)), Decimal(1_000_000))
    n = int(d.quantize(Decimal(1), context=_COST_CONTEXT))
    return min(max(n, 0), MAX_COST_MICROUSD)


class _Turn:
    """Counters for ``observation.finished.turn``."""

    def __init__(self) -> None:
        self.shell = 0
        self.filesystem = 0
        self.mcp = 0
        self.tools = 0
        self.retries = 0
        self.model_ids: set[str] = set()

    def tool(self, cls: Any) -> None:
        self.tools += 1
        if cls == "shell":
            self.shell += 1
        elif cls == "filesystem":
            self.filesystem += 1
        elif cls == "mcp":
            self.mcp += 1

    def model_call(self, mid: Any) -> None:
        if isinstance(mid, str) and len(self.model_ids) <= MAX_COUNT:
            self.model_ids.add(mid)

    def payload(self, wall_time_ms: int) -> dict[str, Any]:
        out = {
            "execution": "shell" if self.tools else "model_only",
            "shell_commands": min(self.shell, MAX_COUNT),
            "filesystem_commands": min(self.filesystem, MAX_COUNT),
            "mcp_calls": min(self.mcp, MAX_COUNT),
            "model_calls": min(len(self.model_ids), MAX_COUNT),
            "wall_time_ms": min(max(wall_time_ms, 0), MAX_WALL_MS),
        }
        if self.retries:
            out["model_transient_retries"] = min(self.retries, MAX_COUNT)
        return out


class _Joiner:
    """Text parts joined into one observation, keeping only what ``cut`` can return."""

    def __init__(self, subtype: str = "thinking") -> None:
        self.subtype = subtype
        self.head: list[str] = []
        self.head_len = 0
        self.total = 0
        self.event_id: str | None = None

    def add(self, text: str) -> None:
        self.total += len(text)
        if self.head_len < MAX_CONTENT:
            part = text[: MAX_CONTENT - self.head_len]
            self.head.append(part)
            self.head_len += len(part)

    def content(self) -> str:
        head = "".join(self.head)
        if self.total <= MAX_CONTENT:
            return head
        keep = MAX_CONTENT
        while True:  # the same cut as ``cut`` on the whole text
            marker = f"…[truncated {self.total - keep} chars]"
            if keep + len(marker) <= MAX_CONTENT:
                return head[:keep] + marker
            keep = MAX_CONTENT - len(marker)


def _remember(table: dict[Any, Any], key: Any, value: Any) -> None:
    table.pop(key, None)
    table[key] = value
    while len(table) > MAX_REMEMBERED:
        del table[next(iter(table))]


def _event_id(e: dict[str, Any]) -> str | None:
    """The native id behind an observation's ``event_id``: the record's own id, else the
    model call's."""
    return _str(e.get("nativeId")) or _str(e.get("modelCallId"))


class _Fold:
    """Events -> observations, one event at a time; remembers only what the ending needs.

    Cross-line rules, on generic event flags (docs/events.md):
    - ``deltaOnly`` deltas (the only form of their content) are joined into one observation,
      ended by the next other event (or a delta of the other subtype);
    - a ``partial`` assistant text is held until the next observation. A later assistant text
      whose content equals the held texts joined repeats them: a ``partial`` one replaces them
      (it is held in their place), a whole (not ``partial``) one drops them and is observed.
      Any other observation (including a whole text that does not repeat them) or the end
      releases the held texts as messages of their own, in order. Once a whole text has
      repeated held chunks, later partial texts are repeats and dropped;
    - an outcome event with ``repeatsError`` repeats an error already reported: not an outcome
      (an error event with it is one only when the last outcome so far is not an error).
    - a result with ``resultJoinsMessages`` (its text joins every message of the turn) gives
      as result text the main agent's messages since its last tool call or result, joined
      (none: the result's own text).
    """

    def __init__(self, output_schema: Any) -> None:
        self.out: list[Observation] = []
        self.turn = _Turn()
        self.output_schema = output_schema
        self.last_main_message: str | None = None
        self.result_text: str | None = None
        self.answer: str | None = None  # the text of the last event flagged `answer`
        self.final: dict[str, Any] | None = None  # what the ending needs of the last outcome
        self.last_retry: dict[str, Any] | None = None  # the last transient-retry error
        self.last_assistant_stop: Any = None
        self.max_turns_hit = False  # a max-turns error came (grok's `max_turns_reached`)
        self.cumulative_cost: int | None = None
        self.cumulative_at: Any = None  # the position of the line of cumulative_usd
        self.cumulative_usd: float = 0.0
        self.turn_cost: int | None = None
        self.message_costs: dict[str, int] = {}
        self.message_cost = 0
        self.position: Any = None
        self.index_in_line = 0
        self.thinking: _Joiner | None = None
        self.held: list[Observation] = []  # partial assistant texts
        self.held_chars = 0
        self.whole_seen = False
        self.spilled = False  # the hold overflowed (released) within the current segment
        self.segment = _Joiner("text")  # main messages since the last tool observation
        self.spawned: dict[str, dict[str, Any]] = {}  # sub-agent id -> its spawning call's hints
        self.aliases: dict[str, str] = {}  # a sub-agent's other id (`alias`) -> its id
        self.ended: set[str] = set()  # sub-agents whose end was observed (ids: bounded by stdout)
        self.proposed: dict[Any, list[Any]] = {}  # tool id -> file changes applied on success
        self.last_call: str | None = None  # digest of the last tool call's name and arguments
        self.repeat_run = 0  # how many calls in a row had that digest
        # what the turn waits for (``requiresAction`` entries), by tool use id, in order
        self.actions: dict[str, dict[str, Any]] = {}
        self.actions_dropped = 0

    # -- output -------------------------------------------------------------------------------
    def emit(self, obs: Observation) -> None:
        self.release_held()
        self.spilled = False
        self.push(obs)

    def push(self, obs: Observation) -> None:
        self.out.append(obs)
        if "subagent" in obs["payload"]:
            return
        if obs["type"] == "observation.agent_message":
            self.segment.add(obs["payload"]["content"])
        elif obs["type"] in ("observation.tool_use", "observation.tool_result"):
            self.segment = _Joiner("text")

    def segment_text(self) -> str:
        """The main agent's messages since its last tool observation, joined (held texts
        included): the final answer of a result that joins every message."""
        joined = _Joiner("text")
        joined.add(self.segment.content())
        for obs in self.held:
            if "subagent" not in obs["payload"]:
                joined.add(obs["payload"]["content"])
        return joined.content()

    def release_held(self) -> None:
        if not self.held:
            return
        held, self.held, self.held_chars = self.held, [], 0
        for obs in held:
            self.push(obs)
            if "subagent" not in obs["payload"]:
                self.last_main_message = obs["payload"]["content"]

    def flush_thinking(self) -> None:
        joiner, self.thinking = self.thinking, None
        if joiner is None or joiner.total == 0:
            return
        payload: dict[str, Any] = {"content": joiner.content()}
        if joiner.event_id is not None:
            payload["event_id"] = digest_id("evt_", joiner.event_id)
        name = "agent_message" if joiner.subtype == "text" else "agent_thinking"
        self.emit({"type": f"observation.{name}", "payload": payload})
        if joiner.subtype == "text":
            self.last_main_message = payload["content"]

    def take(self) -> list[Observation]:
        out, self.out = self.out, []
        return out

    def close(self) -> None:
        self.flush_thinking()
        self.release_held()

    # -- events -------------------------------------------------------------------------------
    def feed(self, e: dict[str, Any]) -> None:
        if e.get("position") != self.position:
            self.position, self.index_in_line = e.get("position"), 0
        n = self.index_in_line
        self.index_in_line += 1
        if e.get("deltaOnly") is True:
            subtype = "text" if e.get("subtype") == "text" else "thinking"
            if self.thinking is not None and self.thinking.subtype != subtype:
                self.flush_thinking()
            if self.thinking is None:
                self.thinking = _Joiner(subtype)
            text = e.get("text")
            if isinstance(text, str):
                self.thinking.add(text)
            if self.thinking.event_id is None:
                self.thinking.event_id = _event_id(e)
            return
        self.flush_thinking()
        self.event(e, n)

    def event(self, e: dict[str, Any], n: int) -> None:
        kind, subtype = e.get("kind"), e.get("subtype")
        parent = e.get("parentToolUseId")
        sub = {"subagent": digest_id("subg_", parent)} if isinstance(parent, str) else {}
        if e.get("role") == "assistant" and not e.get("delta"):
            self.last_assistant_stop = e.get("stopReason")
            self.turn.model_call(e.get("modelCallId"))
        if e.get("retry") is True:
            self.turn.retries += 1
            if kind == "error":  # the ending of a stream that stops while retrying
                self.last_retry = {
                    "kind": kind,
                    "subtype": subtype,
                    "error": _dict(e.get("error")),
                    "stopReason": None,
                    "durationMs": None,
                    "retryAt": e.get("retryAt"),
                    "retryAfterMs": e.get("retryAfterMs"),
                }
        if kind == "message" and subtype in ("text", "thinking") and not e.get("delta"):
            self.message(e, subtype, sub)
            return
        if kind == "tool_call" and subtype == "tool_use":
            self.tool_use(e, n, sub)
        elif kind == "message" and subtype == "tool_result":
            self.tool_result(e, n, sub)
        else:
            if isinstance(e.get("toolClass"), str):  # a tool run reported without a tool_use
                self.turn.tool(e["toolClass"])
            for change in _list(e.get("fileChanges")):
                self.file_changed(change)
        if e.get("answer") is True and isinstance(e.get("text"), str) and e["text"]:
            self.answer = cut(e["text"], MAX_CONTENT)
        if nonneg(e.get("tokensBefore")) and nonneg(e.get("tokensAfter")):
            payload = {
                "strategy": "native",
                "tokens_before": e["tokensBefore"],
                "tokens_after": e["tokensAfter"],
            }
            self.emit({"type": "observation.context_compacted", "payload": payload})
        if isinstance(e.get("subagent"), dict):
            self.subagent(e["subagent"])
        if kind == "usage":
            self.usage(e)
        if isinstance(e.get("requiresAction"), list):
            self.require(e, n)
        if kind == "status" and subtype in ("result", "turn_completed"):
            if e.get("repeatsError") is True:
                return  # repeats a message whose error event came before: that one stands
            self.outcome(e)
            if subtype == "result":
                self.result_text = self.final_text(e)
                structured = self.output_schema is not None and "structuredOutput" in e
                if e.get("resultJoinsMessages") is True and self.result_text is not None:
                    segment = self.segment_text()  # the last segment is the final answer
                    if segment and not structured:
                        self.result_text = segment
        elif kind == "error" and subtype not in NON_TERMINAL_ERRORS:
            if subtype == "max_turns":
                self.max_turns_hit = True
            if e.get("repeatsError") is True and _dict(self.final).get("kind") == "error":
                return  # a generic repeat of the error before it: that (actionable) one stands
            self.outcome(e)
            if "resultText" in e or "structuredOutput" in e:  # an error result's own text
                self.result_text = self.final_text(e)

    def message(self, e: dict[str, Any], subtype: str, sub: dict[str, Any]) -> None:
        if subtype == "text" and e.get("role") != "assistant":
            return
        partial = subtype == "text" and e.get("partial") is True
        if partial and self.whole_seen:
            return
        text = e.get("text") or ""
        content = cut(text, MAX_CONTENT)
        spill = self.spilled and not partial  # a whole text after the hold overflowed
        if subtype == "text" and self.held and (spill or self.repeats_held(content)):
            self.held, self.held_chars = [], 0  # this text repeats the chunks held before it
            if not partial:
                self.whole_seen, self.spilled = True, False
        if not text:
            return
        payload: dict[str, Any] = {"content": content}
        native = _event_id(e)
        if native is not None:
            payload["event_id"] = digest_id("evt_", native)
        payload.update(sub)
        name = "agent_message" if subtype == "text" else "agent_thinking"
        obs = {"type": f"observation.{name}", "payload": payload}
        if partial:
            size = len(payload["content"])
            if len(self.held) >= MAX_HELD_CHUNKS or self.held_chars + size > MAX_HELD_CHARS:
                self.release_held()  # a full hold is observed as is
                self.spilled = True  # the segment's whole text repeats more than is held
            self.held.append(obs)
            self.held_chars += size
            return
        self.emit(obs)
        if subtype == "text" and not sub:
            self.last_main_message = payload["content"]

    def repeats_held(self, content: str) -> bool:
        """Whether ``content`` is the held partial texts joined (a consolidated re-send)."""
        if len(content) != self.held_chars:
            return False
        return content == "".join(obs["payload"]["content"] for obs in self.held)

    def tool_use(self, e: dict[str, Any], n: int, sub: dict[str, Any]) -> None:
        tool = _dict(e.get("tool"))
        name = _str(e.get("providerToolName")) or _str(tool.get("name")) or "unknown"
        args = e["providerArguments"] if "providerArguments" in e else tool.get("arguments")
        self.turn.tool(e.get("toolClass"))
        call = digest_id("", name + "\x00" + _args_text(args))
        self.repeat_run = self.repeat_run + 1 if call == self.last_call else 1
        self.last_call = call
        info = e.get("subagent")
        if isinstance(info, dict) and info.get("phase") == "spawned" and _str(info.get("id")):
            _remember(self.spawned, info["id"], info)
        changes = _list(e.get("fileChanges"))
        if changes:
            _remember(self.proposed, tool.get("id"), changes)
        payload = {
            "tool_use_id": self.tool_id(tool, e, n),
            "tool": cut("harness:" + _WS.sub("_", name), MAX_NAME),
            "args": args,
        }
        if name != "unknown":  # events/v1 names a tool the stream does not name "unknown"
            payload["provider_tool_name"] = cut(name, MAX_NAME)
        payload.update(sub)
        self.emit({"type": "observation.tool_use", "payload": payload})

    def require(self, e: dict[str, Any], n: int) -> None:
        """The event's ``requiresAction`` entries: pending actions, one per tool use id (a later
        entry for the same call replaces an approval by a question, never the reverse)."""
        for i, entry in enumerate(e["requiresAction"]):
            entry = _dict(entry)
            key = _str(entry.get("toolUseId")) or f"checkfu:{e.get('position')}:{n}:{i}"
            known = self.actions.get(key)
            if known is not None:
                if entry.get("kind") == "question" and known.get("kind") != "question":
                    self.actions[key] = entry
            elif len(self.actions) < MAX_ACTIONS:
                self.actions[key] = entry
            else:
                self.actions_dropped += 1

    def tool_result(self, e: dict[str, Any], n: int, sub: dict[str, Any]) -> None:
        tool = _dict(e.get("tool"))
        ran = tool.get("isError") is False and "requiresAction" not in e
        if ran and isinstance(tool.get("id"), str):
            self.actions.pop(tool["id"], None)  # the call ran after all (it was answered)
        proposed = self.proposed.pop(tool.get("id"), None)
        if proposed is not None and tool.get("isError") is False:
            for change in proposed:  # a successful result applies the call's file changes
                self.file_changed(change)
        payload: dict[str, Any] = {"tool_use_id": self.tool_id(tool, e, n)}
        if "toolResult" in e:
            payload["result"] = e["toolResult"]
        if tool.get("isError") is True:
            text = e.get("text") if isinstance(e.get("text"), str) else ""
            payload["error"] = _error("runtime.harness_failed", text or "tool failed")
        payload.update(sub)
        self.emit({"type": "observation.tool_result", "payload": payload})

    def tool_id(self, tool: dict[str, Any], e: dict[str, Any], n: int) -> str:
        native = tool.get("id")
        if isinstance(native, str) and native:
            return cut(native, MAX_NAME)
        return f"checkfu:{e.get('position')}:{n}"

    def file_changed(self, change: Any) -> None:
        change = _dict(change)
        event, path = change.get("event"), change.get("path")
        if event in ("create", "modify", "delete") and isinstance(path, str) and path:
            payload = {"event": event, "path": cut(path, MAX_MESSAGE)}
            self.emit({"type": "observation.file_changed", "payload": payload})

    def subagent(self, info: dict[str, Any]) -> None:
        native = _str(info.get("id"))
        if native is None:
            return
        alias = _str(info.get("alias"))
        if alias is not None:
            self.aliases.setdefault(alias, native)
        native = self.aliases.get(native, native)
        sid = digest_id("subg_", native)
        if info.get("phase") == "started":
            hint = _dict(self.spawned.get(native))
            name = (
                _str(info.get("name")) or _str(hint.get("name")) or _str(info.get("type")) or "task"
            )
            description = info.get("description", hint.get("description"))
            payload = {
                "subagent": sid,
                "name": cut(name, MAX_NAME),
                "description": cut(description, MAX_MESSAGE)
                if isinstance(description, str)
                else None,
            }
            self.emit({"type": "observation.subagent_started", "payload": payload})
        elif info.get("phase") == "ended":
            disposition = info.get("disposition")
            if disposition in ("completed", "failed", "canceled") and native not in self.ended:
                self.ended.add(native)  # a task's end may come twice (update and notification)
                payload = {"subagent": sid, "disposition": disposition}
                self.emit({"type": "observation.subagent_completed", "payload": payload})

    def usage(self, e: dict[str, Any]) -> None:
        cost = _dict(e.get("usage")).get("costUsd")
        if not isinstance(cost, (int, float)) or isinstance(cost, bool) or not cost >= 0:
            return
        micro = microusd(cost)
        if micro is None:
            return  # not a finite amount: no cost rather than a wrong one
        scope = e.get("usageScope") or e.get("subtype")
        if scope == "cumulative":
            # one line's cumulative events (a claude result's one per model) add up to the
            # run's cost; a later line's counter replaces them
            at = e.get("position")
            if at is not None and at == self.cumulative_at:
                self.cumulative_usd += cost
            else:
                self.cumulative_at, self.cumulative_usd = at, cost
            total = microusd(self.cumulative_usd)
            if total is not None:
                self.cumulative_cost = total
        elif scope == "turn":
            self.turn_cost = (self.turn_cost or 0) + micro
        elif scope == "message":
            key = e.get("messageId") or f"@{e.get('position')}"
            if key not in self.message_costs:  # one cost per message (ids: bounded by stdout)
                self.message_costs[key] = micro
                self.message_cost += micro

    def cost(self) -> int | None:
        for total in (self.cumulative_cost, self.turn_cost):
            if total is not None:
                return min(total, MAX_COST_MICROUSD)
        if self.message_costs:
            return min(self.message_cost, MAX_COST_MICROUSD)
        return None

    def outcome(self, e: dict[str, Any]) -> None:
        self.final = {
            "kind": e.get("kind"),
            "subtype": e.get("subtype"),
            "error": _dict(e.get("error")),
            "stopReason": e.get("stopReason"),
            "durationMs": e.get("durationMs"),
            "retryAt": e.get("retryAt"),
            "retryAfterMs": e.get("retryAfterMs"),
        }

    def final_text(self, e: dict[str, Any]) -> str | None:
        if self.output_schema is not None and "structuredOutput" in e:
            return compact_json(e["structuredOutput"])
        result = e.get("resultText")
        return result if isinstance(result, str) else None

    def stop_reason(self) -> str:
        if self.max_turns_hit:  # the turn cap ended the turn, whatever the end line says
            return "max_turn_requests"
        for value in (_dict(self.final).get("stopReason"), self.last_assistant_stop):
            if isinstance(value, str):
                return stop_reason_of(value)
        return "end_turn"

    def duration_ms(self) -> int | None:
        value = _dict(self.final).get("durationMs")
        return value if nonneg(value) else None


def _args_text(args: Any) -> str:
    try:
        return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(args)


def nonneg(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _ending_from_error(final: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    err = final["error"]
    code = err.get("code") or ""
    message = err.get("message") if isinstance(err.get("message"), str) else code
    if code == "error_max_turns" or final.get("subtype") == "max_turns":
        return "finished", {"stop_reason": "max_turn_requests"}
    if final.get("subtype") == "aborted":
        return "finished", {"stop_reason": "interrupted"}
    kind = err.get("errorKind")
    if kind == "quota":
        return "retryable_failure", {"error": _error("model.platform_capacity_reached", message)}
    if kind == "transport":
        return "retryable_failure", {"error": _error("model.platform_supply_unavailable", message)}
    return "failed", {"error": _error("runtime.harness_failed", message)}


class _TextOutput:
    """Text mode: the whole stdout is one agent_message; keeps only what ``cut`` returns."""

    def __init__(self) -> None:
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.joiner = _Joiner()
        self.tail = ""  # the last two characters (a trailing line end is dropped)

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if not text:
            return
        both = self.tail + text
        self.tail = both[-2:]
        self.joiner.add(both[: len(both) - len(self.tail)])

    def content(self) -> str:
        tail = self.tail
        if tail.endswith("\r\n"):
            tail = tail[:-2]
        elif tail.endswith("\n"):
            tail = tail[:-1]
        self.joiner.add(tail)
        return self.joiner.content()


class Observer:
    """The incremental fold of docs/oneshot.md section 4: ``feed`` stdout bytes as they arrive
    (any chunking), then ``finish`` once; the observations equal ``observe`` on the whole
    stdout. Events are folded as they come and not retained: memory is bounded by counters,
    the distinct model-call and message ids seen, hints (at most ``MAX_REMEMBERED`` each) and
    the hold of at most ``MAX_HELD_CHUNKS`` partial text chunks of ``MAX_HELD_CHARS``
    characters in all (plus one joined delta text of at most ``MAX_CONTENT`` characters).

    ``redact`` (docs/oneshot.md section 3, "Hygiene"): ``True`` (the default) hides
    credentials of known formats, a :class:`~checkfu_fast.oneshot.redact.Redactor` also the
    harness's secret environment values (live turns pass one), ``None`` or ``False`` nothing.
    Ids are never rewritten; the opaque-key rules apply to error messages only."""

    def __init__(
        self,
        contract: dict[str, Any],
        request: TurnRequest,
        *,
        dialect: Any = None,
        implementation: str = "native",
        redact: Callable[[str], str] | bool | None = True,
    ) -> None:
        check_request(request)
        if dialect is None:
            dialect = contract_dialect(contract)
        self.dialect = dialect
        self._contract = contract
        self._request = request
        # True: credentials of known formats (a replay hides what a live turn hides)
        self._redact = redactor() if redact is True else redact or None
        self._started = False
        self._finished = False
        self._state: dict[str, Any] | None = None
        self._retry: tuple[str | None, int | None] | None = None
        self._text: _TextOutput | None = None
        self._fold: _Fold | None = None
        self._normalizer: Any = None
        self._tap: Callable[[Any], Any] | None = None
        self._usage = UsageFold()
        self._usage_seen = False
        self._session_id: str | None = None
        self._json_seen = False
        self.stop: str | None = None  # set by a caller that stopped the turn (a budget)
        self._requires_action: list[dict[str, Any]] | None = None
        self._usage_final: dict[str, Any] | None = None
        if contract["output_mode"] == "text":
            self._text = _TextOutput()
        else:
            self._fold = _Fold(request.output_schema)
            self._implementation = implementation
            self._pending: bytearray | None = None  # auto: the first lines, until decided
            if isinstance(dialect, str) and dialect in _AUTO:
                self._pending = bytearray()
            else:
                self._normalizer = self._make_normalizer(dialect)

    def _make_normalizer(self, dialect: Any) -> Any:
        # collapse_junk: in the fold a line that is not a JSON object only ends a joined delta
        # (and its kind says whether stdout had JSON), so a run of them is folded as the first
        # line of each kind; a flood of junk then costs no event dict per line (the fold of
        # `yes` ran at 0.35 MiB/s, far behind the pipe and past any deadline)
        if self._implementation == "reference":
            from ..reference import Normalizer as ReferenceNormalizer

            return ReferenceNormalizer(dialect, collapse_junk=True)
        from .. import Normalizer

        return Normalizer(dialect, collapse_junk=True)

    def _decide(self, final: bool) -> Iterable[dict[str, Any]]:
        """``auto`` in the oneshot: the first decisive line among the first
        ``AUTO_DECIDE_LINES`` lines (or ``AUTO_DECIDE_BYTES`` bytes) picks the dialect; with
        none there, auto's fallback is used; the events of the held bytes are returned.
        Until then nothing is normalized (``[]``). At ``finish`` an undecided stream is
        normalized by ``auto`` itself (its fallback notice included), as before."""
        pending = self._pending
        assert pending is not None
        head, lines, end = bytes(pending[:AUTO_DECIDE_BYTES]), 0, 0
        while lines < AUTO_DECIDE_LINES:
            nl = head.find(b"\n", end)
            if nl < 0:
                break
            lines, end = lines + 1, nl + 1
        dialect: Any = None
        if end:
            if self._implementation == "reference":
                from ..reference import normalize as normalize_head
            else:
                from .. import normalize as normalize_head
            events = normalize_head(head[:end], "auto")
            fell_back = any(e.get("subtype") == "dialect_fallback" for e in events)
            if events and not fell_back and isinstance(events[0].get("dialect"), str):
                dialect = events[0]["dialect"]
        if dialect is None:
            bounded = lines >= AUTO_DECIDE_LINES or len(pending) >= AUTO_DECIDE_BYTES
            if bounded:
                dialect = AUTO_FALLBACK
            elif final:
                dialect = "auto"
            else:
                return []
        self._normalizer = self._make_normalizer(dialect)
        if self._tap is not None:  # a live export taps the normalizer's events
            self._normalizer = self._tap(self._normalizer)
        self._pending = None
        return self._pieces(bytes(pending))

    def _pieces(self, data: bytes | bytearray | memoryview) -> Iterator[dict[str, Any]]:
        """The events of ``data`` fed ``FEED_PIECE`` bytes at a time: one piece's event dicts
        alive at once, never a whole chunk's (a junk line is a ~3 KiB dict)."""
        view = memoryview(data).cast("B")
        for at in range(0, len(view), FEED_PIECE):
            yield from self._normalizer.feed(view[at : at + FEED_PIECE].tobytes())

    def feed(self, data: bytes | bytearray | memoryview) -> list[Observation]:
        """stdout bytes as they arrive (any chunking); the observations they complete, in order.
        The first observations ever returned (by feed or finish) start with observation.ready."""
        if self._finished:
            raise ValueError("feed() after finish()")
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        if self._text is not None:
            self._text.feed(bytes(data))
            return self._out([])
        assert self._fold is not None
        if self._pending is not None:
            self._pending += data
            for e in self._decide(final=False):
                self._event(e)
        else:
            for e in self._pieces(data):  # (the events of one piece at a time)
                self._event(e)
        return self._out(self._fold.take())

    def _event(self, e: dict[str, Any]) -> None:
        """One event: to the observation fold, the usage fold and the session id."""
        assert self._fold is not None
        self._fold.feed(e)
        if e.get("kind") == "usage":
            self._usage_seen = True
        self._usage.add(e)
        sid = e.get("sessionId")
        if isinstance(sid, str) and sid:
            self._session_id = sid
        if not self._json_seen and not _not_json(e):
            self._json_seen = True

    def finish(self, process: Any = None) -> list[Observation]:
        """The remaining observations, ending with exactly one ending observation, or with the
        ``observation.requires_action`` observations of a turn blocked on a human."""
        if self._finished:
            raise ValueError("finish() called twice")
        self._finished = True
        out: list[Observation] = []
        last_response = ""
        if self._text is not None:
            self._text.feed(b"", final=True)
            content = self._text.content()
            if content:
                out.append({"type": "observation.agent_message", "payload": {"content": content}})
                last_response = content
        else:
            fold = self._fold
            assert fold is not None
            if self._pending is not None:
                for e in self._decide(final=True):
                    self._event(e)
            for e in self._normalizer.finish():
                self._event(e)
            fold.close()
            out += fold.take()
            if fold.answer is not None and _dict(fold.final).get("kind") != "error":
                last_response = fold.answer  # the stream flagged its answer (cursor's plan)
            elif fold.result_text is not None:
                last_response = fold.result_text
            elif fold.last_main_message is not None:
                last_response = fold.last_main_message
        ending = _ending(self._fold, process, self.stop)
        endings = [ending]
        if (
            ending["type"] == "observation.finished"
            and ending["payload"]["stop_reason"] == "end_turn"
            and self._fold is not None
            and (process is None or process.spawn_error is None)
        ):
            if self._fold.actions:  # blocked on a human: the actions, not a success
                endings = [
                    {"type": "observation.requires_action", "payload": {"action": action}}
                    for action in _actions(self._fold.actions)
                ]
                self._requires_action = [o["payload"]["action"] for o in endings]
            else:
                silent = self._silent_success(last_response)
                if silent is not None:
                    endings = [
                        {
                            "type": "observation.failed",
                            "payload": {"error": _error("runtime.harness_failed", silent)},
                        }
                    ]
        out += endings
        self._retry = _retry_time(self._fold, process, endings[-1])
        prior = self._request.prior_state
        self._state = {
            "schema_version": 1,
            "turn": int(prior["turn"]) + 1 if prior is not None else 1,
            "last_response": getattr(self._redact, "exact", self._redact)(last_response)
            if self._redact
            else last_response,
        }
        return self._out(out)

    def _silent_success(self, last_response: str) -> str | None:
        """Why a stream_json turn that would end ``finished``/``end_turn`` did not succeed: no
        line of stdout was JSON, or no outcome record came and there is no answer."""
        fold = self._fold
        assert fold is not None
        if not self._json_seen:
            return (
                "no JSON on stdout: the contract's output_mode is stream_json but the harness "
                "printed no JSON line (is its JSON output flag set, e.g. --output-format "
                "stream-json?)"
            )
        if fold.final is None and fold.last_retry is None and not last_response:
            return (
                "the harness's JSON stream ended without an outcome record (no result, no "
                "completed turn, no error) and without an answer"
            )
        return None

    @property
    def requires_action(self) -> list[dict[str, Any]] | None:
        """The actions a blocked turn ended with (the ``action`` of each
        ``observation.requires_action``), else ``None``; valid after finish()."""
        if self._requires_action is None:
            return None
        return self._redact_actions(self._requires_action)

    def _redact_actions(self, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._redact is None:
            return copy.deepcopy(actions)
        return [redact_payload(a, self._redact) for a in actions]

    @property
    def session_id(self) -> str | None:
        """The CLI's session id: the last ``sessionId`` the stream's events carried."""
        return self._session_id

    @property
    def usage(self) -> dict[str, Any]:
        """``usage_totals`` of the events so far (``{"total", "byModel", "bySession"}``).
        ``costUsd`` is the reported cost, else the estimate at the shipped prices."""
        if self._finished:
            return self._usage_totals()
        return copy.deepcopy(self._usage).totals()

    def _usage_totals(self) -> dict[str, Any]:
        if self._usage_final is None:
            self._usage_final = self._usage.totals()
        return self._usage_final

    @property
    def tool_calls(self) -> int:
        """Tool calls observed so far."""
        return self._fold.turn.tools if self._fold is not None else 0

    @property
    def repeats(self) -> int:
        """How many times in a row the last tool call repeated with identical arguments."""
        return self._fold.repeat_run if self._fold is not None else 0

    @property
    def usage_seen(self) -> bool:
        """Whether any usage event came so far."""
        return self._usage_seen

    @property
    def retry(self) -> tuple[str | None, int | None] | None:
        """``(retryAt, retryAfterMs)`` of a ``retryable_failure`` whose error event said when work
        can resume (docs/events.md), else ``None``; valid after finish()."""
        return self._retry

    @property
    def state(self) -> dict[str, Any]:
        """The resulting state; valid after finish()."""
        if self._state is None:
            raise ValueError("state is known only after finish()")
        return self._state

    def _out(self, out: list[Observation]) -> list[Observation]:
        if not self._started:
            self._started = True
            ready = {"capability_set": capability_set(self._contract)}
            out.insert(0, {"type": "observation.ready", "payload": ready})
        if self._redact is not None:
            out = [{**o, "payload": redact_payload(o["payload"], self._redact)} for o in out]
        return out


def observe(
    contract: dict[str, Any],
    request: TurnRequest,
    stdout: bytes | str,
    *,
    process: Any = None,
    dialect: Any = None,
    implementation: str = "native",
    redact: Callable[[str], str] | bool | None = True,
) -> tuple[list[Observation], dict[str, Any]]:
    """Observations for one turn and the resulting state: ``Observer.feed(stdout)`` then
    ``finish(process)``.

    ``process`` is the executor's ``ProcessResult`` of a live run, or ``None`` for a replay
    (then the stream alone decides the ending). ``contract`` must be validated. ``redact`` as
    for :class:`Observer` (by default a replay hides what a live turn without secret
    environment values hides: the observations of the same bytes are equal). ``dialect``
    ``None``: the shipped contract's (``contracts.get``), else ``auto``.
    """
    observer = Observer(
        contract, request, dialect=dialect, implementation=implementation, redact=redact
    )
    if isinstance(stdout, str):
        stdout = stdout.encode("utf-8", "surrogatepass")
    out: list[Observation] = []
    view = memoryview(stdout).cast("B")
    for at in range(0, len(view), REPLAY_CHUNK):  # the events of one piece at a time
        out += observer.feed(view[at : at + REPLAY_CHUNK])
    out += observer.finish(process)
    return out, observer.state


def _ending(fold: _Fold | None, process: Any, stop: str | None = None) -> Observation:
    def failed(kind: str, message: str) -> Observation:
        return {"type": "observation.failed", "payload": {"error": _error(kind, message)}}

    final = fold.final if fold is not None else None
    cancelled = process is not None and getattr(process, "cancelled", False) is True
    if process is not None:
        if process.spawn_error == "host_resources":  # the host ran out, not the harness
            message = process.spawn_error_message or "host resources exhausted"
            return {
                "type": "observation.retryable_failure",
                "payload": {"error": _error("runtime.runner_unavailable", message)},
            }
        if process.spawn_error is not None:
            return failed(
                "runtime.harness_unavailable",
                process.spawn_error_message or f"entrypoint {process.spawn_error}",
            )
        if cancelled and (final is None or stop is not None):
            # cancelled (or stopped on a budget) before the stream reached its outcome
            return _finished(fold, process, "interrupted")
        if process.output_truncated and not cancelled:
            return failed(
                "validation.payload_too_large",
                "harness output reached the output cap; the process group was killed",
            )
        if process.timed_out and not cancelled:
            return failed(
                "runtime.turn_deadline_exceeded",
                f"turn deadline exceeded after {process.wall_time_ms} ms; "
                "the process group was killed",
            )
    payload: dict[str, Any]
    if final is None and fold is not None:
        final = fold.last_retry  # no outcome after a retry: the stream stopped while retrying
    ending, payload = "finished", {}
    if final is not None and final["kind"] == "error":
        ending, payload = _ending_from_error(final)
    if ending == "finished" and process is not None and not cancelled:
        if process.signal is not None:
            return failed("runtime.harness_failed", _exit_message(process))
        if process.exit_code != 0:  # None without a signal: the status was lost
            return failed("runtime.harness_failed", _exit_message(process))
    if ending != "finished":
        return {"type": f"observation.{ending}", "payload": payload}
    return _finished(fold, process, payload.get("stop_reason"))


def _actions(pending: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed's actions for a blocked turn's pending ``requiresAction`` entries, in order: a
    question with at least one usable item is ``question`` (``qst_`` + the digest of its tool use
    id; at most ``MAX_QUESTION_ITEMS`` items), anything else ``custom_tool`` with the call's
    tool use id (the schema's ``action_approval`` needs platform ids a CLI never gives)."""
    out = []
    for key, entry in pending.items():
        tool_use_id = cut(key, MAX_NAME)
        items = _question_items(entry.get("questions")) if entry.get("kind") == "question" else []
        if items:
            question = digest_id("qst_", key)
            out.append({"kind": "question", "question": question, "items": items})
        else:
            out.append({"kind": "custom_tool", "tool_use_id": tool_use_id})
    return out


def _question_items(questions: Any) -> list[dict[str, Any]]:
    """``requiresAction.questions`` (``[{id?, header?, question, options?: [{label,
    description?} | label], multiSelect?}]``) as the seed's question items: those with a
    non-empty ``question``, at most ``MAX_QUESTION_ITEMS``; an ``id`` that is not 1-64 of
    ``A-Za-z0-9_-`` becomes ``q<n>``; at most ``MAX_QUESTION_OPTIONS`` options with a label."""
    items: list[dict[str, Any]] = []
    for q in _list(questions):
        if len(items) >= MAX_QUESTION_ITEMS:
            break
        q = _dict(q)
        prompt = _str(q.get("question"))
        if prompt is None:
            continue
        qid = q.get("id")
        item: dict[str, Any] = {
            "id": qid if isinstance(qid, str) and _ITEM_ID.fullmatch(qid) else f"q{len(items) + 1}",
            "prompt": cut(prompt, MAX_MESSAGE),
        }
        header = _str(q.get("header"))
        if header is not None:
            item["header"] = cut(header, MAX_MESSAGE)
        options = []
        for o in _list(q.get("options")):
            label = _str(o) or _str(_dict(o).get("label"))
            if label is None:
                continue
            option = {"label": cut(label, MAX_MESSAGE)}
            description = _str(_dict(o).get("description"))
            if description is not None:
                option["description"] = cut(description, MAX_MESSAGE)
            options.append(option)
            if len(options) >= MAX_QUESTION_OPTIONS:
                break
        item["options"] = options
        item["allow_multiple"] = q.get("multiSelect") is True
        items.append(item)
    return items


def _retry_time(
    fold: _Fold | None, process: Any, ending: Observation
) -> tuple[str | None, int | None] | None:
    """The retry time of a ``retryable_failure`` that the stream decided (its last outcome, or
    the last retry of a stream that stopped while retrying): the error event's own fields."""
    if ending["type"] != "observation.retryable_failure" or fold is None:
        return None
    if process is not None and process.spawn_error is not None:
        return None  # the host's failure, not the stream's
    source = fold.final if fold.final is not None else fold.last_retry
    at = _dict(source).get("retryAt")
    ms = _dict(source).get("retryAfterMs")
    at = at if isinstance(at, str) else None
    ms = ms if isinstance(ms, int) and not isinstance(ms, bool) else None
    return None if at is None and ms is None else (at, ms)


def _finished(fold: _Fold | None, process: Any, stop_reason: str | None) -> Observation:
    finished: dict[str, Any] = {
        "stop_reason": stop_reason or (fold.stop_reason() if fold is not None else "end_turn")
    }
    if fold is not None:
        cost = fold.cost()
        if cost is not None:
            finished["vendor_reported_cost_microusd"] = cost
    wall = process.wall_time_ms if process is not None else None
    if wall is None and fold is not None:
        wall = fold.duration_ms()
    if wall is not None:
        finished["turn"] = (fold.turn if fold is not None else _Turn()).payload(wall)
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


def contract_dialect(contract: Any) -> str:
    """The dialect of a shipped contract (``contracts.get``), else ``"auto"``."""
    dialect = getattr(contract, "dialect", None)
    return dialect if isinstance(dialect, str) else "auto"


_NOT_JSON_STATUS = {"non_json", "dialect_fallback"}


def _not_json(e: dict[str, Any]) -> bool:
    """Whether an event stands for a stdout line that was not JSON (or for no line)."""
    kind, subtype = e.get("kind"), e.get("subtype")
    if kind == "status" and subtype in _NOT_JSON_STATUS:
        return True
    return kind == "error" and subtype in FRAMING_ERRORS
