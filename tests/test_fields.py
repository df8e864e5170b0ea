"""The event field table (``EVENT_FIELDS``) and projections (``fields=``) on every path.

A projected event must equal the full event with the other keys dropped and ``lineBytes`` set
(the line's byte length where the full event has none), on both twins, in dicts, JSONL (up to
the JSON-text rule for trees) and Arrow rows.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given

import checkfu_fast
from checkfu_fast import reference
from checkfu_fast.golden import strict_key
from conftest import CORPUS, ROOT
from test_differential import budget_options, streams

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))
REAL = sorted(CORPUS.glob("*/*.jsonl"))
EXAMPLES = sorted((ROOT / "docs").glob("examples-*/*.jsonl"))
INPUTS = GOLDEN + EXAMPLES + REAL
TREES = (
    "providerArguments",
    "toolResult",
    "controlResponse",
    "backgroundTasks",
    "requiresAction",
    "structuredOutput",
    "parsed",
)


def ids(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def line_sizes(data: bytes) -> dict[int, int]:
    """Byte length of the line at each position, without its ending (LF, or CR LF)."""
    out, pos = {}, 0
    parts = data.split(b"\n")
    for i, line in enumerate(parts):
        crlf = i + 1 < len(parts) and line.endswith(b"\r")
        out[pos] = len(line) - crlf
        pos += len(line) + 1
    return out


def expected(full: list[dict], keep: tuple[str, ...], sizes: dict[int, int]) -> list[dict]:
    """The projection of full events, computed from the full events alone."""
    out = []
    for ev in full:
        want = {}
        for k in checkfu_fast.EVENT_FIELDS:
            if k not in keep:
                continue
            if k == "lineBytes":
                want[k] = ev.get("lineBytes", sizes.get(ev["position"], 0))
            elif k in ev:
                want[k] = ev[k]
        out.append(want)
    return out


def test_event_fields_are_one_table() -> None:
    fields = checkfu_fast.EVENT_FIELDS
    assert fields == tuple(checkfu_fast._native.EVENT_FIELDS) == reference.EVENT_FIELDS
    assert len(set(fields)) == len(fields)
    assert fields[:6] == ("v", "seq", "position", "dialect", "kind", "subtype")
    assert fields[-2:] == ("raw", "parsed")
    doc = (ROOT / "docs" / "events.md").read_text()
    listed = re.search(r"Keys appear in this order: `([^`]*)`", doc)
    assert listed is not None
    assert tuple(listed.group(1).split()) == fields
    # the Arrow inverse walks the same table
    assert tuple(name for name, *_ in checkfu_fast._native.FIELD_TABLE) == fields


def test_full_events_keep_the_table_order() -> None:
    data = b"".join(p.read_bytes() for p in GOLDEN)
    order = {k: i for i, k in enumerate(checkfu_fast.EVENT_FIELDS)}
    for ev in checkfu_fast.normalize(data):
        keys = [order[k] for k in ev]
        assert keys == sorted(keys), list(ev)


def test_event_dicts_are_their_own() -> None:
    """Every event dict (each a copy of the writer's template, with the kept strings of the
    repeated values) is a plain dict of its own: changing one changes no other event, no
    later call's and no later chunk's."""
    data = b"".join(p.read_bytes() for p in GOLDEN)
    for fields in (None, "lean", ["text"]):
        kw = {} if fields is None else {"fields": fields}
        first = checkfu_fast.normalize(data, **kw)
        want = json.dumps(first)
        assert len(first) > 100 and all(type(ev) is dict for ev in first)
        for ev in first:
            ev["kind"] = "changed"
            ev["seq"] = -1
            ev["extraKey"] = None
            ev.pop("v")
        again = checkfu_fast.normalize(data, **kw)
        assert json.dumps(again) == want
        assert all("extraKey" not in ev for ev in again)
    n = checkfu_fast.Normalizer(fields="lean")
    head = n.feed(data[: len(data) // 2])
    kept = json.loads(json.dumps(head))
    for ev in head:
        ev.clear()
    rest = n.feed(data[len(data) // 2 :]) + n.finish()
    assert head and rest
    assert kept + rest == checkfu_fast.normalize(data, fields="lean")


def test_unknown_field_names_the_valid_ones() -> None:
    for f in (checkfu_fast.normalize, reference.normalize):
        with pytest.raises(ValueError, match=r"unknown event field 'texts'.*valid fields: v, seq"):
            f(b"{}\n", fields=["texts"])
        with pytest.raises(ValueError, match="lean"):
            f(b"{}\n", fields="slim")
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.normalize_arrow(b"{}\n", fields=["nope"])
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.Normalizer(fields=["nope"])
    with pytest.raises(ValueError, match="unknown event field"):  # the core checks too
        checkfu_fast._native.normalize(b"{}\n", "auto", fields=["nope"])
    assert checkfu_fast.normalize(b"{}\n", fields="all") == checkfu_fast.normalize(b"{}\n")
    every = list(checkfu_fast.EVENT_FIELDS)
    assert checkfu_fast.normalize(b"{}\n", fields=every) == checkfu_fast.normalize(b"{}\n")


@pytest.mark.parametrize("path", INPUTS, ids=ids)
def test_lean_is_full_minus_raw_and_parsed(path: Path) -> None:
    data = path.read_bytes()
    full = checkfu_fast.normalize(data)
    keep = reference.resolve_fields("lean")
    assert keep is not None
    events = expected(full, keep, line_sizes(data))
    want = strict_key(events)
    assert strict_key(checkfu_fast.normalize(data, fields="lean")) == want
    assert strict_key(reference.normalize(data, fields="lean")) == want
    jsonl = checkfu_fast.normalize_jsonl(data, fields="lean")
    assert jsonl == reference.normalize_jsonl(data, fields="lean")
    lines = [json.loads(x) for x in jsonl.splitlines()]
    for ev in lines:  # trees are JSON text in a projection's JSONL
        for k in TREES:
            if k in ev:
                ev[k] = json.loads(ev[k])
        if "arguments" in ev.get("tool", {}):
            ev["tool"]["arguments"] = json.loads(ev["tool"]["arguments"])
    assert lines == json.loads(json.dumps(events))


@pytest.mark.parametrize(
    "fields",
    [["text"], ["tool", "usage", "timestamp"], ["raw"], ["parsed", "lineBytes"], ["error"]],
)
def test_field_lists(fields: list[str]) -> None:
    data = b"".join(p.read_bytes() for p in GOLDEN[:40])
    full = checkfu_fast.normalize(data)
    keep = reference.resolve_fields(fields)
    assert keep is not None and set(keep) == {*fields, *reference.ALWAYS_FIELDS}
    want = strict_key(expected(full, keep, line_sizes(data)))
    assert strict_key(checkfu_fast.normalize(data, fields=fields)) == want
    assert strict_key(reference.normalize(data, fields=fields)) == want
    assert checkfu_fast.normalize_jsonl(data, fields=fields) == reference.normalize_jsonl(
        data, fields=fields
    )


@given(streams(), budget_options)
def test_generated_streams(data: bytes, budgets: dict) -> None:
    got = checkfu_fast.normalize(data, fields="lean", **budgets)
    assert strict_key(got) == strict_key(reference.normalize(data, fields="lean", **budgets))
    full = checkfu_fast.normalize(data, **budgets)
    assert len(got) == len(full)
    for lean, ev in zip(got, full, strict=True):
        assert {k: v for k, v in lean.items() if k != "lineBytes"} == {
            k: v for k, v in ev.items() if k not in ("raw", "parsed", "lineBytes")
        }
        assert lean["lineBytes"] == ev.get("lineBytes", lean["lineBytes"])
        assert "raw" not in lean and "parsed" not in lean
    assert checkfu_fast.normalize_jsonl(data, fields="lean", **budgets) == (
        reference.normalize_jsonl(data, fields="lean", **budgets)
    )


def test_line_bytes_recover_raw() -> None:
    """raw is the lineBytes bytes at position (CR LF, non-ASCII, blank and unended lines)."""
    data = b'{"type":"x"}\r\n\n  \n{"t":"\xc3\xa9"}\nnot json\n[1,2'
    for ev, full in zip(
        checkfu_fast.normalize(data, fields="lean"), checkfu_fast.normalize(data), strict=True
    ):
        line = data[ev["position"] : ev["position"] + ev["lineBytes"]]
        assert line.decode() == full["raw"]


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_normalizer_chunks(chunk: int) -> None:
    data = b"".join(p.read_bytes() for p in GOLDEN[:10])
    n = checkfu_fast.Normalizer(fields="lean")
    r = reference.Normalizer(fields="lean")
    got, ref = [], []
    for i in range(0, len(data), chunk):
        got += n.feed(data[i : i + chunk])
        ref += r.feed(data[i : i + chunk])
    got += n.finish()
    ref += r.finish()
    assert (
        strict_key(got)
        == strict_key(ref)
        == strict_key(checkfu_fast.normalize(data, fields="lean"))
    )
    j = checkfu_fast.Normalizer(fields="lean")
    out = b"".join(j.feed_jsonl(data[i : i + chunk]) for i in range(0, len(data), chunk))
    assert out + j.finish_jsonl() == checkfu_fast.normalize_jsonl(data, fields="lean")


def test_normalize_files_lean(tmp_path: Path) -> None:
    paths = [str(p) for p in GOLDEN[:8]]
    got = checkfu_fast.normalize_files(paths, fields="lean", jobs=2, _split_bytes=200)
    assert got == [checkfu_fast.normalize_jsonl(Path(p).read_bytes(), fields="lean") for p in paths]
    written = checkfu_fast.normalize_files(paths, tmp_path, fields=["text"])
    assert [Path(w).read_bytes() for w in written] == [
        checkfu_fast.normalize_jsonl(Path(p).read_bytes(), fields=["text"]) for p in paths
    ]


# --- Arrow: projected columns and typed scalars --------------------------------------------

pa = pytest.importorskip("pyarrow")


@pytest.mark.parametrize("path", GOLDEN[::7] + REAL, ids=ids)
def test_arrow_lean_rows(path: Path) -> None:
    from checkfu_fast.arrow import rows_to_events

    data = path.read_bytes()
    x = checkfu_fast.normalize_arrow(data, fields="lean", batch_rows=5)
    table = pa.table(x)
    assert "raw" not in table.column_names and "parsed" not in table.column_names
    assert table.column_names == checkfu_fast._native.arrow_columns("lean")
    want = checkfu_fast.normalize(data, fields="lean")
    assert strict_key(list(rows_to_events(table))) == strict_key(want)


def test_arrow_typed_scalars() -> None:
    lines = [
        {"type": "result", "subtype": "success", "result": "ok", "duration_ms": 1234,
         "timestamp": "2026-03-01T10:00:00.5+01:00", "session_id": "s"},
        {"type": "result", "subtype": "success", "result": "ok", "duration_ms": 2**70,
         "timestamp": "yesterday"},
        {"type": "system", "subtype": "compact_boundary",
         "compact_metadata": {"pre_tokens": 100, "post_tokens": 20}},
    ]  # fmt: skip
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    table = pa.table(checkfu_fast.normalize_arrow(data, "claude"))
    schema = table.schema
    assert schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert schema.field("timestamp_text").type == pa.large_string()
    for col in ("duration_ms", "tokens_before", "tokens_after", "reasoning_tokens"):
        assert schema.field(col).type == pa.int64(), col
    assert schema.field("retry_after_ms").type == pa.uint64()
    assert schema.field("delta").type == pa.bool_()
    rows = table.to_pylist()
    first = next(r for r in rows if r["duration_ms"] == 1234)
    assert first["timestamp"].isoformat() == "2026-03-01T09:00:00.500000+00:00"
    assert first["timestamp_text"] == "2026-03-01T10:00:00.5+01:00"
    second = next(r for r in rows if r["timestamp_text"] == "yesterday")
    assert second["timestamp"] is None  # unparsable: null, the text kept
    assert (second["duration_ms"], second["duration_ms_json"]) == (None, str(2**70))
    compact = next(r for r in rows if r["tokens_before"] is not None)
    assert (compact["tokens_before"], compact["tokens_after"]) == (100, 20)


@pytest.mark.parametrize(
    ("text", "micros"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("2026-12-04T22:48:36.123456Z", 1796424516123456),
        ("2024-02-29 12:00:00-0230", 1709217000000000),
        ("0001-01-01T00:00:00+01:00", -62135600400000000),
        ("2026-02-30T00:00:00Z", None),
        ("2026-12-04T25:00:00Z", None),
        ("2026-12-04", None),
        ("2026-12-04T22:48:36.Z", None),
    ],
)
def test_timestamp_column(text: str, micros: int | None) -> None:
    data = json.dumps({"type": "user", "timestamp": text, "message": {"content": "hi"}}) + "\n"
    table = pa.table(checkfu_fast.normalize_arrow(data.encode(), "claude"))
    cell = table.column("timestamp").cast(pa.int64()).to_pylist()[0]
    assert cell == micros


def test_lean_jsonl_reads_without_schema(tmp_path: Path) -> None:
    """One JSON type per key: polars and DuckDB read lean JSONL of mixed real data unaided."""
    paths = [str(p) for p in [*GOLDEN, *EXAMPLES]]  # each file its own stream
    out = tmp_path / "lean.jsonl"
    out.write_bytes(b"".join(checkfu_fast.normalize_files(paths, fields="lean")))
    full = b"".join(checkfu_fast.normalize_files(paths))
    n = len(full.splitlines())
    pl = pytest.importorskip("polars")
    frame = pl.read_ndjson(out, infer_schema_length=None)
    assert frame.height == n
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(f"SELECT count(*), count(tool) FROM read_json('{out}')").fetchall()
    assert rows[0][0] == n and rows[0][1] > 0
    # full-fidelity JSONL mixes types (toolResult a string here, a list there): the reason
    types: dict[str, set[str]] = {}
    for line in full.splitlines():
        for k, v in json.loads(line).items():
            types.setdefault(k, set()).add(type(v).__name__)
    assert len(types["toolResult"] | types["parsed"]) > 1
    lean_types: dict[str, set[str]] = {}
    for line in out.read_bytes().splitlines():
        for k, v in json.loads(line).items():
            if v is not None:
                lean_types.setdefault(k, set()).add(type(v).__name__)
    mixed = {k: t for k, t in lean_types.items() if len(t - {"int"} if "float" in t else t) > 1}
    assert mixed == {}


def test_dask_lean_columns() -> None:
    pytest.importorskip("dask.dataframe")
    from checkfu_fast import dask as cdask

    frame = cdask.read_events([str(p) for p in GOLDEN[:4]], fields="lean")
    assert list(frame.columns) == cdask.columns("lean")
    assert "raw" not in frame.columns and "line_bytes" in frame.columns
    got = frame.compute()
    assert len(got) == sum(len(checkfu_fast.normalize(p.read_bytes())) for p in GOLDEN[:4])


# --- the CLI: --fields ----------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args], capture_output=True, check=False
    )


def test_cli_fields(tmp_path: Path) -> None:
    paths = [str(p) for p in GOLDEN[:3]]
    one = cli("normalize", "--fields", "lean", paths[0])
    assert one.returncode == 0, one.stderr
    assert one.stdout == checkfu_fast.normalize_jsonl(Path(paths[0]).read_bytes(), fields="lean")
    for extra in (["--reference"], ["--jobs", "2"], ["--summary"]):
        got = cli("normalize", "--fields", "text,tool", *extra, paths[0])
        assert got.returncode == 0, (extra, got.stderr)
        want = checkfu_fast.normalize_jsonl(Path(paths[0]).read_bytes(), fields=["text", "tool"])
        assert got.stdout == want, extra
    many = cli("normalize", "--fields", "lean", "--jobs", "2", *paths)
    assert many.returncode == 0, many.stderr
    lines = [json.loads(x) for x in many.stdout.splitlines()]
    assert {ev["source"] for ev in lines} == set(paths) and all("raw" not in ev for ev in lines)
    bad = cli("normalize", "--fields", "text,nope", paths[0])
    assert bad.returncode == 2 and b"unknown event field 'nope'" in bad.stderr
    assert b"valid fields: v, seq" in bad.stderr


def test_cli_parquet_lean(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "lean.parquet"
    got = cli(
        "normalize", "--format", "parquet", "--fields", "lean", "-o", str(out), str(GOLDEN[0])
    )
    assert got.returncode == 0, got.stderr
    names = pq.read_schema(out).names
    assert "raw" not in names and "parsed" not in names and names[-1] == "source"
    assert "line_bytes" in names


# --- the CLI: --jobs streams in order, memory bounded by a window ---------------------------


def test_cli_jobs_streams_in_order(tmp_path: Path) -> None:
    paths = [str(p) for p in GOLDEN[:9]] + [str(tmp_path / "missing.jsonl")] + [str(GOLDEN[9])]
    serial = cli("normalize", *paths)
    for jobs in ("2", "3", "16"):
        got = cli("normalize", "--jobs", jobs, *paths)
        assert got.stdout == serial.stdout, jobs
        assert got.returncode == serial.returncode == 1
        assert got.stderr.count(b"missing.jsonl") == 1


def test_cli_jobs_splits_a_big_file(tmp_path: Path) -> None:
    """A big file is cut into ranges normalized on both threads (no temporary file left, none
    made); the same bytes as one stream."""
    import tempfile

    big = tmp_path / "big.jsonl"
    unit = (ROOT / "vectors" / "events" / "claude" / "session.input.jsonl").read_bytes()
    big.write_bytes(unit * ((13 << 20) // len(unit) + 1))
    before = set(Path(tempfile.gettempdir()).glob("checkfu-normalize-*"))
    one = cli("normalize", "--fields", "lean", str(big))
    two = cli("normalize", "--fields", "lean", "--jobs", "2", str(big))
    assert two.returncode == 0 and two.stdout == one.stdout
    assert set(Path(tempfile.gettempdir()).glob("checkfu-normalize-*")) == before


def test_cli_jobs_memory_is_bounded(tmp_path: Path) -> None:
    """Four 24 MiB files with --jobs 2: the peak RSS stays far below two files' JSONL (the
    whole outputs of a batch were held before: about 2 x 100 MB)."""
    unit = b"".join(p.read_bytes() for p in GOLDEN if p.parent.name == "claude")
    data = unit * ((24 << 20) // len(unit) + 1)
    paths = []
    for i in range(4):
        p = tmp_path / f"f{i}.jsonl"
        p.write_bytes(data)
        paths.append(str(p))
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (the forking pytest's own size)
    code = (
        "import sys\nfrom checkfu_fast import cli\n"
        f"rc = cli.main(['normalize', '--jobs', '2', '-o', {str(tmp_path / 'out.jsonl')!r}, "
        f"*{paths!r}])\n"
        "hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM')][0]\n"
        "print(hwm.split()[1], file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert res.returncode == 0, res.stderr
    peak_mib = int(res.stderr.split()[-1]) / 1024
    out = tmp_path / "out.jsonl"
    assert out.stat().st_size > 4 * len(data)  # the events were all written
    assert peak_mib < 180, peak_mib


def test_cli_parquet_jobs_and_progress(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    paths = [str(p) for p in GOLDEN[:6]]
    one, two = tmp_path / "1.parquet", tmp_path / "2.parquet"
    a = cli("normalize", "--format", "parquet", "--fields", "lean", "-o", str(one), *paths)
    b = cli(
        "normalize", "--format", "parquet", "--fields", "lean", "--jobs", "2", "--progress",
        "-o", str(two), *paths,
    )  # fmt: skip
    assert a.returncode == b.returncode == 0, (a.stderr, b.stderr)
    assert pq.read_table(one).equals(pq.read_table(two))
    assert b"6/6 files" in b.stderr or b.stderr.count(b"\n") >= 6  # progress lines, one a file
    table = pq.read_table(two)
    assert table.column("source").to_pylist()[0] == paths[0]
    n = sum(len(checkfu_fast.normalize(Path(p).read_bytes())) for p in paths)
    assert table.num_rows == n


def test_cli_parquet_row_groups_gather_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--format parquet writes row groups of ROW_GROUP_BYTES of Arrow data, not one per read
    (the writer keeps every row group's metadata until the file closes): six small files are
    one row group; with a 1-byte cap, every read's batches are a row group, same rows."""
    pq = pytest.importorskip("pyarrow.parquet")
    from checkfu_fast import cli as cli_module

    paths = [str(p) for p in GOLDEN[:6]]
    one, many = tmp_path / "1.parquet", tmp_path / "2.parquet"
    assert cli_module.main(["normalize", "--format", "parquet", "-o", str(one), *paths]) == 0
    monkeypatch.setattr(cli_module, "ROW_GROUP_BYTES", 1)
    args = ["normalize", "--format", "parquet", "--jobs", "2", "-o", str(many), *paths]
    assert cli_module.main(args) == 0
    assert pq.ParquetFile(one).metadata.num_row_groups == 1
    assert pq.ParquetFile(many).metadata.num_row_groups >= len(paths)
    assert pq.read_table(one).equals(pq.read_table(many))


