"""Stubs for the compiled core. Arguments are validated by the Python layer first."""

from typing import Any

DIALECTS: list[str]
__version__: str

def normalize(
    data: bytes,
    dialect: str = "auto",
    max_line_bytes: int = ...,
    max_depth: int = ...,
    max_nodes: int = ...,
) -> list[dict[str, Any]]: ...

class Normalizer:
    def __init__(
        self,
        dialect: str = "auto",
        max_line_bytes: int = ...,
        max_depth: int = ...,
        max_nodes: int = ...,
    ) -> None: ...
    def feed(self, chunk: bytes) -> list[dict[str, Any]]: ...
    def finish(self) -> list[dict[str, Any]]: ...
