"""Pure-Python reference implementation of the events/v1 normalizer (stdlib only).

This is the executable specification and the benchmark baseline: ``checkfu_fast.normalize`` (the
Rust core) must return exactly what :func:`normalize` here returns, for every input. It never
imports the native module.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from typing import Any

from .. import options as _options
from ..options import _LINE_HEAD, _LINE_ORDER, _ORDER, EVENT_FIELDS
from ..options import ALWAYS_FIELDS as ALWAYS_FIELDS
from ..options import TREE_FIELDS as TREE_FIELDS
from ..options import resolve_fields as resolve_fields
from .dialects import DIALECTS, IMPLEMENTED, MappedDialect, load_dialect
from .events import Event, classify_tools
from .framing import Framer, Line, WideStream
from .journal import validate_journal
from .parse import JsonError, parse, scan_budget
from .sniff import AUTO_HOLD_BYTES, AUTO_HOLD_LINES, FALLBACK, sniff, tentative

__all__ = [
    "DIALECTS",
    "EVENT_FIELDS",
    "MappedDialect",
    "Normalizer",
    "check_options",
    "dumps_jsonl",
    "load_dialect",
    "normalize",
    "normalize_jsonl",
    "validate_journal",
]

V = "events/v1"
BLANK = b" \t\r\n\x0b\x0c"
JSON_WS = b" \t\r\n"


def project(ev: Event, size: int, keep: tuple[str, ...]) -> Event:
    """The projection of a full event: the fields of ``keep`` in output order, ``lineBytes``
    (the line's length in bytes when the event does not give it) on every event."""
    out: Event = {}
    for k in keep:
        if k == "lineBytes":
            out[k] = ev.get(k, size)
        elif k in ev:
            out[k] = ev[k]
    return out


def check_options(
    dialect: str | MappedDialect, max_line_bytes: int, max_depth: int, max_nodes: int
) -> None:
    """Validate arguments exactly as the native module does (same exceptions, same text)."""
    _options.check_options(dialect, max_line_bytes, max_depth, max_nodes, IMPLEMENTED)


_FAILED = "the Normalizer ran out of memory earlier; its stream state is lost"


class Normalizer:
    """Incremental normalizer: ``feed`` chunks, then ``finish``. Any chunking, same events.

    Safe to share between threads, as the native one: calls are serialized by a lock, so each
    chunk is framed whole, in the order the calls got the lock. After a ``MemoryError`` every
    later call raises ``ValueError``. ``collapse_junk``: as the native one (docs/events.md,
    "Collapsed junk"), the lines left out counted in ``collapsed_lines``.
    """

    def __init__(
        self,
        dialect: str | MappedDialect = "auto",
        *,
        max_line_bytes: int = 64 << 20,
        max_depth: int = 64,
        max_nodes: int = 1_000_000,
        fields: Any = None,
        collapse_junk: bool = False,
    ) -> None:
        check_options(dialect, max_line_bytes, max_depth, max_nodes)
        self._keep = resolve_fields(fields)
        self._dialect: Any = None if dialect == "auto" else _resolve(dialect)
        self._max_line_bytes = max_line_bytes
        self._max_depth = max_depth
        self._max_nodes = max_nodes
        self._framer = Framer(max_line_bytes, detect_wide=True)
        self._held: list[Prepared] = []  # auto: lines seen before a decisive one
        self._tentative: str | None = None  # auto: the first held line's suggestion
        self._held_bytes = 0
        self._seq = 0
        self._finished = False
        self._failed = False
        self._lock = threading.Lock()
        self._collapse = bool(collapse_junk)
        self._junk_seen: set[str] = set()  # the junk kinds the current run gave an event for
        self.collapsed_lines = 0
        # the dialect's per-stream state (rust/dialect.rs Context): its ``learn`` updates it from
        # each object line before ``map_in`` maps the line with it
        self._context: dict[str, Any] = {}

    def feed(self, chunk: bytes) -> list[Event]:
        if not isinstance(chunk, (bytes, bytearray, memoryview)):
            raise TypeError("chunk must be bytes")
        with self._lock:
            if self._failed:
                raise ValueError(_FAILED)
            if self._finished:
                raise ValueError("feed() after finish()")
            try:
                return self._lines(self._framer.feed(bytes(chunk)), final=False)
            except MemoryError:
                self._failed = True
                raise

    def finish(self) -> list[Event]:
        with self._lock:
            if self._failed:
                raise ValueError(_FAILED)
            try:
                return self._finish()
            except MemoryError:
                self._failed = True
                raise

    def _finish(self) -> list[Event]:
        if self._finished:
            return []
        self._finished = True
        out = self._lines(self._framer.finish(), final=True)
        wide = self._framer.wide
        if wide is not None:
            # a UTF-16/UTF-32 stream gave no lines: its one event ends the stream; `auto`
            # settles on the fallback dialect without announcing it
            if self._dialect is None:
                self._dialect = _resolve(FALLBACK)
            self._push(_stream_error(wide, self._dialect.NAME), out, wide.bytes)
        return out

    def _lines(self, lines: Iterable[Line], final: bool) -> list[Event]:
        out: list[Event] = []
        for line in lines:
            p = self._prepare(line)
            if p is None:
                continue
            if self._dialect is None:
                self._hold(p, out)
            else:
                self._emit(p, out)
        if final and self._dialect is None and self._held:
            self._undecided(out)
        return out

    def _undecided(self, out: list[Event]) -> None:
        """No held line decided: the first tentative tell, else the announced fallback."""
        if self._tentative is not None:
            self._decide(self._tentative, out, fallback=False)
        else:
            self._decide(FALLBACK, out, fallback=True)

    def _hold(self, p: Prepared, out: list[Event]) -> None:
        decided = sniff(p.value) if p.ok else None
        if self._tentative is None and p.ok:
            self._tentative = tentative(p.value)
        self._held.append(p)
        self._held_bytes += p.size
        if decided is not None:
            self._decide(decided, out, fallback=False)
        elif len(self._held) >= AUTO_HOLD_LINES or self._held_bytes >= AUTO_HOLD_BYTES:
            self._undecided(out)

    def _decide(self, dialect: str, out: list[Event], fallback: bool) -> None:
        self._dialect = _resolve(dialect)
        held, self._held, self._held_bytes = self._held, [], 0
        if fallback:
            first = held[0]
            text = (
                f"no decisive line among the first {len(held)}; "
                f"normalizing as the {dialect}-compatible shape"
            )
            self._push(
                _finish(
                    first.position,
                    dialect,
                    {"kind": "status", "subtype": "dialect_fallback", "text": text},
                    first.raw,
                    first.value if first.ok else None,
                ),
                out,
                first.size,
            )
        for p in held:
            self._emit(p, out)

    def _push(self, ev: Event, out: list[Event], size: int) -> None:
        ev["seq"] = self._seq
        self._seq += 1
        out.append(ev if self._keep is None else project(ev, size, self._keep))

    def _collapsed(self, p: Prepared) -> bool:
        """``collapse_junk``: whether ``p`` repeats a junk kind of the current run (a line
        that is not a JSON object: its framing event's subtype, or a scalar); an object line
        ends the run."""
        if p.event is not None:
            kind = p.event["subtype"]
        elif not isinstance(p.value, dict):
            kind = "scalar"
        else:
            self._junk_seen.clear()
            return False
        if kind in self._junk_seen:
            self.collapsed_lines += 1
            return True
        self._junk_seen.add(kind)
        return False

    def _emit(self, p: Prepared, out: list[Event]) -> None:
        if self._collapse and self._collapsed(p):
            return
        module = self._dialect
        dialect = module.NAME
        if p.event is not None:
            self._push(_finish(p.position, dialect, p.event, p.raw, None), out, p.size)
            return
        value = p.value
        extra: dict[str, Any] = {"repairedSurrogates": p.repairs} if p.repairs else {}
        if not isinstance(value, dict):
            self._push(_finish(p.position, dialect, UNKNOWN, p.raw, value, extra), out, p.size)
            return
        learn = getattr(module, "learn", None)
        if learn is not None:
            learn(value, self._context)
        map_in = getattr(module, "map_in", None)
        events = (
            map_in(value, self._context) if map_in is not None else module.map_line(value)
        ) or [UNKNOWN]
        classify_tools(events)
        m = module.meta(value)
        line_meta = {k: m[k] for k in _LINE_HEAD if k in m}
        line_meta.update(
            (k, x) for k, x in m.items() if k not in _LINE_ORDER and k not in _LINE_HEAD
        )
        nt = module.native_type(value) if hasattr(module, "native_type") else value.get("type")
        if isinstance(nt, str):
            line_meta["nativeType"] = nt
        for k in _LINE_ORDER:
            if k in m:
                line_meta[k] = m[k]
        line_meta.update(extra)
        for ev in events:
            self._push(_finish(p.position, dialect, ev, p.raw, value, line_meta), out, p.size)

    def _prepare(self, line: Line) -> Prepared | None:
        """Framing-level outcome of one line: None (blank), an error/non_json event, or a value."""
        data = line.data
        if line.total is not None:
            raw = _cut_utf8(data).decode("utf-8", "replace")
            message = (
                f"line of {line.total} bytes exceeds max_line_bytes ({self._max_line_bytes}); "
                f"raw holds its first {len(raw.encode())} bytes"
            )
            ev = _error("line_too_long", message)
            ev["truncated"] = True
            ev["lineBytes"] = line.total
            return Prepared(line.position, size=len(data), raw=raw, event=ev)
        if not data.strip(BLANK):
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raw = data.decode("utf-8", "replace")
            return Prepared(
                line.position,
                size=len(data),
                raw=raw,
                event=_error("invalid_utf8", f"invalid UTF-8 at byte {exc.start}"),
            )
        if data.lstrip(BLANK)[:1] in (b"{", b"["):
            over = scan_budget(data, self._max_depth, self._max_nodes)
            if over == "too_deep":
                message = f"nesting depth exceeds max_depth ({self._max_depth})"
                return Prepared(
                    line.position, size=len(data), raw=text, event=_error(over, message)
                )
            if over == "too_many_nodes":
                message = f"node count exceeds max_nodes ({self._max_nodes})"
                return Prepared(
                    line.position, size=len(data), raw=text, event=_error(over, message)
                )
            try:
                value, repairs = parse(data, text)
            except JsonError as exc:
                message = f"{exc.message} at column {exc.offset + 1}"
                return Prepared(
                    line.position, size=len(data), raw=text, event=_error("invalid_json", message)
                )
        else:
            try:
                value, repairs = parse(data, text)
            except JsonError:
                return Prepared(
                    line.position,
                    size=len(data),
                    raw=text,
                    event={"kind": "status", "subtype": "non_json", "text": text},
                )
        return Prepared(
            line.position, size=len(data), raw=text, value=value, repairs=repairs, ok=True
        )


def _resolve(dialect: str | MappedDialect) -> Any:
    return dialect if isinstance(dialect, MappedDialect) else IMPLEMENTED[dialect]


class Prepared:
    """A framed, checked and parsed line, before dialect mapping."""

    __slots__ = ("event", "ok", "position", "raw", "repairs", "size", "value")

    def __init__(
        self,
        position: int,
        raw: str,
        *,
        event: Event | None = None,
        value: Any = None,
        repairs: int = 0,
        ok: bool = False,
        size: int = 0,
    ) -> None:
        self.position = position
        self.size = size
        self.raw = raw
        self.event = event
        self.value = value
        self.repairs = repairs
        self.ok = ok


UNKNOWN: Event = {"kind": "status", "subtype": "unknown"}


def _error(code: str, message: str) -> Event:
    return {
        "kind": "error",
        "subtype": code,
        "error": {"code": code, "message": message, "errorKind": "semantic"},
    }


def _stream_error(w: WideStream, dialect: str) -> Event:
    """The one ``error/stream_is_utf16`` event of a UTF-16/UTF-32 stream."""
    family, order = w.encoding[:-2], w.encoding[-2:]
    bom = "BOM" if w.bom else "no BOM"
    message = (
        f"stream is {family} ({order}, {bom}); checkfu reads UTF-8 JSONL: re-encode the input "
        f"as UTF-8 ({w.bytes} bytes skipped)"
    )
    ev = _error("stream_is_utf16", message)
    ev["encoding"] = w.encoding
    ev["streamBytes"] = w.bytes
    return _finish(0, dialect, ev, w.raw(), None)


def _cut_utf8(data: bytes) -> bytes:
    """Drop an incomplete UTF-8 sequence at the end of a cut prefix."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b < 0x80:
            return data
        if b >= 0xC0:
            need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
            return data if back >= need else data[:-back]
    return data


def _finish(
    position: int,
    dialect: str,
    ev: Event,
    raw: str,
    parsed: Any,
    extra: dict[str, Any] | None = None,
) -> Event:
    out: Event = {
        "v": V,
        "seq": 0,
        "position": position,
        "dialect": dialect,
        "kind": ev["kind"],
        "subtype": ev["subtype"],
    }
    for key in _ORDER:
        if key in ev:
            out[key] = ev[key]
    if extra:
        out.update(extra)
    out["raw"] = raw
    out["parsed"] = parsed
    return out


def normalize(
    data: bytes | str,
    dialect: str | MappedDialect = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: Any = None,
) -> list[Event]:
    """Normalize a whole stream to events/v1 events (plain dicts); ``fields`` picks the fields
    (:func:`resolve_fields`)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    n = Normalizer(
        dialect,
        max_line_bytes=max_line_bytes,
        max_depth=max_depth,
        max_nodes=max_nodes,
        fields=fields,
    )
    return n.feed(data) + n.finish()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_texts(ev: Event) -> Event:
    """A projected event as its JSONL writes it: each tree (:data:`TREE_FIELDS`,
    ``tool.arguments``) the JSON text of its value."""
    out = {k: _dumps(v) if k in TREE_FIELDS else v for k, v in ev.items()}
    tool = out.get("tool")
    if isinstance(tool, dict) and "arguments" in tool:
        out["tool"] = {k: _dumps(v) if k == "arguments" else v for k, v in tool.items()}
    return out


def dumps_jsonl(events: Iterable[Event], *, projected: bool = False) -> bytes:
    """Events as JSONL: ``json.dumps`` with compact separators and ``ensure_ascii=False``, UTF-8,
    one LF-terminated line per event. ``checkfu_fast.normalize_jsonl`` writes these bytes.
    ``projected`` (events of a projection): trees as JSON text (:func:`_json_texts`)."""
    return b"".join(
        _dumps(_json_texts(ev) if projected else ev).encode("utf-8") + b"\n" for ev in events
    )


def normalize_jsonl(
    data: bytes | str,
    dialect: str | MappedDialect = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
    fields: Any = None,
) -> bytes:
    """:func:`normalize` as JSONL bytes (:func:`dumps_jsonl` of the events)."""
    events = normalize(
        data,
        dialect,
        max_line_bytes=max_line_bytes,
        max_depth=max_depth,
        max_nodes=max_nodes,
        fields=fields,
    )
    return dumps_jsonl(events, projected=resolve_fields(fields) is not None)
