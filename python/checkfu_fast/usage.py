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

import re
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any, cast

__all__ = ["SESSION_CUMULATIVE", "UsageFold", "usage_totals", "utc_day"]

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


def utc_day(ts: Any) -> str:
    """The UTC day (``YYYY-MM-DD``) of an RFC 3339 timestamp, else ``"unknown"``."""
    m = _RFC3339.fullmatch(ts) if isinstance(ts, str) else None
    if m is None:
        return _UNKNOWN
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    try:
        t = datetime(y, mo, d, h, mi, min(sec, 59), tzinfo=timezone.utc)
    except ValueError:
        return _UNKNOWN
    if m.group(8) is not None:  # a numeric offset: local time = UTC + offset
        off = timedelta(hours=int(m.group(9)), minutes=int(m.group(10)))
        t = t - off if m.group(8) == "+" else t + off
    return t.strftime("%Y-%m-%d") if 1 <= t.year <= 9999 else _UNKNOWN


class _Rec:
    """One usage reading: token counts (``None`` when the line had none), cost, model, day."""

    __slots__ = (
        "cachedTokens",
        "costUsd",
        "day",
        "inputTokens",
        "model",
        "outputTokens",
        "reasoning",
    )
    # set through setattr over _COUNTS in __init__: a count (int or float) or None
    inputTokens: int | float | None
    outputTokens: int | float | None
    cachedTokens: int | float | None

    def __init__(self, usage: dict[str, Any], reasoning: Any = None, day: str = _UNKNOWN) -> None:
        self.day = day
        model = usage.get("model")
        self.model: str = model if isinstance(model, str) else _UNKNOWN
        known = not usage.get("unknown")
        for k in _COUNTS:
            v = usage.get(k) if known else None
            setattr(self, k, v if _is_count(v) else (0 if known else None))
        cost = usage.get("costUsd")
        self.costUsd = cost if _is_count(cost) else None
        # reasoning tokens (part of outputTokens), None when the line reported none
        self.reasoning: int | float | None = reasoning if known and _is_count(reasoning) else None

    def merge_max(self, other: _Rec) -> None:
        """Componentwise largest value (the same message reported on several lines)."""
        for k in _FIELDS:
            a, b = getattr(self, k), getattr(other, k)
            if a is None or (b is not None and b > a):
                setattr(self, k, b)
        if self.model == _UNKNOWN:
            self.model = other.model
        if self.day == _UNKNOWN:
            self.day = other.day

    def rank(self, sidechain: bool) -> tuple[bool, int | float, int | float]:
        """Which copy of a session-file message counts: main over sidechain, then the largest
        output, then the largest input."""
        out = self.outputTokens if self.outputTokens is not None else -1
        inp = self.inputTokens if self.inputTokens is not None else -1
        return (not sidechain, out, inp)

    def minus(self, base: _Rec) -> _Rec:
        """Componentwise ``self - base`` (never below 0): what a counter adds to a baseline."""
        out = _Rec({})
        out.model = self.model
        out.day = self.day
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


_FIELDS = (*_COUNTS, "costUsd", "reasoning")


def _sum(recs: list[_Rec]) -> _Rec:
    out = _Rec({})
    for r in recs:
        out.day = r.day
        for k in _FIELDS:
            a, b = getattr(out, k), getattr(r, k)
            setattr(out, k, b if a is None else a if b is None else a + b)
    return out


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


