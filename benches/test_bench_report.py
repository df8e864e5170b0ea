"""``checkfu-fast report`` against split + orjson.loads and a user's plain Python reader, side by
side in one run (issue 21): ``report --no-cache`` (a fresh process, every core), the re-run
over the unchanged tree (the memo), the re-run from the per-file cache, the re-run after one
file grew (the per-file cache, that file read from where it ended), and the two
single-threaded baselines over the same files. ``REPORT_BENCH_MB`` sets the tree's size
(default 200 MB; 0.5 MB when benchmarks are disabled: a smoke run). The documents of every
report run, and the plain reader's token totals, must agree; speeds are never asserted.

    python3 -m pytest benches/test_bench_report.py --benchmark-enable -p no:randomly
"""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

pytest.importorskip("orjson")

import report_speed


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Any:
    opt = request.config.getoption
    # pytest-benchmark's own rule: --benchmark-enable wins over the project's --benchmark-disable
    disabled = opt("benchmark_disable", False) and not opt("benchmark_enable", False)
    mb = 0.5 if disabled else float(os.environ.get("REPORT_BENCH_MB", "200"))
    d = tmp_path_factory.mktemp("report-bench")
    size = report_speed.build(d / "tree", mb)
    paths = report_speed.files(d / "tree")
    expected, _ = report_speed.report(d / "tree", d / "cache", "--no-cache")
    return d / "tree", d / "cache", paths, size, expected


def _info(benchmark: Any, size: int) -> None:
    benchmark.group = "report"
    benchmark.extra_info["MiB"] = round(size / (1 << 20), 1)
    benchmark.extra_info["load"] = report_speed.load()


def test_report_no_cache(benchmark: Any, tree: Any) -> None:
    root, cache, _, size, expected = tree
    _info(benchmark, size)
    doc, rss = benchmark.pedantic(
        report_speed.report, args=(root, cache, "--no-cache"), rounds=3, iterations=1
    )
    benchmark.extra_info["peak RSS MiB"] = round(rss / 1024, 1)
    assert doc == expected


def test_report_rerun(benchmark: Any, tree: Any) -> None:
    root, cache, _, size, expected = tree
    _info(benchmark, size)
    report_speed.report(root, cache)  # fills the cache and the memo
    doc, rss = benchmark.pedantic(report_speed.report, args=(root, cache), rounds=5, iterations=1)
    benchmark.extra_info["peak RSS MiB"] = round(rss / 1024, 1)
    assert doc == expected


def test_report_rerun_per_file_cache(benchmark: Any, tree: Any) -> None:
    root, cache, _, size, expected = tree
    _info(benchmark, size)
    report_speed.report(root, cache)
    memo = cache / "checkfu_fast" / "memo"

    def setup() -> None:
        shutil.rmtree(memo, ignore_errors=True)

    doc, _ = benchmark.pedantic(
        report_speed.report, args=(root, cache), setup=setup, rounds=3, iterations=1
    )
    assert doc == expected


def test_report_rerun_a_file_grew(benchmark: Any, tree: Any) -> None:
    """An active session: one file grew (lines without usage) before each re-run, so the memo
    cannot answer (and is not written: the file was just modified); every other file's summary
    comes from the per-file cache and the grown file is read from where it ended."""
    root, cache, _, size, expected = tree
    _info(benchmark, size)
    report_speed.report(root, cache)

    def setup() -> None:
        report_speed.grow(root)

    doc, _ = benchmark.pedantic(
        report_speed.report, args=(root, cache), setup=setup, rounds=3, iterations=1
    )
    assert doc == expected


def test_split_orjson(benchmark: Any, tree: Any) -> None:
    _, _, paths, size, _ = tree
    _info(benchmark, size)
    assert benchmark.pedantic(report_speed.split_orjson, args=(paths,), rounds=3) > 0


def test_python_reader(benchmark: Any, tree: Any) -> None:
    _, _, paths, size, expected = tree
    _info(benchmark, size)
    got = benchmark.pedantic(report_speed.python_reader, args=(paths,), rounds=3)
    assert got == (expected["total"]["inputTokens"], expected["total"]["outputTokens"])


def test_report_speed_smoke() -> None:
    """benches/report_speed.py end to end on a small tree (its checks run inside)."""
    res = report_speed.main(mb=0.5)
    assert res["files"] > 0
    print(res)
