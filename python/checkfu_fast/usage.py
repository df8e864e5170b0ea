"""Token and cost totals from events/v1 events, right by construction (docs/usage.md).

Only event fields are read (``kind``, ``usage``, ``usageScope``/``subtype``, ``messageId``,
``sessionId``, ``dialect``), never ``parsed``. The rules, per scope:

- ``message`` usage is one API response: lines with the same ``messageId`` (claude repeats it on
  every content-block line, with growing ``output_tokens``) count once, with the largest value of
  each count; usage without a ``messageId`` counts as given.
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

:class:`UsageFold` folds many streams in bounded memory (state per session and per model, the
``messageId`` table of the current stream only); :func:`usage_totals` folds one stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

__all__ = ["SESSION_CUMULATIVE", "UsageFold", "usage_totals"]

# Dialects whose cumulative counter runs across resumes of the same session (formats-2026 X6).
SESSION_CUMULATIVE = frozenset({"codex"})
_COUNTS = ("inputTokens", "outputTokens", "cachedTokens")
_UNKNOWN = "unknown"


class _Rec:
    """One usage reading: token counts (``None`` when the line had none), cost, model."""

    __slots__ = ("cachedTokens", "costUsd", "inputTokens", "model", "outputTokens")
    # set through setattr over _COUNTS in __init__: a count (int or float) or None
    inputTokens: int | float | None
    outputTokens: int | float | None
    cachedTokens: int | float | None

    def __init__(self, usage: dict[str, Any]) -> None:
        model = usage.get("model")
        self.model: str = model if isinstance(model, str) else _UNKNOWN
        known = not usage.get("unknown")
        for k in _COUNTS:
            v = usage.get(k) if known else None
            setattr(self, k, v if _is_count(v) else (0 if known else None))
        cost = usage.get("costUsd")
        self.costUsd = cost if _is_count(cost) else None

    def merge_max(self, other: _Rec) -> None:
        """Componentwise largest value (the same message reported on several lines)."""
        for k in (*_COUNTS, "costUsd"):
            a, b = getattr(self, k), getattr(other, k)
            if a is None or (b is not None and b > a):
                setattr(self, k, b)
        if self.model == _UNKNOWN:
            self.model = other.model

    def minus(self, base: _Rec) -> _Rec:
        """Componentwise ``self - base`` (never below 0): what a counter adds to a baseline."""
        out = _Rec({})
        out.model = self.model
        for k in (*_COUNTS, "costUsd"):
            a, b = getattr(self, k), getattr(base, k)
            setattr(out, k, a if a is None or b is None else max(a - b, 0))
        return out

    def covers(self, earlier: _Rec) -> bool:
        """True when no count went down from ``earlier`` (the same counter, grown)."""
        for k in (*_COUNTS, "costUsd"):
            a, b = getattr(earlier, k), getattr(self, k)
            if a is not None and b is not None and b < a:
                return False
        return True


def _sum(recs: list[_Rec]) -> _Rec:
    out = _Rec({})
    for r in recs:
        for k in (*_COUNTS, "costUsd"):
            a, b = getattr(out, k), getattr(r, k)
            setattr(out, k, b if a is None else a if b is None else a + b)
    return out


def _is_count(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0


class _Acc:
    """A total: token sums, reported cost and how many readings had one."""

    __slots__ = ("cachedTokens", "costUsd", "inputTokens", "outputTokens", "priced", "readings")

    def __init__(self) -> None:
        self.inputTokens: int | float = 0
        self.outputTokens: int | float = 0
        self.cachedTokens: int | float = 0
        self.costUsd: int | float = 0
        self.readings = 0
        self.priced = 0

    def add(self, r: _Rec) -> None:
        self.readings += 1
        for k in _COUNTS:
            v = getattr(r, k)
            if v is not None:
                setattr(self, k, getattr(self, k) + v)
        if r.costUsd is not None:
            self.priced += 1
            self.costUsd += r.costUsd

    def as_dict(self) -> dict[str, Any]:
        if self.priced == 0:
            source = "absent"
        elif self.priced == self.readings:
            source = "reported"
        else:
            source = "partial"
        return {
            "inputTokens": self.inputTokens,
            "outputTokens": self.outputTokens,
            "cachedTokens": self.cachedTokens,
            "costUsd": self.costUsd if self.priced else None,
            "source": source,
        }


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
        self._scopes: dict[str | None, _Scope] | None = None
        self._current: str | None = None
        self._first: str | None = None

    # -- streams ---------------------------------------------------------------------------
    def start_stream(self) -> None:
        if self._scopes is not None:
            self.end_stream()
        self._scopes = {}
        self._current = self._first = None
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
        dialect = cast(str, ev.get("dialect")) if isinstance(ev.get("dialect"), str) else _UNKNOWN
        if ev.get("kind") == "status" and dialect in SESSION_CUMULATIVE:
            if ev.get("nativeType") == "turn_context" and isinstance(ev.get("text"), str):
                self._model = ev["text"]
            if ev.get("continuation") is True and isinstance(sid, str) and sid:
                self._continued.add(sid)
        if ev.get("kind") != "usage" or not isinstance(ev.get("usage"), dict):
            return
        scope_name = ev.get("usageScope", ev.get("subtype"))
        rec = _Rec(ev["usage"])
        if rec.model == _UNKNOWN and self._model and dialect in SESSION_CUMULATIVE:
            rec.model = self._model
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
        self._scopes = None

    def _count(self, session: str, dialect: str, r: _Rec) -> None:
        self._total.add(r)
        self._models.setdefault(r.model, _Acc()).add(r)
        self._sessions.setdefault(session, _Acc()).add(r)
        self._session_dialect.setdefault(session, dialect)

    # -- results ---------------------------------------------------------------------------
    def totals(self) -> dict[str, Any]:
        """``{"total", "byModel", "bySession"}`` (sorted keys), each as in :func:`usage_totals`."""
        self.end_stream()
        total = _copy(self._total)
        models = {k: _copy(v) for k, v in self._models.items()}
        sessions = {k: _copy(v) for k, v in self._sessions.items()}
        for sid, r in self._session_counters.items():
            counters = [*self._session_closed.get(sid, []), r]
            base = self._session_base.get(sid)
            if base is not None:  # a continuation: its first counter starts at the parent's
                counters[0] = counters[0].minus(base)
            for c in counters:
                total.add(c)
                models.setdefault(c.model, _Acc()).add(c)
                sessions.setdefault(sid, _Acc()).add(c)
        by_session = {}
        for k in sorted(sessions):
            d = sessions[k].as_dict()
            d["dialect"] = self._session_dialect.get(k, _UNKNOWN)
            by_session[k] = d
        return {
            "total": total.as_dict(),
            "byModel": {k: models[k].as_dict() for k in sorted(models)},
            "bySession": by_session,
        }


def _copy_rec(r: _Rec) -> _Rec:
    out = _Rec({})
    for k in _Rec.__slots__:
        setattr(out, k, getattr(r, k))
    return out


def _copy(a: _Acc) -> _Acc:
    b = _Acc()
    for k in _Acc.__slots__:
        setattr(b, k, getattr(a, k))
    return b


def usage_totals(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Totals of one stream's events: ``{"total": {...}, "byModel": {MODEL: {...}},
    "bySession": {ID: {...}}}``.

    Each total has ``inputTokens`` (all prompt tokens, cached included), ``outputTokens``
    (reasoning included), ``cachedTokens``, ``costUsd`` (the sum of the costs the CLI reported,
    ``None`` when it reported none) and ``source``: ``"reported"`` (every counted reading had a
    cost from the CLI), ``"partial"`` (some had) or ``"absent"`` (none had; nothing is
    estimated). ``bySession`` entries also name the ``dialect``. Usage is attributed to the
    session of the latest ``sessionId`` seen in the stream (the stream's first one for usage
    before any). See docs/usage.md for the rule per dialect.
    """
    fold = UsageFold()
    fold.start_stream()
    for ev in events:
        fold.add(ev)
    return fold.totals()
