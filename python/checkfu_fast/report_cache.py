"""The per-file cache of ``checkfu-fast report`` (docs/usage.md, "The cache").

Each file's :class:`~checkfu_fast.usage.StreamSummary` (what the fold of that stream alone
gives; the fold across files is redone on every run, so deduplication across files stays exact)
is kept under the user's cache directory (``$XDG_CACHE_HOME/checkfu_fast``, else
``~/.cache/checkfu_fast``), keyed on the file's path, the dialect asked for and the project its
path names, and used again only while the file's size, modification time (ns) and a hash of its
first :data:`HEAD` bytes are unchanged. One JSON document holds every entry; it names its
format, the package version and :data:`VERSION`, and a hash of its entries: a cache that is
corrupt, foreign or from another version is ignored and rebuilt. It is replaced atomically at
the end of a run that changed it (a temporary file renamed over it), so a run cut short or two
runs at once leave a whole cache, the last one's.

On top, :class:`Memo` keeps a clean run's output under a key made of its options and every
input's stamp (:func:`stamps`: size, modification and change times, inode, device; nothing is
read), and :func:`memo_hit` answers a re-run from it before anything that folds is imported
(the ``checkfu-fast`` entry point, :mod:`checkfu_fast._launch`).
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import hashlib
import itertools
import json
import os
import sys
import tempfile
import time
from array import array
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any, BinaryIO

from . import __version__
from .paths import Stamp, stamp_of

#: Bumped whenever what a summary holds, or how it is made, changes.
VERSION = 8
FORMAT = "checkfu_fast report cache"
MEMO_FORMAT = "checkfu_fast report memo"
#: Bytes hashed from the start of each file.
HEAD = 4096
#: Entries kept at most (those of the last run first): the cache of a huge tree stays bounded.
MAX_ENTRIES = 200_000
NAME = "report-cache.json"
MEMO_DIR = "memo"
#: Outputs kept by :class:`Memo`.
MEMO_ENTRIES = 16
#: An input modified this recently (ns) may be modified again within the same tick of the file
#: system's clock and keep its stamp: such a run's output is not memoized (git's "racy" rule).
RACY_NS = 2_000_000_000


#: An entry's key and text are shorter than this (longer ones are not kept).
_SPAN = 1 << 32


def _tag(key: str) -> int:
    """The 64-bit hash an entry is known by in one run (:class:`SummaryCache`)."""
    return hash(key.encode())


class _Places:
    """Where each entry of a cache file is, 28 bytes an entry, no Python object each (a dict
    of int objects was 8 MiB on a 1 GiB tree): per line in file order the tag of its key
    (:func:`_tag`), its offset, and its key's and text's lengths; an index of the lines by
    tag, a line whose tag an earlier line has left out of it (the first one is the entry)."""

    def __init__(self) -> None:
        self.tags: array[int] = array("q")
        self.at: array[int] = array("q")
        self.lens: array[int] = array("Q")  # key_len << 32 | n
        self.by_tag: array[int] = array("l")
        self.dups: list[int] = []  # lines whose tag an earlier line has

    def add(self, tag: int, at: int, key_len: int, n: int) -> None:
        self.tags.append(tag)
        self.at.append(at)
        self.lens.append(key_len << 32 | n)

    def index(self) -> None:
        """The index by tag, once every line is added."""
        order = sorted(range(len(self.tags)), key=self.tags.__getitem__)  # stable: first first
        by_tag: array[int] = array("l")
        last = None
        for i in order:
            tag = self.tags[i]
            if tag == last:
                self.dups.append(i)
                continue
            by_tag.append(i)
            last = tag
        self.by_tag = by_tag

    def __len__(self) -> int:
        return len(self.tags)

    def find(self, tag: int) -> int | None:
        """The line of ``tag``, or None."""
        tags = self.tags
        j = bisect.bisect_left(self.by_tag, tag, key=tags.__getitem__)
        if j < len(self.by_tag) and tags[i := self.by_tag[j]] == tag:
            return i
        return None

    def place(self, i: int, whole: bool) -> tuple[int, int]:
        """Offset and length of line ``i``'s text (``whole``: of the line, key and all)."""
        key_len, n = self.lens[i] >> 32, self.lens[i] & (_SPAN - 1)
        if whole:
            return self.at[i], key_len + 1 + n
        return self.at[i] + key_len + 1, n


