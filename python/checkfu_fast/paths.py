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

import contextlib
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


#: A file's stamp as the report's cache and memo take it (:func:`stamp_of`): size, mtime and
#: ctime (ns), inode, device. A tuple of five ints, not the ``os.stat_result`` (a third of its
#: memory: a walk of a big tree keeps one per file).
Stamp = tuple[int, int, int, int, int]


def stamp_of(st: os.stat_result) -> Stamp:
    """The :data:`Stamp` of an ``os.stat`` result."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


class SkippedFileWarning(UserWarning):
    """A directory entry that is not a regular file (FIFO, device, socket) was skipped."""


_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _regular(path: str, st: os.stat_result | None = None) -> bool:
    """True for a regular file (or a path that cannot be examined: reading it reports why);
    anything else is warned about and skipped. ``st``: its ``os.stat`` when already taken."""
    if st is None:
        try:
            st = os.stat(path)
        except OSError:
            return True
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return True
    kind = _KINDS.get(stat.S_IFMT(mode), "not a regular file")
    warnings.warn(f"{path}: {kind}, not a regular file: skipped", SkippedFileWarning, 2)
    return False


def _is_file(e: os.DirEntry[str]) -> bool:
    """True when ``e`` is a regular file (a symlink: what it points to), told by the type the
    directory listing gives (no ``stat`` but for a link); False when unsure."""
    try:
        return e.is_file()
    except OSError:
        return False


def is_stream_name(name: str) -> bool:
    """True when a file of this name in a directory is taken (see the module doc)."""
    return not name.startswith(".") and name.endswith(SUFFIXES)


def walk(
    directory: str,
    suffixes: tuple[str, ...] | None = SUFFIXES,
    stats: dict[str, Stamp] | None = None,
    *,
    native: bool = True,
) -> Iterator[str]:
    """The stream files under ``directory``, in the stable order of the module doc
    (``suffixes=None``: every file that is not hidden). ``stats``, when given, gets each
    listed file's :data:`Stamp` (``os.stat`` taken once: it also tells a regular file; a file
    that cannot be examined has none). The core walks (``_native._walk``, the same rule, the
    GIL released) where it can, whole at once (``native=False``: here, as far as it is
    iterated); a name that is not UTF-8 is walked here."""
    found = _native_walk(directory, suffixes, stats is not None) if native else None
    if found is not None:
        for name, stamp, kind in found:
            if kind is not None:  # not a regular file: named and skipped (as _regular)
                warnings.warn(f"{name}: {kind}, not a regular file: skipped", SkippedFileWarning, 2)
                continue
            if stats is not None and stamp is not None:
                stats[name] = stamp
            yield name
        return
    seen: set[tuple[int, int]] = set()

    def mark(st: os.stat_result) -> bool:
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    try:
        top = os.stat(directory)
    except OSError:
        return
    # os.walk's top-down order with sorted names, links followed, iteratively: a directory's
    # files, then each subdirectory (marked when its turn comes) walked the same way
    todo: list[tuple[str, os.stat_result | None]] = [(directory, top)]
    while todo:
        path, st = todo.pop()
        if st is not None and not mark(st):
            continue
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            continue  # an unreadable directory lists nothing
        files: list[os.DirEntry[str]] = []
        dirs: list[os.DirEntry[str]] = []
        for e in entries:
            try:
                is_dir = e.is_dir()  # follows a symlink, as os.walk
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(e)
        files.sort(key=_name)
        for e in files:
            name = e.name
            if name.startswith(".") or (suffixes is not None and not name.endswith(suffixes)):
                continue
            if stats is None and _is_file(e):  # the directory's own entry type: no stat
                yield e.path
                continue
            try:
                fst: os.stat_result | None = e.stat()
            except OSError:
                fst = None
            if fst is None or stat.S_ISREG(fst.st_mode) or _regular(e.path, fst):
                if stats is not None and fst is not None:
                    stats[e.path] = stamp_of(fst)
                yield e.path
        dirs.sort(key=_name, reverse=True)
        for e in dirs:
            if not e.name.startswith("."):
                with contextlib.suppress(OSError):
                    todo.append((e.path, e.stat()))


def _native_walk(
    directory: str, suffixes: tuple[str, ...] | None, stats: bool
) -> list[tuple[str, Stamp | None, str | None]] | None:
    """The core's walk of ``directory`` (``_native._walk``), or None where it declines (a name
    that is not UTF-8) or is absent."""
    try:
        from ._native import _walk
    except ImportError:  # pragma: no cover - the package runs on the reference
        return None
    if not isinstance(directory, str):
        return None
    return _walk(directory, None if suffixes is None else list(suffixes), stats)


def _name(e: os.DirEntry[str]) -> str:
    return e.name


def expand(
    paths: Iterable[str | os.PathLike[str]],
    suffixes: tuple[str, ...] | None = SUFFIXES,
    stats: dict[str, Stamp] | None = None,
) -> list[str]:
    """Every input: paths that are not directories as given, directories walked (see the
    module doc), in the order given; ``stats`` as in :func:`walk` (for the files found)."""
    out: list[str] = []
    for p in paths:
        s = os.fspath(p)
        if s != "-" and os.path.isdir(s):
            out += walk(s, suffixes, stats)
        else:
            out.append(s)
    return out


def empty_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The directories among ``paths`` that hold no stream file (the CLI reports them)."""
    return [
        os.fspath(p)
        for p in paths
        if os.fspath(p) != "-"
        and os.path.isdir(p)
        and next(walk(os.fspath(p), native=False), None) is None  # up to the first file
    ]
