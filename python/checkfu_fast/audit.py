"""The drift radar: which native record types and fields a stream holds that its dialect does not
know (docs/audit.md).

Two sources of knowledge, by design:

* *unknown record types* come from the events: a line the dialect maps to ``status/unknown`` has
  a record type the dialect does not know, so the audit agrees with the normalizer by
  construction (native or reference, whichever ran);
* *unknown fields* come from the known-fields registry shipped with the dialects
  (``checkfu_fast/dialects/known/<dialect>.json``): for every line of a known record type the
  line's JSON value (the event's ``parsed``) is walked against the record's known pointers. The
  walk and the record-type naming (``system/<subtype>``, ``item.completed/<item type>``, ...)
  live here, with the registry, and nowhere else.

The audit reads files one by one and streams each through ``Normalizer`` in 1 MiB chunks, so
memory is bounded by the largest line and the size of the report.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import paths as _paths
from .inputs import open_input
from .outputs import printable

KNOWN_DIR = Path(__file__).resolve().parent / "dialects" / "known"
# bytes fed at a time: the events of one feed are alive together, and 64 KiB of 2-byte lines
# is 32k event dicts (1 MiB was 512k: a 1.1 GB peak on a short-line gzip bomb)
CHUNK = 1 << 16
# distinct record types / unknown entries kept per dialect and table: the report stays bounded
# on hostile input (random keys); what does not fit is counted in `overflow`
MAX_ENTRIES = 10_000

# events that describe the stream, not a line of it (they share the first line's position)
_NOTICES = frozenset({"dialect_fallback"})
# per-line framing results: the line has no native record
_FRAMING = frozenset(
    {
        "non_json",
        "invalid_json",
        "invalid_utf8",
        "line_too_long",
        "too_deep",
        "too_many_nodes",
        "stream_is_utf16",
    }
)


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _split(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"known-fields pointer must start with '/': {pointer!r}")
    return [s.replace("~1", "/").replace("~0", "~") for s in pointer[1:].split("/")]


class _Node:
    """One step of the compiled known-fields trie. ``open``: the whole subtree is free-form."""

    __slots__ = ("children", "open")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.open = False


_EMPTY = _Node()


class Registry:
    """The known-fields registry of one dialect (one JSON file, see docs/audit.md)."""

    def __init__(self, doc: dict[str, Any], source: str = "<registry>") -> None:
        self.source = source
        self.dialect: str = doc["dialect"]
        self.subtypes: dict[str, list[dict[str, Any]]] = {
            base: [r if isinstance(r, dict) else {"pointer": r} for r in rules]
            for base, rules in doc.get("subtypes", {}).items()
        }
        groups: dict[str, list[str]] = doc.get("groups", {})
        common: list[str] = doc.get("common", [])
        self.records: dict[str, dict[str, Any]] = doc["records"]
        self.documented: dict[str, dict[str, Any]] = doc.get("documented", {})
        self._tries: dict[str, _Node] = {}
        for table in (self.records, self.documented):
            for name, rec in table.items():
                self._tries[name] = self._compile(
                    [*common, *rec.get("fields", [])], groups, f"{source}: {name}"
                )

    @staticmethod
    def _compile(fields: list[str], groups: dict[str, list[str]], where: str) -> _Node:
        root = _Node()
        todo = list(fields)
        seen_groups = 0
        while todo:
            pointer = todo.pop()
            segs = _split(pointer)
            if segs and segs[-1].startswith("@"):  # /prefix/@group: the group's fields there
                name = segs[-1][1:]
                if name not in groups:
                    raise ValueError(f"{where}: unknown group {name!r}")
                seen_groups += 1
                if seen_groups > 10_000:
                    raise ValueError(f"{where}: groups include each other without end")
                prefix = pointer[: -len(segs[-1]) - 1]
                todo.extend(prefix + g for g in groups[name])
                continue
            node = root
            for seg in segs:
                if seg == "**":
                    node.open = True
                    break
                node = node.children.setdefault(seg, _Node())
        return root

    def record_type(self, base: str, value: Any) -> str:
        """The record-type name of a line: ``base`` (the event's ``nativeType``), refined by
        the registry's subtype rule for it (``system`` → ``system/<subtype>``)."""
        for rule in self.subtypes.get(base, ()):
            found = _subtype(value, rule)
            if found is not None:
                return f"{base}/{found}"
        return base

    def trie(self, record: str) -> _Node | None:
        """The known fields of ``record``; a subtyped name falls back to its base entry."""
        t = self._tries.get(record)
        if t is None and "/" in record:
            t = self._tries.get(record.split("/", 1)[0])
        return t


def _subtype(value: Any, rule: dict[str, Any]) -> str | None:
    node = value
    for seg in _split(rule["pointer"]):
        if isinstance(node, dict):
            node = node.get(seg)
        else:
            return None
    suffix = rule.get("keySuffix")
    if suffix is not None:  # the first key that ends with the suffix (cursor's *ToolCall)
        if isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and key.endswith(suffix) and len(key) > len(suffix):
                    return key
        return None
    return node if isinstance(node, str) and node else None


_REGISTRIES: dict[str, Registry | None] = {}


def registry(dialect: str) -> Registry | None:
    """The shipped registry of ``dialect`` (None for a dialect without one)."""
    if dialect not in _REGISTRIES:
        # only the shipped files: a dialect name comes from a (user) mapping, never a path
        shipped = {p.stem: p for p in KNOWN_DIR.glob("*.json")}
        path = shipped.get(dialect)
        _REGISTRIES[dialect] = (
            Registry(json.loads(path.read_text("utf-8")), str(path)) if path is not None else None
        )
    return _REGISTRIES[dialect]


def unknown_fields(node: _Node, value: Any, path: str = "") -> list[str]:
    """Pointers (array indices as ``*``) of the fields in ``value`` that ``node`` does not know.

    An unknown object key is reported once, not its subtree; a known key is walked further
    unless its subtree is open (``/**``). A known field without listed children that holds an
    object has its keys reported (list them, or mark the field open).
    """
    out: list[str] = []
    _walk(node, value, path, out)
    return out


def _walk(node: _Node, value: Any, path: str, out: list[str]) -> None:
    if isinstance(value, dict):
        children = node.children
        star = children.get("*")
        for key, v in value.items():
            child = children.get(key, star)
            if child is None:
                out.append(f"{path}/{_escape(key)}")
            elif not child.open and (isinstance(v, (dict, list))):
                _walk(child, v, f"{path}/{_escape(key)}", out)
    elif isinstance(value, list):
        child = node.children.get("*", _EMPTY)
        if child.open:
            return
        for v in value:
            if isinstance(v, (dict, list)):
                _walk(child, v, f"{path}/*", out)


def _base_type(ev: dict[str, Any]) -> str:
    nt = ev.get("nativeType")
    if isinstance(nt, str):
        return nt
    p = ev.get("parsed")
    if isinstance(p, dict):
        return "(no type)"
    if isinstance(p, list):
        return "(array)"
    if isinstance(p, str):
        return "(string)"
    if isinstance(p, bool):
        return "(boolean)"
    if p is None:
        return "(null)"
    return "(number)"


class _DialectReport:
    __slots__ = (
        "error_kinds",
        "errors",
        "fields",
        "framing",
        "lines",
        "notices",
        "overflow",
        "records",
        "unknown",
        "unregistered",
    )

    def __init__(self) -> None:
        self.lines = 0
        self.records: Counter[str] = Counter()
        self.unknown: dict[str, list[Any]] = {}  # type -> [count, first]
        self.fields: dict[tuple[str, str], list[Any]] = {}  # (record, pointer) -> [count, first]
        self.unregistered: dict[str, list[Any]] = {}
        self.framing: Counter[str] = Counter()
        self.notices: Counter[str] = Counter()
        self.error_kinds: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.overflow = 0

    def bump(self, table: dict[Any, list[Any]], key: Any, first: dict[str, Any]) -> None:
        slot = table.get(key)
        if slot is not None:
            slot[0] += 1
        elif len(table) < MAX_ENTRIES:
            table[key] = [1, first]
        else:
            self.overflow += 1

    def as_dict(self, has_registry: bool) -> dict[str, Any]:
        def firsts(table: dict[Any, list[Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
            out = []
            for k in sorted(table):
                count, first = table[k]
                ident = dict(zip(keys, k if isinstance(k, tuple) else (k,), strict=True))
                out.append({**ident, "count": count, "first": first})
            return out

        return {
            "lines": self.lines,
            "records": dict(sorted(self.records.items())),
            "unknown_records": firsts(self.unknown, ("type",)),
            "unknown_fields": firsts(self.fields, ("record", "pointer")),
            "unregistered_records": firsts(self.unregistered, ("type",)),
            "registry": has_registry,
            "framing": dict(sorted(self.framing.items())),
            "notices": dict(sorted(self.notices.items())),
            "error_kinds": dict(sorted(self.error_kinds.items())),
            "errors": dict(sorted(self.errors.items())),
            "overflow": self.overflow,
        }


class Auditor:
    """Accumulates the audit of many streams; feed it events line by line with :meth:`add`."""

    def __init__(self) -> None:
        self.files = 0
        self.lines = 0
        self._dialects: dict[str, _DialectReport] = {}

    def _report(self, dialect: str) -> _DialectReport:
        r = self._dialects.get(dialect)
        if r is None:
            r = self._dialects[dialect] = _DialectReport()
        return r

    def add(self, events: Iterable[dict[str, Any]], file: str | None) -> None:
        """Audit the events of whole lines (a ``Normalizer.feed``/``finish`` result)."""
        last_pos = None
        for ev in events:
            dialect = ev["dialect"]
            r = self._report(dialect)
            kind, sub = ev["kind"], ev["subtype"]
            if kind == "error":
                r.error_kinds[ev["error"]["errorKind"]] += 1
                r.errors[sub] += 1
            if sub in _NOTICES and kind == "status":
                r.notices[sub] += 1
                continue
            pos = ev["position"]
            if pos == last_pos:  # later events of a line already audited
                continue
            last_pos = pos
            self.lines += 1
            r.lines += 1
            if sub in _FRAMING and ev.get("parsed") is None:
                r.framing[f"{kind}/{sub}"] += 1
                continue
            self._record(r, dialect, ev, file, kind == "status" and sub == "unknown")

    def _record(
        self, r: _DialectReport, dialect: str, ev: dict[str, Any], file: str | None, unknown: bool
    ) -> None:
        value = ev.get("parsed")
        reg = registry(dialect)
        base = _base_type(ev)
        name = reg.record_type(base, value) if reg is not None else base
        if name not in r.records and len(r.records) >= MAX_ENTRIES:
            r.overflow += 1
            return
        r.records[name] += 1
        first = {"file": file, "position": ev["position"]}
        if unknown:
            r.bump(r.unknown, name, first)
            return
        if reg is None:
            return
        trie = reg.trie(name)
        if trie is None:
            r.bump(r.unregistered, name, first)
            return
        for pointer in dict.fromkeys(unknown_fields(trie, value)):  # once per line
            r.bump(r.fields, (name, pointer), first)

    def result(self) -> dict[str, Any]:
        """The report: ``{"files", "lines", "dialects": {NAME: {...}}}`` (docs/audit.md)."""
        return {
            "files": self.files,
            "lines": self.lines,
            "dialects": {
                d: self._dialects[d].as_dict(registry(d) is not None)
                for d in sorted(self._dialects)
            },
        }


def _normalizer(dialect: Any, reference: bool) -> Any:
    if reference:
        from . import reference as ref

        return ref.Normalizer(dialect)
    from . import Normalizer

    return Normalizer(dialect)


def audit(
    data: bytes | str,
    dialect: Any = "auto",
    *,
    file: str | None = None,
    reference: bool = False,
) -> dict[str, Any]:
    """Audit one stream: record types with counts, unknown record types and fields, error kinds.

    ``file`` names the stream in ``first`` (None by default); ``reference=True`` normalizes with
    the pure-Python twin. See docs/audit.md for the report's shape.
    """
    from . import _as_bytes

    raw = _as_bytes(data)
    a = Auditor()
    n = _normalizer(dialect, reference)
    a.files = 1
    for start in range(0, len(raw), CHUNK):
        a.add(n.feed(raw[start : start + CHUNK]), file)
    a.add(n.finish(), file)
    return a.result()


def expand_paths(paths: Iterable[str], suffixes: tuple[str, ...] | None = None) -> list[str]:
    """Files in the order given; a directory means the files under it by the rule of
    :mod:`checkfu_fast.paths` (``suffixes=None``: every file that is not hidden)."""
    return _paths.expand(paths, suffixes)


def audit_files(
    paths: Iterable[str],
    dialect: Any = "auto",
    *,
    reference: bool = False,
    suffixes: tuple[str, ...] | None = _paths.SUFFIXES,
    progress: Any = None,
) -> tuple[dict[str, Any], list[str]]:
    """Audit files and directories, one file at a time in 1 MiB chunks; ``-`` is stdin.

    Directories are walked by the rule of :mod:`checkfu_fast.paths` (recursive, hidden entries
    skipped, stable sorted order); files found inside one are kept only when their name ends
    with one of ``suffixes`` (default the shared stream suffixes; None keeps all); a file named
    directly is always read. Returns the report and the list of files that could not be read,
    and of directories without any file to read (as ``"name: reason"``). ``progress``: a
    :class:`checkfu_fast.progress.Progress` told of every chunk and file (the CLI's).
    """
    a = Auditor()
    paths = list(paths)
    failed: list[str] = [
        f"{d}: no stream files in it"
        for d in paths
        if d != "-" and os.path.isdir(d) and not _paths.expand([d], suffixes)
    ]
    for name in _paths.expand(paths, suffixes):
        try:
            if name == "-":
                _feed(a, sys.stdin.buffer, name, dialect, reference, progress)
            else:
                with open_input(name) as f:
                    _feed(a, f, name, dialect, reference, progress)
        except OSError as exc:
            failed.append(f"{name}: {exc.strerror or exc}")
            continue
        finally:
            if progress is not None:
                progress.file_done(name)
        a.files += 1
    return a.result(), failed


def _feed(a: Auditor, f: Any, name: str, dialect: Any, reference: bool, progress: Any) -> None:
    n = _normalizer(dialect, reference)
    while chunk := f.read(CHUNK):
        if progress is not None:
            progress.read(len(chunk))
        a.add(n.feed(chunk), name)
    a.add(n.finish(), name)


def has_unknowns(report: dict[str, Any]) -> bool:
    """True when any dialect has an unknown record type, unknown field, unregistered record
    type, or entries that did not fit in the report (``overflow``)."""
    return any(
        d["unknown_records"]
        or d["unknown_fields"]
        or d.get("unregistered_records")
        or d.get("overflow")
        for d in report["dialects"].values()
    )


def _where(first: dict[str, Any]) -> str:
    return f"{first['file'] if first['file'] is not None else '-'}@{first['position']}"


_TITLES = (("framing", "not records"), ("notices", "notices"), ("error_kinds", "error kinds"))


def format_table(report: dict[str, Any]) -> str:
    """The human form of a report."""
    lines = [f"{report['files']} file(s), {report['lines']} line(s)"]
    for name, d in report["dialects"].items():
        note = "" if d["registry"] else " (no known-fields registry: fields not checked)"
        lines.append("")
        lines.append(f"{name}: {d['lines']} line(s){note}")
        lines.append("  records")
        unknown = {u["type"] for u in d["unknown_records"]}
        for t, c in d["records"].items():
            lines.append(f"    {c:7d}  {t}{'  UNKNOWN' if t in unknown else ''}")
        if d["unknown_records"]:
            lines.append("  unknown record types")
            for u in d["unknown_records"]:
                lines.append(f"    {u['count']:7d}  {u['type']}  first {_where(u['first'])}")
        if d["unknown_fields"]:
            lines.append("  unknown fields")
            for u in d["unknown_fields"]:
                where = _where(u["first"])
                lines.append(f"    {u['count']:7d}  {u['record']}  {u['pointer']}  first {where}")
        if d["unregistered_records"]:
            lines.append("  mapped but not in the registry (fields not checked)")
            for u in d["unregistered_records"]:
                lines.append(f"    {u['count']:7d}  {u['type']}  first {_where(u['first'])}")
        if d["overflow"]:
            lines.append(f"  overflow: {d['overflow']} entries did not fit in the report")
        for key, title in _TITLES:
            if d[key]:
                lines.append(f"  {title}: " + ", ".join(f"{k} {v}" for k, v in d[key].items()))
    # record types, pointers and file names come from the input: escaped for the terminal
    return "\n".join(map(printable, lines))


def main(args: Any) -> int:
    """``checkfu-fast audit``: exit 0, or 1 with ``--strict`` when anything is unknown or a file
    could not be read."""
    from . import reference as ref
    from .progress import Progress, wanted

    ref.check_options(args.dialect, 1, 1, 1)
    progress = Progress(_paths.expand(args.files), wanted(getattr(args, "progress", None)))
    try:
        report, failed = audit_files(
            args.files, args.dialect, reference=args.reference, progress=progress
        )
    finally:
        progress.close()
    for f in failed:
        print(f"checkfu-fast: {printable(f)}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(report, ensure_ascii=False, indent=None) + "\n")
    else:
        sys.stdout.write(format_table(report) + "\n")
    sys.stdout.flush()
    if failed:
        return 1
    return 1 if args.strict and has_unknowns(report) else 0
