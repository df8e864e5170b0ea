"""The oneshot extras of docs/events.md: tables shared by both twins, and observe's isolation."""

from __future__ import annotations

import re
from pathlib import Path

from checkfu_fast.reference import events

ROOT = Path(__file__).resolve().parents[1]


def _rust_table(name: str) -> tuple[str, ...]:
    src = (ROOT / "rust" / "event.rs").read_text()
    m = re.search(rf"pub const {name}: &\[&str\] = &\[(.*?)\];", src, re.S)
    assert m is not None, name
    return tuple(re.findall(r'"([^"]*)"', m.group(1)))


def test_tool_class_tables_are_one_table() -> None:
    assert _rust_table("SHELL_TOOLS") == events.SHELL_TOOLS
    assert _rust_table("FILESYSTEM_TOOLS") == events.FILESYSTEM_TOOLS
    assert set(events.SHELL_TOOLS).isdisjoint(events.FILESYSTEM_TOOLS)


def test_tool_class_rules() -> None:
    assert events.tool_class("Bash") == "shell"
    assert events.tool_class("apply_patch", "mcp") == "filesystem"  # a table name wins
    assert events.tool_class("mcp_github_list") == "mcp"
    assert events.tool_class("list_issues", "mcp") == "mcp"
    assert events.tool_class("WebFetch") is None
