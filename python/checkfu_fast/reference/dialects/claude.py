"""claude: Claude Code ``-p --output-format stream-json --verbose``, and the session files the
CLI writes under ``~/.claude/projects/`` (docs/session-files-2026.md section 1): their lines are
recognised one by one (a ``parentUuid`` key or an ``isSidechain`` boolean, or a record type only
session files have), so one stream may mix both.

Mirror of rust/dialects/claude.rs.
"""

from __future__ import annotations

from typing import Any, cast

from ..events import (
    Event,
    action,
    cache_writes,
    classify,
    compaction_tokens,
    content_text,
    epoch_int,
    error,
    http_kind,
    is_count,
    line_extras,
    msg,
    name_or_unknown,
    percent_of_fraction,
    require,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
    with_rate_limits,
)
from ..retry import format_epoch, format_ms

NAME = "claude"

# assistant `error` values (Agent SDK's AssistantMessageError) with a known kind
_ASSISTANT_ERROR_KINDS = {
    "rate_limit": "quota",
    "billing_error": "quota",
    "server_error": "transport",
    "authentication_failed": "semantic",
    "invalid_request": "semantic",
    "max_output_tokens": "semantic",
    "model_not_found": "semantic",
}
_SYSTEM_SUBTYPES = {
    "init": "init",
    "session_start": "init",  # Qwen Code
    "compact_boundary": "compaction",
    "task_started": "subagent",
    "task_progress": "subagent",
    "task_notification": "subagent",
    "task_updated": "subagent",
}
# system subtypes that are progress notes: the field that names them (else the subtype)
_PROGRESS_TEXT = {
    "thinking_tokens": None,  # the hot line: no usage, no field read
    "hook_started": None,
    "hook_progress": None,
    "hook_response": None,
    "permission_denied": "message",
    "notification": "text",
    "session_state_changed": "state",
    "files_persisted": None,
    "elicitation_complete": None,
    "model_fallback": "content",
    "model_refusal_fallback": "content",
    "model_refusal_no_fallback": "content",
    "model_consent_fallback": "content",
    "post_turn_summary": "content",
    "mirror_error": "content",
    # the rest of the Agent SDK's SDKMessage union (sdk.d.ts, issue 25)
    "informational": "content",
    "control_request_progress": "status",
    "plugin_install": "status",
    "worker_shutting_down": "reason",
    "memory_recall": None,
}
# top-level types that are progress notes: the field that gives their text
_TOP_PROGRESS = {
    "tool_progress": "tool_name",
    "tool_use_summary": "summary",
    "prompt_suggestion": "suggestion",  # a predicted next prompt: never the answer
    "transcript_mirror": "filePath",  # --session-mirror: the session file's new entries
    "keep_alive": "type",
}
# api_retry `error` (SDKAssistantMessageError) -> kind, when the HTTP status decides none
_RETRY_ERROR_KINDS = {
    "rate_limit": "quota",
    "billing_error": "quota",
    "server_error": "transport",
    "authentication_failed": "semantic",
    "invalid_request": "semantic",
    "max_output_tokens": "semantic",
    "model_not_found": "semantic",
}


def meta(v: dict[str, Any]) -> dict[str, Any]:
    m: dict[str, Any] = {}
    if isinstance(v.get("session_id"), str):
        m["sessionId"] = v["session_id"]
    elif isinstance(v.get("sessionId"), str):  # session files
        m["sessionId"] = v["sessionId"]
    if _nonempty(v.get("timestamp")) is not None:
        m["timestamp"] = v["timestamp"]
    t = v.get("type")
    data = v.get("data")
    if isinstance(v.get("parent_tool_use_id"), str):
        m["parentToolUseId"] = v["parent_tool_use_id"]
    elif t == "progress" and isinstance(data, dict) and isinstance(v.get("parentToolUseID"), str):
        m["parentToolUseId"] = v["parentToolUseID"]  # a sub-agent's progress in its parent
    message = v.get("message")
    if isinstance(message, dict) and isinstance(message.get("id"), str) and message["id"]:
        m["modelCallId"] = message["id"]
    m.update(line_extras(v, outcome=t in ("result", "assistant")))
    if t == "result":  # null: a result line that reports no text
        m["resultText"] = v["result"] if isinstance(v.get("result"), str) else None
        if "structured_output" in v:
            m["structuredOutput"] = v["structured_output"]
    if _nonempty(v.get("requestId")) is not None:
        m["requestId"] = v["requestId"]
    if _nonempty(v.get("agentId")) is not None:
        m["agentId"] = v["agentId"]
    elif t == "progress" and isinstance(data, dict) and _nonempty(data.get("agentId")):
        m["agentId"] = data["agentId"]
    if v.get("isSidechain") is True:
        m["sidechain"] = True
    if _nonempty(v.get("cwd")) is not None:
        m["cwd"] = v["cwd"]
    return m


