"""Arrow output: ``normalize_arrow`` (the Arrow PyCapsule interface), its documented inverse
``checkfu_fast.arrow.row_to_event``, DuckDB on the object, and Parquet (``write_parquet``, the
CLI's ``--format parquet``).

Every row, turned back into an event by ``row_to_event``, must equal the event ``normalize()``
gives under ``strict_key`` (types, key order, float bits).
"""

from __future__ import annotations

import datetime
import gzip
import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given

import checkfu_fast
from checkfu_fast.arrow import row_to_event, rows_to_events
from checkfu_fast.golden import strict_key
from conftest import CORPUS, ROOT, shared_params
from test_differential import budget_options, streams

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))
REAL = sorted(CORPUS.glob("*/*.jsonl"))
EXAMPLES = sorted((ROOT / "docs").glob("examples-*/*.jsonl"))
SAMPLES = sorted((ROOT / "vectors" / "samples").glob("*.jsonl"))


def check(data: bytes, dialect: str = "auto", batch_rows: int = 65536, **budgets) -> list:
    """The rows of normalize_arrow are normalize()'s events, through the stream and the array."""
    want = checkfu_fast.normalize(data, dialect, **budgets)
    x = checkfu_fast.normalize_arrow(data, dialect, batch_rows=batch_rows, **budgets)
    assert len(x) == len(want)
    table = pa.table(x)  # __arrow_c_stream__
    assert table.schema == pa.schema(x)
    assert strict_key(list(rows_to_events(table))) == strict_key(want)
    batch = pa.record_batch(x)  # __arrow_c_array__ (batches concatenated)
    assert strict_key([row_to_event(r) for r in batch.to_pylist()]) == strict_key(want)
    return want


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_inputs(path: Path) -> None:
    data = path.read_bytes()
    if path.parent.name in checkfu_fast.DIALECTS:
        check(data, path.parent.name)
    check(data, "auto", batch_rows=3)


