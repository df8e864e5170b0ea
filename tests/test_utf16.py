"""UTF-16 (and UTF-32) streams are reported once, not per line (docs/events.md §Framing).

Detection looks only at the first bytes of the stream (at most 4): a BOM (`FF FE`, `FE FF`,
`FF FE 00 00`, `00 00 FE FF`) or the NUL pattern of the first code unit with a non-zero ASCII
character (RFC 8259 §8.1, RFC 4627 §3). Such a stream is not split into lines: it gives exactly
one `error/stream_is_utf16` event, at `finish()`, whatever the chunking. Every case runs through
the native core and the reference, whole and chunked (one byte per feed included).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import checkfu_fast
import checkfu_fast.reference
from conftest import IMPLS, assert_valid, assert_wide_stream, wide_encoding

BOM8 = b"\xef\xbb\xbf"
LINES = [
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"type": "agent_message", "text": "héllo 😀"}},
    {"type": "turn.completed", "usage": {"input_tokens": 3, "output_tokens": 4}},
]
TEXT = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in LINES)
FIRST = json.dumps(LINES[0])

# (codec, expected encoding, BOM bytes)
CODECS = {
    "utf-16": ("UTF-16LE", b"\xff\xfe"),  # Python writes the BOM, little-endian
    "utf-16-le": ("UTF-16LE", b""),
    "utf-16-be": ("UTF-16BE", b""),
    "utf-32": ("UTF-32LE", b"\xff\xfe\x00\x00"),
    "utf-32-le": ("UTF-32LE", b""),
    "utf-32-be": ("UTF-32BE", b""),
}


def feed(impl, data: bytes, size: int, dialect: str = "codex") -> list[dict]:
    n = impl.Normalizer(dialect)
    wide = wide_encoding(data) is not None
    out: list[dict] = []
    for i in range(0, len(data), size):
        got = n.feed(data[i : i + size])
        assert not (wide and got), "a UTF-16 stream reports at finish(), never on feed()"
        out += got
    out += n.finish()
    assert n.finish() == []
    return out


def run(data: bytes, dialect: str = "codex", sizes=(1, 2, 3, 5, 64, 4096)) -> list[dict]:
    """normalize() on both paths and Normalizer in several chunk sizes: all identical."""
    whole = checkfu_fast.normalize(data, dialect)
    assert whole == checkfu_fast.reference.normalize(data, dialect)
    for name, impl in IMPLS.items():
        for size in sizes:
            assert feed(impl, data, size, dialect) == whole, f"{name} in {size}-byte chunks"
    assert_valid(whole)
    return whole


@pytest.mark.parametrize("codec", list(CODECS))
def test_multiline_jsonl_is_one_event(codec: str):
    data = TEXT.encode(codec)
    encoding, bom = CODECS[codec]
    assert data.startswith(bom)
    (ev,) = run(data)
    assert_wide_stream([ev], data)
    family, order = encoding[:-2], encoding[-2:]
    has_bom = "BOM" if bom else "no BOM"
    assert ev["error"]["message"] == (
        f"stream is {family} ({order}, {has_bom}); checkfu reads UTF-8 JSONL: re-encode the "
        f"input as UTF-8 ({len(data)} bytes skipped)"
    )
    assert ev["raw"] == FIRST  # the first line, decoded, so the user sees what it was
    assert ev["dialect"] == "codex"
    assert list(ev) == [
        "v", "seq", "position", "dialect", "kind", "subtype", "error", "encoding",
        "streamBytes", "raw", "parsed",
    ]  # fmt: skip


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be", "utf-32-be"])
def test_every_two_way_split_gives_the_same_event(codec: str):
    data = TEXT.encode(codec)[:40]
    want = checkfu_fast.reference.normalize(data, "codex")
    assert [e["subtype"] for e in want] == ["stream_is_utf16"]
    for name, impl in IMPLS.items():
        for i in range(len(data) + 1):
            n = impl.Normalizer("codex")
            assert n.feed(data[:i]) + n.feed(data[i:]) + n.finish() == want, f"{name} at {i}"


@pytest.mark.parametrize("dialect", ["auto", "claude", "cursor", "codex"])
def test_every_dialect_one_event_auto_falls_back_silently(dialect: str):
    (ev,) = run(TEXT.encode("utf-16-le"), dialect, sizes=(1, 7))
    # auto: nothing was read as a line, so no dialect_fallback notice; the fallback dialect
    assert ev["dialect"] == ("claude" if dialect == "auto" else dialect)


def test_be_bom():
    data = "\ufeff".encode("utf-16-be") + TEXT.encode("utf-16-be")
    assert data[:2] == b"\xfe\xff"
    (ev,) = run(data)
    assert (ev["encoding"], ev["raw"]) == ("UTF-16BE", FIRST)
    assert "(BE, BOM)" in ev["error"]["message"]


def test_utf32_be_bom():
    data = "\ufeff".encode("utf-32-be") + TEXT.encode("utf-32-be")
    assert data[:4] == b"\x00\x00\xfe\xff"
    (ev,) = run(data)
    assert (ev["encoding"], ev["raw"]) == ("UTF-32BE", FIRST)


@pytest.mark.parametrize(
    ("data", "encoding", "raw"),
    [
        (b"{\x00", "UTF-16LE", "{"),  # a single code unit then end of stream
        (b"\x00{", "UTF-16BE", "{"),
        (b"{\x00\x00", "UTF-16LE", "{"),  # too short for UTF-32: the UTF-16 reading
        (b"{\x00\x00\x00", "UTF-32LE", "{"),
        (b"\x00\x00\x00{", "UTF-32BE", "{"),
        (b"\xff\xfe", "UTF-16LE", ""),  # a BOM alone
        (b"\xfe\xff", "UTF-16BE", ""),
        (b"\xff\xfe\x00", "UTF-16LE", ""),  # odd trailing byte: not a whole unit, not shown
        (b"\xff\xfe\x00\x00", "UTF-32LE", ""),
        (b"\x00\x00\xfe\xff", "UTF-32BE", ""),
        (b"\n\x00", "UTF-16LE", ""),  # LF in UTF-16LE: a blank first line
        (b"\x00\n{\x00", "UTF-16BE", ""),
        (b" \x00\r\x00\n\x00x\x00", "UTF-16LE", " "),  # CR before the LF dropped
        (b"\x7f\x00\x00\x01", "UTF-16LE", "\x7f\u0100"),
    ],
)
def test_short_and_edge_streams(data: bytes, encoding: str, raw: str):
    (ev,) = run(data)
    assert_wide_stream([ev], data)
    assert (ev["encoding"], ev["raw"]) == (encoding, raw)


def test_raw_is_the_first_line_capped_at_256_bytes():
    long_line = "x" * 200 + "\n" + "y\n"
    (ev,) = run(long_line.encode("utf-16-le"))
    assert ev["raw"] == "x" * 128  # 256 bytes = 128 UTF-16 code units, no LF among them
    (ev,) = run(b"\xff\xfe" + long_line.encode("utf-16-le"))
    assert ev["raw"] == "x" * 128  # the BOM does not count against the 256
    (ev,) = run(long_line.encode("utf-32-be"))
    assert ev["raw"] == "x" * 64
    # a surrogate pair cut by the cap is an unpaired surrogate: U+FFFD
    (ev,) = run(("x" * 127 + "😀\n").encode("utf-16-le"))
    assert ev["raw"] == "x" * 127 + "\ufffd"
    (ev,) = run(("x" * 126 + "😀\n").encode("utf-16-le"))
    assert ev["raw"] == "x" * 126 + "😀"


def test_raw_replaces_invalid_units():
    lone_high, lone_low = b"\x00\xd8", b"\x00\xdc"
    data = b"a\x00" + lone_high + b"b\x00" + lone_low + b"\x3d\xd8\x00\xde" + lone_high
    (ev,) = run(data)
    assert ev["raw"] == "a\ufffdb\ufffd😀\ufffd"
    # UTF-32: beyond U+10FFFF and surrogate code points are U+FFFD
    data = b"a\x00\x00\x00" + (0x110000).to_bytes(4, "little") + (0xD800).to_bytes(4, "little")
    (ev,) = run(data)
    assert ev["raw"] == "a\ufffd\ufffd"


# -- what is not a UTF-16 stream ----------------------------------------------------------------


def test_utf8_starting_with_brace_is_unaffected():
    data = TEXT.encode()
    ev = run(data, sizes=(1, 3))
    p1 = len(FIRST) + 1
    p2 = p1 + len(json.dumps(LINES[1], ensure_ascii=False).encode()) + 1
    assert [(e["position"], e["subtype"]) for e in ev] == [
        (0, "turn_started"),
        (p1, "text"),
        (p2, "turn_completed"),
        (p2, "cumulative"),
    ]


def test_utf8_bom_still_stripped():
    ev = run(BOM8 + TEXT.encode(), sizes=(1, 2, 4))
    assert ev[0]["position"] == 3 and ev[0]["subtype"] == "turn_started"
    assert ev[0]["raw"] == FIRST


def test_utf8_with_nul_later_keeps_per_line_handling():
    data = b'{"type":"turn.started"}\n{\x00}\n\x00\x00\n' + b"\x00" * 100
    ev = run(data, sizes=(1, 5))
    assert [(e["position"], e["subtype"]) for e in ev] == [
        (0, "turn_started"),
        (24, "invalid_json"),
        (28, "non_json"),
        (31, "non_json"),
    ]


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",  # a lone NUL
        b"\x00\x00\x00\x00" * 25,  # NUL padding: 00 00 is no ASCII code unit
        b"\x00\x00\x00\x00{",
        b"\x00\x00\xfe",
        b"\x00\x80",  # not ASCII after the NUL
        b"\xe9\x00",  # `é` in UTF-16LE: a non-ASCII first character is not recognised
        b"\xff",
        b"\xfe",
        b"\xff\xff",
        b"{",
        b"{}",
        b"\n",
        b"{\x01\x00",  # the NUL is not the second byte
        b"\xef\xbb\xbf{\x00",  # after a UTF-8 BOM: offset 0 only
        b"\n{\x00",  # not at offset 0
    ],
)
def test_near_misses_are_framed_as_lines(data: bytes):
    assert wide_encoding(data) is None
    ev = run(data, sizes=(1, 2))
    assert "stream_is_utf16" not in {e["subtype"] for e in ev}


def test_a_bom_later_in_the_stream_is_data():
    data = TEXT.encode() + b"\xff\xfe{\x00\n"
    ev = run(data, sizes=(1, 7))
    assert ev[-1]["subtype"] == "invalid_utf8"


# -- bounded memory, no data silently lost ------------------------------------------------------


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_large_stream_is_counted_not_buffered(impl):
    chunk = ("x" * 500 + "\n").encode("utf-16-le")
    n = impl.Normalizer("codex")
    total = 0
    for _ in range(16 << 10):  # ~16 MiB
        assert n.feed(chunk) == []
        total += len(chunk)
    (ev,) = n.finish()
    assert ev["streamBytes"] == total
    assert ev["raw"] == "x" * 128
    if impl is checkfu_fast.reference:
        assert len(n._framer.wide._head) <= 256  # only the first bytes are kept


# -- property: realistic JSONL in a wide encoding, random chunking -------------------------------

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_records = st.dictionaries(st.sampled_from(["type", "a", "é", "😀"]), _values, min_size=1)


@given(
    records=st.lists(_records, min_size=1, max_size=6),
    codec=st.sampled_from(list(CODECS)),
    bom=st.booleans(),
    crlf=st.booleans(),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8),
    dialect=st.sampled_from(["codex", "claude", "auto"]),
)
def test_property_wide_jsonl_any_chunking(records, codec, bom, crlf, sizes, dialect):
    eol = "\r\n" if crlf else "\n"
    text = "".join(json.dumps(r, ensure_ascii=False) + eol for r in records)
    if bom and not CODECS[codec][1]:
        text = "\ufeff" + text
    data = text.encode(codec)
    note(f"data={data[:80]!r}")
    whole = checkfu_fast.normalize(data, dialect)
    assert whole == checkfu_fast.reference.normalize(data, dialect)
    ev = assert_wide_stream(whole, data)
    # raw: the first line, from at most the first 256 bytes after the BOM
    blen = wide_encoding(data)[1]
    width = 4 if "32" in codec else 2
    body = data[blen : blen + 256]
    decoded = body[: len(body) - len(body) % width].decode(ev["encoding"].lower(), "replace")
    first = decoded.split("\n")[0]
    assert ev["raw"] == (first[:-1] if "\n" in decoded and first.endswith("\r") else first)
    for impl in IMPLS.values():
        n = impl.Normalizer(dialect)
        out: list[dict] = []
        i = k = 0
        while i < len(data):
            out += n.feed(data[i : i + sizes[k % len(sizes)]])
            i += sizes[k % len(sizes)]
            k += 1
        assert out + n.finish() == whole


@given(
    head=st.sampled_from(
        [b"\xff\xfe", b"\xfe\xff", b"{\x00", b"\x00[", b"\x00\x00\x00{", b"\x00\x00\xfe\xff"]
    ),
    tail=st.binary(max_size=300),
    sizes=st.lists(st.integers(1, 17), min_size=1, max_size=6),
)
def test_property_wide_prefix_then_arbitrary_bytes(head: bytes, tail: bytes, sizes: list[int]):
    data = head + tail
    whole = checkfu_fast.normalize(data, "codex")
    assert whole == checkfu_fast.reference.normalize(data, "codex")
    assert_wide_stream(whole, data)
    assert_valid(whole)
    for impl in IMPLS.values():
        n = impl.Normalizer("codex")
        out: list[dict] = []
        i = k = 0
        while i < len(data):
            out += n.feed(data[i : i + sizes[k % len(sizes)]])
            i += sizes[k % len(sizes)]
            k += 1
        assert out + n.finish() == whole
