"""usage_totals / UsageFold: golden totals per dialect, the CLIs' own totals, and invariants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import Normalizer, UsageFold, normalize, reference, usage_totals
from checkfu_fast.golden import strict_key
from conftest import CORPUS, NO_SHARED, ROOT, needs_shared

USAGE = ROOT / "vectors" / "usage"
GOLDENS = sorted(USAGE.glob("*.totals.json"))
TOKENS = ("inputTokens", "outputTokens", "cachedTokens", "costUsd")


def resolve(name: str) -> Path:
    return CORPUS / name[7:] if name.startswith("corpus:") else ROOT / name


def fold_files(paths: list[Path], norm=normalize) -> dict:
    fold = UsageFold()
    for p in paths:
        fold.start_stream()
        for ev in norm(p.read_bytes()):
            fold.add(ev)
        fold.end_stream()
    return fold.totals()


def test_goldens_exist_per_dialect():
    dialects = {p.name.split("-")[0] for p in GOLDENS}
    assert dialects >= {"claude", "codex", "cursor", "opencode", "pi", "grok"}


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.name)
def test_golden_totals(path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    if any(n.startswith("corpus:") for n in doc["inputs"]) and not CORPUS.is_dir():
        pytest.skip(NO_SHARED)
    paths = [resolve(n) for n in doc["inputs"]]
    got = fold_files(paths)
    assert strict_key(got) == strict_key(doc["totals"]), json.dumps(got, indent=1)
    # The reference twin gives the same events, so the same totals.
    assert strict_key(fold_files(paths, reference.normalize)) == strict_key(got)


@pytest.mark.parametrize("path", GOLDENS, ids=lambda p: p.name)
def test_total_equals_what_the_cli_reports(path):
    """``cli`` was computed from the native lines by an independent reader (regen.py)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc["cli"] is None:
        pytest.skip("this stream reports no total of its own")
    total = dict(doc["totals"]["total"])
    # the CLI's own total has only the costs it reported: the estimated part is not in it
    # (claude: the sum of the models' costUSD, which equals total_cost_usd to float rounding)
    if total["source"] in ("absent", "estimated"):
        total["costUsd"] = None
    else:
        total["costUsd"] = pytest.approx(total["costUsd"] - total["estimatedUsd"], abs=1e-12)
    # reasoningTokens: in both or in neither (only where the CLI reports them)
    keys = (*TOKENS, "reasoningTokens")
    assert {k: total[k] for k in keys if k in total} == doc["cli"]


