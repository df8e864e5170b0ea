"""The error-kind needle table: one data file that both classifiers read (issue 10 section 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
import checkfu_fast.reference
from checkfu_fast.reference import events

ROOT = Path(__file__).resolve().parents[1]
TABLE = json.loads((ROOT / "python" / "checkfu_fast" / "dialects" / "error_kinds.json").read_text())


def _kinds(impl, messages: list[str]) -> list[str]:
    data = "".join(json.dumps({"type": "error", "message": m}) + "\n" for m in messages)
    evs = impl.normalize(data.encode(), dialect="codex")
    return [e["error"]["errorKind"] for e in evs if e["kind"] == "error"]


def test_python_reads_the_data_file() -> None:
    assert tuple(TABLE["quota"]) == events.QUOTA_NEEDLES
    assert tuple(TABLE["transport"]) == events.TRANSPORT_NEEDLES
    assert all(n == n.lower() and n.isascii() for n in TABLE["quota"] + TABLE["transport"])


def test_rust_embeds_the_data_file() -> None:
    src = (ROOT / "rust" / "event.rs").read_text()
    assert 'include_str!("../python/checkfu_fast/dialects/error_kinds.json")' in src


def test_every_needle_classifies_the_same_on_both_paths() -> None:
    # each needle alone (quota needles checked first), then wrapped in other text
    messages = [f"x {n} y" for n in TABLE["quota"] + TABLE["transport"]]
    expected = ["quota"] * len(TABLE["quota"]) + ["transport"] * len(TABLE["transport"])
    assert _kinds(checkfu_fast.reference, messages) == expected
    assert _kinds(checkfu_fast, messages) == expected


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        # docs/formats-2026.md section 2.1, verbatim
        (
            "We're currently experiencing high demand, which may cause temporary errors.",
            "transport",
        ),
        ("Selected model is at capacity. Please try a different model.", "transport"),
        (
            "Reconnecting... 1/5 (stream disconnected before completion: Our servers are "
            "currently overloaded. Please try again later.)",
            "transport",
        ),
        # a per-user limit that only waiting clears (OpenAI reports it as a 429): quota
        (
            "stream disconnected before completion: Concurrency limit exceeded for user, "
            "please retry later",
            "quota",
        ),
        ("shared rollout token budget exhausted", "quota"),
        ("Invalid API key · Fix external API key", "semantic"),
        # issue 25: cut connections (grok's reqwest stream, undici in Node CLIs)
        (
            'Internal error: "reqwest error stream: Transport error: error decoding response body"',
            "transport",
        ),
        ("TypeError: fetch failed", "transport"),
        ("SocketError: other side closed", "transport"),
    ],
)
def test_2026_phrases(message: str, kind: str) -> None:
    assert _kinds(checkfu_fast.reference, [message]) == [kind]
    assert _kinds(checkfu_fast, [message]) == [kind]
