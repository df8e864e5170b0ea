"""Line framing: bytes in any chunking -> complete lines with their stream offsets.

Mirror of ``rust/framing.rs``. Rules (docs/events.md §Framing):

* a line ends at LF; one CR right before the LF is dropped; a bare CR is data;
* the last line needs no LF and is emitted by :meth:`Framer.finish`;
* a UTF-8 BOM at offset 0 of the stream is skipped (positions still count it);
* a line longer than ``max_line_bytes`` is never buffered past ``max_line_bytes + 1`` bytes:
  only its prefix is kept and the rest is counted and dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

BOM = b"\xef\xbb\xbf"


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

    def __init__(self, max_line_bytes: int) -> None:
        self._max = max_line_bytes
        self._head = b""  # first bytes of the stream, held until the BOM question is settled
        self._bom_done = False
        self._pending = bytearray()  # current line, at most max_line_bytes + 1 bytes
        self._total = 0  # bytes of the current line so far (kept or not)
        self._last = -1  # last byte of the current line so far
        self._start = 0  # stream offset of the current line's first byte
        self._offset = 0  # stream offset of the next byte of `data` in feed

    def feed(self, chunk: bytes) -> Iterator[Line]:
        data = bytes(chunk)
        if not self._bom_done:
            data = self._head + data
            if len(data) < 3 and BOM.startswith(data):
                self._head = data
                return
            self._bom_done = True
            self._head = b""
            if data.startswith(BOM):
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
            # fewer than 3 bytes ever arrived, a BOM prefix: they are data
            self._bom_done = True
            data, self._head = self._head, b""
            yield from self.feed(data)
        if self._total:
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
