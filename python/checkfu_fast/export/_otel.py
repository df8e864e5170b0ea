"""events/v1 events -> OpenTelemetry spans by the GenAI semantic conventions.

One trace per session: an ``invoke_agent`` span for the session, a ``chat`` span per model call
(``gen_ai.request.model``, ``gen_ai.usage.*`` with the cache reads), an ``execute_tool`` span
per tool call (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, from the call to its result), an
error status from error events, and each sub-agent as an ``invoke_agent`` span under the tool
call that started it. Spans are timed by the events' ``timestamp`` where present, else by the
last timestamp seen in the session, else by arrival; each span is ended (and so exported by the
span processor) as soon as the stream shows it closed. Only event fields are read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from ..usage import NON_TERMINAL_ERRORS, UsageFold
from ._atif import _dict, _str, _Usage, valid_timestamp
from ._sessions import split_sessions

_MAX_ATTR = 8192  # characters of tool arguments/results kept on a span
_PROVIDERS = {"claude": "anthropic", "codex": "openai", "grok": "x_ai"}
_TRACER = "checkfu_fast.export"


def _otel() -> Any:
    try:
        from opentelemetry import trace
    except ImportError as exc:  # pragma: no cover - the otel extra is absent
        raise ImportError(
            "the OpenTelemetry export needs opentelemetry-sdk and the OTLP/HTTP exporter: "
            "pip install 'checkfu-fast[otel]'"
        ) from exc
    return trace


def _ns(ts: str) -> int | None:
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        # Python 3.10 reads only 0, 3 or 6 fraction digits: cut to microseconds
        head, _, rest = ts.partition(".")
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits) :]
        try:
            t = datetime.fromisoformat(
                f"{head}.{(digits + '000000')[:6]}{zone}".replace("Z", "+00:00")
            )
        except ValueError:
            return None
    if t.tzinfo is None:
        return None
    return int(t.timestamp()) * 1_000_000_000 + t.microsecond * 1000


def _text(v: Any) -> str:
    s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
    return s if len(s) <= _MAX_ATTR else s[:_MAX_ATTR] + f"... ({len(s) - _MAX_ATTR} more)"


class _Agent:
    """One agent's spans (the session, or a sub-agent): its invoke_agent span, the open chat
    span and the open tool spans."""

    def __init__(self, span: Any) -> None:
        self.span = span
        self.chat: Any = None
        self.chat_call: str | None = None
        self.chat_usage: dict[str, _Usage] = {}  # messageId (or "") -> usage
        self.chat_model: str | None = None
        self.chat_answered = False
        self.chat_end = 0
        self.tools: dict[str, Any] = {}
        self.last = 0
        self.fine_usage = False
        self.counters: dict[str, _Usage] = {}
        self.calls = 0


class OtelEmitter:
    """Fold one session's events into spans (``add`` per event, ``close`` once)."""

    def __init__(self, tracer: Any, *, agent_name: str | None = None) -> None:
        self._trace = _otel()
        self._tracer = tracer
        self._agent_name = agent_name
        self._root: _Agent | None = None
        self._subs: dict[str, _Agent] = {}
        self._tool_owner: dict[str, _Agent] = {}  # open tool span id -> its agent
        self._link: dict[str, str] = {}  # agentId -> the call id it runs under
        self._names: dict[str, str] = {}  # sub-agent id -> name
        self._fold = UsageFold()
        self._fold.start_stream()
        self._last_ts: int | None = None
        self._failed: dict[str, Any] | None = None
        self.spans = 0
        self.trace_id: int | None = None

    # -- time -----------------------------------------------------------------------------
    def _time(self, ev: Mapping[str, Any]) -> int:
        ts = valid_timestamp(ev.get("timestamp"))
        t = _ns(ts) if ts is not None else None
        if t is not None:
            self._last_ts = t
        elif self._last_ts is not None:
            t = self._last_ts
        else:
            t = time.time_ns()
        return t

    def _start(self, name: str, parent: Any, kind: str, start: int, attrs: dict[str, Any]) -> Any:
        trace = self._trace
        ctx = trace.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(
            name,
            context=ctx,
            kind=getattr(trace.SpanKind, kind),
            attributes=attrs,
            start_time=start,
        )
        self.spans += 1
        return span

    def _end(self, span: Any, at: int, start_floor: int = 0) -> None:
        span.end(end_time=max(at, start_floor))

    # -- agents ---------------------------------------------------------------------------
    def _root_agent(self, ev: Mapping[str, Any], t: int) -> _Agent:
        if self._root is None:
            dialect = _str(ev.get("dialect")) or "unknown"
            name = self._agent_name or dialect
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "checkfu.dialect": dialect,
            }
            if dialect in _PROVIDERS:
                attrs["gen_ai.provider.name"] = _PROVIDERS[dialect]
            sid = _str(ev.get("sessionId"))
            if sid:
                attrs["gen_ai.conversation.id"] = sid
            span = self._start(f"invoke_agent {name}", None, "INTERNAL", t, attrs)
            self._root = _Agent(span)
            self._root.last = t
            self.trace_id = span.get_span_context().trace_id
        return self._root

    def _agent_of(self, ev: Mapping[str, Any], t: int) -> _Agent:
        root = self._root_agent(ev, t)
        agent_id = _str(ev.get("agentId"))
        parent = _str(ev.get("parentToolUseId"))
        key: str | None = None
        if ev.get("sidechain") is True and agent_id:
            key = agent_id
        else:
            if agent_id and parent:
                self._link.setdefault(agent_id, parent)
            if parent and ev.get("kind") != "status":
                key = parent
        if key is None:
            return root
        sub = self._subs.get(key)
        if sub is None:
            call = self._link.get(key, key)
            owner = self._tool_owner.get(call)
            parent_span = owner.tools[call] if owner is not None else root.span
            name = self._names.get(call) or self._names.get(key) or "subagent"
            attrs = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                "gen_ai.agent.id": key,
            }
            sub = self._subs[key] = _Agent(
                self._start(f"invoke_agent {name}", parent_span, "INTERNAL", t, attrs)
            )
            sub.last = t
        return sub

    # -- events ---------------------------------------------------------------------------
    def add(self, ev: Mapping[str, Any]) -> None:
        t = self._time(ev)
        self._fold.add(dict(ev))
        sa = _dict(ev.get("subagent"))
        if isinstance(sa.get("id"), str):
            for k in ("name", "type"):
                if isinstance(sa.get(k), str):
                    self._names.setdefault(sa["id"], sa[k])
            if isinstance(sa.get("alias"), str):
                self._link.setdefault(sa["alias"], sa["id"])
        a = self._agent_of(ev, t)
        a.last = max(a.last, t)
        kind, sub = ev.get("kind"), ev.get("subtype")
        if kind == "message":
            if sub == "tool_result":
                self._tool_result(ev, t)
            elif ev.get("role") in ("user", "system"):
                self._end_chat(a)
            elif ev.get("role") == "assistant" and sub in ("text", "thinking"):
                self._chat(a, ev, t)
        elif kind == "tool_call":
            self._tool_call(a, ev, t)
        elif kind == "usage":
            self._usage(a, ev, t)
        elif kind == "error":
            self._error(a, ev, t)

    def _chat(self, a: _Agent, ev: Mapping[str, Any], t: int) -> None:
        mc = _str(ev.get("modelCallId"))
        if a.chat is not None and not a.chat_answered and (mc is None or a.chat_call in (None, mc)):
            if mc is not None:
                a.chat_call = mc
        else:
            self._end_chat(a)
            a.calls += 1
            a.chat = self._start("chat", a.span, "CLIENT", t, {"gen_ai.operation.name": "chat"})
            a.chat_call = mc
        a.chat_end = max(a.chat_end, t)
        stop = _str(ev.get("stopReason"))
        if stop:
            a.chat.set_attribute("gen_ai.response.finish_reasons", [stop])

    def _end_chat(self, a: _Agent) -> None:
        chat = a.chat
        if chat is None:
            return
        total: _Usage | None = None
        for u in a.chat_usage.values():
            if total is None:
                total = _Usage()
            total.add(u)
        if a.chat_call:
            chat.set_attribute("gen_ai.response.id", a.chat_call)
        if a.chat_model:
            chat.set_attribute("gen_ai.request.model", a.chat_model)
            chat.set_attribute("gen_ai.response.model", a.chat_model)
            chat.update_name(f"chat {a.chat_model}")
        if total is not None:
            _usage_attrs(chat, total)
        self._end(chat, a.chat_end)
        a.chat = None
        a.chat_call = None
        a.chat_usage = {}
        a.chat_model = None
        a.chat_answered = False

    def _tool_call(self, a: _Agent, ev: Mapping[str, Any], t: int) -> None:
        if a.chat is None:
            self._chat(a, ev, t)
        a.chat_end = max(a.chat_end, t)
        tool = _dict(ev.get("tool"))
        cid = _str(tool.get("id")) or f"call_{self.spans}"
        if cid in a.tools:
            return
        name = _str(tool.get("name")) or "unknown"
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": cid,
            "gen_ai.tool.type": "extension" if ev.get("toolClass") == "mcp" else "function",
        }
        if "arguments" in tool:
            attrs["gen_ai.tool.call.arguments"] = _text(tool["arguments"])
        tc = _str(ev.get("toolClass"))
        if tc:
            attrs["checkfu.tool_class"] = tc
        a.tools[cid] = self._start(f"execute_tool {name}", a.span, "INTERNAL", t, attrs)
        self._tool_owner[cid] = a

    def _tool_result(self, ev: Mapping[str, Any], t: int) -> None:
        tool = _dict(ev.get("tool"))
        cid = _str(tool.get("id"))
        owner = self._tool_owner.pop(cid, None) if cid is not None else None
        if owner is None or cid is None:
            return
        owner.chat_answered = True
        span = owner.tools.pop(cid)
        text = _str(ev.get("text"))
        if text is None and ev.get("toolResult") is not None:
            text = _text(ev["toolResult"])
        if text is not None:
            span.set_attribute("gen_ai.tool.call.result", _text(text))
        if tool.get("isError") is True:
            trace = self._trace
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool reported an error"))
            span.set_attribute("error.type", "tool_error")
        # a sub-agent started by this call ends with its result
        for key, sub in list(self._subs.items()):
            if self._link.get(key, key) == cid and sub.span is not None:
                self._close_agent(sub, t)
        self._end(span, t)

    def _usage(self, a: _Agent, ev: Mapping[str, Any], t: int) -> None:
        u = _Usage.of(ev)
        usage = _dict(ev.get("usage"))
        model = _str(usage.get("model"))
        scope = ev.get("usageScope", ev.get("subtype"))
        if scope == "cumulative":
            prev = a.counters.get(model or "")
            inc = u.minus(prev) if prev is not None and u.covers(prev) else u
            a.counters[model or ""] = u
            if a.fine_usage or a.chat is None:
                return
            u = inc
            key = f"c{len(a.chat_usage)}"
        else:
            a.fine_usage = True
            mid = _str(ev.get("messageId")) if scope == "message" else None
            if a.chat is None or (mid and a.chat_call not in (None, mid)):
                return  # its model call has ended: counted in the session's totals
            key = mid or f"p{len(a.chat_usage)}"
        seen = a.chat_usage.get(key)
        if seen is None:
            a.chat_usage[key] = u
        else:
            seen.merge_max(u)
        if model and model != "unknown" and a.chat_model is None:
            a.chat_model = model

    def _error(self, a: _Agent, ev: Mapping[str, Any], t: int) -> None:
        trace = self._trace
        err = _dict(ev.get("error"))
        message = _str(err.get("message")) or str(ev.get("subtype"))
        etype = _str(err.get("code")) or str(ev.get("subtype"))
        attrs = {
            "error.type": etype,
            "exception.message": _text(message),
            "checkfu.error_kind": _str(ev.get("errorKind")) or "unknown",
        }
        target = a.chat if a.chat is not None else a.span
        target.add_event("error", attributes=attrs, timestamp=t)
        if ev.get("subtype") in NON_TERMINAL_ERRORS or ev.get("retry") is True:
            return
        status = trace.Status(trace.StatusCode.ERROR, message[:1024])
        if a.chat is not None:
            a.chat.set_status(status)
            a.chat.set_attribute("error.type", etype)
        a.span.set_status(status)
        a.span.set_attribute("error.type", etype)
        self._end_chat(a)

    # -- the end --------------------------------------------------------------------------
    def _close_agent(self, a: _Agent, at: int) -> None:
        self._end_chat(a)
        for cid, span in list(a.tools.items()):
            span.set_attribute("checkfu.unfinished", True)
            self._end(span, a.last)
            self._tool_owner.pop(cid, None)
        a.tools = {}
        if a.span is not None:
            self._end(a.span, max(at, a.last))
            a.span = None

    def close(self) -> None:
        """End every span still open (the session's last, its invoke_agent span)."""
        root = self._root
        for sub in self._subs.values():
            if sub.span is not None:
                self._close_agent(sub, sub.last)
        if root is None:
            return
        t = self._fold.totals()["total"]
        span = root.span
        if span is not None:
            for key, name in (
                ("inputTokens", "gen_ai.usage.input_tokens"),
                ("outputTokens", "gen_ai.usage.output_tokens"),
                ("cachedTokens", "gen_ai.usage.cache_read.input_tokens"),
            ):
                if isinstance(t[key], int) and (t[key] or t["source"] != "absent"):
                    span.set_attribute(name, t[key])
            if isinstance(t.get("cacheWriteTokens"), int):
                span.set_attribute(
                    "gen_ai.usage.cache_creation.input_tokens", t["cacheWriteTokens"]
                )
            if t["costUsd"] is not None:
                span.set_attribute("checkfu.usage.cost_usd", float(t["costUsd"]))
                span.set_attribute("checkfu.usage.cost_source", str(t["source"]))
            ends = [k for k, n in t["endings"].items() if n]
            if ends:
                span.set_attribute("checkfu.ending", ends[-1])
        self._close_agent(root, root.last)


