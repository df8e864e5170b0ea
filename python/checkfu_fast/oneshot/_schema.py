"""The seed schema (a verbatim copy of the oneshot-v1 author-kit schema) and its validators."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, cast

import jsonschema_rs

SCHEMA_FILE = "oneshot-v1.schema.json"


@functools.cache
def seed() -> dict[str, Any]:
    # one name per joinpath: Traversable.joinpath takes a single argument on Python 3.10
    text = (
        resources.files("checkfu_fast").joinpath("schemas").joinpath(SCHEMA_FILE).read_text("utf-8")
    )
    return cast(dict[str, Any], json.loads(text))


def _validator(ref: str) -> Any:
    s = seed()
    return jsonschema_rs.validator_for(
        {"$schema": s["$schema"], "$ref": ref, "$defs": s["$defs"]}, validate_formats=False
    )


@functools.cache
def file_validator() -> Any:
    return jsonschema_rs.validator_for(seed(), validate_formats=False)


@functools.cache
def vector_validator() -> Any:
    """One item of a vector file's ``vectors``."""
    return _validator("#/$defs/OneShotAuthorKitVectorContract")


@functools.cache
def contract_validator() -> Any:
    return _validator("#/$defs/CreateOneShotHarnessReleaseContract")


@functools.cache
def observation_validator() -> Any:
    return _validator(
        "#/$defs/OneShotAuthorKitVectorContract/properties/normalized_observations/items"
    )


@functools.cache
def state_validator() -> Any:
    return _validator("#/$defs/Objects_")


def pointer(path: list[Any] | tuple[Any, ...]) -> str:
    """RFC 6901 pointer of a jsonschema-rs instance path."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def sorted_errors(validator: Any, instance: Any) -> list[Any]:
    """The first schema error in document order of the instance path (the first found among
    equals), as a list of one, or none. Errors are looked at one at a time and only the first
    is kept: a file of 200,000 bad vectors costs the time of its errors, not their memory."""
    first = min(
        validator.iter_errors(instance),
        key=lambda e: _doc_order(instance, list(e.instance_path)),
        default=None,
    )
    return [] if first is None else [first]


def _doc_order(instance: Any, path: list[Any]) -> tuple[int, ...]:
    """Position of a path in document order: the index of each step among its siblings."""
    order = []
    node = instance
    for step in path:
        if isinstance(node, dict):
            keys = list(node)
            order.append(keys.index(step) if step in node else len(keys))
            node = node.get(step)
        elif isinstance(node, list) and isinstance(step, int):
            order.append(step)
            node = node[step] if 0 <= step < len(node) else None
        else:
            order.append(0)
            node = None
    return tuple(order)
