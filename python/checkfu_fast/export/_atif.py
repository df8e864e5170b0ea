"""events/v1 events -> ATIF trajectories (Harbor's Agent Trajectory Interchange Format).

``AtifBuilder`` folds events one at a time (live: after every step the trajectory so far is a
valid document) and :meth:`AtifBuilder.trajectory` renders the ATIF dict. Only event fields
are read (never ``parsed``/``raw``), so every dialect and mapping file exports, lean events too.

The mapping (docs/export.md):

- ``message/text`` of role ``user`` / ``system`` -> a ``user`` / ``system`` step;
- assistant text, thinking and tool calls -> ``agent`` steps, one per model call: events of one
  ``modelCallId`` share a step; without one, a step runs until its tool results come back or
  another step comes between;
- ``message/tool_result`` -> an observation result of the step that made the call (joined by
  ``tool.id``); a result whose call is unknown goes to the latest agent step without a
  ``source_call_id``;
- error events and context compactions -> ``system`` steps (their fields in ``extra``);
- usage -> the step's ``metrics`` (message usage by ``messageId``, turn usage summed,
  cumulative counters as their increase when the stream gives no finer usage); the
  ``final_metrics`` are :class:`checkfu_fast.usage.UsageFold`'s totals (the CLI's own counters,
  sub-agents included);
- sub-agents (claude ``parentToolUseId``, session-file sidechains by ``agentId``) -> embedded
  ``subagent_trajectories``, referenced from the result of the call that started them.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from .. import prices
from ..usage import UsageFold, utc_day

ATIF_VERSION = "ATIF-v1.8"
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})")
_COUNTS = (("inputTokens", "prompt_tokens"), ("outputTokens", "completion_tokens"))


def producer_version() -> str:
    from .. import __version__

    return __version__


def valid_timestamp(ts: Any) -> str | None:
    """The event's ``timestamp`` when it is an RFC 3339 time (else ``None``)."""
    return ts if isinstance(ts, str) and _RFC3339.fullmatch(ts) else None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _count(v: Any) -> int | float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or v < 0:
        return None
    return v


def _as_int(v: int | float) -> int | None:
    """ATIF counts are integers: an integral float is one, a fractional count is not given."""
    if isinstance(v, int):
        return v
    return int(v) if v.is_integer() else None


