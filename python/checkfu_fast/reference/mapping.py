"""Declarative dialect mappings (``checkfu-dialect/v1``): load, validate, evaluate.

Mirror of ``rust/mapping.rs``. The language is documented in docs/mappings.md; in short a file is

    {"checkfu_dialect": 1, "dialect": "<one of the nine names>", "description": "...",
     "sniff": [COND, ...], "meta": {"sessionId": STR, "nativeType": STR},
     "rules": [{"match": COND, "emit": [EMIT, ...]}, ...]}

COND is ``{"<json pointer>": TEST, ...}`` (all must hold). The first rule whose ``match`` holds
maps the line; its EMITs whose ``when`` holds each give one event.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import MappingError
from .events import Event, classify, kind_for_status, nonneg_int, usage
from .retry import retry_fields

FORMAT_KEY = "checkfu_dialect"
KINDS = ("message", "tool_call", "status", "error", "usage")
TYPES = ("string", "number", "integer", "boolean", "null", "object", "array")
ERROR_KINDS = ("quota", "transport", "semantic")
SCOPES = ("message", "turn", "cumulative")
ROLES = ("assistant", "user", "system", "tool")
_MISSING = object()


# -- pointers ---------------------------------------------------------------------------------


def parse_pointer(text: str, where: str) -> tuple[str, ...]:
    if text == "":
        return ()
    if not text.startswith("/"):
        raise MappingError(f"{where}: JSON pointer must start with '/': {text!r}")
    parts = []
    for raw in text[1:].split("/"):
        if "~" in raw.replace("~0", "").replace("~1", ""):
            raise MappingError(f"{where}: bad '~' escape in JSON pointer {text!r}")
        parts.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(parts)


def resolve(v: Any, ptr: tuple[str, ...]) -> Any:
    """The value at ``ptr`` or ``_MISSING``. Array tokens are decimal indices without sign."""
    for tok in ptr:
        if isinstance(v, dict):
            if tok not in v:
                return _MISSING
            v = v[tok]
        elif isinstance(v, list):
            if not tok.isascii() or not tok.isdigit() or (len(tok) > 1 and tok[0] == "0"):
                return _MISSING
            i = int(tok)
            if i >= len(v):
                return _MISSING
            v = v[i]
        else:
            return _MISSING
    return v


# -- compiled forms ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Test:
    op: str  # eq ne in prefix exists type
    arg: Any


@dataclass(frozen=True)
class Cond:
    tests: tuple[tuple[tuple[str, ...], Test], ...]


@dataclass(frozen=True)
class Str:
    """A string-valued field: pointers and constants tried in order; first non-empty string."""

    alts: tuple[tuple[str, Any], ...]  # ("ptr", pointer) | ("const", str)


@dataclass(frozen=True)
class Emit:
    kind: str
    subtype: str
    role: str | None = None
    when: Cond | None = None
    text: Str | None = None
    delta: bool = False
    message_id: Str | None = None
    tool_name: Str | None = None
    tool_args: tuple[str, ...] | None = None
    tool_id: Str | None = None
    tool_is_error: tuple[str, ...] | None = None
    err_code: Str | None = None
    err_message: Str | None = None
    err_kind: str = "classify"
    err_by: tuple[str, ...] | None = None
    err_map: tuple[tuple[str, str], ...] = ()
    err_status: tuple[str, ...] | None = None
    usage_in: tuple[tuple[str, ...], ...] = ()
    usage_out: tuple[tuple[str, ...], ...] = ()
    usage_cached: tuple[str, ...] | None = None
    usage_cost: tuple[str, ...] | None = None
    usage_model: Str | None = None
    # the oneshot extras (docs/events.md)
    tool_result: tuple[str, ...] | None = None
    tool_class: str | None = None
    provider_name: Str | None = None
    provider_args: tuple[str, ...] | None = None
    tokens: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    file_change: tuple[Str, Str] | None = None
    subagent: tuple[Any, ...] | None = None  # (id, phase, name, type, description, disposition)
    retry: bool = False
    delta_only: bool = False
    empty_result: bool = False
    answer: bool = False


@dataclass(frozen=True)
class Rule:
    match: Cond
    emits: tuple[Emit, ...]


@dataclass(frozen=True)
class Mapping:
    dialect: str
    description: str
    sniff: tuple[Cond, ...]
    rules: tuple[Rule, ...]
    session_id: Str | None = None
    native_type: Str | None = None
    line: tuple[tuple[str, Any], ...] = ()  # the line extras: (field, Str | pointers | Cond)
    source: str = field(default="", compare=False)


# -- loading and validation -------------------------------------------------------------------


def _is_literal(x: Any) -> bool:
    return x is None or isinstance(x, (str, bool)) or (type(x) is int)


def _obj(
    x: Any, where: str, allowed: tuple[str, ...], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise MappingError(f"{where}: expected an object")
    for k in x:
        if k not in allowed:
            raise MappingError(f"{where}: unknown key {k!r} (allowed: {', '.join(allowed)})")
    for k in required:
        if k not in x:
            raise MappingError(f"{where}: missing required key {k!r}")
    return x


def _test(x: Any, where: str) -> Test:
    if _is_literal(x):
        return Test("eq", x)
    if not isinstance(x, dict) or len(x) != 1:
        raise MappingError(
            f"{where}: a test is a literal or an object with exactly one of "
            "eq, ne, in, prefix, exists, type"
        )
    ((op, arg),) = x.items()
    if op in ("eq", "ne"):
        if not _is_literal(arg):
            raise MappingError(f"{where}/{op}: expected a string, integer, boolean or null")
    elif op == "in":
        if not isinstance(arg, list) or not arg or not all(_is_literal(a) for a in arg):
            raise MappingError(f"{where}/in: expected a non-empty list of literals")
        arg = tuple(arg)
    elif op == "prefix":
        if not isinstance(arg, str):
            raise MappingError(f"{where}/prefix: expected a string")
    elif op == "exists":
        if not isinstance(arg, bool):
            raise MappingError(f"{where}/exists: expected true or false")
    elif op == "type":
        if arg not in TYPES:
            raise MappingError(f"{where}/type: expected one of {', '.join(TYPES)}")
    else:
        raise MappingError(f"{where}: unknown test {op!r} (eq, ne, in, prefix, exists, type)")
    return Test(op, arg)


def _cond(x: Any, where: str) -> Cond:
    if not isinstance(x, dict):
        raise MappingError(f"{where}: expected an object of JSON pointer -> test")
    tests = []
    for ptr, t in x.items():
        p = parse_pointer(ptr, f"{where}")
        tests.append((p, _test(t, f"{where}/{_esc(ptr)}")))
    return Cond(tuple(tests))


def _esc(ptr: str) -> str:
    return ptr.replace("~", "~0").replace("/", "~1")


def _str(x: Any, where: str, pointers_only: bool = False) -> Str:
    items = x if isinstance(x, list) else [x]
    if not items:
        raise MappingError(f"{where}: expected a string spec, not an empty list")
    alts: list[tuple[str, Any]] = []
    for i, it in enumerate(items):
        w = f"{where}/{i}" if isinstance(x, list) else where
        if pointers_only and not (isinstance(it, str) and it.startswith("/")):
            raise MappingError(f'{w}: expected a JSON pointer ("/a/b") or a list of them')
        if isinstance(it, str):
            alts.append(("ptr", parse_pointer(it, w)) if it.startswith("/") else ("const", it))
        elif (
            isinstance(it, dict) and len(it) == 1 and "const" in it and isinstance(it["const"], str)
        ):
            alts.append(("const", it["const"]))
        else:
            raise MappingError(
                f'{w}: a string spec is a JSON pointer ("/a/b"), a constant, '
                '{"const": "..."} or a list of those'
            )
    return Str(tuple(alts))


def _ptr(x: Any, where: str) -> tuple[str, ...]:
    if not isinstance(x, str):
        raise MappingError(f"{where}: expected a JSON pointer string")
    return parse_pointer(x, where)


def _ptrs(x: Any, where: str) -> tuple[tuple[str, ...], ...]:
    items = x if isinstance(x, list) else [x]
    return tuple(
        _ptr(p, f"{where}/{i}" if isinstance(x, list) else where) for i, p in enumerate(items)
    )


_EMIT_KEYS = (
    "kind",
    "subtype",
    "role",
    "when",
    "text",
    "delta",
    "messageId",
    "tool",
    "error",
    "usage",
    "toolResult",
    "toolClass",
    "providerToolName",
    "providerArguments",
    "compaction",
    "fileChange",
    "subagent",
    "retry",
    "deltaOnly",
    "emptyResult",
    "answer",
)
TOOL_CLASSES = ("shell", "filesystem", "mcp")
PHASES = ("spawned", "started", "ended")
FILE_EVENTS = ("create", "modify", "delete")
DISPOSITIONS = ("completed", "failed", "canceled")
# meta: line extras that are strings from the line, integers, any value, or a condition
_META_STRINGS = ("timestamp", "modelCallId", "nativeId", "stopReason", "resultText")
_META_FLAGS = ("partial", "repeatsError", "resultJoinsMessages")
_META_KEYS: tuple[str, ...] = (
    "sessionId",
    "nativeType",
    *_META_STRINGS,
    "durationMs",
    "structuredOutput",
)
_META_KEYS += _META_FLAGS


def _extras(e: dict[str, Any], where: str, args: dict[str, Any]) -> None:
    """The oneshot extras of an EMIT (docs/mappings.md)."""
    flags = (("retry", "retry"), ("deltaOnly", "delta_only"), ("emptyResult", "empty_result"))
    for key, name in (*flags, ("answer", "answer")):
        if key in e:
            if not isinstance(e[key], bool):
                raise MappingError(f"{where}/{key}: expected true or false")
            args[name] = e[key]
    if "toolResult" in e:
        args["tool_result"] = _ptr(e["toolResult"], f"{where}/toolResult")
    if "toolClass" in e:
        if e["toolClass"] not in TOOL_CLASSES:
            raise MappingError(f"{where}/toolClass: expected one of {', '.join(TOOL_CLASSES)}")
        args["tool_class"] = e["toolClass"]
    if "providerToolName" in e:
        args["provider_name"] = _str(e["providerToolName"], f"{where}/providerToolName")
    if "providerArguments" in e:
        args["provider_args"] = _ptr(e["providerArguments"], f"{where}/providerArguments")
    if "compaction" in e:
        c = _obj(e["compaction"], f"{where}/compaction", ("before", "after"), ("before", "after"))
        args["tokens"] = (
            _ptr(c["before"], f"{where}/compaction/before"),
            _ptr(c["after"], f"{where}/compaction/after"),
        )
    if "fileChange" in e:
        f = _obj(e["fileChange"], f"{where}/fileChange", ("event", "path"), ("event", "path"))
        args["file_change"] = (
            _str(f["event"], f"{where}/fileChange/event"),
            _str(f["path"], f"{where}/fileChange/path"),
        )
    if "subagent" in e:
        w = f"{where}/subagent"
        keys = ("id", "phase", "name", "type", "description", "disposition")
        sa = _obj(e["subagent"], w, keys, ("id", "phase"))
        if sa["phase"] not in PHASES:
            raise MappingError(f"{w}/phase: expected one of {', '.join(PHASES)}")
        opt = [_str(sa[k], f"{w}/{k}") if k in sa else None for k in keys[2:]]
        args["subagent"] = (_str(sa["id"], f"{w}/id", pointers_only=True), sa["phase"], *opt)


def _emit(x: Any, where: str) -> Emit:
    e = _obj(x, where, _EMIT_KEYS, ("kind", "subtype"))
    kind = e["kind"]
    if kind not in KINDS:
        raise MappingError(f"{where}/kind: expected one of {', '.join(KINDS)}")
    if not isinstance(e["subtype"], str) or not e["subtype"]:
        raise MappingError(f"{where}/subtype: expected a non-empty string")
    args: dict[str, Any] = {"kind": kind, "subtype": e["subtype"]}
    if "role" in e:
        if e["role"] not in ROLES:
            raise MappingError(f"{where}/role: expected one of {', '.join(ROLES)}")
        args["role"] = e["role"]
    if "when" in e:
        args["when"] = _cond(e["when"], f"{where}/when")
    if "text" in e:
        args["text"] = _str(e["text"], f"{where}/text")
    elif kind == "message":
        raise MappingError(f'{where}: a message needs "text"')
    if "delta" in e:
        if not isinstance(e["delta"], bool):
            raise MappingError(f"{where}/delta: expected true or false")
        args["delta"] = e["delta"]
    if "messageId" in e:
        args["message_id"] = _str(e["messageId"], f"{where}/messageId", pointers_only=True)
    if "tool" in e:
        t = _obj(e["tool"], f"{where}/tool", ("name", "arguments", "id", "isError"), ("name",))
        args["tool_name"] = _str(t["name"], f"{where}/tool/name")
        if "arguments" in t:
            args["tool_args"] = _ptr(t["arguments"], f"{where}/tool/arguments")
        if "id" in t:
            args["tool_id"] = _str(t["id"], f"{where}/tool/id", pointers_only=True)
        if "isError" in t:
            args["tool_is_error"] = _ptr(t["isError"], f"{where}/tool/isError")
    elif kind == "tool_call":
        raise MappingError(f'{where}: a tool_call needs "tool"')
    if "error" in e:
        er = _obj(
            e["error"],
            f"{where}/error",
            ("code", "message", "errorKind", "status"),
            ("code", "message"),
        )
        args["err_code"] = _str(er["code"], f"{where}/error/code")
        args["err_message"] = _str(er["message"], f"{where}/error/message")
        if "status" in er:
            args["err_status"] = _ptr(er["status"], f"{where}/error/status")
        k = er.get("errorKind", "classify")
        if isinstance(k, str):
            if k not in (*ERROR_KINDS, "classify"):
                raise MappingError(
                    f"{where}/error/errorKind: expected quota, transport, "
                    'semantic, classify or {"by": ..., "map": {...}}'
                )
            args["err_kind"] = k
        else:
            kk = _obj(k, f"{where}/error/errorKind", ("by", "map", "else"), ("by", "map"))
            args["err_by"] = _ptr(kk["by"], f"{where}/error/errorKind/by")
            m = kk["map"]
            if not isinstance(m, dict) or not all(v in ERROR_KINDS for v in m.values()):
                raise MappingError(
                    f"{where}/error/errorKind/map: expected an object of "
                    "value -> quota|transport|semantic"
                )
            args["err_map"] = tuple(m.items())
            fallback = kk.get("else", "classify")
            if fallback not in (*ERROR_KINDS, "classify"):
                raise MappingError(
                    f"{where}/error/errorKind/else: expected quota, transport, semantic or classify"
                )
            args["err_kind"] = fallback
    elif kind == "error":
        raise MappingError(f'{where}: an error needs "error"')
    if "usage" in e:
        u = _obj(e["usage"], f"{where}/usage", ("input", "output", "cached", "cost", "model"))
        if kind != "usage":
            raise MappingError(f"{where}/usage: only a usage event carries usage")
        if e["subtype"] not in SCOPES:
            raise MappingError(
                f"{where}/subtype: a usage subtype is its scope: {', '.join(SCOPES)}"
            )
        args["usage_in"] = _ptrs(u.get("input", []), f"{where}/usage/input")
        args["usage_out"] = _ptrs(u.get("output", []), f"{where}/usage/output")
        if "cached" in u:
            args["usage_cached"] = _ptr(u["cached"], f"{where}/usage/cached")
        if "cost" in u:
            args["usage_cost"] = _ptr(u["cost"], f"{where}/usage/cost")
        if "model" in u:
            args["usage_model"] = _str(u["model"], f"{where}/usage/model")
    elif kind == "usage":
        raise MappingError(f'{where}: a usage event needs "usage"')
    _extras(e, where, args)
    return Emit(**args)


def compile_mapping(doc: Any, source: str = "<mapping>") -> Mapping:
    """Validate a parsed mapping document; :class:`MappingError` names the JSON pointer."""
    from .dialects import DIALECTS

    where = source + ":"
    d = _obj(
        doc,
        where + " ",
        ("checkfu_dialect", "dialect", "description", "sniff", "meta", "rules"),
        ("checkfu_dialect", "dialect", "rules"),
    )
    if d["checkfu_dialect"] != 1 or type(d["checkfu_dialect"]) is not int:
        raise MappingError(f"{where} /checkfu_dialect: expected 1")
    if d["dialect"] not in DIALECTS:
        raise MappingError(f"{where} /dialect: expected one of {', '.join(DIALECTS)}")
    desc = d.get("description", "")
    if not isinstance(desc, str):
        raise MappingError(f"{where} /description: expected a string")
    sniff = d.get("sniff", [])
    if not isinstance(sniff, list):
        raise MappingError(f"{where} /sniff: expected a list of conditions")
    meta = _obj(d.get("meta", {}), f"{where} /meta", _META_KEYS)
    line: list[tuple[str, Any]] = []
    for k in _META_KEYS[2:]:
        if k not in meta:
            continue
        w = f"{where} /meta/{k}"
        if k in _META_FLAGS:
            line.append((k, _cond(meta[k], w)))
        elif k in _META_STRINGS:
            line.append((k, _str(meta[k], w, pointers_only=True)))
        else:  # durationMs, structuredOutput: values
            line.append((k, _ptrs(meta[k], w)))
    rules = d["rules"]
    if not isinstance(rules, list):
        raise MappingError(f"{where} /rules: expected a list")
    compiled = []
    for i, r in enumerate(rules):
        rr = _obj(r, f"{where} /rules/{i}", ("match", "emit"), ("match", "emit"))
        emits = rr["emit"]
        if not isinstance(emits, list):
            raise MappingError(f"{where} /rules/{i}/emit: expected a list")
        compiled.append(
            Rule(
                _cond(rr["match"], f"{where} /rules/{i}/match"),
                tuple(_emit(e, f"{where} /rules/{i}/emit/{j}") for j, e in enumerate(emits)),
            )
        )
    return Mapping(
        dialect=d["dialect"],
        description=desc,
        sniff=tuple(_cond(c, f"{where} /sniff/{i}") for i, c in enumerate(sniff)),
        rules=tuple(compiled),
        session_id=_str(meta["sessionId"], f"{where} /meta/sessionId", pointers_only=True)
        if "sessionId" in meta
        else None,
        native_type=_str(meta["nativeType"], f"{where} /meta/nativeType", pointers_only=True)
        if "nativeType" in meta
        else None,
        line=tuple(line),
    )


# How deep a mapping document may nest (rust/mapping.rs has the same bound).
MAX_DEPTH = 64


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s object hook: a repeated key is an error, as in the core (a reader
    keeping the first and one keeping the last would read two different mappings)."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


class _Duplicate(Exception):
    pass


def _check_doc(doc: Any, source: str) -> None:
    """The document nests at most :data:`MAX_DEPTH` levels and has no lone surrogate (the
    core reads one as U+FFFD; the reference could not even write it out)."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        v, depth, at = stack.pop()
        if isinstance(v, (dict, list)) and depth > MAX_DEPTH:
            raise MappingError(f"{source}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(v, dict):
            for k, child in v.items():
                here = f"{at}/{k.replace('~', '~0').replace('/', '~1')}"
                if _surrogate(k):
                    raise MappingError(f"{source} {at or '/'}: a key with a lone surrogate")
                stack.append((child, depth + 1, here))
        elif isinstance(v, list):
            stack.extend((child, depth + 1, f"{at}/{i}") for i, child in enumerate(v))
        elif isinstance(v, str) and _surrogate(v):
            raise MappingError(
                f"{source} {at or '/'}: a string with a lone surrogate escape "
                "(\\ud800-\\udfff unpaired)"
            )


def _surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def load_text(text: str, source: str = "<mapping>") -> Mapping:
    try:
        doc = json.loads(text, object_pairs_hook=_unique)
    except _Duplicate as exc:
        raise MappingError(f"{source}: a duplicate key {exc.args[0]!r}") from None
    except RecursionError:
        raise MappingError(f"{source}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:
        raise MappingError(f"{source}: not valid JSON: {exc}") from None
    _check_doc(doc, source)
    m = compile_mapping(doc, source)
    object.__setattr__(m, "source", text)
    return m


def load_path(path: str | Path) -> Mapping:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MappingError(f"{p}: cannot read mapping: {exc}") from None
    return load_text(text, str(p))


# -- evaluation -------------------------------------------------------------------------------


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    return "array" if isinstance(v, list) else "object"


def _lit_eq(v: Any, lit: Any) -> bool:
    return v is not _MISSING and type(v) is type(lit) and v == lit


def holds(c: Cond, v: Any) -> bool:
    for ptr, t in c.tests:
        x = resolve(v, ptr)
        op = t.op
        if op == "eq":
            ok = _lit_eq(x, t.arg)
        elif op == "ne":
            ok = not _lit_eq(x, t.arg)
        elif op == "in":
            ok = any(_lit_eq(x, a) for a in t.arg)
        elif op == "prefix":
            ok = isinstance(x, str) and x.startswith(t.arg)
        elif op == "exists":
            ok = (x is not _MISSING) == t.arg
        else:  # type
            ty = _type_of(x) if x is not _MISSING else None
            ok = ty == t.arg or (t.arg == "number" and ty == "integer")
        if not ok:
            return False
    return True


def string(s: Str | None, v: Any) -> str | None:
    if s is None:
        return None
    for how, arg in s.alts:
        if how == "const":
            return cast("str | None", arg)
        x = resolve(v, arg)
        if isinstance(x, str) and x:
            return x
    return None


def _opt(v: Any, ptr: tuple[str, ...] | None) -> Any:
    if ptr is None:
        return None
    x = resolve(v, ptr)
    return None if x is _MISSING else x


def _event(e: Emit, v: Any) -> Event:
    ev: Event = {"kind": e.kind, "subtype": e.subtype}
    if e.kind == "usage":
        return usage(
            e.subtype,
            string(e.usage_model, v),
            [_opt(v, p) for p in e.usage_in],
            _opt(v, e.usage_cached),
            [_opt(v, p) for p in e.usage_out],
            _opt(v, e.usage_cost),
        ) | _mid(e, v)
    if e.role is not None:
        ev["role"] = e.role
    if e.text is not None:
        t = string(e.text, v)
        if t is not None or e.kind == "message":
            ev["text"] = t or ""
    if e.tool_name is not None:
        tool: dict[str, Any] = {"name": string(e.tool_name, v) or "unknown"}
        args = _opt(v, e.tool_args)
        if args is not None:
            tool["arguments"] = args
        tid = string(e.tool_id, v)
        if tid is not None:
            tool["id"] = tid
        if e.tool_is_error is not None or e.kind == "message":
            tool["isError"] = _opt(v, e.tool_is_error) is True
        ev["tool"] = tool
    if e.err_code is not None:
        code = string(e.err_code, v) or "error"
        message = string(e.err_message, v) or code
        kind = _kind(e, v, message)
        ev["error"] = {"code": code, "message": message, "errorKind": kind}
        ev.update(retry_fields(kind, message))
    ev.update(_mid(e, v))
    if e.delta:
        ev["delta"] = True
    _event_extras(e, v, ev)
    return ev


def _event_extras(e: Emit, v: Any, ev: Event) -> None:
    if e.tool_class is not None:
        ev["toolClass"] = e.tool_class  # a hint: the generic pass classifies tool calls
    name = string(e.provider_name, v)
    if name is not None:
        ev["providerToolName"] = name
    if e.provider_args is not None and resolve(v, e.provider_args) is not _MISSING:
        ev["providerArguments"] = resolve(v, e.provider_args)
    result = resolve(v, e.tool_result) if e.tool_result is not None else _MISSING
    if result is not _MISSING:
        ev["toolResult"] = result
    elif e.kind == "message" and e.subtype == "tool_result":
        ev["toolResult"] = ev["text"]  # the result exactly as the line gives it: its text
    if e.file_change is not None:
        event, path = string(e.file_change[0], v), string(e.file_change[1], v)
        if event in FILE_EVENTS and path is not None:
            ev["fileChanges"] = [{"event": event, "path": path}]
    if e.subagent is not None:
        sid = string(e.subagent[0], v)
        if sid is not None:
            info: dict[str, Any] = {"id": sid, "phase": e.subagent[1]}
            for key, spec in zip(("name", "type", "description"), e.subagent[2:5], strict=True):
                x = string(spec, v)
                if x is not None:
                    info[key] = x
            disposition = string(e.subagent[5], v)
            if disposition in DISPOSITIONS:
                info["disposition"] = disposition
            ev["subagent"] = info
    if e.tokens is not None:
        before, after = resolve(v, e.tokens[0]), resolve(v, e.tokens[1])
        if nonneg_int(before) and nonneg_int(after):
            ev["tokensBefore"], ev["tokensAfter"] = before, after
    if e.retry:
        ev["retry"] = True
    if e.delta_only:
        ev["deltaOnly"] = True
    if e.empty_result:
        ev["emptyResult"] = True
    if e.answer:
        ev["answer"] = True


def _mid(e: Emit, v: Any) -> Event:
    mid = string(e.message_id, v)
    return {"messageId": mid} if mid is not None else {}


def _kind(e: Emit, v: Any, message: str) -> str:
    by_status = kind_for_status(_opt(v, e.err_status))
    if by_status is not None:
        return by_status
    if e.err_by is not None:
        x = resolve(v, e.err_by)
        if isinstance(x, str):
            for key, kind in e.err_map:
                if key == x:
                    return kind
    return classify(message) if e.err_kind == "classify" else e.err_kind


def map_line(m: Mapping, v: Any) -> list[Event]:
    for rule in m.rules:
        if holds(rule.match, v):
            return [_event(e, v) for e in rule.emits if e.when is None or holds(e.when, v)]
    return []


def meta(m: Mapping, v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    sid = string(m.session_id, v)
    if sid is not None:
        out["sessionId"] = sid
    for key, spec in m.line:
        if key in _META_FLAGS:
            if holds(spec, v):
                out[key] = True
        elif key in _META_STRINGS:
            x = string(spec, v)
            if x is not None:
                out[key] = x
        elif key == "durationMs":
            for ptr in spec:
                x = resolve(v, ptr)
                if nonneg_int(x):
                    out[key] = x
                    break
        else:  # structuredOutput: the first pointer that resolves, any value
            for ptr in spec:
                x = resolve(v, ptr)
                if x is not _MISSING:
                    out[key] = x
                    break
    return out


def native_type(m: Mapping, v: Any) -> Any:
    if m.native_type is None:
        return v.get("type")
    return string(m.native_type, v)


def sniffs(m: Mapping, v: Any) -> bool:
    return any(holds(c, v) for c in m.sniff)
