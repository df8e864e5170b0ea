"""``checkfu-fast report``: time zones, windows, blocks, default discovery, prices, bad dialects."""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from checkfu_fast import cli, normalize
from checkfu_fast.usage import UsageFold, blocks
from conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples-sessions"


def _zone(name: str):
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        return zoneinfo.ZoneInfo(name)
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip(f"the time zone database has no {name} (tzdata not installed)")


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def msg(ts: str, mid: str, inp: int, out: int = 10, model: str = "claude-sonnet-4-5") -> str:
    """A claude session-file assistant line with usage at ``ts``."""
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": "s1",
            "requestId": "req_" + mid,
            "timestamp": ts,
            "cwd": "/home/dev/proj",
            "uuid": "u" + mid,
            "message": {
                "id": "msg_" + mid,
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": inp, "output_tokens": out},
            },
        }
    )


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_days_across_midnight_and_a_dst_change_in_a_non_utc_zone(tmp_path: Path, capsys) -> None:
    _zone("Europe/Berlin")
    # Berlin left summer time on 2026-10-25 03:00 CEST (01:00 UTC): 22:30 UTC on the 24th is
    # 00:30 CEST on the 25th; 23:30 UTC on the 25th is 00:30 CET on the 26th.
    f = write(
        tmp_path / "s.jsonl",
        [
            msg("2026-10-24T21:59:59.000Z", "a", 100),  # 23:59:59 CEST, the 24th
            msg("2026-10-24T22:30:00.000Z", "b", 200),  # 00:30 CEST, the 25th
            msg("2026-10-25T00:30:00.000Z", "c", 400),  # 02:30 CEST, the 25th
            msg("2026-10-25T01:30:00.000Z", "d", 800),  # 02:30 CET (the hour again), the 25th
            msg("2026-10-25T22:59:59.000Z", "e", 1600),  # 23:59:59 CET, the 25th
            msg("2026-10-25T23:30:00.000Z", "f", 3200),  # 00:30 CET, the 26th
        ],
    )
    rc, out, _ = run(["report", "--by", "day", "--tz", "Europe/Berlin", "--json", str(f)], capsys)
    assert rc == 0
    days = {r["day"]: r["inputTokens"] for r in json.loads(out)["rows"]}
    assert days == {"2026-10-24": 100, "2026-10-25": 200 + 400 + 800 + 1600, "2026-10-26": 3200}
    # the same readings in UTC
    _, out, _ = run(["report", "--by", "day", "--tz", "UTC", "--json", str(f)], capsys)
    days = {r["day"]: r["inputTokens"] for r in json.loads(out)["rows"]}
    assert days == {"2026-10-24": 300, "2026-10-25": 400 + 800 + 1600 + 3200}
    # --since/--until are days of that zone, inclusive
    argv = ["report", "--tz", "Europe/Berlin", "--since", "2026-10-25", "--until", "2026-10-25"]
    _, out, _ = run([*argv, "--json", str(f)], capsys)
    assert json.loads(out)["total"]["inputTokens"] == 3000
    # TZ is honoured when --tz is not given
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TZ", "Europe/Berlin")
        _, out, _ = run(["report", "--by", "month,week", "--json", str(f)], capsys)
    rows = json.loads(out)["rows"]
    assert [(r["month"], r["week"], r["inputTokens"]) for r in rows] == [
        ("2026-10", "2026-W43", 3100),  # Saturday 24th and Sunday 25th: ISO week 43
        ("2026-10", "2026-W44", 3200),  # Monday 26th
    ]


def test_blocks_with_gaps() -> None:
    h = 3600.0
    t0 = 1_780_000_000.0 - (1_780_000_000 % 3600) + 600  # 10 minutes past an hour
    spans = blocks([t0, t0 + 2 * h, t0 + 4.8 * h, t0 + 5.2 * h, t0 + 11 * h, t0 + 11.5 * h])
    start = t0 - 600
    assert [(a - start, b - a) for a, b, _, _ in spans] == [
        (0, 5 * h),  # t0 .. t0+4.8h (within 5 h of the start)
        (5 * h, 5 * h),  # t0+5.2h is more than 5 h after the block's start: a new one, floored
        (11 * h, 5 * h),  # a gap of 5.8 h: a new block at t0+11h's hour; no empty block between
    ]
    # a gap longer than 5 h inside what would be one block
    spans = blocks([t0, t0 + 0.5 * h])
    assert len(spans) == 1
    assert blocks([]) == []


