"""Arrow output: ``normalize_arrow`` (the Arrow PyCapsule interface), its documented inverse
``checkfu_fast.arrow.row_to_event``, DuckDB on the object, and Parquet (``write_parquet``, the
CLI's ``--format parquet``).

Every row, turned back into an event by ``row_to_event``, must equal the event ``normalize()``
gives under ``strict_key`` (types, key order, float bits).
"""

from __future__ import annotations

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
from conftest import CORPUS, ROOT
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


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_corpus(path: Path) -> None:
    check(path.read_bytes())


@pytest.mark.parametrize("path", EXAMPLES + SAMPLES, ids=lambda p: p.name)
def test_examples_and_samples(path: Path) -> None:
    check(path.read_bytes())


@given(streams(), budget_options)
def test_generated_streams(data: bytes, budgets: dict) -> None:
    check(data, "auto", batch_rows=2, **budgets)


def test_edge_rows() -> None:
    """The cells the typed columns cannot hold exactly: big and float counts (usage_json),
    integers beyond 64 bits in `parsed`, non-finite floats, UTF-16 input, budget failures."""
    big = 2**80
    lines = [
        # a claude result: an int cost and a float count (usage_json), a >64-bit count (dropped)
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
    assert json.loads(usage[0]["usage_json"])["inputTokens"] == 12.0
    assert (usage[0]["usage_input_tokens"], usage[0]["usage_cost_usd"]) == (12, 0.0)
    assert usage[1]["usage_json"] is None
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


# the README's query, without the day (a `timestamp` column comes with the session-file work)
QUERY = """
WITH runs AS (
  SELECT source, session_id, dialect, usage_model AS model,
         max(usage_cost_usd) AS cost_usd, max(usage_output_tokens) AS output_tokens
  FROM read_parquet('{path}')
  WHERE kind = 'usage' AND usage_scope = 'cumulative'
  GROUP BY ALL
)
SELECT dialect, model, sum(cost_usd) AS cost_usd, sum(output_tokens) AS output_tokens
FROM runs GROUP BY ALL ORDER BY dialect, model
"""


def readme_rule(paths: list[Path]) -> list[tuple]:
    """The query's rule computed from normalize() events: the largest cumulative reading per
    (file, session, model), summed per (dialect, model)."""
    runs: dict[tuple, list] = {}
    for p in paths:
        for ev in checkfu_fast.normalize(p.read_bytes()):
            if ev["kind"] != "usage" or ev.get("usageScope") != "cumulative":
                continue
            u = ev["usage"]
            key = (str(p), ev.get("sessionId"), ev["dialect"], u["model"])
            run = runs.setdefault(key, [None, None])
            for i, field in enumerate(("costUsd", "outputTokens")):
                if u.get(field) is not None:
                    run[i] = u[field] if run[i] is None else max(run[i], u[field])
    totals: dict[tuple, list] = {}
    for (_, _, dialect, model), (cost, out) in runs.items():
        t = totals.setdefault((dialect, model), [None, None])
        if cost is not None:
            t[0] = (t[0] or 0) + cost
        if out is not None:
            t[1] = (t[1] or 0) + out
    return [(d, m, c, o) for (d, m), (c, o) in sorted(totals.items())]


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
    result = duckdb.sql(QUERY.format(path=out)).fetchall()
    expected = readme_rule(paths)
    assert len(result) == len(expected) > 0
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
