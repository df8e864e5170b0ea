"""``checkfu-fast report --limits``: the latest reading per CLI and window, and the quota ledger
over a crafted rollout whose numbers are computed by hand below."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import cli
from conftest import ROOT

PRICES = {"models": [{"id": "acme-coder-1", "prices": {"input": 2, "output": 8}}]}


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def write(path: Path, lines: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def count(ts: str, inp: int, out: int, primary: tuple, secondary: tuple) -> dict[str, Any]:
    """A rollout token_count at ``ts``: the cumulative counter and two windows
    ``(used_percent, resets_at)``."""
    total = {"input_tokens": inp, "cached_input_tokens": 0, "output_tokens": out}
    return {
        "timestamp": ts,
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"total_token_usage": total, "last_token_usage": total},
            "rate_limits": {
                "limit_id": "codex",
                "primary": {
                    "used_percent": primary[0],
                    "window_minutes": 300,
                    "resets_at": primary[1],
                },
                "secondary": {
                    "used_percent": secondary[0],
                    "window_minutes": 10080,
                    "resets_at": secondary[1],
                },
            },
        },
    }


R1 = 1793628000  # 2026-11-02T14:00:00Z: the first 5-hour window's reset
R2 = 1793647800  # 2026-11-02T19:30:00Z: the second's
S = 1795132800  # 2026-11-20T00:00:00Z: the weekly window's


def rollout(tmp_path: Path) -> Path:
    """Counter deltas (input/output tokens): 100k/0 at 10:00, then 200k/50k, 200k/50k,
    100k/0 (after the 5-hour window reset at 14:00), 200k/50k. At $2/$8 per MTok a 200k/50k
    delta costs $0.80, a 100k/0 one $0.20."""
    meta = {"id": "t1", "timestamp": "2026-11-02T09:59:00Z", "cwd": "/p", "cli_version": "0.60"}
    return write(
        tmp_path / "rollout-2026-11-02T09-59-00-t1.jsonl",
        [
            {"timestamp": "2026-11-02T09:59:00Z", "type": "session_meta", "payload": meta},
            {
                "timestamp": "2026-11-02T09:59:01Z",
                "type": "turn_context",
                "payload": {"model": "acme-coder-1", "cwd": "/p"},
            },
            count("2026-11-02T10:00:00Z", 100_000, 0, (10.0, R1), (20.0, S)),
            count("2026-11-02T10:30:00Z", 300_000, 50_000, (12.0, R1), (20.5, S)),
            count("2026-11-02T11:00:00Z", 500_000, 100_000, (14.0, R1), (21.0, S)),
            count("2026-11-02T14:30:00Z", 600_000, 100_000, (1.0, R2), (21.5, S)),
            count("2026-11-02T15:00:00Z", 800_000, 150_000, (3.0, R2), (22.5, S)),
        ],
    )


def test_ledger_over_a_crafted_rollout(tmp_path: Path, capsys) -> None:
    f = rollout(tmp_path)
    p = write(tmp_path / "prices.json", [PRICES])
    rc, out, err = run(["report", "--limits", "--json", "--prices", str(p), str(f)], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["files"] == 1 and doc["untimedReadings"] == 0
    five, week = doc["limits"]
    # 5h: 10->12->14 (two intervals, 250k tokens and $0.80 each), a reset (14 -> 1, and 14:00
    # passed), 1->3 (one more): 750k tokens and $2.40 over 6 percent
    assert {k: five[k] for k in ("dialect", "window", "limitType", "usedPercent")} == {
        "dialect": "codex",
        "window": "5h",
        "limitType": "primary",
        "usedPercent": 3.0,
    }
    assert five["resetsAt"] == "2026-11-02T19:30:00Z"
    assert five["readAt"] == "2026-11-02T15:00:00Z"
    assert (five["readings"], five["intervals"], five["resets"]) == (5, 3, 1)
    assert five["percentMoved"] == 6.0
    assert five["tokens"] == 750_000
    assert five["costUsd"] == pytest.approx(2.4)
    assert five["tokensPerPercent"] == 125_000
    assert five["usdPerPercent"] == pytest.approx(0.4)
    # burn since the reset: 1 -> 3 in 30 minutes = 4 %/h; 97 % left takes 24.25 h, after
    # the reset at 19:30: the window resets first
    assert five["percentPerHour"] == 4.0
    assert (five["runsOutAt"], five["runsOut"]) == ("2026-11-02T19:30:00Z", "reset")
    # 7d: never reset; moved 0.5+0.5+0.5+1.0 = 2.5 for 250k+250k+100k+250k = 850k tokens,
    # $0.80+$0.80+$0.20+$0.80 = $2.60
    assert (week["window"], week["limitType"], week["usedPercent"]) == ("7d", "secondary", 22.5)
    assert (week["intervals"], week["resets"], week["percentMoved"]) == (4, 0, 2.5)
    assert week["tokens"] == 850_000 and week["tokensPerPercent"] == 340_000
    assert week["costUsd"] == pytest.approx(2.6)
    assert week["usdPerPercent"] == pytest.approx(1.04)
    # 20 -> 22.5 in 5 h = 0.5 %/h; 77.5 % left takes 155 h: 2026-11-09T02:00Z, before the reset
    assert week["percentPerHour"] == 0.5
    assert (week["runsOutAt"], week["runsOut"]) == ("2026-11-09T02:00:00Z", "rate")
    # the table: 80 columns, the same numbers
    rc, out, _ = run(["report", "--limits", "--tz", "UTC", "--prices", str(p), str(f)], capsys)
    assert rc == 0
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80
    row5 = next(line for line in lines if line.split()[:2] == ["codex", "5h"])
    assert row5.split() == [
        "codex",
        "5h",
        "primary",
        "3.0%",
        "11-02",
        "19:30",
        "125.0k",
        "$0.40",
        "4.0",
        "reset",
    ]
    row7 = next(line for line in lines if line.split()[:2] == ["codex", "7d"])
    assert row7.split()[-4:] == ["340.0k", "$1.04", "0.5", "+6.5d"]  # 155 h


def test_no_estimate_keeps_tokens_and_drops_usd(tmp_path: Path, capsys) -> None:
    f = rollout(tmp_path)
    rc, out, _ = run(["report", "--limits", "--json", "--no-estimate", str(f)], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["prices"] is None
    five = doc["limits"][0]
    assert five["tokensPerPercent"] == 125_000
    assert five["costUsd"] is None and five["usdPerPercent"] is None


def test_a_window_without_reset_times_resets_when_it_falls(tmp_path: Path, capsys) -> None:
    def line(ts: str, inp: int, used: float) -> dict[str, Any]:
        ev = count(ts, inp, 0, (used, 0), (0.0, 0))
        del ev["payload"]["rate_limits"]["primary"]["resets_at"]
        del ev["payload"]["rate_limits"]["secondary"]
        return ev

    meta = {"id": "t2", "timestamp": "2026-11-02T09:59:00Z", "cwd": "/p"}
    f = write(
        tmp_path / "r.jsonl",
        [
            {"timestamp": "2026-11-02T09:59:00Z", "type": "session_meta", "payload": meta},
            line("2026-11-02T10:00:00Z", 1000, 50.0),
            line("2026-11-02T11:00:00Z", 3000, 60.0),
            line("2026-11-02T12:00:00Z", 4000, 5.0),  # fell: a new span
            line("2026-11-02T13:00:00Z", 9000, 10.0),
        ],
    )
    rc, out, _ = run(["report", "--limits", "--json", "--no-estimate", str(f)], capsys)
    assert rc == 0
    (w,) = json.loads(out)["limits"]
    assert (w["intervals"], w["resets"], w["percentMoved"]) == (2, 1, 15.0)
    assert w["tokens"] == 2000 + 5000 and w["tokensPerPercent"] == pytest.approx(7000 / 15)
    assert w["resetsAt"] is None and w["percentPerHour"] == 5.0
    # 90 % left at 5 %/h: 18 h after 13:00, no reset time to cap it
    assert (w["runsOutAt"], w["runsOut"]) == ("2026-11-03T07:00:00Z", "rate")


def test_untimed_readings_give_the_latest_only(capsys) -> None:
    f = ROOT / "vectors" / "events" / "claude" / "system.input.jsonl"
    rc, out, _ = run(["report", "--limits", "--json", str(f)], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["untimedReadings"] == 3
    five, week = doc["limits"]
    assert (five["dialect"], five["window"], five["limitType"]) == ("claude", "5h", "five_hour")
    assert five["usedPercent"] == 92.0 and five["resetsAt"] == "2026-01-01T00:00:00Z"
    assert five["readAt"] is None and five["readings"] == 2 and five["intervals"] == 0
    assert five["tokensPerPercent"] is None and five["percentPerHour"] is None
    assert (week["window"], week["usedPercent"], week["runsOut"]) == ("7d", 100.0, "exhausted")
    rc, out, _ = run(["report", "--limits", str(f)], capsys)
    assert "3 reading(s) without a timestamp" in out and "now" in out


def test_no_readings_is_said(capsys) -> None:
    f = ROOT / "vectors" / "events" / "claude" / "session-file.input.jsonl"
    rc, out, _ = run(["report", "--limits", str(f)], capsys)
    assert rc == 0
    assert out.startswith("no rate-limit readings in 1 file(s)")
    rc, out, _ = run(["report", "--limits", "--json", str(f)], capsys)
    assert rc == 0 and json.loads(out)["limits"] == []


def test_exit_codes_follow_report(tmp_path: Path, capsys) -> None:
    f = rollout(tmp_path)
    rc, out, err = run(["report", "--limits", str(f), str(tmp_path / "missing.jsonl")], capsys)
    assert rc == 1 and "missing.jsonl" in err and "codex" in out
    (tmp_path / "empty").mkdir()
    rc, _, err = run(["report", "--limits", str(tmp_path / "empty")], capsys)
    assert rc == 1 and "no stream files" in err
    rc, _, err = run(["report", "--limits", "--dialect", "claude", str(f)], capsys)
    assert rc == 1 and "recognised none" in err
    rc, _, err = run(["report", "--limits", "--csv", str(f)], capsys)
    assert rc == 2 and "--csv" in err


def _sources() -> list[Path]:
    out = [ROOT / "docs" / "examples-sessions", ROOT / "vectors" / "usage" / "inputs"]
    out += sorted(p for p in (ROOT / "vectors" / "events").iterdir() if p.is_dir())
    corpus = ROOT.parent / "shared" / "corpus" / "real"
    if corpus.is_dir():
        out += sorted(p for p in corpus.iterdir() if p.is_dir())
    return out


@pytest.mark.parametrize("argv", [["--json"], ["--json", "--no-estimate"], []])
def test_the_core_fold_gives_what_the_event_fold_gives(capsys, monkeypatch, argv) -> None:
    """``--limits`` folds each file in the core (``_native._usage_fold_limits``: the summary
    and the ``rateLimits`` readings, no event dicts): the same output as the fold of the events
    in Python, over every example, vector and corpus file, together and per folder."""
    pytest.importorskip("checkfu_fast._native")
    from checkfu_fast import limits

    real = limits._native_module()
    folded: list[Any] = []

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def _usage_fold_limits(self, files: list[Any], *a: Any) -> Any:
            out = real._usage_fold_limits(files, *a)
            folded.extend(f for f, r in zip(files, out, strict=True) if r is not None)
            return out

    monkeypatch.setattr(limits, "_native_module", Spy)
    sources = [str(p) for p in _sources()]
    runs = [sources] + [[s] for s in sources]
    core = [
        run(["report", "--limits", "--no-cache", "--tz", "UTC", *argv, *r], capsys) for r in runs
    ]
    assert len(folded) > 100  # the files were folded by the core
    assert sum(("Used" if not argv else '"readings"') in out for _, out, _ in core) >= 4
    monkeypatch.setattr(limits, "_native_module", lambda: None)
    events = [
        run(["report", "--limits", "--no-cache", "--tz", "UTC", *argv, *r], capsys) for r in runs
    ]
    assert core == events


def test_limits_use_the_cache_and_the_memo(tmp_path: Path, capsys, monkeypatch) -> None:
    """report's per-file cache serves --limits (the entries keep each stream's readings), a
    grown rollout is read from where it ended, and the output is memoized (its own key)."""
    pytest.importorskip("checkfu_fast._native")
    import os
    import shutil
    import time

    from checkfu_fast import limits, report_cache

    root = tmp_path / "tree"
    shutil.copytree(ROOT / "vectors" / "events" / "codex", root / "codex")
    shutil.copytree(ROOT / "docs" / "examples-sessions", root / "examples")
    grown = root / "examples" / "codex-rollout.jsonl"
    data = grown.read_bytes().splitlines(keepends=True)
    grown.write_bytes(b"".join(data[:15]))
    t = time.time_ns() - 3600 * 10**9
    for p in root.rglob("*"):
        os.utime(p, ns=(t, t))
    argv = ["report", "--limits", "--json", "--tz", "UTC", str(root)]
    fresh = run([*argv[:2], "--no-cache", *argv[2:]], capsys)
    assert run(argv, capsys) == fresh  # fills the cache (and the memo)
    assert report_cache.memo_hit(argv[1:]) == fresh[1]
    assert run(["report", "--json", "--tz", "UTC", str(root)], capsys)[0] == 0  # same entries
    with grown.open("ab") as f:
        f.write(b"".join(data[15:]))
    real = limits._native_module()
    folded: list[Any] = []

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

        def _usage_fold_resume(self, files: list[Any], *a: Any) -> Any:
            out = real._usage_fold_resume(files, *a)
            folded.extend((os.path.basename(f[0]), r[4]) for f, r in zip(files, out, strict=True))
            return out

    monkeypatch.setattr(limits, "_native_module", Spy)
    got = run(argv, capsys)
    assert folded == [("codex-rollout.jsonl", True)]  # the rest from the cache
    monkeypatch.setattr(limits, "_native_module", lambda: real)
    assert got == run([*argv[:2], "--no-cache", *argv[2:]], capsys)