class _Acc:
    """A total: token sums, reported cost and how many readings had one."""

    __slots__ = (
        "cachedTokens",
        "costUsd",
        "endings",
        "inputTokens",
        "outputTokens",
        "priced",
        "readings",
        "reasoned",
        "reasoning",
    )

    def __init__(self) -> None:
        self.inputTokens: int | float = 0
        self.outputTokens: int | float = 0
        self.cachedTokens: int | float = 0
        self.costUsd: int | float = 0
        self.reasoning: int | float = 0
        self.readings = 0
        self.priced = 0
        self.reasoned = 0  # readings that reported reasoning tokens
        self.endings = dict.fromkeys(ENDINGS, 0)

    def add(self, r: _Rec) -> None:
        self.readings += 1
        for k in _COUNTS:
            v = getattr(r, k)
            if v is not None:
                setattr(self, k, getattr(self, k) + v)
        if r.costUsd is not None:
            self.priced += 1
            self.costUsd += r.costUsd
        if r.reasoning is not None:
            self.reasoned += 1
            self.reasoning += r.reasoning

    def as_dict(self, endings: bool = False) -> dict[str, Any]:
        if self.priced == 0:
            source = "absent"
        elif self.priced == self.readings:
            source = "reported"
        else:
            source = "partial"
        out: dict[str, Any] = {
            "inputTokens": self.inputTokens,
            "outputTokens": self.outputTokens,
            "cachedTokens": self.cachedTokens,
        }
        if self.reasoned:
            out["reasoningTokens"] = self.reasoning
        out["costUsd"] = self.costUsd if self.priced else None
        out["source"] = source
        if endings:
            out["endings"] = dict(self.endings)
        return out


class _Scope:
    """One session inside one stream."""

    __slots__ = ("closed", "counter", "counter_at", "covered", "dialect", "messages", "plain")

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.messages: dict[str, _Rec] = {}  # messageId -> largest reading
        self.covered: set[str] = set()  # messageIds a counter already covers
        self.plain: list[_Rec] = []  # turn usage and message usage without an id
        self.counter: list[_Rec] = []  # the running cumulative counter (one line's readings)
        self.counter_at: Any = None  # the position of that line
        self.closed: list[_Rec] = []  # earlier counters that were reset

    def cover(self) -> None:
        """A counter covers the message and turn usage before it."""
        self.covered.update(self.messages)
        self.messages.clear()
        self.plain.clear()

    def readings(self) -> list[_Rec]:
        out = list(self.closed)
        out += self.counter
        out += self.messages.values()
        out += self.plain
        return out


