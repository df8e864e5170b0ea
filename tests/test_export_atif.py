"""ATIF export (checkfu_fast.export.to_atif): every golden, session file and corpus stream gives
trajectories that Harbor's own pydantic models accept; the mapping itself on small hand-checked
cases (expected documents written by hand, not by the exporter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast.export import ATIF_VERSION, split_sessions, to_atif
from checkfu_fast.usage import usage_totals
from conftest import CORPUS, ROOT, SHARED, shared_params
from harbor_models import load, validate

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.expected.jsonl"))
SESSION_FILES = sorted(
    [
        *(ROOT / "docs" / "examples-sessions").glob("*.jsonl"),
        *(ROOT / "docs" / "examples-2026").glob("*.jsonl"),
        *(ROOT / "vectors" / "samples").glob("*.jsonl"),
    ]
)
CORPUS_FILES = sorted(CORPUS.glob("*/*.jsonl")) if SHARED.is_dir() else []


def _lean(ev: dict) -> dict:
    return {k: v for k, v in ev.items() if k not in ("raw", "parsed")}


def _check_all(events: list[dict]) -> int:
    """Each session's trajectory validates with Harbor's models; the lean events (no raw, no
    parsed) give the very same document. Returns the number of trajectories."""
    sessions = split_sessions(events)
    assert sum(len(v) for v in sessions.values()) == len(events)
    for evs in sessions.values():
        doc = to_atif(evs)
        validate(doc)
        assert doc["schema_version"] == ATIF_VERSION
        assert to_atif([_lean(e) for e in evs]) == doc
        json.dumps(doc, allow_nan=False)  # plain JSON
    return len(sessions)


def test_harbor_models_load() -> None:
    models = load()
    assert ATIF_VERSION in models.Trajectory.model_fields["schema_version"].annotation.__args__


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_exports_valid_atif(path: Path) -> None:
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert _check_all(events) >= (1 if events else 0)


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_session_files_export_valid_atif(path: Path) -> None:
    assert _check_all(checkfu_fast.normalize(path.read_bytes())) >= 1


@pytest.mark.parametrize(
    "path", shared_params(CORPUS_FILES), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_corpus_exports_valid_atif(path: Path) -> None:
    assert _check_all(checkfu_fast.normalize(path.read_bytes(), path.parent.name)) >= 1


def test_corpus_is_there_when_shared_is() -> None:
    if not SHARED.is_dir():
        pytest.skip(f"needs the shared corpus at {SHARED}")
    assert len(CORPUS_FILES) >= 20


def test_empty_events_give_a_valid_trajectory() -> None:
    doc = to_atif([])
    validate(doc)
    assert doc["steps"] == [
        {"step_id": 1, "source": "system", "message": "", "extra": {"empty": True}}
    ]


E = {"v": "events/v1", "dialect": "claude", "sessionId": "s1"}


def _ev(seq: int, **kw: object) -> dict:
    return {**E, "seq": seq, "position": seq * 10, **kw}


SMALL = [
    _ev(0, kind="message", subtype="text", role="user", text="List the files",
        timestamp="2026-08-20T10:00:00Z"),
    _ev(1, kind="message", subtype="thinking", role="assistant", text="ls will do",
        modelCallId="m1"),
    _ev(2, kind="tool_call", subtype="tool_use", role="assistant", modelCallId="m1",
        tool={"name": "Bash", "arguments": {"command": "ls"}, "id": "t1"}, toolClass="shell"),
    _ev(3, kind="usage", subtype="message", usageScope="message", messageId="m1",
        usage={"inputTokens": 100, "outputTokens": 5, "cachedTokens": 80, "model": "opus"}),
    _ev(4, kind="usage", subtype="message", usageScope="message", messageId="m1",
        usage={"inputTokens": 100, "outputTokens": 20, "cachedTokens": 80, "model": "opus"}),
    _ev(5, kind="message", subtype="tool_result", role="tool", text="a.txt\nb.txt",
        tool={"name": "unknown", "id": "t1", "isError": False}),
    _ev(6, kind="message", subtype="text", role="assistant", text="Two files.",
        modelCallId="m2"),
    _ev(7, kind="usage", subtype="message", usageScope="message", messageId="m2",
        usage={"inputTokens": 130, "outputTokens": 4, "cachedTokens": 100, "model": "opus"}),
    _ev(8, kind="error", subtype="api_error", errorKind="transport",
        error={"code": "overloaded", "message": "Overloaded"}),
    _ev(9, kind="status", subtype="result", resultText="Two files."),
    _ev(10, kind="usage", subtype="cumulative", usageScope="cumulative",
        usage={"inputTokens": 230, "outputTokens": 24, "cachedTokens": 180, "model": "opus",
               "costUsd": 0.01}),
]  # fmt: skip


def test_small_session_by_hand() -> None:
    doc = to_atif(SMALL)
    validate(doc)
    version = checkfu_fast.__version__
    assert doc == {
        "schema_version": "ATIF-v1.8",
        "session_id": "s1",
        "trajectory_id": "s1",
        "agent": {
            "name": "claude",
            "version": "unknown",
            "model_name": "opus",
            "extra": {"producer": f"checkfu-fast {version}"},
        },
        "steps": [
            {"step_id": 1, "timestamp": "2026-08-20T10:00:00Z", "source": "user",
             "message": "List the files"},
            {"step_id": 2, "source": "agent", "message": "", "reasoning_content": "ls will do",
             "tool_calls": [{"tool_call_id": "t1", "function_name": "Bash",
                             "arguments": {"command": "ls"}, "extra": {"toolClass": "shell"}}],
             "observation": {"results": [{"content": "a.txt\nb.txt", "source_call_id": "t1"}]},
             "metrics": {"prompt_tokens": 100, "completion_tokens": 20, "cached_tokens": 80}},
            {"step_id": 3, "source": "agent", "message": "Two files.",
             "metrics": {"prompt_tokens": 130, "completion_tokens": 4, "cached_tokens": 100}},
            {"step_id": 4, "source": "system", "message": "error (api_error): Overloaded",
             "extra": {"error": {"subtype": "api_error", "code": "overloaded",
                                 "message": "Overloaded", "errorKind": "transport"}}},
        ],
        "final_metrics": {
            "total_prompt_tokens": 230, "total_completion_tokens": 24,
            "total_cached_tokens": 180, "total_cost_usd": 0.01, "total_steps": 4,
            "extra": {"cost_source": "reported"},
        },
        "extra": {"events": 11},
    }  # fmt: skip
    # the totals are usage_totals' (the CLI's own counter covers the message usage)
    assert usage_totals(SMALL)["total"]["inputTokens"] == 230


def test_agent_override_and_no_parsed_read() -> None:
    poisoned = [{**e, "parsed": object(), "raw": object()} for e in SMALL]
    doc = to_atif(poisoned, agent={"name": "claude-code", "version": "2.1.0"})
    assert doc["agent"]["name"] == "claude-code" and doc["agent"]["version"] == "2.1.0"
    assert doc["steps"] == to_atif(SMALL)["steps"]


def test_claude_subagent_is_embedded_and_referenced() -> None:
    path = ROOT / "vectors" / "events" / "claude" / "subagent.expected.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    doc = to_atif(events)
    validate(doc)
    call = "toolu_012hZhNyfdf6Y156ryHJSbxd"
    (sub,) = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == call
    assert sub["steps"][0]["source"] == "user"
    assert sub["steps"][0]["message"].startswith("Locate where the drawer width")
    assert [s["source"] for s in sub["steps"]] == ["user", "agent", "agent"]
    assert sub["steps"][1]["tool_calls"][0]["function_name"] == "Bash"
    assert sub["steps"][1]["metrics"]["completion_tokens"] == 250  # the largest reading
    # the parent's Task call carries the reference in its result
    parent = next(s for s in doc["steps"] if s.get("tool_calls"))
    assert parent["tool_calls"][0]["tool_call_id"] == call
    (res,) = parent["observation"]["results"]
    assert res["source_call_id"] == call
    assert res["subagent_trajectory_ref"][0]["trajectory_id"] == call
    assert res["content"].startswith("iconStripWidth = 48")
    # no event lost: every text of the stream is in the document
    text = json.dumps(doc)
    for e in events:
        if e["kind"] == "message" and e.get("delta") is not True:
            assert json.dumps(e["text"])[1:-1] in text


def test_session_file_sidechain_is_a_subagent() -> None:
    path = ROOT / "vectors" / "events" / "claude" / "session-file-subagent.expected.jsonl"
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    doc = to_atif(events)
    validate(doc)
    (sub,) = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == "a3f9c2e1b7d4e5f60"
    assert sub["steps"][1]["tool_calls"][0]["function_name"] == "Edit"


def test_live_totals_snapshot_leaves_the_fold_going() -> None:
    """_totals (the final metrics of a trajectory in progress) equals a deep copy's totals at
    every point and does not end the fold's stream."""
    import copy

    from checkfu_fast.export._atif import _totals
    from checkfu_fast.usage import UsageFold

    for path in GOLDEN:
        events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        fold = UsageFold()
        fold.start_stream()
        for ev in events:
            fold.add(ev)
            deep = copy.deepcopy(fold, {id(fold.prices): fold.prices})  # one price table
            assert _totals(fold) == deep.totals()["total"], path
        assert fold.totals()["total"] == usage_totals(events)["total"], path


