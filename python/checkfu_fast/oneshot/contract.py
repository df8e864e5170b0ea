"""oneshot-v1 section 1: validate a harness release contract before anything runs.

One error is reported, the first in the order of docs/oneshot.md section 1, as a
``ContractError`` carrying the seed's error ``code``, a JSON ``pointer`` and a stable ``rule``.
"""

from __future__ import annotations

import json
import re
from typing import Any, cast

import jsonschema_rs

from ..errors import ContractError
from . import _schema

MALFORMED = "validation.malformed"
TOO_LARGE = "validation.payload_too_large"

PLACEHOLDER = "{prompt_path}"
MAX_ARGS = 256
MAX_ARG_BYTES = 65_536
MAX_ARGV_BYTES = 131_072

CONFIG_MAX_BYTES = 65_536
CONFIG_MAX_DEPTH = 32
CONFIG_MAX_NODES = 4_000
CONFIG_MAX_WORK = 4_000
CONTRACT_MAX_DEPTH = 8  # the contract's own shape nests 3 deep at most
REQUEST_MAX_DEPTH = 64  # an output schema
# Budgets checked by one bounded walk before any schema work (docs/oneshot.md section 1, step 0).
# A valid contract has at most about 280 values outside configuration_schema (15 members, 256
# argv items, 4 dialects, a platform) and about 330 KB of strings plus its image reference.
CONTRACT_MAX_TEXT_BYTES = 4 << 20  # JSON text handed to validate_contract, before decoding
TEXT_MAX_NODES = 16_384  # lexical tokens of that text (values and keys), before decoding
TEXT_MAX_DEPTH = 64
CONTRACT_MAX_NODES = 1_024  # JSON values outside configuration_schema
CONTRACT_MAX_BYTES = 1 << 20  # UTF-8 bytes of all strings and object keys of the contract
PRIOR_STATE_MAX_NODES = 64
MAX_INT_DIGITS = 4_000  # as the core's JSON parser (rust/parse.rs MAX_INT_DIGITS)
_INT_LIMIT = 10**MAX_INT_DIGITS

_SIZE_KEYWORDS = {"maxLength", "maxItems", "maxProperties"}
# JSON Schema drafts jsonschema-rs validates against their built-in meta-schemas (no network).
KNOWN_DRAFTS = {
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
}