class UsageFold:
    """Fold usage events of many streams: ``start_stream()``, ``add(ev)`` per event,
    ``end_stream()``; :meth:`totals` at any point after ``end_stream``."""

    def __init__(self) -> None:
        self._total = _Acc()
        self._models: dict[str, _Acc] = {}
        self._sessions: dict[str, _Acc] = {}
        self._session_dialect: dict[str, str] = {}
        self._session_counters: dict[str, _Rec] = {}  # SESSION_CUMULATIVE dialects
        self._session_closed: dict[str, list[_Rec]] = {}  # their counters that were reset
        self._session_base: dict[str, _Rec] = {}  # continuation threads: the parent's counter
        # per stream: the last reading per session, the continuation sessions and the second
        # of their first reading (None once the replayed burst is over), the turn_context model
        self._stream_last: dict[str, _Rec] = {}
        self._burst: dict[str, str | None] = {}
        self._continued: set[str] = set()
        self._model: str | None = None
        self._days: dict[str, _Acc] = {}
        # session-file messages, across streams: key -> (reading, session, dialect, sidechain)
        self._files: dict[str, tuple[_Rec, str | None, str, bool]] = {}
        self._scopes: dict[str | None, _Scope] | None = None
        self._current: str | None = None
        self._first: str | None = None
        self._ending = "none"  # the current stream's ending so far
        self._dialect: str | None = None  # the current stream's dialect

    # -- streams ---------------------------------------------------------------------------
    def start_stream(self) -> None:
        if self._scopes is not None:
            self.end_stream()
        self._scopes = {}
        self._current = self._first = None
        self._ending = "none"
        self._dialect = None
        self._stream_last = {}
        self._burst = {}
        self._continued = set()
        self._model = None

    def add(self, ev: dict[str, Any]) -> None:
        if self._scopes is None:
            self.start_stream()
        assert self._scopes is not None
        sid = ev.get("sessionId")
        if (
            isinstance(sid, str)
            and sid
            and self._first is not None
            and ev.get("dialect") in SESSION_CUMULATIVE
        ):
            # a codex stream is one thread: a later session id is a copy of the parent's
            # session_meta in a sub-agent rollout
            sid = self._first
        if isinstance(sid, str) and sid:
            if self._first is None:
                self._first = sid
                # Usage before the stream named its session belongs to that session.
                early = self._scopes.pop(None, None)
                if early is not None:
                    self._scopes[sid] = early
            self._current = sid
        if self._dialect is None and isinstance(ev.get("dialect"), str):
            self._dialect = ev["dialect"]
        self._outcome(ev)
        dialect = cast(str, ev.get("dialect")) if isinstance(ev.get("dialect"), str) else _UNKNOWN
        if ev.get("kind") == "status" and dialect in SESSION_CUMULATIVE:
            if ev.get("nativeType") == "turn_context" and isinstance(ev.get("text"), str):
                self._model = ev["text"]
            if ev.get("continuation") is True and isinstance(sid, str) and sid:
                self._continued.add(sid)
        if ev.get("kind") != "usage" or not isinstance(ev.get("usage"), dict):
            return
        scope_name = ev.get("usageScope", ev.get("subtype"))
        rec = _Rec(ev["usage"], ev.get("reasoningTokens"), utc_day(ev.get("timestamp")))
        if rec.model == _UNKNOWN and self._model and dialect in SESSION_CUMULATIVE:
            rec.model = self._model
        req = ev.get("requestId")
        if scope_name == "message" and isinstance(req, str):
            mid = ev.get("messageId")
            key = "m:" + mid if isinstance(mid, str) else "r:" + req
            self._file_message(key, rec, dialect, ev.get("sidechain") is True)
            return
        scope = self._scopes.get(self._current)
        if scope is None:
            scope = self._scopes[self._current] = _Scope(dialect)
        if scope_name == "cumulative":
            if dialect in SESSION_CUMULATIVE and self._current is not None:
                ts = ev.get("timestamp")
                self._session_counter(
                    self._current, dialect, rec, ts if isinstance(ts, str) else None
                )
                scope.cover()
                return
            scope.cover()
            at = ev.get("position")
            if scope.counter and at is not None and at == scope.counter_at:
                scope.counter.append(rec)  # one line reporting several models
                return
            if scope.counter and not rec.covers(_sum(scope.counter)):
                scope.closed += scope.counter
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
                self._ending = "empty" if ev.get("emptyResult") is True else "ok"
        elif kind == "error" and sub not in NON_TERMINAL_ERRORS:
            self._ending = "failed"
        elif kind == "error" and ev.get("retry") is True and self._ending == "none":
            self._ending = "retrying"  # failed, unless an outcome follows

    def _file_message(self, key: str, rec: _Rec, dialect: str, sidechain: bool) -> None:
        """A session file's message usage: the best copy of each message counts, whatever
        stream it came in (its session: the stream's current one)."""
        seen = self._files.get(key)
        if seen is None or rec.rank(sidechain) > seen[0].rank(seen[3]):
            session = self._current if self._current is not None else self._first
            self._files[key] = (rec, session, dialect, sidechain)

    def _session_counter(self, sid: str, dialect: str, rec: _Rec, ts: str | None) -> None:
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
            self._session_counters[sid] = _copy_rec(rec)
        elif last is not None and not rec.covers(last):
            # the counter went down within the stream: it was reset, the old one is closed
            self._session_closed.setdefault(sid, []).append(seen)
            self._session_counters[sid] = _copy_rec(rec)
        else:
            seen.merge_max(rec)
            if rec.day != _UNKNOWN:
                seen.day = rec.day  # a counter counts on the day of its last reading

    def _base(self, sid: str, rec: _Rec) -> None:
        base = self._session_base.get(sid)
        if base is None:
            self._session_base[sid] = _copy_rec(rec)
        else:
            base.merge_max(rec)

    def end_stream(self) -> None:
        if self._scopes is None:
            return
        for sid, scope in self._scopes.items():
            name = sid if sid is not None else (self._first or _UNKNOWN)
            for r in scope.readings():
                self._count(name, scope.dialect, r)
        session = self._current or self._first or _UNKNOWN
        if self._ending == "retrying":  # the stream stopped while retrying (as oneshot)
            self._ending = "failed"
        self._total.endings[self._ending] += 1
        if self._ending != "none" or session in self._sessions:
            # a stream with neither usage nor an outcome makes no session row
            self._sessions.setdefault(session, _Acc()).endings[self._ending] += 1
            self._session_dialect.setdefault(session, self._dialect or _UNKNOWN)
        self._scopes = None

    def _count(self, session: str, dialect: str, r: _Rec) -> None:
        self._total.add(r)
        self._models.setdefault(r.model, _Acc()).add(r)
        self._sessions.setdefault(session, _Acc()).add(r)
        self._days.setdefault(r.day, _Acc()).add(r)
        self._session_dialect.setdefault(session, dialect)

    # -- results ---------------------------------------------------------------------------
    def totals(self, *, by_day: bool = False) -> dict[str, Any]:
        """``{"total", "byModel", "bySession"}`` (sorted keys), each as in :func:`usage_totals`;
        with ``by_day``, also ``byDay`` (UTC days, then ``unknown``)."""
        self.end_stream()
        total = _copy(self._total)
        models = {k: _copy(v) for k, v in self._models.items()}
        sessions = {k: _copy(v) for k, v in self._sessions.items()}
        days = {k: _copy(v) for k, v in self._days.items()}
        dialects = dict(self._session_dialect)
        extra: list[tuple[_Rec, str]] = []
        for sid, r in self._session_counters.items():
            counters = [*self._session_closed.get(sid, []), r]
            base = self._session_base.get(sid)
            if base is not None:  # a continuation: its first counter starts at the parent's
                counters[0] = counters[0].minus(base)
            extra += [(c, sid) for c in counters]
        for r, fsid, dialect, _ in self._files.values():
            name = fsid if fsid is not None else _UNKNOWN
            extra.append((r, name))
            dialects.setdefault(name, dialect)
        for r, name in extra:
            total.add(r)
            models.setdefault(r.model, _Acc()).add(r)
            sessions.setdefault(name, _Acc()).add(r)
            days.setdefault(r.day, _Acc()).add(r)
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


