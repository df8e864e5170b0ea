"""Large files split at newlines (rust/split.rs): ``normalize_files`` with ranges normalized in
parallel gives byte for byte the one-stream output (``normalize_jsonl`` of the file), ``seq``
continuous, positions right, for every golden and corpus file at several forced range sizes
(the private ``_split_bytes``), every dialect and ``auto``, and the streams whose state crosses
lines (auto's held lines and fallback notice, BOM, CRLF, UTF-16, over-long lines, a last line
without LF). The fuzz target fuzz/src/bin/split.rs checks the same on arbitrary bytes."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
from checkfu_fast import _native
from conftest import CORPUS, ROOT
from test_differential import budget_options, streams

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))
REAL = sorted(CORPUS.glob("*/*.jsonl"))
SIZES = (1, 97, 1000, 8192)


def seqs(jsonl: bytes) -> list[int]:
    return [json.loads(line)["seq"] for line in jsonl.splitlines()]


@pytest.mark.parametrize("size", SIZES)
def test_split_equals_sequential_on_goldens_and_corpus(size: int) -> None:
    files = GOLDEN + REAL
    assert len(files) > 40
    want = [checkfu_fast.normalize_jsonl(p.read_bytes()) for p in files]
    assert checkfu_fast.normalize_files(files, jobs=2, _split_bytes=size) == want
    # and with each file's own dialect fixed (mapping-defined dialects included)
    by_dialect: dict[str, list[Path]] = {}
    for p in GOLDEN:
        by_dialect.setdefault(p.parent.name, []).append(p)
    for dialect, paths in by_dialect.items():
        want = [checkfu_fast.normalize_jsonl(p.read_bytes(), dialect) for p in paths]
        got = checkfu_fast.normalize_files(paths, dialect=dialect, jobs=2, _split_bytes=size)
        assert got == want, dialect


def test_the_goldens_are_really_split() -> None:
    # the plan cuts the bigger files into many ranges, each after an LF, covering the file
    split = 0
    for p in GOLDEN:
        data = p.read_bytes()
        ranges, resume, contexts = _native._split_plan(str(p), "auto", 97)
        assert len(contexts) == len(ranges) and contexts[0] == (None, None)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        for (_, a), (b, _) in itertools.pairwise(ranges):
            assert a == b and data[a - 1 : a] == b"\n"
        assert (resume is not None) == (len(ranges) > 1)
        if len(ranges) > 1:
            split += 1
            assert resume == p.parent.name or p.parent.name in ("north", "canary", "solweb")
    assert split > len(GOLDEN) // 2


def write(tmp_path: Path, data: bytes, name: str = "s.jsonl") -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


CLAUDE_INIT = b'{"type":"system","subtype":"init","session_id":"s","tools":[]}'
TEXT = b'{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}'


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\xef\xbb\xbf" + (CLAUDE_INIT + b"\r\n" + TEXT + b"\n") * 30, id="bom-crlf"),
        pytest.param((TEXT + b"\n") * 30 + TEXT, id="no-final-lf"),
        # no decisive line: 64 held lines, the dialect_fallback notice, then the rest
        pytest.param(b'{"a":1}\n[]\n\n"x"\n' * 60, id="auto-fallback"),
        pytest.param(b"\n \n\t\n" * 50, id="blank-only"),
        pytest.param("".join('{"a":1}\n' for _ in range(40)).encode("utf-16-le"), id="utf16"),
        pytest.param(b"\xef\xbb\xbf" + b"\n".join([CLAUDE_INIT] * 40), id="bom"),
        pytest.param(b"x\n\xef\xbb\xbf{}\n" * 40, id="bom-mid-stream"),
        pytest.param((b"\n" + TEXT) * 40 + b"\n{\x00\n", id="nul-after-lf"),
        pytest.param((b"y" * 3000 + b"\n" + TEXT + b"\n") * 5, id="over-long"),
    ],
)
def test_split_keeps_cross_line_state(tmp_path: Path, data: bytes) -> None:
    p = write(tmp_path, data)
    for budgets in ({}, {"max_line_bytes": 1000}):
        want = checkfu_fast.normalize_jsonl(data, **budgets)
        for size in (1, 7, 64, 500):
            (got,) = checkfu_fast.normalize_files([p], jobs=2, _split_bytes=size, **budgets)
            assert got == want, size
            assert seqs(got) == list(range(len(seqs(want))))


def test_split_out_dir_and_source_tags(tmp_path: Path) -> None:
    from checkfu_fast import _files

    a = write(tmp_path, (CLAUDE_INIT + b"\n" + TEXT + b"\n") * 50, "a.jsonl")
    b = write(tmp_path, (TEXT + b"\n") * 3, "b.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    written = checkfu_fast.normalize_files([a, b], out, jobs=2, _split_bytes=200)
    assert [Path(w).read_bytes() for w in written] == [
        checkfu_fast.normalize_jsonl(a.read_bytes()),
        checkfu_fast.normalize_jsonl(b.read_bytes()),
    ]
    budgets = (64 << 20, 64, 1_000_000)
    tagged = _files([str(a)], None, "auto", budgets, 2, tag_source=True, split_bytes=100)
    n = checkfu_fast.Normalizer(source=str(a))
    assert tagged == [n.feed_jsonl(a.read_bytes()) + n.finish_jsonl()]


def test_split_missing_file_is_an_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        checkfu_fast.normalize_files([tmp_path / "nope.jsonl"], jobs=2, _split_bytes=10)


dialects = st.sampled_from(["auto", *checkfu_fast.DIALECTS])


@given(data=streams(), dialect=dialects, size=st.integers(1, 300), budgets=budget_options)
def test_split_equals_sequential_on_generated_streams(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, dialect: str, size: int, budgets: dict
) -> None:
    p = tmp_path_factory.mktemp("split") / "s.jsonl"
    p.write_bytes(data)
    want = checkfu_fast.normalize_jsonl(data, dialect, **budgets)
    (got,) = checkfu_fast.normalize_files(
        [p], dialect=dialect, jobs=2, _split_bytes=size, **budgets
    )
    assert got == want


def test_a_range_starts_with_the_model_of_the_last_turn_context(tmp_path: Path) -> None:
    """A codex rollout's usage readings name the model of the last ``turn_context`` before them
    (docs/events.md): a range cut after it starts with that model (the plan's ``contexts``), in
    ``normalize_files`` and in the private range calls ``checkfu_fast.dask`` makes."""
    tc = b'{"type":"turn_context","payload":{"cwd":"/p","model":"%s"}}\n'
    count = (
        b'{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
        b'{"input_tokens":%d,"output_tokens":1}}}}\n'
    )
    data = b"".join(
        [tc % b"gpt-a"]
        + [count % i for i in range(1, 20)]
        + [tc % b"gpt-b"]
        + [count % i for i in range(20, 40)]
    )
    p = write(tmp_path, data)
    want = checkfu_fast.normalize_jsonl(data)
    models = [
        json.loads(line)["usage"]["model"] for line in want.splitlines() if b'"usage"' in line
    ]
    assert models == ["gpt-a"] * 19 + ["gpt-b"] * 20
    for size in (1, 150, 1000):
        (got,) = checkfu_fast.normalize_files([p], jobs=2, _split_bytes=size)
        assert got == want, size
    ranges, resume, contexts = _native._split_plan(str(p), "auto", 150)
    assert resume == "codex" and len(ranges) > 10
    assert contexts[0] == (None, None)
    assert set(contexts[1:]) == {("gpt-a", None), ("gpt-b", None)}
    events = []
    for k, ((start, end), ctx) in enumerate(zip(ranges, contexts, strict=True)):
        d = "auto" if k == 0 else resume
        last = k + 1 == len(ranges)
        events += _native._normalize_range(data[start:end], d, start, last, context=ctx)
    assert [e["usage"]["model"] for e in events if e["kind"] == "usage"] == models


def test_a_range_starts_with_the_service_tier_of_an_earlier_line(tmp_path: Path) -> None:
    """A codex rollout's service tier (``thread_settings_applied``, or an older build's
    ``turn_context.service_tier``) and its model are set by different lines: a range starts
    with each part from the last line before it that set that part, however many
    ``turn_context`` lines (model only) came after the tier was set."""
    tc = b'{"type":"turn_context","payload":{"cwd":"/p","model":"%s"}}\n'
    old_tc = b'{"type":"turn_context","payload":{"model":"%s","service_tier":"%s"}}\n'
    settings = (
        b'{"type":"event_msg","payload":{"type":"thread_settings_applied",'
        b'"thread_settings":{"model":"%s","service_tier":"%s"}}}\n'
    )
    default = (
        b'{"type":"event_msg","payload":{"type":"thread_settings_applied","thread_settings":{}}}\n'
    )
    count = (
        b'{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":'
        b'{"input_tokens":%d,"output_tokens":1}}}}\n'
    )
    n = iter(range(1, 10**6))
    turns = lambda m: [tc % m] + [count % next(n) for _ in range(6)]  # noqa: E731
    data = b"".join(
        [old_tc % (b"gpt-a", b"priority")]
        + [count % next(n) for _ in range(5)]
        + [settings % (b"gpt-b", b"fast")]
        + turns(b"gpt-c") * 1
        + turns(b"gpt-d")
        + turns(b"gpt-e")
        + [default]
        + turns(b"gpt-f")
        + turns(b"gpt-g")
        + [settings % (b"gpt-h", b"flex")]
        + turns(b"gpt-i")
        + [settings % (b"gpt-j", b"scale")]  # a tier not known here: the default
        + turns(b"gpt-k")
    )
    p = write(tmp_path, data)
    want = checkfu_fast.normalize_jsonl(data)
    evs = [json.loads(line) for line in want.splitlines()]
    got = [(e["usage"]["model"], e.get("speed")) for e in evs if e["kind"] == "usage"]
    assert got == (
        [("gpt-a", "fast")] * 5
        + [("gpt-c", "fast")] * 6 + [("gpt-d", "fast")] * 6 + [("gpt-e", "fast")] * 6
        + [("gpt-f", None)] * 6 + [("gpt-g", None)] * 6
        + [("gpt-i", "flex")] * 6 + [("gpt-k", None)] * 6
    )  # fmt: skip
    assert want == checkfu_fast.reference.normalize_jsonl(data)
    for size in (1, 100, 150, 400, 1000):
        (got_files,) = checkfu_fast.normalize_files([p], jobs=2, _split_bytes=size)
        assert got_files == want, size
    ranges, resume, contexts = _native._split_plan(str(p), "auto", 100)
    assert ("gpt-d", "fast") in contexts and ("gpt-g", None) in contexts
    events = []
    for k, ((start, end), ctx) in enumerate(zip(ranges, contexts, strict=True)):
        d = "auto" if k == 0 else resume
        events += _native._normalize_range(data[start:end], d, start, k + 1 == len(ranges),
                                           context=ctx)  # fmt: skip
    assert [(e["usage"]["model"], e.get("speed")) for e in events if e["kind"] == "usage"] == got
    with pytest.raises(ValueError, match="speed"):
        _native._normalize_range(data, "codex", 1, True, context=("gpt-x", "warp"))