def is_session_line(v: dict[str, Any]) -> bool:
    """A conversation line of a session file (its envelope), not of stream-json."""
    return "parentUuid" in v or isinstance(v.get("isSidechain"), bool)


# session-file record types that are progress notes: the field that gives their text
# (None: the type itself)
_SESSION_PROGRESS = {
    "summary": "summary",
    "file-history-snapshot": None,
    "permission-mode": "permissionMode",
    "ai-title": "aiTitle",
    "custom-title": "customTitle",
    "last-prompt": "lastPrompt",
    "agent-name": "agentName",
    "mode": "mode",
    "tag": "tag",
    "pr-link": None,
    "content-replacement": None,
    "saved_hook_context": None,
}


def _session_record(v: dict[str, Any], t: str) -> list[Event]:
    """``progress``, ``queue-operation``, ``attachment`` and the metadata records."""
    if t == "progress":  # never the embedded sub-agent message or its usage
        data = v.get("data")
        kind = _nonempty(data.get("type")) if isinstance(data, dict) else None
        return [status("progress", kind or t)]
    if t == "queue-operation":
        op = _nonempty(v.get("operation")) or t
        content = _nonempty(v.get("content"))
        return [status("progress", f"{op}: {content}" if content is not None else op)]
    if t == "attachment":
        a = v.get("attachment")
        kind = _nonempty(a.get("type")) if isinstance(a, dict) else None
        return [status("progress", kind or t)]
    field = _SESSION_PROGRESS[t]
    text = _nonempty(v.get(field)) if field is not None else None
    return [status("progress", text or t)]


def _session_api_error(v: dict[str, Any]) -> Event:
    """A session file's ``system/api_error``: one retry attempt of a failed request (the CLI
    retries after ``retryInMs``), not a terminal failure."""
    err = v.get("error")
    http: Any = None
    connection = False
    if isinstance(err, dict):
        message = _nonempty(err.get("message")) or _nonempty(err.get("formatted"))
        http = err.get("status")
        c = err.get("connection")
        connection = not (c is None or c is False) or err.get("isNetworkDown") is True
    else:
        message = _nonempty(err)
    message = message or "api error"
    attempt, most = v.get("retryAttempt"), v.get("maxRetries")
    if is_int(attempt):
        message = f"api retry {attempt}" + (f"/{most}" if is_int(most) else "") + f": {message}"
    kind = http_kind(http) if is_int(http) else None
    if kind is None:
        kind = "transport" if connection else classify(message)
    ev = error("retry", "api_error", message, kind)
    ev["retry"] = True
    delay = v.get("retryInMs")
    if kind in ("quota", "transport") and is_int(delay) and cast(int, delay) >= 0:
        ev["retryAfterMs"] = delay
    return ev


def _session_system(v: dict[str, Any], native: Any) -> list[Event] | None:
    """The ``system`` subtypes only session files write (None: the stream-json rules apply)."""
    if native == "api_error":
        return [_session_api_error(v)]
    if native == "microcompact_boundary":
        return [status("compaction", "microcompact")]
    if native == "turn_duration":
        return [status("turn_completed")]
    if isinstance(native, str) and (
        native in _PROGRESS_TEXT or native in _SYSTEM_SUBTYPES or native in _STREAM_SYSTEM
    ):
        return None
    return [status("progress", _nonempty(v.get("content")) or _nonempty(native) or "system")]


# system subtypes with their own mapping below (besides the tables)
_STREAM_SYSTEM = ("status", "api_retry", "commands_changed", "background_tasks_changed")


def _commands_changed(v: dict[str, Any]) -> Event:
    """``system/commands_changed``: the slash commands and skills now available (a long list:
    only its length is kept)."""
    c = v.get("commands")
    return status("progress", f"commands_changed: {len(c)}" if isinstance(c, list) else None)


def _background_tasks(v: dict[str, Any]) -> Event:
    """``system/background_tasks_changed``: the whole live set of background tasks (each task's
    own ``task_*`` lines carry its changes): their descriptions, else ids."""
    tasks = v.get("tasks")
    if not isinstance(tasks, list):
        return status("progress", "background_tasks_changed")
    ev = status("progress")
    ev["backgroundTasks"] = tasks  # the live set as given: a runner keeps stdin open for it
    names = []
    for t in tasks:
        if isinstance(t, dict):
            name = _nonempty(t.get("description")) or _nonempty(t.get("task_id"))
            if name is not None:
                names.append(name)
    ev["text"] = "background tasks: " + ("; ".join(names) or "none")
    return ev


