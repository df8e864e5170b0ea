"""checkfu_fast.dask.read_events on a distributed.LocalCluster (2 worker processes, started and
stopped here): the same rows as the single-machine path (``normalize_arrow`` of each file),
row by row, with files split into byte ranges at newlines (seq continuous per file, positions
right), and the rows are the events of ``normalize()``."""

from __future__ import annotations

from pathlib import Path

import pytest

import checkfu_fast
from conftest import CORPUS, ROOT

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")

from checkfu_fast.arrow import row_to_event  # noqa: E402
from checkfu_fast.dask import columns, events_frame, read_events  # noqa: E402

GOLDEN = sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl"))


def records(frame) -> list[dict]:
    return pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False).to_pylist()


def single_machine(files: list[Path], dialect: str = "auto") -> list[dict]:
    out: list[dict] = []
    for p in files:
        out += records(events_frame(checkfu_fast.normalize_arrow(p.read_bytes(), dialect), str(p)))
    return out


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            worker_dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


def test_rows_equal_the_single_machine_path_on_a_cluster(client, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b"".join(p.read_bytes() for p in GOLDEN if p.parent.name == "claude"))
    files = [*GOLDEN[:12], big, *sorted(CORPUS.glob("codex/*.jsonl"))[:3]]
    df = read_events([str(p) for p in files], split_bytes=2000)
    assert list(df.columns) == columns()
    assert df.npartitions > len(files)  # the larger files are split into ranges
    got = records(df.compute())
    want = single_machine(files)
    assert len(got) == len(want) > 300
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g == w, i
    # the rows are the events of normalize() (seq continuous per file across its ranges)
    big_rows = [r for r in got if r["source"] == str(big)]
    assert [r["seq"] for r in big_rows] == list(range(len(big_rows)))
    assert [row_to_event(r) for r in big_rows] == checkfu_fast.normalize(big.read_bytes())


def test_a_fixed_dialect_and_a_directory(client, tmp_path: Path) -> None:
    for p in GOLDEN:
        if p.parent.name == "codex":
            (tmp_path / p.name).write_bytes(p.read_bytes())
    df = read_events(tmp_path, dialect="codex", split_bytes=500)
    files = sorted(tmp_path.glob("*.jsonl"))
    assert records(df.compute()) == single_machine(files, "codex")


def test_no_files_gives_an_empty_frame(tmp_path: Path) -> None:
    df = read_events(tmp_path)
    assert list(df.columns) == columns() and len(df.compute()) == 0