def cache_dir(env: dict[str, str] | None = None) -> str:
    """``$XDG_CACHE_HOME/checkfu_fast``, else ``~/.cache/checkfu_fast``."""
    e = os.environ if env is None else env
    base = e.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):  # the XDG spec: a relative path is ignored
        base = os.path.join(e.get("HOME") or os.path.expanduser("~"), ".cache")
    return os.path.join(base, "checkfu_fast")


def fingerprints(paths: list[str]) -> list[list[Any] | None]:
    """Per path ``[size, mtime_ns, hash of its first HEAD bytes]`` (None where it cannot be
    read), taken by the core on every core."""
    from . import _native

    return [list(fp) if fp is not None else None for fp in _native._fingerprints(paths, HEAD)]


def _stamp() -> str:
    return f"{__version__}/{VERSION}"


class SummaryCache:
    """The entries of one cache file: :meth:`get` what a file gave, :meth:`put` what it gives
    now, :meth:`save` once at the end (:meth:`discard` on every other way out). An entry is
    one line, ``KEY<TAB>[fingerprint, summary, known, unknown, checkpoint]<TAB>readings``
    (JSON all three; JSON text has no raw tab). ``checkpoint`` (the core's, or null) is where
    the fold of the file can go on when it grew (:meth:`resume_point`): an append-only file is
    then read from where it ended. ``readings`` are the stream's ``rateLimits`` readings
    (``report --limits``), parsed only when asked for.

    Memory does not grow with the cache: of the cache file as it was, only where each entry
    is (:attr:`old`) is kept, an entry read from the file when it is used; this run's entries
    are written as they come to the file that replaces it (opened at the first change,
    renamed over the old one by :meth:`save`), the old entries no file of this run took
    copied after them. Entries are known by a 64-bit hash of their key (:func:`_tag`), not by
    the key's text (a key is a path: 150 bytes a file, 20 MiB on a 1 GiB tree): two keys with
    one tag (about 1 in 10^9 for 100k files) cost a cache miss, never a wrong total, as every
    entry is checked against its file's stamp or fingerprint (and a checkpoint against the
    file's bytes) before it is used."""

    def __init__(self, directory: str | None = None) -> None:
        self.path = os.path.join(directory or cache_dir(), NAME)
        self._old: _Places | None = None  # read on first use
        self._file: BinaryIO | None = None  # the cache file as it was, open while used
        self._out: _Spool | None = None  # the file replacing it, from the first change
        self._taken = bytearray()  # per old line: this run has its entry (or a dup: no entry)
        self._pending: array[int] = array("l")  # old lines used as they were, before a change
        self._failed = False  # the new file cannot be written: the cache is left as it is
        self.changed = False
        self.hits = 0
        self.resumed: list[str] = []  # files read from where they ended this run
        # each input's stamp (size, mtime, ctime, inode, device), report sets one or the
        # other: the inputs' stamp_table in their order, or the walk's os.stat by name; an
        # entry whose stamp is the file's is used without reading its head
        self.table: array[int] | None = None
        self.stats: dict[str, Stamp] = {}
        self._recent = time.time_ns() - RACY_NS

    @property
    def old(self) -> _Places:
        """Where each entry of the cache file as it was is (read once, checked whole)."""
        if self._old is None:
            self._old = self._load()
            self._taken = bytearray(len(self._old))
            for i in self._old.dups:  # no entry: never copied
                self._taken[i] = 1
        return self._old

    def _load(self) -> _Places:
        """The entries' places in the cache file; none when it is absent, corrupt or foreign.
        The file is read line by line (its hash checked on the way) and kept open."""
        out = _Places()
        try:
            f = open(self.path, "rb")  # noqa: SIM115 - kept open until save or discard
        except OSError:
            return out
        try:
            meta = json.loads(f.readline())
            h = hashlib.blake2b(digest_size=16)
            at = f.tell()
            for line in f:
                h.update(line)
                key, tab, rest = line.rstrip(b"\n").partition(b"\t")
                if tab and len(key) < _SPAN and len(rest) < _SPAN:
                    out.add(hash(key), at, len(key), len(rest))
                at += len(line)
        except (OSError, ValueError, RecursionError):
            f.close()
            return _Places()
        if not (
            isinstance(meta, dict)
            and meta.get("format") == FORMAT
            and meta.get("version") == _stamp()
            and meta.get("hash") == h.hexdigest()
        ):
            f.close()
            return _Places()
        out.index()
        self._file = f
        return out

    def _read(self, i: int | None, whole: bool = False) -> bytes | None:
        """The text of old line ``i`` (``whole``: the line, key and all; None: no line, or the
        file cannot be read)."""
        if i is None or self._file is None:
            return None
        at, n = self.old.place(i, whole)
        try:
            data = os.pread(self._file.fileno(), n, at)
        except OSError:
            return None
        return data if len(data) == n else None

    def _raw(self, key: str) -> bytes | None:
        """The text of the old entry of ``key`` (None: none, or the file cannot be read)."""
        return self._read(self.old.find(_tag(key)))

    def _keep(self, key: str, raw: bytes | None) -> None:
        """``key``'s entry this run: ``raw``, or (None) its old one as it is. The first one a
        run gives for a key of the old file is kept (a new key given twice in one run, the
        same file named twice, is written twice: the first line of a key is its entry)."""
        i = self.old.find(_tag(key))
        if i is not None:
            if self._taken[i]:
                return
            self._taken[i] = 1
        if raw is None and self._out is None:
            if i is not None:
                self._pending.append(i)  # written only if something changes
            return
        out = self._spool()
        if out is None:
            return
        if raw is not None:
            out.entry(key, raw)
        elif (line := self._read(i, whole=True)) is not None:
            out.line(line)

    def _spool(self) -> _Spool | None:
        """The file replacing the cache, opened at the first change with the entries kept so
        far; None when it cannot be written (nothing is, then)."""
        if self._out is None and not self._failed:
            try:
                self._out = _Spool(self.path, FORMAT)
                for i in self._pending:
                    line = self._read(i, whole=True)
                    if line is not None:
                        self._out.line(line)
            except OSError:
                self._failed = True
                self._drop_out()
            self._pending = array("l")
        return self._out

    @staticmethod
    def key(path: str, dialect: str, project: str | None) -> str:
        return json.dumps([dialect, os.path.abspath(path), project])

    def stamp(self, name: str) -> list[int] | None:
        """``[size, mtime_ns, ctime_ns, inode, device]`` from the walk's ``os.stat`` (None
        without one, or when the file was modified in the last :data:`RACY_NS`). Taken once per
        file: the stamp is dropped from :attr:`stats` (every file's, 17 MiB on a 1 GiB tree,
        held only until the fold has used it)."""
        st = self.stats.pop(name, None)
        if st is None or st[1] >= self._recent:
            return None
        return list(st)

    def rows(self, start: int, n: int) -> list[list[int] | None] | None:
        """The stamps of inputs ``start`` to ``start + n`` (:meth:`stamp`'s form) from
        :attr:`table`; None without one."""
        if self.table is None:
            return None
        out = [row(self.table, i) for i in range(start, start + n)]
        return [None if st is None or st[1] >= self._recent else st for st in out]

    def get(
        self,
        key: str,
        fp: list[Any] | None,
        readings: bool = False,
        stamp: list[int] | None = None,
    ) -> list[Any] | None:
        """``[summary, known, unknown]`` the file gave when it had fingerprint ``fp`` (``[size,
        mtime_ns, hash of the head]``), or the same ``stamp`` (:meth:`stamp`; the entry's
        fingerprint keeps the ctime, inode and device it was made with), and its readings with
        ``readings``."""
        if fp is None and stamp is None:
            return None
        raw = self._raw(key)
        if raw is None:
            return None
        entry, _, limits = raw.partition(b"\t")
        try:
            e = json.loads(entry)
            r = json.loads(limits) if readings else None
        except (ValueError, RecursionError):
            return None
        if not (isinstance(e, list) and len(e) == 5 and isinstance(e[0], list)):
            return None
        seen = e[0]
        by_stamp = stamp is not None and len(seen) == 6 and [*seen[:2], *seen[3:]] == stamp
        if not (
            (by_stamp or (fp is not None and seen[:3] == fp))
            and isinstance(e[1], list)
            and len(e[1]) == 7
            and isinstance(e[2], int)
            and isinstance(e[3], int)
            and (not readings or isinstance(r, list))
        ):
            return None
        if not by_stamp and fp is not None and stamp is not None and stamp[:2] == fp[:2]:
            # the same bytes under a new stamp (touched, copied back): kept under this one
            e[0] = [*fp, *stamp[2:]]
            self.changed = True
            self._keep(key, json.dumps(e, separators=(",", ":")).encode() + b"\t" + limits)
        else:
            self._keep(key, None)
        self.hits += 1
        return [*e[1:4], r] if readings else e[1:4]

    def resume_point(self, key: str) -> list[Any] | None:
        """``[summary, known, unknown, checkpoint, readings]`` of the file's last fold when it
        has a checkpoint (whatever the file's fingerprint is now: the core checks that the
        bytes folded then are still there, else reads the file whole)."""
        raw = self._raw(key)
        if raw is None:
            return None
        entry, _, limits = raw.partition(b"\t")
        try:
            e = json.loads(entry)
            if not isinstance(e, list) or len(e) != 5 or e[4] is None:
                return None
            return [*e[1:], json.loads(limits)]
        except (ValueError, RecursionError):
            return None

    def put(
        self,
        key: str,
        fp: list[Any] | None,
        value: list[Any],
        readings: Any,
        stamp: list[int] | None = None,
    ) -> None:
        """``value``: ``[summary, known, unknown, checkpoint]``; the fingerprint is kept with the
        stamp's ctime, inode and device when the stamp is of the same size and mtime."""
        if fp is None:
            return
        if stamp is not None and stamp[:2] == fp[:2]:
            fp = [*fp, *stamp[2:]]
        dump = json.dumps
        self.changed = True
        self._keep(
            key,
            (
                dump([fp, *value], separators=(",", ":"))
                + "\t"
                + dump(readings, separators=(",", ":"))
            ).encode(),
        )

    def fold(
        self,
        native: Any,
        batch: list[str],
        projects: list[str | None],
        dialect: str,
        core_dialect: Any,
        budget: tuple[int, int, int],
        jobs: int | None = None,
        readings: bool = False,
        stamps: list[list[int] | None] | None = None,
    ) -> list[list[Any] | None]:
        """Per file of ``batch``: ``[summary, known, unknown]`` (and its ``rateLimits``
        readings, with ``readings``), from the cache while the file is unchanged, else folded
        by the core (``_native._usage_fold_resume``: from where the file ended when it grew
        and its old bytes are still there) and kept; None where the caller must fold it.
        ``stamps``: each file's (:meth:`rows`), else :meth:`stamp` of each."""
        keys = [self.key(n, dialect, p) for n, p in zip(batch, projects, strict=True)]
        if stamps is None:
            stamps = [self.stamp(n) for n in batch]
        out = [
            None if st is None else self.get(k, None, readings, st)
            for k, st in zip(keys, stamps, strict=True)
        ]
        # the others: the size, mtime and head hash, taken by the core
        rest = [i for i, o in enumerate(out) if o is None]
        fps: list[Any] = [None] * len(batch)
        # (not kept past the batch: a dict of every file's, 15 MiB on a 1 GiB tree)
        for i, fp in zip(rest, fingerprints([batch[i] for i in rest]), strict=True):
            fps[i] = fp
            out[i] = self.get(keys[i], fp, readings, stamps[i])
        todo = [i for i in rest if out[i] is None]
        results = native._usage_fold_resume(
            [(batch[i], projects[i], self.resume_point(keys[i])) for i in todo],
            core_dialect,
            *budget,
            jobs,
        )
        for i, res in zip(todo, results, strict=True):
            if res is None:
                continue
            summary, known, unknown, checkpoint, resumed, limits = res
            self.put(keys[i], fps[i], [summary, known, unknown, checkpoint], limits, stamps[i])
            if resumed:
                self.resumed.append(batch[i])
            out[i] = [summary, known, unknown, limits] if readings else [summary, known, unknown]
        return out

    def save(self) -> None:
        """Put the new cache file in place of the old one, when something changed: this run's
        entries, then the old ones no file of this run took (up to :data:`MAX_ENTRIES` in
        all). A cache that cannot be written is left as it is, silently."""
        try:
            out = self._spool() if self.changed else None
            if out is None:
                return
            for i in range(len(self.old)):  # (read here if no entry was asked for)
                if out.count >= MAX_ENTRIES:
                    break
                if not self._taken[i]:
                    line = self._read(i, whole=True)
                    if line is not None:
                        out.line(line)
            self._out = None
            out.commit()
        except OSError:
            pass
        finally:
            self.discard()

    def _drop_out(self) -> None:
        out, self._out = self._out, None
        if out is not None:
            out.remove()

    def discard(self) -> None:
        """Close the files; a new cache file not put in place by :meth:`save` is removed."""
        self._drop_out()
        f, self._file = self._file, None
        if f is not None:
            f.close()


