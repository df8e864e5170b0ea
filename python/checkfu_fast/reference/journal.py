"""Runner journal validation (events schema ``$defs``), pure Python. Mirror of ``rust/journal.rs``.

A journal is JSONL; each line is framed, budgeted and parsed exactly as ``normalize`` does, then
dispatched on its ``kind`` to the ``$defs`` entry whose ``properties.kind.const`` (directly or in
an ``allOf`` branch) names it, and validated with the JSON Schema subset those definitions use:
``type``, ``properties``, ``required``, ``additionalProperties`` (boolean), ``const``, ``enum``,
``minimum``, ``minLength``, ``pattern``, ``format: date-time``, ``items``, ``allOf`` and local
``$ref``. Every violation is reported (docs/journal.md gives the order and the messages).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from .framing import Framer
from .parse import JsonError, parse, scan_budget

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schemas" / "events-v1.schema.json"
BLANK = b" \t\r\n\x0b\x0c"


@dataclass
class Node:
    """One compiled schema node (the keywords above, in evaluation order)."""

    ref: str | None = None
    all_of: list[Node] = field(default_factory=list)
    types: list[str] | None = None
    const: Any = None
    has_const: bool = False
    enum: list[Any] | None = None
    minimum: Any = None
    min_length: int | None = None
    pattern: str | None = None
    pattern_re: re.Pattern[str] | None = None
    date_time: bool = False
    required: list[str] = field(default_factory=list)
    properties: list[tuple[str, Node]] = field(default_factory=list)
    additional: bool | None = None
    items: Node | None = None


def compile_node(s: dict[str, Any]) -> Node:
    n = Node()
    if "$ref" in s:
        n.ref = s["$ref"].rsplit("/", 1)[-1]
    n.all_of = [compile_node(x) for x in s.get("allOf", [])]
    t = s.get("type")
    n.types = (
        None if t is None else [t] if isinstance(t, str) else [x for x in t if isinstance(x, str)]
    )
    if "const" in s:
        n.has_const, n.const = True, s["const"]
    n.enum = s.get("enum")
    n.minimum = s.get("minimum")
    n.min_length = s.get("minLength")
    if "pattern" in s:
        n.pattern = s["pattern"]
        # ECMA-262 `$` is end of input; Python's also matches before a final LF
        n.pattern_re = re.compile(re.sub(r"\$$", r"\\Z", s["pattern"]))
    n.date_time = s.get("format") == "date-time"
    n.required = list(s.get("required", []))
    n.properties = [(k, compile_node(v)) for k, v in s.get("properties", {}).items()]
    if isinstance(s.get("additionalProperties"), bool):
        n.additional = s["additionalProperties"]
    if "items" in s:
        n.items = compile_node(s["items"])
    return n


def _kind_const(s: dict[str, Any]) -> str | None:
    k = s.get("properties", {}).get("kind", {})
    if isinstance(k.get("const"), str):
        return cast(str, k["const"])
    for branch in s.get("allOf", []):
        found = _kind_const(branch)
        if found is not None:
            return found
    return None


@dataclass
class Journal:
    defs: dict[str, Node]
    by_kind: dict[str, str]  # kind -> def name


def load_schema(path: Path = SCHEMA_PATH) -> Journal:
    schema = json.loads(path.read_text(encoding="utf-8"))
    defs = {name: compile_node(s) for name, s in schema["$defs"].items()}
    by_kind = {}
    for name, s in schema["$defs"].items():
        k = _kind_const(s)
        if k is not None:
            by_kind[k] = name
    return Journal(defs, by_kind)


# -- values -----------------------------------------------------------------------------------


def _type_ok(t: str, v: Any) -> bool:
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "null":
        return v is None
    if isinstance(v, bool):
        return False
    if t == "number":
        return isinstance(v, (int, float))
    # integer: any number with no fractional part (1.0 is an integer in JSON Schema)
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def json_equal(a: Any, b: Any) -> bool:
    """JSON Schema equality: numbers by value (1 == 1.0), booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def show(v: Any) -> str:
    """A schema constant in a message (strings quoted, no escaping: schema text is plain)."""
    if isinstance(v, str):
        return f'"{v}"'
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    return str(v)


_DT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"([Zz]|[+-]([0-9]{2}):([0-9]{2}))\Z"
)
_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date_time(s: str) -> bool:
    """RFC 3339 ``date-time`` (offsets up to 23:59); second 60 (a leap second) only where the
    time, with the offset applied, is 23:59 UTC."""
    m = _DT.match(s)
    if m is None:
        return False
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if not 1 <= month <= 12 or hour > 23 or minute > 59 or second > 60:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = 29 if month == 2 and leap else _DAYS[month - 1]
    if not 1 <= day <= days:
        return False
    offset = 0
    if m.group(9) is not None:
        oh, om = int(m.group(9)), int(m.group(10))
        if oh > 23 or om > 59:
            return False
        offset = (oh * 60 + om) * (-1 if m.group(8)[0] == "-" else 1)
    if second == 60:
        return (hour * 60 + minute - offset) % 1440 == 23 * 60 + 59
    return True


# -- validation -------------------------------------------------------------------------------


