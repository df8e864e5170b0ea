"""OpenTelemetry export (checkfu_fast.export.to_otel): spans by the GenAI semantic conventions,
sent with the OTLP/HTTP exporter (endpoint from OTEL_EXPORTER_OTLP_ENDPOINT) to a real
receiver on 127.0.0.1 that decodes the wire format, and read back from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
from conftest import CORPUS, ROOT, SHARED
from otlp_receiver import Receiver

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is absent")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="OTLP/HTTP exporter absent")

from checkfu_fast.export import otlp_provider, split_sessions, to_otel

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.expected.jsonl"))
SESSION_FILES = sorted(
    [
        *(ROOT / "docs" / "examples-sessions").glob("*.jsonl"),
        *(ROOT / "docs" / "examples-2026").glob("*.jsonl"),
        *(ROOT / "vectors" / "samples").glob("*.jsonl"),
    ]
)
CORPUS_FILES = sorted(CORPUS.glob("*/*.jsonl")) if SHARED.is_dir() else []


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch):
    r = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=checkfu,authorization=Bearer%20t0k")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "checkfu-test")
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    yield r
    r.close()


def _send(events: list[dict], receiver: Receiver) -> tuple[dict, list[dict]]:
    provider = otlp_provider()
    out = to_otel(events, tracer_provider=provider)
    provider.shutdown()
    return out, receiver.spans


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _by_name(spans: list[dict], prefix: str) -> list[dict]:
    return [s for s in spans if s["name"].split(" ")[0] == prefix]


def test_claude_subagent_stream_spans(receiver: Receiver) -> None:
    events = _load(ROOT / "vectors" / "events" / "claude" / "subagent.expected.jsonl")
    out, spans = _send(events, receiver)
    assert out["spans"] == len(spans) > 0
    assert {s["trace_id"] for s in spans} == set(out["traces"])
    ids = {s["span_id"]: s for s in spans}
    # the session: one invoke_agent root span
    roots = [s for s in spans if not s["parent_span_id"]]
    (root,) = roots
    assert root["name"] == "invoke_agent claude"
    assert root["attributes"]["gen_ai.operation.name"] == "invoke_agent"
    assert root["attributes"]["gen_ai.conversation.id"] == events[2]["sessionId"]
    assert root["attributes"]["gen_ai.provider.name"] == "anthropic"
    assert root["resource"]["service.name"] == "checkfu-test"
    # the Task tool call, and the sub-agent as its child
    call = "toolu_012hZhNyfdf6Y156ryHJSbxd"
    (task,) = [
        s for s in _by_name(spans, "execute_tool") if s["attributes"]["gen_ai.tool.call.id"] == call
    ]
    assert task["attributes"]["gen_ai.tool.name"] == "Task"
    assert task["parent_span_id"] == root["span_id"]
    (sub,) = [s for s in _by_name(spans, "invoke_agent") if s["parent_span_id"]]
    assert sub["parent_span_id"] == task["span_id"]
    assert sub["attributes"]["gen_ai.agent.id"] == call
    # the sub-agent's model calls and its Bash call are its children
    sub_chats = [s for s in _by_name(spans, "chat") if s["parent_span_id"] == sub["span_id"]]
    assert [c["attributes"]["gen_ai.usage.output_tokens"] for c in sub_chats] == [250, 42]
    assert sub_chats[0]["name"] == "chat claude-haiku-4-5-20251001"
    assert sub_chats[0]["attributes"]["gen_ai.request.model"] == "claude-haiku-4-5-20251001"
    assert sub_chats[0]["attributes"]["gen_ai.usage.input_tokens"] == 47042
    assert sub_chats[0]["attributes"]["gen_ai.usage.cache_read.input_tokens"] == 46428
    (bash,) = [
        s for s in _by_name(spans, "execute_tool") if s["attributes"]["gen_ai.tool.name"] == "Bash"
    ]
    assert ids[bash["parent_span_id"]] is sub
    assert bash["attributes"]["gen_ai.tool.call.result"].startswith("41:const iconStripWidth")
    # every span is closed and inside its parent's time (stream-json has no timestamps:
    # arrival time)
    for s in spans:
        assert s["end"] >= s["start"] > 0
    # the standard OTEL_* header variable reached the receiver
    assert receiver.requests[0]["x-team"] == "checkfu"
    assert receiver.requests[0]["authorization"] == "Bearer t0k"


def test_timestamps_and_errors(receiver: Receiver) -> None:
    base = {"v": "events/v1", "dialect": "claude", "sessionId": "s1"}
    events = [
        {**base, "seq": 0, "kind": "message", "subtype": "text", "role": "user", "text": "hi",
         "timestamp": "2026-08-20T10:00:00Z"},
        {**base, "seq": 1, "kind": "message", "subtype": "text", "role": "assistant",
         "text": "On it", "modelCallId": "m1", "timestamp": "2026-08-20T10:00:01.500Z"},
        {**base, "seq": 2, "kind": "tool_call", "subtype": "tool_use", "modelCallId": "m1",
         "tool": {"name": "Read", "id": "t1", "arguments": {"path": "x"}},
         "timestamp": "2026-08-20T10:00:02Z"},
        {**base, "seq": 3, "kind": "message", "subtype": "tool_result", "role": "tool",
         "text": "no such file", "tool": {"name": "unknown", "id": "t1", "isError": True},
         "timestamp": "2026-08-20T10:00:03Z"},
        {**base, "seq": 4, "kind": "message", "subtype": "text", "role": "assistant",
         "text": "Retrying", "modelCallId": "m2", "timestamp": "2026-08-20T10:00:04Z"},
        {**base, "seq": 5, "kind": "error", "subtype": "api_error", "errorKind": "quota",
         "error": {"code": "rate_limit", "message": "429 rate limit"},
         "timestamp": "2026-08-20T10:00:05Z"},
    ]  # fmt: skip
    _, spans = _send(events, receiver)
    sec = 1_000_000_000
    t0 = 1787220000 * sec  # 2026-08-20T10:00:00Z (date -u -d ... +%s)
    (root,) = _by_name(spans, "invoke_agent")
    assert (root["start"], root["end"]) == (t0, t0 + 5 * sec)
    assert root["status"] == 2 and root["attributes"]["error.type"] == "rate_limit"
    c1, c2 = sorted(_by_name(spans, "chat"), key=lambda s: s["start"])
    assert (c1["start"], c1["end"]) == (t0 + 3 * sec // 2, t0 + 2 * sec)
    assert c1["attributes"]["gen_ai.response.id"] == "m1" and c1["status"] == 0
    assert c2["status"] == 2 and "error" in c2["events"]
    (tool,) = _by_name(spans, "execute_tool")
    assert (tool["start"], tool["end"]) == (t0 + 2 * sec, t0 + 3 * sec)
    assert tool["status"] == 2 and tool["attributes"]["error.type"] == "tool_error"
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"path": "x"}


def _all_sent(events: list[dict], receiver: Receiver) -> None:
    out, spans = _send(events, receiver)
    assert len(spans) == out["spans"]
    assert len(out["traces"]) == len(split_sessions(events)) or not events
    for s in spans:
        assert s["end"] >= s["start"]
        assert s["attributes"]["gen_ai.operation.name"] in ("invoke_agent", "chat", "execute_tool")
    assert len([s for s in spans if not s["parent_span_id"]]) == len(out["traces"])


def test_every_golden_reaches_the_receiver(receiver: Receiver) -> None:
    for path in GOLDEN:
        receiver.spans.clear()
        _all_sent(_load(path), receiver)


def test_every_session_file_and_corpus_stream_reaches_the_receiver(receiver: Receiver) -> None:
    if not CORPUS_FILES:
        pytest.skip(f"needs the shared corpus at {SHARED}")
    for path in [*SESSION_FILES, *CORPUS_FILES]:
        receiver.spans.clear()
        dialect = path.parent.name if path in CORPUS_FILES else "auto"
        events = checkfu_fast.normalize(path.read_bytes(), dialect)
        _all_sent(
            [{k: v for k, v in e.items() if k not in ("raw", "parsed")} for e in events], receiver
        )
