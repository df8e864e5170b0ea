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
def normalize_jsonl(
    data: bytes,
    dialect: str | Mapping,
    max_line_bytes: int = ...,
    max_depth: int = ...,
    max_nodes: int = ...,
) -> bytes:
    """The events of ``normalize`` as JSONL, written by the core with the GIL released."""

def normalize_files(
    inputs: list[str],
    outputs: list[str] | None,
    dialect: str | Mapping,
    max_line_bytes: int,
    max_depth: int,
    max_nodes: int,
    jobs: int | None,
    tag_source: bool,
) -> list[bytes | tuple[int | None, str] | None]:
    """Each input file as JSONL, in parallel on ``jobs`` threads (GIL released throughout).

    Per input: its bytes (``outputs`` is None), None (written to ``outputs[i]``), or
    ``(errno, message)`` if it could not be read or written. ``tag_source`` ends every line
    with ``"source": <input path>`` (the CLI's field for several inputs).
    """

def validate_journal(
    data: bytes,
    max_line_bytes: int = ...,
    max_depth: int = ...,
    max_nodes: int = ...,
) -> list[dict[str, Any]]: ...

class Normalizer:
    def __init__(
        self,
        dialect: str | Mapping,
        max_line_bytes: int = ...,
        max_depth: int = ...,
        max_nodes: int = ...,
        source: str | None = None,
    ) -> None: ...
    def feed(self, chunk: bytes) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
    def feed_jsonl(self, chunk: bytes) -> bytes:
        """``feed`` as JSONL bytes (``source``, if set, ends every line); same ``seq``."""
    def finish_jsonl(self) -> bytes:
        """``finish`` as JSONL bytes."""