@pytest.mark.parametrize("path", shared_params(REAL), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_corpus(path: Path) -> None:
    check(path.read_bytes())


@pytest.mark.parametrize("path", EXAMPLES + SAMPLES, ids=lambda p: p.name)
def test_examples_and_samples(path: Path) -> None:
    check(path.read_bytes())


@given(streams(), budget_options)
def test_generated_streams(data: bytes, budgets: dict) -> None:
    check(data, "auto", batch_rows=2, **budgets)


def test_edge_rows() -> None:
    """The cells the typed columns cannot hold exactly: big and float counts (`_json` cells),
    integers beyond 64 bits in `parsed`, non-finite floats, UTF-16 input, budget failures."""
    big = 2**80
    lines = [
        # a claude result: an int cost and a float count (`_json`), a >64-bit count (dropped)
        json.dumps({"type": "result", "subtype": "success", "result": "ok", "session_id": "s",
                    "total_cost_usd": 0, "usage": {"input_tokens": 12.0, "output_tokens": big}}),
        '{"type":"system","subtype":"init","n":123456789012345678901234567890,"f":1e400}',
        '{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"é\\u0000"}],'
        '"usage":{"input_tokens":5,"output_tokens":1}},"x":-0.0}',
        "not json",
        "[" * 100,
    ]  # fmt: skip
    data = "\n".join(lines).encode()
    events = check(data, "claude", batch_rows=1)
    assert [ev["kind"] for ev in events].count("usage") == 2
    rows = pa.table(checkfu_fast.normalize_arrow(data, "claude")).to_pylist()
    usage = [r for r in rows if r["kind"] == "usage"]
    u = usage[0]
    assert (u["usage_input_tokens"], u["usage_input_tokens_json"]) == (12, "12.0")
    assert (u["usage_output_tokens"], u["usage_output_tokens_json"]) == (0, None)
    assert (u["usage_cost_usd"], u["usage_cost_usd_json"]) == (0.0, "0")
    assert [usage[1][f"usage_{k}_json"] for k in ("input_tokens", "output_tokens")] == [None] * 2
    assert (usage[1]["usage_input_tokens"], usage[1]["usage_output_tokens"]) == (5, 1)
    assert str(big) in rows[0]["parsed"]
    assert json.loads(rows[0]["parsed"])["usage"]["output_tokens"] == big
    table = pa.table(checkfu_fast.normalize_arrow(data))
    assert table.schema.field("usage_input_tokens").type == pa.int64()
    assert table.schema.field("seq").type == pa.uint64()
    check("\n".join(lines).encode("utf-16"))
    check(b"x" * 300 + b"\n{}", max_line_bytes=100)
    check(b"")
    check(b"\n\n   \n")


def test_batches_are_bounded() -> None:
    data = (ROOT / "vectors" / "events" / "claude" / "session.input.jsonl").read_bytes() * 5
    x = checkfu_fast.normalize_arrow(data, batch_rows=4)
    n = len(x)
    assert x.num_batches == -(-n // 4)
    reader = pa.RecordBatchReader.from_stream(x)
    sizes = [b.num_rows for b in reader]
    assert sizes == [4] * (n // 4) + ([n % 4] if n % 4 else [])
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.normalize_arrow(data, batch_rows=0)


def test_unconsumed_capsules_are_released() -> None:
    """A capsule dropped without import releases its data (no growth over many rounds)."""
    data = (ROOT / "vectors" / "events" / "claude" / "session.input.jsonl").read_bytes() * 200
    x = checkfu_fast.normalize_arrow(data, batch_rows=64)

    def rounds(k: int) -> None:
        for _ in range(k):
            x.__arrow_c_stream__()
            x.__arrow_c_array__()
            x.__arrow_c_schema__()

    rounds(20)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rounds(200)  # each __arrow_c_array__ concatenates ~1.5 MB of rows: 300 MB if leaked
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 100 << 10, grown_kib


def test_polars_reads_the_object_directly(tmp_path: Path) -> None:
    """polars takes the object through the PyCapsule stream interface: the same rows."""
    pl = pytest.importorskip("polars")
    data = b"".join(p.read_bytes() for p in GOLDEN[:20])
    x = checkfu_fast.normalize_arrow(data, batch_rows=7)
    df = pl.DataFrame(x)
    assert df.columns == checkfu_fast._native.arrow_columns()
    assert df.height == len(checkfu_fast.normalize(data))
    assert df.to_dicts() == pa.table(x).to_pylist()
    # an Arrow IPC file of normalize_files(format="arrow") reads back the same
    (written,) = checkfu_fast.normalize_files([GOLDEN[0]], tmp_path, format="arrow")
    ipc = pl.read_ipc(written)
    assert (
        ipc.to_dicts() == pa.table(checkfu_fast.normalize_arrow(GOLDEN[0].read_bytes())).to_pylist()
    )


def test_duckdb_reads_the_object_directly() -> None:
    data = b"".join(p.read_bytes() for p in GOLDEN if p.parent.name == "claude")
    events = checkfu_fast.normalize(data, "claude")
    x = checkfu_fast.normalize_arrow(data, "claude")  # noqa: F841 - read by duckdb by name
    got = duckdb.sql(
        "SELECT kind, count(*) AS n, sum(usage_output_tokens) AS out FROM x "
        "GROUP BY kind ORDER BY kind"
    ).fetchall()
    want: dict[str, list] = {}
    for ev in events:
        n, out = want.setdefault(ev["kind"], [0, None])
        tokens = ev.get("usage", {}).get("outputTokens")
        if tokens is not None:
            out = (out or 0) + tokens
        want[ev["kind"]] = [n + 1, out]
    assert got == [(k, n, out) for k, (n, out) in sorted(want.items())]


# the README's query, word for word (keep the two in step)
QUERY = """
SET TimeZone = 'UTC';
WITH readings AS (
  SELECT *, CAST(CAST("timestamp" AS TIMESTAMPTZ) AS DATE) AS day
  FROM read_parquet('{path}') WHERE kind = 'usage'
), runs AS (
  -- a run's counter: its largest reading, on the day of its last reading
  SELECT usage_model AS model, max(day) AS day, max(usage_cost_usd) AS cost_usd,
         max(usage_output_tokens) AS output_tokens
  FROM readings WHERE usage_scope = 'cumulative'
  GROUP BY source, session_id, usage_model
  UNION ALL
  -- a claude session-file message (request_id set): once across files, one whole reading
  -- (a main-conversation one before a sidechain copy, then the largest output, then input)
  SELECT usage_model, arg_max(day, k), NULL, arg_max(usage_output_tokens, k)
  FROM (SELECT *, struct_pack(main := NOT sidechain, o := usage_output_tokens,
                              i := usage_input_tokens) AS k
        FROM readings WHERE usage_scope = 'message' AND request_id IS NOT NULL)
  GROUP BY coalesce(message_id, request_id), usage_model
)
SELECT day, model, sum(cost_usd) AS cost_usd, sum(output_tokens) AS output_tokens
FROM runs GROUP BY ALL ORDER BY day NULLS LAST, model
"""


def utc_day(ts: str | None) -> datetime.date | None:
    if ts is None:
        return None
    t = datetime.datetime.fromisoformat(ts)
    if t.tzinfo is not None:
        t = t.astimezone(datetime.timezone.utc)
    return t.date()


def readme_rule(paths: list[Path]) -> list[tuple]:
    """The query's rule computed from normalize() events: per (file, session, model) the
    largest cumulative reading, on the UTC day of its last reading; per claude session-file
    message (across files) the winning reading; summed per (day, model)."""
    runs: dict[tuple, list] = {}
    messages: dict[tuple, tuple] = {}
    for p in paths:
        for ev in checkfu_fast.normalize(p.read_bytes()):
            if ev["kind"] != "usage":
                continue
            u = ev["usage"]
            day = utc_day(ev.get("timestamp"))
            if ev.get("usageScope") == "cumulative":
                key = (str(p), ev.get("sessionId"), u["model"])
                run = runs.setdefault(key, [None, None, None])
                if day is not None and (run[0] is None or day > run[0]):
                    run[0] = day
                for i, field in ((1, "costUsd"), (2, "outputTokens")):
                    if u.get(field) is not None:
                        run[i] = u[field] if run[i] is None else max(run[i], u[field])
            elif ev.get("usageScope") == "message" and "requestId" in ev:
                key = (ev.get("messageId", ev["requestId"]), u["model"])
                rank = (not ev.get("sidechain", False), u["outputTokens"], u["inputTokens"])
                if key not in messages or rank > messages[key][0]:
                    messages[key] = (rank, day, u["outputTokens"])
    rows = [(d, m, c, o) for (_, _, m), (d, c, o) in runs.items()]
    rows += [(d, m, None, o) for (_, m), (_, d, o) in messages.items()]
    totals: dict[tuple, list] = {}
    for day, model, cost, out in rows:
        t = totals.setdefault((day, model), [None, None])
        if cost is not None:
            t[0] = (t[0] or 0) + cost
        if out is not None:
            t[1] = (t[1] or 0) + out
    order = sorted(totals, key=lambda k: (k[0] is None, k[0] or datetime.date.min, k[1]))
    return [(d, m, *totals[d, m]) for d, m in order]


def test_write_parquet_rows_and_the_readme_query(tmp_path: Path) -> None:
    paths = REAL or GOLDEN
    out = tmp_path / "events.parquet"
    rows = checkfu_fast.write_parquet([str(p) for p in paths], out)
    table = pq.read_table(out)
    assert table.num_rows == rows
    assert table.column_names[-1] == "source"
    want = []
    for p in paths:
        want += [{**ev, "source": str(p)} for ev in checkfu_fast.normalize(p.read_bytes())]
    got = [{**row_to_event(r), "source": r["source"]} for r in table.to_pylist()]
    assert strict_key(got) == strict_key(want)
    # the README query on inputs with timestamps (claude session files, codex rollouts) and
    # without (claude stream-json results with a cost: the null day)
    paths = [*GOLDEN, *EXAMPLES]
    out = tmp_path / "dated.parquet"
    checkfu_fast.write_parquet([str(p) for p in paths], out)
    result = duckdb.sql(QUERY.format(path=out)).fetchall()
    expected = readme_rule(paths)
    assert len(result) == len(expected) > 0
    assert any(r[0] is not None for r in result) and any(r[2] is not None for r in result)
    # the rollouts' usage is booked on the model they ran, named by the events (a usage reading
    # of a rollout names its latest turn_context's model); what stays "unknown" is a spawned
    # thread's replayed parent counter, read before its first turn_context, which this simple
    # query does not subtract
    dated = {r[1] for r in result if r[0] is not None}
    assert {"gpt-5.5", "gpt-5.5-mini", "gpt-5.5-codex"} <= dated, dated
    readme = (ROOT / "README.md").read_text()
    assert QUERY.strip().replace("read_parquet('{path}')", "'events.parquet'") + ";" in readme
    for g, w in zip(result, expected, strict=True):
        assert g[:2] == w[:2]
        assert g[2] == pytest.approx(w[2]) if w[2] is not None else g[2] is None
        assert g[3] == w[3]


def test_write_parquet_of_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / "e.parquet"
    assert checkfu_fast.write_parquet([empty], out) == 0
    table = pq.read_table(out)
    assert table.num_rows == 0
    assert table.column_names == [*checkfu_fast._native.arrow_columns(), "source"]


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args], capture_output=True, check=False
    )


def test_cli_parquet(tmp_path: Path) -> None:
    paths = [str(p) for p in GOLDEN if p.parent.name == "codex"]
    out = tmp_path / "o.parquet"
    r = cli("normalize", "--format", "parquet", "-o", str(out), *paths)
    assert r.returncode == 0, r.stderr
    table = pq.read_table(out)
    n = sum(len(checkfu_fast.normalize(Path(p).read_bytes())) for p in paths)
    assert table.num_rows == n
    assert sorted(set(table.column("source").to_pylist())) == sorted(paths)
    assert b"needs -o" in cli("normalize", "--format", "parquet", *paths).stderr
    assert cli("normalize", "--format", "parquet", "-o", str(out), "-").returncode != 0
    missing = cli("normalize", "--format", "parquet", "-o", str(out), str(tmp_path / "no"))
    assert missing.returncode != 0


def test_cli_output_file_is_the_stdout_bytes(tmp_path: Path) -> None:
    path = str(GOLDEN[0])
    out = tmp_path / "o.jsonl"
    assert cli("normalize", "-o", str(out), path).returncode == 0
    assert out.read_bytes() == cli("normalize", path).stdout


def test_columns_are_documented() -> None:
    doc = (ROOT / "docs" / "arrow.md").read_text()
    for name in [*checkfu_fast._native.arrow_columns(), "source"]:
        assert f"| `{name}` |" in doc, name


@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_normalizer_arrow_chunks(chunk: int) -> None:
    """feed_arrow/finish_arrow over any chunking give normalize()'s rows, seq continuous."""
    data = b"".join(p.read_bytes() for p in GOLDEN[:6])
    n = checkfu_fast.Normalizer()
    got = []
    for i in range(0, len(data), chunk):
        got += rows_to_events(pa.table(n.feed_arrow(data[i : i + chunk], batch_rows=5)))
    got += rows_to_events(pa.table(n.finish_arrow()))
    assert strict_key(got) == strict_key(checkfu_fast.normalize(data))
    with pytest.raises(ValueError, match="after finish"):
        n.feed_arrow(b"{}\n")


def test_write_parquet_reads_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import checkfu_fast.arrow

    monkeypatch.setattr(checkfu_fast.arrow, "READ_CHUNK", 100)
    paths = GOLDEN[:5]
    out = tmp_path / "c.parquet"
    checkfu_fast.write_parquet(paths, out)
    got = [row_to_event(r) for r in pq.read_table(out).to_pylist()]
    want = [ev for p in paths for ev in checkfu_fast.normalize(p.read_bytes())]
    assert strict_key(got) == strict_key(want)


# -- normalize_files(format="arrow" | "parquet") ----------------------------------------------


def file_inputs(tmp_path: Path) -> list[Path]:
    """Real and golden streams, one gzip-compressed, one empty, two with the same name."""
    paths = [*(REAL or GOLDEN)[:5], *GOLDEN[:3]]
    gz = tmp_path / "z" / paths[0].name
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(paths[0].read_bytes()))
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    return [*paths, gz, empty]


