"""Session files as inputs: ``.jsonl.gz`` and ``.jsonl.zst`` read transparently by path.

:func:`open_input` opens a file and, when its first bytes are a gzip (``1f 8b``) or zstd
(``28 b5 2f fd``) magic, wraps it in a streaming decompressor, whatever the file's name. Every
read returns at most what was asked, so the memory is one chunk and the decompressor's window,
never the decompressed file: budgets (``max_line_bytes`` ...) apply to the decompressed bytes and
a highly compressed file (a "zip bomb") costs time, not memory. gzip uses the standard library
(multi-member files included); zstd needs the ``zstandard`` package (``checkfu-fast[zstd]``;
every frame of a multi-frame file is read). The Rust core reads both natively in
``normalize_files`` (``rust/jsonl.rs``), with the same detection.

``normalize(bytes)`` does not decompress: it takes JSONL bytes (a compressed buffer gives
``error/invalid_utf8`` events, exactly as the reference does); decompress first or pass the path.
"""

from __future__ import annotations

import gzip
import io
import os
from typing import Any, BinaryIO, cast

__all__ = ["GZIP_MAGIC", "ZSTD_MAGIC", "compression", "open_input", "plain_fd"]

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def compression(head: bytes) -> str | None:
    """``"gzip"``, ``"zstd"`` or None from a file's first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


def open_input(path: str | os.PathLike[str]) -> BinaryIO:
    """The file at ``path`` for reading, decompressed when it is gzip or zstd (by magic)."""
    # unbuffered: the seek below moves the descriptor itself (plain files are read with os.read)
    f = open(path, "rb", buffering=0)  # noqa: SIM115 - the caller closes the returned stream
    try:
        head = f.read(4) or b""
        f.seek(0)
        kind = compression(head)
        if kind == "gzip":
            return cast(BinaryIO, gzip.GzipFile(fileobj=f, mode="rb"))
        if kind == "zstd":
            return _zstd(f, os.fspath(path))
        return cast(BinaryIO, f)
    except BaseException:
        f.close()
        raise


def plain_fd(f: BinaryIO) -> int | None:
    """The descriptor of a stream :func:`open_input` returned for an uncompressed file (read
    with ``os.read``, so a pipe gives its lines as they come), else None."""
    if type(f) is io.FileIO:
        return f.fileno()
    return None


def _zstd(f: BinaryIO, path: Any) -> BinaryIO:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise OSError(
            f"{path} is zstd-compressed: install the zstandard package "
            "(pip install 'checkfu-fast[zstd]') to read it"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True, closefd=True)
    return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type, unused-ignore]