def _control(v: dict[str, Any], t: str) -> Event:
    """The control channel of ``--input-format stream-json``: ``control_response`` (the CLI's
    reply to a request sent on stdin, e.g. an interrupt: ``{"response": {"subtype": "success",
    "request_id", "response": {"still_queued": []}}}``, or ``"error"`` with ``error``),
    ``control_request`` (the CLI asks the host: ``can_use_tool``, ``hook_callback``, ...) and
    ``control_cancel_request``. Never an error of the turn: a progress note."""
    holder = v.get("response") if t == "control_response" else v.get("request")
    if not isinstance(holder, dict):
        holder = v
    rid = _nonempty(holder.get("request_id")) or _nonempty(v.get("request_id"))
    parts = [t] + [x for x in (_nonempty(holder.get("subtype")), rid) if x is not None]
    text = " ".join(parts)
    err = _nonempty(holder.get("error")) if t == "control_response" else None
    ev = status("progress", text + (f": {err}" if err is not None else ""))
    if rid is not None:
        ev["controlRequestId"] = rid
    reply = holder.get("response")
    if t == "control_response" and isinstance(reply, dict):
        ev["controlResponse"] = reply  # e.g. an interrupt's {"still_queued": [...]}
    return ev


def _active_goal(v: dict[str, Any]) -> Event:
    """``active_goal``: the goal the session now pursues (``value.condition``), or none."""
    value = v.get("value")
    if value is None:
        return status("progress", "active_goal: none")
    cond = _nonempty(value.get("condition")) if isinstance(value, dict) else None
    return status("progress", f"active_goal: {cond}" if cond is not None else "active_goal")


# task_notification statuses -> sub-agent dispositions
DISPOSITIONS = {
    "completed": "completed",
    "failed": "failed",
    "error": "failed",
    "stopped": "canceled",
    "killed": "canceled",
    "canceled": "canceled",
    "cancelled": "canceled",
}
# tools whose call starts a sub-agent (their input names it)
_SPAWN_TOOLS = ("Task", "Agent")


def _nonempty(x: Any) -> str | None:
    return x if isinstance(x, str) and x else None


def _status(v: dict[str, Any]) -> Event:
    """``system/status``: compaction start/end/failure, else a progress note."""
    st = v.get("status")
    result = v.get("compact_result")
    if st == "compacting":
        return status("compaction", "compacting")
    if result == "success":
        return status("compaction", "compacted")
    if result == "failed":  # no compact_boundary follows; the turn goes on
        message = text_of(v.get("compact_error")) or "compaction failed"
        return error("compaction_error", "compaction_failed", message, "semantic")
    return status("progress", st if isinstance(st, str) and st else "status")


def _api_retry(v: dict[str, Any]) -> Event:
    """``system/api_retry``: a transient error; the CLI retries after ``retry_delay_ms``."""
    err = v.get("error")
    if isinstance(err, dict):  # a fork's {type, message, error}
        err = err.get("error")
    code = err if isinstance(err, str) and err else "api_retry"
    http = v.get("error_status")
    message = "api retry"
    attempt, most = v.get("attempt"), v.get("max_retries")
    if is_int(attempt):
        message += f" {attempt}" + (f"/{most}" if is_int(most) else "")
    message += f": {code}"
    if is_int(http):
        message += f" (HTTP {http})"
    kind = http_kind(http) or _RETRY_ERROR_KINDS.get(code)
    if kind is None:  # no HTTP response at all: a connection error or timeout
        kind = "transport" if http is None else classify(message)
    ev = error("retry", code, message, kind)
    ev["retry"] = True
    delay = v.get("retry_delay_ms")
    if kind in ("quota", "transport") and is_int(delay) and 0 <= cast(int, delay) < 1 << 63:
        ev["retryAfterMs"] = delay
    return ev


def is_int(x: Any) -> bool:
    """An integer the native side reads as one (i64)."""
    return type(x) is int and -(1 << 63) <= x < 1 << 63


def _top_progress(v: dict[str, Any], t: str) -> list[Event]:
    text = v.get(_TOP_PROGRESS[t])
    return [status("progress", text if isinstance(text, str) and text else t)]


def _auth_status(v: dict[str, Any]) -> list[Event]:
    err = v.get("error")
    if isinstance(err, str) and err:
        return [error("auth_error", "auth_status", err, "semantic")]
    out = v.get("output")
    lines = [x for x in out if isinstance(x, str)] if isinstance(out, list) else []
    return [status("progress", "\n".join(lines) or "auth_status")]


def _progress(v: dict[str, Any], native: str) -> Event:
    field = _PROGRESS_TEXT[native]
    if field is None:
        if native.startswith("hook_"):
            name = text_of(v.get("hook_name")) or native
            outcome = v.get("outcome")
            if isinstance(outcome, str) and outcome and outcome != "success":
                name += " " + outcome  # hooks are non-fatal: not an error
            return status("progress", name)
        return status("progress", native)
    text = v.get(field)
    return status("progress", text if isinstance(text, str) and text else native)


