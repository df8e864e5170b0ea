"""Throughput of the native core vs the pure-Python reference vs an orjson baseline.

Run: ``python3 -m pytest benches --benchmark-enable -q -p no:randomly`` (about 8 MB per corpus),
then ``python3 benches/report.py --json FILE`` for the table. With ``--benchmark-disable`` (the
project default) every body runs once on 1 MB corpora: a smoke test.

Every benchmark also checks, untimed, that its result equals the reference's on that corpus and
stores it in ``extra_info["agrees"]`` (and fails when it does not).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest

import checkfu_fast
import orjson_baseline
from checkfu_fast import reference
from corpus import make_corpus, make_mixed

CORPORA = ("claude", "cursor", "codex", "north", "canary", "solweb", "mixed")
BENCH_BYTES = 8 << 20
SMOKE_BYTES = 1 << 20
CHUNK = 64 << 10

ROUNDS = 5
WARMUP_ROUNDS = 1

# Only the current corpus (and its reference events) is kept alive: tests run corpus by corpus,
# and a big live heap of cached events would make every cyclic-GC pass during the timed runs
# slower (it does: gen-2 collections walk all live containers), blurring the comparison.
_current: dict[str, Any] = {}


def _corpus(name: str, size: int) -> tuple[bytes, list[dict[str, Any]]]:
    """The corpus and the reference's events on it (computed once per corpus)."""
    key = (name, size)
    if _current.get("key") != key:
        _current.clear()
        gc.collect()
        data = make_mixed(size) if name == "mixed" else make_corpus(name, size)
        _current.update(key=key, data=data, expected=reference.normalize(data))
    return _current["data"], _current["expected"]


def _native_chunked(data: bytes) -> list[dict[str, Any]]:
    n = checkfu_fast.Normalizer()
    out: list[dict[str, Any]] = []
    mv = memoryview(data)
    for i in range(0, len(data), CHUNK):
        out += n.feed(mv[i : i + CHUNK])
    out += n.finish()
    return out


PATHS: dict[str, Callable[[bytes], list[dict[str, Any]]]] = {
    "native": checkfu_fast.normalize,
    "native_chunked_64k": _native_chunked,
    "reference": reference.normalize,
    "orjson_baseline": orjson_baseline.normalize,
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("corpus", CORPORA)
def test_normalize(benchmark: Any, corpus: str, path: str) -> None:
    assert checkfu_fast.IMPLEMENTATION == "native"
    # --benchmark-disable (the project default, via addopts) runs each body once: smoke test
    corpus_size = SMOKE_BYTES if benchmark.disabled else BENCH_BYTES
    data, expected = _corpus(corpus, corpus_size)
    fn = PATHS[path]
    # untimed correctness check (the reference's own result is compared too: determinism)
    got = fn(data)
    agrees = got == expected
    del got
    gc.collect()
    benchmark.group = corpus
    benchmark.extra_info.update(
        MB=len(data) / 1e6,
        bytes=len(data),
        path=path,
        corpus=corpus,
        lines=data.count(b"\n"),
        events=len(expected),
        agrees=agrees,
    )
    benchmark.pedantic(fn, args=(data,), rounds=ROUNDS, iterations=1, warmup_rounds=WARMUP_ROUNDS)
    assert agrees, f"{path} disagrees with the reference on the {corpus} corpus"
