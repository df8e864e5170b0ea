"""Smoke run of benches/report_speed.py (``checkfu-fast report`` against split + orjson.loads and
a user's plain Python reader) on a small tree: the report's token totals equal the plain
reader's (checked inside); the speeds are printed, never asserted."""

from __future__ import annotations

import pytest

pytest.importorskip("orjson")

import report_speed


def test_report_speed_smoke() -> None:
    res = report_speed.main(mb=0.5)
    assert res["files"] > 0
    print(res)