def _usage_attrs(span: Any, u: _Usage) -> None:
    if u.known:
        for name, val in (
            ("gen_ai.usage.input_tokens", u.inp),
            ("gen_ai.usage.output_tokens", u.out),
            ("gen_ai.usage.cache_read.input_tokens", u.cached),
        ):
            span.set_attribute(name, int(val) if float(val).is_integer() else float(val))
        if u.reasoning is not None:
            span.set_attribute("gen_ai.usage.reasoning.output_tokens", u.reasoning)
        if u.cw is not None:
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", u.cw)
    if u.cost is not None:
        span.set_attribute("checkfu.usage.cost_usd", u.cost)
    elif u.est is not None:
        span.set_attribute("checkfu.usage.cost_usd", u.est)
        span.set_attribute("checkfu.usage.cost_source", "estimated")


def to_otel(events: Iterable[Mapping[str, Any]], tracer_provider: Any = None) -> dict[str, Any]:
    """Emit the events as OpenTelemetry spans (GenAI semantic conventions), one trace per
    session, through ``tracer_provider`` (default: the global one). Returns
    ``{"traces": [trace id hex, ...], "spans": N}``. The provider is flushed at the end."""
    trace = _otel()
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    from .. import __version__

    tracer = provider.get_tracer(_TRACER, __version__)
    traces: list[str] = []
    spans = 0
    for evs in split_sessions(events).values():
        em = OtelEmitter(tracer)
        for ev in evs:
            em.add(ev)
        em.close()
        spans += em.spans
        if em.trace_id is not None:
            traces.append(f"{em.trace_id:032x}")
    flush = getattr(provider, "force_flush", None)
    if callable(flush):
        flush()
    return {"traces": traces, "spans": spans}