# task_updated `patch.status` values that end a task -> sub-agent dispositions
_TERMINAL_TASK = {"completed": "completed", "failed": "failed", "killed": "canceled"}


def _task_updated(v: dict[str, Any]) -> Event:
    """``system/task_updated``: a patch of a task's state; a terminal ``patch.status`` ends the
    sub-agent (a terminal task may arrive only this way). Its id is the ``task_id``, which
    ``task_started`` gives as ``alias`` when it names the sub-agent by its ``tool_use_id``.
    Earlier builds put the patch's fields on the line itself."""
    p = v.get("patch")
    patch = p if isinstance(p, dict) else v
    st = patch.get("status")
    text = _nonempty(patch.get("description")) or _nonempty(patch.get("error"))
    ev = status("subagent", text or (st if isinstance(st, str) and st else "task_updated"))
    sid = _nonempty(v.get("task_id"))
    if sid is not None and isinstance(st, str) and st in _TERMINAL_TASK:
        ev["subagent"] = {"id": sid, "phase": "ended", "disposition": _TERMINAL_TASK[st]}
    return ev


def _system(v: dict[str, Any], native: Any) -> list[Event]:
    if is_session_line(v):
        session = _session_system(v, native)
        if session is not None:
            return session
    if native == "local_command_output":  # a slash command's output, shown as text
        content = v.get("content")
        return [msg("text", "system", content if isinstance(content, str) else "")]
    if native == "task_updated":
        return [_task_updated(v)]
    if native == "thinking_tokens":
        return [status("progress", "thinking_tokens")]
    if native == "status":
        return [_status(v)]
    if native == "api_retry":
        return [_api_retry(v)]
    if native == "commands_changed":
        return [_commands_changed(v)]
    if native == "background_tasks_changed":
        return [_background_tasks(v)]
    if isinstance(native, str) and native in _PROGRESS_TEXT:
        ev = _progress(v, native)
        if native == "permission_denied":  # a call refused for want of an approval (2.1.226)
            require(ev, action("approval", v.get("tool_use_id"), v.get("tool_name")))
        return [ev]
    sub = _SYSTEM_SUBTYPES.get(native) if isinstance(native, str) else None
    if sub is None:
        return []
    # task_notification reports its result as `summary`
    text = text_of(v.get("description")) or text_of(v.get("summary"))
    cm = v.get("compactMetadata")  # a session file's compact_boundary: its trigger
    if not text and sub == "compaction" and isinstance(cm, dict):
        text = text_of(cm.get("trigger"))
    ev = status(sub, text)
    if sub == "compaction":
        compaction_tokens(ev, v)
    sid = _nonempty(v.get("tool_use_id")) or _nonempty(v.get("task_id"))
    if sid is not None and native == "task_started":
        info: dict[str, Any] = {"id": sid, "phase": "started"}
        if _nonempty(v.get("subagent_type")):
            info["name"] = v["subagent_type"]
        if _nonempty(v.get("task_type")):
            info["type"] = v["task_type"]
        if isinstance(v.get("description"), str):
            info["description"] = v["description"]
        if isinstance(v.get("prompt"), str):
            info["prompt"] = v["prompt"]
        _alias(info, v)
        ev["subagent"] = info
    elif sid is not None and native == "task_notification":
        info = {"id": sid, "phase": "ended"}
        st = v.get("status")
        if isinstance(st, str) and st in DISPOSITIONS:
            info["disposition"] = DISPOSITIONS[st]
        _alias(info, v)
        ev["subagent"] = info
    return [ev]


def _alias(info: dict[str, Any], v: dict[str, Any]) -> None:
    """The ``task_id`` of a sub-agent named by its ``tool_use_id`` (``task_updated`` uses it)."""
    task = _nonempty(v.get("task_id"))
    if task is not None and task != info["id"]:
        info["alias"] = task


def map_line(v: Any) -> list[Event]:
    t = v.get("type")
    if t == "assistant":
        return _assistant(v)
    if t == "user":
        return _user(v)
    if t == "result":
        return _result(v)
    if t == "system":
        return _system(v, v.get("subtype"))
    if t == "stream_event":
        return _stream_event(v.get("event"))
    if t == "rate_limit_event":
        return _rate_limit(v.get("rate_limit_info"))
    if t == "conversation_reset":
        return [status("init")]
    if isinstance(t, str) and t in _TOP_PROGRESS:
        return _top_progress(v, t)
    if t == "auth_status":
        return _auth_status(v)
    if t in ("control_response", "control_request", "control_cancel_request"):
        return [_control(v, t)]
    if t == "active_goal":
        return [_active_goal(v)]
    if isinstance(t, str) and (
        t in _SESSION_PROGRESS
        or t in ("queue-operation", "attachment")
        or (t == "progress" and isinstance(v.get("data"), dict))
    ):
        return _session_record(v, t)
    return []


