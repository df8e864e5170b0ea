"""codex: OpenAI Codex CLI ``codex exec --json``, current and legacy.

Mirror of rust/dialects/codex.rs.
"""

from __future__ import annotations

from typing import Any, cast

from ..events import (
    Event,
    action,
    cache_writes,
    classify,
    compaction_tokens,
    content_blocks,
    content_text,
    epoch_int,
    error,
    is_count,
    line_extras,
    msg,
    name_or_unknown,
    reasoning_tokens,
    require,
    status,
    text_of,
    tool_call,
    tool_result,
    usage,
    window_of_minutes,
    with_rate_limits,
)
from ..parse import JsonError, parse, scan_budget
from ..retry import format_epoch, format_ms, parse_time

NAME = "codex"


def meta(v: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    m = v.get("msg")
    if is_envelope(v) or is_header(v):  # a rollout line (§2.3): its own timestamp
        p = v.get("payload")
        if is_header(v):
            out["sessionId"] = v["id"]
        elif v["type"] == "session_meta" and isinstance(p, dict) and _nonempty(p.get("id")):
            out["sessionId"] = p["id"]
        if isinstance(v.get("timestamp"), str):
            out["timestamp"] = v["timestamp"]
        if v.get("type") == "event_msg" and isinstance(p, dict):
            out.update(line_extras(p))
        if is_header(v):
            cwd = v.get("cwd")
        elif v["type"] in ("session_meta", "turn_context") and isinstance(p, dict):
            cwd = p.get("cwd")
        else:
            cwd = None
        if isinstance(cwd, str) and cwd:
            out["cwd"] = cwd
        return out
    if isinstance(v.get("thread_id"), str):
        out["sessionId"] = v["thread_id"]
    elif isinstance(m, dict) and isinstance(m.get("session_id"), str):
        out["sessionId"] = m["session_id"]
    item = v.get("item")
    if isinstance(item, dict) and isinstance(item.get("id"), str) and item["id"]:
        out["nativeId"] = item["id"]
    out.update(line_extras(v, outcome=v.get("type") == "turn.completed"))
    return out


# file_change kinds (current items) and legacy patch keys -> file events
FILE_EVENTS = {"add": "create", "delete": "delete", "update": "modify"}


def _file_changes(changes: Any) -> list[dict[str, str]]:
    out = []
    if isinstance(changes, list):  # current: [{"path", "kind"}]
        for c in changes:
            if not isinstance(c, dict):
                continue
            event = (
                FILE_EVENTS.get(cast(str, c.get("kind")))
                if isinstance(c.get("kind"), str)
                else None
            )
            path = c.get("path")
            if event is not None and isinstance(path, str) and path:
                change = {"event": event, "path": path}
                if isinstance(c.get("diff"), str):  # 2026 builds print each change's diff
                    change["diff"] = c["diff"]
                out.append(change)
    elif isinstance(changes, dict):  # legacy: {path: {"add"|"update"|"delete": ...}}
        for path, change in changes.items():
            kind = next(iter(change), None) if isinstance(change, dict) else None
            event = FILE_EVENTS.get(kind) if isinstance(kind, str) else None
            if event is not None and path:
                out.append({"event": event, "path": path})
    return out


def _with(ev: Event, **extras: Any) -> Event:
    ev.update(extras)
    return ev


def _nonempty(x: Any) -> bool:
    return isinstance(x, str) and x != ""


def native_type(v: dict[str, Any]) -> Any:
    if is_envelope(v) and v["type"] in ("response_item", "event_msg"):
        pt = v["payload"].get("type")
        return pt if isinstance(pt, str) else v["type"]
    m = v.get("msg")
    if isinstance(m, dict) and "type" not in v:
        return m.get("type")
    return v.get("type")


# the speed each Codex service tier runs requests at, as the events' ``speed`` names it: the
# config's ``fast`` (the API's ``priority``) is fast mode; the default tier (``default``,
# ``auto``, ``standard``) and a tier not known here run at none
_TIER_SPEED = {"fast": "fast", "priority": "fast", "flex": "flex", "ultrafast": "ultrafast"}


def learn(v: dict[str, Any], ctx: dict[str, Any]) -> bool:
    """A rollout's ``turn_context`` names the model of the readings that follow (a later one
    that names another replaces it): a string ``payload.model`` sets it (``""``: none known), a
    ``turn_context`` without one leaves it; an older build's ``payload.service_tier`` sets their
    speed. An ``event_msg`` ``thread_settings_applied`` (the thread's settings after ``/model``,
    ``/fast``, ...) sets both from ``thread_settings``: its ``model``, and its ``service_tier``
    (absent: the default tier). True when the line touches the context."""
    p = v.get("payload")
    if not isinstance(p, dict):
        return False
    touched = False
    if v.get("type") == "turn_context":
        if isinstance(p.get("model"), str):
            ctx["model"] = p["model"] or None
            touched = True
        if isinstance(p.get("service_tier"), str):
            ctx["speed"] = _TIER_SPEED.get(p["service_tier"])
            touched = True
    elif v.get("type") == "event_msg" and p.get("type") == "thread_settings_applied":
        s = p.get("thread_settings")
        if not isinstance(s, dict):
            return False
        if isinstance(s.get("model"), str):
            ctx["model"] = s["model"] or None
        tier = s.get("service_tier")
        ctx["speed"] = _TIER_SPEED.get(tier) if isinstance(tier, str) else None
        touched = True
    return touched


def map_in(v: dict[str, Any], ctx: dict[str, Any]) -> list[Event]:
    """:func:`map_line`, a usage reading that names no model (``info.model``) given the
    stream's, and the stream's speed where it runs at one."""
    events = map_line(v)
    model, speed = ctx.get("model"), ctx.get("speed")
    for ev in events:
        u = ev.get("usage")
        if not isinstance(u, dict):
            continue
        if model is not None and u.get("model") == "unknown":
            u["model"] = model
        if speed is not None:
            ev["speed"] = speed
    return events


def map_line(v: dict[str, Any]) -> list[Event]:
    t = v.get("type")
    if isinstance(t, str) and isinstance(v.get("payload"), dict):
        return _rollout(t, v["payload"], text_of(v.get("timestamp")))
    if not isinstance(t, str):
        m = v.get("msg")
        if isinstance(m, dict):
            return _legacy(m)
        if isinstance(v.get("record_type"), str):  # a pre-envelope rollout's state marker
            return [status("progress", v["record_type"])]
        if is_header(v):  # a pre-envelope rollout's first line
            return [status("init", text_of(v.get("cli_version")))]
        if isinstance(v.get("prompt"), str):
            return [msg("text", "user", v["prompt"])]
        if "model" in v and ("provider" in v or "sandbox" in v or "approval" in v):
            return [status("init", text_of(v.get("model")))]
        return []
    if t == "thread.started" or t == "session.created":
        return [status("init")]
    if t == "turn.started":
        return [status("turn_started")]
    if t == "turn.completed":
        u = v.get("usage")
        out = [status("turn_completed")]
        if isinstance(u, dict):
            out.append(_usage(u))
        return out
    if t == "turn.failed":
        e = v.get("error")
        message = (text_of(e.get("message")) if isinstance(e, dict) else None) or "turn failed"
        return [error("turn_failed", "turn_failed", message, classify(message))]
    if t == "error":
        message = text_of(v.get("message")) or "error"
        ev = error("api_error", "error", message, classify(message))
        if message.encode("utf-8", "surrogatepass")[:12].lower() == b"reconnecting":  # a retry
            ev["retry"] = True
        return [ev]
    if t in ("item.started", "item.updated", "item.completed"):
        item = v.get("item")
        return _item(t[5:], item) if isinstance(item, dict) else []
    if t == "item.plan.delta":
        return [status("progress", text_of(v.get("delta")))]
    if t == "thread.compacted":  # the thread's context was compacted (counts when given)
        return [compaction_tokens(status("compaction", "compacted"), v)]
    if t == "request_user_input":  # the model asks the user: the turn waits for the answers
        ev = status("progress", _questions_text(v.get("questions")) or "request_user_input")
        cid = (
            v.get("call_id") if isinstance(v.get("call_id"), str) and v["call_id"] else v.get("id")
        )
        return [require(ev, action("question", cid, None, v.get("questions")))]
    if t in BARE_ITEMS:  # a pre-envelope rollout's bare Responses item
        return _response_item(v)
    return []


def _usage(u: dict[str, Any]) -> Event:
    # input_tokens already includes cached_input_tokens (and the 2026 builds'
    # cache_write_input_tokens: cacheWriteTokens); output_tokens includes reasoning
    ev = usage(
        "cumulative",
        None,
        [u.get("input_tokens")],
        u.get("cached_input_tokens"),
        [u.get("output_tokens")],
    )
    ev = cache_writes(ev, u.get("cache_write_input_tokens"))
    return reasoning_tokens(ev, u.get("reasoning_output_tokens"))


def _item(phase: str, item: dict[str, Any]) -> list[Event]:
    it = item.get("type")
    if it is None:
        it = item.get("item_type")  # the short-lived spelling right after openai/codex#4525
    iid = item.get("id")
    if it in ("agent_message", "assistant_message"):
        return [msg("text", "assistant", text_of(item.get("text")) or "")]
    if it == "reasoning":
        return [msg("thinking", "assistant", text_of(item.get("text")) or "")]
    if it == "command_execution":
        if phase == "started":
            ev = tool_call("shell", item.get("command"), iid)
            ev["providerToolName"] = "command_execution"
            ev["providerArguments"] = {"command": item.get("command")}
            return [ev]
        if phase == "completed":
            code = item.get("exit_code")
            output = text_of(item.get("aggregated_output")) or ""
            failed = item.get("status") in ("failed", "declined") or (
                (code != 0) if type(code) is int else text_failed(output)
            )
            ev = tool_result("shell", iid, failed, output)
            if "aggregated_output" in item:
                ev["toolResult"] = item["aggregated_output"]
            return [ev]
        return [status("progress", "command_execution")]
    if it == "mcp_tool_call":
        name = name_or_unknown(item.get("tool"))
        if phase == "started":
            return [_with(tool_call(name, item.get("arguments"), iid), toolClass="mcp")]
        if phase == "completed":
            err = item.get("error")
            err_text = text_of(err.get("message")) if isinstance(err, dict) else None
            res = item.get("result")
            text = err_text or (content_text(res.get("content")) if isinstance(res, dict) else "")
            failed = item.get("status") == "failed" or err_text is not None
            ev = tool_result(name, iid, failed, text)
            if "result" in item:  # structured_content is not content
                ev["toolResult"] = content_blocks(res)
            return [ev]
        return [status("progress", "mcp_tool_call")]
    if it == "web_search":
        # the query is known only on completion (started carries "" and action "other", older
        # builds print no started item): the call and its result both come from completed
        if phase == "completed":
            action = item.get("action")
            has_action = isinstance(action, dict)
            # the arguments: the action (the provider's own), else the query
            call = tool_call("web_search", action if has_action else item.get("query"), iid)
            if not has_action:
                call["providerArguments"] = {"query": item.get("query")}
            # the item reports the query, no result content: no toolResult
            text = text_of(item.get("query")) or (
                _action_text(cast(dict[str, Any], action)) if has_action else ""
            )
            return [call, tool_result("web_search", iid, False, text)]
        return [status("progress", "web_search")]
    if it == "file_change":
        changes = _changes_text(item.get("changes"))
        ev = status("file_change", changes)
        if phase == "completed":
            # a patch run without a tool_use event, counted once (2026 builds also print it
            # started and updated)
            ev["toolClass"] = "filesystem"
        if item.get("status") == "completed":
            applied = _file_changes(item.get("changes"))
            if applied:
                ev["fileChanges"] = applied
        out = [ev]
        if item.get("status") == "failed":
            listed: list[Any] = item["changes"] if isinstance(item.get("changes"), list) else []
            paths = ", ".join(
                c["path"] for c in listed if isinstance(c, dict) and isinstance(c.get("path"), str)
            )
            message = f"patch failed: {paths}" if paths else "patch failed"
            out.append(error("item_error", "file_change_failed", message, "semantic"))
        return out
    if it == "todo_list":
        return [status("progress", _todo_text(item.get("items")))]
    if it == "plan":
        return [status("progress", text_of(item.get("text")))]
    if it == "collab_tool_call":
        return _collab(phase, item, iid)
    if it == "error":
        message = text_of(item.get("message")) or "error"
        return [error("item_error", "item_error", message, classify(message))]
    return []


def _action_text(action: dict[str, Any]) -> str:
    """The text of a web_search ``action`` whose ``query`` is empty: the queries joined by
    ``; `` (else its ``query``), the ``url``, or ``pattern @ url``."""
    t = action.get("type")
    if t == "search":
        queries = action.get("queries")
        if isinstance(queries, list):
            listed = [q for q in queries if isinstance(q, str) and q]
            if listed:
                return "; ".join(listed)
        return text_of(action.get("query")) or ""
    url = text_of(action.get("url")) or ""
    if t == "find_in_page":
        pattern = text_of(action.get("pattern")) or ""
        return f"{pattern} @ {url}" if pattern and url else pattern or url
    return url


# agents_states statuses that end a sub-agent -> subagent dispositions
_AGENT_ENDS = {"completed": "completed", "errored": "failed", "shutdown": "canceled"}


def _collab(phase: str, item: dict[str, Any], iid: Any) -> list[Event]:
    """A sub-agent tool (spawn_agent, wait, send_input, close_agent, and any later one):
    started -> the call with its ``prompt`` and ``receiver_thread_ids``; completed/failed ->
    its result (spawn_agent: the receiver ids; others: every agent's ``message``, the
    sub-agent's reply), then one ``status/subagent`` per sub-agent started (spawn_agent) or
    ended (a state ``completed``/``errored``/``shutdown``)."""
    name = name_or_unknown(item.get("tool"))
    receivers = item.get("receiver_thread_ids")
    ids = [r for r in receivers if isinstance(r, str) and r] if isinstance(receivers, list) else []
    if phase == "started":
        ev = tool_call(name, item.get("prompt"), iid)
        ev["providerArguments"] = {"prompt": item.get("prompt"), "receiver_thread_ids": receivers}
        return [ev]
    if phase != "completed":
        return [status("progress", name)]
    raw_states = item.get("agents_states")
    states = raw_states if isinstance(raw_states, dict) else {}
    failed = item.get("status") == "failed"
    replies = []
    for st in states.values():
        if not isinstance(st, dict):
            continue
        if st.get("status") in ("errored", "not_found"):
            failed = True
        if isinstance(st.get("message"), str) and st["message"]:
            replies.append(st["message"])
    text = "\n".join(ids) if name == "spawn_agent" else "\n".join(replies)
    ev = tool_result(name, iid, failed, text)
    if isinstance(raw_states, dict):
        ev["toolResult"] = raw_states
    out = [ev]
    if name == "spawn_agent":
        for rid in ids:
            info: dict[str, Any] = {"id": rid, "phase": "started"}
            if isinstance(item.get("prompt"), str):
                info["description"] = item["prompt"]
            out.append(_with(status("subagent", name), subagent=info))
    for tid, st in states.items():
        state = st.get("status") if isinstance(st, dict) else None
        end = _AGENT_ENDS.get(state) if isinstance(state, str) else None
        if end is not None and tid:
            info = {"id": tid, "phase": "ended", "disposition": end}
            out.append(_with(status("subagent", name), subagent=info))
    return out


def _changes_text(changes: Any) -> str:
    lines = []
    if isinstance(changes, list):
        for c in changes:
            if isinstance(c, dict) and isinstance(c.get("path"), str):
                k = c.get("kind")
                lines.append(f"{k} {c['path']}" if isinstance(k, str) else c["path"])
    return "\n".join(lines)


def _questions_text(questions: Any) -> str:
    """The ``question`` of each item, one per line (what a headless consumer must answer)."""
    if not isinstance(questions, list):
        return ""
    asked = [q.get("question") for q in questions if isinstance(q, dict)]
    return "\n".join(q for q in asked if isinstance(q, str))


def _todo_text(items: Any) -> str:
    lines = []
    if isinstance(items, list):
        for i in items:
            if isinstance(i, dict) and isinstance(i.get("text"), str):
                lines.append(("[x] " if i.get("completed") is True else "[ ] ") + i["text"])
    return "\n".join(lines)


# the first generation's flat keys (``primary_used_percent``, ...) of each window
_FLAT_WINDOWS = tuple(
    (slot, f"{slot}_used_percent", f"{slot}_window_minutes", f"{slot}_reset_after_seconds")
    for slot in ("primary", "secondary")
)


def _rate_limits(rl: Any, ts: str | None) -> list[dict[str, Any]]:
    """A ``token_count``'s ``rate_limits`` as ``rateLimits`` readings, every generation:
    ``primary``/``secondary`` objects ``{used_percent, window_minutes, resets_at`` (epoch
    seconds) ``| resets_in_seconds}`` (relative to ``ts``, the line's timestamp), or the first
    generation's flat ``primary_used_percent``, ``primary_window_minutes``,
    ``primary_reset_after_seconds``, ... A window without a usable ``used_percent`` gives none.
    """
    if not isinstance(rl, dict):
        return []
    limit_id = rl.get("limit_id")
    prefix = limit_id if isinstance(limit_id, str) and limit_id not in ("", "codex") else None
    out: list[dict[str, Any]] = []
    for slot, used_key, minutes_key, after_key in _FLAT_WINDOWS:
        w = rl.get(slot)
        if isinstance(w, dict):
            used, minutes = w.get("used_percent"), w.get("window_minutes")
            at, after = w.get("resets_at"), w.get("resets_in_seconds")
        else:
            used, minutes, at, after = (
                rl.get(used_key),
                rl.get(minutes_key),
                None,
                rl.get(after_key),
            )
        if not is_count(used):
            continue
        limit_type = f"{prefix}.{slot}" if prefix is not None else slot
        resets: str | None = None
        if epoch_int(at):
            resets = format_epoch(at)
        elif epoch_int(after):
            base = parse_time(ts) if ts is not None else None
            resets = format_ms(base + after * 1000) if base is not None else None
        reading: dict[str, Any] = {
            "window": window_of_minutes(minutes) or limit_type,
            "usedPercent": used,
        }
        if resets is not None:
            reading["resetsAt"] = resets
        reading["limitType"] = limit_type
        out.append(reading)
    return out


def _legacy(m: dict[str, Any]) -> list[Event]:
    t = m.get("type")
    if not isinstance(t, str):
        return []
    simple = _LEGACY_STATUS.get(t)
    if simple is not None:
        ev = status(simple, text_of(m.get(_LEGACY_TEXT.get(t, "message"))))
        asks = _LEGACY_APPROVALS.get(t)
        if asks is not None:  # the CLI waits for the user to approve the call
            require(ev, action("approval", m.get("call_id"), asks))
        return [ev]
    if t == "agent_message":
        return [msg("text", "assistant", text_of(m.get("message")) or "")]
    if t in ("agent_reasoning", "agent_reasoning_raw_content"):
        return [msg("thinking", "assistant", text_of(m.get("text")) or "")]
    cid = m.get("call_id")
    # the same tools under their current names; arguments: the line without type and call_id
    rest = {k: x for k, x in m.items() if k not in ("type", "call_id")}
    if t == "exec_command_begin":
        ev = tool_call("shell", m.get("command"), cid)
        return [_with(ev, providerToolName="command_execution", providerArguments=rest)]
    if t == "exec_command_end":
        code = m.get("exit_code")
        text = text_of(m.get("aggregated_output"))
        if text is None:
            text = text_of(m.get("stdout")) or ""
        failed = (code != 0) if type(code) is int else text_failed(text)
        ev = tool_result("shell", cid, failed, text)
        if "aggregated_output" in m:
            ev["toolResult"] = m["aggregated_output"]
        elif "stdout" in m:
            ev["toolResult"] = m["stdout"]
        return [ev]
    if t == "patch_apply_begin":
        ev = tool_call("apply_patch", m.get("changes"), cid)
        _with(ev, providerToolName="file_change", providerArguments=rest)
        proposed = _file_changes(m.get("changes")) if isinstance(m.get("changes"), dict) else []
        if proposed:  # applied once patch_apply_end reports success
            ev["fileChanges"] = proposed
        return [ev]
    if t == "patch_apply_end":
        ok = m.get("success") is True
        text = text_of(m.get("stdout") if ok else m.get("stderr")) or ""
        return [_with(tool_result("apply_patch", cid, not ok, text), toolResult=text)]
    if t in ("mcp_tool_call_begin", "mcp_tool_call_end"):
        inv = m.get("invocation")
        src = inv if isinstance(inv, dict) else m
        name = name_or_unknown(src.get("tool"))
        if t == "mcp_tool_call_begin":
            return [_with(tool_call(name, src.get("arguments"), cid), toolClass="mcp")]
        ev = _legacy_mcp_end(name, cid, m.get("result"))
        if "result" in m:  # {"Ok": {content, isError}} or {"Err": text}
            r = m["result"]
            if isinstance(r, dict) and len(r) == 1:
                r = content_blocks(r.get("Ok", r.get("Err", r)))
            ev["toolResult"] = r
        return [ev]
    if t == "web_search_begin":
        return [tool_call("web_search", m.get("query"), cid)]
    if t == "web_search_end":
        text = text_of(m.get("query")) or ""
        return [_with(tool_result("web_search", cid, False, text), toolResult=text)]
    if t == "token_count":
        info = m.get("info")
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            ev = _usage(info["total_token_usage"])
        elif "input_tokens" in m or "output_tokens" in m:
            ev = _usage(m)
        else:
            ev = status("progress", "token_count")
        # the legacy envelope has no timestamp: a relative reset gives no time
        return [with_rate_limits(ev, _rate_limits(m.get("rate_limits"), None))]
    if t in ("error", "stream_error"):
        message = text_of(m.get("message")) or t
        ev = error(
            "api_error" if t == "error" else "stream_error",
            t,
            message,
            classify(message) if t == "error" else _transport_unless(message),
        )
        if t == "stream_error":  # a retry notice
            ev["retry"] = True
        return [ev]
    if t == "turn_aborted":
        reason = text_of(m.get("reason")) or "turn aborted"
        return [error("turn_aborted", "turn_aborted", reason, "semantic")]
    return []


def _transport_unless(message: str) -> str:
    """stream_error is a retry notice: transport unless the text says quota."""
    kind = classify(message)
    return "quota" if kind == "quota" else "transport"


def _legacy_mcp_end(name: str, cid: Any, result: Any) -> Event:
    if isinstance(result, dict):
        if "Ok" in result:
            ok = result["Ok"]
            if isinstance(ok, dict):
                return tool_result(
                    name, cid, ok.get("isError") is True, content_text(ok.get("content"))
                )
            return tool_result(name, cid, False, "")
        if "Err" in result:
            return tool_result(name, cid, True, text_of(result["Err"]) or "")
    return tool_result(name, cid, False, "")


# legacy approval requests -> the tool the call is for (``requiresAction``)
_LEGACY_APPROVALS = {
    "exec_approval_request": "command_execution",
    "apply_patch_approval_request": "file_change",
}
_LEGACY_STATUS = {
    "session_configured": "init",
    "task_started": "turn_started",
    "task_complete": "turn_completed",
    "agent_reasoning_section_break": "progress",
    "exec_command_output_delta": "progress",
    "turn_diff": "file_change",
    "plan_update": "progress",
    "background_event": "progress",
    "exec_approval_request": "progress",
    "apply_patch_approval_request": "progress",
    "shutdown_complete": "progress",
}
_LEGACY_TEXT = {
    "session_configured": "model",
    "task_complete": "last_agent_message",
    "turn_diff": "unified_diff",
}


# -- rollout files (~/.codex/sessions/…/rollout-*.jsonl; docs/session-files-2026.md §2) -------
# The envelope ``{"timestamp","type","payload"}`` (2025-09 on) and the pre-envelope generation
# (a bare header, ``{"record_type":"state"}`` markers and bare Responses items). A rollout
# repeats its content as a ``response_item`` and as an ``event_msg``: the response_items are the
# content, the duplicating event_msgs are ``status/progress`` (§2.6).

# Responses items written to rollouts that carry no content of their own
_ITEM_PROGRESS = frozenset(
    (
        "compaction", "compaction_summary", "context_compaction", "compaction_trigger",
        "ghost_snapshot", "image_generation_call", "tool_search_call", "tool_search_output",
        "additional_tools",
    )
)  # fmt: skip
# event_msg payloads that duplicate a response_item or carry no event of their own
_EVENT_PROGRESS = frozenset(
    (
        "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
        "agent_reasoning_section_break", "context_compacted", "entered_review_mode",
        "exited_review_mode", "thread_rolled_back", "undo_completed", "thread_name_updated",
        "image_generation_end", "exec_command_end", "mcp_tool_call_end", "web_search_end",
        "view_image_tool_call", "collab_agent_spawn_end", "collab_agent_interaction_end",
        "collab_waiting_end", "collab_close_end", "plan_update", "background_event",
        "session_configured", "turn_diff",
    )
)  # fmt: skip
# top-level rollout records with no event of their own
_RECORD_PROGRESS = frozenset(
    (
        "world_state", "token_usage_record", "retained_context", "security_risk_score",
        "inter_agent_communication", "inter_agent_communication_metadata", "realtime_item",
    )
)  # fmt: skip
# Responses item types a pre-envelope rollout writes bare (read as rollout lines)
BARE_ITEMS = frozenset(
    (
        "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
        "custom_tool_call_output", "local_shell_call", "web_search_call",
    )
) | _ITEM_PROGRESS  # fmt: skip
# leading texts of the user items Codex injects (context, not typed input)
_INJECTED = (
    "<environment_context>", "<user_instructions>", "# AGENTS.md instructions",
    "<permissions instructions>", "<user_shell_command>", "<turn_aborted>",
)  # fmt: skip


def is_envelope(v: dict[str, Any]) -> bool:
    """A rollout envelope line: a string ``type`` and an object ``payload``."""
    return isinstance(v.get("type"), str) and isinstance(v.get("payload"), dict)


def is_header(v: dict[str, Any]) -> bool:
    """The first line of a pre-envelope rollout: ``id`` and ``timestamp``, no ``type``/``msg``,
    and one of the session keys."""
    return (
        "type" not in v
        and "msg" not in v
        and isinstance(v.get("id"), str)
        and isinstance(v.get("timestamp"), str)
        and any(k in v for k in ("instructions", "git", "cwd", "originator", "cli_version"))
    )


def _rollout(t: str, p: dict[str, Any], ts: str | None) -> list[Event]:
    if t == "session_meta":
        out = [status("init", text_of(p.get("cli_version")))]
        src = p.get("source")
        sub = src.get("subagent") if isinstance(src, dict) else None
        spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
        if isinstance(spawn, dict) or isinstance(p.get("forked_from_id"), str):
            # the thread starts from its parent's counter (§2.5): usage_totals counts from there
            out[0]["continuation"] = True
        if isinstance(spawn, dict) and isinstance(p.get("id"), str) and p["id"]:
            info: dict[str, Any] = {"id": p["id"], "phase": "started", "type": "thread_spawn"}
            parent = text_of(spawn.get("parent_thread_id"))
            out.append(_with(status("subagent", parent), subagent=info))
        return out
    if t == "response_item":
        return _response_item(p)
    if t == "event_msg":
        return _event_msg(p, ts)
    if t == "turn_context":
        return [status("progress", text_of(p.get("model")))]
    if t == "compacted":
        message = text_of(p.get("message"))
        return [status("compaction", message.split("\n", 1)[0] if message is not None else None)]
    if t in _RECORD_PROGRESS:
        return [status("progress", t)]
    return []


def _parts_text(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        c["text"]
        for c in content
        if isinstance(c, dict) and c.get("type") in kinds and isinstance(c.get("text"), str)
    )


def _response_item(p: dict[str, Any]) -> list[Event]:
    t = p.get("type")
    cid = p.get("call_id")
    if t == "message":
        text = _parts_text(p.get("content"), ("input_text", "output_text", "text"))
        role = p.get("role")
        if role == "assistant":
            r = "assistant"
        elif role == "user" and not text.startswith(_INJECTED):
            r = "user"
        else:
            r = "system"  # developer/system items and the injected user context
        return [msg("text", r, text)]
    if t == "reasoning":
        text = _parts_text(p.get("summary"), ("summary_text",))
        if not text:
            text = _parts_text(p.get("content"), ("reasoning_text", "text"))
        return [msg("thinking", "assistant", text)]
    if t == "function_call":
        return [tool_call(name_or_unknown(p.get("name")), p.get("arguments"), cid)]
    if t == "custom_tool_call":
        return [tool_call(name_or_unknown(p.get("name")), p.get("input"), cid)]
    if t == "local_shell_call":
        action = p.get("action")
        command = action.get("command") if isinstance(action, dict) else None
        ev = tool_call("shell", command, cid)
        ev["providerToolName"] = "local_shell_call"
        return [ev]
    if t in ("function_call_output", "custom_tool_call_output"):
        text, failed = _call_output(p.get("output"))
        ev = tool_result("unknown", cid, failed, text)
        return [ev]
    if t == "web_search_call":
        action = p.get("action")
        iid = p.get("id")
        text = _action_text(action) if isinstance(action, dict) else ""
        return [tool_call("web_search", action, iid), tool_result("web_search", iid, False, text)]
    if isinstance(t, str) and t in _ITEM_PROGRESS:
        return [status("progress", t)]
    return []


def _call_output(out: Any) -> tuple[str, bool]:
    """The text of a tool output and whether it failed: a JSON string ``{output, metadata}``
    (its ``output``; failed when ``metadata.exit_code`` is not 0), a plain string, content items,
    or an object with ``content`` and ``success``."""
    if isinstance(out, str):
        inner = _inner_json(out) if out.startswith("{") else None
        if isinstance(inner, dict) and isinstance(inner.get("output"), str):
            meta = inner.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return inner["output"], type(code) is int and code != 0
        return out, text_failed(out)
    if isinstance(out, list):
        return _parts_text(out, ("input_text", "output_text", "text")), False
    if isinstance(out, dict):
        content = out.get("content")
        text = (
            content
            if isinstance(content, str)
            else _parts_text(content, ("input_text", "output_text", "text"))
        )
        return text, out.get("success") is False
    return "", False


def text_failed(text: str) -> bool:
    """A command output that reports its own failure in plain text, as codex gives it to the
    model (rollouts' ``function_call_output`` strings, and a command with no ``exit_code``):
    a first line ``Exit code: N`` with N not 0, or a sandbox refusal ``failed in sandbox …``."""
    if text.startswith("failed in sandbox"):
        return True
    if not text.startswith("Exit code: "):
        return False
    rest = text[len("Exit code: ") :]
    rest = rest[1:] if rest.startswith("-") else rest
    n = 0
    while n < len(rest) and rest[n] in "0123456789":
        n += 1
    return n > 0 and rest[:n].strip("0") != ""


# the budget of a JSON document inside a tool output string
INNER_DEPTH = 64
INNER_NODES = 100_000


def _inner_json(s: str) -> Any:
    """The value of a JSON text inside a string (None when it is none or over the budget)."""
    data = s.encode("utf-8")
    if scan_budget(data, INNER_DEPTH, INNER_NODES) is not None:
        return None
    try:
        return parse(data, s)[0]
    except JsonError:
        return None


def _event_msg(p: dict[str, Any], ts: str | None) -> list[Event]:
    t = p.get("type")
    if not isinstance(t, str):
        return []
    if t == "token_count":
        info = p.get("info")
        if isinstance(info, dict) and isinstance(info.get("total_token_usage"), dict):
            ev = _usage(info["total_token_usage"])
            if isinstance(info.get("model"), str) and info["model"]:
                ev["usage"]["model"] = info["model"]
        else:
            ev = status("progress", "rate_limits")
        return [with_rate_limits(ev, _rate_limits(p.get("rate_limits"), ts))]
    if t in ("task_started", "turn_started"):
        return [status("turn_started")]
    if t in ("task_complete", "turn_complete"):
        out: list[Event] = []
        e = p.get("error")
        if isinstance(e, dict):
            message = text_of(e.get("message")) or "turn failed"
            out.append(error("turn_failed", "turn_failed", message, classify(message)))
        out.append(status("turn_completed", text_of(p.get("last_agent_message"))))
        return out
    if t == "turn_aborted":
        reason = text_of(p.get("reason")) or "turn aborted"
        kind = "quota" if reason == "budget_limited" else "semantic"
        return [error("turn_aborted", "turn_aborted", reason, kind)]
    if t in ("error", "stream_error"):
        return _legacy(p)
    if t == "patch_apply_end":
        ok = p.get("success") is True
        return [status("file_change", text_of(p.get("stdout") if ok else p.get("stderr")))]
    if t == "item_completed":
        item = p.get("item")
        it = text_of(item.get("type")) if isinstance(item, dict) else None
        if it == "FileChange":
            return [status("file_change", it)]
        if it == "Plan" and isinstance(item, dict):
            return [status("progress", text_of(item.get("text")) or it)]
        return [status("progress", it)]
    if t == "thread_settings_applied":  # the thread's model and service tier: ``learn``
        ts = p.get("thread_settings")
        m = ts.get("model") if isinstance(ts, dict) else None
        return [status("progress", m if isinstance(m, str) and m else t)]
    if t in _EVENT_PROGRESS:
        return [status("progress", t)]
    return []