def contents(p: Path) -> bytes:
    data = p.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


@pytest.mark.parametrize("jobs", [1, 2])
def test_normalize_files_arrow_in_memory(tmp_path: Path, jobs: int) -> None:
    paths = file_inputs(tmp_path)
    got = checkfu_fast.normalize_files(paths, format="arrow", jobs=jobs)
    assert len(got) == len(paths)
    for p, x in zip(paths, got, strict=True):
        want = checkfu_fast.normalize(contents(p))
        table = pa.table(x)
        assert table.schema == pa.schema(checkfu_fast.normalize_arrow(b""))
        assert strict_key(list(rows_to_events(table))) == strict_key(want), p
    assert duckdb.sql("select count(*) from x").fetchall() == [(len(want),)]
    with pytest.raises(FileNotFoundError) as info:
        checkfu_fast.normalize_files([paths[0], tmp_path / "missing.jsonl"], format="arrow")
    assert info.value.filename == str(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("fmt", ["parquet", "arrow"])
def test_normalize_files_to_out_dir(
    tmp_path: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import checkfu_fast.arrow

    monkeypatch.setattr(checkfu_fast.arrow, "READ_CHUNK", 1000)  # many chunks per file
    paths = file_inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    written = checkfu_fast.normalize_files(paths, out, format=fmt, jobs=2)
    assert written == [str(out / n) for n in checkfu_fast.output_names(paths, fmt)]
    assert all(Path(w).name.endswith(f".events.{fmt}") for w in written)
    assert len(set(written)) == len(written)  # the repeated names got ~2
    for p, w in zip(paths, written, strict=True):
        table = pq.read_table(w) if fmt == "parquet" else pa.ipc.open_file(w).read_all()
        assert table.column_names == checkfu_fast._native.arrow_columns()
        want = checkfu_fast.normalize(contents(p))
        assert strict_key(list(rows_to_events(table))) == strict_key(want), p


def test_normalize_files_to_out_dir_errors(tmp_path: Path) -> None:
    good = GOLDEN[0]
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"type":"turn.started"}\n' * 50_000)[:-20])  # truncated
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(checkfu_fast.errors.DamagedInput):  # an OSError naming the file
        checkfu_fast.normalize_files([good, bad], out, format="parquet", jobs=2)
    # the good file was written; the failed one left nothing behind
    assert sorted(p.name for p in out.iterdir()) == [f"{good.name}.events.parquet"]
    with pytest.raises(FileNotFoundError):
        checkfu_fast.normalize_files([tmp_path / "missing.jsonl"], out, format="arrow")
    assert sorted(p.name for p in out.iterdir()) == [f"{good.name}.events.parquet"]
    with pytest.raises(checkfu_fast.InvalidOption):
        checkfu_fast.output_names([good], "csv")


def test_reasoning_tokens_cells() -> None:
    """`reasoningTokens`: an integer in the int64 cell, a float count also as exact JSON text."""
    turn = (
        '{{"type":"turn.completed","usage":{{"input_tokens":10,"output_tokens":9,'
        '"reasoning_output_tokens":{}}}}}'
    )
    data = "\n".join(turn.format(n) for n in ("4", "4.0", "2.5", "1e300")).encode()
    events = check(data, "codex", batch_rows=1)
    assert [ev.get("reasoningTokens") for ev in events if ev["kind"] == "usage"] == [
        4, 4.0, 2.5, 1e300,
    ]  # fmt: skip
    rows = [r for r in pa.table(checkfu_fast.normalize_arrow(data, "codex")).to_pylist()
            if r["kind"] == "usage"]  # fmt: skip
    cells = [(r["reasoning_tokens"], r["reasoning_tokens_json"]) for r in rows]
    assert cells == [(4, None), (4, "4.0"), (None, "2.5"), (None, "1e+300")]