def content_events(content: Any, role: str) -> list[Event]:
    """Events for a message's content blocks (claude and cursor share this shape)."""
    if isinstance(content, str):
        return [msg("text", role, content)]
    out: list[Event] = []
    if not isinstance(content, list):
        return out
    for b in content:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text" and isinstance(b.get("text"), str):
            out.append(msg("text", role, b["text"]))
        elif bt == "thinking" and isinstance(b.get("thinking"), str):
            out.append(msg("thinking", "assistant", b["thinking"]))
        elif bt == "redacted_thinking":
            out.append(msg("thinking", "assistant", ""))
        elif bt == "tool_use" or bt == "server_tool_use":
            ev = tool_call(name_or_unknown(b.get("name")), b.get("input"), b.get("id"))
            _spawn_hint(ev, b)
            out.append(ev)
        elif bt == "tool_result":
            ev = tool_result(
                "unknown",
                b.get("tool_use_id"),
                b.get("is_error") is True,
                content_text(b.get("content")),
            )
            if "content" in b:
                ev["toolResult"] = b["content"]
            out.append(ev)
        elif isinstance(bt, str) and bt.endswith("_tool_result"):
            ev = _server_tool_result(b)
            if "content" in b:
                ev["toolResult"] = b["content"]
            out.append(ev)
    return out


def _spawn_hint(ev: Event, b: dict[str, Any]) -> None:
    """A Task/Agent call names the sub-agent it starts (its ``task_started`` may not)."""
    inp = b.get("input")
    sid = _nonempty(b.get("id"))
    if b.get("name") not in _SPAWN_TOOLS or not isinstance(inp, dict) or sid is None:
        return
    info: dict[str, Any] = {"id": sid, "phase": "spawned"}
    if _nonempty(inp.get("subagent_type")):
        info["name"] = inp["subagent_type"]
    if isinstance(inp.get("description"), str):
        info["description"] = inp["description"]
    ev["subagent"] = info


def _server_tool_result(b: dict[str, Any]) -> Event:
    """A server tool's result block (``web_search_tool_result``, ``web_fetch_tool_result``,
    ``code_execution_tool_result``, ...): an error object, or the results' urls, or text."""
    c = b.get("content")
    if isinstance(c, dict) and isinstance(c.get("type"), str) and c["type"].endswith("_error"):
        code = c.get("error_code")
        return tool_result(
            "unknown", b.get("tool_use_id"), True, code if isinstance(code, str) else ""
        )
    urls = (
        [r["url"] for r in c if isinstance(r, dict) and isinstance(r.get("url"), str)]
        if isinstance(c, list)
        else []
    )
    text = "\n".join(urls) if urls else content_text(c)
    return tool_result("unknown", b.get("tool_use_id"), False, text)


def claude_usage(scope: str, model: Any, u: Any, cost: Any = None) -> Event:
    if not isinstance(u, dict):
        u = {}
    cached = u.get("cache_read_input_tokens")
    ev = usage(
        scope,
        model,
        [u.get("input_tokens"), cached, u.get("cache_creation_input_tokens")],
        cached,
        [u.get("output_tokens")],
        cost,
    )
    cc = u.get("cache_creation")
    one_hour = cc.get("ephemeral_1h_input_tokens") if isinstance(cc, dict) else None
    ev = cache_writes(ev, u.get("cache_creation_input_tokens"), one_hour)
    speed = u.get("speed")  # the request's speed (2026: ``fast`` mode is priced apart)
    if isinstance(speed, str) and speed:
        ev["speed"] = speed
    return ev


def _assistant(v: dict[str, Any]) -> list[Event]:
    m = v.get("message")
    if not isinstance(m, dict):
        return []
    model = m.get("model")
    native_error = v.get("error")
    marked = (isinstance(native_error, str) and native_error) or _api_error_flag(v)
    if model == "<synthetic>" and not marked and not _unmarked_api_error(v, m):
        # a local slash command's answer (`/context`, `/usage`, `/compact`): shown as text
        return [msg("text", "system", content_text(m.get("content")))]
    if model == "<synthetic>" or marked:
        code = native_error if isinstance(native_error, str) and native_error else "api_error"
        text = content_text(m.get("content")) or code
        http = v.get("apiErrorStatus")  # session files: the HTTP status decides first
        kind = (
            (http_kind(http) if is_int(http) else None)
            or _ASSISTANT_ERROR_KINDS.get(code)
            or classify(text)
        )
        ev = error("api_error", code, text, kind)
        at = _pipe_epoch(text) if kind == "quota" and "retryAt" not in ev else None
        if at is not None:
            ev["retryAt"] = at
        return [ev]
    out = content_events(m.get("content"), "assistant")
    if "usage" in m:
        ev = claude_usage("message", model, m.get("usage"))
        if isinstance(m.get("id"), str):
            ev["messageId"] = m["id"]
        out.append(ev)
        out.extend(_billed_iterations(v, m))
    return out


