"""Output files, the same rules for every command and function that writes one
(``checkfu-fast normalize -o``, ``normalize_files(out_dir=...)`` in every format,
``write_parquet``); docs/errors.md:

- an output never aliases an input: when the output path already exists and is the same file
  (device and inode) as an input, nothing is written (:class:`~checkfu_fast.errors.OutputIsInput`,
  exit status 2 in the CLI);
- an output never follows a symbolic link it did not create and never lands half-written: it is
  written to a fresh hidden temporary file next to it (created with ``O_EXCL``, which does not
  follow a symlink) and renamed onto its name only when complete; on any failure (an error, a
  full disk, Ctrl-C) the temporary file is removed and whatever was at the name stays as it was.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator

from .errors import OutputIsInput

__all__ = ["atomic_output", "printable", "refuse_aliases"]


def _key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def refuse_aliases(inputs: Iterable[str], outputs: Iterable[str | int]) -> None:
    """Raise :class:`OutputIsInput` when an existing output (a path, or an open descriptor
    such as stdout) is the same file as one of ``inputs`` (``-`` is stdin)."""
    keys: dict[tuple[int, int], str] = {}
    for name in inputs:
        if name == "-":
            try:
                st = os.fstat(0)
            except OSError:
                continue
            key: tuple[int, int] | None = (st.st_dev, st.st_ino)
        else:
            key = _key(name)
        if key is not None:
            keys.setdefault(key, name)
    if not keys:
        return
    for out in outputs:
        if isinstance(out, int):
            try:
                st = os.fstat(out)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):  # a terminal, a pipe: never an input file
                continue
            key, shown = (st.st_dev, st.st_ino), "standard output"
        else:
            key, shown = _key(out), out
        if key is not None and key in keys:
            raise OutputIsInput(
                f"{shown} is the input {keys[key]}: refusing to write over it "
                "(an output never aliases an input)"
            )


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[str]:
    """A fresh temporary path next to ``path`` to write to; renamed onto ``path`` when the
    block ends normally, removed when it raises (anything, ``KeyboardInterrupt`` included)."""
    final = os.fspath(path)
    folder, name = os.path.split(final)
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # the mode an ordinary create would give
    finally:
        os.close(fd)
    try:
        yield tmp
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def printable(text: str) -> str:
    """``text`` safe for a terminal: control characters (C0, DEL, C1), line and paragraph
    separators and the other characters Python does not consider printable (bidi overrides,
    zero-width marks) shown as ``\\x1b``, ``\\n``, ``\\u202e`` ...; everything else as is.
    Human output (``report``, ``audit`` tables, messages on stderr) passes every string read from
    an input through it; JSON output needs nothing (``json.dumps`` escapes controls)."""
    if text.isprintable():
        return text
    out = []
    for c in text:
        if c.isprintable():
            out.append(c)
        else:
            out.append(repr(c)[1:-1] if c not in "'\"" else c)
    return "".join(out)
