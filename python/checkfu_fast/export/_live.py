"""Live exports of a running turn: ``stream_turn(..., trajectory=PATH, otel=True)``.

The turn's normalizer is tapped: every event it gives (lean: without ``raw``/``parsed``) is
folded into an :class:`AtifBuilder` and an :class:`OtelEmitter` as it arrives.

The turn's redaction applies (the secrets of the harness's environment never reach a file or
a span).

- ``trajectory=PATH``: after every batch of events that changed the trajectory, the whole ATIF
  document so far is written to ``.<name>.partial`` next to ``PATH`` and renamed over ``PATH``
  (``os.replace``, atomic on POSIX), so ``PATH`` is a valid trajectory at every moment: a runner
  killed with SIGKILL leaves every step seen so far. (A kill during a write can leave the
  ``.partial`` file behind; the next live export to the same path replaces it.)
- ``otel=True``: spans go through the global tracer provider when one is set up (an SDK
  ``TracerProvider``), else through an OTLP/HTTP one from the standard ``OTEL_*`` variables; a
  provider object may be given instead of ``True``. Each span is ended, and so handed to the
  span processor, as soon as the stream shows it closed; the turn's end flushes them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._atif import AtifBuilder

_LEAN_DROP = ("raw", "parsed")
# events that cannot change a trajectory's text (usage alone changes only metrics: written too)
_QUIET_KINDS = ("status",)


class LiveExport:
    """The sink of one turn's events (``feed`` per batch, ``finish`` once)."""

    def __init__(
        self,
        trajectory: str | os.PathLike[str] | None = None,
        otel: Any = False,
        *,
        agent: Mapping[str, Any] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._redact = redact
        self.path = Path(trajectory) if trajectory is not None else None
        self.builder = AtifBuilder(agent=agent) if self.path is not None else None
        self.writes = 0
        self._emitter: Any = None
        self._provider: Any = None
        self._own_provider = False
        if otel is not False and otel is not None:
            self._setup_otel(otel)
        if self.path is not None:
            self._write()  # valid from the start: an empty trajectory

    def _setup_otel(self, otel: Any) -> None:
        from opentelemetry import trace

        from .. import __version__
        from ._otel import OtelEmitter, otlp_provider

        if otel is True:
            provider = trace.get_tracer_provider()
            if not hasattr(provider, "add_span_processor"):  # no SDK provider set up
                provider = otlp_provider(live=True)
                self._own_provider = True
        else:
            provider = otel
        self._provider = provider
        self._emitter = OtelEmitter(provider.get_tracer("checkfu_fast.export", __version__))

    def feed(self, events: list[dict[str, Any]]) -> None:
        changed = False
        for ev in events:
            lean = {k: v for k, v in ev.items() if k not in _LEAN_DROP}
            if self._redact is not None:  # the turn's redaction (secrets of the env)
                from ..oneshot.redact import redact_deep  # (oneshot imports this module)

                lean = redact_deep(lean, self._redact)
            if self.builder is not None:
                self.builder.add(lean)
                changed = changed or lean.get("kind") not in _QUIET_KINDS
            if self._emitter is not None:
                self._emitter.add(lean)
        if changed:
            self._write()

    def finish(self, events: list[dict[str, Any]]) -> None:
        self.feed(events)
        if self.builder is not None:
            self._write()
        if self._emitter is not None:
            self._emitter.close()
            flush = getattr(self._provider, "force_flush", None)
            if callable(flush):
                flush()
            if self._own_provider:
                self._provider.shutdown()

    def _write(self) -> None:
        assert self.path is not None and self.builder is not None
        doc = self.builder.trajectory()
        tmp = self.path.with_name(f".{self.path.name}.partial")
        text = json.dumps(doc, ensure_ascii=False)  # one shot: the C encoder
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, self.path)
        self.writes += 1


class _Tap:
    """A normalizer whose events also go to a :class:`LiveExport`."""

    def __init__(self, inner: Any, sink: LiveExport) -> None:
        self._inner = inner
        self._sink = sink

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self._inner.feed(data)
        self._sink.feed(events)
        return events

    def finish(self) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self._inner.finish()
        self._sink.finish(events)
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def live_export(observer: Any, options: dict[str, Any]) -> LiveExport | None:
    """Take ``trajectory`` and ``otel`` out of a turn's ``options`` and, when either is set,
    tap the turn's observer (its normalizer) with a :class:`LiveExport`. A text-mode turn has
    no events: nothing is tapped (a trajectory file still gets its empty document)."""
    trajectory = options.pop("trajectory", None)
    otel = options.pop("otel", False)
    if trajectory is None and (otel is False or otel is None):
        return None
    sink = LiveExport(trajectory, otel, redact=getattr(observer, "_redact", None))
    normalizer = getattr(observer, "_normalizer", None)
    if normalizer is not None:
        observer._normalizer = _Tap(normalizer, sink)
    elif getattr(observer, "_pending", None) is not None:  # auto: tapped once it is decided
        observer._tap = lambda n: _Tap(n, sink)
    return sink