class _Usage:
    """Token counts and cost of one step."""

    __slots__ = ("cached", "cost", "cw", "cw1h", "est", "inp", "known", "out", "reasoning")

    def __init__(self) -> None:
        self.known = False  # token counts given (not a usage with ``unknown: true``)
        self.inp: int | float = 0
        self.out: int | float = 0
        self.cached: int | float = 0
        self.reasoning: int | float | None = None
        self.cost: float | None = None
        self.est: float | None = None  # the price snapshot's cost, when the CLI gave none
        self.cw: int | float | None = None  # cache writes (of inp), where the CLI counts them
        self.cw1h: int | float | None = None  # of which written with the 1-hour TTL

    @staticmethod
    def of(ev: Mapping[str, Any]) -> _Usage:
        u = ev.get("usage")
        r = _Usage()
        if isinstance(u, dict) and u.get("unknown") is not True:
            r.known = True
            r.inp = _count(u.get("inputTokens")) or 0
            r.out = _count(u.get("outputTokens")) or 0
            r.cached = _count(u.get("cachedTokens")) or 0
        if isinstance(u, dict):
            c = _count(u.get("costUsd"))
            r.cost = float(c) if c is not None else None
        r.reasoning = _count(ev.get("reasoningTokens"))
        if r.known:
            r.cw = _count(ev.get("cacheWriteTokens"))
            r.cw1h = _count(ev.get("cacheWrite1hTokens"))
        if r.cost is None and r.known and isinstance(u, dict):
            model = u.get("model")
            if isinstance(model, str) and model != "unknown":
                day = utc_day(ev.get("timestamp"))
                r.est = prices.cost(
                    model,
                    r.inp,
                    r.out,
                    r.cached,
                    r.cw or 0,
                    r.cw1h or 0,
                    day=None if day == "unknown" else day,
                )
        return r

    def add(self, o: _Usage) -> None:
        self.known = self.known or o.known
        self.inp += o.inp
        self.out += o.out
        self.cached += o.cached
        if o.reasoning is not None:
            self.reasoning = (self.reasoning or 0) + o.reasoning
        if o.cost is not None:
            self.cost = (self.cost or 0.0) + o.cost
        if o.est is not None:
            self.est = (self.est or 0.0) + o.est
        for k in ("cw", "cw1h"):
            v = getattr(o, k)
            if v is not None:
                setattr(self, k, (getattr(self, k) or 0) + v)

    def merge_max(self, o: _Usage) -> None:
        self.known = self.known or o.known
        self.inp = max(self.inp, o.inp)
        self.out = max(self.out, o.out)
        self.cached = max(self.cached, o.cached)
        if o.reasoning is not None:
            self.reasoning = max(self.reasoning or 0, o.reasoning)
        if o.cost is not None:
            self.cost = max(self.cost or 0.0, o.cost)
        if o.est is not None:
            self.est = max(self.est or 0.0, o.est)
        for k in ("cw", "cw1h"):
            v = getattr(o, k)
            if v is not None:
                setattr(self, k, max(getattr(self, k) or 0, v))

    def minus(self, base: _Usage) -> _Usage:
        r = _Usage()
        r.known = self.known
        r.inp, r.out, r.cached = self.inp - base.inp, self.out - base.out, self.cached - base.cached
        if self.reasoning is not None:
            r.reasoning = self.reasoning - (base.reasoning or 0)
        if self.cost is not None:
            r.cost = self.cost - (base.cost or 0.0)
        return r

    def covers(self, base: _Usage) -> bool:
        return self.inp >= base.inp and self.out >= base.out and self.cached >= base.cached

    def metrics(self) -> dict[str, Any]:
        m: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        counts = (
            ("prompt_tokens", self.inp),
            ("completion_tokens", self.out),
            ("cached_tokens", self.cached),
        )
        for key, val in counts if self.known else ():
            n = _as_int(val)
            if n is None:
                extra[key] = val
            else:
                m[key] = n
        if self.cost is not None:
            m["cost_usd"] = self.cost
        elif self.est is not None:
            m["cost_usd"] = self.est
            extra["cost_source"] = "estimated"
        if self.reasoning is not None:
            extra["reasoning_tokens"] = self.reasoning
        if self.cw is not None and self.known:
            extra["cache_write_tokens"] = self.cw
        if self.cw1h is not None and self.known:
            extra["cache_write_1h_tokens"] = self.cw1h
        if extra:
            m["extra"] = extra
        return m


class _Step:
    __slots__ = (
        "answered",
        "cache",
        "calls",
        "extra",
        "held",
        "message",
        "model",
        "model_call",
        "reasoning",
        "results",
        "source",
        "timestamp",
        "usage_msgs",
        "usage_plain",
        "uversion",
    )

    def __init__(self, source: str, timestamp: str | None) -> None:
        self.source = source
        self.timestamp = timestamp
        self.message: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.extra: dict[str, Any] = {}
        self.model: str | None = None
        self.model_call: str | None = None
        self.answered = False  # a result of one of its calls came back
        self.held: list[str] = []  # partial (cursor) texts not yet known to be whole
        self.usage_msgs: dict[str, _Usage] = {}
        self.usage_plain: _Usage | None = None
        self.uversion = 0  # bumped by every usage reading (the render cache's key)
        self.cache: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    def key(self, agent_model: Any) -> tuple[Any, ...]:
        """What the rendered step depends on (parts only grow, or their last one does)."""
        m, r = self.message, self.reasoning
        return (
            len(m), len(m[-1]) if m else 0, len(self.held), len(r), len(r[-1]) if r else 0,
            len(self.calls), len(self.results), len(self.extra), self.uversion, self.model,
            agent_model,
        )  # fmt: skip

    def usage(self) -> _Usage | None:
        if not self.usage_msgs and self.usage_plain is None:
            return None
        total = _Usage()
        for u in self.usage_msgs.values():
            total.add(u)
        if self.usage_plain is not None:
            total.add(self.usage_plain)
        return total


