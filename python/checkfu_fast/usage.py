"""Token and cost totals from events/v1 events, right by construction (docs/usage.md).

Only event fields are read (``kind``, ``usage``, ``usageScope``/``subtype``, ``messageId``,
``sessionId``, ``dialect``, ``reasoningTokens``, and for the endings ``emptyResult`` and
``repeatsError``), never ``parsed``. The rules, per scope:

- ``message`` usage is one API response: lines with the same ``messageId`` (claude repeats it on
  every content-block line, with growing ``output_tokens``) count once, with the largest value of
  each count; usage without a ``messageId`` counts as given.
- ``message`` usage with a ``requestId`` (claude session files, which repeat a response's usage
  on each of its content-block lines and copy earlier conversations into resumed sessions' files)
  is deduplicated across every stream of the fold by ``messageId`` (else ``requestId``): the
  reading of a main-conversation line beats a sidechain (``sidechain``) one, then the largest
  ``outputTokens``, then the largest ``inputTokens`` (docs/session-files-2026.md 1.5).
- ``turn`` usage is one step: summed.
- ``cumulative`` usage is a running counter (one per session): it covers every message and turn
  usage of its session before it in the stream (they are dropped, not added to it); a later
  counter of the same session replaces the earlier one while no count decreased (a decrease
  starts a new counter, which is added). Several cumulative events of one line (one per model)
  are one reading. For codex, whose counter is cumulative for
  the thread across resumes, the counter is kept per session across streams and the largest one
  counts, so a resumed session does not count its earlier turns again, in whatever order the
  files come; a counter that goes down within one stream was reset (it starts a new counter,
  which is added); a thread whose ``status/init`` says ``continuation`` (a rollout of a spawned
  or forked thread) starts from its parent's counter: the readings of its first second (the
  replayed parent history) are its baseline, and only what it counts beyond that is added. A
  codex ``usage`` that names no model takes the model of the stream's latest ``turn_context``
  (a ``status`` event with that ``nativeType``; its ``text`` is the model).

``reasoningTokens`` (the part of ``outputTokens`` the CLI reports as reasoning) follows the
same rules as the other counts; a total has it only when some reading reported it.

Each stream also has one ending, from its last outcome event (docs/usage.md, Endings): ``ok``
(a result or completed turn with an answer), ``empty`` (a success result with no answer:
``emptyResult``), ``failed`` (a terminal error event: a failed result, a failed turn, an API
error, max turns, an interrupt, or a transient retry with no outcome after it; whatever the
exit status was) or ``none`` (no outcome at all).

:class:`UsageFold` folds many streams in bounded memory (state per session, model and day, the
``messageId`` table of the current stream, and one reading per distinct session-file message);
:func:`usage_totals` folds one stream. ``byDay`` (``totals(by_day=True)``) groups readings by the
UTC day of their event's ``timestamp`` (``unknown`` without one; a cumulative counter counts on
the day of its last reading).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import Any, cast

from . import arrow as _arrow
from . import prices as _prices

__all__ = [
    "DIMENSIONS",
    "SESSION_CUMULATIVE",
    "CoreFold",
    "Inexact",
    "UsageFold",
    "epoch",
    "usage_totals",
    "utc_day",
]

# the --by dimensions of rows (docs/usage.md, Rows)
DIMENSIONS = ("session", "model", "day", "week", "month", "project", "block")
BLOCK_SECONDS = 5 * 3600

# Dialects whose cumulative counter runs across resumes of the same session (formats-2026 X6).
SESSION_CUMULATIVE = frozenset({"codex"})
_COUNTS = ("inputTokens", "outputTokens", "cachedTokens")
_UNKNOWN = "unknown"
ENDINGS = ("ok", "empty", "failed", "none")
# error subtypes that do not end a stream (oneshot/observe.py NON_TERMINAL_ERRORS; a test
# compares the two)
NON_TERMINAL_ERRORS = frozenset(
    {
        "invalid_utf8",
        "invalid_json",
        "line_too_long",
        "too_deep",
        "too_many_nodes",
        "stream_is_utf16",
        "retry",
        "item_error",
    }
)


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))"
)


def epoch(ts: Any) -> float | None:
    """Seconds since 1970 (UTC) of an RFC 3339 timestamp, else ``None``."""
    m = _RFC3339.fullmatch(ts) if isinstance(ts, str) else None
    if m is None:
        return None
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    try:
        t = datetime(y, mo, d, h, mi, min(sec, 59), tzinfo=timezone.utc)
    except ValueError:
        return None
    if m.group(8) is not None:  # a numeric offset: local time = UTC + offset
        off = timedelta(hours=int(m.group(9)), minutes=int(m.group(10)))
        try:
            t = t - off if m.group(8) == "+" else t + off
        except OverflowError:
            return None
    if not 1 <= t.year <= 9999:
        return None
    frac = ts[19:].split("Z")[0].split("z")[0].split("+")[0].split("-")[0]
    extra = float(frac) if frac.startswith(".") and len(frac) > 1 else 0.0
    return t.timestamp() + extra


def utc_day(ts: Any) -> str:
    """The UTC day (``YYYY-MM-DD``) of an RFC 3339 timestamp, else ``"unknown"``."""
    e = epoch(ts)
    if e is None:
        return _UNKNOWN
    return datetime.fromtimestamp(int(e), timezone.utc).strftime("%Y-%m-%d")


class _Rec:
    """One usage reading: token counts (``None`` when the line had none), cost, model, time."""

    __slots__ = (
        "cacheWrite",
        "cacheWrite1h",
        "cachedTokens",
        "costUsd",
        "inputTokens",
        "model",
        "outputTokens",
        "project",
        "reasoning",
        "ts",
    )
    # set through setattr over _COUNTS in __init__: a count (int or float) or None
    inputTokens: int | float | None
    outputTokens: int | float | None
    cachedTokens: int | float | None

    def __init__(
        self,
        usage: dict[str, Any],
        ev: dict[str, Any] | None = None,
        ts: float | None = None,
        project: str | None = None,
    ) -> None:
        self.ts = ts
        self.project = project
        model = usage.get("model")
        self.model: str = model if isinstance(model, str) else _UNKNOWN
        speed = ev.get("speed") if ev is not None else None
        if isinstance(speed, str) and speed and speed != "standard":
            # fast mode is priced apart: "claude-opus-4-8 (fast)" (prices.Snapshot.lookup)
            self.model = f"{self.model} ({speed})"
        known = not usage.get("unknown")
        for k in _COUNTS:
            v = usage.get(k) if known else None
            setattr(self, k, v if _is_count(v) else (0 if known else None))
        cost = usage.get("costUsd")
        self.costUsd = cost if _is_count(cost) else None
        # parts the line reported or not (None): reasoning (of outputTokens), cache writes
        # (of inputTokens) and their 1-hour part; event extras beside ``usage``
        src: dict[str, Any] = ev if ev is not None and known else {}
        self.reasoning: int | float | None = _count_or_none(src.get("reasoningTokens"))
        self.cacheWrite: int | float | None = _count_or_none(src.get("cacheWriteTokens"))
        self.cacheWrite1h: int | float | None = _count_or_none(src.get("cacheWrite1hTokens"))

    def merge_max(self, other: _Rec) -> None:
        """Componentwise largest value (the same message reported on several lines)."""
        for k in _FIELDS:
            a, b = getattr(self, k), getattr(other, k)
            if a is None or (b is not None and b > a):
                setattr(self, k, b)
        if self.model == _UNKNOWN:
            self.model = other.model
        if self.ts is None:
            self.ts = other.ts
        if self.project is None:
            self.project = other.project

    def rank(self, sidechain: bool) -> tuple[bool, int | float, int | float]:
        """Which copy of a session-file message counts: main over sidechain, then the largest
        output, then the largest input."""
        out = self.outputTokens if self.outputTokens is not None else -1
        inp = self.inputTokens if self.inputTokens is not None else -1
        return (not sidechain, out, inp)

    def minus(self, base: _Rec) -> _Rec:
        """Componentwise ``self - base`` (never below 0): what a counter adds to a baseline."""
        out = _copy_rec(self)
        for k in _FIELDS:
            a, b = getattr(self, k), getattr(base, k)
            setattr(out, k, a if a is None or b is None else max(a - b, 0))
        return out

    def covers(self, earlier: _Rec) -> bool:
        """True when no count went down from ``earlier`` (the same counter, grown)."""
        for k in _FIELDS:
            a, b = getattr(earlier, k), getattr(self, k)
            if a is not None and b is not None and b < a:
                return False
        return True


_FIELDS = (*_COUNTS, "costUsd", "reasoning", "cacheWrite", "cacheWrite1h")
# the parts a total has only when some reading reported them: (slot, total key)
_PARTS = (
    ("reasoning", "reasoningTokens"),
    ("cacheWrite", "cacheWriteTokens"),
    ("cacheWrite1h", "cacheWrite1hTokens"),
)


def _count_or_none(v: Any) -> int | float | None:
    return v if _is_count(v) else None


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


class _Acc:
    """A total: token sums, reported and estimated cost, how many readings had each."""

    __slots__ = (
        "cachedTokens",
        "endings",
        "estimated",
        "inputTokens",
        "n_estimated",
        "n_free",
        "n_reported",
        "outputTokens",
        "parts",
        "readings",
        "reported",
        "unpriced",
    )

    def __init__(self) -> None:
        self.inputTokens: int | float = 0
        self.outputTokens: int | float = 0
        self.cachedTokens: int | float = 0
        self.reported: int | float = 0  # the CLI's costs
        # the snapshot's estimates in pico-USD: an int sum, the same in any order
        self.estimated: int = 0
        self.readings = 0
        self.n_reported = 0
        self.n_estimated = 0
        self.n_free = 0
        self.parts: dict[str, int | float] = {}  # reasoningTokens etc., where reported
        self.unpriced: set[str] = set()  # models of readings with tokens and no cost
        self.endings = dict.fromkeys(ENDINGS, 0)

    def add(self, r: _Rec, est: float | None) -> None:
        self.readings += 1
        v = r.inputTokens
        if v is not None:
            self.inputTokens += v
        v = r.outputTokens
        if v is not None:
            self.outputTokens += v
        v = r.cachedTokens
        if v is not None:
            self.cachedTokens += v
        if r.costUsd is not None:
            self.n_reported += 1
            self.reported += r.costUsd
        elif est is not None:
            self.n_estimated += 1
            self.estimated += round(est * 1e12)
        elif r.inputTokens is None or _has_tokens(r):
            self.unpriced.add(r.model)  # tokens (or unknown counts) and no cost
        else:
            self.n_free += 1  # nothing to price: it does not decide the source
        parts = self.parts
        v = r.reasoning
        if v is not None:
            parts["reasoningTokens"] = parts.get("reasoningTokens", 0) + v
        v = r.cacheWrite
        if v is not None:
            parts["cacheWriteTokens"] = parts.get("cacheWriteTokens", 0) + v
        v = r.cacheWrite1h
        if v is not None:
            parts["cacheWrite1hTokens"] = parts.get("cacheWrite1hTokens", 0) + v

    def merge(self, other: _Acc) -> None:
        for k in ("inputTokens", "outputTokens", "cachedTokens", "reported", "estimated"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.readings += other.readings
        self.n_reported += other.n_reported
        self.n_estimated += other.n_estimated
        self.n_free += other.n_free
        for key, v in other.parts.items():
            self.parts[key] = self.parts.get(key, 0) + v
        self.unpriced |= other.unpriced

    def copy(self) -> _Acc:
        b = _Acc()
        b.merge(self)
        b.endings = dict(self.endings)
        return b

    def as_dict(self, endings: bool = False) -> dict[str, Any]:
        priced = self.n_reported + self.n_estimated
        counted = self.readings - self.n_free
        if priced == 0:
            source = "absent"
        elif self.n_reported == counted:
            source = "reported"
        elif self.n_estimated == counted:
            source = "estimated"
        else:
            source = "mixed"
        out: dict[str, Any] = {
            "inputTokens": self.inputTokens,
            "outputTokens": self.outputTokens,
            "cachedTokens": self.cachedTokens,
        }
        for _, key in _PARTS:
            if key in self.parts:
                out[key] = self.parts[key]
        est = self.estimated / 1e12
        out["costUsd"] = (
            (self.reported + est if self.estimated else self.reported) if priced else None
        )
        out["source"] = source
        out["estimatedUsd"] = est if priced else None
        out["unpricedModels"] = sorted(self.unpriced)
        if endings:
            out["endings"] = dict(self.endings)
        return out


def _has_tokens(r: _Rec) -> bool:
    return any(getattr(r, k) for k in ("inputTokens", "outputTokens"))


class _Scope:
    """One session inside one stream."""

    __slots__ = (
        "closed",
        "counter",
        "counter_at",
        "covered",
        "dialect",
        "messages",
        "plain",
        "prior",
    )

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.messages: dict[str, _Rec] = {}  # messageId -> largest reading
        self.covered: set[str] = set()  # messageIds a counter already covers
        self.plain: list[_Rec] = []  # turn usage and message usage without an id
        self.counter: list[_Rec] = []  # the running cumulative counter (one line's readings)
        self.counter_at: Any = None  # the position of that line
        self.closed: list[_Rec] = []  # earlier counters that were reset
        self.prior: list[_Rec] = []  # the counter line before ``counter``, not yet compared

    def settle(self) -> None:
        """``counter`` replaces ``prior`` while no count went down (the counter grew, summed
        over the line's models); else ``prior`` was reset and counts on its own."""
        if self.prior and self.counter and not _sum(self.counter).covers(_sum(self.prior)):
            self.closed += self.prior
        self.prior = []

    def cover(self) -> None:
        """A counter covers the message and turn usage before it."""
        self.covered.update(self.messages)
        self.messages.clear()
        self.plain.clear()

    def readings(self) -> list[_Rec]:
        self.settle()
        out = list(self.closed)
        out += self.counter
        out += self.messages.values()
        out += self.plain
        return out


def _zone(tz: tzinfo | None) -> tzinfo:
    return tz if tz is not None else timezone.utc


class _Agg:
    """Where counted readings go: the total, per model, session and day, and the rows of the
    requested dimensions (block rows are made from a per-second timeline at the end)."""

    def __init__(
        self,
        snapshot: _prices.Snapshot | None,
        tz: tzinfo,
        by: tuple[str, ...],
        since: str | None,
        until: str | None,
        keep_times: bool = False,
    ) -> None:
        self.keep_times = keep_times
        self.snapshot = snapshot
        self.tz = tz
        self.by = by
        self.since = since
        self.until = until
        self.total = _Acc()
        self.models: dict[str, _Acc] = {}
        self.sessions: dict[str, _Acc] = {}
        self.days: dict[str, _Acc] = {}
        self.rows: dict[tuple[str, ...], _Acc] = {}
        # block rows: (epoch second, the other dimensions' key) -> total
        self.timeline: dict[tuple[int, tuple[str, ...]], _Acc] = {}
        # for the active block: epoch second -> total
        self.times: dict[int, _Acc] = {}

    def copy(self) -> _Agg:
        out = _Agg(self.snapshot, self.tz, self.by, self.since, self.until, self.keep_times)
        out.total = self.total.copy()
        for name in ("models", "sessions", "days", "rows", "timeline", "times"):
            setattr(out, name, {k: v.copy() for k, v in getattr(self, name).items()})
        return out

    def estimate(self, r: _Rec) -> float | None:
        if r.costUsd is not None or self.snapshot is None or not _has_tokens(r):
            return None
        mp = self.snapshot.lookup(r.model)
        if mp is None:
            return None
        # the day picks the price in force when the model's price changed (else not needed)
        day = utc_day_of(r.ts) if len(mp.prices) > 1 else _UNKNOWN
        return mp.cost(
            r.inputTokens or 0,
            r.outputTokens or 0,
            r.cachedTokens or 0,
            r.cacheWrite or 0,
            r.cacheWrite1h or 0,
            day=None if day == _UNKNOWN else day,
        )

    def add(self, session: str, r: _Rec) -> None:
        local = (
            datetime.fromtimestamp(r.ts, self.tz) if r.ts is not None and _in_range(r.ts) else None
        )
        # (years 1970..9999: isoformat is strftime's %Y-%m-%d)
        day = local.date().isoformat() if local is not None else _UNKNOWN
        if self.since is not None or self.until is not None:
            if local is None:
                return  # a window is asked for: readings without a time are outside it
            if (self.since is not None and day < self.since) or (
                self.until is not None and day > self.until
            ):
                return
        est = self.estimate(r)
        self.total.add(r, est)
        _acc(self.models, r.model).add(r, est)
        _acc(self.sessions, session).add(r, est)
        _acc(self.days, day).add(r, est)
        if self.keep_times and local is not None and r.ts is not None:
            _acc(self.times, int(r.ts)).add(r, est)
        if not self.by:
            return
        key = []
        for dim in self.by:
            if dim == "block":
                continue
            key.append(_dim_value(dim, session, r, local, day))
        if "block" in self.by:
            sec = int(r.ts) if local is not None and r.ts is not None else -1
            _acc(self.timeline, (sec, tuple(key))).add(r, est)
        else:
            _acc(self.rows, tuple(key)).add(r, est)


def _acc(table: dict[Any, _Acc], key: Any) -> _Acc:
    """``table[key]``, a new total the first time."""
    a = table.get(key)
    if a is None:
        a = table[key] = _Acc()
    return a


def _in_range(ts: float) -> bool:
    return 86400.0 <= ts <= 253402214400.0  # 1970-01-02 .. 9999-12-31


def utc_day_of(ts: float | None) -> str:
    if ts is None or not _in_range(ts):
        return _UNKNOWN
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%d")


def _dim_value(dim: str, session: str, r: _Rec, local: datetime | None, day: str) -> str:
    if dim == "session":
        return session
    if dim == "model":
        return r.model
    if dim == "project":
        return r.project if r.project else _UNKNOWN
    if local is None:
        return _UNKNOWN
    if dim == "day":
        return day
    if dim == "month":
        return day[:7]
    if dim == "week":  # ISO 8601 week, Monday start
        y, w, _ = local.isocalendar()
        return f"{y:04d}-W{w:02d}"
    raise ValueError(f"unknown dimension {dim!r}")


def blocks(
    starts: Iterable[float], gap: int = BLOCK_SECONDS
) -> list[tuple[float, float, float, float]]:
    """ccusage's 5-hour billing windows over reading times (seconds): ``(start, end, first,
    last)`` each. A block starts at its first reading's hour (UTC, floored) and ends 5 h later;
    a reading more than 5 h after the block's start, or more than 5 h after the previous
    reading, opens the next block."""
    out: list[list[float]] = []
    for t in sorted(starts):
        if out and t - out[-1][0] <= gap and t - out[-1][3] <= gap:
            out[-1][3] = t
            continue
        start = t - (t % 3600)
        out.append([start, start + gap, t, t])
    return [(a, b, c, d) for a, b, c, d in out]


def iso_utc(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class StreamSummary:
    """What one stream gives the fold, in the order the fold takes it (:meth:`UsageFold.merge`):
    everything that depends on that stream alone is already folded.

    - ``counters``: the readings of thread counters (:data:`SESSION_CUMULATIVE` dialects), in
      stream order: ``(session, dialect, reading, timestamp text, continued)`` (``continued``:
      the stream had said the thread is a continuation by then); they are folded across streams;
    - ``readings``: the stream's counted readings, ``(session, dialect, reading)``, in order;
    - ``files``: session-file messages, ``key -> (reading, session, dialect, sidechain)``, the
      best copy of each key within the stream (the first of equal ones), in first-seen order;
    - ``ending``, ``session`` (the stream's session), ``dialect``, ``had_usage``.
    """

    __slots__ = ("counters", "dialect", "ending", "files", "had_usage", "readings", "session")

    def __init__(self) -> None:
        self.counters: list[tuple[str, str, _Rec, str | None, bool]] = []
        self.readings: list[tuple[str, str, _Rec]] = []
        self.files: dict[str, tuple[_Rec, str | None, str, bool]] = {}
        self.ending = "none"
        self.session = _UNKNOWN
        self.dialect = _UNKNOWN
        self.had_usage = False

    @classmethod
    def of(cls, t: Sequence[Any]) -> StreamSummary:
        """A summary from its tuple form (:meth:`as_tuple`; lists for tuples too, as JSON
        gives them back): what the core's fold (``_native._usage_fold_files``) returns."""
        counters, readings, files, ending, session, dialect, had_usage = t
        out = cls()
        out.counters = [(c[0], c[1], _rec_of(c[2]), c[3], c[4]) for c in counters]
        out.readings = [(r[0], r[1], _rec_of(r[2])) for r in readings]
        out.files = {f[0]: (_rec_of(f[1]), f[2], f[3], f[4]) for f in files}
        out.ending, out.session, out.dialect, out.had_usage = ending, session, dialect, had_usage
        return out

    def as_tuple(self) -> tuple[Any, ...]:
        """``(counters, readings, files, ending, session, dialect, had_usage)``, a reading as
        ``(model, inputTokens, outputTokens, cachedTokens, costUsd, reasoningTokens,
        cacheWriteTokens, cacheWrite1hTokens, time, project)``."""
        return (
            [(c[0], c[1], _rec_tuple(c[2]), c[3], c[4]) for c in self.counters],
            [(r[0], r[1], _rec_tuple(r[2])) for r in self.readings],
            [(k, _rec_tuple(v[0]), v[1], v[2], v[3]) for k, v in self.files.items()],
            self.ending,
            self.session,
            self.dialect,
            self.had_usage,
        )


_REC_SLOTS = (
    "model",
    "inputTokens",
    "outputTokens",
    "cachedTokens",
    "costUsd",
    "reasoning",
    "cacheWrite",
    "cacheWrite1h",
    "ts",
    "project",
)


def _rec_of(t: Sequence[Any]) -> _Rec:
    r = _Rec.__new__(_Rec)
    (
        r.model,
        r.inputTokens,
        r.outputTokens,
        r.cachedTokens,
        r.costUsd,
        r.reasoning,
        r.cacheWrite,
        r.cacheWrite1h,
        r.ts,
        r.project,
    ) = t
    return r


def _rec_tuple(r: _Rec) -> tuple[Any, ...]:
    return tuple(getattr(r, k) for k in _REC_SLOTS)


class _Stream:
    """The fold of one stream's events into a :class:`StreamSummary`."""

    __slots__ = (
        "continued",
        "current",
        "dialect",
        "ending",
        "first",
        "model",
        "out",
        "project",
        "scopes",
    )

    def __init__(self, project: str | None) -> None:
        self.out = StreamSummary()
        self.scopes: dict[str | None, _Scope] = {}
        self.current: str | None = None
        self.first: str | None = None
        self.ending = "none"  # the ending so far
        self.dialect: str | None = None
        self.continued: set[str] = set()
        self.model: str | None = None  # the latest turn_context model
        self.project = project

    def add(self, ev: dict[str, Any]) -> None:
        sid = ev.get("sessionId")
        if (
            isinstance(sid, str)
            and sid
            and self.first is not None
            and ev.get("dialect") in SESSION_CUMULATIVE
        ):
            # a codex stream is one thread: a later session id is a copy of the parent's
            # session_meta in a sub-agent rollout
            sid = self.first
        if isinstance(sid, str) and sid:
            if self.first is None:
                self.first = sid
                # Usage before the stream named its session belongs to that session.
                early = self.scopes.pop(None, None)
                if early is not None:
                    self.scopes[sid] = early
            self.current = sid
        if self.dialect is None and isinstance(ev.get("dialect"), str):
            self.dialect = ev["dialect"]
        cwd = ev.get("cwd")
        if isinstance(cwd, str) and cwd:
            self.project = cwd
        self._outcome(ev)
        dialect = cast(str, ev.get("dialect")) if isinstance(ev.get("dialect"), str) else _UNKNOWN
        if ev.get("kind") == "status" and dialect in SESSION_CUMULATIVE:
            if ev.get("nativeType") == "turn_context" and isinstance(ev.get("text"), str):
                self.model = ev["text"]
            if ev.get("continuation") is True and isinstance(sid, str) and sid:
                self.continued.add(sid)
        if ev.get("kind") != "usage" or not isinstance(ev.get("usage"), dict):
            return
        self.out.had_usage = True
        scope_name = ev.get("usageScope", ev.get("subtype"))
        ts = ev.get("timestamp")
        rec = _Rec(ev["usage"], ev, epoch(ts), self.project)
        if rec.model == _UNKNOWN and self.model and dialect in SESSION_CUMULATIVE:
            rec.model = self.model
        req = ev.get("requestId")
        if scope_name == "message" and isinstance(req, str):
            mid = ev.get("messageId")
            key = "m:" + mid if isinstance(mid, str) else "r:" + req
            self._file_message(key, rec, dialect, ev.get("sidechain") is True)
            return
        scope = self.scopes.get(self.current)
        if scope is None:
            scope = self.scopes[self.current] = _Scope(dialect)
        if scope_name == "cumulative":
            if dialect in SESSION_CUMULATIVE and self.current is not None:
                self.out.counters.append(
                    (
                        self.current,
                        dialect,
                        rec,
                        ts if isinstance(ts, str) else None,
                        self.current in self.continued,
                    )
                )
                scope.cover()
                return
            scope.cover()
            at = ev.get("position")
            if scope.counter and at is not None and at == scope.counter_at:
                scope.counter.append(rec)  # one line reporting several models
                return
            scope.settle()  # the line before is complete: compare it with its predecessor
            scope.prior = scope.counter
            scope.counter = [rec]
            scope.counter_at = at
        elif scope_name == "message" and isinstance(ev.get("messageId"), str):
            seen = scope.messages.get(ev["messageId"])
            if ev["messageId"] in scope.covered:
                pass  # a repeat of a message the counter already counts
            elif seen is None:
                scope.messages[ev["messageId"]] = rec
            else:
                seen.merge_max(rec)
        else:  # turn usage, message usage without an id, anything else: one reading each
            scope.plain.append(rec)

    def _outcome(self, ev: dict[str, Any]) -> None:
        """The stream's ending: its last outcome event (a repeat of an error does not count)."""
        kind, sub = ev.get("kind"), ev.get("subtype")
        if kind == "status" and sub in ("result", "turn_completed"):
            if ev.get("repeatsError") is not True:
                self.ending = "empty" if ev.get("emptyResult") is True else "ok"
        elif kind == "error" and sub not in NON_TERMINAL_ERRORS:
            self.ending = "failed"
        elif kind == "error" and ev.get("retry") is True and self.ending == "none":
            self.ending = "retrying"  # failed, unless an outcome follows

    def _file_message(self, key: str, rec: _Rec, dialect: str, sidechain: bool) -> None:
        """A session file's message usage: the best copy of each message counts (its session:
        the stream's current one). Within the stream here, across streams in
        :meth:`UsageFold.merge` (the first best copy of the streams' first best copies is the
        first best copy of all)."""
        files = self.out.files
        seen = files.get(key)
        if seen is None or rec.rank(sidechain) > seen[0].rank(seen[3]):
            session = self.current if self.current is not None else self.first
            files[key] = (rec, session, dialect, sidechain)

    def summary(self) -> StreamSummary:
        """The stream's summary so far (the stream may go on: its state is only read, and the
        scopes settled, which changes nothing they give)."""
        out = StreamSummary()
        out.counters = list(self.out.counters)
        out.files = dict(self.out.files)
        out.had_usage = self.out.had_usage
        for sid, scope in self.scopes.items():
            name = sid if sid is not None else (self.first or _UNKNOWN)
            for r in scope.readings():
                out.readings.append((name, scope.dialect, r))
        out.session = self.current or self.first or _UNKNOWN
        # the stream stopped while retrying (as oneshot): failed
        out.ending = "failed" if self.ending == "retrying" else self.ending
        out.dialect = self.dialect or _UNKNOWN
        return out


def _checked_options(
    prices: _prices.Snapshot | None,
    estimate: bool,
    by: Sequence[str],
    since: str | None,
    until: str | None,
) -> _prices.Snapshot | None:
    """The fold's options checked (``ValueError`` for an unknown dimension or a bad date), and
    the price snapshot it estimates with (None with ``estimate=False``)."""
    for dim in by:
        if dim not in DIMENSIONS:
            raise ValueError(f"unknown dimension {dim!r} (one of {', '.join(DIMENSIONS)})")
    for d in (since, until):
        if d is not None:
            date.fromisoformat(d)
    return (prices if prices is not None else _prices.snapshot()) if estimate else None


class UsageFold:
    """Fold usage events of many streams: ``start_stream()``, ``add(ev)`` per event,
    ``end_stream()``; :meth:`totals` (and :meth:`rows`) at any point after ``end_stream``.

    ``prices``: the snapshot that estimates a cost for readings the CLI gave none (default the
    shipped one, :func:`checkfu_fast.prices.snapshot`); ``estimate=False`` keeps only reported
    costs. ``tz`` (default UTC) is the zone of days, weeks, months and of ``since``/``until``
    (``YYYY-MM-DD``, inclusive: readings outside, or without a time, are not counted at all).
    ``by``: the dimensions of :meth:`rows` (:data:`DIMENSIONS`); ``active=True`` keeps what
    :meth:`active_block` needs (one total per second of reading time).

    Each stream is folded on its own into a :class:`StreamSummary` (``end_stream``), which
    :meth:`merge` folds across streams; a summary made elsewhere (the report's cache) can be
    merged in its stream's place."""

    def __init__(
        self,
        *,
        prices: _prices.Snapshot | None = None,
        estimate: bool = True,
        tz: tzinfo | None = None,
        by: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        active: bool = False,
    ) -> None:
        snap = _checked_options(prices, estimate, by, since, until)
        self.prices = snap
        self._agg = _Agg(snap, _zone(tz), tuple(by), since, until, active)
        self._session_dialect: dict[str, str] = {}
        # SESSION_CUMULATIVE dialects: per session, the running counter (its largest reading
        # so far, what was counted of it), the parent's counter for continuation threads
        self._session_counters: dict[str, _Rec] = {}
        self._session_base: dict[str, _Rec] = {}
        # per stream merged: the last reading per session, the continuation sessions and the
        # second of their first reading (None once the replayed burst is over)
        self._stream_last: dict[str, _Rec] = {}
        self._burst: dict[str, str | None] = {}
        self._continued: set[str] = set()
        # session-file messages, across streams: key -> (reading, session, dialect, sidechain)
        self._files: dict[str, tuple[_Rec, str | None, str, bool]] = {}
        self._stream: _Stream | None = None
        self._cached: tuple[_Agg, dict[str, str]] | None = None  # _final's, until a change

    # -- streams ---------------------------------------------------------------------------
    def start_stream(self, project: str | None = None) -> None:
        """A new stream; ``project`` names its project where its events give no ``cwd`` (the
        report passes a claude session file's project directory)."""
        if self._stream is not None:
            self.end_stream()
        self._cached = None
        self._stream = _Stream(project)

    def add(self, ev: dict[str, Any]) -> None:
        self._cached = None
        if self._stream is None:
            self.start_stream()
        assert self._stream is not None
        self._stream.add(ev)

    def peek(self) -> UsageFold:
        """A copy whose :meth:`totals` are this fold's so far while this fold's stream goes on
        (``totals`` ends the stream: in the copy only). The readings are shared, never
        changed; what merging changes is copied."""
        snap = copy.copy(self)
        snap._agg = self._agg.copy()
        snap._session_dialect = dict(self._session_dialect)
        snap._session_counters = {k: _copy_rec(v) for k, v in self._session_counters.items()}
        snap._session_base = {k: _copy_rec(v) for k, v in self._session_base.items()}
        snap._files = dict(self._files)
        snap._cached = None
        return snap

    def end_stream(self) -> None:
        if self._stream is None:
            return
        summary = self._stream.summary()
        self._stream = None
        self.merge(summary)

    def merge(self, s: StreamSummary) -> None:
        """Fold one stream's summary (in the stream's place: streams are merged in order)."""
        if self._stream is not None:
            self.end_stream()
        self._cached = None
        self._stream_last = {}
        self._burst = {}
        self._continued = set()
        for sid, dialect, rec, ts, continued in s.counters:
            if continued:
                self._continued.add(sid)
            self._session_counter(sid, dialect, rec, ts)
        for name, dialect, r in s.readings:
            self._count(name, dialect, r)
        agg = self._agg
        agg.total.endings[s.ending] += 1
        if s.ending != "none" or s.had_usage:
            # a stream with neither usage nor an outcome makes no session row
            agg.sessions.setdefault(s.session, _Acc()).endings[s.ending] += 1
            self._session_dialect.setdefault(s.session, s.dialect)
        files = self._files
        for key, new in s.files.items():
            seen = files.get(key)
            if seen is None or new[0].rank(new[3]) > seen[0].rank(seen[3]):
                files[key] = new

    def _session_counter(self, sid: str, dialect: str, rec: _Rec, ts: str | None) -> None:
        """A thread's cumulative counter: each reading counts what it adds to the largest
        reading so far (on its own time); a counter that goes down within the stream was
        reset and counts from 0 again."""
        self._session_dialect.setdefault(sid, dialect)
        if sid in self._continued:
            second = ts[:19] if ts is not None else None
            if sid not in self._burst:  # the first reading: the replayed parent history
                self._burst[sid] = second
                self._base(sid, rec)
                return
            if second is not None and second == self._burst[sid]:
                self._base(sid, rec)  # still the burst
                return
            self._burst[sid] = None
        last = self._stream_last.get(sid)
        self._stream_last[sid] = rec
        seen = self._session_counters.get(sid)
        if seen is None:
            base = self._session_base.get(sid)
            # a continuation: its first counter starts at the parent's
            seen = _copy_rec(base) if base is not None else _zero()
            self._session_counters[sid] = seen
        elif last is not None and not rec.covers(last):
            # the counter went down within the stream: it was reset, a new one starts
            seen = self._session_counters[sid] = _zero()
        delta = rec.minus(seen)
        seen.merge_max(rec)
        self._agg.add(sid, delta)

    def _base(self, sid: str, rec: _Rec) -> None:
        base = self._session_base.get(sid)
        if base is None:
            self._session_base[sid] = _copy_rec(rec)
        else:
            base.merge_max(rec)

    def _count(self, session: str, dialect: str, r: _Rec) -> None:
        self._agg.add(session, r)
        self._session_dialect.setdefault(session, dialect)

    # -- results ---------------------------------------------------------------------------
    def _final(self) -> tuple[_Agg, dict[str, str]]:
        """The totals so far with the session-file messages counted (into a copy: more
        streams may follow)."""
        self.end_stream()
        if self._cached is not None:
            return self._cached
        agg = self._agg.copy()
        dialects = dict(self._session_dialect)
        for r, fsid, dialect, _ in self._files.values():
            name = fsid if fsid is not None else _UNKNOWN
            agg.add(name, r)
            dialects.setdefault(name, dialect)
        self._cached = (agg, dialects)
        return self._cached

    def totals(self, *, by_day: bool = False) -> dict[str, Any]:
        """``{"total", "byModel", "bySession"}`` (sorted keys), each as in :func:`usage_totals`;
        with ``by_day``, also ``byDay`` (days in the fold's zone, then ``unknown``)."""
        agg, dialects = self._final()
        return _totals(agg.total, agg.models, agg.sessions, agg.days, dialects, by_day)

    def rows(self) -> list[dict[str, Any]]:
        """One row per value of the fold's ``by`` dimensions (sorted): a key per dimension
        (``block`` with ``blockEnd``: ISO 8601 UTC) and the totals' fields."""
        agg, _ = self._final()
        by = agg.by
        if by == ("session",) or "block" not in by:
            return _rows(by, agg.sessions, agg.rows, {})
        spans = blocks(float(sec) for sec, _ in agg.timeline if sec >= 0)
        groups: dict[tuple[str, ...], _Acc] = {}
        ends: dict[str, str | None] = {_UNKNOWN: None}
        starts = [b[0] for b in spans]
        for (sec, key), acc in sorted(agg.timeline.items()):
            if sec < 0:
                bkey: tuple[str, ...] = (_UNKNOWN, *key)
            else:
                i = _block_of(starts, spans, float(sec))
                bkey = (iso_utc(spans[i][0]), *key)
                ends[bkey[0]] = iso_utc(spans[i][1])
            groups.setdefault(bkey, _Acc()).merge(acc)
        return _rows(by, agg.sessions, groups, ends)

    def timeline(self) -> list[tuple[int, dict[str, Any]]]:
        """Per epoch second with readings, in order, the totals of the readings of that second
        (the fields of :meth:`totals`' ``total`` without ``endings``); needs ``active=True``
        (the quota ledger of ``report --limits`` measures usage between two times with it)."""
        agg, _ = self._final()
        return [(sec, agg.times[sec].as_dict()) for sec in sorted(agg.times)]

    def active_block(self, now: float) -> dict[str, Any] | None:
        """The 5-hour block still open at ``now`` (seconds): its tokens and cost, the burn
        rate (per hour, from its first to its last reading) and the projected total at its
        end; ``None`` when no block is open."""
        agg, _ = self._final()
        times = agg.times
        spans = blocks(float(s) for s in times)
        if not spans:
            return None
        start, end, _, _ = spans[-1]
        acc = _Acc()
        for sec, a in times.items():
            if start <= sec < end:
                acc.merge(a)
        return _active(spans[-1], acc, now)


def _totals(
    total: _Acc,
    models: dict[str, _Acc],
    sessions: dict[str, _Acc],
    days: dict[str, _Acc],
    dialects: dict[str, str],
    by_day: bool,
) -> dict[str, Any]:
    """:meth:`UsageFold.totals` of the fold's totals."""
    by_session = {}
    for k in sorted(sessions):
        d = sessions[k].as_dict(endings=True)
        d["dialect"] = dialects.get(k, _UNKNOWN)
        by_session[k] = d
    out = {
        "total": total.as_dict(endings=True),
        "byModel": {k: models[k].as_dict() for k in sorted(models)},
        "bySession": by_session,
    }
    if by_day:  # "unknown" sorts after every digit, so last
        out["byDay"] = {k: days[k].as_dict() for k in sorted(days)}
    return out


def _rows(
    by: tuple[str, ...],
    sessions: dict[str, _Acc],
    groups: dict[tuple[str, ...], _Acc],
    ends: dict[str, str | None],
) -> list[dict[str, Any]]:
    """:meth:`UsageFold.rows` of the groups (keyed by the block first where it is one, then
    the other dimensions in ``by``'s order; ``ends``: each block's end)."""
    if by == ("session",):  # every session, those with only an ending too
        return [{"session": k, **sessions[k].as_dict()} for k in sorted(sessions)]
    rest = [d for d in by if d != "block"]
    names = (["block"] if "block" in by else []) + rest
    out = []
    for key in sorted(groups):
        row: dict[str, Any] = {}
        values = dict(zip(names, key, strict=True))
        for dim in by:
            row[dim] = values[dim]
            if dim == "block":
                row["blockEnd"] = ends[values[dim]]
        row.update(groups[key].as_dict())
        out.append(row)
    return out


def _active(
    span: tuple[float, float, float, float], acc: _Acc, now: float
) -> dict[str, Any] | None:
    """:meth:`UsageFold.active_block` of the last block and its total."""
    start, end, first, last = span
    if not (now < end and now - last <= BLOCK_SECONDS):
        return None
    t = acc.as_dict()
    tokens = t["inputTokens"] + t["outputTokens"]
    hours = max((last - first) / 3600.0, 1 / 60)  # at least a minute
    left = max(end - now, 0) / 3600.0
    usd = t["costUsd"] or 0.0
    return {
        "block": iso_utc(start),
        "blockEnd": iso_utc(end),
        **t,
        "tokensPerHour": round(tokens / hours, 1),
        "usdPerHour": usd / hours,
        "remainingMinutes": round(left * 60),
        "projectedTokens": round(tokens + tokens / hours * left),
        "projectedUsd": usd + usd / hours * left,
    }


def _block_of(starts: list[float], spans: list[tuple[float, float, float, float]], t: float) -> int:
    import bisect

    i = bisect.bisect_right(starts, t) - 1
    return max(i, 0)


def _zero() -> _Rec:
    out = _Rec({})
    for k in _FIELDS:
        if k != "costUsd":
            setattr(out, k, None)
    return out


def _sum(recs: list[_Rec]) -> _Rec:
    out = _Rec({})
    for r in recs:
        out.ts = r.ts
        for k in _FIELDS:
            a, b = getattr(out, k), getattr(r, k)
            setattr(out, k, b if a is None else a if b is None else a + b)
    return out


def _copy_rec(r: _Rec) -> _Rec:
    out = _Rec.__new__(_Rec)
    for k in _Rec.__slots__:
        setattr(out, k, getattr(r, k))
    return out


class Inexact(Exception):
    """The core's sums (:class:`CoreFold`) would differ from the Python fold's: the caller
    folds in Python (:class:`UsageFold`) instead; the message says why."""


def _price_arg(v: Any) -> Any:
    """A price of the snapshot as the core takes it: None, a float or ``(base, [(above,
    price)])`` (``prices._price_at``'s input, its floats as it makes them)."""
    if v is None:
        return None
    if isinstance(v, dict):
        return (float(v["base"]), [(t["above"], float(t["price"])) for t in v.get("tiers", [])])
    return float(v)


def _acc_of(t: Sequence[Any], endings: Sequence[int] | None = None) -> _Acc:
    """A total from the core's tuple (``_native._UsageMerge.group``)."""
    a = _Acc()
    (
        a.inputTokens,
        a.outputTokens,
        a.cachedTokens,
        a.reported,
        a.estimated,
        a.readings,
        a.n_reported,
        a.n_estimated,
        a.n_free,
        parts,
        unpriced,
    ) = t
    a.parts = {key: v for (_, key), v in zip(_PARTS, parts, strict=True) if v is not None}
    a.unpriced = set(unpriced)
    if endings is not None:
        a.endings = dict(zip(ENDINGS, endings, strict=True))
    return a


class Lazy:
    """A part of a document made item by item as it is written (``report --json``: the
    ``bySession`` and ``rows`` of a tree of tens of thousands of sessions are never all dicts
    at once): ``len`` items, iterated as ``(key, value)`` pairs of a JSON object when ``pairs``,
    else as the values of a JSON array. ``dict(lazy)`` or ``list(lazy)`` gives the whole; where
    the core writes the text itself, :attr:`text` (the same text as the items')."""

    def __init__(
        self,
        items: Callable[[], Iterator[Any]],
        n: int,
        *,
        pairs: bool,
        text: Callable[[Callable[[str], Any]], None] | None = None,
    ) -> None:
        self._items = items
        self.n = n
        self.pairs = pairs
        #: ``text(write)``: the whole value's JSON text (as ``report.write_json`` writes the
        #: items: a top-level key's value, indented one level) handed to ``write`` in pieces
        #: by the core, or None
        self.text = text

    def __iter__(self) -> Iterator[Any]:
        return self._items()

    def __len__(self) -> int:
        return self.n


#: Sessions' totals made into dicts at a time by :func:`_chunked`.
CHUNK_SESSIONS = 1024


def _chunked(sessions: Any, *, rows: bool) -> Iterator[Any]:
    """A ``_UsageSessions``' dicts (``dicts(rows)``'s items), :data:`CHUNK_SESSIONS` at a
    time: only one chunk of them alive at once."""
    for start in range(0, len(sessions), CHUNK_SESSIONS):
        yield from sessions.dicts(rows, start, start + CHUNK_SESSIONS)


class CoreFold:
    """:class:`UsageFold`'s :meth:`~UsageFold.merge`, :meth:`~UsageFold.totals`,
    :meth:`~UsageFold.rows` and :meth:`~UsageFold.active_block`, the same values, with the
    fold across streams in the core (``native._UsageMerge``, rust/usage_merge.rs): the
    thread counters, the session-file messages deduplicated across files, each reading's
    estimate (from the prices this snapshot resolves per model: one price table) and the sums,
    per session, model, project and quarter hour, without a Python object per reading.
    Python names each quarter hour's day, week and month in the zone (checked at its first
    and last second), and its 5-hour block. Where the core's sums could differ (a float
    count, a count beyond 128 bits, reported costs with blocks, a zone whose offset changes
    inside a quarter hour) the results raise :class:`Inexact`: fold in Python then.

    Streams come as the core's summaries (``_usage_fold_files(..., handles=True)``), their
    tuple form (the report's cache) or events (:meth:`start_stream`, :meth:`add`)."""

    def __init__(
        self,
        native: Any,
        *,
        prices: _prices.Snapshot | None = None,
        estimate: bool = True,
        tz: tzinfo | None = None,
        by: Sequence[str] = (),
        since: str | None = None,
        until: str | None = None,
        active: bool = False,
    ) -> None:
        snap = _checked_options(prices, estimate, by, since, until)
        self.prices = snap
        self.tz = _zone(tz)
        self.by = tuple(by)
        self.since = since
        self.until = until
        self.active = active
        self._merge: Any = native._UsageMerge(self._resolve if snap is not None else None)
        self._stream: _Stream | None = None
        self._done: tuple[Any, ...] | None = None
        self._inexact: str | None = None

    def _resolve(self, model: str) -> list[tuple[Any, ...]] | None:
        assert self.prices is not None
        mp = self.prices.lookup(model)
        if mp is None:
            return None
        return [
            (p.get("since"), *(_price_arg(p.get(k)) for k in _prices.PRICE_KEYS)) for p in mp.prices
        ]

    # -- streams ---------------------------------------------------------------------------
    def start_stream(self, project: str | None = None) -> None:
        if self._stream is not None:
            self.end_stream()
        self._stream = _Stream(project)

    def add(self, ev: dict[str, Any]) -> None:
        if self._stream is None:
            self.start_stream()
        assert self._stream is not None
        self._stream.add(ev)

    def end_stream(self) -> None:
        if self._stream is None:
            return
        summary = self._stream.summary()
        self._stream = None
        try:
            self._merge.merge(summary.as_tuple())
        except (ValueError, OverflowError):  # a count beyond 128 bits, a dialect the core lacks
            self._inexact = "a stream the core's merge does not take"

    def merge(self, s: Any) -> None:
        """One stream's summary: a :class:`StreamSummary`, the core's or their tuple form
        (``ValueError`` when it is not one: nothing is merged)."""
        if self._stream is not None:
            self.end_stream()
        self._merge.merge(s.as_tuple() if isinstance(s, StreamSummary) else s)

    def fold_files(
        self, names: list[str], dialect: Any, budget: tuple[int, int, int]
    ) -> tuple[int, list[tuple[int, int]]]:
        """The files ``names`` folded and merged in file order by the core on every core
        (``_UsageMerge.fold_files``: the GIL released, no summary in Python; ``dialect`` as
        the core takes it, ``budget`` the Normalizer's). It stops before the first file it
        leaves to Python (unreadable, or read right only by the Python fold): returns how
        many were merged, and ``(index, unknown)`` of each merged file that had only
        ``status/unknown`` events."""
        if self._stream is not None:
            self.end_stream()
        merged, quiet = self._merge.fold_files(names, dialect, *budget)
        return merged, quiet

    # -- results ---------------------------------------------------------------------------
    def _final(self) -> tuple[Any, ...]:
        if self._done is not None:
            return self._done
        self.end_stream()
        if self._inexact is not None:
            raise Inexact(self._inexact)
        m = self._merge
        times = m.times()
        tz, since, until = self.tz, self.since, self.until
        labels: list[list[Any]] = []
        for lo, hi in times:
            a = datetime.fromtimestamp(lo, tz)
            b = datetime.fromtimestamp(hi, tz)
            if a.utcoffset() != b.utcoffset() or a.date() != b.date():
                raise Inexact("the zone's offset changes inside a quarter hour")
            day = a.date().isoformat()
            y, w, _ = a.isocalendar()
            inside = (since is None or day >= since) and (until is None or day <= until)
            labels.append([day, f"{y:04d}-W{w:02d}", day[:7], inside, None, False])
        spans: list[tuple[float, float, float, float]] = []
        ends: dict[str, str | None] = {_UNKNOWN: None}
        if "block" in self.by or self.active:
            spans = blocks(
                float(x)
                for (lo, hi), lab in zip(times, labels, strict=True)
                if lab[3]
                for x in (lo, hi)
            )
            starts = [b[0] for b in spans]
            for (lo, _), lab in zip(times, labels, strict=True):
                if lab[3]:
                    span = spans[_block_of(starts, spans, float(lo))]
                    lab[4] = iso_utc(span[0])
                    ends[lab[4]] = iso_utc(span[1])
                    lab[5] = span is spans[-1] and span[0] <= lo < span[1]
        none = [_UNKNOWN, _UNKNOWN, _UNKNOWN, since is None and until is None, None, False]
        g = m.group([tuple(x) for x in labels], tuple(none), list(self.by), True, self.active)
        if m.inexact is not None:
            raise Inexact(m.inexact)
        total = _acc_of(g["total"], g["endings"])
        models = {name: _acc_of(t) for name, t in g["models"]}
        # the sessions' totals stay in the core (a _UsageSessions, by name): report --json
        # has the core write their text (Lazy.text), the other outputs have it make their
        # dicts (no _Acc object per session)
        sessions: Any = g["sessions"]
        days = {day: _acc_of(t) for day, t in g["days"]}
        groups = {tuple(key): _acc_of(t) for key, t in g["rows"]}
        active = _acc_of(g["active"]) if g["active"] is not None else None
        del g
        self._merge = None  # the core's fold, its names and buckets, freed: all is here
        self._done = (total, models, sessions, days, groups, ends, spans, active)
        return self._done

    def totals(self, *, by_day: bool = False, lazy: bool = False) -> dict[str, Any]:
        """As :meth:`UsageFold.totals` (:class:`Inexact` where the core's could differ); with
        ``lazy``, ``bySession`` is a :class:`Lazy` of its pairs (its text written by the
        core)."""
        total, models, sessions, days = self._final()[:4]
        out: dict[str, Any] = {
            "total": total.as_dict(endings=True),
            "byModel": {k: models[k].as_dict() for k in sorted(models)},
            "bySession": (
                Lazy(
                    lambda: _chunked(sessions, rows=False),
                    len(sessions),
                    pairs=True,
                    text=lambda write: sessions.write_json(write),
                )
                if lazy
                else dict(sessions.dicts())
            ),
        }
        if by_day:  # "unknown" sorts after every digit, so last
            out["byDay"] = {k: days[k].as_dict() for k in sorted(days)}
        return out

    def rows(self, *, lazy: bool = False) -> list[dict[str, Any]] | Lazy:
        """As :meth:`UsageFold.rows`; with ``lazy`` and ``by`` session, a :class:`Lazy` of
        them (their text written by the core)."""
        _, _, sessions, _, groups, ends, _, _ = self._final()
        if self.by == ("session",):
            if not lazy:
                return list(sessions.dicts(rows=True))
            return Lazy(
                lambda: _chunked(sessions, rows=True),
                len(sessions),
                pairs=False,
                text=lambda write: sessions.write_json(write, rows=True),
            )
        return _rows(self.by, {}, groups, ends)  # (the sessions' totals: by session only)

    def active_block(self, now: float) -> dict[str, Any] | None:
        """As :meth:`UsageFold.active_block` (with ``active=True``)."""
        spans, acc = self._final()[6:]
        if not spans or acc is None:
            return None
        return _active(spans[-1], acc, now)


def usage_totals(
    events: Iterable[dict[str, Any]] | Any,
    *,
    by_day: bool = False,
    prices: _prices.Snapshot | None = None,
    estimate: bool = True,
    tz: tzinfo | None = None,
) -> dict[str, Any]:
    """Totals of one stream's events: ``{"total": {...}, "byModel": {MODEL: {...}},
    "bySession": {ID: {...}}}``.

    Each total has ``inputTokens`` (all prompt tokens, cached and cache writes included),
    ``outputTokens`` (reasoning included), ``cachedTokens`` (cache reads), ``reasoningTokens``,
    ``cacheWriteTokens`` and ``cacheWrite1hTokens`` (only where some reading reported them),
    ``costUsd`` (the costs the CLI reported plus, for the other readings, the price snapshot's
    estimate; ``None`` when no reading has either), ``source`` (``"reported"``: every counted
    reading had a cost from the CLI; ``"estimated"``: every one was estimated; ``"mixed"``:
    some of each, or some had none; ``"absent"``: none had a cost), ``estimatedUsd`` (the
    estimated part) and ``unpricedModels`` (the sorted models of readings with tokens and no
    cost). ``total`` and ``bySession`` entries also have ``endings``: how many streams ended
    ``ok``, ``empty`` (a success with no answer), ``failed`` (on an error event, whatever the
    exit status) or ``none``. ``bySession`` entries also name the ``dialect``. Usage is
    attributed to the session of the latest ``sessionId`` seen in the stream (the stream's
    first one for usage before any). With ``by_day``, ``byDay`` groups them by the day (in
    ``tz``, default UTC) of the events' ``timestamp`` (``unknown`` for events without one).
    ``prices``/``estimate`` as for :class:`UsageFold`. See docs/usage.md for the rule per
    dialect.

    ``events`` may also be Arrow data of events, full or lean (``normalize_arrow(data,
    fields="lean")``, a pyarrow ``Table``, a ``pyarrow.dataset`` of ``--format parquet``
    output): read batch by batch, a new stream at each new ``source`` (else at ``seq`` 0), with
    exactly the rules above.
    """
    fold = UsageFold(prices=prices, estimate=estimate, tz=tz)
    if _arrow.is_arrow(events):
        fold.start_stream()
        for i, (new, ev) in enumerate(_arrow.stream_events(events)):
            if new and i > 0:
                fold.start_stream()
            fold.add(ev)
        return fold.totals(by_day=by_day)
    fold.start_stream()
    for ev in events:
        fold.add(ev)
    return fold.totals(by_day=by_day)
