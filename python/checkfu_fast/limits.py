"""``checkfu-fast report --limits``: the CLIs' rate-limit windows and the quota ledger
(docs/usage.md, "Rate limits and the quota ledger").

It reads event fields only: each event's ``rateLimits`` readings (docs/events.md) and, for the
ledger, the usage the same :class:`checkfu_fast.usage.UsageFold` counts for ``report`` (one fold
per CLI, the same prices), booked on the second of each reading's own timestamp.

Per CLI (dialect), window and limit: the latest reading; the tokens and USD one percent of the
window costs (the usage of that CLI between two readings of the window, summed over every such
pair, divided by the percent the window moved: pairs with a reset between them are left out);
the burn rate (percent per hour over the readings of the window's current span) and when the
window runs out at that rate, unless it resets first.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from typing import Any, BinaryIO

from . import Normalizer, _native_dialect
from . import prices as _prices
from .inputs import open_input
from .outputs import printable
from .progress import Progress, wanted
from .report import (
    BUDGET,
    CHUNK,
    FOLD_FIELDS,
    _finite,
    _native_module,
    claude_project,
    core_batches,
    recognised_none,
    unreadable,
)
from .report_cache import SummaryCache
from .usage import StreamSummary, UsageFold, epoch, iso_utc

# a reset time that moves later by more than this between two readings is a new window span
# (codex `resets_in_seconds` readings give times that move by a second or so: the same span)
RESET_SLACK = 300.0
# what the ledger reads: the fold's fields and the readings (never ``parsed`` or ``raw``)
LIMITS_FIELDS = (*FOLD_FIELDS, "rateLimits")


@dataclass
class _Reading:
    """One reading of one window: its time (epoch seconds, ``None`` without a timestamp), its
    order among the readings, the percent used and the reset time."""

    t: float | None
    seq: int
    used: int | float
    resets: float | None
    resets_at: str | None
    read_at: str | None


@dataclass
class _Window:
    """The readings of one (dialect, window, limitType): per second the last one, and the
    latest reading without a time."""

    timed: dict[int, _Reading] = field(default_factory=dict)
    untimed: _Reading | None = None
    count: int = 0


class LimitsFold:
    """Collects ``rateLimits`` readings and each CLI's usage over time from many streams."""

    def __init__(self, *, prices: _prices.Snapshot | None, estimate: bool) -> None:
        self.prices = prices
        self.estimate = estimate
        self.folds: dict[str, UsageFold] = {}
        self.windows: dict[tuple[str, str, str], _Window] = {}
        self.untimed = 0
        self._seq = 0

    def _fold(self, dialect: str) -> UsageFold:
        f = self.folds.get(dialect)
        if f is None:
            f = UsageFold(prices=self.prices, estimate=self.estimate, active=True)
            self.folds[dialect] = f
        return f

    def stream(
        self,
        src: BinaryIO,
        dialect: Any = "auto",
        progress: Progress | None = None,
        project: str | None = None,
    ) -> tuple[int, int]:
        """Normalize one stream and take its readings and usage. Returns how many events were
        recognised and how many were ``status/unknown`` (as report's ``fold_stream``)."""
        n = Normalizer(dialect, fields=list(LIMITS_FIELDS))
        known = unknown = 0
        fold: UsageFold | None = None

        def take(evs: list[dict[str, Any]]) -> None:
            nonlocal known, unknown, fold
            for ev in evs:
                if ev.get("kind") == "status" and ev.get("subtype") == "unknown":
                    unknown += 1
                elif ev.get("kind") != "error":
                    known += 1
                if fold is None:
                    fold = self._fold(str(ev.get("dialect")))
                    fold.start_stream(project)
                fold.add(ev)
                if "rateLimits" in ev:
                    self._take(ev)

        while chunk := src.read(CHUNK):
            if progress is not None:
                progress.read(len(chunk))
            take(n.feed(chunk))
        take(n.finish())
        if fold is not None:
            fold.end_stream()
        return known, unknown

    def _take(self, ev: dict[str, Any]) -> None:
        dialect, ts = str(ev.get("dialect")), ev.get("timestamp")
        for r in ev["rateLimits"]:
            self._reading(
                dialect, r["window"], r["limitType"], r["usedPercent"], r.get("resetsAt"), ts
            )

    def _reading(
        self,
        dialect: str,
        window: str,
        limit: str,
        used: int | float,
        resets_at: str | None,
        ts: Any,
    ) -> None:
        """One reading of ``(dialect, window, limit)``, made at ``ts`` (the line's timestamp)."""
        t = epoch(ts)
        self._seq += 1
        reading = _Reading(
            t,
            self._seq,
            used,
            epoch(resets_at),
            resets_at,
            iso_utc(t) if t is not None else None,
        )
        w = self.windows.setdefault((dialect, window, limit), _Window())
        w.count += 1
        if t is None:
            self.untimed += 1
            w.untimed = reading
        else:
            w.timed[int(t)] = reading

    def merge(self, summary: Any, readings: list[Any]) -> bool:
        """One stream folded by the core (``_native._usage_fold_limits``, or the cache): its
        summary into its CLI's fold, its readings in order (what :meth:`stream` takes from its
        events). False, taking nothing, where they are not of that shape (a damaged cache
        entry: the caller reads the file)."""
        try:
            s = StreamSummary.of(summary)
            rows = [(str(d), str(w), str(k), u, r, t) for d, w, k, u, r, t in readings]
        except (TypeError, ValueError, IndexError, KeyError):
            return False
        if s.dialect != "unknown":  # a stream with no event at all gives neither
            self._fold(s.dialect).merge(s)
        for dialect, window, limit, used, resets_at, ts in rows:
            self._reading(dialect, window, limit, used, resets_at, ts)
        return True

    def rows(self) -> list[dict[str, Any]]:
        """One row per (dialect, window, limitType), sorted: the latest reading and the
        ledger (docs/usage.md)."""
        usage = {d: _Usage(f) for d, f in self.folds.items()}
        out = []
        for key in sorted(self.windows, key=_order):
            dialect, window, limit = key
            out.append(_row(dialect, window, limit, self.windows[key], usage.get(dialect)))
        return out