class _Spool:
    """A cache file being written next to ``path`` (a temporary file): the header line
    (format, version, hash of the rest) with its hash filled in by :meth:`commit`, which
    renames it over ``path``; :meth:`remove` otherwise. The same bytes as :func:`_write_body`
    of the entries joined by newlines, without holding them."""

    def __init__(self, path: str, fmt: str) -> None:
        self.path = path
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(prefix=".tmp.", dir=directory)
        self.f: BinaryIO | None = os.fdopen(fd, "wb")
        self.meta = {"format": fmt, "version": _stamp(), "hash": "0" * 32}
        self.hash = hashlib.blake2b(digest_size=16)
        self.count = 0
        self.f.write(json.dumps(self.meta).encode() + b"\n")

    def entry(self, key: str, raw: bytes) -> None:
        self.line(key.encode() + b"\t" + raw)

    def line(self, line: bytes) -> None:
        """An entry's line as it is (``KEY<TAB>...``, no newline)."""
        assert self.f is not None
        if self.count:
            line = b"\n" + line
        self.hash.update(line)
        self.f.write(line)
        self.count += 1

    def commit(self) -> None:
        assert self.f is not None
        self.meta["hash"] = self.hash.hexdigest()
        self.f.seek(0)
        self.f.write(json.dumps(self.meta).encode())  # as long as the placeholder's
        self.f.close()
        self.f = None
        os.replace(self.tmp, self.path)
        self.tmp = ""

    def remove(self) -> None:
        if self.f is not None:
            with contextlib.suppress(OSError):
                self.f.close()
            self.f = None
        if self.tmp:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = ""


