"""Every real sample of the implemented dialects.

Native == reference, every event schema-valid, nothing lost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import checkfu_fast
import checkfu_fast.reference
from conftest import CORPUS, CORPUS_DIALECTS, assert_valid, needs_shared

pytestmark = needs_shared

WHITESPACE = b" \t\r\n\x0b\x0c"
BOM = b"\xef\xbb\xbf"

FILES = sorted(p for d in CORPUS_DIALECTS for p in (CORPUS / d).glob("*.jsonl"))


def nonblank_line_starts(data: bytes) -> set[int]:
    """Start offsets of the non-blank lines, computed straight from the bytes (spec §1)."""
    starts = set()
    offset = 3 if data.startswith(BOM) else 0
    body = data[offset:]
    pos = 0
    for piece in body.split(b"\n"):
        if piece.strip(WHITESPACE):
            starts.add(offset + pos)
        pos += len(piece) + 1
    return starts


def test_corpus_is_present():
    assert CORPUS.is_dir(), CORPUS
    for d in CORPUS_DIALECTS:
        assert list((CORPUS / d).glob("*.jsonl")), f"no samples for {d}"


def _check(data: bytes, events: list[dict], dialect: str) -> None:
    assert_valid(events)
    assert [e["seq"] for e in events] == list(range(len(events)))
    positions = [e["position"] for e in events]
    assert positions == sorted(positions), "events out of stream order"
    assert set(positions) == nonblank_line_starts(data), "a line was lost or invented"
    assert {e["dialect"] for e in events} == {dialect}
    for e in events:
        assert e["v"] == "events/v1"
        start = e["position"]
        end = data.find(b"\n", start)
        line = data[start:] if end < 0 else data[start:end]
        if line.endswith(b"\r"):
            line = line[:-1]
        assert e["raw"] == line.decode("utf-8", "replace")


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("mode", ["named", "auto"])
def test_real_sample(path: Path, mode: str):
    dialect = path.parent.name
    data = path.read_bytes()
    arg = dialect if mode == "named" else "auto"
    native = checkfu_fast.normalize(data, arg)
    ref = checkfu_fast.reference.normalize(data, arg)
    assert native == ref
    # auto decides the sample's own dialect (it is never worse than naming it)
    _check(data, native, dialect)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_sample_auto_equals_named(path: Path):
    data = path.read_bytes()
    assert checkfu_fast.normalize(data, "auto") == checkfu_fast.normalize(data, path.parent.name)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_sample_streamed_bytewise_chunks(path: Path):
    """The incremental path gives the same events, in awkward 7-byte chunks."""
    data = path.read_bytes()
    dialect = path.parent.name
    for impl in (checkfu_fast, checkfu_fast.reference):
        n = impl.Normalizer(dialect)
        out = []
        for i in range(0, len(data), 7):
            out += n.feed(data[i : i + 7])
        out += n.finish()
        assert out == checkfu_fast.reference.normalize(data, dialect)
