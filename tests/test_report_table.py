"""``report``'s human table (``report.table``): each cell made once and the fit to 80 columns
worked out on the columns' widths. It gives, byte for byte, what the table did when it built
every row again for each try of the fit (``_table_then`` below, that code as it was), on
documents of every shape: each ``--by``, long and escaped names, wide and compact counts,
blocks, costs of every source, no rows; and a dialect name too long for the table, which sent
that code into an endless loop (the cut it chose for that column was never applied), is cut."""

from __future__ import annotations

import random
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from checkfu_fast import report
from checkfu_fast.outputs import printable
from checkfu_fast.usage import ENDINGS

TZ = ZoneInfo("Europe/Berlin")


def _table_then(doc: dict[str, Any], by: list[str], files: int, tz: Any, snapshot: Any) -> str:
    """The table as ``report.table`` wrote it before (every row built for each fit)."""
    sessions = doc.get("bySession", {})
    session_only = by == ["session"]
    head = [report._HEADS[d] for d in by]
    if session_only:
        head.append("Dialect")
    head += ["Input", "Output", "Cached", "Cost USD"]
    if session_only:
        head.append("Ending")
    text_cols = len(by) + (1 if session_only else 0)

    def cells(t: dict[str, Any], num: Any) -> list[str]:
        return [
            num(t["inputTokens"]),
            num(t["outputTokens"]),
            num(t["cachedTokens"]),
            report._cost(t),
        ]

    def build(num: Any, cut: dict[int, int]) -> list[list[str]]:
        out = []
        for r in doc["rows"]:
            row: list[str] = []
            for d in by:
                v = (
                    report._local(r["block"], tz)
                    if d == "block" and r["block"] != "unknown"
                    else r[d]
                )
                row.append(report._cut(printable(str(v)), cut.get(len(row))))
            if session_only:
                row.append(printable(str(sessions.get(r["session"], {}).get("dialect", ""))))
            row += cells(r, num)
            if session_only:
                s = r["session"]
                row.append(report._endings(sessions[s]) if s in sessions else "-")
            out.append(row)
        total = ["Total"] + [""] * (text_cols - 1) + cells(doc["total"], num)
        if session_only:
            total.append(report._endings(doc["total"]))
        return [head, *out, total]

    def widths_of(rows: list[list[str]]) -> list[int]:
        return [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]

    for num in (report._int, report._compact):
        cut: dict[int, int] = {}
        rows = build(num, cut)
        widths = widths_of(rows)
        while report._width(widths) > report.WIDTH:
            i = max(range(text_cols), key=lambda c: widths[c])
            if widths[i] <= 12:
                break
            cut[i] = max(widths[i] - (report._width(widths) - report.WIDTH), 12)
            rows = build(num, cut)
            widths = widths_of(rows)
        if report._width(widths) <= report.WIDTH:
            break

    def line(r: list[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(r, widths, strict=True)):
            left = i < text_cols or (session_only and i == len(r) - 1)
            out.append(c.ljust(w) if left else c.rjust(w))
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    head_row, *body, total_row = rows
    out = [line(head_row), rule, *map(line, body), rule, line(total_row)]
    count = len(doc["rows"])
    out.append(f"{files} file(s), {count} row{'s' if count != 1 else ''} by {','.join(by)}")
    return "\n".join(out + report._notes(doc, by, tz, snapshot)) + "\n"


NAMES = [
    "s",
    "0f8fad5b-d9cb-469f-a165-70867728950e",
    "rollout-2026-07-14T10-00-00-019b1f2e-aaaa-bbbb-cccc-ddddeeeeffff",
    "tab\there",
    "ctl\x1b[31mred",
    "wide-\u00e9\u00e8-\u4e2d\u6587",
    "rtl\u202eoverride",
    "x" * 90,
]


def _total(rng: random.Random, scale: int) -> dict[str, Any]:
    source = rng.choice(["reported", "estimated", "mixed", "absent"])
    cost = None if source == "absent" else rng.choice([0.0, 0.00042, 1.5, 123.456, 98765.4321])
    unpriced = rng.choice([[], ["mystery-9"], ["a-model", "b\x07model"]])
    endings = {k: rng.choice([0, 0, 1, 3]) for k in ENDINGS}
    return {
        "inputTokens": rng.randrange(10**scale),
        "outputTokens": rng.randrange(10**scale),
        "cachedTokens": rng.choice([0, rng.randrange(10**scale)]),
        "costUsd": cost,
        "source": source,
        "estimatedUsd": None if cost is None else cost / 2,
        "unpricedModels": unpriced,
        "endings": endings,
    }


def _doc(rng: random.Random, by: list[str], n: int, scale: int) -> dict[str, Any]:
    rows = []
    sessions: dict[str, Any] = {}
    blocks = ["2026-03-29T00:00:00Z", "2026-10-25T01:00:00Z", "unknown"]
    for k in range(n):
        row: dict[str, Any] = {}
        for d in by:
            if d == "block":
                row["block"] = rng.choice(blocks)
                row["blockEnd"] = None
            elif d in ("day", "week", "month"):
                row[d] = rng.choice(["2026-03-29", "2026-W13", "2026-03", "unknown"])
            else:
                row[d] = f"{rng.choice(NAMES)}-{k}" if rng.random() < 0.8 else rng.choice(NAMES)
        t = _total(rng, scale)
        del t["endings"]
        rows.append({**row, **t})
        if by == ["session"] and rng.random() < 0.9:
            dialect = rng.choice(["claude", "codex", "mine", "unknown", "tab\tdialect"])
            sessions[row["session"]] = {**_total(rng, scale), "dialect": dialect}
    doc: dict[str, Any] = {"files": n, "total": _total(rng, scale + 2)}
    if by == ["session"]:
        doc["bySession"] = sessions
    doc["rows"] = rows
    return doc


BYS = [
    ["session"],
    ["model"],
    ["day", "model"],
    ["block"],
    ["project", "model"],
    ["week", "session"],
]


@pytest.mark.parametrize("by", BYS, ids=",".join)
def test_the_table_as_it_was(by: list[str]) -> None:
    rng = random.Random(",".join(by))
    for n in (0, 1, 2, 5, 40):
        for scale in (1, 4, 9, 14):
            doc = _doc(rng, by, n, scale)
            for snapshot in (None, "snap"):
                snap = None if snapshot is None else _Snap()
                want = _table_then(doc, by, n, TZ, snap)
                assert report.table(doc, by, n, TZ, snap) == want, (n, scale)


class _Snap:
    def describe(self) -> str:
        return "genai-prices 0.2.5, 2026-12-04"


def test_a_long_dialect_name_is_cut() -> None:
    """A session's dialect (a mapping file names it) too long for the table is cut like the
    names (that column's cut was chosen but never applied: the fit never ended)."""
    t = _total(random.Random(1), 3)
    doc = {
        "files": 1,
        "total": t,
        "bySession": {"s1": {**t, "dialect": "a-very-long-mapping-dialect-name-" * 3}},
        "rows": [{"session": "s1", **{k: v for k, v in t.items() if k != "endings"}}],
    }
    text = report.table(doc, ["session"], 1, TZ)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines[:5]) <= report.WIDTH
    assert "a-very-long-mapping-dialect-name-a-very-long" not in text and "…" in lines[2]


