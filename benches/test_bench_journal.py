"""Journal validation: native vs reference on typical records (records/s in extra_info)."""

from __future__ import annotations

import json
import random

import pytest

import checkfu_fast
from checkfu_fast import reference


def make_journal(n: int, seed: int = 0) -> bytes:
    r = random.Random(seed)
    out = []
    for i in range(n):
        roll = r.random()
        if roll < 0.4:
            rec = {
                "kind": "attempt.started",
                "task": f"task-{i % 97}",
                "phase": "implement",
                "ordinal": 1 + i % 3,
                "attemptId": f"a-{i}",
                "leaseId": f"l-{i}",
                "processGeneration": 1 + i % 5,
                "ts": "2026-12-02T17:00:00Z",
            }
        elif roll < 0.7:
            rec = {
                "kind": "review.verdict",
                "task": f"task-{i % 97}",
                "phase": "review",
                "binding": "codex",
                "baseHead": f"{r.getrandbits(40):010x}",
                "taskHead": f"{r.getrandbits(40):010x}",
                "verdict": "pass",
            }
        elif roll < 0.9:
            rec = {
                "kind": "supervision.heartbeat",
                "generation": 1 + i % 9,
                "heartbeatAt": 1764694800 + i,
            }
        else:
            rec = {
                "kind": "rate-limit.parked",
                "task": "t",
                "phase": "p",
                "binding": "b",
                "baseHead": "x",
                "taskHead": "y",
                "failureClass": "quota",
                "failureFingerprint": "fp",
                "parkCount": 1,
                "resetAt": "2026-12-02T18:00:00+01:00",
            }
        out.append(json.dumps(rec, separators=(",", ":")))
    return ("\n".join(out) + "\n").encode()


_CACHE: dict[int, bytes] = {}


@pytest.mark.parametrize("path", ["native", "reference"])
def test_bench_validate_journal(benchmark, path: str) -> None:
    # --benchmark-disable (the project default) runs the body once on a small journal
    n = 20_000 if benchmark.disabled else 1_000_000
    data = _CACHE.setdefault(n, make_journal(n))
    fn = checkfu_fast.validate_journal if path == "native" else reference.validate_journal
    if path == "reference" and n > 100_000:
        data = data[: len(data) // 10].rsplit(b"\n", 1)[0] + b"\n"  # the reference is slow
        n = data.count(b"\n")
    benchmark.group = "journal"
    result = benchmark.pedantic(fn, args=(data,), rounds=3, iterations=1)
    assert result == []  # every generated record is valid by construction
    benchmark.extra_info["records"] = n
    if benchmark.stats is not None:
        benchmark.extra_info["records_per_s"] = round(n / benchmark.stats.stats.median)
