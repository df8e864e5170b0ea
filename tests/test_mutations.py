"""Per-dialect hypothesis streams: real-shaped records from the golden inputs, mutated.

For every dialect, lines are drawn from its golden inputs and mutated the way a new CLI release
or a broken relay would (keys dropped, values replaced by other JSON types, strings swapped for
hostile text, containers nested or emptied), then joined with random line ends. Native must
equal the reference on every stream, named and `auto`, and every event must be schema-valid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import reference
from conftest import assert_valid

ROOT = Path(__file__).resolve().parents[1] / "vectors" / "events"


def _records(dialect: str) -> list[Any]:
    out = []
    for path in sorted((ROOT / dialect).glob("*.input.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


RECORDS = {d: _records(d) for d in checkfu_fast.DIALECTS}

odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "<synthetic>",
            "error",
            "Reconnecting... 1/5",
            "429 Too Many Requests",
            "\ud800",
            "completed",
            "failed",
            "tool_use",
            "text_delta",
        ]
    ),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@st.composite
def mutated(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` with random local damage."""
    if depth > 6:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            roll = draw(st.integers(0, 19))
            if roll == 0:
                continue  # dropped key
            if roll == 1:
                out[k] = draw(odd_values)  # wrong type
            elif roll == 2:
                out[k] = [v]  # wrapped
            else:
                out[k] = draw(mutated(v, depth + 1))
        if draw(st.integers(0, 9)) == 0:
            out[draw(st.text(max_size=6))] = draw(odd_values)  # a new field
        return out
    if isinstance(value, list):
        items = [draw(mutated(v, depth + 1)) for v in value]
        if items and draw(st.integers(0, 9)) == 0:
            items.pop(draw(st.integers(0, len(items) - 1)))
        return items
    if draw(st.integers(0, 14)) == 0:
        return draw(odd_values)
    return value


@st.composite
def stream(draw: st.DrawFn, dialect: str) -> bytes:
    pool = RECORDS[dialect]
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        rec = draw(mutated(draw(st.sampled_from(pool))))
        text = json.dumps(rec, ensure_ascii=draw(st.booleans()))
        lines.append(text.encode("utf-8", "surrogatepass"))
    ends = [draw(st.sampled_from([b"\n", b"\r\n"])) for _ in lines]
    return b"".join(line + end for line, end in zip(lines, ends, strict=True))


@pytest.mark.parametrize("dialect", checkfu_fast.DIALECTS)
def test_each_dialect_has_golden_records(dialect: str) -> None:
    assert len(RECORDS[dialect]) >= 10


@pytest.mark.parametrize("dialect", checkfu_fast.DIALECTS)
@given(data=st.data())
def test_mutated_streams_agree(dialect: str, data: st.DataObject) -> None:
    raw = data.draw(stream(dialect))
    for name in (dialect, "auto"):
        native = checkfu_fast.normalize(raw, name)
        assert native == reference.normalize(raw, name)
        assert_valid(native)