def _ptr(path: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def validate(
    j: Journal, node: Node, v: Any, path: list[str | int], out: list[tuple[Any, ...]]
) -> None:
    """Append ``(pointer, keyword, message)`` for every violation of ``node`` by ``v``."""
    if node.ref is not None:
        validate(j, j.defs[node.ref], v, path, out)
    for branch in node.all_of:
        validate(j, branch, v, path, out)
    if node.types is not None and not any(_type_ok(t, v) for t in node.types):
        out.append((_ptr(path), "type", f"expected {' or '.join(node.types)}"))
        return
    if node.has_const and not json_equal(v, node.const):
        out.append((_ptr(path), "const", f"must be {show(node.const)}"))
    if node.enum is not None and not any(json_equal(v, e) for e in node.enum):
        choices = ", ".join(show(e) for e in node.enum)
        out.append((_ptr(path), "enum", f"must be one of {choices}"))
    if node.minimum is not None and is_number(v) and v < node.minimum:
        out.append((_ptr(path), "minimum", f"must be >= {show(node.minimum)}"))
    if isinstance(v, str):
        if node.min_length is not None and len(v) < node.min_length:
            out.append(
                (_ptr(path), "minLength", f"must have at least {node.min_length} character(s)")
            )
        if node.pattern_re is not None and node.pattern_re.search(v) is None:
            out.append((_ptr(path), "pattern", f"must match {node.pattern}"))
        if node.date_time and not is_date_time(v):
            out.append((_ptr(path), "format", "must be an RFC 3339 date-time"))
    if isinstance(v, dict):
        for name in node.required:
            if name not in v:
                out.append((_ptr(path), "required", f'missing required property "{name}"'))
        declared = set()
        for name, sub in node.properties:
            declared.add(name)
            if name in v:
                validate(j, sub, v[name], [*path, name], out)
        if node.additional is False:
            for name in v:
                if name not in declared:
                    out.append(
                        (_ptr([*path, name]), "additionalProperties", "property not allowed")
                    )
    if isinstance(v, list) and node.items is not None:
        for i, item in enumerate(v):
            validate(j, node.items, item, [*path, i], out)


def is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# -- the journal pass -------------------------------------------------------------------------


def _violation(
    line: int, position: int, kind: Any, pointer: str, keyword: str, message: str
) -> dict[str, Any]:
    return {
        "line": line,
        "position": position,
        "kind": kind,
        "pointer": pointer,
        "keyword": keyword,
        "message": message,
    }


def check_record(
    j: Journal,
    data: bytes,
    line: int,
    position: int,
    total: int | None,
    budgets: tuple[int, int, int],
) -> list[dict[str, Any]]:
    """Violations of one framed line (empty when it is a valid record)."""
    max_line_bytes, max_depth, max_nodes = budgets
    if total is not None:
        return [
            _violation(
                line,
                position,
                None,
                "",
                "line_too_long",
                f"line of {total} bytes exceeds max_line_bytes ({max_line_bytes})",
            )
        ]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [
            _violation(
                line, position, None, "", "invalid_utf8", f"invalid UTF-8 at byte {exc.start}"
            )
        ]
    over = (
        scan_budget(data, max_depth, max_nodes) if data.lstrip(BLANK)[:1] in (b"{", b"[") else None
    )
    if over is not None:
        limit = max_depth if over == "too_deep" else max_nodes
        what = (
            "nesting depth exceeds max_depth"
            if over == "too_deep"
            else "node count exceeds max_nodes"
        )
        return [_violation(line, position, None, "", over, f"{what} ({limit})")]
    try:
        value, _ = parse(data, text)
    except JsonError as exc:
        return [
            _violation(
                line,
                position,
                None,
                "",
                "invalid_json",
                f"{exc.message} at column {exc.offset + 1}",
            )
        ]
    if not isinstance(value, dict):
        return [_violation(line, position, None, "", "type", "a record must be an object")]
    kind = value.get("kind")
    if not isinstance(kind, str):
        return [_violation(line, position, None, "/kind", "kind", 'a record needs a string "kind"')]
    name = j.by_kind.get(kind)
    if name is None:
        return [_violation(line, position, kind, "/kind", "unknown_kind", f'unknown kind "{kind}"')]
    out: list[tuple[Any, ...]] = []
    validate(j, j.defs[name], value, [], out)
    return [_violation(line, position, kind, p, k, m) for p, k, m in out]


_JOURNAL: Journal | None = None


def journal() -> Journal:
    global _JOURNAL  # an immutable cache of the compiled schema
    if _JOURNAL is None:
        _JOURNAL = load_schema()
    return _JOURNAL


def lines(data: bytes, max_line_bytes: int) -> Iterator[tuple[int, int, bytes, int | None]]:
    """``(line_number, position, bytes, total)`` for every non-blank line (1-based numbers)."""
    f = Framer(max_line_bytes)
    number = 0
    for ln in [*f.feed(data), *f.finish()]:
        number += 1
        if ln.total is None and not ln.data.strip(BLANK):
            continue
        yield number, ln.position, ln.data, ln.total


def validate_journal(
    data: bytes,
    *,
    max_line_bytes: int = 64 << 20,
    max_depth: int = 64,
    max_nodes: int = 1_000_000,
) -> list[dict[str, Any]]:
    """Every violation in a runner journal, in line order (empty for a valid journal)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    j = journal()
    budgets = (max_line_bytes, max_depth, max_nodes)
    out: list[dict[str, Any]] = []
    for number, position, raw, total in lines(data, max_line_bytes):
        out += check_record(j, raw, number, position, total, budgets)
    return out
