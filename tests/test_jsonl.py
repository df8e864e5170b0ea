"""JSONL written by the core: ``normalize_jsonl``, ``Normalizer.feed_jsonl``, ``normalize_files``
and the CLI as a stream filter.

Every line must ``json.loads`` to exactly the event ``normalize()`` gives (compared with
``strict_key``: types, key order and float bits), and the bytes must equal the reference twin's
``json.dumps(ev, ensure_ascii=False, separators=(",", ":"))``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
import checkfu_fast.reference
from checkfu_fast.golden import strict_key
from conftest import CORPUS, ROOT, needs_shared, shared_params
from test_differential import budget_options, streams

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))
REAL = sorted(CORPUS.glob("*/*.jsonl"))


def decode(jsonl: bytes) -> list[dict]:
    assert jsonl == b"" or jsonl.endswith(b"\n"), jsonl[-50:]
    return [json.loads(line) for line in jsonl.split(b"\n")[:-1]]


def check(data: bytes, dialect: str = "auto", **budgets) -> bytes:
    """normalize_jsonl agrees with normalize (strictly) and with the reference twin (bytes)."""
    out = checkfu_fast.normalize_jsonl(data, dialect, **budgets)
    events = checkfu_fast.normalize(data, dialect, **budgets)
    assert strict_key(decode(out)) == strict_key(events)
    assert out == checkfu_fast.reference.normalize_jsonl(data, dialect, **budgets)
    return out


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_inputs(path: Path) -> None:
    data = path.read_bytes()
    check(data, path.parent.name if path.parent.name in checkfu_fast.DIALECTS else "auto")
    check(data, "auto")


@pytest.mark.parametrize("path", shared_params(REAL), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_corpus(path: Path) -> None:
    check(path.read_bytes())


def test_golden_found() -> None:
    assert len(GOLDEN) > 20


@needs_shared
def test_corpus_found() -> None:
    assert len(REAL) > 10


def line_of(value: object) -> bytes:
    return b'{"type":"result","subtype":"success","x":' + json.dumps(value).encode() + b"}\n"


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # the float text Python's json writes (repr), checked against json.dumps itself below
        (b"1e16", b"1e+16"),
        (b"1E16", b"1e+16"),
        (b"10000000000000000.0", b"1e+16"),
        (b"1e15", b"1000000000000000.0"),
        (b"1e-7", b"1e-07"),
        (b"0.0001", b"0.0001"),
        (b"0.00001", b"1e-05"),
        (b"-0.0", b"-0.0"),
        (b"1.0", b"1.0"),
        (b"1.5", b"1.5"),
        (b"5e-324", b"5e-324"),
        (b"1.7976931348623157e308", b"1.7976931348623157e+308"),
        (b"0.1", b"0.1"),
        (b"123456789012345678", b"123456789012345678"),
        (b"-9223372036854775809", b"-9223372036854775809"),
        (b"9" * 400, b"9" * 400),
    ],
)
def test_numbers_are_written_as_python_does(text: bytes, want: bytes) -> None:
    data = b'{"type":"result","subtype":"success","x":' + text + b"}\n"
    out = check(data, "claude")
    assert b'"parsed":{"type":"result","subtype":"success","x":' + want + b"}" in out
    assert json.dumps(json.loads(text)).encode() == want


def test_usage_sums_and_costs_keep_their_types() -> None:
    data = (
        b'{"type":"result","subtype":"success","total_cost_usd":1e-7,"usage":'
        b'{"input_tokens":9223372036854775807,"output_tokens":1.0,'
        b'"cache_read_input_tokens":9223372036854775807}}\n'
    )
    out = check(data, "claude")
    usage = [e["usage"] for e in decode(out) if "usage" in e]
    assert usage, out
    assert any(type(u.get("costUsd")) is float for u in usage)


def test_an_overflowing_usage_sum_is_written_as_json_dumps_does() -> None:
    data = (
        b'{"type":"result","subtype":"success","usage":{"input_tokens":1.7e308,'
        b'"cache_creation_input_tokens":1.7e308,"output_tokens":1e308}}\n'
    )
    out = check(data, "claude")
    assert b'"inputTokens":Infinity,"outputTokens":1e+308' in out


def test_strings_escape_exactly_as_json_dumps() -> None:
    s = 'q"b\\s/\n\r\t\b\f\x00\x1f\x7f é € 𝄞 \u2028'
    data = b'{"type":"assistant","message":{"content":' + json.dumps(s).encode() + b"}}\n"
    out = check(data, "claude")
    assert json.dumps(s, ensure_ascii=False).encode() in out
    assert "é € 𝄞".encode() in out  # UTF-8, not \\u escapes


def test_raw_with_control_characters_and_bad_utf8() -> None:
    data = b'plain \x01\x02 text\x7f\n\xff\xfe broken\n{"a":\x01}\n'
    out = check(data, "claude")
    kinds = [(e["kind"], e["subtype"]) for e in decode(out)]
    assert ("error", "invalid_utf8") in kinds and ("status", "non_json") in kinds


def test_repaired_lone_surrogates() -> None:
    data = b'{"type":"assistant","message":{"content":"a\\ud800b\\udc00"}}\n'
    out = check(data, "claude")
    (ev,) = [e for e in decode(out) if e.get("repairedSurrogates")]
    assert ev["repairedSurrogates"] == 2
    assert "a\ufffdb\ufffd" in out.decode()


def test_duplicate_keys_take_first_place_last_value() -> None:
    data = (
        b'{"type":"x","a":1,"b":2,"a":3}\n{'
        + b",".join(b'"k%d":%d' % (i % 20, i) for i in range(40))
        + b"}\n"
    )
    out = check(data, "claude")
    first = decode(out)[0]["parsed"]
    assert list(first.items()) == [("type", "x"), ("a", 3), ("b", 2)]


# Lines already in the writer's form have their `parsed` JSON copied (rust/parse.rs,
# `Line::canonical`); each near miss below must be written from the tree instead.
CANONICAL_OR_NOT = [
    r'{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"a\"b\\c\n\t\u001b"}]}}',
    r'  {"type":"assistant","message":{"content":[]}}  ',  # blanks around the value only
    r'{"type": "assistant"}',
    r'{"type":"assistant","message":{"content":[ ]}}',
    r'{"a":"\/"}',
    r'{"a":"\u00e9"}',
    r'{"a":"\u001B"}',
    r'{"a":"\u000a"}',
    r'{"a":"\u0041"}',
    r'{"a":"\ud83d\ude00"}',
    r'{"a":"\ud800x"}',
    r'{"a":-0}',
    r'{"a":-0.0,"b":0.0}',
    r'{"a":1E5}',
    r'{"a":1e5}',
    r'{"a":1e+16,"b":1e16}',
    r'{"a":0.10}',
    r'{"a":1e-7,"b":1e-07}',
    r'{"a":123456789012345678901234567890}',
    r'{"a":1,"a":2}',
    r'{"type":"result","usage":{"input_tokens":1,"input_tokens":2}}',
    r'{"a":{"b":1,"c":{"d":[1,{"e":2,"e":3}]}}}',
    r"[1,2]",
    r'"x"',
    r"1.5",
    r"-0",
]


@pytest.mark.parametrize("line", CANONICAL_OR_NOT)
def test_parsed_is_copied_only_when_the_line_is_already_written_form(line: str) -> None:
    for dialect in ("claude", "codex", "cursor", "auto"):
        out = check(line.encode() + b"\n", dialect)
        parsed = json.loads(out.split(b"\n")[0])["parsed"]
        assert json.dumps(parsed, ensure_ascii=False, separators=(",", ":")) in out.decode()


def test_budget_and_framing_outcomes() -> None:
    deep = b"[" * 70 + b"]" * 70
    data = b"\xef\xbb\xbf" + deep + b"\n" + b'{"a":"' + b"x" * 300 + b'"}\r\n\n  \n{"b":1}'
    check(data, "claude")
    check(data, "auto", max_line_bytes=100, max_depth=8, max_nodes=5)
    check("{}\n".encode("utf-16"), "auto")
    check(b"", "auto")


def test_mapping_dialect() -> None:
    d = checkfu_fast.load_dialect(ROOT / "python" / "checkfu_fast" / "mappings" / "north.json")
    sample = sorted((ROOT / "vectors" / "events").glob("north/*.input.jsonl"))
    for path in sample[:3]:
        data = path.read_bytes()
        out = checkfu_fast.normalize_jsonl(data, d)
        assert strict_key(decode(out)) == strict_key(checkfu_fast.normalize(data, d))


@given(data=streams(), budgets=budget_options, cuts=st.lists(st.integers(0, 1 << 16), max_size=6))
def test_streams_and_chunkings(data: bytes, budgets: dict, cuts: list[int]) -> None:
    out = check(data, "auto", **budgets)
    n = checkfu_fast.Normalizer("auto", **budgets)
    pieces, last = [], 0
    for k, c in enumerate(sorted(c % (len(data) + 1) for c in cuts)):
        piece = data[last:c]
        pieces.append(n.feed_jsonl(memoryview(piece) if k % 2 else bytearray(piece)))
        last = c
    pieces.append(n.feed_jsonl(data[last:]))
    pieces.append(n.finish_jsonl())
    assert b"".join(pieces) == out


@given(data=st.binary(max_size=400), dialect=st.sampled_from(["auto", "claude", "codex", "cursor"]))
def test_arbitrary_bytes(data: bytes, dialect: str) -> None:
    check(data, dialect)


def test_normalizer_styles_mix_and_share_seq() -> None:
    data = (ROOT / "vectors" / "samples" / "claude-api-error.jsonl").read_bytes()
    half = len(data) // 2
    n = checkfu_fast.Normalizer("claude")
    dicts = n.feed(data[:half])
    rest = decode(n.feed_jsonl(data[half:]) + n.finish_jsonl())
    assert strict_key(dicts + rest) == strict_key(checkfu_fast.normalize(data, "claude"))
    assert n.finish_jsonl() == b""
    with pytest.raises(ValueError, match="after finish"):
        n.feed_jsonl(b"{}\n")


def test_source_is_the_last_field() -> None:
    n = checkfu_fast.Normalizer("codex", source="dir/a é.jsonl")
    out = n.feed_jsonl(b'{"type":"turn.started"}\n') + n.finish_jsonl()
    (ev,) = decode(out)
    assert list(ev)[-3:] == ["raw", "parsed", "source"] and ev["source"] == "dir/a é.jsonl"


# -- normalize_files ------------------------------------------------------------------------


def test_normalize_files_equals_one_file_path(tmp_path: Path) -> None:
    paths = REAL[:6] + GOLDEN[:4]
    want = [checkfu_fast.normalize_jsonl(p.read_bytes()) for p in paths]
    assert checkfu_fast.normalize_files(paths, jobs=1) == want
    assert checkfu_fast.normalize_files([str(p) for p in paths], jobs=2) == want
    assert checkfu_fast.normalize_files(paths) == want


def test_normalize_files_large_file_crosses_read_chunks(tmp_path: Path) -> None:
    # lines spanning the core's 1 MiB reads, an over-long line and a final line without LF
    line = b'{"type":"assistant","message":{"content":"' + b"y" * 70_000 + b'"}}\n'
    data = line * 40 + b'{"type":"result","subtype":"success","result":"' + b"z" * 200 + b'"}'
    p = tmp_path / "big.jsonl"
    p.write_bytes(data)
    (got,) = checkfu_fast.normalize_files([p], max_line_bytes=100_000)
    assert got == checkfu_fast.normalize_jsonl(data, max_line_bytes=100_000)
    (got,) = checkfu_fast.normalize_files([p], max_line_bytes=1000)
    assert got == checkfu_fast.normalize_jsonl(data, max_line_bytes=1000)


def test_normalize_files_out_dir_names(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = tmp_path / "a" / "s.jsonl"
    two = tmp_path / "b" / "s.jsonl"
    one.write_bytes(b'{"type":"turn.started"}\n')
    two.write_bytes(b'{"type":"result","subtype":"success"}\n')
    out = tmp_path / "out"
    out.mkdir()
    written = checkfu_fast.normalize_files([one, two, one], out, jobs=2)
    assert [Path(w).name for w in written] == [
        "s.jsonl.events.jsonl",
        "s.jsonl~2.events.jsonl",
        "s.jsonl~3.events.jsonl",
    ]
    for src, dst in zip([one, two, one], written, strict=True):
        assert Path(dst).read_bytes() == checkfu_fast.normalize_jsonl(src.read_bytes())


def test_normalize_files_with_a_mapping_dialect() -> None:
    d = checkfu_fast.load_dialect(ROOT / "python" / "checkfu_fast" / "mappings" / "north.json")
    paths = sorted((ROOT / "vectors" / "events").glob("north/*.input.jsonl"))[:4]
    want = [checkfu_fast.normalize_jsonl(p.read_bytes(), d) for p in paths]
    assert checkfu_fast.normalize_files(paths, dialect=d, jobs=2) == want
    assert checkfu_fast.normalize_files(paths, dialect="north", jobs=2) == want


def test_normalize_files_errors(tmp_path: Path) -> None:
    good = tmp_path / "g.jsonl"
    good.write_bytes(b"{}\n")
    with pytest.raises(FileNotFoundError) as info:
        checkfu_fast.normalize_files([good, tmp_path / "missing.jsonl"])
    assert info.value.filename == str(tmp_path / "missing.jsonl")
    # an out_dir that does not exist: the error names the output, not the (readable) input
    with pytest.raises(FileNotFoundError) as info:
        checkfu_fast.normalize_files([good], out_dir=tmp_path / "no" / "dir")
    assert info.value.filename == str(tmp_path / "no" / "dir" / "g.jsonl.events.jsonl")
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.normalize_files([good], jobs=0)
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.normalize_files([good], format="csv")
    with pytest.raises(checkfu_fast.InvalidOption, match="needs out_dir"):
        checkfu_fast.normalize_files([good], format="parquet")
    with pytest.raises(checkfu_fast.UnknownDialect):
        checkfu_fast.normalize_files([good], dialect="nope")
    assert checkfu_fast.normalize_files([]) == []


# -- the CLI as a stream filter ---------------------------------------------------------------


def cli(*args: str, stdin: bytes = b"", env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        check=False,
        env=env,
    )


@needs_shared
def test_cli_bytes_are_normalize_jsonl() -> None:
    path = REAL[0]
    res = cli("normalize", str(path))
    assert res.returncode == 0, res.stderr
    assert res.stdout == checkfu_fast.normalize_jsonl(path.read_bytes())
    assert cli("normalize", "--reference", str(path)).stdout == res.stdout
    assert cli("normalize", "--summary", str(path)).stdout == res.stdout


@needs_shared
def test_cli_many_files_same_bytes_with_jobs() -> None:
    paths = [str(p) for p in REAL[:5]]
    serial = cli("normalize", *paths)
    assert serial.returncode == 0, serial.stderr
    assert cli("normalize", "--jobs", "2", *paths).stdout == serial.stdout
    assert cli("normalize", "--reference", *paths).stdout == serial.stdout
    events = decode(serial.stdout)
    assert {e["source"] for e in events} == set(paths)


@needs_shared
def test_cli_jobs_reports_unreadable_files() -> None:
    res = cli("normalize", "--jobs", "2", "no/such.jsonl", str(REAL[0]))
    assert res.returncode == 1
    assert b"checkfu-fast: no/such.jsonl: No such file or directory" in res.stderr
    assert res.stdout  # the readable file was still written


def test_cli_output_does_not_depend_on_orjson(tmp_path: Path) -> None:
    # a float orjson writes differently (1e16) and an int orjson cannot write at all
    data = b'{"type":"result","subtype":"success","x":1e16,"y":' + b"7" * 30 + b"}\n"
    (tmp_path / "orjson.py").write_text("raise ImportError('hidden')\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    for args in (["normalize", "-"], ["normalize", "--summary", "-"]):
        with_orjson = cli(*args, stdin=data)
        without = cli(*args, stdin=data, env=env)
        assert with_orjson.returncode == without.returncode == 0, without.stderr
        assert with_orjson.stdout == without.stdout == checkfu_fast.normalize_jsonl(data)
        assert b"1e+16" in with_orjson.stdout and b"7" * 30 in with_orjson.stdout


def test_cli_huge_integers_never_crash() -> None:
    data = b'{"type":"turn.completed","usage":{"input_tokens":' + b"9" * 3000 + b"}}\n"
    for extra in ([], ["--reference"], ["--summary"]):
        res = cli("normalize", "--dialect", "codex", *extra, "-", stdin=data)
        assert res.returncode == 0, res.stderr
        assert b"9" * 3000 in res.stdout


def test_cli_emits_events_as_lines_arrive_on_a_pipe() -> None:
    one = b'{"type":"turn.started"}\n'
    two = b'{"type":"turn.completed","usage":{"input_tokens":1}}\n'
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkfu_fast", "normalize", "--dialect", "codex", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(one)
        proc.stdin.flush()
        # the first event arrives while our end of its stdin is still open
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no event within 60 s of the first line"
        first = proc.stdout.readline()
        assert proc.poll() is None, "the filter exited before its input ended"
        assert json.loads(first)["subtype"] == "turn_started"
        proc.stdin.write(two)
        proc.stdin.close()
        rest = proc.stdout.read()
    finally:
        if not proc.stdin.closed:
            proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0
    want = checkfu_fast.normalize(one + two, "codex")
    assert strict_key(decode(first + rest)) == strict_key(want)


@pytest.mark.parametrize("extra", [[], ["--reference"], ["--jobs", "2"]])
def test_cli_closed_stdout_ends_quietly(tmp_path: Path, extra: list[str]) -> None:
    line = b'{"type":"assistant","message":{"content":"' + b"w" * 2000 + b'"}}\n'
    big = tmp_path / "big.jsonl"
    big.write_bytes(line * 3000)  # about 6 MB in, ~12 MB out: far beyond the pipe buffer
    files = [str(big), str(big)]
    res = subprocess.run(
        f"{sys.executable} -m checkfu_fast normalize {' '.join(extra)} {' '.join(files)}"
        ' | head -c 100 >/dev/null; echo "rc=${PIPESTATUS[0]}" >&2',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        cwd=ROOT,
        check=False,
    )
    rc = res.stderr.decode().strip().splitlines()[-1]
    assert rc in ("rc=0", f"rc={128 + signal.SIGPIPE}"), res.stderr
    assert res.stderr.decode().strip() == rc, res.stderr  # no message, no traceback
