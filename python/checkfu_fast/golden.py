"""Golden files: ``vectors/events/<dialect>/<name>.input.jsonl`` -> ``<name>.expected.jsonl``.

:func:`check` replays one input through a normalizer and diffs it against the expected events,
event by event, reporting each differing JSON pointer with its expected and actual value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Normalize = Callable[..., list[dict[str, Any]]]
_MISSING = object()


def cases(root: Path) -> Iterator[tuple[str, Path, Path]]:
    """``(dialect, input, expected)`` for every golden pair under ``root``, sorted."""
    for inp in sorted(root.glob("*/*.input.jsonl")):
        yield inp.parent.name, inp, inp.with_name(inp.name.replace(".input.", ".expected."))


def load_expected(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def strict_key(x: Any) -> Any:
    """A comparison key under which two decoded JSON values are equal only if their types, key
    order and float bits are: ``0.0``/``-0.0``, ``1``/``1.0``/``True`` and reordered objects
    differ, which ``==`` hides. How the native and reference paths are compared."""
    if isinstance(x, bool):
        return ("b", x)
    if isinstance(x, int):
        return ("i", x)
    if isinstance(x, float):
        return ("f", x.hex())
    if isinstance(x, str):
        return ("s", x)
    if x is None:
        return ("n",)
    if isinstance(x, list):
        return ("l", tuple(strict_key(v) for v in x))
    if isinstance(x, dict):
        return ("d", tuple((k, strict_key(v)) for k, v in x.items()))
    raise TypeError(f"not a decoded JSON value: {type(x).__name__}")


def _pointer(parts: list[str | int]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def diff(expected: Any, actual: Any, path: list[str | int] | None = None) -> list[str]:
    """Differences as ``"<pointer>: expected <e>, got <a>"`` lines (empty when equal).

    ``1`` and ``1.0`` and ``True`` are told apart, as JSON consumers tell them apart.
    """
    path = path or []
    if type(expected) is not type(actual) and not (expected is _MISSING or actual is _MISSING):
        return [f"{_pointer(path)}: expected {_show(expected)}, got {_show(actual)}"]
    if isinstance(expected, dict) and isinstance(actual, dict):
        out: list[str] = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            out += diff(expected.get(key, _MISSING), actual.get(key, _MISSING), [*path, key])
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for i in range(max(len(expected), len(actual))):
            e = expected[i] if i < len(expected) else _MISSING
            a = actual[i] if i < len(actual) else _MISSING
            out += diff(e, a, [*path, i])
        return out
    if expected != actual:
        return [f"{_pointer(path)}: expected {_show(expected)}, got {_show(actual)}"]
    return []


def _show(v: Any) -> str:
    if v is _MISSING:
        return "(absent)"
    text = json.dumps(v, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def check(dialect: str, inp: Path, expected: Path, normalize: Normalize) -> list[str]:
    """Diff lines for one golden pair (empty when it matches)."""
    return diff(load_expected(expected), normalize(inp.read_bytes(), dialect))
