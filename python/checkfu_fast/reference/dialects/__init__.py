"""One module per dialect, each with ``NAME``, ``map_line(obj) -> list[event]`` and ``meta(obj)``.

Adding a dialect is one new module here (and its Rust twin); nothing else changes but the table.
"""

from __future__ import annotations

from types import ModuleType

from . import claude, codex, cursor

DIALECTS = ("claude", "cursor", "codex", "north", "pi", "grok", "canary", "opencode", "solweb")

IMPLEMENTED: dict[str, ModuleType] = {m.NAME: m for m in (claude, cursor, codex)}