def test_lazy_sessions_give_the_same_table_and_csv(tmp_path: Any, monkeypatch: Any) -> None:
    """The table and CSV of the core's fold by session, made from its sessions a chunk at a
    time (usage.Lazy: bySession and rows never all dicts at once, report.write_table's two
    passes), are those of the same sums as lists and dicts; chunks of 2 sessions."""
    import re
    from pathlib import Path
    from zoneinfo import ZoneInfo

    from checkfu_fast import _native, _native_dialect, usage
    from checkfu_fast import prices as _prices

    monkeypatch.setattr(usage, "CHUNK_SESSIONS", 2)
    examples = Path(__file__).resolve().parents[1] / "docs" / "examples-sessions"
    claude = (examples / "claude-session.jsonl").read_text()
    codex = (examples / "codex-rollout.jsonl").read_text()
    names = []
    for i in range(5):
        p = tmp_path / "projects" / f"-home-p{i % 2}" / f"s{i}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(re.sub(r'"(msg_|req_|7f6c1e4a)', rf'"\g<1>{i}x', claude))
        q = tmp_path / "sessions" / f"rollout-{i}.jsonl"
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_text(codex.replace("019b", f"{i:04x}"))
        names += [str(p), str(q)]
    fold = usage.CoreFold(_native, prices=_prices.snapshot(), tz=ZoneInfo("UTC"), by=["session"])
    assert fold.fold_files(names, _native_dialect("auto"), report.BUDGET)[0] == len(names)
    docs = []
    for lazy in (False, True):
        totals = fold.totals(lazy=lazy)
        rows = fold.rows(lazy=lazy)
        assert isinstance(rows, usage.Lazy) == lazy
        docs.append({"files": 10, **totals, "rows": rows})
    plain, lazy_doc = docs
    assert len(plain["rows"]) >= 6
    want = report.table(plain, ["session"], 10, TZ, _Snap())
    assert report.table(lazy_doc, ["session"], 10, TZ, _Snap()) == want
    assert want == _table_then(plain, ["session"], 10, TZ, _Snap())
    assert report.to_csv(lazy_doc["rows"], ["session"]) == report.to_csv(plain["rows"], ["session"])
    # the CSV handed over in runs of 1,024 rows: the same text
    many = list(plain["rows"]) * 700
    pieces: list[str] = []
    report.write_csv(iter(many), ["session"], pieces.append)
    assert len(pieces) == len(many) // 1024 + 1
    assert "".join(pieces) == report.to_csv(many, ["session"])