def _read_body(path: str, fmt: str) -> bytes | None:
    """The body of a cache file written by :func:`_write_body` in format ``fmt``, else None
    (absent, unreadable, corrupt, foreign, another version)."""
    try:
        with open(path, "rb") as f:
            head = f.readline()
            body = f.read()
        meta = json.loads(head)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not (
        isinstance(meta, dict)
        and meta.get("format") == fmt
        and meta.get("version") == _stamp()
        and meta.get("hash") == hashlib.blake2b(body, digest_size=16).hexdigest()
    ):
        return None
    return body


#: Bytes read at a time from a memo entry.
_PIECE = 1 << 20


def _open_body(path: str, fmt: str, utf8: bool = False) -> BinaryIO | None:
    """:func:`_read_body`'s check without holding the body: the file, open at the start of
    its body, when it is a whole one in format ``fmt`` (its hash checked a MiB at a time;
    ``utf8``: its body UTF-8 too), else None."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - handed to the caller
    except OSError:
        return None
    try:
        meta = json.loads(f.readline())
        if not (
            isinstance(meta, dict) and meta.get("format") == fmt and meta.get("version") == _stamp()
        ):
            f.close()
            return None
        start = f.tell()
        h = hashlib.blake2b(digest_size=16)
        decoder = codecs.getincrementaldecoder("utf-8")() if utf8 else None
        while piece := f.read(_PIECE):
            h.update(piece)
            if decoder is not None:
                decoder.decode(piece)
        if decoder is not None:
            decoder.decode(b"", final=True)
        if meta.get("hash") != h.hexdigest():
            f.close()
            return None
        f.seek(start)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        f.close()
        return None
    return f


def _copy(f: BinaryIO, write: Callable[[str], Any]) -> None:
    """The rest of ``f`` (UTF-8) given to ``write`` a MiB at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    while piece := f.read(_PIECE):
        write(decoder.decode(piece))
    if tail := decoder.decode(b"", final=True):
        write(tail)