def load_json(
    text: str | bytes | bytearray, what: str = "document", *, budgeted: bool = False
) -> Any:
    """Strict JSON: duplicate keys and NaN/Infinity are errors (``validation.malformed``).

    ``budgeted`` (contracts): the text's size, lexical depth and token count are checked before
    it is decoded (``json.bytes``, ``json.depth``, ``json.nodes``: payload_too_large)."""

    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) != len(pairs):
            seen: set[str] = set()
            for k, _ in pairs:
                if k in seen:
                    raise ValueError(f"duplicate key {k!r}")
                seen.add(k)
        return out

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    size = len(text) if isinstance(text, (bytes, bytearray)) else _str_bytes(text, 1 << 62)
    if size is None or (budgeted and size > CONTRACT_MAX_TEXT_BYTES):
        if size is None:
            raise ContractError(
                MALFORMED, "", "json.unicode", f"{what} text contains a lone surrogate"
            )
        raise ContractError(
            TOO_LARGE,
            "",
            "json.bytes",
            f"{what} text is {size} bytes, more than {CONTRACT_MAX_TEXT_BYTES}",
        )
    over = (
        scan_text(text.encode("utf-8") if isinstance(text, str) else bytes(text))
        if budgeted
        else None
    )
    if over is not None:
        raise ContractError(TOO_LARGE, "", f"json.{over}", f"{what} text {_TEXT_OVER[over]}")
    try:
        return json.loads(text, object_pairs_hook=no_dupes, parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        if _looks_like_path(text):
            shown = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
            raise ContractError(
                MALFORMED,
                "",
                "json",
                f"{what} is not valid JSON: {shown.strip()!r} looks like a file path, not JSON "
                "text; pass the file's contents (e.g. Path(p).read_text()) or the decoded object",
            ) from None
        raise ContractError(MALFORMED, "", "json", f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ContractError(TOO_LARGE, "", "json.depth", f"{what} nests too deep") from None


def _looks_like_path(text: str | bytes | bytearray) -> bool:
    """Whether JSON text that failed to decode is rather a file path (one short line that does
    not start like JSON)."""
    t = text if isinstance(text, str) else bytes(text[:4097]).decode("utf-8", "replace")
    t = t.strip()
    if not t or len(t) > 4096 or "\n" in t or t[0] in '{["' or t[0].isdigit():
        return False
    return t.startswith(("/", "./", "../", "~")) or t.endswith(".json") or "/" in t


# One lexical token: a string (possibly unterminated), a bracket, or a run of scalar text.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]|[^\s\[\]{}",:]+')
_TEXT_OVER = {
    "depth": f"nests deeper than {TEXT_MAX_DEPTH}",
    "nodes": f"has more than {TEXT_MAX_NODES} JSON values and keys",
}


def scan_text(data: bytes) -> str | None:
    """``"depth"`` or ``"nodes"`` for the first text budget crossed, else None.

    Lexical (valid JSON or not) and stopped at the first crossing: its cost is bounded by the
    budgets and a C-speed pass over long strings, never by the number of values in the text.
    """
    depth = nodes = 0
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c == 0x5D or c == 0x7D:  # ] }
            depth = depth - 1 if depth else 0
            continue
        nodes += 1
        if c == 0x5B or c == 0x7B:  # [ {
            depth += 1
            if depth > TEXT_MAX_DEPTH:
                return "depth"
        if nodes > TEXT_MAX_NODES:
            return "nodes"
    return None


def _str_bytes(s: str, limit: int) -> int | None:
    """UTF-8 length of ``s``, or ``None`` if it holds a lone surrogate (not encodable).

    Once ``len(s)`` alone exceeds ``limit`` the result is ``len(s)`` (a lower bound that is
    already over the limit) and nothing is encoded."""
    n = len(s)
    if n > limit or s.isascii():
        return n
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _lone_surrogate(s: str) -> str:
    for i, ch in enumerate(s):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"a lone surrogate U+{ord(ch):04X} at index {i}"
    return "a lone surrogate"  # pragma: no cover - only called when encoding failed


class _Budget:
    """Remaining string bytes, shared by the walks of one document."""

    def __init__(self, max_bytes: int, rule: str, ptr: str) -> None:
        self.max_bytes, self.left, self.rule, self.ptr = max_bytes, max_bytes, rule, ptr

    def take(self, s: str, ptr: str) -> None:
        n = _str_bytes(s, self.left)
        if n is None:
            raise ContractError(
                MALFORMED,
                ptr,
                "json.unicode",
                f"string contains {_lone_surrogate(s)} (not encodable as UTF-8)",
            )
        self.left -= n
        if self.left < 0:
            raise ContractError(
                TOO_LARGE,
                self.ptr,
                self.rule,
                f"strings and object keys exceed {self.max_bytes} UTF-8 bytes",
            )


def scan_json(
    value: Any,
    base: str,
    *,
    max_depth: int,
    depth_rule: str,
    max_nodes: int | None = None,
    nodes_rule: str = "",
    nodes_ptr: str | None = None,
    budget: _Budget | None = None,
    skip_root_key: str | None = None,
) -> None:
    """One bounded, iterative walk in document order; the first problem found is raised.

    Every value must be in the JSON data model (dict with str keys, list or tuple, str, int of
    at most 4,000 digits, finite float, bool, None; ``validation.malformed`` ``json.type`` /
    ``json.number``) and no
    string or key may hold a lone surrogate (``json.unicode``); containers nest at most
    ``max_depth`` (the value itself is depth 1; pointer of the first deeper container); at most
    ``max_nodes`` values (pointer ``nodes_ptr``, or ``base`` plus the root member whose walk
    crossed it); strings and keys draw on ``budget``. The walk stops at the first crossing, so
    its cost is bounded by the budgets, not by the size of the value.
    """
    nodes = 0
    stack: list[tuple[Any, int, str, str]] = [(value, 1, base, base)]
    while stack:
        node, depth, ptr, member = stack.pop()
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise ContractError(
                TOO_LARGE,
                member if nodes_ptr is None else nodes_ptr,
                nodes_rule,
                f"more than {max_nodes} JSON values",
            )
        if isinstance(node, str):
            if budget is not None:
                budget.take(node, ptr)
            elif _str_bytes(node, 1 << 62) is None:
                raise ContractError(
                    MALFORMED,
                    ptr,
                    "json.unicode",
                    f"string contains {_lone_surrogate(node)} (not encodable as UTF-8)",
                )
            continue
        if node is None or isinstance(node, bool):
            continue
        if isinstance(node, int):
            if not -_INT_LIMIT < node < _INT_LIMIT:  # Python cannot even print it by default
                raise ContractError(
                    MALFORMED,
                    ptr,
                    "json.number",
                    f"an integer of more than {MAX_INT_DIGITS} digits is not accepted",
                )
            continue
        if isinstance(node, float):
            if node != node or node in (float("inf"), float("-inf")):
                raise ContractError(MALFORMED, ptr, "json.number", f"{node!r} is not a JSON number")
            continue
        if not isinstance(node, (dict, list, tuple)):
            raise ContractError(
                MALFORMED, ptr, "json.type", f"a {type(node).__name__} is not a JSON value"
            )
        if depth > max_depth:
            raise ContractError(TOO_LARGE, ptr, depth_rule, f"nesting depth exceeds {max_depth}")
        children: list[tuple[Any, int, str, str]] = []
        if isinstance(node, dict):
            for k, v in node.items():
                if not isinstance(k, str):
                    raise ContractError(
                        MALFORMED,
                        ptr,
                        "json.type",
                        f"object key {k!r} is a {type(k).__name__}, not a string",
                    )
                if depth == 1 and k == skip_root_key:
                    continue
                if budget is not None:
                    budget.take(k, ptr)
                elif _str_bytes(k, 1 << 62) is None:
                    raise ContractError(
                        MALFORMED,
                        ptr,
                        "json.unicode",
                        f"object key contains {_lone_surrogate(k)} (not encodable as UTF-8)",
                    )
                cptr = f"{ptr}/{_escape(k)}"
                children.append((v, depth + 1, cptr, cptr if depth == 1 else member))
                if max_nodes is not None and len(children) + nodes > max_nodes:
                    break  # the budget is crossed when the walk gets there; build no more
        else:
            for i, v in enumerate(node):
                cptr = f"{ptr}/{i}"
                children.append((v, depth + 1, cptr, cptr if depth == 1 else member))
                if max_nodes is not None and len(children) + nodes > max_nodes:
                    break
        if depth == 1 and max_nodes is not None and len(children) + nodes > max_nodes:
            raise ContractError(
                TOO_LARGE,
                base if nodes_ptr is None else nodes_ptr,
                nodes_rule,
                f"more than {max_nodes} JSON values",
            )
        stack.extend(reversed(children))


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def validate_contract(contract: Any) -> dict[str, Any]:
    """Return the contract (decoded if given as JSON text) or raise ``ContractError``."""
    if isinstance(contract, (str, bytes, bytearray)):
        contract = load_json(contract, "contract", budgeted=True)
    # Step 0: one bounded iterative walk (JSON values, surrogates, depth, nodes, bytes), so that
    # neither a recursive validator nor jsonschema-rs ever meets a hostile or oversized value.
    if not isinstance(contract, dict):
        what = "null" if contract is None else f"a {type(contract).__name__}"
        raise ContractError(MALFORMED, "", "schema.type", f"the contract is {what}, not an object")
    budget = _Budget(CONTRACT_MAX_BYTES, "contract.bytes", "")
    config = contract.get("configuration_schema")
    if isinstance(config, (dict, list, tuple)):
        scan_json(
            config,
            "/configuration_schema",
            max_depth=CONFIG_MAX_DEPTH,
            depth_rule="configuration_schema.depth",
            max_nodes=CONFIG_MAX_NODES,
            nodes_rule="configuration_schema.nodes",
            nodes_ptr="/configuration_schema",
            budget=budget,
        )
    scan_json(
        contract,
        "",
        max_depth=CONTRACT_MAX_DEPTH,
        depth_rule="contract.depth",
        max_nodes=CONTRACT_MAX_NODES,
        nodes_rule="contract.nodes",
        budget=budget,
        skip_root_key="configuration_schema" if isinstance(config, (dict, list, tuple)) else None,
    )
    errors = _schema.sorted_errors(_schema.contract_validator(), contract)
    if errors:
        e = _size_error(errors[0])
        keyword = str(e.schema_path[-1]) if e.schema_path else "schema"
        code = TOO_LARGE if keyword in _SIZE_KEYWORDS else MALFORMED
        pointer = _schema.pointer(e.instance_path)
        raise ContractError(
            code, pointer, f"schema.{keyword}", _in_words(keyword, pointer, e, contract)
        )
    _check_argv(contract["argv"])
    for key in ("resume_flag", "output_schema_flag"):
        value = contract.get(key)
        if isinstance(value, str) and utf8_len(value) > MAX_ARG_BYTES:
            raise ContractError(
                TOO_LARGE,
                f"/{key}",
                "argv.item_bytes",
                f"{utf8_len(value)} UTF-8 bytes, more than {MAX_ARG_BYTES}",
            )
    flag, transport = contract.get("output_schema_flag"), contract.get("output_schema_transport")
    if (flag is None) != (transport is None):
        which = "output_schema_flag" if flag is not None else "output_schema_transport"
        other = "output_schema_transport" if flag is not None else "output_schema_flag"
        raise ContractError(
            MALFORMED, f"/{which}", "output_schema.pairing", f"{which} is set but {other} is not"
        )
    argv = contract["argv"]
    if contract["prompt_transport"] == "argv_path":
        if not any(PLACEHOLDER in a for a in argv):
            raise ContractError(
                MALFORMED,
                "/argv",
                "prompt.placeholder",
                f"prompt_transport argv_path needs an argv item containing {PLACEHOLDER}",
            )
    else:
        for i, a in enumerate(argv):
            if PLACEHOLDER in a:
                raise ContractError(
                    MALFORMED,
                    f"/argv/{i}",
                    "prompt.placeholder",
                    f"prompt_transport stdin forbids {PLACEHOLDER} in argv",
                )
    config = contract.get("configuration_schema")
    if isinstance(config, dict):
        check_configuration_schema(config, "/configuration_schema")
    return cast(dict[str, Any], contract)


_PATH_FIELDS = {
    "/entrypoint": ("entrypoint", "/usr/local/bin/claude"),
    "/working_directory": ("working_directory", "/srv/work"),
}
_FLAG_FIELDS = {"/resume_flag", "/output_schema_flag"}


def _in_words(keyword: str, pointer: str, e: Any, contract: dict[str, Any]) -> str:
    """A schema error's message in words where the raw one shows a regex or an ``anyOf``."""
    value = _at(contract, pointer)
    if pointer in _PATH_FIELDS and isinstance(value, str) and keyword in ("pattern", "anyOf"):
        problem = (
            "is not absolute (it must start with /)"
            if not value.startswith("/")
            else "holds a character other than letters, digits, '.', '_', '-' and single "
            "slashes (a space?), or a '.' or '..' part"
        )
        field, example = _PATH_FIELDS[pointer]
        return f"{field} must be an absolute path such as {example}: {value!r} {problem}"
    if pointer in _FLAG_FIELDS and value == "":
        return f"{pointer[1:]} must not be empty (use null for none)"
    if pointer.startswith("/argv/") and keyword == "pattern" and isinstance(value, str):
        return "an argv item must not contain U+0000"
    if keyword == "anyOf" and pointer in _NULLABLE:
        return f"{pointer[1:]} must be {_NULLABLE[pointer]} or null, not {value!r}"
    return str(e.message)


_NULLABLE = {
    "/resume_flag": "a non-empty string",
    "/output_schema_flag": "a non-empty string",
    "/output_schema_transport": '"argv_json" or "argv_path"',
    "/working_directory": "an absolute path",
    "/platform": 'an object {"os": "linux", "architecture": "amd64" or "arm64"}',
    "/model_wire_dialects": "a list of 1 to 4 distinct dialect names",
    "/configuration_schema": "true, false or a JSON Schema object",
}


def _at(doc: Any, pointer: str) -> Any:
    node = doc
    for token in pointer.split("/")[1:]:
        token = _unescape(token)
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and _ARRAY_INDEX.match(token) and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _size_error(e: Any) -> Any:
    """An ``anyOf`` error of a nullable field whose one branch of the value's type failed on a
    size keyword is that size error (``validation.payload_too_large``), not ``anyOf``."""
    while type(e.kind).__name__ == "AnyOf":
        path = list(e.instance_path)
        branches = [
            b
            for b in (getattr(e.kind, "context", None) or [])
            if b and not (type(b[0].kind).__name__ == "Type" and list(b[0].instance_path) == path)
        ]
        if len(branches) != 1:
            return e
        nested = [x for x in branches[0] if type(x.kind).__name__ == "AnyOf"]
        sized = [x for x in branches[0] if str(x.schema_path[-1]) in _SIZE_KEYWORDS]
        if sized:
            return sized[0]
        if len(nested) != 1:
            return e
        inner = _size_error(nested[0])
        return inner if inner is not nested[0] else e
    return e


def _check_argv(argv: list[str], base: str = "/argv") -> None:
    total = 0
    for i, a in enumerate(argv):
        if "\x00" in a:
            raise ContractError(MALFORMED, f"{base}/{i}", "argv.nul", "argument contains U+0000")
        n = utf8_len(a)
        if n > MAX_ARG_BYTES:
            raise ContractError(
                TOO_LARGE,
                f"{base}/{i}",
                "argv.item_bytes",
                f"{n} UTF-8 bytes, more than {MAX_ARG_BYTES}",
            )
        total += n + 1
    if len(argv) > MAX_ARGS:
        raise ContractError(TOO_LARGE, base, "argv.items", f"{len(argv)} items, more than 256")
    if total > MAX_ARGV_BYTES:
        raise ContractError(
            TOO_LARGE,
            base,
            "argv.total_bytes",
            f"{total} bytes including terminators, more than {MAX_ARGV_BYTES}",
        )


def check_resolved_argv(argv: list[str]) -> None:
    """The planned argv (placeholders resolved, flags appended) obeys the same byte rules."""
    try:
        _check_argv(argv, "/argv")
    except ContractError as exc:
        raise ContractError(
            exc.code,
            exc.pointer,
            exc.rule,
            exc.detail + " (in the planned argv; pass large values with argv_path transport)",
        ) from None


# -- configuration_schema budgets ----------------------------------------------------------


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _count_nodes(root: Any) -> int:
    """JSON values in ``root`` (object keys are not nodes); the depth was checked first."""
    nodes, stack = 0, [root]
    while stack:
        value = stack.pop()
        nodes += 1
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return nodes


_ARRAY_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)\Z")  # RFC 6901: ASCII digits, no leading 0


def _resolve(root: Any, ref: str) -> Any:
    node = root
    if ref == "#":
        return node
    for token in ref[2:].split("/"):
        token = _unescape(token)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and _ARRAY_INDEX.match(token) and int(token) < len(node):
            node = node[int(token)]
        else:
            raise KeyError(ref)
    return node


def inspection_work(root: Any, base: str = "", limit: int = CONFIG_MAX_WORK) -> int:
    """Values visited by a depth-first walk that also walks every local ``$ref`` target.

    Stops counting at ``limit + 1`` (so a ``$ref`` cycle ends). An unresolvable local ``$ref``
    raises ``ContractError`` (``configuration_schema.ref``).
    """
    work = 0
    stack: list[tuple[Any, str]] = [(root, base)]
    while stack and work <= limit:
        value, ptr = stack.pop()
        work += 1
        if isinstance(value, dict):
            ref = value.get("$ref")
            children = [(v, f"{ptr}/{_escape(k)}") for k, v in value.items()]
            if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
                try:
                    target = _resolve(root, ref)
                except KeyError:
                    raise ContractError(
                        MALFORMED,
                        f"{ptr}/$ref",
                        "configuration_schema.ref",
                        f"local $ref {ref!r} does not resolve",
                    ) from None
                children.append((target, base + ref[1:]))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(v, f"{ptr}/{i}") for i, v in enumerate(value)]))
    return work


