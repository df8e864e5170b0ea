"""Progress of long CLI runs on stderr: files done, MB read, MB/s and ETA.

Shown by ``checkfu-fast normalize|report|audit`` when stderr is a terminal, or always with
``--progress``; never with ``--no-progress``. It only ever writes to stderr (stdout's bytes are
the same with or without it). On a terminal it is one line redrawn in place (``\\r``, at most
5 times a second) and ended with a newline when the run ends; when forced onto a file or pipe
it writes one line per completed file instead (no control characters). The ETA is the bytes
left (from the sizes of the input files; unknown for stdin) over the rate so far.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

INTERVAL = 0.2


def wanted(flag: bool | None, stream: Any = None) -> bool:
    """``--progress`` (True), ``--no-progress`` (False), or by default: is stderr a terminal."""
    if flag is not None:
        return flag
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def add_arguments(parser: Any) -> None:
    """``--progress/--no-progress`` on a command's argparse parser."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show files done, MB/s and ETA on stderr (default: when stderr is a terminal)",
    )
    g.add_argument("--no-progress", dest="progress", action="store_false", help="never show it")


def _size(path: str) -> int | None:
    if path == "-":
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """Counts bytes and files; draws on ``stream`` when enabled (else every call is a no-op)."""

    def __init__(
        self,
        paths: Sequence[str],
        enabled: bool,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.tty = enabled and wanted(None, self.stream)
        self.clock = clock
        self.files = len(paths)
        sizes = [_size(p) for p in paths] if enabled else []
        self.total: int | None = (
            sum(s for s in sizes if s is not None) if None not in sizes else None
        )
        self.done_files = 0
        self.done_bytes = 0
        self.partial = 0
        self.start = clock()
        self.last_draw = 0.0
        self.drawn = False

    def read(self, n: int) -> None:
        """``n`` more bytes of the current file were read."""
        if not self.enabled:
            return
        self.partial += n
        if self.tty and self.clock() - self.last_draw >= INTERVAL:
            self._draw()

    def file_done(self, path: str) -> None:
        """A file is done (read whole, or failed)."""
        if not self.enabled:
            return
        self.done_files += 1
        size = _size(path)
        self.done_bytes += size if size is not None else self.partial
        self.partial = 0
        if self.tty:
            if self.clock() - self.last_draw >= INTERVAL or self.done_files == self.files:
                self._draw()
        else:
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        """The progress text: ``3/10 files, 12.0/80.0 MB, 40.1 MB/s, ETA 0:02``."""
        done = self.done_bytes + self.partial
        elapsed = max(self.clock() - self.start, 1e-9)
        rate = done / elapsed
        mb = f"{done / 1e6:.1f}"
        if self.total is not None:
            mb += f"/{self.total / 1e6:.1f}"
        eta = "?"
        if self.total is not None and rate > 0:
            eta = _clock(max(self.total - done, 0) / rate)
        return (
            f"checkfu-fast: {self.done_files}/{self.files} files, {mb} MB, "
            f"{rate / 1e6:.1f} MB/s, ETA {eta}"
        )

    def _draw(self) -> None:
        self.last_draw = self.clock()
        self.stream.write("\r" + self.line() + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def clear(self) -> None:
        """Before another message on stderr: take the redrawn line away."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False

    def close(self) -> None:
        """The run ended: the final line stays (terminal), nothing more otherwise."""
        if self.enabled and self.tty:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
