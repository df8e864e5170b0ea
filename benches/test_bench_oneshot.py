"""oneshot-v1 observation of a turn's stdout: native normalizer vs the pure-Python reference.

A turn's stdout (a generated claude / codex / cursor session, 2 MB) becomes observations;
``observe`` is the same code on both paths except the events/v1 normalizer behind it.
"""

from __future__ import annotations

import pytest

from checkfu_fast.oneshot import TurnRequest, observe, validate_contract
from corpus import make_corpus

BENCH_BYTES = 2 << 20
SMOKE_BYTES = 256 << 10
CONTRACT = validate_contract(
    {
        "image": "ghcr.io/acme/agent:1",
        "entrypoint": "/usr/local/bin/agent",
        "protocol": "oneshot-v1",
        "argv": ["-p"],
        "prompt_transport": "stdin",
        "output_mode": "stream_json",
    }
)
_CACHE: dict[tuple[str, int], bytes] = {}


@pytest.mark.parametrize("dialect", ["claude", "codex", "cursor"])
@pytest.mark.parametrize("path", ["native", "reference"])
def test_bench_observe(benchmark, dialect: str, path: str) -> None:
    size = SMOKE_BYTES if benchmark.disabled else BENCH_BYTES
    data = _CACHE.setdefault((dialect, size), make_corpus(dialect, size))
    request = TurnRequest("x")
    benchmark.group = f"observe-{dialect}"
    obs, _ = benchmark.pedantic(
        observe,
        args=(CONTRACT, request, data),
        kwargs={"dialect": dialect, "implementation": path},
        rounds=3,
        iterations=1,
    )
    other = "reference" if path == "native" else "native"
    assert obs == observe(CONTRACT, request, data, dialect=dialect, implementation=other)[0]
    benchmark.extra_info["observations"] = len(obs)
    if benchmark.stats is not None:
        benchmark.extra_info["MB_per_s"] = round(len(data) / 1e6 / benchmark.stats.stats.median, 1)