class _Node:
    """One trajectory under construction (the session, or one sub-agent)."""

    def __init__(self, key: str | None) -> None:
        self.key = key
        self.steps: list[_Step] = []
        self.calls: dict[str, _Step] = {}  # tool call id -> the step that made it
        self.model_calls: dict[str, _Step] = {}
        self.cur: _Step | None = None  # the open agent step
        self.partial_mode = False
        self.delta: tuple[str, _Step] | None = None  # a deltaOnly run: (subtype, step)
        self.fold = UsageFold()
        self.fold.start_stream()
        self.fold_version = 0
        self.final_cache: tuple[tuple[int, int], dict[str, Any]] | None = None
        self.fine_usage = False  # message or turn usage seen: counters stay out of the steps
        self.counters: dict[str, _Usage] = {}
        self.usage_seen = False
        self.sessions: list[str] = []
        self.dialect: str | None = None
        self.models: dict[str, int | float] = {}
        self.pending_usage: list[tuple[str | None, _Usage]] = []
        self.result_text: str | None = None
        self.first_ts: str | None = None

    # -- steps ----------------------------------------------------------------------------
    def close(self) -> None:
        self._flush_held()
        self.cur = None
        self.delta = None

    def plain_step(self, source: str, ev: Mapping[str, Any]) -> _Step:
        self.close()
        s = _Step(source, valid_timestamp(ev.get("timestamp")))
        self.steps.append(s)
        return s

    def agent_step(self, ev: Mapping[str, Any]) -> _Step:
        mc = _str(ev.get("modelCallId"))
        if mc is not None and mc in self.model_calls:
            return self.model_calls[mc]
        cur = self.cur
        if cur is not None and not cur.answered and (mc is None or cur.model_call is None):
            if mc is not None:
                cur.model_call = mc
                self.model_calls[mc] = cur
            return cur
        self.close()
        s = _Step("agent", valid_timestamp(ev.get("timestamp")))
        s.model_call = mc
        if mc is not None:
            self.model_calls[mc] = s
        self.steps.append(s)
        self.cur = s
        for mid, u in self.pending_usage:
            self._usage_to(s, mid, u)
        self.pending_usage = []
        return s

    def _flush_held(self) -> None:
        cur = self.cur
        if cur is not None and cur.held:
            cur.message += cur.held
            cur.held = []

    # -- events ---------------------------------------------------------------------------
    def add(self, ev: Mapping[str, Any]) -> None:
        kind, sub = ev.get("kind"), ev.get("subtype")
        ts = valid_timestamp(ev.get("timestamp"))
        if ts is not None and self.first_ts is None:
            self.first_ts = ts
        sid = ev.get("sessionId")
        if isinstance(sid, str) and sid and sid not in self.sessions:
            self.sessions.append(sid)
        if self.dialect is None and isinstance(ev.get("dialect"), str):
            self.dialect = ev["dialect"]
        if kind == "message":
            self._message(ev, sub)
        elif kind == "tool_call":
            self._tool_call(ev)
        elif kind == "error":
            self._error(ev, sub)
        elif kind == "usage":
            self._usage(ev)
        elif kind == "status":
            self._status(ev, sub)

    def _message(self, ev: Mapping[str, Any], sub: Any) -> None:
        text = _str(ev.get("text")) or ""
        role = ev.get("role")
        if sub == "tool_result":
            self._tool_result(ev, text)
            return
        if ev.get("delta") is True and ev.get("deltaOnly") is not True:
            return  # a partial delta the full line repeats
        if role in ("user", "system"):
            if not text and sub != "text":
                return
            s = self.plain_step(role, ev)
            s.message.append(text)
            return
        if sub not in ("text", "thinking"):
            return
        s = self.agent_step(ev)
        if ev.get("deltaOnly") is True:
            if self.delta is not None and self.delta == (sub, s):
                parts = s.reasoning if sub == "thinking" else s.message
                if parts:
                    parts[-1] += text
                    return
            self.delta = (sub, s)
        else:
            self.delta = None
        if sub == "thinking":
            if text:
                s.reasoning.append(text)
            return
        if ev.get("partial") is True:
            if self.partial_mode:
                return
            if s.held and "".join(s.held) == text:
                s.held = [text]
            else:
                s.held.append(text)
            return
        if s.held:
            if "".join(s.held) == text:
                self.partial_mode = True
            else:
                s.message += s.held
            s.held = []
        if text:
            s.message.append(text)

    def _tool_call(self, ev: Mapping[str, Any]) -> None:
        tool = _dict(ev.get("tool"))
        s = self.agent_step(ev)
        self._flush_held()
        self.delta = None
        cid = tool.get("id") if isinstance(tool.get("id"), str) and tool.get("id") else None
        if cid is not None and cid in self.calls:
            return  # the same call again (a started/completed pair)
        if cid is None:
            cid = f"call_{len(self.calls) + 1}"
            while cid in self.calls:
                cid += "_"
        args = tool.get("arguments")
        arguments = (
            dict(args) if isinstance(args, dict) else ({} if args is None else {"input": args})
        )
        call: dict[str, Any] = {
            "tool_call_id": cid,
            "function_name": tool.get("name") if isinstance(tool.get("name"), str) else "unknown",
            "arguments": arguments,
        }
        extra = {
            k: ev[k]
            for k in ("toolClass", "providerToolName", "providerArguments", "partialArguments")
            if k in ev
        }
        if isinstance(ev.get("subagent"), dict):
            extra["subagent"] = ev["subagent"]
        if extra:
            call["extra"] = extra
        s.calls.append(call)
        self.calls[cid] = s

    def _tool_result(self, ev: Mapping[str, Any], text: str) -> None:
        tool = _dict(ev.get("tool"))
        cid = tool.get("id") if isinstance(tool.get("id"), str) else None
        content: str = text
        if not content and "toolResult" in ev and ev["toolResult"] is not None:
            tr = ev["toolResult"]
            content = tr if isinstance(tr, str) else json.dumps(tr, ensure_ascii=False)
        result: dict[str, Any] = {"content": content}
        extra: dict[str, Any] = {}
        if tool.get("isError") is True:
            extra["isError"] = True
        owner = self.calls.get(cid) if cid is not None else None
        if owner is not None:
            result["source_call_id"] = cid
            owner.answered = True
        else:
            if cid is not None:
                extra["tool_call_id"] = cid
            if isinstance(tool.get("name"), str) and tool["name"] != "unknown":
                extra["tool_name"] = tool["name"]
            owner = self.cur if self.cur is not None else self._last_agent()
            if owner is None:
                owner = self.plain_step("system", ev)
        if extra:
            result["extra"] = extra
        owner.results.append(result)

    def _last_agent(self) -> _Step | None:
        for s in reversed(self.steps):
            if s.source == "agent":
                return s
        return None

    def _error(self, ev: Mapping[str, Any], sub: Any) -> None:
        err = _dict(ev.get("error"))
        message = err.get("message") if isinstance(err.get("message"), str) else ""
        s = self.plain_step("system", ev)
        s.message.append(f"error ({sub}): {message}" if message else f"error ({sub})")
        info: dict[str, Any] = {"subtype": sub, **err}
        for k in ("errorKind", "retry", "retryAt", "retryAfterMs", "repeatsError"):
            if k in ev:
                info[k] = ev[k]
        s.extra["error"] = info

    def _status(self, ev: Mapping[str, Any], sub: Any) -> None:
        if sub == "compaction":
            s = self.plain_step("system", ev)
            before, after = ev.get("tokensBefore"), ev.get("tokensAfter")
            text = _str(ev.get("text")) or ""
            msg = "context compacted"
            if text:
                msg += f" ({text})"
            if before is not None and after is not None:
                msg += f": {before} -> {after} tokens"
            s.message.append(msg)
            info = {"trigger": text or None, "tokens_before": before, "tokens_after": after}
            s.extra["context_management"] = {k: v for k, v in info.items() if v is not None}
        elif sub == "result":
            rt = ev.get("resultText")
            if isinstance(rt, str) and rt.strip():
                self.result_text = rt
                if not self._answered_since_user():
                    s = self.agent_step(ev)
                    s.message.append(rt)
            if "structuredOutput" in ev and ev["structuredOutput"] is not None:
                last = self._last_agent()
                if last is not None:
                    last.extra["structured_output"] = ev["structuredOutput"]

    def _answered_since_user(self) -> bool:
        for s in reversed(self.steps):
            if s.source == "user":
                return False
            if s.source == "agent" and (s.message or s.held):
                return True
        return False

    def _usage(self, ev: Mapping[str, Any]) -> None:
        self.usage_seen = True
        self.fold.add(dict(ev))
        self.fold_version += 1
        u = _Usage.of(ev)
        usage = _dict(ev.get("usage"))
        model = usage.get("model")
        if isinstance(model, str) and model != "unknown":
            self.models[model] = self.models.get(model, 0) + u.inp + u.out + 1
        scope = ev.get("usageScope", ev.get("subtype"))
        if scope == "cumulative":
            self._counter(ev, u)
            return
        self.fine_usage = True
        mid = ev.get("messageId") if scope == "message" else None
        mid = mid if isinstance(mid, str) else None
        step = self.model_calls.get(mid) if mid is not None else None
        if step is None:
            step = self.cur if self.cur is not None else self._last_agent()
        if step is None:
            self.pending_usage.append((mid, u))
            return
        self._usage_to(step, mid, u)
        if isinstance(model, str) and model != "unknown" and step.model is None:
            step.model = model

    def _usage_to(self, step: _Step, mid: str | None, u: _Usage) -> None:
        step.uversion += 1
        if mid is not None:
            seen = step.usage_msgs.get(mid)
            if seen is None:
                step.usage_msgs[mid] = u
            else:
                seen.merge_max(u)
        elif step.usage_plain is None:
            step.usage_plain = u
        else:
            step.usage_plain.add(u)

    def _counter(self, ev: Mapping[str, Any], u: _Usage) -> None:
        """A running counter (one per model): its increase goes to the latest agent step,
        unless the stream gave message or turn usage (then the steps have theirs and the
        counters only make the final totals). A counter that went down was reset."""
        usage = _dict(ev.get("usage"))
        model = _str(usage.get("model")) or "unknown"
        prev = self.counters.get(model)
        inc = u.minus(prev) if prev is not None and u.covers(prev) else copy.copy(u)
        self.counters[model] = copy.copy(u)
        if self.fine_usage:
            return
        step = self.cur if self.cur is not None else self._last_agent()
        if step is None:
            self.pending_usage.append((None, inc))
            return
        self._usage_to(step, None, inc)
        if model != "unknown" and step.model is None:
            step.model = model

    # -- rendering ------------------------------------------------------------------------
    def model_name(self) -> str | None:
        if not self.models:
            return None
        return max(self.models.items(), key=lambda kv: kv[1])[0]