def _copy_rec(r: _Rec) -> _Rec:
    out = _Rec({})
    for k in _Rec.__slots__:
        setattr(out, k, getattr(r, k))
    return out


def _copy(a: _Acc) -> _Acc:
    b = _Acc()
    for k in _Acc.__slots__:
        setattr(b, k, getattr(a, k))
    b.endings = dict(a.endings)
    return b


def usage_totals(events: Iterable[dict[str, Any]], *, by_day: bool = False) -> dict[str, Any]:
    """Totals of one stream's events: ``{"total": {...}, "byModel": {MODEL: {...}},
    "bySession": {ID: {...}}}``.

    Each total has ``inputTokens`` (all prompt tokens, cached included), ``outputTokens``
    (reasoning included), ``cachedTokens``, ``reasoningTokens`` (only where some reading
    reported them: the part of ``outputTokens`` that was reasoning), ``costUsd`` (the sum of
    the costs the CLI reported, ``None`` when it reported none) and ``source``: ``"reported"``
    (every counted reading had a cost from the CLI), ``"partial"`` (some had) or ``"absent"``
    (none had; nothing is estimated). ``total`` and ``bySession`` entries also have
    ``endings``: how many streams ended ``ok``, ``empty`` (a success with no answer),
    ``failed`` (on an error event, whatever the exit status) or ``none``. ``bySession``
    entries also name the ``dialect``. Usage is attributed to the session of the latest
    ``sessionId`` seen in the stream (the stream's first one for usage before any). See
    With ``by_day``, ``byDay`` groups them by the UTC day of the events' ``timestamp``
    (``unknown`` for events without one). See docs/usage.md for the rule per dialect.
    """
    fold = UsageFold()
    fold.start_stream()
    for ev in events:
        fold.add(ev)
    return fold.totals(by_day=by_day)