class _Usage:
    """A CLI's usage as cumulative sums over the seconds of its readings."""

    def __init__(self, fold: UsageFold) -> None:
        self.secs: list[int] = []
        self.tokens: list[int | float] = [0]
        self.usd: list[float] = [0.0]
        self.unpriced: list[int] = [0]
        for sec, t in fold.timeline():
            self.secs.append(sec)
            self.tokens.append(self.tokens[-1] + t["inputTokens"] + t["outputTokens"])
            self.usd.append(self.usd[-1] + (t["costUsd"] or 0.0))
            self.unpriced.append(self.unpriced[-1] + (1 if t["unpricedModels"] else 0))

    def between(self, a: int, b: int) -> tuple[int | float, float, bool]:
        """Tokens, USD and whether all of it was priced, of the seconds in ``(a, b]``."""
        i = bisect.bisect_right(self.secs, a)
        j = bisect.bisect_right(self.secs, b)
        return (
            self.tokens[j] - self.tokens[i],
            self.usd[j] - self.usd[i],
            self.unpriced[j] == self.unpriced[i],
        )


def _reset_between(a: _Reading, b: _Reading) -> bool:
    """Whether the window reset between two readings (``a`` first): the percent fell, ``a``'s
    reset time had come, or the reset time moved later (a new span)."""
    if b.used < a.used:
        return True
    if a.resets is not None and b.t is not None and b.t >= a.resets:
        return True
    return a.resets is not None and b.resets is not None and b.resets - a.resets > RESET_SLACK


def _row(dialect: str, window: str, limit: str, w: _Window, usage: _Usage | None) -> dict[str, Any]:
    timed = [w.timed[s] for s in sorted(w.timed)]
    latest = timed[-1] if timed else w.untimed
    assert latest is not None
    moved: int | float = 0
    tokens: int | float = 0
    usd = 0.0
    priced = True
    intervals = resets = 0
    span_start = 0  # index of the first reading of the current span
    for i in range(1, len(timed)):
        a, b = timed[i - 1], timed[i]
        if _reset_between(a, b):
            resets += 1
            span_start = i
            continue
        intervals += 1
        moved += b.used - a.used
        if usage is not None and a.t is not None and b.t is not None:
            tk, us, ok = usage.between(int(a.t), int(b.t))
            tokens += tk
            usd += us
            priced = priced and ok
    rate = None
    if timed and len(timed) - span_start >= 2:
        first = timed[span_start]
        assert first.t is not None and latest.t is not None
        hours = (latest.t - first.t) / 3600.0
        if hours > 0:
            rate = (latest.used - first.used) / hours
    runs_out_at, runs_out = _runs_out(latest, rate)
    return {
        "dialect": dialect,
        "window": window,
        "limitType": limit,
        "usedPercent": latest.used,
        "resetsAt": latest.resets_at,
        "readAt": latest.read_at,
        "readings": w.count,
        "intervals": intervals,
        "resets": resets,
        "percentMoved": moved,
        "tokens": tokens,
        "costUsd": usd if priced and intervals else None,
        "tokensPerPercent": tokens / moved if moved > 0 else None,
        "usdPerPercent": usd / moved if moved > 0 and priced else None,
        "percentPerHour": rate,
        "runsOutAt": runs_out_at,
        "runsOut": runs_out,
    }