def check_configuration_schema(schema: dict[str, Any], base: str) -> None:
    size = utf8_len(compact_json(schema))
    if size > CONFIG_MAX_BYTES:
        raise ContractError(
            TOO_LARGE,
            base,
            "configuration_schema.bytes",
            f"{size} bytes of compact JSON, more than {CONFIG_MAX_BYTES}",
        )
    nodes = _count_nodes(schema)
    if nodes > CONFIG_MAX_NODES:
        raise ContractError(
            TOO_LARGE,
            base,
            "configuration_schema.nodes",
            f"{nodes} JSON nodes, more than {CONFIG_MAX_NODES}",
        )
    work = inspection_work(schema, base)
    if work > CONFIG_MAX_WORK:
        raise ContractError(
            TOO_LARGE,
            base,
            "configuration_schema.inspection_work",
            f"inspection work exceeds {CONFIG_MAX_WORK} (local $refs are followed each time)",
        )
    draft = schema.get("$schema")
    if draft is not None and (not isinstance(draft, str) or draft.rstrip("#") not in KNOWN_DRAFTS):
        raise ContractError(
            MALFORMED,
            f"{base}/$schema",
            "configuration_schema.meta",
            f"unknown $schema {draft!r}; use one of {sorted(KNOWN_DRAFTS)}",
        )
    try:
        jsonschema_rs.meta.validate(schema)
    except jsonschema_rs.ValidationError as exc:
        raise ContractError(
            MALFORMED,
            base + _schema.pointer(exc.instance_path),
            "configuration_schema.meta",
            f"not a valid JSON Schema: {exc.message}",
        ) from None
    except jsonschema_rs.ReferencingError as exc:  # pragma: no cover - drafts checked above
        raise ContractError(MALFORMED, base, "configuration_schema.meta", str(exc)) from None