class AtifBuilder:
    """Fold events into one ATIF trajectory (sub-agents embedded); :meth:`trajectory` at any
    point gives a valid document of what has been seen so far."""

    def __init__(self, *, agent: Mapping[str, Any] | None = None) -> None:
        self._agent = dict(agent) if agent is not None else {}
        self.root = _Node(None)
        self.subs: dict[str, _Node] = {}
        self.sub_meta: dict[str, dict[str, Any]] = {}  # subagent id -> name/description
        self.link: dict[str, str] = {}  # agentId -> the tool call id it runs under
        self.events = 0

    def add(self, ev: Mapping[str, Any]) -> None:
        self.events += 1
        key = self._sub_key(ev)
        if key is not None:
            node = self.subs.get(key)
            if node is None:
                node = self.subs[key] = _Node(key)
            node.add(ev)
            if ev.get("kind") == "usage":
                self.root.fold.add(dict(ev))
                self.root.fold_version += 1
                self.root.usage_seen = True
            return
        self.root.add(ev)
        sa = ev.get("subagent")
        if isinstance(sa, dict) and isinstance(sa.get("id"), str):
            meta = self.sub_meta.setdefault(sa["id"], {})
            for k in ("name", "type", "description"):
                if isinstance(sa.get(k), str):
                    meta.setdefault(k, sa[k])
            if isinstance(sa.get("disposition"), str):
                meta["disposition"] = sa["disposition"]
            if isinstance(sa.get("alias"), str):
                self.link.setdefault(sa["alias"], sa["id"])

    def _sub_key(self, ev: Mapping[str, Any]) -> str | None:
        agent_id = _str(ev.get("agentId"))
        parent = _str(ev.get("parentToolUseId"))
        if ev.get("sidechain") is True and agent_id:
            return agent_id
        if agent_id and parent:
            self.link.setdefault(agent_id, parent)
        if agent_id and ev.get("subtype") == "tool_result":
            tool = ev.get("tool")
            if isinstance(tool, dict) and isinstance(tool.get("id"), str):
                self.link.setdefault(agent_id, tool["id"])
        if parent and ev.get("kind") != "status":
            return parent
        return None

    def extend(self, events: Iterable[Mapping[str, Any]]) -> AtifBuilder:
        for ev in events:
            self.add(ev)
        return self

    # -- rendering ------------------------------------------------------------------------
    def agent(self, node: _Node, sub: str | None = None) -> dict[str, Any]:
        a: dict[str, Any] = {
            "name": self.root.dialect or node.dialect or "unknown",
            "version": "unknown",
        }
        model = node.model_name() or self.root.model_name()
        if model is not None:
            a["model_name"] = model
        a.update(self._agent)
        extra = dict(a.get("extra") or {})
        extra.setdefault("producer", f"checkfu-fast {producer_version()}")
        if sub is not None:
            meta = self.sub_meta.get(sub) or self.sub_meta.get(self.link.get(sub, ""), {})
            if meta:
                extra["subagent"] = meta
        a["extra"] = extra
        return a

    def trajectory(self) -> dict[str, Any]:
        """The ATIF document of the events so far (a valid one at every point)."""
        owner: dict[str, list[str]] = {}  # node key ("" = root) -> its sub-agents' keys
        call_of: dict[str, str | None] = {}
        call_home: dict[str, str] = {}
        for k2, n2 in self.subs.items():
            for cid in n2.calls:
                call_home.setdefault(cid, k2)
        for key in self.subs:
            call = self.link.get(key, key)
            call_of[key] = call
            home = call_home.get(call, "")
            owner.setdefault("" if home == key else home, []).append(key)
        return self._render(self.root, None, owner, call_of, set())

    def _render(
        self,
        node: _Node,
        key: str | None,
        owner: dict[str, list[str]],
        call_of: dict[str, str | None],
        seen: set[str],
    ) -> dict[str, Any]:
        subs = [k for k in owner.get(key or "", []) if k not in seen]
        seen.update(subs)
        agent = self.agent(node, key)
        steps = [_cached_step(s, agent.get("model_name")) for s in node.steps]
        if not steps:
            steps = [{"step_id": 1, "source": "system", "message": "", "extra": {"empty": True}}]
        refs: dict[str, list[dict[str, Any]]] = {}
        for k in subs:
            ref: dict[str, Any] = {"trajectory_id": k}
            meta = self.sub_meta.get(call_of.get(k) or "") or self.sub_meta.get(k)
            if meta:
                ref["extra"] = meta
            refs.setdefault(call_of.get(k) or k, []).append(ref)
        pos = {id(s): i for i, s in enumerate(node.steps)} if refs else {}
        for call, rs in refs.items():
            step_obj = node.calls.get(call)
            idx = pos[id(step_obj)] if step_obj is not None else len(steps) - 1
            _attach_refs(steps[idx], call if step_obj is not None else None, rs)
            steps[idx] = _order(steps[idx])
        for i, s in enumerate(steps):
            s["step_id"] = i + 1
        doc: dict[str, Any] = {"schema_version": ATIF_VERSION}
        sessions = node.sessions or self.root.sessions
        sid = sessions[0] if sessions else None
        if sid is not None:
            doc["session_id"] = sid
        doc["trajectory_id"] = key if key is not None else (sid or "trajectory")
        doc["agent"] = agent
        doc["steps"] = steps
        doc["final_metrics"] = _final(node, len(steps))
        extra: dict[str, Any] = {}
        if len(node.sessions) > 1:
            extra["session_ids"] = list(node.sessions)
        if key is None:
            extra["events"] = self.events
        if extra:
            doc["extra"] = extra
        if subs:
            doc["subagent_trajectories"] = [
                self._render(self.subs[k], k, owner, call_of, seen) for k in subs
            ]
        return doc