def _to_stdout(f: BinaryIO) -> None:
    """The rest of ``f`` written to standard output a MiB at a time, as the entry point
    (:mod:`checkfu_fast._launch`) writes an output: a closed pipe (piped into ``head``)
    quietly, another error said on stderr, exit status 1."""
    try:
        _copy(f, sys.stdout.write)
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as exc:
        print(f"checkfu-fast: standard output: {exc.strerror or exc}", file=sys.stderr)
        raise SystemExit(1) from None


def _read(path: str, fmt: str) -> Any:
    """The JSON document of a cache file (:func:`_write`), else None."""
    body = _read_body(path, fmt)
    try:
        return None if body is None else json.loads(body)
    except (ValueError, RecursionError):
        return None


def _write_body(path: str, fmt: str, body: bytes) -> None:
    """A header line (format, version, hash of the rest), then ``body``."""
    meta = {
        "format": fmt,
        "version": _stamp(),
        "hash": hashlib.blake2b(body, digest_size=16).hexdigest(),
    }
    _replace(path, [json.dumps(meta).encode() + b"\n", body])  # not joined: no copy


def _write(path: str, fmt: str, doc: Any) -> None:
    """``doc`` as JSON after the header line (:func:`_write_body`)."""
    _write_body(path, fmt, json.dumps(doc, separators=(",", ":")).encode())