# `usage.iterations[]` types that the top-level `usage` leaves out and that are billed
_BILLED_ITERATIONS = ("compaction", "advisor_message")


def _billed_iterations(v: dict[str, Any], m: dict[str, Any]) -> list[Event]:
    """The sampling steps of one API request that its top-level ``usage`` leaves out and that
    are billed (docs/usage.md "Rules"): a server-side ``compaction`` (the request's model) and
    an ``advisor_message`` (the advisor's own ``model``), each its own message reading after the
    message's, with a ``messageId`` of its own (``<id>#<type><index in iterations>``, else from
    the ``requestId``) so that a repeated line counts it once. ``message`` and
    ``fallback_message`` iterations are what the top-level numbers already count."""
    u = m.get("usage")
    items = u.get("iterations") if isinstance(u, dict) else None
    if not isinstance(items, list):
        return []
    base = m.get("id")
    if not isinstance(base, str):
        req = v.get("requestId")
        base = req if isinstance(req, str) and req else None
    out = []
    for i, it in enumerate(items):
        kind = it.get("type") if isinstance(it, dict) else None
        if kind not in _BILLED_ITERATIONS:
            continue
        own = it.get("model")
        model = (
            own
            if isinstance(own, str) and own
            else m.get("model")
            if kind == "compaction"
            else None
        )
        ev = claude_usage("message", model, it)
        if ev["usage"].get("unknown"):
            continue
        if base is not None:
            ev["messageId"] = f"{base}#{kind}{i}"
        out.append(ev)
    return out


def _api_error_flag(v: dict[str, Any]) -> bool:
    """``is_api_error_message: true`` (stream-json), ``isApiErrorMessage: true`` (session files)."""
    return v.get("is_api_error_message") is True or v.get("isApiErrorMessage") is True


# how the CLI words an API failure on a `<synthetic>` line of builds that mark none
_API_ERROR_PREFIXES = (
    "API Error",
    "Invalid API key",
    "Not logged in",
    "Prompt is too long",
    "Credit balance is too low",
)


def _unmarked_api_error(v: dict[str, Any], m: dict[str, Any]) -> bool:
    """A ``<synthetic>`` line with no ``error`` and no ``is_api_error_message``: an API failure of
    builds that mark none (2.0.x: ``API Error: 404 …``, ``Weekly limit reached ∙ resets 5am``)
    when its text reads as one, else a local command's answer (a ``local_command_run`` or
    ``local_command_source`` says so outright)."""
    if "local_command_run" in v or "local_command_source" in v:
        return False
    text = content_text(m.get("content"))
    return text.startswith(_API_ERROR_PREFIXES) or classify(text) != "semantic"


def _pipe_epoch(text: str) -> str | None:
    """Old builds' limit text ``Claude AI usage limit reached|<epoch seconds>``: the reset time."""
    head, sep, tail = text.rpartition("|")
    low = head.encode("utf-8", "replace").lower()
    if not sep or b"limit reached" not in low or not 0 < len(tail) <= 12:
        return None
    if not all("0" <= c <= "9" for c in tail):
        return None
    return format_ms(int(tail) * 1000)


def _user(v: dict[str, Any]) -> list[Event]:
    m = v.get("message")
    if not isinstance(m, dict):
        return []
    # session files: text the CLI injected (skill text, the summary after a compaction)
    injected = v.get("isMeta") is True or v.get("isCompactSummary") is True
    out = content_events(m.get("content"), "system" if injected else "user")
    _refused_results(v, out)
    return out


def _refused_results(v: dict[str, Any], events: list[Event]) -> None:
    """A user line's tool results that the CLI refused to run (``tool_result_meta`` entries
    whose ``non_execution_kind`` is ``user-rejected`` or ``permission-rule``) wait for an
    approval."""
    meta = v.get("tool_result_meta")
    refused = {
        m["id"]
        for m in (meta if isinstance(meta, list) else [])
        if isinstance(m, dict)
        and m.get("non_execution_kind") in ("user-rejected", "permission-rule")
        and isinstance(m.get("id"), str)
        and m["id"]
    }
    if not refused:
        return
    for ev in events:
        tool_id = ev.get("tool", {}).get("id") if ev.get("subtype") == "tool_result" else None
        if tool_id in refused:
            require(ev, action("approval", tool_id))


