"""An orjson + Python-budget-walk normalizer, for context in the benchmarks.

The same pipeline as ``checkfu_fast.reference`` (framing with the reference ``Framer``, ``auto``
sniffing and holding, the reference dialect mappings, events assembled with the reference
``_finish``), but the happy path of each line is "decode UTF-8, ``orjson.loads``, walk the
resulting Python object to check ``max_depth`` / ``max_nodes``" instead of the reference's
lexical budget scan + stdlib decoder + surrogate scan.

Any line that is not a plain object/array orjson accepts (invalid JSON, scalars, non-JSON text,
lone surrogate escapes, integers beyond 64 bits, a budget overrun, over-long lines...) is
handed to the reference's own ``Normalizer._prepare``, so the events are the reference's there
too. Known difference from the reference on hostile input: orjson turns an integer outside the
64-bit range into a float (``123456789012345678901234567890`` -> ``1.2345678901234568e+29``)
where the reference keeps it exact; catching that would need a digit-run scan of every line, and
the benchmark corpus has no such integers. Other possible corners: orjson's recursion limit
(1024, above our max_depth cap of 512). On the generated benchmark corpus and on the real
samples the events are identical (checked in the bench).

This is what "the obvious fast pure-Python implementation" would look like; the native core
should beat it, not only the reference.
"""

from __future__ import annotations

from typing import Any

import orjson

from checkfu_fast.reference import _LINE_HEAD, _LINE_ORDER, UNKNOWN, _finish, check_options
from checkfu_fast.reference import Normalizer as _RefNormalizer
from checkfu_fast.reference.dialects import IMPLEMENTED
from checkfu_fast.reference.events import classify_tools
from checkfu_fast.reference.framing import Framer
from checkfu_fast.reference.sniff import AUTO_HOLD_BYTES, AUTO_HOLD_LINES, FALLBACK, sniff

__all__ = ["normalize", "over_budget"]

_BLANK = b" \t\r\n\x0b\x0c"
_CONTAINERS = (dict, list)


def over_budget(value: Any, max_depth: int, max_nodes: int) -> str | None:
    """``"too_deep"`` / ``"too_many_nodes"`` for a parsed value, counting like scan_budget.

    A node is a container, a string (object keys included) or a scalar.
    """
    if type(value) not in _CONTAINERS:
        return None
    nodes = 0
    stack = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        v, depth = pop()
        if depth > max_depth:
            return "too_deep"
        if type(v) is dict:
            nodes += 1 + len(v)  # the object and its keys
            items = v.values()
        else:
            nodes += 1
            items = v
        for x in items:
            if type(x) in _CONTAINERS:
                push((x, depth + 1))
            else:
                nodes += 1
        if nodes > max_nodes:
            return "too_many_nodes"
    return None


class _Slow:
    """A line that takes the reference's path (``Prepared`` from the reference)."""

    __slots__ = ("p",)

    def __init__(self, p: Any) -> None:
        self.p = p


def normalize(
    data: bytes,
    dialect: str = "auto",
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> list[dict[str, Any]]:
    check_options(dialect, max_line_bytes, max_depth, max_nodes)
    # A reference normalizer only for its _prepare (the slow path); never fed.
    ref = _RefNormalizer(
        dialect, max_line_bytes=max_line_bytes, max_depth=max_depth, max_nodes=max_nodes
    )
    framer = Framer(max_line_bytes)
    lines = [*framer.feed(bytes(data)), *framer.finish()]

    out: list[dict[str, Any]] = []
    chosen: str | None = None if dialect == "auto" else dialect
    held: list[tuple[int, str, Any, int, Any]] = []  # (position, raw, value, size, slow)
    held_bytes = 0

    def emit(position: int, raw: str, value: Any, slow: Any) -> None:
        d = chosen or FALLBACK
        if slow is not None:
            if slow.event is not None:
                out.append(_finish(position, d, slow.event, raw, None))
                return
            value = slow.value
            extra: dict[str, Any] = {"repairedSurrogates": slow.repairs} if slow.repairs else {}
        else:
            extra = {}
        if not isinstance(value, dict):
            out.append(_finish(position, d, UNKNOWN, raw, value, extra))
            return
        module = IMPLEMENTED[d]
        events = module.map_line(value) or [UNKNOWN]
        classify_tools(events)  # the reference's generic pass after the dialect
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
            out.append(_finish(position, d, ev, raw, value, line_meta))

    def decide(d: str, fallback: bool) -> None:
        nonlocal chosen, held, held_bytes
        chosen = d
        todo, held, held_bytes = held, [], 0
        if fallback:
            position, raw, value, _size, slow = todo[0]
            ok = slow is None or slow.ok
            text = (
                f"no decisive line among the first {len(todo)}; "
                f"normalizing as the {d}-compatible shape"
            )
            parsed = (value if slow is None else slow.value) if ok else None
            out.append(
                _finish(
                    position,
                    d,
                    {"kind": "status", "subtype": "dialect_fallback", "text": text},
                    raw,
                    parsed,
                )
            )
        for position, raw, value, _size, slow in todo:
            emit(position, raw, value, slow)

    loads = orjson.loads
    JSONDecodeError = orjson.JSONDecodeError
    for line in lines:
        b = line.data
        value: Any = None
        slow: Any = None
        raw = ""
        if line.total is None and b[:1] in (b"{", b"["):
            try:
                raw = b.decode("utf-8")
                value = loads(b)
            except (UnicodeDecodeError, JSONDecodeError):
                slow = ref._prepare(line)
            else:
                if over_budget(value, max_depth, max_nodes) is not None:
                    slow = ref._prepare(line)
        else:
            slow = ref._prepare(line)
            if slow is None:  # blank line
                continue
        if slow is not None:
            raw = slow.raw
        if chosen is None:
            ok = slow is None or slow.ok
            d = sniff(value if slow is None else slow.value) if ok else None
            held.append((line.position, raw, value, len(b), slow))
            held_bytes += len(b)
            if d is not None:
                decide(d, fallback=False)
            elif len(held) >= AUTO_HOLD_LINES or held_bytes >= AUTO_HOLD_BYTES:
                decide(FALLBACK, fallback=True)
        else:
            emit(line.position, raw, value, slow)
    if chosen is None and held:
        decide(FALLBACK, fallback=True)
    for seq, ev in enumerate(out):
        ev["seq"] = seq
    return out