def test_cli_parquet_does_not_import_pandas(tmp_path: Path) -> None:
    """The source column is built from its buffers: pa.array/pa.scalar on Python strings import
    pandas when it is installed (~50 MiB of resident memory in the command)."""
    pytest.importorskip("pyarrow.parquet")
    pytest.importorskip("pandas", reason="pandas is not installed: nothing could import it")
    out = str(tmp_path / "o.parquet")
    code = (
        "import sys\nfrom checkfu_fast import cli\n"
        f"rc = cli.main(['normalize', '--format', 'parquet', '-o', {out!r}, {str(GOLDEN[0])!r}])\n"
        "print('pandas' in sys.modules)\nsys.exit(rc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, check=False)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == b"False"


# --- usage totals over columns -----------------------------------------------------------

SESSION_FILES = sorted((ROOT / "docs").glob("examples-sessions/**/*.jsonl")) + sorted(
    (ROOT / "vectors" / "usage").glob("*.jsonl")
)


def _files_totals(paths: list[Path]) -> dict:
    """What the report folds: each file its own stream (the public UsageFold), events as dicts."""
    from checkfu_fast.usage import UsageFold

    fold = UsageFold()
    for p in paths:
        fold.start_stream()
        for ev in checkfu_fast.normalize(p.read_bytes()):
            fold.add(ev)
    return fold.totals()


@pytest.mark.parametrize("path", GOLDEN[::5] + SESSION_FILES + REAL, ids=ids)
def test_usage_totals_over_arrow(path: Path) -> None:
    data = path.read_bytes()
    want = checkfu_fast.usage_totals(checkfu_fast.normalize(data))
    for fields in ("lean", None):
        x = checkfu_fast.normalize_arrow(data, fields=fields, batch_rows=7)
        assert checkfu_fast.usage_totals(x) == want
        assert checkfu_fast.usage_totals(pa.table(x)) == want


def test_usage_totals_over_a_parquet_dataset(tmp_path: Path) -> None:
    """Many files in one Parquet file (a stream per source), read as a dataset: the totals of
    folding the files one by one."""
    ds = pytest.importorskip("pyarrow.dataset")
    paths = [p for p in SESSION_FILES if p.stat().st_size > 0] or GOLDEN[:10]
    out = tmp_path / "u.parquet"
    checkfu_fast.write_parquet([str(p) for p in paths], out, fields="lean")
    got = checkfu_fast.usage_totals(ds.dataset(out))
    assert got == _files_totals(paths)
    assert got["total"]["inputTokens"] > 0


def test_dask_usage_totals() -> None:
    pytest.importorskip("dask.dataframe")
    from checkfu_fast import dask as cdask

    paths = [p for p in SESSION_FILES if p.stat().st_size > 0]
    frame = cdask.read_events([str(p) for p in paths], fields="lean", split_bytes=4096)
    assert cdask.usage_totals(frame) == _files_totals(paths)
