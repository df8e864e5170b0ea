"""Stubs for the compiled core. Arguments are validated by the Python layer first.

Checked against the built module by ``python -m mypy.stubtest checkfu_fast._native`` (make lint).
pyo3 classes take their arguments in ``__new__`` and cannot be subclassed (``@final``).
"""

from typing import Any, final

from typing_extensions import Self

__all__ = ["DIALECTS", "Mapping", "Normalizer", "__version__", "normalize", "validate_journal"]

DIALECTS: list[str]
__version__: str

@final
class Mapping:
    """A mapping-defined dialect compiled by the core (see docs/mappings.md)."""

    def __new__(cls, text: str) -> Self: ...
    @property
    def dialect(self) -> str: ...

def normalize(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
) -> list[dict[str, Any]]: ...
def validate_journal(
    data: bytes,
    max_line_bytes: int = ...,
    max_depth: int = 64,
    max_nodes: int = 1000000,
) -> list[dict[str, Any]]: ...
def parse_retry(message: str) -> tuple[str | None, int | None]:
    """``(retryAt, retryAfterMs)`` stated by an error message (rust/retry.rs)."""

@final
class Normalizer:
    """Thread-safe: concurrent calls are serialized. An input-sized allocation that fails
    raises ``MemoryError``; after it, ``feed``/``finish`` raise ``ValueError``."""

    def __new__(
        cls,
        dialect: str | Mapping,
        max_line_bytes: int = ...,
        max_depth: int = 64,
        max_nodes: int = 1000000,
    ) -> Self: ...
    def feed(self, chunk: bytes) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