_STEP_KEYS = (
    "step_id",
    "timestamp",
    "source",
    "model_name",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "extra",
)


def _order(s: dict[str, Any]) -> dict[str, Any]:
    return {k: s[k] for k in _STEP_KEYS if k in s}


def _attach_refs(step: dict[str, Any], call: str | None, refs: list[dict[str, Any]]) -> None:
    old = step.get("observation", {"results": []})
    obs = step["observation"] = {"results": [dict(r) for r in old["results"]]}
    for r in obs["results"]:
        if call is not None and r.get("source_call_id") == call:
            r["subagent_trajectory_ref"] = [*r.get("subagent_trajectory_ref", []), *refs]
            return
    r2: dict[str, Any] = {"subagent_trajectory_ref": refs}
    if call is not None:
        r2["source_call_id"] = call
    obs["results"].append(r2)


def _cached_step(s: _Step, agent_model: Any) -> dict[str, Any]:
    """The step rendered (from the cache while nothing it shows changed), a fresh dict."""
    key = s.key(agent_model)
    if s.cache is None or s.cache[0] != key:
        s.cache = (key, _order(_render_step(s, agent_model)))
    return {"step_id": 0, **s.cache[1]}


def _render_step(s: _Step, agent_model: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"source": s.source}
    if s.timestamp is not None:
        out["timestamp"] = s.timestamp
    if s.source == "agent" and s.model is not None and s.model != agent_model:
        out["model_name"] = s.model
    out["message"] = "\n\n".join([*s.message, *s.held])
    if s.source == "agent":
        if s.reasoning:
            out["reasoning_content"] = "\n\n".join(s.reasoning)
        if s.calls:
            out["tool_calls"] = [dict(c) for c in s.calls]
        u = s.usage()
        if u is not None:
            out["metrics"] = u.metrics()
    if s.results:
        out["observation"] = {"results": [dict(r) for r in s.results]}
    if s.extra:
        out["extra"] = dict(s.extra)
    return out


