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
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from typing import Any

from . import __version__

#: Bumped whenever what a summary holds, or how it is made, changes.
VERSION = 1
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
    now, :meth:`save` once at the end. An entry is one line, ``KEY<TAB>[fingerprint, summary,
    known, unknown]`` (JSON both), kept as text until it is used: the memory of a big tree's
    cache is its text, not its objects."""

    def __init__(self, directory: str | None = None) -> None:
        self.path = os.path.join(directory or cache_dir(), NAME)
        self._old: dict[str, bytes] | None = None  # read on first use
        self.new: dict[str, bytes] = {}
        self.changed = False
        self.hits = 0
        self.fps: dict[str, list[Any] | None] = {}

    def fingerprints(self, names: list[str]) -> list[list[Any] | None]:
        """:func:`fingerprints` of ``names``, each taken once per run."""
        todo = [n for n in names if n not in self.fps]
        if todo:
            self.fps.update(zip(todo, fingerprints(todo), strict=True))
        return [self.fps[n] for n in names]

    @property
    def old(self) -> dict[str, bytes]:
        """The entries of the cache file as it was (read once): key -> entry text."""
        if self._old is None:
            self._old = self._load()
        return self._old

    def _load(self) -> dict[str, bytes]:
        """The entries of the cache file; none when it is absent, corrupt or foreign."""
        body = _read_body(self.path, FORMAT)
        out: dict[str, bytes] = {}
        if body is None:
            return out
        for line in body.split(b"\n"):
            key, tab, rest = line.partition(b"\t")
            if tab:
                try:
                    out[key.decode()] = rest
                except UnicodeDecodeError:
                    return {}
        return out

    @staticmethod
    def key(path: str, dialect: str, project: str | None) -> str:
        return json.dumps([dialect, os.path.abspath(path), project])

    def get(self, key: str, fp: list[Any] | None) -> list[Any] | None:
        """``[summary, known, unknown]`` the file gave when it had fingerprint ``fp``."""
        raw = self.old.get(key)
        if fp is None or raw is None:
            return None
        try:
            e = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if not isinstance(e, list) or len(e) != 4 or e[0] != fp:
            return None
        self.new[key] = raw
        self.hits += 1
        return e[1:]

    def put(self, key: str, fp: list[Any] | None, value: list[Any]) -> None:
        if fp is None:
            return
        self.new[key] = json.dumps([fp, *value], separators=(",", ":")).encode()
        self.changed = True

    def save(self) -> None:
        """Write the entries of this run (and older ones, up to :data:`MAX_ENTRIES`), when
        something changed; a cache that cannot be written is left as it is, silently."""
        if not self.changed:
            return
        entries = dict(self.new)
        for k, v in self.old.items():
            if len(entries) >= MAX_ENTRIES:
                break
            entries.setdefault(k, v)
        body = b"\n".join(k.encode() + b"\t" + v for k, v in entries.items())
        _write_body(self.path, FORMAT, body)


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
    _replace(path, json.dumps(meta).encode() + b"\n" + body)


def _write(path: str, fmt: str, doc: Any) -> None:
    """``doc`` as JSON after the header line (:func:`_write_body`)."""
    _write_body(path, fmt, json.dumps(doc, separators=(",", ":")).encode())


def _replace(path: str, data: bytes) -> None:
    """Write ``path`` atomically (a temporary file renamed over it); silently nothing when it
    cannot be written (a cache is never worth failing a report)."""
    directory = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp.", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
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
        body = _read_body(self._path(key), MEMO_FORMAT)
        try:
            return None if body is None else body.decode()
        except UnicodeDecodeError:
            return None

    def put(self, key: str, text: str) -> None:
        _write_body(self._path(key), MEMO_FORMAT, text.encode())
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