def _denials(v: dict[str, Any], ev: Event) -> None:
    """The calls a result says wait for a human (``requiresAction``): each
    ``permission_denials`` entry (an ``AskUserQuestion`` call: a question, with its input's
    ``questions``), then the ``deferred_tool_use`` (a call a hook deferred for the host)."""
    denials = v.get("permission_denials")
    for d in denials if isinstance(denials, list) else []:
        if not isinstance(d, dict):
            continue
        name = d.get("tool_name")
        ti = d.get("tool_input")
        questions = ti.get("questions") if isinstance(ti, dict) else None
        ask = name == "AskUserQuestion" and isinstance(questions, list)
        kind = "question" if ask else "approval"
        require(ev, action(kind, d.get("tool_use_id"), name, questions if ask else None))
    deferred = v.get("deferred_tool_use")
    if isinstance(deferred, dict):
        require(ev, action("approval", deferred.get("id"), deferred.get("name")))


def _result(v: dict[str, Any]) -> list[Event]:
    sub = v.get("subtype")
    sub_s = sub if isinstance(sub, str) else ""
    text = text_of(v.get("result"))
    out: list[Event] = []
    if v.get("is_error") is True or sub_s.startswith("error"):
        code = sub_s if sub_s.startswith("error") else "result_error"
        message = text or _joined_errors(v.get("errors")) or code
        reason = v.get("terminal_reason")
        reason = reason if isinstance(reason, str) else ""
        kind = (
            http_kind(v.get("api_error_status"))
            or ("semantic" if reason in _SEMANTIC_REASONS else None)
            or classify(message)
        )
        if reason.startswith("aborted"):  # an interrupt, not a failure of the model
            out.append(error("aborted", code, message, "semantic"))
        else:
            out.append(error("result_error", code, message, kind))
    else:
        done = status("result", text)
        if _empty_answer(v):
            done["emptyResult"] = True
        out.append(done)
    _denials(v, out[-1])
    if "usage" in v or "total_cost_usd" in v:
        model_usage = v.get("modelUsage")
        shares = _model_usage_shares(model_usage, v.get("total_cost_usd"))
        if shares is not None:
            return out + shares
        model = _main_model(model_usage)
        ev = _model_usage_total(model, model_usage, v.get("total_cost_usd"))
        out.append(ev or claude_usage("cumulative", model, v.get("usage"), v.get("total_cost_usd")))
    return out


def _empty_answer(v: dict[str, Any]) -> bool:
    """A success that gives no answer: no ``result`` text (or only JSON whitespace) and no
    ``structured_output`` (the CLI prints ``""`` for /clear, /compact and a deferred tool)."""
    so = v.get("structured_output")
    if so is not None and so != "" and so != {} and so != []:
        return False
    r = v.get("result")
    return not (isinstance(r, str) and r.strip(" \t\n\r"))


def _model_usage_shares(model_usage: Any, cost: Any) -> list[Event] | None:
    """Each model's own share of the run's counter (one cumulative event per ``modelUsage``
    model, with its counts and ``costUSD``), when two or more models have counts and, if the
    result has a ``total_cost_usd``, each of them has its own ``costUSD``; else None."""
    if not isinstance(model_usage, dict):
        return None
    out = []
    for key, e in model_usage.items():
        if not isinstance(e, dict):
            continue
        read = e.get("cacheReadInputTokens")
        inputs = [e.get("inputTokens"), read, e.get("cacheCreationInputTokens")]
        ev = usage("cumulative", None, inputs, read, [e.get("outputTokens")], e.get("costUSD"))
        cache_writes(ev, e.get("cacheCreationInputTokens"))
        if ev["usage"].get("unknown"):
            continue
        if "costUsd" not in ev["usage"] and is_count(cost):
            return None
        if key:
            ev["usage"]["model"] = key
        out.append(ev)
    return out if len(out) >= 2 else None


def _model_usage_total(model: Any, model_usage: Any, cost: Any) -> Event | None:
    """The run's counter: ``modelUsage`` summed over its models (cumulative, like
    ``total_cost_usd``; ``result.usage`` is the last turn's only). None when it has no count."""
    if not isinstance(model_usage, dict):
        return None
    entries = [e for e in model_usage.values() if isinstance(e, dict)]
    inputs: list[Any] = []
    outputs: list[Any] = []
    cached: Any = 0
    writes: Any = None
    for e in entries:
        read = e.get("cacheReadInputTokens")
        inputs += [e.get("inputTokens"), read, e.get("cacheCreationInputTokens")]
        outputs.append(e.get("outputTokens"))
        if is_count(read):
            cached = cached + read
        w = e.get("cacheCreationInputTokens")
        if is_count(w):
            writes = w if writes is None else writes + w
    if not any(is_count(x) for x in inputs + outputs):
        return None
    return cache_writes(usage("cumulative", model, inputs, cached, outputs, cost), writes)


# result `terminal_reason`s that say the failure is the request's own
_SEMANTIC_REASONS = ("prompt_too_long", "model_error", "max_turns")


