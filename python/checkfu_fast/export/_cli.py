"""``checkfu-fast export --format atif|otel|html FILE|DIR|- [-o OUT]`` (docs/export.md).

Each input is streamed through :class:`checkfu_fast.Normalizer` in 1 MiB chunks and each event
(lean: without ``raw`` and ``parsed``, which no export reads) goes at once to its session's
:class:`AtifBuilder` or :class:`OtelEmitter`, across the inputs (a claude session directory's
sub-agent files join their parent session); no event is kept. Then:

- ``atif``: one trajectory per session: with ``-o DIR`` (an existing directory, or a path
  ending in ``/``, or several sessions) ``DIR/<session>.json`` each; with ``-o FILE`` and one
  session that file; without ``-o`` one JSON document per line on stdout;
- ``html``: one page per session, likewise (``<session>.html``; stdout only for one session);
- ``otel``: the spans go to the OTLP/HTTP endpoint of the standard ``OTEL_*`` variables; the
  count goes to stderr; exit 1 when the endpoint refused or could not be reached.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from .. import Normalizer
from ..inputs import open_input
from ..paths import empty_dirs, expand
from ..progress import Progress, wanted
from ..usage import SESSION_CUMULATIVE

CHUNK = 1 << 20
_LEAN_DROP = ("raw", "parsed")


def add_arguments(p: Any) -> None:
    p.add_argument("paths", nargs="+", metavar="FILE|DIR", help="stream file, directory, or -")
    p.add_argument(
        "--format",
        choices=("atif", "otel", "html"),
        required=True,
        help="atif (Harbor trajectories), otel (OTLP spans), html (a transcript page)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="a file (one session) or a directory (one file per session); default stdout",
    )
    p.add_argument("--agent-name", metavar="NAME", help="the agent name to report (atif, html)")


def safe_name(session: str) -> str:
    """A file name for a session id (path separators and odd characters replaced)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", session).strip(".") or "session"
    return name[:200]


class _Router:
    """Each event to its session's sink as it comes, across the inputs: an event belongs to its
    ``sessionId``, else to the latest session named before it in its input (events before the
    first name wait for it: the input's first session; none named: the input's file stem).
    A codex stream is one thread (``split_sessions``' rule)."""

    def __init__(self, make: Any) -> None:
        self.make = make
        self.sinks: dict[str, Any] = {}

    def sink(self, sid: str) -> Any:
        s = self.sinks.get(sid)
        if s is None:
            s = self.sinks[sid] = self.make()
        return s

    def read(self, name: str, dialect: Any, progress: Progress) -> None:
        n = Normalizer(dialect)
        current: str | None = None
        early: list[dict[str, Any]] = []

        def route(evs: list[dict[str, Any]]) -> None:
            nonlocal current
            for ev in evs:
                lean = {k: v for k, v in ev.items() if k not in _LEAN_DROP}
                sid = lean.get("sessionId")
                if current is not None and lean.get("dialect") in SESSION_CUMULATIVE:
                    sid = current
                if isinstance(sid, str) and sid:
                    if current is None:
                        for e in early:
                            self.sink(sid).add(e)
                        early.clear()
                    current = sid
                if current is None:
                    early.append(lean)
                else:
                    self.sink(current).add(lean)

        src = sys.stdin.buffer if name == "-" else open_input(name)
        try:
            while chunk := src.read(CHUNK):
                progress.read(len(chunk))
                route(n.feed(chunk))
            route(n.finish())
        finally:
            if name != "-":
                src.close()
        if early:
            stem = "stdin" if name == "-" else Path(name).name.split(".")[0]
            for e in early:
                self.sink(stem).add(e)


def _write(path: Path, text: str) -> None:
    """Write atomically (a temp file in the same directory, renamed over the target)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(args: argparse.Namespace) -> int:
    status = 0
    for d in empty_dirs(args.paths):
        print(f"checkfu-fast: {d}: no stream files (*.jsonl, *.json, ...) in it", file=sys.stderr)
        status = 1
    if args.format == "otel" and args.output:
        raise ValueError("-o is not used with --format otel (set OTEL_EXPORTER_OTLP_ENDPOINT)")
    names = list(expand(args.paths))
    progress = Progress(names, wanted(getattr(args, "progress", None)))
    agent = {"name": args.agent_name} if args.agent_name else None
    if args.format == "otel":
        from ._otel import OtelEmitter, otlp_provider

        provider = otlp_provider()
        from .. import __version__

        tracer = provider.get_tracer("checkfu_fast.export", __version__)
        router = _Router(lambda: OtelEmitter(tracer, agent_name=args.agent_name))
    else:
        from ._atif import AtifBuilder

        router = _Router(lambda: AtifBuilder(agent=agent))
    try:
        for name in names:
            try:
                router.read(name, args.dialect, progress)
            except OSError as exc:
                progress.clear()
                print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
                status = 1
            progress.file_done(name)
        progress.close()
    except BaseException:
        if args.format == "otel":
            provider.shutdown()
        raise
    if args.format == "otel":
        return max(status, _otel(router.sinks, provider))
    if not router.sinks:
        print("checkfu-fast: nothing to export (no input events)", file=sys.stderr)
        return 1
    return max(status, _files(args, router.sinks))


def _files(args: argparse.Namespace, sessions: dict[str, Any]) -> int:
    from ._html import render_trajectory

    ext = ".json" if args.format == "atif" else ".html"

    def render(builder: Any, lines: bool = False) -> str:
        doc = builder.trajectory()
        if args.format == "html":
            return render_trajectory(doc)
        if lines:
            return json.dumps(doc, ensure_ascii=False) + "\n"
        return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"

    out = args.output
    if out is None:
        if args.format == "html" and len(sessions) > 1:
            raise ValueError(f"{len(sessions)} sessions: give -o DIR for one page per session")
        for builder in sessions.values():
            sys.stdout.write(render(builder, lines=True))
        sys.stdout.flush()
        return 0
    target = Path(out)
    as_dir = target.is_dir() or out.endswith(("/", os.sep)) or len(sessions) > 1
    if as_dir:
        target.mkdir(parents=True, exist_ok=True)
        used: set[str] = set()
        for sid, builder in sessions.items():
            name = safe_name(sid)
            while name in used:
                name += "_"
            used.add(name)
            _write(target / f"{name}{ext}", render(builder))
        print(f"checkfu-fast: {len(sessions)} session(s) written to {target}/", file=sys.stderr)
    else:
        (builder,) = sessions.values()
        _write(target, render(builder))
    return 0


def _otel(sessions: dict[str, Any], provider: Any) -> int:
    spans = traces = 0
    for emitter in sessions.values():
        emitter.close()
        spans += emitter.spans
        traces += emitter.trace_id is not None
    provider.shutdown()
    exporter = provider._checkfu_exporter
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"
    )
    print(
        f"checkfu-fast: {exporter.sent} of {spans} span(s) in {traces} trace(s) sent to "
        f"{endpoint}" + (f"; {exporter.failed} failed" if exporter.failed else ""),
        file=sys.stderr,
    )
    if not sessions:
        print("checkfu-fast: nothing to export (no input events)", file=sys.stderr)
        return 1
    return 1 if exporter.failed or exporter.sent < spans else 0
