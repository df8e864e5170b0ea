"""claude server-tool result blocks (web search, web fetch, code execution): both paths."""

from __future__ import annotations

import json

import pytest

from conftest import IMPLS, assert_valid


def line(content) -> bytes:
    block = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": content}
    msg = {"id": "msg_1", "role": "assistant", "content": [block]}
    return json.dumps({"type": "assistant", "message": msg}).encode() + b"\n"


@pytest.mark.parametrize(
    ("content", "text", "is_error"),
    [
        (
            [
                {"type": "web_search_result", "url": "https://a.example", "title": "A"},
                {"type": "web_search_result", "url": "https://b.example", "title": "B"},
            ],
            "https://a.example\nhttps://b.example",
            False,
        ),
        (
            {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"},
            "max_uses_exceeded",
            True,
        ),
        ([{"type": "text", "text": "plain"}], "plain", False),
        ({"type": "something_else"}, "", False),
    ],
)
@pytest.mark.parametrize("impl", IMPLS)
def test_server_tool_result(impl, content, text, is_error):
    events = IMPLS[impl].normalize(line(content), "claude")
    assert_valid(events)
    results = [e for e in events if e["subtype"] == "tool_result"]
    assert [(r["text"], r["tool"]) for r in results] == [
        (text, {"name": "unknown", "id": "srvtoolu_1", "isError": is_error})
    ]
