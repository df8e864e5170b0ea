"""Smoke run of benches/session_rss.py on a small rollout (1 GiB by hand, see that file): every
path completes on the plain and the zstd file; the peak RSS is printed, never asserted (it
depends on the machine)."""

from __future__ import annotations

import pytest

pytest.importorskip("zstandard")

import session_rss


def test_session_rss_smoke() -> None:
    rows = session_rss.main(size=2 << 20)
    runs = {(r["input"], r["run"]) for r in rows}
    for name in ("rollout.jsonl", "rollout.jsonl.zst"):
        for run in ("normalize_files", "cli normalize", "cli report"):
            assert (name, run) in runs
    print(rows)