def _replace(path: str, data: Iterable[bytes]) -> None:
    """Write ``path`` (the pieces of ``data``, in order) atomically (a temporary file renamed
    over it); silently nothing when it cannot be written (a cache is never worth failing a
    report)."""
    directory = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=directory)
        with os.fdopen(fd, "wb") as f:
            for piece in data:
                f.write(piece)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


class Memo:
    """The last outputs of ``report`` (at most :data:`MEMO_ENTRIES`, one file each under
    ``memo/``), each keyed on its options and every input's fingerprint: a re-run over
    unchanged files with the same options prints it again without folding anything. Each
    file has the cache's header line (format, version, hash of the rest)."""

    def __init__(self, directory: str | None = None) -> None:
        self.dir = os.path.join(directory or cache_dir(), MEMO_DIR)

    @staticmethod
    def key(parts: Any) -> str:
        text = json.dumps(parts, separators=(",", ":"))
        return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()

    def _path(self, key: str) -> str:
        return os.path.join(self.dir, key + ".txt")

    def get(self, key: str) -> str | None:
        """The output kept under ``key``, whole (:meth:`copy` writes it a piece at a time)."""
        pieces: list[str] = []
        return "".join(pieces) if self.copy(key, pieces.append) else None

    def _open(self, key: str) -> BinaryIO | None:
        """The file of ``key``, checked (:func:`_open_body`), at the start of its text."""
        return _open_body(self._path(key), MEMO_FORMAT, utf8=True)

    def copy(self, key: str, write: Callable[[str], Any]) -> bool:
        """The output kept under ``key`` given to ``write`` a MiB at a time (never held whole:
        a big tree's ``--json`` is tens of MB); False, nothing written, where there is none or
        it is damaged."""
        f = self._open(key)
        if f is None:
            return False
        with f:
            _copy(f, write)
        return True

    def put(self, key: str, text: str) -> None:
        _write_body(self._path(key), MEMO_FORMAT, text.encode())
        self._trim()

    def put_pieces(self, key: str, pieces: Callable[[], Iterable[str]]) -> None:
        """:meth:`put` of the text ``pieces()`` gives (twice: once hashed, once written), no
        more of it in memory at once than a piece."""
        h = hashlib.blake2b(digest_size=16)
        for piece in pieces():
            h.update(piece.encode())
        meta = {"format": MEMO_FORMAT, "version": _stamp(), "hash": h.hexdigest()}
        head = json.dumps(meta).encode() + b"\n"
        _replace(self._path(key), itertools.chain([head], (p.encode() for p in pieces())))
        self._trim()

    def _trim(self) -> None:
        """The oldest entries beyond :data:`MEMO_ENTRIES` removed."""
        try:
            kept = sorted(
                (e.stat().st_mtime_ns, e.path)
                for e in os.scandir(self.dir)
                if e.name.endswith(".txt")
            )
            for _, path in kept[: max(len(kept) - MEMO_ENTRIES, 0)]:
                os.unlink(path)  # the oldest
        except OSError:
            pass

    def entries(self) -> list[str]:
        """The keys kept."""
        try:
            return [e.name[:-4] for e in os.scandir(self.dir) if e.name.endswith(".txt")]
        except OSError:
            return []


def stamp_table(names: list[str]) -> array[int]:
    """Per input ``size, mtime_ns, ctime_ns, inode, device``, flat, as 64-bit integers (inode
    and device as their bits), ``-1`` in each field of one that cannot be examined: one
    ``stat`` each, taken by the core (``_native._stamps``) without a Python object per file
    (the walk's stamp tuples and their dict were 17 MiB on a 1 GiB tree)."""
    out: array[int] = array("q")
    try:
        from ._native import _stamps
    except ImportError:  # pragma: no cover - the package runs on the reference
        for name in names:
            try:
                st = stamp_of(os.stat(name))
            except (OSError, ValueError):
                out.extend((-1,) * 5)
                continue
            out.extend((x + (1 << 63)) % (1 << 64) - (1 << 63) for x in st)
        return out
    out.frombytes(_stamps(names))
    return out


