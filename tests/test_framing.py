"""Framing rules of spec §1/§2, with expected values worked out by hand from the spec.

Every case runs through the native core and the reference (identical results required), and
through the incremental Normalizer fed one byte at a time.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import checkfu_fast
import checkfu_fast.reference
from conftest import IMPLS, assert_valid

TS = b'{"type":"turn.started"}'  # 23 bytes; codex -> status/turn_started
assert len(TS) == 23


def run(data: bytes, dialect: str = "codex", **budgets) -> list[dict]:
    """normalize() on both paths plus byte-at-a-time streaming on both; all must agree."""
    native = checkfu_fast.normalize(data, dialect, **budgets)
    ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert native == ref, f"native={native!r}\nreference={ref!r}"
    for name, impl in IMPLS.items():
        n = impl.Normalizer(dialect, **budgets)
        out = []
        for i in range(len(data)):
            out += n.feed(data[i : i + 1])
        out += n.finish()
        assert out == native, f"{name} byte-wise streaming differs"
    assert_valid(native)
    assert [e["seq"] for e in native] == list(range(len(native)))
    return native


def brief(events: list[dict]) -> list[tuple]:
    return [(e["position"], e["kind"], e["subtype"], e["raw"]) for e in events]


# -- line endings -----------------------------------------------------------------------------


def test_lf_lines():
    ev = run(TS + b"\n" + TS + b"\n")
    assert brief(ev) == [
        (0, "status", "turn_started", TS.decode()),
        (24, "status", "turn_started", TS.decode()),
    ]
    assert ev[0]["parsed"] == {"type": "turn.started"}


def test_crlf_drops_one_cr_and_positions_count_it():
    ev = run(TS + b"\r\n" + TS + b"\r\n")
    assert brief(ev) == [
        (0, "status", "turn_started", TS.decode()),
        (25, "status", "turn_started", TS.decode()),
    ]


def test_only_one_cr_before_lf_is_dropped():
    # `{"type":"x"}\r\r\n`: the first CR stays (JSON whitespace, so it still parses)
    ev = run(b'{"type":"x"}\r\r\nnext\n')
    assert brief(ev) == [
        (0, "status", "unknown", '{"type":"x"}\r'),
        (15, "status", "non_json", "next"),
    ]
    assert ev[0]["parsed"] == {"type": "x"}


def test_bare_cr_is_data():
    ev = run(b"ab\rcd\n")
    assert brief(ev) == [(0, "status", "non_json", "ab\rcd")]
    assert ev[0]["text"] == "ab\rcd"
    assert ev[0]["parsed"] is None


def test_bare_cr_does_not_split_json():
    ev = run(b'{"type":\r"turn.started"}\n')
    assert len(ev) == 1
    assert ev[0]["subtype"] == "turn_started"
    assert ev[0]["raw"] == '{"type":\r"turn.started"}'


def test_trailing_cr_on_last_line_without_lf_is_data():
    ev = run(b"x\r")
    assert brief(ev) == [(0, "status", "non_json", "x\r")]


def test_cr_then_lf_split_across_chunks():
    for impl in IMPLS.values():
        n = impl.Normalizer("codex")
        assert n.feed(b"abc\r") == []
        out = n.feed(b"\nz")
        assert brief(out) == [(0, "status", "non_json", "abc")]
        assert brief(n.finish()) == [(5, "status", "non_json", "z")]


def test_no_final_newline():
    ev = run(TS + b"\n" + TS)
    assert brief(ev) == [
        (0, "status", "turn_started", TS.decode()),
        (24, "status", "turn_started", TS.decode()),
    ]
    for impl in IMPLS.values():
        n = impl.Normalizer("codex")
        assert [e["position"] for e in n.feed(TS + b"\n" + TS)] == [0]
        last = n.finish()
        assert [(e["position"], e["seq"]) for e in last] == [(24, 1)]
        assert n.finish() == []  # idempotent


# -- BOM --------------------------------------------------------------------------------------


def test_bom_at_start_is_skipped_but_counted():
    ev = run(b"\xef\xbb\xbf" + TS + b"\n" + TS + b"\n")
    assert brief(ev) == [
        (3, "status", "turn_started", TS.decode()),
        (27, "status", "turn_started", TS.decode()),
    ]


def test_bom_alone():
    assert run(b"\xef\xbb\xbf") == []
    assert run(b"\xef\xbb\xbf\n") == []


def test_bom_later_is_not_skipped():
    ev = run(TS + b"\n\xef\xbb\xbf" + TS + b"\n")
    assert [e["position"] for e in ev] == [0, 24]
    # the second line starts with U+FEFF, not `{`: it is text, not JSON
    assert ev[1]["kind"] == "status" and ev[1]["subtype"] == "non_json"
    assert ev[1]["raw"] == "\ufeff" + TS.decode()
    assert ev[1]["text"] == "\ufeff" + TS.decode()


def test_bom_after_leading_blank_line_is_not_skipped():
    ev = run(b"\n\xef\xbb\xbfhi\n")
    assert brief(ev) == [(1, "status", "non_json", "\ufeffhi")]


def test_double_bom_only_first_skipped():
    ev = run(b"\xef\xbb\xbf\xef\xbb\xbfhi")
    assert brief(ev) == [(3, "status", "non_json", "\ufeffhi")]


def test_bom_prefix_only_is_data():
    # two bytes of a BOM and then the stream ends: not a BOM, an invalid UTF-8 line at 0
    ev = run(b"\xef\xbb")
    assert len(ev) == 1
    assert ev[0]["position"] == 0
    assert ev[0]["subtype"] == "invalid_utf8"
    assert ev[0]["raw"] == "\ufffd"


def test_bom_split_across_chunks():
    for impl in IMPLS.values():
        n = impl.Normalizer("codex")
        out = n.feed(b"\xef") + n.feed(b"\xbb") + n.feed(b"\xbf" + TS) + n.finish()
        assert brief(out) == [(3, "status", "turn_started", TS.decode())]


# -- blank lines ------------------------------------------------------------------------------


def test_blank_and_whitespace_lines_emit_nothing():
    assert run(b"") == []
    assert run(b"\n\n   \n\t\r\n \x0c \n\r\n") == []
    assert run(b"   ") == []


def test_blank_lines_between_records_do_not_shift_positions():
    ev = run(b"\n \n" + TS + b"\n\n\t\n" + TS)
    assert [e["position"] for e in ev] == [3, 30]


# -- invalid UTF-8 ----------------------------------------------------------------------------


def _err(ev: dict, code: str) -> None:
    assert ev["kind"] == "error"
    assert ev["subtype"] == code
    assert ev["error"]["code"] == code
    assert ev["error"]["errorKind"] == "semantic"
    assert ev["error"]["message"]
    assert ev["parsed"] is None


@pytest.mark.parametrize(
    ("line", "raw"),
    [
        (b"ok \xff\xfe done", "ok \ufffd\ufffd done"),
        (b'{"a":"\xff"}', '{"a":"\ufffd"}'),  # invalid UTF-8 wins over JSON parsing
        (b"\xe2\x82", "\ufffd"),  # truncated 3-byte sequence: one maximal subpart
        (b"\xc0\xaf", "\ufffd\ufffd"),  # overlong encoding
        (b"\xed\xa0\x80", "\ufffd\ufffd\ufffd"),  # encoded surrogate
        (b"x\xf4\x90\x80\x80y", "x\ufffd\ufffd\ufffd\ufffdy"),  # above U+10FFFF
    ],
)
def test_invalid_utf8(line: bytes, raw: str):
    ev = run(b"hello\n" + line + b"\n" + TS + b"\n")
    assert [e["position"] for e in ev] == [0, 6, 6 + len(line) + 1]
    _err(ev[1], "invalid_utf8")
    assert ev[1]["raw"] == raw
    assert ev[2]["subtype"] == "turn_started"


def test_valid_multibyte_utf8_is_fine():
    ev = run('{"type":"x","t":"é中😀"}\n'.encode())
    assert ev[0]["subtype"] == "unknown"
    assert ev[0]["parsed"] == {"type": "x", "t": "é中😀"}


# -- JSON / non-JSON ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "column"),
    [
        (b'{"type":"assistant","message":{"content":[', 43),  # end of input: column len+1
        (b"[1,2", 5),
        (b'{"a" 1}', 6),  # byte 5 ('1') where ':' was expected
        (b'{"a":1}x', 8),  # trailing characters
        (b"  {", 4),  # leading spaces still make it a JSON candidate
        (b'{"a":tru}', 6),
        (b"[NaN]", 2),
        (b"[1e400]", 2),  # overflowing float is rejected
        (b"{'a':1}", 2),
    ],
)
def test_invalid_json(line: bytes, column: int):
    ev = run(line + b"\n")
    assert len(ev) == 1
    _err(ev[0], "invalid_json")
    assert ev[0]["raw"] == line.decode()
    assert ev[0]["position"] == 0
    assert ev[0]["error"]["message"].endswith(f"at column {column}"), ev[0]["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        b"Reading prompt from stdin...",
        b"  WARN: something",
        b"nul",
        b'"unterminated',
        b"1 2",
        b"NaN",
        b"-",
        b"Infinity",
    ],
)
def test_non_json_text(line: bytes):
    ev = run(line + b"\r\n")
    assert brief(ev) == [(0, "status", "non_json", line.decode())]
    assert ev[0]["text"] == line.decode()
    assert ev[0]["parsed"] is None


@pytest.mark.parametrize("dialect", ["claude", "cursor", "codex", "auto"])
@pytest.mark.parametrize(
    ("line", "value"),
    [
        (b"42", 42),
        (b'"hi"', "hi"),
        (b"true", True),
        (b"-1.5e3", -1500.0),
        (b"123456789012345678901234567890", 123456789012345678901234567890),
        (b" 7 ", 7),
    ],
)
def test_json_scalar_is_unknown_with_parsed_kept(line: bytes, value, dialect: str):
    ev = run(line + b"\n", dialect)
    assert [(e["kind"], e["subtype"], e["position"], e["raw"]) for e in ev][-1] == (
        "status",
        "unknown",
        0,
        line.decode(),
    )
    assert ev[-1]["parsed"] == value
    assert type(ev[-1]["parsed"]) is type(value)


@pytest.mark.parametrize("dialect", ["claude", "cursor", "codex"])
def test_json_null_is_unknown(dialect: str):
    ev = run(b"null\n", dialect)
    assert [(e["kind"], e["subtype"]) for e in ev] == [("status", "unknown")]
    assert ev[0]["parsed"] is None


@pytest.mark.parametrize("dialect", ["claude", "cursor", "codex"])
def test_json_array_is_unknown(dialect: str):
    ev = run(b'[{"type":"turn.started"}, 1]\n', dialect)
    assert [(e["kind"], e["subtype"]) for e in ev] == [("status", "unknown")]
    assert ev[0]["parsed"] == [{"type": "turn.started"}, 1]
    assert "nativeType" not in ev[0]


@pytest.mark.parametrize("dialect", ["claude", "cursor", "codex"])
def test_unknown_type_object(dialect: str):
    ev = run(b'{"type":"brand_new_record","x":1}\n', dialect)
    assert [(e["kind"], e["subtype"]) for e in ev] == [("status", "unknown")]
    assert ev[0]["parsed"] == {"type": "brand_new_record", "x": 1}


def test_lone_surrogate_escape_is_repaired():
    ev = run(b'{"type":"x","s":"a\\ud800b"}\n')
    assert ev[0]["kind"] == "status"
    assert ev[0]["parsed"] == {"type": "x", "s": "a\ufffdb"}


def test_duplicate_keys_last_wins():
    ev = run(b'{"type":"x","type":"turn.started"}\n')
    assert ev[0]["subtype"] == "turn_started"
    assert ev[0]["parsed"] == {"type": "turn.started"}


# -- over-long lines --------------------------------------------------------------------------


def _too_long(ev: dict, position: int, raw: str, total: int) -> None:
    _err(ev, "line_too_long")
    assert ev["position"] == position
    assert ev["raw"] == raw
    assert ev["truncated"] is True
    assert ev["lineBytes"] == total


def test_line_too_long_then_next_line_fine():
    ev = run(TS + b'\n"abc"\n', max_line_bytes=8)
    assert len(ev) == 2
    _too_long(ev[0], 0, '{"type":', 23)
    assert (ev[1]["position"], ev[1]["subtype"], ev[1]["parsed"]) == (24, "unknown", "abc")


def test_line_exactly_at_limit_passes():
    ev = run(b'"abcdef"\n"abcdefg"\n', max_line_bytes=8)
    assert ev[0]["subtype"] == "unknown" and ev[0]["parsed"] == "abcdef"
    _too_long(ev[1], 9, '"abcdefg', 9)


def test_line_limit_does_not_count_the_crlf():
    ev = run(b'"abcdef"\r\n"ab"\r\n', max_line_bytes=8)
    assert [(e["position"], e["subtype"], e["parsed"]) for e in ev] == [
        (0, "unknown", "abcdef"),
        (10, "unknown", "ab"),
    ]


def test_line_too_long_without_final_newline():
    ev = run(b"x\n0123456789", max_line_bytes=4)
    assert ev[0]["raw"] == "x"
    _too_long(ev[1], 2, "0123", 10)


@pytest.mark.parametrize(
    ("line", "limit", "raw"),
    [
        (b"abcdef\xc3\xa9xyz", 7, "abcdef"),  # cut inside a 2-byte sequence
        (b"abcdef\xc3\xa9xyz", 8, "abcdef\u00e9"),
        (b"ab\xf0\x9f\x98\x80cd", 3, "ab"),
        (b"ab\xf0\x9f\x98\x80cd", 5, "ab"),
        (b"ab\xf0\x9f\x98\x80cd", 6, "ab\U0001f600"),
        (b"\xe4\xb8\xad\xe4\xb8\xad", 4, "\u4e2d"),
    ],
)
def test_line_too_long_raw_cut_at_utf8_boundary(line: bytes, limit: int, raw: str):
    ev = run(line + b"\nok\n", max_line_bytes=limit)
    _too_long(ev[0], 0, raw, len(line))
    assert len(ev[0]["raw"].encode()) <= limit
    assert (ev[1]["position"], ev[1]["raw"]) == (len(line) + 1, "ok")


def test_line_too_long_positions_with_bom_and_crlf():
    ev = run(b"\xef\xbb\xbf0123456789\r\nab\r\n", max_line_bytes=5)
    _too_long(ev[0], 3, "01234", 10)
    assert (ev[1]["position"], ev[1]["raw"]) == (15, "ab")


def test_line_too_long_in_chunks_equals_whole():
    data = b"a" * 5000 + b"\n" + TS + b"\n" + b"b" * 3000
    whole = checkfu_fast.reference.normalize(data, "codex", max_line_bytes=1000)
    for impl in IMPLS.values():
        n = impl.Normalizer("codex", max_line_bytes=1000)
        out = []
        for i in range(0, len(data), 333):
            out += n.feed(data[i : i + 333])
        out += n.finish()
        assert out == whole
    assert [(e["position"], e["subtype"], e.get("lineBytes")) for e in whole] == [
        (0, "line_too_long", 5000),
        (5001, "turn_started", None),
        (5025, "line_too_long", 3000),
    ]


_MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import checkfu_fast
    chunk = b"a" * (1 << 20)
    n = checkfu_fast.Normalizer("codex", max_line_bytes=1024)
    out = n.feed(b"x")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(50):
        out += n.feed(chunk)
    out += n.feed(b'\\n{"type":"turn.started"}\\n')
    out += n.finish()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    summary = [(e["position"], e["subtype"], e.get("lineBytes"), len(e["raw"])) for e in out]
    print(json.dumps({"growth_kb": after - before, "events": summary}))
    """
)


def test_overlong_line_skipped_in_constant_memory_native():
    """50 MiB line, 1 MiB chunks, max_line_bytes=1024: peak RSS grows < 30 MB (clean process)."""
    import json

    res = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(res.stdout)
    total = 1 + 50 * (1 << 20)
    assert report["events"] == [
        [0, "line_too_long", total, 1024],
        [total + 1, "turn_started", None, 23],
    ]
    assert report["growth_kb"] < 30 * 1024, report  # ru_maxrss is in KiB on Linux


def test_overlong_line_skipped_in_constant_memory_reference():
    import tracemalloc

    chunk = b"a" * (1 << 20)
    n = checkfu_fast.reference.Normalizer("codex", max_line_bytes=1024)
    tracemalloc.start()
    try:
        out = []
        for _ in range(20):
            out += n.feed(chunk)
        out += n.feed(b"\n" + TS) + n.finish()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(e["position"], e["subtype"]) for e in out] == [
        (0, "line_too_long"),
        (20 * (1 << 20) + 1, "turn_started"),
    ]
    # a copy of the chunk in flight is fine; buffering the line (20 MiB) is not
    assert peak < 4 * (1 << 20), peak
