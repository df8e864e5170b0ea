"""One module per dialect, each with ``NAME``, ``map_line(obj) -> list[event]`` and ``meta(obj)``
(optionally ``native_type(obj)``); mapping-defined dialects are :class:`MappedDialect` objects
with the same interface, built from the JSON files in ``checkfu_fast/mappings/``.

Adding a coded dialect is one new module here (and its Rust twin); adding a mapped one is one
mapping file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...options import DIALECTS as DIALECTS
from .. import mapping
from . import claude, codex, cursor, grok, opencode, pi

MAPPINGS_DIR = Path(__file__).resolve().parents[2] / "mappings"
MAPPED_BUILTINS = ("north", "canary", "solweb")


class MappedDialect:
    """A dialect defined by a mapping file; pass it as ``dialect=`` to ``normalize``."""

    def __init__(self, m: mapping.Mapping) -> None:
        self.mapping = m
        self.NAME = m.dialect
        self.native_handle: Any = None  # the compiled native twin, made on first native use

    @property
    def source(self) -> str:
        return self.mapping.source

    def map_line(self, v: Any) -> list[dict[str, Any]]:
        return mapping.map_line(self.mapping, v)

    def meta(self, v: Any) -> dict[str, Any]:
        return mapping.meta(self.mapping, v)

    def native_type(self, v: Any) -> Any:
        return mapping.native_type(self.mapping, v)

    def __repr__(self) -> str:
        return f"<MappedDialect {self.NAME!r}>"


def load_dialect(path: str | Path) -> MappedDialect:
    """Load and validate a mapping file (raises ``MappingError`` with a JSON pointer)."""
    return MappedDialect(mapping.load_path(path))


BUILTIN_MAPPED = {n: load_dialect(MAPPINGS_DIR / f"{n}.json") for n in MAPPED_BUILTINS}

_CODED = (claude, cursor, codex, pi, grok, opencode)
IMPLEMENTED: dict[str, Any] = {m.NAME: m for m in _CODED} | BUILTIN_MAPPED
