"""``checkfu-fast report``: the table, the JSON, directories, bounded memory, exit codes."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
import tracemalloc

import pytest

from checkfu_fast import cli, normalize, usage_totals
from checkfu_fast.report import fold_stream, iter_files
from checkfu_fast.usage import UsageFold
from conftest import CORPUS, ROOT, needs_shared

SAMPLES = ROOT / "vectors" / "samples"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_readme_shows_the_real_output(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n(\$ checkfu-fast report .*?)```", text, re.S)
    assert block, "README has no report example"
    parts = re.split(r"^\$ (checkfu-fast .*)\n", block.group(1), flags=re.M)[1:]
    assert len(parts) >= 4
    for command, expected in zip(parts[::2], parts[1::2], strict=True):
        rc, out, _ = run(shlex.split(command)[1:], capsys)
        assert rc == 0
        assert out == expected, command


def test_json_equals_the_fold_of_each_file(capsys):
    rc, out, _ = run(["report", "--json", str(SAMPLES)], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert sorted(doc) == ["bySession", "files", "prices", "rows", "total"]
    assert [r["session"] for r in doc["rows"]] == list(doc["bySession"])
    assert doc["files"] == len(list(SAMPLES.glob("*.jsonl")))
    # Every sample is its own session here, so the report is the union of per-file totals.
    expected: dict = {}
    for p in sorted(SAMPLES.glob("*.jsonl")):
        expected.update(usage_totals(normalize(p.read_bytes()))["bySession"])
    assert doc["bySession"] == dict(sorted(expected.items()))
    for k in ("inputTokens", "outputTokens", "cachedTokens"):
        assert doc["total"][k] == sum(s[k] for s in expected.values())
    # codex reports no cost and this stream names no model: a mix of reported and unpriced
    assert doc["total"]["source"] == "mixed" and doc["total"]["unpricedModels"] == ["unknown"]


def test_by_model_json(capsys):
    rc, out, _ = run(
        ["report", "--by", "model", "--json", str(SAMPLES / "claude-session.jsonl")], capsys
    )
    assert rc == 0
    doc = json.loads(out)
    # each model of the result's modelUsage with its own counts and costUSD (the haiku helper
    # apart from the main model); together the run's counter and total_cost_usd
    assert list(doc["byModel"]) == ["claude-3-5-haiku-20241022", "claude-sonnet-4-5-20250929"]
    assert doc["byModel"]["claude-sonnet-4-5-20250929"]["inputTokens"] == 188910
    assert doc["byModel"]["claude-3-5-haiku-20241022"]["costUsd"] == pytest.approx(0.0125248)
    assert doc["total"]["costUsd"] == pytest.approx(0.16020265, abs=1e-12)
    assert doc["total"]["inputTokens"] == 201826  # the modelUsage sum (the run's counter)


def test_by_day_groups_by_the_utc_day_of_the_timestamp(capsys):
    sessions = ROOT / "docs" / "examples-sessions"
    paths = [str(sessions / "claude-session.jsonl"), str(sessions / "claude-subagent.jsonl")]
    rc, out, _ = run(["report", "--by", "day", "--tz", "UTC", "--json", *paths], capsys)
    assert rc == 0
    doc = json.loads(out)
    # every line of both files is of 2026-08-20 (UTC); the totals are the hand-computed ones
    assert list(doc["byDay"]) == ["2026-08-20"]
    day = doc["byDay"]["2026-08-20"]
    assert (day["inputTokens"], day["outputTokens"], day["cachedTokens"]) == (117103, 1330, 102370)
    assert {k: v for k, v in doc["total"].items() if k != "endings"} == day
    assert doc["total"]["endings"] == {"ok": 0, "empty": 0, "failed": 1, "none": 1}
    rc, table, _ = run(["report", "--by", "day", "--tz", "UTC", *paths], capsys)
    assert table.splitlines()[0].startswith("Day ")
    assert "2 file(s), 1 row by day" in table and "unknown" not in table
    assert "times in UTC" in table


def test_by_day_puts_events_without_timestamp_in_unknown(capsys):
    # the shipped stream samples: claude stream-json lines of these builds carry no timestamp
    rc, out, _ = run(["report", "--by", "day", "--tz", "UTC", "--json", str(SAMPLES)], capsys)
    assert rc == 0
    doc = json.loads(out)
    assert list(doc["byDay"])[-1] == "unknown"
    summed = sum(d["inputTokens"] for d in doc["byDay"].values())
    assert summed == doc["total"]["inputTokens"]
    _, table, _ = run(["report", "--by", "day", "--tz", "UTC", str(SAMPLES)], capsys)
    assert "unknown: usage whose event has no timestamp" in table


@needs_shared
def test_directories_recursive_sorted_and_filtered(tmp_path):
    src = (CORPUS / "codex" / "new-monomind-v0149-pong.jsonl").read_bytes()
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "a").mkdir()
    for rel in ["b/c/z.jsonl", "b/y.json", "a/x.jsonl", "top.jsonl", "notes.txt", "a/x.jsonl.bak"]:
        (tmp_path / rel).write_bytes(src)
    got = [os.path.relpath(p, tmp_path) for p in iter_files([str(tmp_path)])]
    assert got == ["top.jsonl", "a/x.jsonl", "b/y.json", "b/c/z.jsonl"]


def test_unreadable_file_is_reported_and_the_rest_counted(capsys, tmp_path):
    rc, out, err = run(
        ["report", "--json", str(tmp_path / "missing.jsonl"), str(SAMPLES / "opencode-run.jsonl")],
        capsys,
    )
    assert rc == 1 and "missing.jsonl" in err
    doc = json.loads(out)
    assert doc["files"] == 1 and doc["total"]["inputTokens"] == 43858


def test_stdin(monkeypatch, capsys):
    data = (SAMPLES / "opencode-run.jsonl").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    rc, out, _ = run(["report", "--json", "-"], capsys)
    assert rc == 0 and json.loads(out)["total"]["costUsd"] == 0.001


def test_many_files_codex_resumed_threads(tmp_path, capsys):
    """2,000 files; each thread run then resumed in a second file: each thread counts once."""
    for i in range(1000):
        tid = f"019a0000-0000-7000-8000-{i:012d}"
        for j, total in enumerate((100, 250)):
            lines = [
                {"type": "thread.started", "thread_id": tid},
                {
                    "type": "turn.completed",
                    "usage": {
                        "input_tokens": total,
                        "cached_input_tokens": 0,
                        "output_tokens": j + 1,
                    },
                },
            ]
            d = tmp_path / f"{i % 7}"
            d.mkdir(exist_ok=True)
            (d / f"{tid}-{j}.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    rc, out, _ = run(["report", "--json", str(tmp_path)], capsys)
    doc = json.loads(out)
    assert rc == 0 and doc["files"] == 2000 and len(doc["bySession"]) == 1000
    assert doc["total"]["inputTokens"] == 250 * 1000 and doc["total"]["outputTokens"] == 2000


def test_fold_files_folds_the_next_batch_ahead_in_order_and_joins_it(tmp_path, monkeypatch):
    """The next batch is folded on a thread while this one is merged: the names come in file
    order, the look-ahead thread's error reaches the caller, and a caller that stops early
    leaves no thread behind."""
    import threading

    from checkfu_fast import report
    from checkfu_fast.usage import CoreFold

    names = []
    for i in range(5):
        p = tmp_path / f"{i}.jsonl"
        p.write_text(json.dumps({"type": "thread.started", "thread_id": f"t{i}"}) + "\n")
        names.append(str(p))
    monkeypatch.setattr(report, "BATCH", 2)
    native = report._native_module()
    fold = CoreFold(native)
    got = [n for n, done in report.fold_files(fold, names) if done is not None]
    assert got == names

    calls = []
    real = native._usage_fold_files

    class Failing:
        def __getattr__(self, name):
            return getattr(native, name)

        def _usage_fold_files(self, files, *a, **k):
            calls.append([f for f, _ in files])
            if len(calls) == 2:
                raise OSError("the second batch")
            return real(files, *a, **k)

    monkeypatch.setattr(report, "_native_module", lambda: Failing())
    it = report.fold_files(CoreFold(native), names)
    assert [next(it)[0], next(it)[0]] == names[:2]
    with pytest.raises(OSError, match="the second batch"):
        next(it)
    calls.clear()
    it = report.fold_files(CoreFold(native), names)
    assert next(it)[0] == names[0]
    it.close()  # stopped early: the look-ahead is waited for
    assert not [t for t in threading.enumerate() if t.name == "checkfu-fast-report-ahead"]


@needs_shared
def test_a_big_stream_is_folded_without_keeping_its_events():
    """~16 MB of claude stream: the fold's Python allocations stay far below the events' size."""
    one = (CORPUS / "claude" / "hivemind-pr4-ci-session4.jsonl").read_bytes()
    data = one * 500
    fold = UsageFold()
    tracemalloc.start()
    try:
        fold_stream(fold, io.BytesIO(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 500 equal results of one session: an unchanged counter is the same counter, read again.
    assert fold.totals()["total"]["inputTokens"] == 201826
    # One 1 MiB chunk's events at a time (about 8 MB of dicts here); all of them would be ~100 MB.
    assert peak < 32 << 20, peak


def test_cli_subprocess_help_lists_report():
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run(
        [sys.executable, "-m", "checkfu_fast", "report", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert "--by" in out and "--json" in out


@pytest.mark.parametrize("by", ["session", "model", "day"])
def test_table_totals_row_matches_json(capsys, by):
    _, out, _ = run(["report", "--by", by, str(SAMPLES)], capsys)
    _, js, _ = run(["report", "--by", by, "--json", str(SAMPLES)], capsys)
    total = json.loads(js)["total"]
    row = next(line for line in out.splitlines() if line.startswith("Total"))
    assert f"{total['inputTokens']:,}" in row and f"{total['costUsd']:.4f}" in row


def test_json_text_is_json_dumps_byte_for_byte():
    """--json's text comes from the core (_json_indent2) where it can: the same bytes as
    json.dumps(indent=2), floats as repr (ties of the shortest digits to even), strings escaped
    to ASCII (astral characters as surrogate pairs), big ints, tuples as lists, empty
    containers; what it declines (not finite, a non-str key, a lone surrogate, a subclass) is
    json.dumps's, non-finite floats as null."""
    import random
    import struct
    from collections import OrderedDict

    from checkfu_fast import _native
    from checkfu_fast.report import dumps

    rng = random.Random(21)
    floats = [0.0, -0.0, 1.0, 0.1, 1e-5, 1e-4, 1e15, 1e16, 9999999999999998.0, 5e-324]
    floats += [-916853859412763.2, -2472381562763.9062, 1.7976931348623157e308]
    while len(floats) < 20000:
        x = struct.unpack("d", rng.randbytes(8))[0]
        if x == x and abs(x) != float("inf"):
            floats.append(x)
    # the report's own floats: costs (token counts times prices per million, summed) and
    # decimals of every size around the switch to the exponent form
    for _ in range(20000):
        n = rng.randrange(10**7)
        floats.append(n * rng.choice([3.0, 15.0, 0.3, 3.75, 6.0, 0.08, 1.25]) / 1e6)
        floats.append(rng.randrange(10**9) / 10 ** rng.randrange(24))
        floats.append(-rng.random() * 10 ** rng.randrange(-8, 20))
    chars = [0, 1, 8, 9, 10, 12, 13, 31, 32, 34, 47, 92, 126, 127, 128, 0x2028, 0xFFFF, 0x1F600]
    text = "".join(chr(rng.choice(chars)) for _ in range(500)) + "naïve ✓"
    doc = {
        "floats": floats,
        text: [text, {}, [], (), None, True, False, 10**40, -(10**20), -5, 0],
        "nested": {"a": [{"b": [1, [2, [3, {}]]]}], "": (1.5, "x")},
    }
    assert _native._json_indent2(doc) == json.dumps(doc, indent=2, allow_nan=False)
    assert dumps(doc) == json.dumps(doc, indent=2, allow_nan=False)
    for odd in ({1: 2}, "\ud800", [float("nan")], OrderedDict(a=1), [True.__class__(1), 2**70000]):
        assert _native._json_indent2(odd) is None
    assert dumps({"x": [float("inf"), 1.5]}) == json.dumps({"x": [None, 1.5]}, indent=2)
    assert dumps({1: "a"}) == json.dumps({1: "a"}, indent=2)