@pytest.mark.parametrize(
    "path", [p for p in GOLDENS if '"estimate"' in p.read_text()], ids=lambda p: p.name
)
def test_estimated_cost_equals_the_independent_reader(path):
    """Session files and rollouts report no cost: regen.py prices every request from the native
    lines with its own arithmetic, at the shipped snapshot."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    est, total = doc["estimate"], doc["totals"]["total"]
    # cache writes priced as such: the events carry them apart (cacheWriteTokens)
    assert total.get("cacheWriteTokens", 0) == est["cacheWriteTokens"]
    assert (total["estimatedUsd"] or 0) == pytest.approx(est["estimatedUsd"], abs=1e-9)
    assert total["unpricedModels"] == est["unpricedModels"]


def test_claude_total_equals_model_usage_sum():
    doc = json.loads((USAGE / "claude-weekly-limit.totals.json").read_text(encoding="utf-8"))
    total = doc["totals"]["total"]
    assert {k: total[k] for k in TOKENS} == doc["cliModelUsage"]
    assert total["source"] == "reported" and total["estimatedUsd"] == 0


@needs_shared
def test_claude_repeated_message_usage_counts_once():
    data = (CORPUS / "claude" / "hivemind-pr4-ci-session4.jsonl").read_bytes()
    events = normalize(data)
    messages = [e for e in events if e.get("usageScope") == "message"]
    naive = sum(e["usage"]["inputTokens"] for e in messages)
    only_messages = usage_totals(e for e in events if e.get("usageScope") != "cumulative")
    # Deduplicated by messageId, the messages give exactly the result's input count (188910);
    # summed naively they give more than twice as much.
    assert only_messages["total"]["inputTokens"] == 188910
    assert naive > 2 * 188910
    # The result's counter is the modelUsage sum (the haiku helper included): it covers them.
    assert usage_totals(events)["total"]["inputTokens"] == 201826


def _claude_result(session: str, inp: int, out: int, cost: float) -> str:
    return json.dumps(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": "ok",
            "session_id": session,
            "total_cost_usd": cost,
            "usage": {"input_tokens": inp, "output_tokens": out},
            "modelUsage": {"claude-x": {"inputTokens": inp, "outputTokens": out, "costUSD": cost}},
        }
    )


def test_cumulative_counter_grows_or_resets():
    grown = "\n".join([_claude_result("s", 10, 1, 0.5), _claude_result("s", 30, 2, 1.5)])
    t = usage_totals(normalize(grown))["total"]
    assert (t["inputTokens"], t["outputTokens"], t["costUsd"]) == (30, 2, 1.5)
    reset = "\n".join([_claude_result("s", 10, 1, 0.5), _claude_result("s", 3, 2, 0.25)])
    t = usage_totals(normalize(reset))["total"]
    assert (t["inputTokens"], t["outputTokens"], t["costUsd"]) == (13, 3, 0.75)
    two = "\n".join([_claude_result("a", 10, 1, 0.5), _claude_result("b", 30, 2, 1.5)])
    t = usage_totals(normalize(two))
    assert t["total"]["inputTokens"] == 40 and sorted(t["bySession"]) == ["a", "b"]


def test_codex_resume_counts_the_thread_once_in_any_file_order():
    a = USAGE / "inputs" / "codex-resume-1.jsonl"
    b = USAGE / "inputs" / "codex-resume-2.jsonl"
    forward, backward = fold_files([a, b]), fold_files([b, a])
    assert forward == backward
    assert forward["total"]["inputTokens"] == 103779  # not 16504 + 85681 + 103779
    (sid,) = forward["bySession"]
    assert forward["bySession"][sid]["dialect"] == "codex"


def test_usage_without_counts_and_sources():
    lines = [
        {"type": "step_finish", "stepNumber": 1, "finishReason": "stop", "usage": {}},
        {
            "type": "step_finish",
            "stepNumber": 2,
            "finishReason": "stop",
            "usage": {"inputTokens": 5, "outputTokens": 1, "costUsdTicks": 10**10},
        },
    ]
    events = normalize("\n".join(map(json.dumps, lines)), "grok")
    t = usage_totals(events)["total"]
    assert t["inputTokens"] == 5 and t["costUsd"] == 1.0
    # the first step's counts are unknown, so is its cost: a mix of reported and unpriced
    assert t["source"] == "mixed" and t["unpricedModels"] == ["unknown"]
    assert t["estimatedUsd"] == 0
    t = usage_totals(normalize(json.dumps(lines[0]), "grok"))["total"]
    assert t == {
        "inputTokens": 0,
        "outputTokens": 0,
        "cachedTokens": 0,
        "costUsd": None,
        "source": "absent",
        "estimatedUsd": None,
        "unpricedModels": ["unknown"],
        "endings": {"ok": 1, "empty": 0, "failed": 0, "none": 0},
    }


def test_non_usage_events_are_ignored():
    assert usage_totals([])["total"]["source"] == "absent"
    events = normalize(b'{"type":"system","subtype":"init","session_id":"x"}\nnot json\n')
    t = usage_totals(events)
    assert t["byModel"] == {} and t["bySession"] == {}


def test_exported():
    assert checkfu_fast.usage_totals is usage_totals
    assert "usage_totals" in checkfu_fast.__all__


# -- properties ---------------------------------------------------------------------------

PROPERTY_FILES = [  # the corpus files are left out where ../shared is absent (plain clone)
    p
    for p in (
        CORPUS / "claude" / "hivemind-pr4-ci-session4.jsonl",
        CORPUS / "claude" / "claudecodes-single-lines.jsonl",
        ROOT / "vectors" / "events" / "grok" / "streaming.input.jsonl",
        ROOT / "vectors" / "events" / "pi" / "success.input.jsonl",
        CORPUS / "opencode" / "takopi-stream-success.jsonl",
    )
    if p.exists()
]


def _chunked(data: bytes, cuts: list[int]) -> list[dict]:
    n = Normalizer()
    events: list[dict] = []
    prev = 0
    for c in sorted({min(c, len(data)) for c in cuts}):
        events += n.feed(data[prev:c])
        prev = c
    events += n.feed(data[prev:])
    return events + n.finish()


@given(
    st.sampled_from(PROPERTY_FILES),
    st.lists(st.integers(min_value=0, max_value=40_000), max_size=30),
)
def test_totals_invariant_to_chunking(path, cuts):
    data = path.read_bytes()
    assert usage_totals(_chunked(data, cuts)) == usage_totals(normalize(data))


def _message_usage_lines(data: bytes) -> list[int]:
    """Indices of the lines that give per-message usage with a messageId (event fields)."""
    dialect = normalize(data)[0]["dialect"]
    out = []
    for i, line in enumerate(data.split(b"\n")):
        evs = normalize(line, dialect) if line.strip() else []
        if any(e.get("usageScope") == "message" and "messageId" in e for e in evs):
            out.append(i)
    return out


@given(st.sampled_from(PROPERTY_FILES[:3]), st.data())
def test_totals_invariant_to_repeating_a_message_usage_line(path, data):
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    candidates = _message_usage_lines(raw)
    i = data.draw(st.sampled_from(candidates))
    times = data.draw(st.integers(min_value=1, max_value=3))
    where = data.draw(st.integers(min_value=i + 1, max_value=len(lines)))
    repeated = lines[:where] + [lines[i]] * times + lines[where:]
    # Placed anywhere after the original (CLIs repeat a message on later lines).
    assert usage_totals(normalize(b"\n".join(repeated))) == usage_totals(normalize(raw))


@pytest.mark.parametrize(
    "path", [p for p in GOLDENS if "ccusageByModel" in p.read_text()], ids=lambda p: p.name
)
def test_session_file_totals_equal_the_ccusage_rule(path):
    """Session files report no total: regen.py's independent reader applies ccusage's rule."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    by_model = {m: {k: t[k] for k in TOKENS[:3]} for m, t in doc["totals"]["byModel"].items()}
    want = {m: {k: t[k] for k in TOKENS[:3]} for m, t in doc["ccusageByModel"].items()}
    assert by_model == want