def test_block_rows_and_active_block(tmp_path: Path, capsys) -> None:
    now = time.time()

    def iso(t: float) -> str:
        return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    f = write(
        tmp_path / "s.jsonl",
        [
            msg(iso(now - 30 * 3600), "a", 1000),
            msg(iso(now - 29 * 3600), "b", 2000),
            msg(iso(now - 3600), "c", 100_000, 1000),
            msg(iso(now - 1800), "d", 100_000, 1000),
        ],
    )
    rc, out, _ = run(["report", "--by", "block", "--active", "--json", str(f)], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert [r["inputTokens"] for r in doc["rows"]] == [3000, 200_000]
    for r in doc["rows"]:
        start = datetime.strptime(r["block"], "%Y-%m-%dT%H:%M:%SZ")
        end = datetime.strptime(r["blockEnd"], "%Y-%m-%dT%H:%M:%SZ")
        assert (end - start).total_seconds() == 5 * 3600 and start.minute == start.second == 0
    a = doc["active"]
    assert a["block"] == doc["rows"][-1]["block"] and a["inputTokens"] == 200_000
    # 202,000 tokens over the half hour between the block's first and last reading
    assert a["tokensPerHour"] == pytest.approx(404_000, rel=0.01)
    assert a["projectedTokens"] >= 202_000 and a["projectedUsd"] >= a["costUsd"] > 0
    rc, out, _ = run(["report", "--by", "model", "--active", str(f)], capsys)
    assert "active block:" in out and "burn" in out and "projected" in out


def test_codex_counter_growth_lands_on_its_own_token_count_line(capsys) -> None:
    path = EXAMPLES / "codex-rollout.jsonl"
    fold = UsageFold(by=("day", "model"))
    fold.start_stream()
    for ev in normalize(path.read_bytes()):
        fold.add(ev)
    rows = fold.rows()
    total = fold.totals()["total"]
    assert sum(r["inputTokens"] for r in rows) == total["inputTokens"]
    # blocks over the same readings: each counted at its own second, the sum unchanged
    fold = UsageFold(by=("block",))
    fold.start_stream()
    for ev in normalize(path.read_bytes()):
        fold.add(ev)
    assert sum(r["inputTokens"] for r in fold.rows()) == total["inputTokens"]


def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return home


def test_default_discovery_under_home(tmp_path: Path, monkeypatch, capsys) -> None:
    home = _home(tmp_path, monkeypatch)
    shutil.copy(
        EXAMPLES / "claude-session.jsonl",
        write(home / ".claude/projects/-home-dev-proj/x.jsonl", []),
    )
    write(
        home / ".config/claude/projects/-home-dev-other/y.jsonl",
        [msg("2026-11-02T10:00:00Z", "z", 7)],
    )
    write(home / ".claude/projects/-home-dev-proj/settings.json", ['{"not": "a session"}'])
    rollout = EXAMPLES / "codex-rollout.jsonl"
    name = "rollout-2026-07-14T09-00-00-019b.jsonl"
    day = home / ".codex/sessions/2026/07/14"
    day.mkdir(parents=True)
    shutil.copy(rollout, day / name)
    (home / ".codex/archived_sessions").mkdir(parents=True)
    shutil.copy(rollout, home / ".codex/archived_sessions" / name)  # the same rollout: once
    rc, out, err = run(["report", "--by", "project", "--json"], capsys)
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["files"] == 3  # two claude files (settings.json is not read) and one rollout
    once = json.loads(run(["report", "--json", str(rollout)], capsys)[1])["total"]
    claude = json.loads(
        run(["report", "--json", str(EXAMPLES / "claude-session.jsonl")], capsys)[1]
    )
    assert doc["total"]["inputTokens"] == once["inputTokens"] + claude["total"]["inputTokens"] + 7
    # the cwd of the lines (claude session lines, the rollout's session_meta/turn_context)
    projects = {r["project"]: r["inputTokens"] for r in doc["rows"]}
    assert set(projects) == {"/home/dev/proj"}, projects


def test_default_discovery_with_config_dir_and_codex_home(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    _home(tmp_path, monkeypatch)
    a, b = tmp_path / "cfg-a", tmp_path / "cfg-b"
    write(a / "projects/p/1.jsonl", [msg("2026-11-02T10:00:00Z", "1", 5)])
    write(b / "projects/p/2.jsonl", [msg("2026-11-02T11:00:00Z", "2", 6)])
    codex = tmp_path / "codex-home"
    (codex / "archived_sessions").mkdir(parents=True)
    shutil.copy(EXAMPLES / "codex-rollout.jsonl", codex / "archived_sessions/rollout-1.jsonl")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", f"{a},{b}")
    monkeypatch.setenv("CODEX_HOME", str(codex))
    rc, out, _ = run(["report", "--json"], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["files"] == 3
    rollout = json.loads(
        run(["report", "--json", str(EXAMPLES / "codex-rollout.jsonl")], capsys)[1]
    )
    assert doc["total"]["inputTokens"] == 11 + rollout["total"]["inputTokens"]


def test_no_default_folder_is_reported(tmp_path: Path, monkeypatch, capsys) -> None:
    _home(tmp_path, monkeypatch)
    rc, _, err = run(["report"], capsys)
    assert rc == 1 and "no claude or codex session folder" in err


def test_prices_file_with_a_made_up_model_and_unpriced_models(tmp_path: Path, capsys) -> None:
    f = write(
        tmp_path / "s.jsonl",
        [
            msg("2026-11-02T10:00:00Z", "1", 1_000_000, 0, model="acme-coder-1"),
            msg("2026-11-02T10:01:00Z", "2", 1000, 0, model="mystery-9"),
            msg("2026-11-02T10:02:00Z", "3", 100_000, 0, model="claude-sonnet-4-5-20250929"),
        ],
    )
    rc, out, _ = run(["report", "--by", "model", "--json", str(f)], capsys)
    t = json.loads(out)["total"]
    assert t["unpricedModels"] == ["acme-coder-1", "mystery-9"] and t["source"] == "mixed"
    assert t["costUsd"] == pytest.approx(0.3)  # only sonnet: 100k input tokens at $3/MTok
    p = write(
        tmp_path / "p.json",
        [json.dumps({"models": [{"id": "acme-coder-1", "prices": {"input": 2, "output": 8}}]})],
    )
    rc, out, _ = run(["report", "--by", "model", "--json", "--prices", str(p), str(f)], capsys)
    doc = json.loads(out)
    assert doc["byModel"]["acme-coder-1"]["costUsd"] == pytest.approx(2.0)
    assert doc["total"]["costUsd"] == pytest.approx(2.3)
    assert doc["total"]["unpricedModels"] == ["mystery-9"]
    rc, out, _ = run(["report", "--json", "--no-estimate", str(f)], capsys)
    t = json.loads(out)["total"]
    assert t["costUsd"] is None and t["source"] == "absent" and doc["prices"] is not None
    rc, _, err = run(["report", "--prices", str(tmp_path / "missing.json"), str(f)], capsys)
    assert rc == 2 and "missing.json" in err
    bad = write(tmp_path / "bad.json", ['{"models": [{"prices": {"input": 1}}]}'])
    rc, _, err = run(["report", "--prices", str(bad), str(f)], capsys)
    assert rc == 2 and "needs a string 'id'" in err
    rc, out, _ = run(["report", "--by", "model", str(f)], capsys)
    assert "no price for: acme-coder-1, mystery-9" in out and "genai-prices" in out


def test_csv_rows(tmp_path: Path, capsys) -> None:
    _, out, _ = run(["report", "--by", "day,model", "--tz", "UTC", "--csv", str(EXAMPLES)], capsys)
    lines = out.splitlines()
    assert lines[0].startswith("day,model,inputTokens,outputTokens,cachedTokens")
    assert lines[1].startswith("2026-07-14,gpt-5.5,44960,1012,41216,")
    assert len(lines) == 5


def test_table_fits_80_columns(capsys) -> None:
    for by in ("session", "model", "day,model", "block", "project,model", "week,session"):
        rc, out, _ = run(["report", "--by", by, "--tz", "UTC", str(EXAMPLES)], capsys)
        head = out.split("\n\n")[0].splitlines()
        table = [ln for ln in head if not ln[:1].isdigit() or "  " in ln]
        assert rc == 0 and max(len(ln) for ln in table[:-4]) <= 80, by


def test_wrong_dialect_recognising_nothing_warns_and_exits_1(capsys) -> None:
    rollout = str(EXAMPLES / "codex-rollout.jsonl")
    rc, _, err = run(["report", "--dialect", "claude", rollout], capsys)
    assert rc == 1 and "--dialect claude recognised none" in err and rollout in err
    rc, _, err = run(["report", "--dialect", "codex", rollout], capsys)
    assert rc == 0 and err == ""


def test_bad_by_tz_and_dates_are_usage_errors(capsys) -> None:
    for argv, text in (
        (["--by", "hour"], "--by hour"),
        (["--by", "day,day"], "twice"),
        (["--tz", "Mars/Olympus"], "--tz Mars/Olympus"),
        (["--since", "2026-13-01"], "--since"),
    ):
        rc, _, err = run(["report", *argv, str(EXAMPLES)], capsys)
        assert rc == 2 and text in err, argv


def test_a_reading_is_priced_at_the_price_of_its_day(tmp_path: Path, capsys) -> None:
    f = write(
        tmp_path / "s.jsonl",
        [
            msg("2026-02-28T23:59:59Z", "1", 1_000_000, 0, model="acme-coder-2"),
            msg("2026-03-01T00:00:00Z", "2", 1_000_000, 0, model="acme-coder-2"),
        ],
    )
    prices = {
        "id": "acme-coder-2",
        "prices": [{"since": None, "input": 1}, {"since": "2026-03-01", "input": 4}],
    }
    p = write(tmp_path / "p.json", [json.dumps({"models": [prices]})])
    argv = ["report", "--by", "day", "--tz", "UTC", "--json", "--prices", str(p), str(f)]
    rc, out, _ = run(argv, capsys)
    rows = {r["day"]: r["costUsd"] for r in json.loads(out)["rows"]}
    assert rc == 0 and rows == {"2026-02-28": 1.0, "2026-03-01": 4.0}
