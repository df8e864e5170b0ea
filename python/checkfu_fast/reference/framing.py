"""Line framing: bytes in any chunking -> complete lines with their stream offsets.

Mirror of ``rust/framing.rs``. Rules (docs/events.md §Framing):

* a line ends at LF; one CR right before the LF is dropped; a bare CR is data;
* the last line needs no LF and is emitted by :meth:`Framer.finish`;
* a UTF-8 BOM at offset 0 of the stream is skipped (positions still count it);
* a line longer than ``max_line_bytes`` is never buffered past ``max_line_bytes + 1`` bytes:
  only its prefix is kept and the rest is counted and dropped;
* with ``detect_wide`` (the normalizer's framer), a UTF-16 or UTF-32 stream is recognised at
  offset 0 (a BOM, or the NUL pattern of the first code unit: RFC 8259 §8.1, RFC 4627 §3) from
  at most its first 4 bytes; it gives no lines at all: it is counted and its first bytes kept,
  and :attr:`Framer.wide` reports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

BOM = b"\xef\xbb\xbf"
WIDE_RAW_BYTES = 256  # bytes after the BOM of a UTF-16/UTF-32 stream kept for WideStream.raw

_MORE = ("more",)
_PLAIN = ("plain",)
_UTF8_BOM = ("bom",)


def _start(h: bytes, eos: bool, detect: bool) -> tuple[Any, ...]:
    """Classify the first bytes ``h`` of a stream (``start`` in rust/framing.rs).

    ``("more",)`` (hold them: only for fewer than 4 bytes), ``("plain",)``, ``("bom",)`` (a
    UTF-8 BOM) or ``("wide", encoding, bom_length)``. ``eos``: no more bytes will come.
    """
    if not h:
        return _PLAIN if eos else _MORE
    if detect:
        s = _wide_start(h, eos)
        if s is not None:
            return s
    if h.startswith(BOM):
        return _UTF8_BOM
    if not eos and len(h) < 3 and BOM.startswith(h):
        return _MORE
    return _PLAIN


def _wide_start(h: bytes, eos: bool) -> tuple[Any, ...] | None:
    """The UTF-16/UTF-32 part of :func:`_start`: None when ``h`` cannot begin such a stream."""

    def wait(at_end: tuple[Any, ...] | None) -> tuple[Any, ...] | None:
        return at_end if eos else _MORE

    n = len(h)
    b0 = h[0]
    b1 = h[1] if n > 1 else -1
    b2 = h[2] if n > 2 else -1
    b3 = h[3] if n > 3 else -1
    if b0 == 0xFF and b1 == 0xFE:
        if b2 == 0 and b3 == 0:
            return ("wide", "UTF-32LE", 4)
        if n == 2 or (n == 3 and b2 == 0):
            return wait(("wide", "UTF-16LE", 2))
        return ("wide", "UTF-16LE", 2)
    if b0 == 0xFE and b1 == 0xFF:
        return ("wide", "UTF-16BE", 2)
    if n == 1 and b0 in (0xFF, 0xFE):
        return wait(None)
    if b0 == 0:
        if b1 == 0 and b2 == 0xFE and b3 == 0xFF:
            return ("wide", "UTF-32BE", 4)
        if b1 == 0 and b2 == 0 and 0 < b3 < 0x80:
            return ("wide", "UTF-32BE", 0)
        if 0 < b1 < 0x80:
            return ("wide", "UTF-16BE", 0)
        if h in (b"\x00", b"\x00\x00", b"\x00\x00\x00", b"\x00\x00\xfe"):
            return wait(None)
        return None
    if 0 < b0 < 0x80:
        if b1 == 0 and b2 == 0 and b3 == 0:
            return ("wide", "UTF-32LE", 0)
        if b1 == 0 and (n == 2 or (n == 3 and b2 == 0)):
            return wait(("wide", "UTF-16LE", 0))
        if b1 == 0:
            return ("wide", "UTF-16LE", 0)
        if n == 1:
            return wait(None)
    return None


class WideStream:
    """A stream found to be UTF-16 or UTF-32 (``encoding`` ``UTF-16LE``, ...).

    ``bom`` is the BOM's length (0: found by the NUL pattern), ``bytes`` the whole stream's size
    (BOM included); only its first ``bom + WIDE_RAW_BYTES`` bytes are kept.
    """

    __slots__ = ("_head", "bom", "bytes", "encoding")

    def __init__(self, encoding: str, bom: int) -> None:
        self.encoding = encoding
        self.bom = bom
        self.bytes = 0
        self._head = bytearray()

    def take(self, data: bytes) -> None:
        room = self.bom + WIDE_RAW_BYTES - len(self._head)
        if room > 0:
            self._head += data[:room]
        self.bytes += len(data)

    def raw(self) -> str:
        """The first WIDE_RAW_BYTES bytes after the BOM, as whole code units, decoded (an unpaired
        surrogate or a unit beyond U+10FFFF is U+FFFD), up to the first LF (and a CR before it)."""
        body = bytes(self._head[self.bom :])
        width = 4 if self.encoding.startswith("UTF-32") else 2
        order: Literal["big", "little"] = "big" if self.encoding.endswith("BE") else "little"
        n = len(body) - len(body) % width
        units = [int.from_bytes(body[i : i + width], order) for i in range(0, n, width)]
        out = []
        i = 0
        while i < len(units):
            u = units[i]
            if width == 2 and 0xD800 <= u < 0xDC00 and i + 1 < len(units):
                low = units[i + 1]
                if 0xDC00 <= low < 0xE000:
                    out.append(chr(0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)))
                    i += 2
                    continue
            out.append("\ufffd" if 0xD800 <= u < 0xE000 or u > 0x10FFFF else chr(u))
            i += 1
        text = "".join(out)
        lf = text.find("\n")
        if lf < 0:
            return text
        line = text[:lf]
        return line[:-1] if line.endswith("\r") else line


@dataclass(frozen=True, slots=True)
class Line:
    """One framed line.

    ``data`` is the whole line (no line ending), or only its first bytes when ``total`` is set
    (an over-long line); ``total`` is then the line's full length in bytes.
    """

    position: int
    data: bytes
    total: int | None = None


class Framer:
    """Incremental line splitter; ``feed`` then ``finish``."""

    def __init__(self, max_line_bytes: int, *, detect_wide: bool = False) -> None:
        self._max = max_line_bytes
        self._detect = detect_wide
        self._head = b""  # first bytes of the stream, held until the BOM question is settled
        self._bom_done = False
        self.wide: WideStream | None = None  # set once the first bytes say UTF-16/UTF-32
        self._pending = bytearray()  # current line, at most max_line_bytes + 1 bytes
        self._total = 0  # bytes of the current line so far (kept or not)
        self._last = -1  # last byte of the current line so far
        self._start = 0  # stream offset of the current line's first byte
        self._offset = 0  # stream offset of the next byte of `data` in feed

    def feed(self, chunk: bytes) -> Iterator[Line]:
        data = bytes(chunk)
        if self.wide is not None:
            self.wide.take(data)
            return
        if not self._bom_done:
            data = self._head + data
            decision = _start(data[:4], False, self._detect)
            if decision is _MORE:
                self._head = data
                return
            self._bom_done = True
            self._head = b""
            if decision[0] == "wide":
                self.wide = WideStream(decision[1], decision[2])
                self.wide.take(data)
                return
            if decision is _UTF8_BOM:
                data = data[3:]
                self._offset = self._start = 3
        pos = 0
        n = len(data)
        while pos < n:
            lf = data.find(b"\n", pos)
            end = n if lf < 0 else lf
            self._take(data, pos, end)
            if lf < 0:
                break
            yield self._emit(final=False)
            self._start = self._offset + lf + 1
            pos = lf + 1
        self._offset += n

    def finish(self) -> Iterator[Line]:
        if not self._bom_done:
            # fewer than 4 bytes ever arrived and they did not decide
            self._bom_done = True
            data, self._head = self._head, b""
            decision = _start(data, True, self._detect)
            if decision[0] == "wide":
                self.wide = WideStream(decision[1], decision[2])
                self.wide.take(data)
                return
            yield from self.feed(data)
        if self.wide is None and self._total:
            yield self._emit(final=True)

    def _take(self, data: bytes, start: int, end: int) -> None:
        if end <= start:
            return
        room = self._max + 1 - len(self._pending)
        if room > 0:
            self._pending += data[start : min(end, start + room)]
        self._total += end - start
        self._last = data[end - 1]

    def _emit(self, final: bool) -> Line:
        length = self._total
        if not final and self._last == 0x0D:
            length -= 1
        data = bytes(self._pending)
        self._pending.clear()
        self._total = 0
        self._last = -1
        if length > self._max:
            return Line(self._start, data[: self._max], length)
        return Line(self._start, data[:length])
