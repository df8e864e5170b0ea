"""Stubs for the compiled core. Arguments are validated by the Python layer first."""

from typing import Any

DIALECTS: list[str]
__version__: str

class Mapping:
    """A mapping-defined dialect compiled by the core (see docs/mappings.md)."""

    def __init__(self, text: str) -> None: ...
    @property
    def dialect(self) -> str: ...

def normalize(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = ...,
    max_nodes: int = ...,
) -> list[dict[str, Any]]: ...
def validate_journal(
    data: bytes,
    max_line_bytes: int = ...,
    max_depth: int = ...,
    max_nodes: int = ...,
) -> list[dict[str, Any]]: ...

class Normalizer:
    """Thread-safe: concurrent calls are serialized. An input-sized allocation that fails
    raises ``MemoryError``; after it, ``feed``/``finish`` raise ``ValueError``."""

    def __init__(
        self,
        dialect: str | Mapping,
        max_line_bytes: int = ...,
        max_depth: int = ...,
        max_nodes: int = ...,
    ) -> None: ...
    def feed(self, chunk: bytes) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
