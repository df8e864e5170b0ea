"""Write ``vectors/usage/<dialect>-<name>.totals.json`` (run from the repo root).

Each file names its inputs (``corpus:`` = ``../shared/corpus/real/``, else repo-relative), the
totals ``checkfu_fast.usage_totals`` gives (``totals``; review every change before committing) and,
under ``cli``, what the CLI itself reports as its total, computed here straight from the native
lines by an independent reader (the package never reads native JSON outside its dialects):

- claude: the last ``result`` per session: the sum over its ``modelUsage`` models (input =
  input + cache read + cache creation; the run's counter, like ``total_cost_usd``), else its
  ``usage`` (the last turn's), with ``total_cost_usd``; ``cliModelUsage`` = the ``modelUsage``
  sum with the models' ``costUSD``;
- codex: the last ``turn.completed`` / ``token_count`` counter of each thread (cumulative);
  rollout files: the rule of docs/session-files-2026.md section 2.5 (``rollout_codex``);
- cursor: the sum of the ``result`` usages (one per run);
- opencode: the sum of the ``step_finish`` parts (per step);
- pi: the sum of the assistant ``message_end`` usages (per message);
- grok: the ``end`` line (streaming), the typeless ``json`` object, or the sum of superagent
  ``step_finish`` usages; output = ``output_tokens``, plus ``reasoning_tokens`` only when
  ``total_tokens`` shows the build counted them apart (docs/formats-2026.md section 6.1).

``estimatedUsd``: for claude session files and codex rollouts (which report no cost), the cost
of every request at the shipped price snapshot (``python/checkfu_fast/data/prices.json``), read
here from the native lines with its own price arithmetic (``Decimal``): per claude message (the
ccusage entry) its input, cache reads, cache writes (5-minute and 1-hour apart) and output, and
each billed iteration of it apart (``usage.iterations[]`` of type ``compaction``, at the
message's model, and ``advisor_message``, at its own ``model``: the top-level ``usage`` leaves
them out; docs/usage.md "Rules"), at the prices in force on the line's UTC day; per
codex ``token_count`` line the growth of ``total_token_usage`` over the thread's largest reading
so far, at the model of the latest ``turn_context`` or ``thread_settings_applied`` and its
service tier (``fast``/``priority``: the model's ``{"service_tier": "fast"}`` prices); a tier
applies when the request's input exceeds its start. ``unpricedModels``: the models the snapshot has no price for.

claude session files whose messages have billed iterations get ``billedByModel`` (the ccusage
entries plus those iterations, per model) in place of ``ccusageByModel``, and
``ccusageTopLevelByModel``: what ccusage's rule (top-level usage only) gives for them.

``reasoningTokens`` is in ``cli`` where the CLI reports reasoning tokens (codex
``reasoning_output_tokens``, opencode ``tokens.reasoning``, pi ``usage.reasoning``, grok
``reasoning_tokens``): the part of the output that was reasoning.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
CORPUS = ROOT.parent / "shared" / "corpus" / "real"

from checkfu_fast import UsageFold, normalize  # noqa: E402

CASES = {
    "claude-ci-session4": ["corpus:claude/hivemind-pr4-ci-session4.jsonl"],
    "claude-revert-session1": ["corpus:claude/hivemind-pr4-revert-session1.jsonl"],
    "claude-weekly-limit": ["corpus:claude/hivemind-719-weekly-limit.jsonl"],
    "claude-max-turns": ["corpus:claude/single-result-error-max-turns.jsonl"],
    "claude-stream-events": ["vectors/events/claude/stream-events.input.jsonl"],
    "codex-642-session1": ["corpus:codex/new-hivemind-642-session1.jsonl"],
    "codex-legacy-fragments": ["corpus:codex/old-vibekanban-fragments.jsonl"],
    "codex-resume": [
        "vectors/usage/inputs/codex-resume-1.jsonl",
        "vectors/usage/inputs/codex-resume-2.jsonl",
    ],
    "codex-rollout": ["docs/examples-sessions/codex-rollout.jsonl"],
    "codex-rollout-paginated": ["docs/examples-sessions/codex-rollout-paginated.jsonl"],
    "codex-rollout-resume": [
        "vectors/usage/inputs/codex-rollout-resume-1.jsonl",
        "vectors/usage/inputs/codex-rollout-resume-2.jsonl",
    ],
    "codex-rollout-subagent": ["vectors/usage/inputs/codex-rollout-subagent.jsonl"],
    "codex-rollout-reset": ["vectors/usage/inputs/codex-rollout-reset.jsonl"],
    "codex-rollout-fast-tier": ["vectors/events/codex/rollout-fast-tier.input.jsonl"],
    "cursor-result": ["corpus:cursor/json-result-with-usage.jsonl"],
    "cursor-2026": ["vectors/events/cursor/2026.input.jsonl"],
    "opencode-takopi": ["corpus:opencode/takopi-stream-success.jsonl"],
    "opencode-pr2810": ["corpus:opencode/pr2810-step-lines.jsonl"],
    "pi-success": ["vectors/events/pi/success.input.jsonl"],
    "pi-out-of-usage": ["corpus:pi/causeflow-anthropic-out-of-usage.jsonl"],
    "grok-streaming": ["vectors/events/grok/streaming.input.jsonl"],
    "grok-json": ["vectors/events/grok/json.input.jsonl"],
    "grok-superagent": ["vectors/events/grok/superagent.input.jsonl"],
    "grok-2026": ["vectors/events/grok/2026.input.jsonl"],
    "opencode-2026": ["vectors/events/opencode/2026.input.jsonl"],
    "claude-session-file": ["vectors/events/claude/session-file.input.jsonl"],
    "claude-fast-mode": ["vectors/usage/inputs/claude-fast-mode.jsonl"],
    "claude-session-file-subagent": [
        "vectors/events/claude/session-file.input.jsonl",
        "vectors/events/claude/session-file-subagent.input.jsonl",
    ],
    "claude-session-file-compaction": [
        "vectors/events/claude/session-file-compaction.input.jsonl",
        "vectors/usage/inputs/claude-compaction-resume.jsonl",
    ],
    "claude-stream-compaction": ["vectors/events/claude/stream-compaction.input.jsonl"],
}


def resolve(name: str) -> Path:
    return CORPUS / name[7:] if name.startswith("corpus:") else ROOT / name


def lines(paths: list[Path]):
    for p in paths:
        for raw in p.read_bytes().splitlines():
            try:
                d = json.loads(raw)
            except ValueError:
                continue
            if isinstance(d, dict):
                yield d


def tot(i=0, o=0, c=0, cost=None, r=None):
    out = {"inputTokens": i, "outputTokens": o, "cachedTokens": c}
    if r is not None:  # reasoning tokens, only where the CLI reports them (part of output)
        out["reasoningTokens"] = r
    out["costUsd"] = cost
    return out


def add(a, b):
    out = {k: a[k] + b[k] for k in ("inputTokens", "outputTokens", "cachedTokens")}
    if "reasoningTokens" in a or "reasoningTokens" in b:
        out["reasoningTokens"] = a.get("reasoningTokens", 0) + b.get("reasoningTokens", 0)
    ca, cb = a["costUsd"], b["costUsd"]
    out["costUsd"] = cb if ca is None else ca if cb is None else ca + cb
    return out


def cli_claude(ds):
    last, models = {}, {}
    for d in ds:
        if d.get("type") != "result":
            continue
        u = d.get("usage") or {}
        cr = u.get("cache_read_input_tokens", 0)
        last[d.get("session_id")] = tot(
            u.get("input_tokens", 0) + cr + u.get("cache_creation_input_tokens", 0),
            u.get("output_tokens", 0),
            cr,
            d.get("total_cost_usd"),
        )
        mu = tot()
        for m in (d.get("modelUsage") or {}).values():
            r = m.get("cacheReadInputTokens", 0)
            mu = add(
                mu,
                tot(
                    m["inputTokens"] + r + m.get("cacheCreationInputTokens", 0),
                    m["outputTokens"],
                    r,
                    m.get("costUSD"),
                ),
            )
        models[d.get("session_id")] = mu
        if d.get("modelUsage"):  # the run's counter wins over the last turn's usage
            last[d.get("session_id")] = {**mu, "costUsd": d.get("total_cost_usd")}
    if not last:
        return None, None
    t = tot()
    for v in last.values():
        t = add(t, v)
    m = tot()
    for v in models.values():
        m = add(m, v)
    return t, (m if any(d.get("modelUsage") for d in ds if d.get("type") == "result") else None)


def cli_codex(ds):
    last, thread = {}, None
    for d in ds:
        if d.get("type") == "thread.started":
            thread = d["thread_id"]
        u = None
        if d.get("type") == "turn.completed":
            u = d["usage"]
        msg = d.get("msg") if isinstance(d.get("msg"), dict) else {}
        if msg.get("type") == "token_count":
            u = (msg.get("info") or {}).get("total_token_usage") or msg
        if u is not None:
            last[thread] = tot(
                u["input_tokens"],
                u["output_tokens"],
                u["cached_input_tokens"],
                r=u.get("reasoning_output_tokens"),
            )
    t = tot()
    for v in last.values():
        t = add(t, v)
    return t if last else None


def rollout_codex(files):
    """Rollout files (docs/session-files-2026.md section 2.5), read here independently: per
    thread (each file's first ``session_meta`` id) its ``total_token_usage`` readings; a reading
    below the previous one in the same file starts a new counter (both count); a thread's
    counter is the largest over its files; a spawned or forked thread (``source.subagent`` or
    ``forked_from_id``) subtracts the replayed parent history (the readings stamped with the
    second of its first reading)."""
    closed, counters, base = {}, {}, {}

    def mx(a, b):  # componentwise largest; reasoningTokens only where a reading reported it
        keys = [*b, *(k for k in a if k not in b)]
        return {k: None if k == "costUsd" else max(a.get(k, 0), b.get(k, 0)) for k in keys}

    for ds in files:
        thread = prev = burst = None
        cont = False
        for d in ds:
            p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
            if d.get("type") == "session_meta" and thread is None:
                thread = p["id"]
                cont = isinstance(p.get("source"), dict) or "forked_from_id" in p
                continue
            info = p.get("info") if p.get("type") == "token_count" else None
            if not isinstance(info, dict):
                continue
            u = info["total_token_usage"]
            t = tot(
                u["input_tokens"],
                u["output_tokens"],
                u["cached_input_tokens"],
                r=u.get("reasoning_output_tokens"),
            )
            if cont and burst in (None, d["timestamp"][:19]):
                burst = d["timestamp"][:19]
                base[thread] = mx(base.get(thread, tot()), t)
                continue
            cont = False
            if prev is not None and any(t[k] < prev[k] for k in t if k != "costUsd"):
                closed.setdefault(thread, []).append(counters.pop(thread))
            counters[thread] = mx(counters.get(thread, tot()), t)
            prev = t
    total = tot()
    for th, c in counters.items():
        segs = closed.get(th, []) + [c]
        if th in base:
            b = base[th]
            segs[0] = {
                k: None if k == "costUsd" else max(segs[0][k] - b.get(k, 0), 0) for k in segs[0]
            }
        for seg in segs:
            total = add(total, seg)
    return total if counters else None


def cli_cursor(ds):
    t = None
    for d in ds:
        if d.get("type") == "result" and d.get("usage"):
            u = d["usage"]
            cr = u.get("cacheReadTokens", 0)
            i = u["inputTokens"] + cr + u.get("cacheWriteTokens", 0)
            t = add(t or tot(), tot(i, u["outputTokens"], cr))
    return t


def cli_opencode(ds):
    t = None
    for d in ds:
        if d.get("type") == "step_finish":
            p = d["part"]
            k = p["tokens"]
            cr = k["cache"]["read"]
            i = k["input"] + cr + k["cache"]["write"]
            o = k["output"] + k["reasoning"]  # reported apart from output
            t = add(t or tot(), tot(i, o, cr, p.get("cost"), k["reasoning"]))
    return t


def cli_pi(ds):
    t = None
    for d in ds:
        m = d.get("message") or {}
        if d.get("type") == "message_end" and m.get("role") == "assistant":
            u = m["usage"]
            i = u["input"] + u["cacheRead"] + u["cacheWrite"]
            r = u.get("reasoning")  # newer builds: a subset of output
            t = add(t or tot(), tot(i, u["output"], u["cacheRead"], u["cost"]["total"], r))
    return t


def cli_grok(ds):
    steps = None
    for d in ds:
        u = d.get("usage") or {}
        if d.get("type") == "end" or ("type" not in d and u):
            cr = u.get("cache_read_input_tokens", 0)
            i = u["input_tokens"] + cr + u.get("cache_creation_input_tokens", 0)
            o = u["output_tokens"]
            # xAI: total = input + cache read + cache creation + output (reasoning inside output);
            # a build whose total also counts reasoning reports it apart from output
            if u.get("total_tokens") == i + o + u.get("reasoning_tokens", 0) != i + o:
                o += u["reasoning_tokens"]
            return tot(i, o, cr, d.get("total_cost_usd"), u.get("reasoning_tokens"))
        if d.get("type") == "step_finish":
            ticks = u.get("costUsdTicks")
            cost = None if ticks is None else ticks / 1e10
            steps = add(steps or tot(), tot(u["inputTokens"], u["outputTokens"], 0, cost))
    return steps


BILLED_ITERATIONS = ("compaction", "advisor_message")  # left out of the top-level usage


def billed_iterations(m):
    """A message's billed iterations as ``(model, usage)``: a compaction at the iteration's
    ``model``, else the message's; an advisor call at its own ``model`` (``unknown`` without)."""
    its = (m.get("usage") or {}).get("iterations")
    out = []
    for it in its if isinstance(its, list) else []:
        if not isinstance(it, dict) or it.get("type") not in BILLED_ITERATIONS:
            continue
        if not any(isinstance(it.get(k), (int, float)) for k in ("input_tokens", "output_tokens")):
            continue
        own = it.get("model")
        fallback = m.get("model") if it["type"] == "compaction" else None
        out.append((own if isinstance(own, str) and own else fallback or "unknown", it))
    return out


def best_claude_entries(ds):
    """ccusage's entries: one per ``(message.id, requestId)``, the line with the largest token
    total; ``<synthetic>`` lines dropped. Values: (model, usage, message, UTC day)."""
    best = {}
    for d in ds:
        m = d.get("message") if isinstance(d.get("message"), dict) else {}
        u = m.get("usage")
        if d.get("type") != "assistant" or not u or m.get("model") == "<synthetic>":
            continue
        key = (m.get("id"), d.get("requestId"))
        size = sum(u.get(k, 0) for k in ("input_tokens", "output_tokens",
                                        "cache_creation_input_tokens", "cache_read_input_tokens"))
        if key not in best or size > best[key][0]:
            speed = u.get("speed")  # fast mode: its own model (ccusage: "<model>-fast")
            fast = isinstance(speed, str) and speed not in ("", "standard")
            model = f"{m['model']} ({speed})" if fast else m["model"]
            best[key] = (size, model, u, m, (d.get("timestamp") or "")[:10] or None)
    return [v[1:] for v in best.values()]


def billed_claude(ds):
    """The ccusage entries plus each one's billed iterations, per model (tokens)."""
    models = {}
    for model, u, m, _ in best_claude_entries(ds):
        for mod, x in [(model, u), *billed_iterations(m)]:
            cr = x.get("cache_read_input_tokens", 0)
            i = x.get("input_tokens", 0) + cr + x.get("cache_creation_input_tokens", 0)
            models[mod] = add(models.get(mod, tot()), tot(i, x.get("output_tokens", 0), cr))
    return {k: models[k] for k in sorted(models)}


def ccusage_claude(ds):
    """Session files report no total of their own: ccusage's rule, read from the native lines
    (top-level ``message.usage`` only; one entry per ``(message.id, requestId)``, the one with
    the largest token total; ``<synthetic>`` lines dropped), per model."""
    models = {}
    for model, u, _, _ in best_claude_entries(ds):
        cr = u.get("cache_read_input_tokens", 0)
        i = u.get("input_tokens", 0) + cr + u.get("cache_creation_input_tokens", 0)
        models[model] = add(models.get(model, tot()), tot(i, u.get("output_tokens", 0), cr))
    return {k: models[k] for k in sorted(models)} or None


SNAPSHOT = json.loads((ROOT / "python/checkfu_fast/data/prices.json").read_text())


def _clause(c, text):
    ((k, v),) = c.items()
    if k in ("or", "and"):
        hits = [_clause(x, text) for x in v]
        return any(hits) if k == "or" else all(hits)
    import re

    return {
        "equals": lambda: text == v.lower(),
        "startsWith": lambda: text.startswith(v.lower()),
        "endsWith": lambda: text.endswith(v.lower()),
        "contains": lambda: v.lower() in text,
        "regex": lambda: re.search(v, text) is not None,
    }[k]()


def price_of(model, day=None):
    """The model's prices in force on ``day`` (``YYYY-MM-DD``; the last whose ``since`` is not
    later; None: the latest): the first provider whose modelMatch matches, then its first
    model whose match does (the snapshot's rule, for the names in these examples). ``"<model>
    (fast)"``: those prices with the model's ``{"speed": "fast"}`` variants (OpenAI's: its
    ``{"service_tier": "fast"}`` ones) over them (the first that names a price wins), None
    without such a variant."""
    name, _, speed = model.lower().partition(" (")
    speed = speed.rstrip(")")
    for prov in SNAPSHOT["providers"]:
        if prov["modelMatch"] and _clause(prov["modelMatch"], name):
            for m in SNAPSHOT["models"]:
                if m["provider"] == prov["id"] and _clause(m["match"], name):
                    base = m["prices"][0]
                    for p in m["prices"]:
                        if p.get("since") is None or day is None or day >= p["since"]:
                            base = p
                    if not speed:
                        return base
                    vs = [v for v in m.get("variants", [])
                          if v["when"] in ({"speed": speed}, {"service_tier": speed})]
                    if not vs:
                        return None
                    p = dict(base)
                    for k in ("input", "output", "cacheRead", "cacheWrite", "cacheWrite1h"):
                        p[k] = next((v[k] for v in vs if k in v), p.get(k))
                    return p
            return None
    return None


def request_usd(model, inp, out, read, write=0, write1h=0, day=None):
    """One request's cost (Decimal USD) at the prices in force on ``day``, None when the model
    has no price."""
    from decimal import Decimal as D

    p = price_of(model, day)
    if p is None:
        return None

    def at(key, fallback):
        v = p.get(key)
        if v is None:
            return fallback
        if isinstance(v, dict):
            price = v["base"]
            for t in v["tiers"]:
                if inp > t["above"]:
                    price = t["price"]
            return D(str(price))
        return D(str(v))

    i = at("input", D(0))
    w = at("cacheWrite", i)
    return (
        (inp - read - write) * i
        + read * at("cacheRead", i)
        + (write - write1h) * w
        + write1h * at("cacheWrite1h", w)
        + out * at("output", D(0))
    ) / D(10**6)


def estimate_claude_files(ds):
    """Session files: the ccusage entry of each message priced (its own model), and each of its
    billed iterations as a request of its own, on the line's day."""

    def req(model, u, day):
        cr = u.get("cache_read_input_tokens", 0)
        cw = u.get("cache_creation_input_tokens", 0)
        w1h = (u.get("cache_creation") or {}).get("ephemeral_1h_input_tokens", 0)
        return (model, u.get("input_tokens", 0) + cr + cw, u.get("output_tokens", 0), cr, cw, w1h,
                day)

    return _sum_requests(
        req(mod, x, day)
        for model, u, m, day in best_claude_entries(ds)
        for mod, x in [(model, u), *billed_iterations(m)]
    )


def estimate_codex_rollouts(files):
    """Rollouts: each token_count line's growth over the thread's largest reading (a reading
    below the previous one in its file restarts from 0; a spawned thread's replayed first
    second is its baseline), at the latest turn_context / thread_settings_applied model and
    service tier (the settings' snapshot leaves the default tier out)."""
    fast = {"fast": "fast", "priority": "fast", "flex": "flex"}
    seen, reqs = {}, []
    for ds in files:
        thread = prev = burst = tier = None
        cont = False
        model = "unknown"
        for d in ds:
            p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
            if d.get("type") == "session_meta" and thread is None:
                thread = p["id"]
                cont = isinstance(p.get("source"), dict) or "forked_from_id" in p
                continue
            if d.get("type") == "turn_context" and isinstance(p.get("model"), str):
                model = p["model"]
            if d.get("type") == "turn_context" and "service_tier" in p:
                tier = fast.get(p["service_tier"])
            if p.get("type") == "thread_settings_applied":
                model = p["thread_settings"].get("model", model)
                tier = fast.get(p["thread_settings"].get("service_tier"))
            info = p.get("info") if p.get("type") == "token_count" else None
            if not isinstance(info, dict):
                continue
            u = info["total_token_usage"]
            # 2026 builds add cache_write_input_tokens (a part of input_tokens)
            t = (u["input_tokens"], u["output_tokens"], u["cached_input_tokens"],
                 u.get("cache_write_input_tokens", 0))
            if cont and burst in (None, d["timestamp"][:19]):
                burst = d["timestamp"][:19]
                seen[thread] = tuple(map(max, seen.get(thread, (0, 0, 0, 0)), t))
                continue
            cont = False
            if prev is not None and any(a < b for a, b in zip(t, prev)):
                seen[thread] = (0, 0, 0, 0)
            base = seen.get(thread, (0, 0, 0, 0))
            delta = tuple(max(a - b, 0) for a, b in zip(t, base))
            seen[thread] = tuple(map(max, base, t))
            prev = t
            reqs.append((f"{model} ({tier})" if tier else model, *delta, 0, None))
    return _sum_requests(reqs)


def _sum_requests(reqs):
    total, unpriced, writes = 0, set(), 0
    for model, i, o, r, w, w1h, day in reqs:
        writes += w
        usd = request_usd(model, i, o, r, w, w1h, day)
        if usd is None:
            if i or o:
                unpriced.add(model)
            continue
        total += usd
    return {
        "estimatedUsd": float(total),
        "unpricedModels": sorted(unpriced),
        "cacheWriteTokens": writes,
    }


CLI = {
    "codex": cli_codex,
    "cursor": cli_cursor,
    "opencode": cli_opencode,
    "pi": cli_pi,
    "grok": cli_grok,
}


def totals(paths: list[Path]) -> dict:
    fold = UsageFold()
    for p in paths:
        fold.start_stream()
        for ev in normalize(p.read_bytes()):
            fold.add(ev)
        fold.end_stream()
    return fold.totals()


def main() -> None:
    out_dir = ROOT / "vectors" / "usage"
    for name, inputs in CASES.items():
        dialect = name.split("-")[0]
        paths = [resolve(n) for n in inputs]
        ds = list(lines(paths))
        doc: dict = {"inputs": inputs}
        if dialect == "claude":
            doc["cli"], model_usage = cli_claude(ds)
            if model_usage is not None:
                doc["cliModelUsage"] = model_usage
            if doc["cli"] is None and any("requestId" in d for d in ds):
                if any(billed_iterations(m) for _, _, m, _ in best_claude_entries(ds)):
                    doc["billedByModel"] = billed_claude(ds)
                    doc["ccusageTopLevelByModel"] = ccusage_claude(ds)
                else:
                    doc["ccusageByModel"] = ccusage_claude(ds)
                doc["estimate"] = estimate_claude_files(ds)
        elif dialect == "codex" and any(isinstance(d.get("payload"), dict) for d in ds):
            doc["cli"] = rollout_codex([list(lines([p])) for p in paths])
            doc["estimate"] = estimate_codex_rollouts([list(lines([p])) for p in paths])
        else:
            doc["cli"] = CLI[dialect](ds)
        doc["totals"] = totals(paths)
        path = out_dir / f"{name}.totals.json"
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