def _runs_out(latest: _Reading, rate: float | None) -> tuple[str | None, str | None]:
    """When the window runs out at ``rate`` from the latest reading: ``(time, "rate")``;
    ``(reset time, "reset")`` when it resets first; ``(reading time, "exhausted")`` at 100 %
    or more; ``(None, None)`` without a rate that uses it up."""
    if latest.used >= 100:
        return latest.read_at, "exhausted"
    if rate is None or rate <= 0 or latest.t is None:
        return None, None
    out = latest.t + (100 - latest.used) / rate * 3600.0
    if latest.resets is not None and out >= latest.resets:
        return latest.resets_at, "reset"
    if out > 253402214399.0:  # past year 9999: never, in practice
        return None, None
    return iso_utc(out), "rate"


def _minutes(window: str) -> float:
    """A window name's length in minutes for sorting (``5h`` before ``7d``; others last)."""
    unit = {"m": 1, "h": 60, "d": 1440}.get(window[-1:])
    if unit is None or not window[:-1].isdigit():
        return float("inf")
    return int(window[:-1]) * unit


def _order(key: tuple[str, str, str]) -> tuple[str, float, str, str]:
    return key[0], _minutes(key[1]), key[1], key[2]


# -- output ----------------------------------------------------------------------------------

WIDTH = 80
NO_READINGS = (
    "no rate-limit readings in {files} file(s): they come from codex rollouts (token_count "
    "rate_limits) and claude stream-json (rate_limit_event); claude session files have none"
)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _compact(v: Any) -> str:
    if v is None:
        return "-"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.1f}{unit}"
    return f"{v:.0f}"


def _usd(v: Any) -> str:
    if v is None:
        return "-"
    return f"${v:.2f}" if v >= 0.01 else f"${v:.4f}"


def _when(iso: str | None, tz: tzinfo) -> str:
    t = epoch(iso)
    if t is None:
        return "-"
    return datetime.fromtimestamp(int(t), timezone.utc).astimezone(tz).strftime("%m-%d %H:%M")


def _out(r: dict[str, Any]) -> str:
    """``Runs out`` relative to the latest reading: ``+3.2h``, ``+2.1d``, ``reset``, ``now``."""
    if r["runsOut"] == "exhausted":
        return "now"
    if r["runsOut"] == "reset":
        return "reset"
    if r["runsOut"] != "rate":
        return "-"
    a, b = epoch(r["readAt"]), epoch(r["runsOutAt"])
    if a is None or b is None:
        return "-"
    hours = (b - a) / 3600.0
    return f"+{hours:.1f}h" if hours < 48 else f"+{hours / 24:.1f}d"


HEAD = ["CLI", "Window", "Limit", "Used", "Resets", "Tok/1%", "$/1%", "%/h", "Runs out"]
TEXT_COLS = 3