def _rollout_counter(ts: str, inp: int, cached: int, write: int, out: int) -> str:
    u = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": write,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }
    return json.dumps(
        {
            "timestamp": ts,
            "type": "event_msg",
            "payload": {"type": "token_count", "info": {"total_token_usage": u}},
        }
    )


def test_codex_cache_writes_are_kept_both_twins():
    """2026 rollouts count cache writes (``cache_write_input_tokens``, a part of
    ``input_tokens``): ``cacheWriteTokens`` on the events, and the counter's growth in the
    totals (250, the last reading; not 100 + 250)."""
    lines = [
        json.dumps(
            {
                "timestamp": "2026-09-07T04:20:00Z",
                "type": "session_meta",
                "payload": {"id": "t1", "cwd": "/w"},
            }
        ),
        json.dumps(
            {
                "timestamp": "2026-09-07T04:20:01Z",
                "type": "turn_context",
                "payload": {"model": "gpt-5.5", "cwd": "/w"},
            }
        ),
        _rollout_counter("2026-09-07T04:20:09Z", 1000, 200, 100, 10),
        _rollout_counter("2026-09-07T04:21:09Z", 3000, 900, 250, 30),
    ]
    data = ("\n".join(lines) + "\n").encode()
    events = normalize(data)
    assert events == reference.normalize(data)
    assert [e.get("cacheWriteTokens") for e in events if e["kind"] == "usage"] == [100, 250]
    total = usage_totals(events)["total"]
    assert (total["inputTokens"], total["cachedTokens"], total["cacheWriteTokens"]) == (
        3000,
        900,
        250,
    )