def test_steps_without_a_reported_cost_are_priced_by_the_snapshot() -> None:
    from checkfu_fast import prices
    from checkfu_fast.usage import utc_day

    sessions = ROOT / "docs" / "examples-sessions"
    events = [
        *checkfu_fast.normalize((sessions / "claude-session.jsonl").read_bytes()),
        *checkfu_fast.normalize((sessions / "claude-subagent.jsonl").read_bytes()),
    ]
    doc = to_atif(events)
    validate(doc)
    usage = [e for e in events if e["kind"] == "usage" and not e.get("sidechain")]
    first = doc["steps"][1]
    evs = [e for e in usage if e["messageId"] == usage[0]["messageId"]]
    counts = [
        max(e["usage"][k] for e in evs) for k in ("inputTokens", "outputTokens", "cachedTokens")
    ]
    writes = [max(e.get(k, 0) for e in evs) for k in ("cacheWriteTokens", "cacheWrite1hTokens")]
    assert writes[0] > 0  # a claude session file counts its cache writes
    day = utc_day(usage[0]["timestamp"])
    # of the largest reading, cache writes at their own price
    want = prices.cost(evs[0]["usage"]["model"], *counts, *writes, day=day)
    assert want is not None and want > 0
    assert first["metrics"]["cost_usd"] == pytest.approx(want)
    assert first["metrics"]["extra"]["cost_source"] == "estimated"
    assert first["metrics"]["extra"]["cache_write_tokens"] == writes[0]
    fm = doc["final_metrics"]
    steps = [s for s in doc["steps"] if "metrics" in s]
    sub = doc["subagent_trajectories"][0]["final_metrics"]["total_cost_usd"]
    assert fm["total_cost_usd"] == pytest.approx(sum(s["metrics"]["cost_usd"] for s in steps) + sub)
    assert fm["extra"]["cost_source"] == "estimated"
    assert fm["extra"]["estimated_cost_usd"] == pytest.approx(fm["total_cost_usd"])
    assert fm["extra"]["prices"] == prices.snapshot().describe()
    # a cost the CLI reported is never replaced by an estimate
    small = to_atif(SMALL)
    assert small["final_metrics"]["total_cost_usd"] == 0.01
    assert small["final_metrics"]["extra"]["cost_source"] == "reported"