def row(table: array[int], i: int) -> list[int] | None:
    """The stamp of input ``i`` in ``table`` (:func:`stamp_table`) as ``os.stat`` gives it
    (:func:`checkfu_fast.paths.stamp_of`: inode and device unsigned), None where it could not
    be examined."""
    st = table[5 * i : 5 * i + 5]
    if len(st) < 5 or st[0] < 0:
        return None
    return [st[0], st[1], st[2], st[3] & _MASK, st[4] & _MASK]


_MASK = (1 << 64) - 1


def stamps(
    names: list[str], stats: dict[str, Stamp] | None = None, table: array[int] | None = None
) -> array[int] | None:
    """Per input ``size, mtime_ns, ctime_ns, inode, device`` (``table`` when given, else from
    ``stats`` where the walk took it, else the core's ``stat``: :func:`stamp_table`), flat,
    as 64-bit integers (not an int object each): the memo's view of the files (nothing is
    read); None when one cannot be examined or one was modified in the last
    :data:`RACY_NS` (its stamp may not tell a further change)."""
    recent = time.time_ns() - RACY_NS
    if table is None and not stats:
        table = stamp_table(names)
    if table is not None:
        sizes, mtimes = table[::5], table[1::5]
        if (sizes and min(sizes) < 0) or (mtimes and max(mtimes) >= recent):
            return None
        return table
    out: array[int] = array("q")
    known = stats or {}
    for name in names:
        st = known.get(name)
        if st is None:
            try:
                st = stamp_of(os.stat(name))
            except (OSError, ValueError):
                return None
        if st[1] >= recent:
            return None
        n = len(out)
        try:
            out.extend(st)
        except OverflowError:  # an unsigned 64-bit field (a device number): its bits kept
            del out[n:]
            out.extend((x + (1 << 63)) % (1 << 64) - (1 << 63) for x in st)
    return out


def memo_key(
    *,
    by: list[str],
    zone: str,
    since: str | None,
    until: str | None,
    prices: str | None,
    no_estimate: bool,
    json_out: bool,
    csv_out: bool,
    dialect: str,
    paths: list[str],
    names: list[str],
    stamps: array[int],
    limits: bool = False,
) -> str | None:
    """The key of a run's output in :class:`Memo`: its options (``zone`` the resolved time
    zone's name, ``prices`` the ``--prices`` file, hashed), the paths as given, the working
    directory (relative names), every input and its stamp (:func:`stamps`); None when the
    ``--prices`` file cannot be read."""
    digest = None
    if prices:
        try:
            with open(prices, "rb") as f:
                digest = hashlib.blake2b(f.read(), digest_size=16).hexdigest()
        except OSError:
            return None
    options = [by, zone, since, until, digest, no_estimate, json_out, csv_out, dialect, limits]
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps([options, os.getcwd(), paths, len(names)]).encode())
    h.update(b"\n")
    for i in range(0, len(names), 4096):  # no text of every name at once
        h.update("\0".join(names[i : i + 4096]).encode("utf-8", "surrogatepass") + b"\0")
    h.update(b"\n")
    h.update(stamps.tobytes())
    return h.hexdigest()


def replay_progress(names: list[str], sizes: Iterable[int], flag: bool | None) -> bool:
    """The progress a run over ``names`` ends with, drawn at once on a terminal (a memo hit
    reads nothing); False, doing nothing, where it would print a line per file (``--progress``
    with stderr not a terminal)."""
    from .progress import Progress, wanted

    p = Progress([], wanted(flag))
    if p.enabled and not p.tty:
        return False
    p.files = p.done_files = len(names)
    p.total = p.done_bytes = sum(sizes)
    p.close()
    return True


#: The walk :func:`memo_hit` made for this process's own command line when it found no
#: output kept: ``(paths, working directory, names, stamp_table)``, taken once by the full run
#: (:func:`take_walk`) instead of walking the tree again.
_walked: tuple[list[str], str, list[str], array[int]] | None = None


