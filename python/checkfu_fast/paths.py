"""Directory input, the same for every command and function that takes paths
(``normalize_files``, ``audit_files``, ``checkfu-fast normalize|report|audit``, the Dask reader).

The rule (README "Directories, progress, Dask", docs/scale.md):

- a path that is not a directory (a file, ``-`` for stdin, a missing path) is taken as given,
  whatever its name: naming a file is asking for it;
- a directory is walked recursively and only the stream files in it are taken: names ending
  in :data:`SUFFIXES` (``.jsonl``, ``.ndjson``, ``.json``, ``.log``, and the compressed session
  files ``.jsonl.gz``, ``.jsonl.zst``, ``.ndjson.gz``, ``.ndjson.zst``), case-sensitively;
- hidden entries below the directory (names starting with ``.``: ``.git``, editor swap files)
  are skipped; the directory given is walked even if its own name is hidden
  (``~/.codex/sessions``);
- the order is stable: a directory's own files in sorted order (by name, as Python sorts str),
  then its subdirectories in sorted order, each walked the same way;
- symbolic links to directories are followed, but every real directory is walked once (by
  device and inode), so a symlink loop or two links to one tree cannot repeat files or hang;
  a file reached through two names is listed under both;
- only regular files are taken (a symlink counts as what it points to): a FIFO, a device
  (``x.jsonl -> /dev/zero``) or a socket found in a directory would block or never end, so it
  is skipped with a :class:`SkippedFileWarning` naming it (the CLI prints it as
  ``checkfu-fast: warning: ...``). A file that cannot be examined (a dangling symlink) is
  listed, so reading it reports the error.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterable, Iterator

SUFFIXES = (
    ".jsonl",
    ".ndjson",
    ".json",
    ".log",
    ".jsonl.gz",
    ".jsonl.zst",
    ".ndjson.gz",
    ".ndjson.zst",
)


class SkippedFileWarning(UserWarning):
    """A directory entry that is not a regular file (FIFO, device, socket) was skipped."""


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _regular(path: str) -> bool:
    """True for a regular file (or a path that cannot be examined: reading it reports why);
    anything else is warned about and skipped."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return True
    if stat.S_ISREG(mode):
        return True
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    warnings.warn(f"{path}: {kind}, not a regular file: skipped", SkippedFileWarning, 2)
    return False


def is_stream_name(name: str) -> bool:
    """True when a file of this name in a directory is taken (see the module doc)."""
    return not name.startswith(".") and name.endswith(SUFFIXES)


def walk(directory: str, suffixes: tuple[str, ...] | None = SUFFIXES) -> Iterator[str]:
    """The stream files under ``directory``, in the stable order of the module doc
    (``suffixes=None``: every file that is not hidden)."""
    seen: set[tuple[int, int]] = set()

    def mark(path: str) -> bool:
        try:
            st = os.stat(path)
        except OSError:
            return False
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    if not mark(directory):
        return
    for root, dirs, files in os.walk(directory, followlinks=True):
        dirs[:] = [d for d in sorted(dirs) if not d.startswith(".") and mark(os.path.join(root, d))]
        for name in sorted(files):
            if not name.startswith(".") and (suffixes is None or name.endswith(suffixes)):
                path = os.path.join(root, name)
                if _regular(path):
                    yield path


def expand(
    paths: Iterable[str | os.PathLike[str]], suffixes: tuple[str, ...] | None = SUFFIXES
) -> list[str]:
    """Every input: paths that are not directories as given, directories walked (see the
    module doc), in the order given."""
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if s != "-" and os.path.isdir(s):
            out += walk(s, suffixes)
        else:
            out.append(s)
    return out


def empty_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The directories among ``paths`` that hold no stream file (the CLI reports them)."""
    return [
        os.fspath(p)
        for p in paths
        if os.fspath(p) != "-" and os.path.isdir(p) and next(walk(os.fspath(p)), None) is None
    ]