def _totals(fold: UsageFold) -> dict[str, Any]:
    """``fold.totals()["total"]`` without ending the fold's stream (``totals`` ends it, and a
    live trajectory goes on): the totals of :meth:`UsageFold.peek`, a copy whose merging
    leaves the fold as it is. ``tests/test_export_atif.py`` holds it equal to a deep copy's
    totals."""
    total: dict[str, Any] = fold.peek().totals()["total"]
    return total


def _final(node: _Node, steps: int) -> dict[str, Any]:
    key = (node.fold_version, steps)
    if node.final_cache is not None and node.final_cache[0] == key:
        return copy.deepcopy(node.final_cache[1])
    fm: dict[str, Any] = {}
    if node.usage_seen:
        t = _totals(node.fold)
        extra: dict[str, Any] = {"cost_source": t["source"]}
        for key_, name in (
            ("inputTokens", "total_prompt_tokens"),
            ("outputTokens", "total_completion_tokens"),
            ("cachedTokens", "total_cached_tokens"),
        ):
            n = _as_int(t[key_])
            if n is None:
                extra[name] = t[key_]
            else:
                fm[name] = n
        if t["costUsd"] is not None:
            fm["total_cost_usd"] = float(t["costUsd"])
        if t.get("estimatedUsd"):
            extra["estimated_cost_usd"] = t["estimatedUsd"]
            snapshot = getattr(node.fold, "prices", None)
            if snapshot is not None:
                extra["prices"] = snapshot.describe()
        for key_, name in (
            ("reasoningTokens", "total_reasoning_tokens"),
            ("cacheWriteTokens", "total_cache_write_tokens"),
            ("cacheWrite1hTokens", "total_cache_write_1h_tokens"),
        ):
            if key_ in t:
                extra[name] = t[key_]
        if t.get("unpricedModels"):
            extra["unpriced_models"] = t["unpricedModels"]
        fm["extra"] = extra
    fm["total_steps"] = steps
    out = {k: fm[k] for k in sorted(fm, key=_FINAL_ORDER.index)}
    node.final_cache = (key, out)
    return copy.deepcopy(out)


_FINAL_ORDER = [
    "total_prompt_tokens",
    "total_completion_tokens",
    "total_cached_tokens",
    "total_cost_usd",
    "total_steps",
    "extra",
]


def to_atif(
    events: Iterable[Mapping[str, Any]], *, agent: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One ATIF trajectory (``ATIF-v1.8``, Harbor's current version) of the events' session:
    steps from user, agent and system messages, tool calls joined to their observations by
    tool id, per-step and final metrics, sub-agents embedded as ``subagent_trajectories``.
    ``agent`` overrides fields of the trajectory's ``agent`` object (``name``, ``version``,
    ``model_name``, ``extra``, ...). Reads event fields only."""
    return AtifBuilder(agent=agent).extend(events).trajectory()