def _joined_errors(errors: Any) -> str:
    if not isinstance(errors, list):
        return ""
    return "; ".join(e for e in errors if isinstance(e, str))


def _main_model(model_usage: Any) -> Any:
    """The ``modelUsage`` key that cost the most: the main model, not the helper (haiku) one.

    Ties go to the earlier key; with no ``costUSD`` count anywhere, the first key.
    """
    if not isinstance(model_usage, dict):
        return None
    best, best_cost = None, None
    for key, entry in model_usage.items():
        cost = entry.get("costUSD") if isinstance(entry, dict) else None
        if is_count(cost) and (best_cost is None or cost > best_cost):
            best, best_cost = key, cost
    if best is None:
        for key in model_usage:
            return key
    return best


def _stream_event(e: Any) -> list[Event]:
    if not isinstance(e, dict):
        return []
    if e.get("type") == "content_block_delta":
        d = e.get("delta")
        if isinstance(d, dict):
            dt = d.get("type")
            if dt == "text_delta" and isinstance(d.get("text"), str):
                return [_delta(msg("text", "assistant", d["text"]))]
            if dt == "thinking_delta" and isinstance(d.get("thinking"), str):
                return [_delta(msg("thinking", "assistant", d["thinking"]))]
    if e.get("type") == "error":
        err = e.get("error")
        err = err if isinstance(err, dict) else {}
        code = text_of(err.get("type")) or "api_error"
        message = text_of(err.get("message")) or code
        kind = _SSE_ERROR_KINDS.get(code) or classify(message)
        return [error("api_error", code, message, kind)]
    return [status("progress", text_of(e.get("type")))]


# Anthropic Messages SSE `error` types with a known kind
_SSE_ERROR_KINDS = {
    "overloaded_error": "transport",
    "api_error": "transport",
    "timeout_error": "transport",
    "rate_limit_error": "quota",
    "billing_error": "quota",
}


def _delta(ev: Event) -> Event:
    ev["delta"] = True
    return ev


def _rate_limit(info: Any) -> list[Event]:
    if not isinstance(info, dict):
        return [status("progress", "rate_limit")]
    st = info.get("status")
    rtype = info.get("rateLimitType")
    if st == "rejected":
        message = "rate limit rejected" + (f": {rtype}" if isinstance(rtype, str) else "")
        resets = info.get("resetsAt")  # epoch seconds: when a parked runner may retry
        if isinstance(resets, int) and not isinstance(resets, bool) and 0 <= resets < 2**63:
            message += f" (resetsAt {resets})"
        ev = error("rate_limit", "rate_limit", message, "quota")
        return [with_rate_limits(ev, _rate_limit_readings(info))]
    ev = status("progress", "rate_limit " + st if isinstance(st, str) else "rate_limit")
    return [with_rate_limits(ev, _rate_limit_readings(info))]


def _limit_window(t: str) -> str:
    """A ``rateLimitType``'s window: ``five_hour*`` -> ``5h``, ``seven_day*``
    (``seven_day_opus``, ...) -> ``7d``; any other type (``overage``) is its own window."""
    if t.startswith("five_hour"):
        return "5h"
    if t.startswith("seven_day"):
        return "7d"
    return t


def _limit_reading(t: str, w: dict[str, Any]) -> dict[str, Any] | None:
    """One reading of ``rate_limit_info`` or of one of its ``unifiedWindows``:
    ``utilization`` (a fraction: 0.41 is 41 %) and ``resetsAt`` (epoch seconds); none without
    a utilization."""
    used = percent_of_fraction(w.get("utilization"))
    if used is None:
        return None
    reading: dict[str, Any] = {"window": _limit_window(t), "usedPercent": used}
    resets = w.get("resetsAt")
    if epoch_int(resets):
        at = format_epoch(resets)
        if at is not None:
            reading["resetsAt"] = at
    reading["limitType"] = t
    return reading


def _rate_limit_readings(info: dict[str, Any]) -> list[dict[str, Any]]:
    """``rateLimits`` of a ``rate_limit_info``: one per ``unifiedWindows`` entry (newer
    builds: ``{<type>: {utilization, resetsAt}}``, in order), then the info's own
    (``rateLimitType``, ``utilization``, ``resetsAt``) unless a window of its type came
    before."""
    out: list[dict[str, Any]] = []
    windows = info.get("unifiedWindows")
    if isinstance(windows, dict):
        for t, w in windows.items():
            if isinstance(w, dict) and t:
                r = _limit_reading(t, w)
                if r is not None:
                    out.append(r)
    t = info.get("rateLimitType")
    if isinstance(t, str) and t and not any(r["limitType"] == t for r in out):
        r = _limit_reading(t, info)
        if r is not None:
            out.append(r)
    return out
