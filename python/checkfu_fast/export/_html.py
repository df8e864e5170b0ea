"""A session as a person reads it: one self-contained HTML page (no script, no network).

The page is rendered from the session's ATIF trajectory (:func:`to_atif`), so it shows the same
steps: messages, thinking folded, tool calls with their arguments and results (long output
folded), errors highlighted, sub-agents nested under the call that started them, tokens and cost
per step, and a header with the totals. A Content-Security-Policy forbids every load.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from ._atif import to_atif

FOLD_LINES = 12  # results longer than this many lines (or FOLD_CHARS) are folded
FOLD_CHARS = 1200

_CSS = """
:root{--fg:#1d232b;--muted:#667085;--line:#d9dee5;--user:#eef4ff;--agent:#ffffff;
--sys:#f6f7f9;--err:#fdecec;--errline:#d92d20;--tool:#f7f5ff;--code:#f4f5f7}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:#fafbfc}
header{padding:18px 28px;background:#101828;color:#f2f4f7}
header h1{margin:0 0 6px;font-size:19px;font-weight:600}
header .meta{color:#b8c0cc;font-size:13px}
.totals{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.totals div{background:#1d2939;border-radius:6px;padding:6px 12px;font-size:13px}
.totals b{display:block;font-size:16px;color:#fff}
main{max-width:980px;margin:0 auto;padding:18px 20px 60px}
.step{border:1px solid var(--line);border-radius:8px;margin:12px 0;padding:10px 14px;
background:var(--agent)}
.step.user{background:var(--user)}
.step.system{background:var(--sys)}
.step.error{background:var(--err);border-color:var(--errline);border-left:5px solid var(--errline)}
.who{font-size:12px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
.step.error .who{color:var(--errline)}
.stats{float:right;font-size:12px;color:var(--muted)}
.msg{white-space:pre-wrap;word-wrap:break-word;margin:4px 0}
details{margin:6px 0}
summary{cursor:pointer;color:var(--muted);font-size:13px}
.think{border-left:3px solid #c4b5fd;padding-left:10px}
.tool{background:var(--tool);border:1px solid #e4dcff;border-radius:6px;padding:8px 10px;
margin:8px 0}
.tool .name{font-family:ui-monospace,Menlo,Consolas,monospace;font-weight:600}
.tool.failed{border-color:var(--errline);background:var(--err)}
pre{background:var(--code);border-radius:5px;padding:8px;margin:6px 0;overflow:auto;
white-space:pre-wrap;word-wrap:break-word;font:12.5px/1.45 ui-monospace,Menlo,Consolas,monospace}
.label{font-size:12px;color:var(--muted)}
.sub{border:2px solid #98a2b3;border-radius:8px;padding:4px 12px;margin:8px 0;background:#fcfcfd}
.sub>summary{font-weight:600;color:var(--fg)}
"""


def _fmt(n: Any) -> str:
    if isinstance(n, bool) or not isinstance(n, int | float):
        return "-"
    return f"{n:,}" if isinstance(n, int) else f"{n:,.1f}"


def _cost(c: Any) -> str:
    return f"${c:.4f}" if isinstance(c, int | float) and not isinstance(c, bool) else "-"


def _pre(text: str, fold: bool = True) -> str:
    body = f"<pre>{escape(text)}</pre>"
    lines = text.count("\n") + 1
    if fold and (lines > FOLD_LINES or len(text) > FOLD_CHARS):
        what = f"output: {lines:,} lines, {len(text):,} characters"
        return f"<details><summary>{what}</summary>{body}</details>"
    return body


def _args(args: Any) -> str:
    if isinstance(args, dict) and set(args) == {"input"} and isinstance(args["input"], str):
        return args["input"]
    return json.dumps(args, indent=2, ensure_ascii=False)


def _step_stats(step: Mapping[str, Any]) -> str:
    m = step.get("metrics")
    if not isinstance(m, dict):
        return ""
    parts = []
    if "prompt_tokens" in m:
        parts.append(f"in {_fmt(m['prompt_tokens'])}")
    if m.get("cached_tokens"):
        parts.append(f"cached {_fmt(m['cached_tokens'])}")
    if "completion_tokens" in m:
        parts.append(f"out {_fmt(m['completion_tokens'])}")
    text = " · ".join(parts) + " tokens" if parts else ""
    if "cost_usd" in m:
        estimated = (m.get("extra") or {}).get("cost_source") == "estimated"
        text += (" · " if text else "") + ("≈" if estimated else "") + _cost(m["cost_usd"])
    return f'<span class="stats">{escape(text)}</span>' if text else ""


def _result(
    r: Mapping[str, Any], subs: Mapping[str, Mapping[str, Any]], depth: int
) -> tuple[str, bool]:
    out = []
    failed = isinstance(r.get("extra"), dict) and r["extra"].get("isError") is True
    content = r.get("content")
    if isinstance(content, str):
        label = "error result" if failed else "result"
        out.append(f'<div class="label">{label}</div>{_pre(content)}')
    for ref in r.get("subagent_trajectory_ref") or []:
        sub = subs.get(ref.get("trajectory_id", ""))
        if sub is not None:
            out.append(_subagent(sub, depth + 1))
    return "".join(out), failed


def _subagent(doc: Mapping[str, Any], depth: int) -> str:
    agent = doc.get("agent", {})
    meta = (agent.get("extra") or {}).get("subagent") or {}
    name = meta.get("name") or meta.get("type") or "sub-agent"
    desc = meta.get("description")
    fm = doc.get("final_metrics") or {}
    head = f"sub-agent {name}" + (f": {desc}" if desc else "")
    head += f" ({fm.get('total_steps', 0)} steps"
    if "total_prompt_tokens" in fm:
        out = _fmt(fm.get("total_completion_tokens"))
        head += f", {_fmt(fm['total_prompt_tokens'])} in / {out} out"
    head += ")"
    body = _steps(doc, depth)
    return f'<details class="sub" open><summary>{escape(head)}</summary>{body}</details>'


def _steps(doc: Mapping[str, Any], depth: int = 0) -> str:
    subs = {s.get("trajectory_id", ""): s for s in doc.get("subagent_trajectories") or []}
    out = []
    for step in doc.get("steps", []):
        src = step.get("source")
        extra = step.get("extra") or {}
        if extra.get("empty"):
            out.append('<div class="step system"><div class="who">no messages</div></div>')
            continue
        is_err = "error" in extra
        cls = "error" if is_err else src
        who = {"user": "user", "system": "system", "agent": "assistant"}.get(src, src)
        if is_err:
            err = extra["error"]
            who = f"error · {err.get('errorKind', '')} · {err.get('subtype', '')}".rstrip(" ·")
        ts = step.get("timestamp")
        when = f' <span class="label">{escape(ts)}</span>' if isinstance(ts, str) else ""
        model = step.get("model_name")
        if isinstance(model, str):
            when += f' <span class="label">{escape(model)}</span>'
        parts = [
            f'<section class="step {escape(str(cls))}">{_step_stats(step)}'
            f'<div class="who">{escape(str(who))}{when}</div>'
        ]
        reasoning = step.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            parts.append(
                f'<details class="think"><summary>thinking ({len(reasoning):,} characters)'
                f'</summary><div class="msg">{escape(reasoning)}</div></details>'
            )
        msg = step.get("message")
        if isinstance(msg, str) and msg:
            parts.append(f'<div class="msg">{escape(msg)}</div>')
        results = (step.get("observation") or {}).get("results") or []
        by_call: dict[str, list[Mapping[str, Any]]] = {}
        loose = []
        for r in results:
            cid = r.get("source_call_id")
            if isinstance(cid, str):
                by_call.setdefault(cid, []).append(r)
            else:
                loose.append(r)
        for call in step.get("tool_calls") or []:
            rendered = []
            failed = False
            for r in by_call.get(call["tool_call_id"], []):
                html, bad = _result(r, subs, depth)
                rendered.append(html)
                failed = failed or bad
            if not rendered:
                rendered.append('<div class="label">no result</div>')
            parts.append(
                f'<div class="tool{" failed" if failed else ""}"><span class="label">tool call'
                f'</span> <span class="name">{escape(call["function_name"])}</span>'
                f"{_pre(_args(call.get('arguments', {})))}{''.join(rendered)}</div>"
            )
        for r in loose:
            html, bad = _result(r, subs, depth)
            parts.append(f'<div class="tool{" failed" if bad else ""}">{html}</div>')
        parts.append("</section>")
        out.append("".join(parts))
    return "".join(out)


def render_trajectory(doc: Mapping[str, Any], *, title: str | None = None) -> str:
    """The page of one ATIF trajectory (as :func:`to_atif` gives it)."""
    agent = doc.get("agent", {})
    fm = doc.get("final_metrics") or {}
    sid = doc.get("session_id") or doc.get("trajectory_id") or "session"
    errors = sum(1 for s in doc.get("steps", []) if "error" in (s.get("extra") or {}))
    tools = sum(len(s.get("tool_calls") or []) for s in doc.get("steps", []))
    heading = title or f"{agent.get('name', 'agent')} session {sid}"
    meta = [f"session {sid}", f"agent {agent.get('name')}"]
    if agent.get("model_name"):
        meta.append(f"model {agent['model_name']}")
    first = next((s["timestamp"] for s in doc.get("steps", []) if "timestamp" in s), None)
    if first:
        meta.append(f"started {first}")
    estimated = (fm.get("extra") or {}).get("cost_source") == "estimated"
    cost = _cost(fm.get("total_cost_usd"))
    cost_card = ("cost (estimated)", "≈" + cost) if estimated else ("cost", cost)
    cards = [
        ("steps", _fmt(fm.get("total_steps"))),
        ("tool calls", _fmt(tools)),
        ("input tokens", _fmt(fm.get("total_prompt_tokens"))),
        ("cached", _fmt(fm.get("total_cached_tokens"))),
        ("output tokens", _fmt(fm.get("total_completion_tokens"))),
        cost_card,
        ("errors", _fmt(errors)),
    ]
    totals = "".join(f"<div>{escape(k)}<b>{escape(v)}</b></div>" for k, v in cards)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(heading)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{escape(heading)}</h1>"
        f'<div class="meta">{escape(" · ".join(str(m) for m in meta))}</div>'
        f'<div class="totals">{totals}</div></header>'
        f"<main>{_steps(doc)}</main>"
        f'<footer style="text-align:center;color:#98a2b3;font-size:12px;padding:20px">'
        f"{escape(str((agent.get('extra') or {}).get('producer', 'checkfu-fast')))}"
        f" · {escape(str(doc.get('schema_version')))}</footer>"
        "</body></html>\n"
    )


def to_html(
    events: Iterable[Mapping[str, Any]],
    *,
    title: str | None = None,
    agent: Mapping[str, Any] | None = None,
) -> str:
    """One self-contained transcript page of the events' session (see the module doc)."""
    return render_trajectory(to_atif(events, agent=agent), title=title)