def otlp_provider(service_name: str = "checkfu-fast", *, live: bool = False) -> Any:
    """A ``TracerProvider`` that sends to the OTLP/HTTP endpoint of the standard ``OTEL_*``
    variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT``, ``..._HEADERS``,
    ``OTEL_SERVICE_NAME``, ...). Call ``shutdown()`` on it when done (it flushes). ``live``:
    spans are sent within half a second of their end (unless ``OTEL_BSP_SCHEDULE_DELAY``
    says otherwise), not the batch processor's default five."""
    _otel()
    import os

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

    name = os.environ.get("OTEL_SERVICE_NAME") or service_name
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    exporter = CountingExporter(OTLPSpanExporter())
    delay = 500 if live and not os.environ.get("OTEL_BSP_SCHEDULE_DELAY") else None
    processor = BatchSpanProcessor(cast("SpanExporter", exporter), schedule_delay_millis=delay)
    provider.add_span_processor(processor)
    provider._checkfu_exporter = exporter  # type: ignore[attr-defined]
    return provider


class CountingExporter:
    """A span exporter that counts what its inner one sent and what failed (for exit codes)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.sent = 0
        self.failed = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self.inner.export(spans)
        if result == SpanExportResult.SUCCESS:
            self.sent += len(spans)
        else:
            self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.inner.force_flush(timeout_millis))
