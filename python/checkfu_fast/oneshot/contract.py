"""oneshot-v1 section 1: validate a harness release contract before anything runs.

One error is reported, the first in the order of docs/oneshot.md section 1, as a
``ContractError`` carrying the seed's error ``code``, a JSON ``pointer`` and a stable ``rule``.
"""

from __future__ import annotations

import json
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

_SIZE_KEYWORDS = {"maxLength", "maxItems", "maxProperties"}
# JSON Schema drafts jsonschema-rs validates against their built-in meta-schemas (no network).
KNOWN_DRAFTS = {
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
}


def load_json(text: str | bytes | bytearray, what: str = "document") -> Any:
    """Strict JSON: duplicate keys and NaN/Infinity are errors (``validation.malformed``)."""

    def no_dupes(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=no_dupes, parse_constant=no_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ContractError(MALFORMED, "", "json", f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ContractError(TOO_LARGE, "", "json.depth", f"{what} nests too deep") from None


def check_depth(value: Any, limit: int, base: str, rule: str) -> None:
    """Iteratively reject a container nested deeper than ``limit`` (the value itself is depth 1),
    naming the first one in document order, before any recursive code sees the value."""
    stack: list[tuple[Any, int, str]] = [(value, 1, base)]
    while stack:
        node, depth, ptr = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        if depth > limit:
            raise ContractError(TOO_LARGE, ptr, rule, f"nesting depth exceeds {limit}")
        items = (
            [(v, f"{ptr}/{_escape(str(k))}") for k, v in node.items()]
            if isinstance(node, dict)
            else [(v, f"{ptr}/{i}") for i, v in enumerate(node)]
        )
        stack.extend((child, depth + 1, cptr) for child, cptr in reversed(items))


def utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def validate_contract(contract: Any) -> dict[str, Any]:
    """Return the contract (decoded if given as JSON text) or raise ``ContractError``."""
    if isinstance(contract, (str, bytes, bytearray)):
        contract = load_json(contract, "contract")
    # Depth first, iteratively, so that no recursive validator or encoder meets a hostile nest.
    if isinstance(contract, dict):
        config = contract.get("configuration_schema")
        if isinstance(config, dict):
            check_depth(
                config, CONFIG_MAX_DEPTH, "/configuration_schema", "configuration_schema.depth"
            )
        rest = {k: v for k, v in contract.items() if k != "configuration_schema"}
        check_depth(rest, CONTRACT_MAX_DEPTH, "", "contract.depth")
    errors = _schema.sorted_errors(_schema.contract_validator(), contract)
    if errors:
        e = errors[0]
        keyword = str(e.schema_path[-1]) if e.schema_path else "schema"
        code = TOO_LARGE if keyword in _SIZE_KEYWORDS else MALFORMED
        raise ContractError(code, _schema.pointer(e.instance_path), f"schema.{keyword}", e.message)
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


def _resolve(root: Any, ref: str) -> Any:
    node = root
    if ref == "#":
        return node
    for token in ref[2:].split("/"):
        token = _unescape(token)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
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
