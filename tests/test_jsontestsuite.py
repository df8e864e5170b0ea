"""JSONTestSuite (nst/JSONTestSuite @1ef36fa, in ../shared/third_party) through normalize.

Policy (docs/events.md §JSON): y_ documents are accepted with ``parsed`` equal to the document's
value; n_ documents give ``parsed`` null with an error or non_json event; every i_ document has a
pinned outcome below; test_transform cases are pinned the same way. Native and reference agree
on all of them. Each file is fed as one stream with the ``codex`` dialect named (so no auto
fallback notice), except that the y_ documents whose only LF is whitespace between tokens are
also checked as one line with that LF made a space.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import reference
from conftest import IMPLS, NO_SHARED, SHARED, assert_valid, wide_encoding

SUITE = SHARED / "third_party" / "JSONTestSuite"
PARSING = sorted((SUITE / "test_parsing").glob("*.json"))
TRANSFORM = sorted((SUITE / "test_transform").glob("*.json"))

if not SHARED.is_dir():  # pragma: no cover - CI has ../shared
    pytest.skip(NO_SHARED, allow_module_level=True)
if not PARSING:  # pragma: no cover
    pytest.skip(f"JSONTestSuite not found under {SUITE}", allow_module_level=True)


def run(data: bytes) -> list[dict]:
    events = checkfu_fast.normalize(data, "codex")
    assert events == reference.normalize(data, "codex")
    assert_valid(events)
    return events


def outcome(events: list[dict]) -> str:
    """``accept`` / ``repair:N`` / ``<error code>`` / ``non_json`` for a one-line document."""
    (ev,) = events
    if ev["parsed"] is not None or ev["raw"].strip() == "null":
        n = ev.get("repairedSurrogates", 0)
        return f"repair:{n}" if n else "accept"
    return ev["error"]["code"] if ev["kind"] == "error" else ev["subtype"]


@pytest.mark.parametrize(
    "path", [p for p in PARSING if p.name.startswith("y_")], ids=lambda p: p.stem
)
def test_y_documents_are_accepted(path: Path) -> None:
    data = path.read_bytes()
    expected = json.loads(data.decode("utf-8"))
    if b"\n" in data.strip():
        data = data.replace(b"\n", b" ")  # the LF is whitespace between tokens in these files
    events = run(data)
    assert outcome(events) == "accept"
    assert events[0]["parsed"] == expected
    assert type(events[0]["parsed"]) is type(expected)


@pytest.mark.parametrize(
    "path", [p for p in PARSING if p.name.startswith("n_")], ids=lambda p: p.stem
)
def test_n_documents_are_rejected(path: Path) -> None:
    data = path.read_bytes()
    events = run(data)
    if path.stem in BLANK_N:
        assert events == []  # blank lines emit nothing (framing rule), BOM included
        return
    assert events
    if any(ev["parsed"] is not None for ev in events):
        # a multi-line document whose middle segment is a JSON scalar line on its own: the
        # document (its LFs being whitespace between tokens) is still rejected as one line
        assert b"\n" in data
        events = run(data.replace(b"\n", b" "))
    for ev in events:
        assert ev["parsed"] is None
        assert ev["kind"] == "error" or ev["subtype"] == "non_json"


BLANK_N = {"n_single_space", "n_structure_no_data", "n_structure_UTF8_BOM_no_data"}


# Pinned from the policy (reviewed against reliability-notes §1.3), not from the output:
# lone surrogate escapes are repaired and counted; invalid UTF-8 (Latin-1, overlong forms,
# encoded surrogates) is rejected per line; a UTF-16 stream (BOM or NUL pattern at offset 0) is
# rejected once, as a whole (stream_is_utf16); numbers that overflow a float are rejected; big
# integers and underflowing floats are accepted; nesting past max_depth (64) is a budget error;
# a UTF-8 BOM at offset 0 is skipped.
I_PINNED = {
    "i_number_double_huge_neg_exp": "accept",
    "i_number_huge_exp": "invalid_json",
    "i_number_neg_int_huge_exp": "invalid_json",
    "i_number_pos_double_huge_exp": "invalid_json",
    "i_number_real_neg_overflow": "invalid_json",
    "i_number_real_pos_overflow": "invalid_json",
    "i_number_real_underflow": "accept",
    "i_number_too_big_neg_int": "accept",
    "i_number_too_big_pos_int": "accept",
    "i_number_very_big_negative_int": "accept",
    "i_object_key_lone_2nd_surrogate": "repair:1",
    "i_string_1st_surrogate_but_2nd_missing": "repair:1",
    "i_string_1st_valid_surrogate_2nd_invalid": "repair:1",
    "i_string_UTF-16LE_with_BOM": "stream_is_utf16",
    "i_string_UTF-8_invalid_sequence": "invalid_utf8",
    "i_string_UTF8_surrogate_U+D800": "invalid_utf8",
    "i_string_incomplete_surrogate_and_escape_valid": "repair:1",
    "i_string_incomplete_surrogate_pair": "repair:1",
    "i_string_incomplete_surrogates_escape_valid": "repair:2",
    "i_string_invalid_lonely_surrogate": "repair:1",
    "i_string_invalid_surrogate": "repair:1",
    "i_string_invalid_utf-8": "invalid_utf8",
    "i_string_inverted_surrogates_U+1D11E": "repair:2",
    "i_string_iso_latin_1": "invalid_utf8",
    "i_string_lone_second_surrogate": "repair:1",
    "i_string_lone_utf8_continuation_byte": "invalid_utf8",
    "i_string_not_in_unicode_range": "invalid_utf8",
    "i_string_overlong_sequence_2_bytes": "invalid_utf8",
    "i_string_overlong_sequence_6_bytes": "invalid_utf8",
    "i_string_overlong_sequence_6_bytes_null": "invalid_utf8",
    "i_string_truncated-utf-8": "invalid_utf8",
    "i_string_utf16BE_no_BOM": "stream_is_utf16",
    "i_string_utf16LE_no_BOM": "stream_is_utf16",
    "i_structure_500_nested_arrays": "too_deep",
    "i_structure_UTF-8_BOM_empty_object": "accept",
}


def test_every_i_document_is_pinned() -> None:
    assert {p.stem for p in PARSING if p.name.startswith("i_")} == set(I_PINNED)


@pytest.mark.parametrize("name", sorted(I_PINNED))
def test_i_documents_have_pinned_outcomes(name: str) -> None:
    events = run((SUITE / "test_parsing" / f"{name}.json").read_bytes())
    assert outcome(events) == I_PINNED[name]
    if I_PINNED[name].startswith("repair"):
        assert "\ud800" not in json.dumps(events[0]["parsed"], ensure_ascii=False)


UTF16_FILES = {
    "i_string_UTF-16LE_with_BOM": ("UTF-16LE", "BOM"),
    "i_string_utf16BE_no_BOM": ("UTF-16BE", "no BOM"),
    "i_string_utf16LE_no_BOM": ("UTF-16LE", "no BOM"),
}


@pytest.mark.parametrize("name", sorted(UTF16_FILES))
def test_utf16_documents_are_one_stream_error(name: str) -> None:
    data = (SUITE / "test_parsing" / f"{name}.json").read_bytes()
    (ev,) = run(data)
    encoding, bom = UTF16_FILES[name]
    assert (ev["subtype"], ev["position"], ev["encoding"], ev["streamBytes"]) == (
        "stream_is_utf16",
        0,
        encoding,
        len(data),
    )
    assert ev["raw"] == '["\u00e9"]'  # what the document says, decoded for the user
    assert ev["error"]["message"].startswith(f"stream is UTF-16 ({encoding[-2:]}, {bom});")
    for impl in IMPLS.values():  # one byte per feed: the same single event
        n = impl.Normalizer("codex")
        assert [e for b in range(len(data)) for e in n.feed(data[b : b + 1])] == []
        assert n.finish() == [ev]


def test_nul_after_an_ascii_first_byte_reads_as_utf16() -> None:
    # `[` then NUL is the UTF-16LE pattern of the first code unit (RFC 8259 §8.1): this n_
    # document is rejected as a UTF-16 stream, not as a line with a NUL in it
    (ev,) = run((SUITE / "test_parsing" / "n_structure_null-byte-outside-string.json").read_bytes())
    assert (ev["subtype"], ev["encoding"], ev["streamBytes"], ev["raw"]) == (
        "stream_is_utf16",
        "UTF-16LE",
        3,
        "[",
    )


BIG = 10000000000000000999
T_PINNED = {
    "number_-9223372036854775808": [-9223372036854775808],
    "number_-9223372036854775809": [-9223372036854775809],
    "number_1.0": [1.0],
    "number_1.000000000000000005": [1.0],
    "number_1000000000000000": [1000000000000000],
    "number_10000000000000000999": [BIG],
    "number_1e-999": [0.0],
    "number_1e6": [1000000.0],
    "number_9223372036854775807": [9223372036854775807],
    "number_9223372036854775808": [9223372036854775808],
    "object_key_nfc_nfd": {"\u00e9": "NFC", "e\u0301": "NFD"},  # keys are not normalized
    "object_key_nfd_nfc": {"e\u0301": "NFD", "\u00e9": "NFC"},
    "object_same_key_different_values": {"a": 2},  # last wins
    "object_same_key_same_value": {"a": 1},
    "object_same_key_unclear_values": {"a": 0},  # -0 is the integer 0
    "string_1_escaped_invalid_codepoint": ["\ufffd"],
    "string_2_escaped_invalid_codepoints": ["\ufffd\ufffd"],
    "string_3_escaped_invalid_codepoints": ["\ufffd\ufffd\ufffd"],
    "string_1_invalid_codepoint": "invalid_utf8",
    "string_2_invalid_codepoints": "invalid_utf8",
    "string_3_invalid_codepoints": "invalid_utf8",
    "string_with_escaped_NULL": ["A\x00B"],
}


def test_every_transform_case_is_pinned() -> None:
    assert {p.stem for p in TRANSFORM} == set(T_PINNED)


@pytest.mark.parametrize("name", sorted(T_PINNED))
def test_transform_cases(name: str) -> None:
    (ev,) = run((SUITE / "test_transform" / f"{name}.json").read_bytes())
    want = T_PINNED[name]
    if isinstance(want, str):
        assert ev["error"]["code"] == want
        return
    assert ev["parsed"] == want
    assert json.dumps(ev["parsed"]) == json.dumps(want)  # int vs float, key order
    if "escaped_invalid" in name:
        assert ev["repairedSurrogates"] == len(want[0])


@pytest.mark.parametrize("path", PARSING + TRANSFORM, ids=lambda p: p.stem)
def test_every_file_as_a_jsonl_stream_never_raises(path: Path) -> None:
    data = path.read_bytes()
    events = run(data)
    if wide_encoding(data):  # UTF-16: one event for the whole stream
        assert [e["subtype"] for e in events] == ["stream_is_utf16"]
        return
    lines = [seg for seg in data.split(b"\n") if seg.strip(b" \t\r\x0b\x0c")]
    assert len({e["position"] for e in events}) == len(lines) or data.startswith(b"\xef\xbb\xbf")


def test_counts_for_the_readme() -> None:
    names = [p.name for p in PARSING]
    assert (
        sum(n.startswith("y_") for n in names),
        sum(n.startswith("n_") for n in names),
        sum(n.startswith("i_") for n in names),
        len(TRANSFORM),
    ) == (95, 188, 35, 22)