def table(doc: dict[str, Any], tz: tzinfo, snapshot: _prices.Snapshot | None) -> str:
    """The human table (80 columns) and its notes."""
    rows = doc["limits"]
    if not rows:
        return NO_READINGS.format(files=doc["files"]) + "\n"
    body = []
    for r in rows:
        body.append(
            [
                printable(r["dialect"]),
                printable(r["window"]),
                printable(r["limitType"]),
                _pct(r["usedPercent"]),
                _when(r["resetsAt"], tz),
                _compact(r["tokensPerPercent"]),
                _usd(r["usdPerPercent"]),
                "-" if r["percentPerHour"] is None else f"{r['percentPerHour']:.1f}",
                _out(r),
            ]
        )
    cells = [HEAD, *body]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEAD))]
    over = sum(widths) + 2 * (len(widths) - 1) - WIDTH
    for i in (2, 1, 0):  # the names are cut, longest first, to 8 characters at least
        if over <= 0:
            break
        cut = min(over, max(widths[i] - 8, 0))
        if cut:
            widths[i] -= cut
            over -= cut
            for c in cells:
                if len(c[i]) > widths[i]:
                    c[i] = c[i][: widths[i] - 1] + "…"

    def line(c: list[str]) -> str:
        return "  ".join(
            (x.ljust(w) if i < TEXT_COLS else x.rjust(w))
            for i, (x, w) in enumerate(zip(c, widths, strict=True))
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    out = [line(HEAD), rule, *map(line, body)]
    n = sum(r["readings"] for r in rows)
    out.append(f"{doc['files']} file(s), {n} reading(s), times in {getattr(tz, 'key', None) or tz}")
    out += textwrap.wrap(
        "Tok/1%, $/1%: usage between two readings of a window / the percent it moved; "
        "%/h: burn rate since the window's last reset; Runs out: at that rate, from the "
        "latest reading (reset: the window resets first; now: used up)",
        WIDTH,
    )
    if snapshot is not None:
        out.append(f"prices: {snapshot.describe()}")
    if doc["untimedReadings"]:
        out.append(
            f"{doc['untimedReadings']} reading(s) without a timestamp (stream-json): "
            "latest only, not in the ledger"
        )
    return "\n".join(out) + "\n"


def run(
    args: argparse.Namespace,
    names: list[str],
    status: int,
    snap: _prices.Snapshot | None,
    tz: tzinfo,
) -> int:
    """``report --limits`` over ``names``: report's inputs, its exit ``status`` so far, its
    price snapshot (``None``: ``--no-estimate``) and time zone."""
    if args.csv:
        raise ValueError("--limits prints a table or --json, not --csv")
    lf = LimitsFold(prices=snap, estimate=snap is not None)
    files = 0
    progress = Progress(names, wanted(getattr(args, "progress", None)))
    explicit = args.dialect not in (None, "auto")
    cache = None if args.no_cache or _native_module() is None else SummaryCache()
    try:
        for name, done in _fold_files(lf, names, args.dialect, cache):
            try:
                if done is not None:
                    known, unknown = done
                elif name == "-":
                    known, unknown = lf.stream(sys.stdin.buffer, args.dialect, progress)
                else:
                    with open_input(name) as f:
                        known, unknown = lf.stream(f, args.dialect, progress, claude_project(name))
                files += 1
                if explicit and unknown and not known:
                    recognised_none(name, args.dialect, unknown, progress)
                    status = 1
            except OSError as exc:
                unreadable(name, exc, progress)
                status = 1
            progress.file_done(name)
        progress.close()
        if cache is not None:
            cache.save()
    finally:
        if cache is not None:
            cache.discard()  # saved, or (cut short) its new file removed
    doc: dict[str, Any] = {
        "files": files,
        "limits": lf.rows(),
        "untimedReadings": lf.untimed,
        "prices": {"date": snap.date, "source": snap.source} if snap is not None else None,
    }
    if args.json:
        sys.stdout.write(json.dumps(_finite(doc), indent=2, allow_nan=False) + "\n")
    else:
        sys.stdout.write(table(doc, tz, snap))
    return status


def _fold_files(
    lf: LimitsFold, names: list[str], dialect: Any, cache: SummaryCache | None = None
) -> Iterator[tuple[str, tuple[int, int] | None]]:
    """Each file's stream folded by the core (``_native._usage_fold_limits``: every core, the
    GIL released, no event dicts; :data:`~checkfu_fast.report.BATCH` files at a time), or
    taken from ``cache`` (report's per-file cache: the same entries, with the readings), and
    merged in file order; yields ``(name, (known, unknown))``, or ``(name, None)`` where the
    caller reads it through :meth:`LimitsFold.stream` (``-``, a file the core could not read
    or leaves to the Python fold, every file without the core), as report's ``fold_files``."""
    native = _native_module()
    if not isinstance(dialect, str):
        cache = None  # a mapping file's dialect may change under the same name
    for batch in core_batches(names, native is not None):
        if isinstance(batch, str):
            yield batch, None
            continue
        projects = [claude_project(n) for n in batch]
        if cache is None:
            results = native._usage_fold_limits(
                list(zip(batch, projects, strict=True)), _native_dialect(dialect), *BUDGET
            )
        else:
            results = cache.fold(
                native, batch, projects, dialect, _native_dialect(dialect), BUDGET, readings=True
            )
        for name, res in zip(batch, results, strict=True):
            if res is None or not lf.merge(res[0], res[3]):
                yield name, None
                continue
            yield name, (res[1], res[2])