def take_walk(paths: list[str]) -> tuple[list[str], array[int]] | None:
    """The inputs and their :func:`stamp_table` :func:`memo_hit` found for this process's own
    ``checkfu-fast report`` command line (``sys.argv``: the entry point asked the memo first,
    and nothing was kept), when ``paths`` are the ones it was given, in the same working
    directory; once. None otherwise (the caller walks): a walk that warned, a run not started
    from this process's command line (another caller of :func:`memo_hit`, a test)."""
    global _walked
    got, _walked = _walked, None
    if got is None or sys.argv[1:2] != ["report"] or got[0] != list(paths):
        return None
    if got[1] != os.getcwd():
        return None
    return got[2], got[3]


_FLAGS = {"--json", "--csv", "--no-estimate", "--progress", "--no-progress", "--limits"}
_VALUED = {"--by", "--tz", "--since", "--until", "--prices", "--dialect"}


def memo_hit(argv: list[str], write: Callable[[str], Any] | None = None) -> str | None:
    """The output of ``checkfu-fast report ARGV`` from the memo, with its progress line drawn,
    or None (with ``write``: the output given to ``write`` a MiB at a time, never held whole,
    and ``""`` returned; None, nothing written, where it is not there): not a plain run (an
    option other than ``--by --tz --since --until --prices --dialect NAME --json --csv
    --no-estimate --limits --progress --no-progress``, an abbreviated one, stdin, options
    after a path), a warning while walking, an input that cannot be examined or was just
    modified, or nothing kept. Only this module, :mod:`checkfu_fast.paths` and
    :mod:`checkfu_fast.report_inputs` are imported (and the core, for the stamps:
    :func:`stamp_table`); the key is :func:`memo_key`'s, the one the full run
    (``report._memo_key``) stores under."""
    import warnings

    opts: dict[str, Any] = {}
    paths: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg.startswith("-") and arg != "-" and not paths:
            name, eq, value = arg.partition("=")
            if name in _FLAGS and not eq:
                opts[name] = True
            elif name in _VALUED:
                if not eq:
                    if i >= len(argv):
                        return None
                    value = argv[i]
                    i += 1
                if value.startswith("-"):
                    return None
                opts[name] = value
            else:
                return None
        elif arg.startswith("-"):
            return None  # stdin, or an option after a path
        else:
            paths.append(arg)
    if "--progress" in opts and "--no-progress" in opts:
        return None
    flag = True if "--progress" in opts else False if "--no-progress" in opts else None
    dialect = opts.get("--dialect", "auto")
    if dialect != "auto":
        from . import _native

        if dialect not in _native.DIALECTS:
            return None
    from .paths import expand
    from .report_inputs import default_paths, local_zone

    try:
        tz = local_zone(opts.get("--tz"))
        since, until = (
            None if opts.get(k) is None else date.fromisoformat(opts[k]).isoformat()
            for k in ("--since", "--until")
        )
    except ValueError:
        return None
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if paths:
            names = expand(paths)
        else:
            names, dirs = default_paths()
            if not dirs:
                return None
    if seen or not names:
        return None
    table = stamp_table(names)
    own = argv == sys.argv[2:] and sys.argv[1:2] == ["report"]
    if own:
        # this process's own command line: its full run takes this walk (take_walk)
        global _walked
        _walked = (list(paths), os.getcwd(), names, table)
    st = stamps(names, table=table)
    if st is None:
        return None
    key = memo_key(
        by=[d.strip() for d in opts.get("--by", "session").split(",") if d.strip()],
        zone=getattr(tz, "key", None) or str(tz),
        since=since,
        until=until,
        prices=opts.get("--prices"),
        no_estimate="--no-estimate" in opts,
        json_out="--json" in opts,
        csv_out="--csv" in opts,
        dialect=dialect,
        paths=paths,
        names=names,
        stamps=st,
        limits="--limits" in opts,
    )
    f = None if key is None else Memo()._open(key)
    if f is None:
        return None
    with f:
        if not replay_progress(names, st[::5], flag):
            return None
        if write is None and own:
            # the entry point's own command line: to standard output a MiB at a time, and
            # the entry point writes "" (what it does on an error writing, done here)
            _to_stdout(f)
            return ""
        if write is None:
            pieces: list[str] = []
            _copy(f, pieces.append)
            return "".join(pieces)
        # a MiB at a time: the output (tens of MB on a big tree) is never held whole
        _copy(f, write)
        return ""
