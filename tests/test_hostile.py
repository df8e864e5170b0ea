"""Hostile-input catalogue H1-H18 (shared/spec/reliability-notes.md §2.3, test plan §4.2-§4.5).

One test (at least) per catalogue row, named ``test_hNN_...`` with the row's title in the
docstring. Every case runs through the native core and the pure-Python reference, which must
give identical events; expected values are worked out by hand from docs/events.md (codes,
messages, 1-based columns, byte positions, counts). Where a row asks for something this package
does not do (a runner concern, or a counter the docs do not record) the docstring says so and the
test pins the closest stream-level behaviour instead.

Cases already pinned elsewhere are referenced, not repeated: framing in test_framing.py (CRLF,
bare CR, BOM placement, invalid UTF-8 repairs, over-long line cut points), budget boundaries in
test_budgets.py (depth/nodes at limit and limit+1 for small limits, 200k-deep nesting, the
999,999-element array), random chunking and arbitrary bytes in test_differential.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import checkfu_fast
import checkfu_fast.reference
from conftest import IMPLS, assert_valid, assert_wide_stream, wide_encoding

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

MiB = 1 << 20
BOM = b"\xef\xbb\xbf"
BLANK = b" \t\r\n\x0b\x0c"  # what bytes.strip() removes: the docs' definition of blank
TS = b'{"type":"turn.started"}'  # codex -> status/turn_started
assert len(TS) == 23


def canon(events: list[dict]) -> str:
    """Strict comparison key: json.dumps keeps key order and tells 1 / 1.0 / True / -0.0 apart.

    Events of one line share `raw` and `parsed` (docs/events.md), so those are dumped once per
    line (and checked to be equal on the line's other events): a line that maps to 100,000
    events is not serialized 100,000 times.
    """
    out = []
    shared = None
    for e in events:
        out.append([list(e), {k: v for k, v in e.items() if k not in ("raw", "parsed")}])
        if shared is None or shared[0] != e["position"]:
            shared = (e["position"], e["raw"], e["parsed"])
            out.append([e["raw"], e["parsed"]])
        else:
            assert e["raw"] == shared[1] and e["parsed"] == shared[2], "one line, two values"
    return json.dumps(out, ensure_ascii=True)


def validate(events: list[dict]) -> None:
    """assert_valid, with `raw`/`parsed` validated once per line (see canon)."""
    last = None
    for e in events:
        if e["position"] == last:
            e = {**e, "raw": "", "parsed": None}
        last = e["position"]
        assert_valid([e])


def feed_chunks(impl, data: bytes, size: int, dialect: str, **budgets) -> list[dict]:
    n = impl.Normalizer(dialect, **budgets)
    out: list[dict] = []
    for i in range(0, len(data), size):
        out += n.feed(data[i : i + size])
    return out + n.finish()


def run(data: bytes, dialect: str = "codex", *, chunk: int | None = 7, **budgets) -> list[dict]:
    """normalize() on both paths, plus Normalizer fed in ``chunk``-byte pieces on both paths.

    All four must give identical events, which must be schema-valid with seq = 0..n-1 and
    non-decreasing positions.
    """
    native = checkfu_fast.normalize(data, dialect, **budgets)
    ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert canon(native) == canon(ref), _first_diff(native, ref)
    if chunk is not None:
        for name, impl in IMPLS.items():
            got = feed_chunks(impl, data, chunk, dialect, **budgets)
            assert canon(got) == canon(native), f"{name} fed in {chunk}-byte chunks differs"
    validate(native)
    assert [e["seq"] for e in native] == list(range(len(native)))
    positions = [e["position"] for e in native]
    assert positions == sorted(positions)
    return native


def _first_diff(native: list[dict], ref: list[dict]) -> str:
    for i in range(max(len(native), len(ref))):
        a = native[i] if i < len(native) else None
        b = ref[i] if i < len(ref) else None
        if a != b:
            return f"native != reference at #{i}:\n native={a!r:.400}\n ref   ={b!r:.400}"
    return "native != reference (types or key order)"


def brief(events: list[dict]) -> list[tuple]:
    return [(e["position"], e["kind"], e["subtype"]) for e in events]


def assert_error(ev: dict, code: str, message: str | None = None, position: int | None = None):
    assert (ev["kind"], ev["subtype"]) == ("error", code), ev
    assert ev["error"]["code"] == code
    assert ev["error"]["errorKind"] == "semantic"
    assert ev["parsed"] is None
    if message is not None:
        assert ev["error"]["message"] == message
    if position is not None:
        assert ev["position"] == position


# -- H1 ------------------------------------------------------------------------------------------


def _nest(opener: bytes, n: int, closed: bool) -> bytes:
    if opener == b"[":
        return b"[" * n + (b"]" * n if closed else b"")
    return b'{"a":' * n + (b"1" + b"}" * n if closed else b"")


@pytest.mark.parametrize("opener", [b"[", b'{"a":'], ids=["arrays", "objects"])
@pytest.mark.parametrize("n", [64, 65, 127, 128, 1024, 10**5, 10**7])
@pytest.mark.parametrize("closed", [True, False], ids=["closed", "unclosed"])
def test_h01_deep_nesting(opener: bytes, n: int, closed: bool):
    """H1 deep nesting `[`xN, `{"a":`xN, closed and unclosed (N = 64 ... 10^7).

    Default max_depth 64: depth 64 passes (closed -> status/unknown; unclosed -> invalid_json
    "unexpected end of input" at column len+1), depth 65 and beyond -> too_deep with the
    documented message, whether or not the line is closed (the budget wins over the syntax
    error). The next line still parses.
    """
    if n == 10**7 and opener != b"[":
        n = 2 * 10**6  # 10 MB either way
    line = _nest(opener, n, closed)
    ev = run(line + b"\n" + TS + b"\n", chunk=None if n > 10**5 else 4096)
    assert len(ev) == 2
    if n <= 64:
        if closed:
            assert (ev[0]["kind"], ev[0]["subtype"]) == ("status", "unknown")
            assert ev[0]["parsed"] is not None
        else:
            msg = f"unexpected end of input at column {len(line) + 1}"
            assert_error(ev[0], "invalid_json", msg, position=0)
    else:
        assert_error(ev[0], "too_deep", "nesting depth exceeds max_depth (64)", position=0)
        assert ev[0]["raw"] == line.decode()
    assert brief(ev[1:]) == [(len(line) + 1, "status", "turn_started")]


@pytest.mark.parametrize("max_depth", [127, 128, 512])
def test_h01_depth_limits_near_serde_ceiling(max_depth: int):
    """H1 deep nesting: at exactly max_depth it parses, max_depth+1 is too_deep (127/128/512).

    512 is the documented maximum; 513 and 0 are rejected as options (InvalidOption).
    """
    for make in (lambda d: b"[" * d + b"]" * d, lambda d: b'{"a":' * d + b"1" + b"}" * d):
        ok, bad = make(max_depth), make(max_depth + 1)
        ev = run(ok + b"\n" + bad + b"\n", max_depth=max_depth, chunk=64)
        assert brief(ev) == [(0, "status", "unknown"), (len(ok) + 1, "error", "too_deep")]
        assert ev[1]["error"]["message"] == f"nesting depth exceeds max_depth ({max_depth})"
    for impl in IMPLS.values():
        for bad_option in (0, 513):
            with pytest.raises(ValueError):
                impl.normalize(b"[]", "codex", max_depth=bad_option)


# -- H2 ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("item", [b"0", b"[]", b"{}"])
def test_h02_huge_array_of_tiny_items(item: bytes):
    """H2 a huge array of tiny items (`[0,...]`, `[[],...]`, `[{},...]`).

    A line has 1 + (number of items) nodes. Default max_nodes 1,000,000: 999,999 items pass,
    1,000,000 items -> too_many_nodes (the amplifying `[{},...]` never becomes Python objects);
    the next line parses.
    """
    ok = b"[" + b",".join([item] * 999_999) + b"]"
    bad = b"[" + b",".join([item] * 1_000_000) + b"]"
    ev = run(ok + b"\n" + bad + b"\n" + TS, chunk=None)
    assert brief(ev) == [
        (0, "status", "unknown"),
        (len(ok) + 1, "error", "too_many_nodes"),
        (len(ok) + len(bad) + 2, "status", "turn_started"),
    ]
    assert len(ev[0]["parsed"]) == 999_999
    assert ev[0]["parsed"][-1] == json.loads(item)
    assert ev[1]["error"]["message"] == "node count exceeds max_nodes (1000000)"
    assert ev[1]["raw"] == bad.decode()


# -- H3 ------------------------------------------------------------------------------------------


def test_h03_long_string_accepted_up_to_max_line_bytes():
    """H3 a long string (a 64 MiB base64 "image").

    A line of exactly max_line_bytes (default 64 MiB) holding one huge string is accepted and
    parsed (the string is 1 node: `["..."]` passes max_nodes=2); one byte more is
    line_too_long with lineBytes = 64 MiB + 1.
    """
    head, tail = b'["', b'"]'
    body = b"QUJD" * ((64 * MiB - len(head) - len(tail)) // 4)
    line = head + body + tail
    assert len(line) == 64 * MiB
    ev = run(line + b"\n[1]", max_nodes=2, chunk=None)
    assert brief(ev) == [(0, "status", "unknown"), (64 * MiB + 1, "status", "unknown")]
    assert ev[0]["parsed"] == [body.decode()]
    del ev
    longer = head + body + b"=" + tail
    ev = run(longer + b"\n" + TS, chunk=None)
    assert_error(ev[0], "line_too_long", position=0)
    assert ev[0]["lineBytes"] == 64 * MiB + 1
    assert ev[0]["truncated"] is True
    assert len(ev[0]["raw"]) == 64 * MiB
    assert brief(ev[1:]) == [(64 * MiB + 2, "status", "turn_started")]


# -- H4 ------------------------------------------------------------------------------------------


def test_h04_many_keys_and_duplicate_keys():
    """H4 many keys, or many duplicate keys.

    An object of k keys is 1 + 2k nodes: 100,000 distinct keys pass at max_nodes=200,001 and
    fail at 200,000. 200,000 copies of `"type"` keep the last value at the first key's position
    (docs: Python-dict semantics), so the dialect sees the last `type`. The docs record no
    `duplicate_keys` counter (the notes suggest one): the event carries no such extra field.
    """
    k = 100_000
    many = b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(k)) + b"}"
    ev = run(many, max_nodes=1 + 2 * k, chunk=None)
    assert brief(ev) == [(0, "status", "unknown")]
    assert len(ev[0]["parsed"]) == k
    assert list(ev[0]["parsed"])[:3] == ["k0", "k1", "k2"]
    assert_error(run(many, max_nodes=2 * k, chunk=None)[0], "too_many_nodes")

    dups = b"{" + b'"type":"x",' * 199_999 + b'"seq":1,"type":"turn.started"}'
    ev = run(dups + b"\n", chunk=None)
    assert brief(ev) == [(0, "status", "turn_started")]
    assert ev[0]["parsed"] == {"type": "turn.started", "seq": 1}
    assert list(ev[0]["parsed"]) == ["type", "seq"]  # first key's position, last value
    assert set(ev[0]) == {"v", "seq", "position", "dialect", "kind", "subtype", "nativeType"} | {
        "raw",
        "parsed",
    }


# -- H5 ------------------------------------------------------------------------------------------


def test_h05_escaped_lone_surrogates_repaired_and_counted():
    """H5 escaped lone surrogates `"\\ud800"`, `"\\udc00"`, `"\\ud800\\u0041"`, in keys.

    Each unpaired surrogate escape becomes U+FFFD and is counted in `repairedSurrogates` on
    every event of the line; a valid pair joins and is not counted; a line with none has no
    such field. Output is always encodable as UTF-8.
    """
    line = (
        b'{"type":"x","a":"\\ud800","b":"\\udc00","c":"\\ud800\\u0041",'
        b'"\\udbff":"\\ud83d\\ude00","d":"\\ud800\\ud800","e":"\\uDFFF\\uD800\\uDC00"}'
    )
    ev = run(line + b"\n" + b'"\\ud83d"\n' + b'["\\ud83d\\ude00"]\n')
    assert brief(ev) == [
        (0, "status", "unknown"),
        (len(line) + 1, "status", "unknown"),  # `"\ud83d"` is 8 bytes + LF
        (len(line) + 10, "status", "unknown"),
    ]
    assert ev[0]["parsed"] == {
        "type": "x",
        "a": "\ufffd",
        "b": "\ufffd",
        "c": "\ufffdA",
        "\ufffd": "\U0001f600",
        "d": "\ufffd\ufffd",
        "e": "\ufffd\U00010000",
    }
    # a, b, c, the key, d twice, e's lone low surrogate: 7
    assert ev[0]["repairedSurrogates"] == 7
    assert (ev[1]["parsed"], ev[1]["repairedSurrogates"]) == ("\ufffd", 1)
    assert ev[2]["parsed"] == ["\U0001f600"]
    assert "repairedSurrogates" not in ev[2]
    for e in ev:
        json.dumps(e, ensure_ascii=False).encode("utf-8")  # no lone surrogate survives


def test_h05_surrogates_in_mapped_fields():
    """H5 escaped lone surrogates, in a field a dialect maps (codex turn.failed / error).

    The repaired text reaches `error.message`; both events carry the count.
    """
    data = (
        b'{"type":"turn.failed","error":{"message":"cut \\ud83d"}}\n'
        b'{"type":"error","message":"\\udc00\\udc00"}\n'
    )
    ev = run(data)
    assert [(e["subtype"], e["error"]["message"], e["repairedSurrogates"]) for e in ev] == [
        ("turn_failed", "cut \ufffd", 1),
        ("api_error", "\ufffd\ufffd", 2),
    ]


# -- H6 ------------------------------------------------------------------------------------------


def test_h06_raw_invalid_utf8_costs_one_line():
    """H6 raw invalid UTF-8 (overlong, ED A0 80, truncated sequence at the line end, `\\xff`).

    Each bad line is one `invalid_utf8` error whose message gives the offset of the first bad
    byte within the line; the stream continues. (Replacement-character counts per sequence are
    pinned in test_framing.py::test_invalid_utf8.)
    """
    bad = [
        (b'{"a":"\xc0\xaf"}', 6),  # overlong "/"
        (b'["\xed\xa0\x80"]', 2),  # UTF-8-encoded surrogate U+D800
        (b"tail \xe2\x82", 5),  # 3-byte sequence cut at the end of the line
        (b"\xff", 0),
        (b'{"type":"turn.started"}\xf0\x9f\x98', 23),  # cut emoji after a valid object
    ]
    data = b"".join(line + b"\n" + TS + b"\n" for line, _ in bad)
    ev = run(data)
    pos = 0
    expected = []
    for line, _ in bad:
        expected += [
            (pos, "error", "invalid_utf8"),
            (pos + len(line) + 1, "status", "turn_started"),
        ]
        pos += len(line) + 1 + len(TS) + 1
    assert brief(ev) == expected
    for e, (_, offset) in zip(ev[::2], bad, strict=True):
        assert_error(e, "invalid_utf8", f"invalid UTF-8 at byte {offset}")
    # a truncated sequence at the very end of the stream (no LF) is the same error
    ev = run(TS + b"\n" + b"\xe4\xb8")
    assert_error(ev[1], "invalid_utf8", "invalid UTF-8 at byte 0", position=24)
    assert ev[1]["raw"] == "\ufffd"


# -- H7 ------------------------------------------------------------------------------------------


def test_h07_non_json_numbers_rejected():
    """H7 `NaN`, `Infinity`, `-Infinity`, `1e999999`, `-1e400`, `1` + 10^7 digits.

    In a JSON candidate line: `NaN`/`Infinity` are not a value start ("expected value"),
    `-Infinity` is a `-` with no digit ("invalid number"), overflowing floats and integers of
    more than 4,000 digits are "number out of range" (column = the number's first byte); no
    inf/NaN ever reaches an event. The same tokens as a bare line are not JSON scalars:
    status/non_json. The docs name no `non_json_number` code: all are `invalid_json`.
    """
    usage = b'{"type":"turn.completed","usage":{"input_tokens":'
    cases = [
        (b"[NaN]", "expected value at column 2"),
        (b'{"a":Infinity}', "expected value at column 6"),
        (b"[-Infinity]", "invalid number at column 2"),
        (b"[1e999999]", "number out of range at column 2"),
        (b"[-1e400]", "number out of range at column 2"),
        (b"[1" + b"0" * 10**7 + b"]", "number out of range at column 2"),
        (b"[1" + b"0" * 4000 + b"]", "number out of range at column 2"),  # 4001 digits
        (usage + b"1e400}}", f"number out of range at column {len(usage) + 1}"),
    ]
    data = b"".join(line + b"\n" for line, _ in cases)
    ev = run(data + TS, chunk=None)
    assert [e["subtype"] for e in ev] == ["invalid_json"] * len(cases) + ["turn_started"]
    pos = 0
    for e, (line, message) in zip(ev, cases, strict=False):
        assert_error(e, "invalid_json", message, position=pos)
        pos += len(line) + 1
    assert ev[-1]["position"] == pos
    # the boundary: 4000 digits is an exact int
    ev = run(b"[" + b"9" * 4000 + b"]")
    assert ev[0]["parsed"] == [10**4000 - 1]
    # many runs just under the limit, and one over it at the end (the reference's long-run
    # search starts only at a run's first digit: this line once took it 4 s)
    many = b"[" + b",".join([b"7" * 3999] * 300) + b"]"
    ev = run(many)
    assert ev[0]["parsed"] == [int("7" * 3999)] * 300
    ev = run(many[:-1] + b",1" + b"0" * 4000 + b"]")
    assert ev[0]["error"]["message"] == f"number out of range at column {len(many) + 1}"
    for word in (b"NaN", b"Infinity", b"-Infinity", b"1e999999", b"-1e400"):
        ev = run(word + b"\n")
        assert [(e["subtype"], e["text"]) for e in ev] == [("non_json", word.decode())]


# -- H8 ------------------------------------------------------------------------------------------


def test_h08_nul_bytes():
    """H8 NUL bytes: escaped `\\u0000`, raw NUL inside/outside a string, a NUL-only tail.

    Escaped NUL is kept in the parsed value. A raw NUL inside a string is "control character in
    string", after a key "expected ':'", after the value "trailing characters" (all
    invalid_json). A NUL-padded tail with no LF does not start with `{`/`[`, so it is
    status/non_json (not invalid_json as the notes suggest) and bounded by max_line_bytes.
    """
    data = (
        b'{"type":"x","s":"a\\u0000b"}\n'  # 0, 27 bytes
        b'{"s":"a\x00b"}\n'  # 28
        b'{"a"\x00:1}\n'  # 40
        b'{"a":1}\x00\n'  # 49
        + TS
        + b"\n"  # 58
        + b"\x00" * 4096  # 82, no LF: a crash-truncated, NUL-padded file
    )
    ev = run(data)
    assert brief(ev) == [
        (0, "status", "unknown"),
        (28, "error", "invalid_json"),
        (40, "error", "invalid_json"),
        (49, "error", "invalid_json"),
        (58, "status", "turn_started"),
        (82, "status", "non_json"),
    ]
    assert ev[0]["parsed"] == {"type": "x", "s": "a\x00b"}
    assert ev[1]["error"]["message"] == "control character in string at column 8"
    assert ev[2]["error"]["message"] == "expected ':' at column 5"
    assert ev[3]["error"]["message"] == "trailing characters at column 8"
    assert ev[5]["text"] == "\x00" * 4096
    ev = run(data, max_line_bytes=100)
    assert_error(ev[-1], "line_too_long", position=82)
    assert (ev[-1]["lineBytes"], ev[-1]["raw"]) == (4096, "\x00" * 100)


# -- H9 ------------------------------------------------------------------------------------------


def test_h09_cr_is_not_a_line_break():
    """H9 CRLF endings, a bare CR between values `{}\\r{}`, CR-only files.

    Split on LF only: `{}\\r\\n` is one object; `{}\\r{}` is one line, invalid_json "trailing
    characters at column 4"; a CR-only "file" of two records is one line (its final CR is data:
    JSON whitespace), column 9. Not universal newlines. More bare-CR cases: test_framing.py.
    """
    ev = run(b"{}\r\n{}\r{}\r\n" + b'{"a":1}\r{"b":2}\r')
    assert brief(ev) == [
        (0, "status", "unknown"),
        (4, "error", "invalid_json"),
        (11, "error", "invalid_json"),
    ]
    assert ev[0]["parsed"] == {}
    assert ev[1]["error"]["message"] == "trailing characters at column 4"
    assert ev[1]["raw"] == "{}\r{}"
    assert ev[2]["error"]["message"] == "trailing characters at column 9"
    assert ev[2]["raw"] == '{"a":1}\r{"b":2}\r'
    # a CR-only text file: one non_json line, the CRs kept in `text`
    ev = run(b"line one\rline two\rline three\r")
    assert [(e["subtype"], e["text"]) for e in ev] == [
        ("non_json", "line one\rline two\rline three\r")
    ]


# -- H10 -----------------------------------------------------------------------------------------


def test_h10_last_line_without_newline():
    """H10 last line without `\\n`.

    The unterminated tail is emitted by finish(), identical to the same line with an LF (the
    docs record no `terminated` flag). A half-written final line (a child killed mid-write) is
    an ordinary invalid_json error; flagging `truncated_final_line` is the runner's job, which
    this package does not have, so only the stream-level behaviour is pinned.
    """
    assert run(TS + b"\n" + TS) == run(TS + b"\n" + TS + b"\n")
    half = b'{"type":"item.completed","item":{"content":['
    for impl in IMPLS.values():
        n = impl.Normalizer("codex")
        first = n.feed(TS + b"\n" + half)
        assert brief(first) == [(0, "status", "turn_started")]
        last = n.finish()
        assert brief(last) == [(24, "error", "invalid_json")]
        assert last[0]["seq"] == 1
        assert last[0]["error"]["message"] == f"unexpected end of input at column {len(half) + 1}"
        assert last[0]["raw"] == half.decode()
        assert n.finish() == []
    run(TS + b"\n" + half)


# -- H11 -----------------------------------------------------------------------------------------


def test_h11_bom_and_utf16():
    """H11 a UTF-8 BOM at the stream start; BOMs mid-stream; UTF-16 streams.

    BOM at offset 0: skipped, counted in positions (no warning event: the docs record none).
    A later BOM is data (status/non_json). A UTF-16 stream is detected once, from its first
    bytes (a BOM `FF FE` / `FE FF`, or the NUL pattern of the first code unit), and gives
    exactly one `error/stream_is_utf16` event for the whole stream instead of one per line.
    More cases (UTF-32, every chunking, near misses): test_utf16.py; more BOM placements:
    test_framing.py.
    """
    ev = run(BOM + TS + b"\n" + BOM + TS + b"\n")
    assert brief(ev) == [(3, "status", "turn_started"), (27, "status", "non_json")]
    assert ev[1]["text"] == "\ufeff" + TS.decode()

    utf16 = (TS + b"\n" + TS + b"\n").decode().encode("utf-16")  # FF FE + little-endian
    assert utf16[:2] == b"\xff\xfe" and len(utf16) == 98
    ev = run(utf16, chunk=1)
    assert brief(ev) == [(0, "error", "stream_is_utf16")]
    assert ev[0]["error"]["message"] == (
        "stream is UTF-16 (LE, BOM); checkfu reads UTF-8 JSONL: re-encode the input as UTF-8 "
        "(98 bytes skipped)"
    )
    assert (ev[0]["encoding"], ev[0]["streamBytes"], ev[0]["raw"]) == ("UTF-16LE", 98, TS.decode())

    ev = run((TS + b"\n").decode().encode("utf-16-le"), chunk=1)
    assert brief(ev) == [(0, "error", "stream_is_utf16")]
    assert ev[0]["error"]["message"].startswith("stream is UTF-16 (LE, no BOM);")


# -- H12 -----------------------------------------------------------------------------------------


def test_h12_line_too_long_is_skipped_and_reported():
    """H12 a line longer than the cap (e.g. 200 MiB; 1 GiB with no `\\n`), scaled down.

    One line_too_long per over-long line with `lineBytes` (the full length), `truncated`, raw =
    the first max_line_bytes bytes, the message naming both numbers; the next line parses.
    A stream with no LF at all is one over-long line, reported by finish(). Memory bounds:
    test_h12_bounded_memory_* below and test_framing.py.
    """
    cap = 1000
    data = b"x" * 2500 + b"\r\n" + TS + b"\n" + b"y" * cap + b"\n" + b"z" * 7001
    ev = run(data, max_line_bytes=cap, chunk=333)
    assert brief(ev) == [
        (0, "error", "line_too_long"),
        (2502, "status", "turn_started"),
        (2526, "status", "non_json"),
        (3527, "error", "line_too_long"),
    ]
    assert (ev[0]["lineBytes"], ev[0]["raw"], ev[0]["truncated"]) == (2500, "x" * cap, True)
    assert ev[0]["error"]["message"] == (
        "line of 2500 bytes exceeds max_line_bytes (1000); raw holds its first 1000 bytes"
    )
    assert (ev[3]["lineBytes"], ev[3]["raw"]) == (7001, "z" * cap)
    for impl in IMPLS.values():
        n = impl.Normalizer("codex", max_line_bytes=cap)
        for _ in range(100):
            assert n.feed(b"q" * 999) == []  # nothing until the line ends
        (only,) = n.finish()
        assert (only["position"], only["subtype"], only["lineBytes"]) == (
            0,
            "line_too_long",
            99_900,
        )


# -- H13 -----------------------------------------------------------------------------------------


def test_h13_blank_and_whitespace_lines():
    """H13 blank and whitespace-only lines.

    Lines of only space, tab, CR, VT, FF emit nothing and do not shift later positions (the docs
    record no `blank_lines` counter). Other "whitespace" is not blank: \\x1c (str.splitlines
    splits on it, bytes.strip does not strip it), NBSP and U+3000 lines are non_json, a lone
    \\x85 byte is invalid UTF-8. An over-long blank line is line_too_long (checked first).
    """
    data = b"\n \n\t\t\n\x0b\x0c\n\r\n \r\n" + TS + b"\n\x1c\n\xc2\xa0\n\xe3\x80\x80\n\x85\n \t \n"
    ev = run(data)
    assert brief(ev) == [
        (14, "status", "turn_started"),
        (38, "status", "non_json"),
        (40, "status", "non_json"),
        (43, "status", "non_json"),
        (47, "error", "invalid_utf8"),
    ]
    assert [e.get("text") for e in ev[1:4]] == ["\x1c", "\u00a0", "\u3000"]
    ev = run(b"   \t\t\n[1]", max_line_bytes=4)
    assert_error(ev[0], "line_too_long", position=0)
    assert (ev[0]["lineBytes"], ev[0]["raw"]) == (5, "   \t")
    assert brief(ev[1:]) == [(6, "status", "unknown")]


# -- H14 -----------------------------------------------------------------------------------------


def test_h14_non_json_noise_on_stdout():
    """H14 non-JSON noise on stdout (npm warnings, `Debugger attached.`, ANSI, `\\r` progress).

    Each noise line is one status/non_json whose `text` is the whole line, control bytes and all
    (the docs record no 256-byte preview cap: text is bounded only by max_line_bytes), never
    fatal. Noise starting with `{`/`[` is invalid_json. JSON behind an ANSI prefix is not
    recovered (first byte is ESC, not `{`).
    """
    noise = [
        b"npm WARN deprecated inflight@1.0.6: This module is not supported",
        b"Debugger attached.",
        b'\x1b[0m{"type":"turn.started"}',
        "\x1b[2K\r 45% |████      |\r 90% |█████████ |".encode(),
        b"Waiting for the debugger to disconnect...",
        b"#" * 100_000,
    ]
    data = b"".join(line + b"\n" for line in noise) + b"[ERROR] boom\n{not json\n" + TS
    ev = run(data, chunk=4096)
    assert [e["subtype"] for e in ev] == ["non_json"] * 6 + ["invalid_json"] * 2 + ["turn_started"]
    pos = 0
    for e, line in zip(ev, noise, strict=False):
        assert (e["position"], e["kind"], e["text"], e["raw"]) == (
            pos,
            "status",
            line.decode(),
            line.decode(),
        )
        assert e["parsed"] is None
        pos += len(line) + 1
    assert ev[6]["error"]["message"] == "expected value at column 2"
    assert ev[7]["error"]["message"] == "expected string key at column 2"
    assert ev[8]["position"] == pos + 13 + 10


# -- H15 -----------------------------------------------------------------------------------------


def test_h15_valid_json_wrong_shape():
    """H15 valid JSON but the wrong shape (top-level array/scalar, `type` missing or not a
    string, a 10^6-element `content` list, the same `id` reused).

    Every such line is status/unknown with `parsed` kept (claude dialect), never an exception.
    A 10^6-element content list sits at the node budget exactly: 7 + 999,993 = 1,000,000 nodes
    pass (and map to nothing -> unknown), one more element -> too_many_nodes. The docs have no
    max_inspection_work budget; the closest check is that a 2,000-block content list maps
    to 2,000 events (time: test_h15_many_events_per_line_is_linear). Ids are not deduplicated
    (normalization is stateless per line).
    """
    wrong = [
        (b'[{"type":"assistant"}]', [{"type": "assistant"}]),
        (b"42", 42),
        (b'{"message":{"content":"hi"}}', {"message": {"content": "hi"}}),
        (b'{"type":7}', {"type": 7}),
        (b'{"type":["assistant"]}', {"type": ["assistant"]}),
        (b'{"type":"assistant","message":"text"}', {"type": "assistant", "message": "text"}),
        (b'{"type":"assistant","message":{"content":{}}}', None),
    ]
    ev = run(b"\n".join(line for line, _ in wrong), "claude")
    assert [(e["kind"], e["subtype"]) for e in ev] == [("status", "unknown")] * len(wrong)
    for e, (line, value) in zip(ev, wrong, strict=True):
        assert e["parsed"] == (json.loads(line) if value is None else value)

    head = b'{"type":"assistant","message":{"content":['
    at_budget = head + b",".join([b"0"] * 999_993) + b"]}}"
    over = head + b",".join([b"0"] * 999_994) + b"]}}"
    ev = run(at_budget + b"\n" + over, "claude", chunk=None)
    assert brief(ev) == [(0, "status", "unknown"), (len(at_budget) + 1, "error", "too_many_nodes")]
    assert len(ev[0]["parsed"]["message"]["content"]) == 999_993

    line = head + b",".join([b'{"type":"text","text":"a"}'] * 2_000) + b"]}}"
    ev = run(line, "claude", chunk=None)
    assert len(ev) == 2_000
    assert {(e["kind"], e["subtype"], e["role"], e["text"]) for e in ev} == {
        ("message", "text", "assistant", "a")
    }

    call = b'{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_1",'
    call += b'"name":"Bash","input":{"command":"ls"}}]}}'
    ev = run(call + b"\n" + call + b"\n", "claude")
    assert [(e["kind"], e["tool"]) for e in ev] == [
        ("tool_call", {"name": "Bash", "arguments": {"command": "ls"}, "id": "toolu_1"})
    ] * 2
    assert [e["position"] for e in ev] == [0, len(call) + 1]


@pytest.mark.parametrize(
    "impl",
    [
        pytest.param(checkfu_fast, id="native"),
        pytest.param(checkfu_fast.reference, id="reference"),
    ],
)
def test_h15_many_events_per_line_is_linear(impl):
    """H15 valid JSON but the wrong shape: a huge `content` list (40,000 text blocks, 200,007
    nodes, well inside the default budgets) must map to its 40,000 events (work linear in the
    line; its speed is shown in benches/test_bench_hostile.py, never asserted here).

    Regression for a native bug found here: rust/py/convert.rs Shared::note/get scanned Vecs per
    value node, O(events x nodes) (40,000 blocks: ~4 s native vs 0.27 s reference).
    """
    head = b'{"type":"assistant","message":{"content":['
    line = head + b",".join([b'{"type":"text","text":"a"}'] * 40_000) + b"]}}"
    ev = impl.normalize(line, "claude")
    assert len(ev) == 40_000


# -- H16 -----------------------------------------------------------------------------------------


def test_h16_unicode_line_separators_do_not_split():
    """H16 raw U+2028/U+2029/U+0085 inside strings.

    Only LF ends a line: raw U+2028, U+2029, U+0085 inside a JSON string (value or key) or a
    text line, and VT, FF, FS/GS/RS (which str.splitlines() also splits on) inside a text line,
    leave it one line.
    """
    seps = "\u2028\u2029\u0085"  # legal raw in a JSON string (not C0 controls)
    obj = ('{"type":"x","s":"a' + seps + 'b","\u2028":1}').encode()
    text = ("hello" + seps + "\x0b\x0c\x1c\x1d\x1eworld").encode()
    ev = run(obj + b"\n" + text + b"\n" + TS)
    assert brief(ev) == [
        (0, "status", "unknown"),
        (len(obj) + 1, "status", "non_json"),
        (len(obj) + len(text) + 2, "status", "turn_started"),
    ]
    assert ev[0]["parsed"] == {"type": "x", "s": "a" + seps + "b", "\u2028": 1}
    assert ev[1]["text"] == "hello" + seps + "\x0b\x0c\x1c\x1d\x1eworld"


# -- H17 -----------------------------------------------------------------------------------------

REGEX_HOSTILE = {
    # classic backtracking bait for naive string / token regexes
    "a_bang": b'{"type":"error","message":"' + b"a" * 50_000 + b'!"}',
    "escaped_quotes_unterminated": b'["' + b'\\"' * 100_000,
    "backslash_run": b'["' + b"\\\\" * 100_000 + b'"]',
    "surrogate_lookalikes": b'["' + b"\\ud8" * 50_000 + b'"]',
    "classifier_needle_prefixes": b'{"type":"error","message":"'
    + b"rate limi" * 20_000
    + b'http 42"}',
}


@pytest.mark.parametrize("name", list(REGEX_HOSTILE))
def test_h17_regex_hostile_strings(name: str):
    """H17 regex-hostile strings for any normalizer that uses Python `re` (`"a"*50000+"!"`).

    Each line is handled on both paths in well under a second (linear scanners / bounded
    regexes), with the documented outcome.
    """
    line = REGEX_HOSTILE[name]
    ev = run(line + b"\n" + TS, chunk=None)
    assert brief(ev[1:]) == [(len(line) + 1, "status", "turn_started")]
    first = ev[0]
    if name == "a_bang":
        assert (first["subtype"], first["error"]["errorKind"]) == ("api_error", "semantic")
        assert first["error"]["message"] == "a" * 50_000 + "!"
    elif name == "escaped_quotes_unterminated":
        assert_error(first, "invalid_json", "unterminated string at column 2")
    elif name == "backslash_run":
        assert first["parsed"] == ["\\" * 100_000]
    elif name == "surrogate_lookalikes":
        assert_error(first, "invalid_json", "invalid \\u escape at column 3")
    else:
        # no needle matches completely and "42" is not a 3-digit status: semantic
        assert (first["subtype"], first["error"]["errorKind"]) == ("api_error", "semantic")


@pytest.mark.parametrize(
    "impl",
    [
        pytest.param(checkfu_fast, id="native"),
        pytest.param(checkfu_fast.reference, id="reference"),
    ],
)
def test_h17_error_classifier_is_linear(impl):
    """H17 regex-hostile strings: the error classifier's status scan on a message made of
    160,000 standalone 3-digit runs (640 KB).

    Only the first run is a status (start of message; the rest follow a space, not a status
    word), and 100 is neither 429 nor 5xx: semantic. Speed is a benchmark matter, not asserted.

    Regression for a reference bug found here: events.status_codes copied low[:m.start()] per
    3-digit run, O(n x matches) (this line: ~1.5 s reference vs ~3 ms native).
    """
    line = b'{"type":"error","message":"' + b"100 " * 160_000 + b'"}'
    ev = impl.normalize(line, "codex")
    assert (ev[0]["subtype"], ev[0]["error"]["errorKind"]) == ("api_error", "semantic")


# -- H18 -----------------------------------------------------------------------------------------

_H18_STREAM = (
    BOM
    + TS
    + b"\r\n"
    + '{"type":"x","s":"é中😀"}\r\n'.encode()
    + b'{"type":"x","s":"\\ud83d\\ude00\\u00e9\\ud800"}\n'
    + b"\xe4\xb8\r\n"  # invalid UTF-8, CR before LF
    + "banner ✓\r".encode()  # bare CR at the end of the stream, no LF
)


def test_h18_every_chunk_boundary_gives_the_same_events():
    """H18 chunk-boundary splits (one byte per read, inside `\\r\\n`, multi-byte UTF-8, `\\u`).

    Every two-way split of a stream with a BOM, CRLFs, 2/3/4-byte UTF-8, `\\uXXXX` escapes,
    an invalid sequence and a trailing bare CR, plus one byte per feed(), gives exactly the
    events of a single read on both paths. Random chunking: test_differential.py and the
    property test below.
    """
    data = _H18_STREAM
    whole = run(data, chunk=1)
    assert brief(whole) == [
        (3, "status", "turn_started"),
        (28, "status", "unknown"),
        (58, "status", "unknown"),
        (102, "error", "invalid_utf8"),
        (106, "status", "non_json"),
    ]
    assert whole[2]["parsed"] == {"type": "x", "s": "😀é\ufffd"}
    assert whole[2]["repairedSurrogates"] == 1
    assert whole[4]["text"] == "banner ✓\r"
    want = canon(whole)
    for name, impl in IMPLS.items():
        for i in range(len(data) + 1):
            n = impl.Normalizer("codex")
            got = n.feed(data[:i]) + n.feed(data[i:]) + n.finish()
            assert canon(got) == want, f"{name}: split at {i} differs"


# -- property: arbitrary bytes fed in random chunk sizes ------------------------------------------

_junk = st.lists(
    st.one_of(
        st.binary(max_size=6),
        st.sampled_from(
            [
                b"\n",
                b"\r",
                b"\r\n",
                b" ",
                b"\x0b",
                b"\x0c",
                b"\t",
                BOM,
                b"{",
                b"}",
                b"[",
                b"]",
                b'"',
                b":",
                b",",
                b"\\u",
                b"\\ud800",
                b"\\udc00",
                b"\xc3",
                b"\xa9",
                b"\xe2\x80\xa8",
                b"\xf0\x9f\x98",
                b"\x00",
                b"\x1b[0m",
                b"NaN",
                b"1e400",
                b"-",
                TS,
                b'{"type":"error","message":"429"}',
                b'{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}',
            ]
        ),
    ),
    max_size=40,
).map(b"".join)

_budgets = st.one_of(
    st.just({}),
    st.fixed_dictionaries(
        {},
        optional={
            "max_line_bytes": st.integers(1, 64),
            "max_depth": st.integers(1, 4),
            "max_nodes": st.integers(1, 12),
        },
    ),
)


def _nonblank_line_starts(data: bytes) -> tuple[list[int], set[int]]:
    """Start offsets of the non-blank lines, framed per the docs, and of the blank ones."""
    start = 3 if data.startswith(BOM) else 0
    nonblank, blank = [], set()
    for piece in data[start:].split(b"\n"):
        (nonblank.append if piece.strip(BLANK) else blank.add)(start)
        start += len(piece) + 1
    return nonblank, blank


@given(
    data=st.one_of(st.binary(max_size=300), _junk),
    sizes=st.lists(st.integers(1, 64), min_size=1, max_size=16),
    dialect=st.sampled_from(["codex", "claude", "auto"]),
    budgets=_budgets,
)
def test_property_random_chunk_sizes_never_raise_and_lose_nothing(
    data: bytes, sizes: list[int], dialect: str, budgets: dict
):
    """H18 / P1+P2: arbitrary bytes fed through Normalizer in random chunk sizes.

    test_differential.py checks arbitrary bytes through normalize() and random cut points;
    this adds chunk *sizes* (cycled), budgets and the lost-line invariant on the chunked output
    itself: never an exception, native == reference == normalize(), every non-blank line has an
    event at its position, in order, and events sit only at line starts.
    """
    note(f"data={data!r} sizes={sizes}")
    whole = checkfu_fast.normalize(data, dialect, **budgets)
    outs = {}
    for name, impl in IMPLS.items():
        n = impl.Normalizer(dialect, **budgets)
        out: list[dict] = []
        i = k = 0
        while i < len(data):
            size = sizes[k % len(sizes)]
            out += n.feed(data[i : i + size])
            i += size
            k += 1
        outs[name] = out + n.finish()
    assert canon(outs["native"]) == canon(outs["reference"]) == canon(whole)
    assert_valid(whole)
    assert [e["seq"] for e in whole] == list(range(len(whole)))
    if wide_encoding(data):
        assert_wide_stream(whole, data)  # UTF-16/UTF-32: one event for the stream, no lines
        return
    positions = [e["position"] for e in whole]
    assert positions == sorted(positions)
    nonblank, blank = _nonblank_line_starts(data)
    seen = set(positions)
    assert set(nonblank) <= seen, f"lines lost at {sorted(set(nonblank) - seen)}"
    for e in whole:
        if e["position"] not in nonblank:
            # an over-long blank line is still reported; nothing else lands off a line start
            assert e["position"] in blank and e["subtype"] == "line_too_long", e


# -- H12 bounded memory ---------------------------------------------------------------------------

_MEMORY_SCRIPT = textwrap.dedent(
    """
    import importlib, json, resource, sys, time

    impl = importlib.import_module(sys.argv[1])
    total, big, medium, cap, mode = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \\
        int(sys.argv[5]), sys.argv[6]
    MiB = 1 << 20
    fill = b"A" * MiB
    small = b'{"type":"turn.started"}\\n'

    def json_line(size):
        # {"type":"x","d":"AAA..."} of exactly `size` bytes, then LF; yielded in 1 MiB pieces
        head, tail = b'{"type":"x","d":"', b'"}'
        yield head
        rest = size - len(head) - len(tail)
        while rest >= MiB:
            yield fill
            rest -= MiB
        yield fill[:rest]
        yield tail + b"\\n"

    def chunks():
        if mode == "nolf":
            for _ in range(total // MiB):
                yield fill
            return
        yield small * 1000
        yield from json_line(medium)
        yield from json_line(big)
        sent = 1000 * len(small) + medium + 1 + big + 1
        while sent + MiB + len(small) <= total:
            yield from json_line(MiB - 1)
            sent += MiB
        smalls = (total - sent) // len(small)
        for i in range(0, smalls, 2730):  # 64 KiB reads: one feed's events stay few
            yield small * min(2730, smalls - i)
        yield b" " * ((total - sent) % len(small))  # a blank tail: exactly `total` bytes

    def peak_rss_kb():
        # VmHWM = this address space's peak RSS. getrusage(RUSAGE_SELF).ru_maxrss is
        # max(VmHWM, the pre-exec image's peak), i.e. the forking pytest parent's size, so it
        # hides growth below that; VmHWM can also be reset (clear_refs "5") to the current RSS,
        # dropping the import-time peak whose freed memory later allocations would reuse unseen.
        with open("/proc/self/status") as f:
            return next(int(x.split()[1]) for x in f if x.startswith("VmHWM:"))

    n = impl.Normalizer("codex", max_line_bytes=cap)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before = peak_rss_kb()
    t0 = time.perf_counter()
    fed = 0
    summary = []  # events are summarized and dropped at once: a consumer does not hoard them

    def take(events):
        for e in events:
            item = [e["seq"], e["position"], e["subtype"], e.get("lineBytes"), len(e["raw"])]
            if summary and summary[-1][0][2:] == item[2:]:
                summary[-1][1] += 1  # run-length encode identical events,
                summary[-1][0][:2] = item[:2]  # keeping the last seq and position of the run
            else:
                summary.append([item, 1])

    for c in chunks():
        fed += len(c)
        take(n.feed(c))
    take(n.finish())
    elapsed = time.perf_counter() - t0
    after = peak_rss_kb()
    print(json.dumps({"fed": fed, "seconds": elapsed, "growth_kb": after - before,
                      "peak_kb": after,
                      "ru_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "summary": summary}))
    """
)


def _memory_run(module: str, total: int, big: int, medium: int, cap: int, mode: str) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, module, *map(str, (total, big, medium, cap)), mode],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    return json.loads(res.stdout)


def _expected_summary(total: int, big: int, medium: int, cap: int) -> list:
    """The events of the generated stream, derived from the framing rules (run-length form).

    Each item: [[seq, last position, subtype, lineBytes, len(raw)], count].
    """
    small = 24
    pos = 1000 * small
    out = [[[999, pos - small, "turn_started", None, 23], 1000]]
    out.append([[1000, pos, "unknown", None, medium], 1])  # under the cap: parsed
    pos += medium + 1
    out.append([[1001, pos, "line_too_long", big, cap], 1])  # over the cap
    pos += big + 1
    fillers = 0
    while pos + MiB + small <= total:
        pos += MiB
        fillers += 1
    out.append([[1001 + fillers, pos - MiB, "unknown", None, MiB - 1], fillers])
    smalls = (total - pos) // small
    out.append(
        [[1001 + fillers + smalls, pos + (smalls - 1) * small, "turn_started", None, 23], smalls]
    )
    return out


def _check_memory(report: dict, cap: int) -> None:
    # Bound: the line buffer (max_line_bytes + 1), the decoded `raw` text (<= max_line_bytes) and
    # one transient copy or parsed value of a line (<= max_line_bytes) may coexist, plus 32 MiB
    # for chunk buffers, one feed()'s event dicts (small lines come in 64 KiB reads) and
    # allocator slack. Buffering the 5x-cap line, or the
    # stream, would blow it.
    bound_kb = (3 * cap + 32 * MiB) // 1024
    assert report["growth_kb"] < bound_kb, report["growth_kb"]


SCALED = {"total": 64 * MiB, "big": 20 * MiB, "medium": MiB // 2, "cap": MiB}


@pytest.mark.parametrize("module", ["checkfu_fast", "checkfu_fast.reference"])
def test_h12_bounded_memory_scaled(module: str):
    """H12 a line longer than the cap: a 64 MiB stream with a 20 MiB line at max_line_bytes =
    1 MiB, fed in <= 1 MiB chunks from a generator, in a fresh subprocess.

    Events match the hand-derived sequence (1000 small lines, a 512 KiB line parsed, the 20 MiB
    line as line_too_long with lineBytes and a 1 MiB raw, then (1 MiB - 1)-byte lines and small
    lines to the end, nothing lost) and peak RSS grows < 3 x max_line_bytes + 32 MiB = 35 MiB,
    which buffering the 20 MiB line (plus its decoded raw) would exceed. Plus 64 MiB with no
    LF at all: one line_too_long of 64 MiB.
    """
    report = _memory_run(module, mode="lines", **SCALED)
    assert report["fed"] == SCALED["total"]
    assert report["summary"] == _expected_summary(**SCALED)
    _check_memory(report, SCALED["cap"])

    report = _memory_run(module, mode="nolf", **SCALED)
    assert report["summary"] == [[[0, 0, "line_too_long", 64 * MiB, MiB], 1]]
    _check_memory(report, SCALED["cap"])


BIG = {"total": 1 << 30, "big": 200 * MiB, "medium": 10 * MiB, "cap": 64 * MiB}


@pytest.mark.slow
def test_h12_bounded_memory_1gib_native():
    """H12 a line longer than the cap (200 MiB) in a 1 GiB stream, default max_line_bytes
    (64 MiB), native only; plus 1 GiB with no LF. Peak RSS growth < 3 x 64 MiB + 32 MiB.
    """
    report = _memory_run("checkfu_fast", mode="lines", **BIG)
    print(
        f"\n1 GiB with a 200 MiB line: {report['seconds']:.1f} s, "
        f"peak RSS {report['peak_kb'] / 1024:.0f} MiB, growth {report['growth_kb'] / 1024:.0f} MiB"
    )
    assert report["fed"] == BIG["total"]
    assert report["summary"] == _expected_summary(**BIG)
    _check_memory(report, BIG["cap"])

    report = _memory_run("checkfu_fast", mode="nolf", **BIG)
    print(
        f"1 GiB without LF: {report['seconds']:.1f} s, peak RSS {report['peak_kb'] / 1024:.0f} "
        f"MiB, growth {report['growth_kb'] / 1024:.0f} MiB"
    )
    assert report["summary"] == [[[0, 0, "line_too_long", 1 << 30, 64 * MiB], 1]]
    _check_memory(report, BIG["cap"])