def test_json_written_in_pieces_is_dumps():
    """--json written as it is made (report.write_json: usage.Lazy parts item by item, each
    indented to its depth) is dumps(doc) and a newline, byte for byte: empty and one-item
    parts, objects and arrays, text with newlines and non-ASCII in keys and values, floats
    that are not finite (null, as dumps)."""
    from checkfu_fast.report import dumps, write_json
    from checkfu_fast.usage import Lazy

    def lazy(items: list, pairs: bool) -> Lazy:
        return Lazy(lambda: iter(items), len(items), pairs=pairs)

    entries = [
        ("s\n1 ✓", {"a": [1, {"b": "x\ny"}], "c": {}, "d": []}),
        ("s2", {"e": float("inf"), "f": 0.1}),
    ]
    rows = [{"session": k, **v} for k, v in entries]
    for parts in ([], entries[:1], entries):
        plain = {
            "files": 3,
            "total": {"inputTokens": 1, "unpricedModels": ["m"]},
            "bySession": dict(parts),
            "rows": [{"session": k, **v} for k, v in parts],
            "prices": None,
        }
        doc = {
            **plain,
            "bySession": lazy(list(parts), True),
            "rows": lazy(rows[: len(parts)], False),
        }
        out: list[str] = []
        write_json(doc, out.append)
        assert "".join(out) == dumps(plain) + "\n"
        out = []
        write_json(plain, out.append)
        assert "".join(out) == dumps(plain) + "\n"


def test_memo_put_in_pieces_is_put(tmp_path):
    """A memo entry written from pieces (the spooled output) is the one put writes."""
    from checkfu_fast.report_cache import Memo

    text = '{\n  "a": 1\n}\n' * 1000 + "✓"
    a, b = Memo(str(tmp_path / "a")), Memo(str(tmp_path / "b"))
    a.put("k", text)
    b.put_pieces("k", lambda: (text[i : i + 777] for i in range(0, len(text), 777)))
    assert (tmp_path / "a" / "memo" / "k.txt").read_bytes() == (
        tmp_path / "b" / "memo" / "k.txt"
    ).read_bytes()
    assert b.get("k") == text
