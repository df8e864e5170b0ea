"""Session files as inputs: ``.jsonl.gz`` and ``.jsonl.zst`` read transparently by path.

:func:`open_input` opens a file and, when its first bytes are a gzip (``1f 8b``) or zstd
(``28 b5 2f fd``) magic, wraps it in a streaming decompressor, whatever the file's name. Every
read returns at most what was asked, so the memory is one chunk and the decompressor's window,
never the decompressed file: budgets (``max_line_bytes`` ...) apply to the decompressed bytes and
a highly compressed file (a "zip bomb") costs time, not memory. gzip uses the standard library;
zstd needs the ``zstandard`` package (``checkfu-fast[zstd]``). The Rust core reads both natively
in ``normalize_files`` (``rust/input.rs``), with the same detection and the same rules
(docs/errors.md; a differential test over odd frames holds the two together):

- gzip: members one after another; zero bytes after a member are padding; anything else after
  a member must be another member;
- zstd: frames one after another; skippable frames are skipped; a frame whose header states a
  content size must decode to exactly that size; anything after a frame must be another frame;
- a damaged or truncated stream raises :class:`~checkfu_fast.errors.DamagedInput` (an
  ``OSError`` naming the file), never ``EOFError``/``zlib.error``/``ZstdError``, and never
  ends quietly as if the input were complete.

``normalize(bytes)`` does not decompress: it takes JSONL bytes (a compressed buffer gives
``error/invalid_utf8`` events, exactly as the reference does); decompress first or pass the path.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import Any, BinaryIO, cast

from .errors import DamagedInput

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
            dec: Any = gzip.GzipFile(fileobj=f, mode="rb")
            return cast(BinaryIO, _Checked(dec, f, "gzip", os.fspath(path), None))
        if kind == "zstd":
            frames = _ZstdFrames()
            dec = _zstd(_Tee(f, frames), os.fspath(path))
            return cast(BinaryIO, _Checked(dec, f, "zstd", os.fspath(path), frames))
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


class _Checked(io.RawIOBase):
    """A decompressing stream whose failures are :class:`DamagedInput` naming the file, and
    whose end is checked (zstd: the last frame complete)."""

    def __init__(
        self, dec: Any, raw: BinaryIO, kind: str, path: str, frames: _ZstdFrames | None
    ) -> None:
        super().__init__()
        self._dec, self._raw, self._kind, self._path, self._frames = dec, raw, kind, path, frames

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        try:
            data: bytes = self._dec.read(size)
        except DamagedInput:
            raise
        except (EOFError, zlib.error, ValueError, OSError) as exc:
            if type(exc) is OSError and exc.errno is not None:
                raise  # reading the file failed (EIO ...): not damage
            raise self._damaged(str(exc) or type(exc).__name__) from None
        except Exception as exc:  # zstandard.ZstdError
            if type(exc).__name__ != "ZstdError":
                raise
            raise self._damaged(str(exc)) from None
        if not data and size != 0 and self._frames is not None and not self._frames.complete():
            raise self._damaged(self._frames.problem or "the file ends inside a frame")
        return data

    def readinto(self, b: Any) -> int:
        data = self.read(len(b))
        b[: len(data)] = data
        return len(data)

    def _damaged(self, detail: str) -> DamagedInput:
        return DamagedInput(f"{self._path}: damaged {self._kind} data: {detail}")

    def close(self) -> None:
        try:
            self._dec.close()
        finally:
            self._raw.close()
            super().close()


class _Tee:
    """A raw file whose bytes also go to a :class:`_ZstdFrames` as they are read."""

    def __init__(self, raw: BinaryIO, frames: _ZstdFrames) -> None:
        self._raw, self._frames = raw, frames

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self._frames.feed(data)
        return data

    def close(self) -> None:
        self._raw.close()


class _ZstdFrames:
    """The frame structure of a zstd stream followed without decompressing (headers and block
    headers only), so that its end can be checked: libzstd's stream reader ends quietly inside
    a truncated frame."""

    def __init__(self) -> None:
        self._state = "magic"  # magic | skiplen | fhd | header | block
        self._want = 4
        self._head = bytearray()
        self._skip = 0
        self._checksum = False
        self.problem: str | None = None

    def complete(self) -> bool:
        return self.problem is None and self._state == "magic" and not self._head and not self._skip

    def feed(self, data: bytes) -> None:
        i, n = 0, len(data)
        while i < n and self.problem is None:
            if self._skip:
                k = min(self._skip, n - i)
                i += k
                self._skip -= k
                continue
            k = min(self._want - len(self._head), n - i)
            self._head += data[i : i + k]
            i += k
            if len(self._head) == self._want:
                self._step(bytes(self._head))

    def _next(self, state: str, want: int, skip: int = 0) -> None:
        self._state, self._want, self._skip = state, want, skip
        self._head.clear()

    def _step(self, h: bytes) -> None:
        if self._state == "magic":
            magic = int.from_bytes(h[:4], "little")
            if magic & 0xFFFFFFF0 == 0x184D2A50:
                self._state, self._want = "skiplen", 8
            elif magic == 0xFD2FB528:
                self._state, self._want = "fhd", 5
            else:
                self.problem = "trailing bytes that are not a zstd frame"
        elif self._state == "skiplen":
            self._next("magic", 4, int.from_bytes(h[4:8], "little"))
        elif self._state == "fhd":
            fhd = h[4]
            single = bool(fhd & 0x20)
            fcs = (1 if single else 0, 2, 4, 8)[fhd >> 6]
            self._checksum = bool(fhd & 0x04)
            size = 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + fcs
            self._state, self._want = "header", size
            if len(h) == size:
                self._next("block", 3)
        elif self._state == "header":
            self._next("block", 3)
        else:  # a block header: last flag, type, size
            v = int.from_bytes(h, "little")
            last, kind, size = v & 1, (v >> 1) & 3, v >> 3
            if kind == 3:
                self.problem = "a reserved block type"
                return
            body = 1 if kind == 1 else size
            if last:
                self._next("magic", 4, body + (4 if self._checksum else 0))
            else:
                self._next("block", 3, body)


def _zstd(f: Any, path: Any) -> BinaryIO:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise OSError(
            f"{path} is zstd-compressed: install the zstandard package "
            "(pip install 'checkfu-fast[zstd]') to read it"
        ) from None
    reader = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True, closefd=True)
    return io.BufferedReader(reader, buffer_size=1 << 20)  # type: ignore[arg-type, unused-ignore]
