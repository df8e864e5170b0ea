"""``checkfu-fast`` / ``python -m checkfu_fast``.

Commands:
  normalize [--dialect D] [--reference] [--summary] FILE...   events as JSONL on stdout
  golden [--reference] [DIR]                                   replay golden files, diff precisely
  journal [--reference] FILE...                                validate runner journal records
  dialects                                                     list the dialect names
  vectors [--live] FILE...                                     replay oneshot-v1 vector files
  run CONTRACT --prompt-file P [--state S] [--output-schema O] run one oneshot-v1 turn live

Exit codes: 0 success, 1 a golden/vector mismatch, a journal violation, an unreadable file or
a turn that did not finish, 2 usage error or a rejected contract / vector file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

from . import DIALECTS, CheckfuError, Normalizer, golden, reference

CHUNK = 1 << 20

try:
    import orjson

    def _dumps(ev: dict[str, Any]) -> bytes:
        return orjson.dumps(ev, option=orjson.OPT_APPEND_NEWLINE)

except ImportError:  # pragma: no cover - orjson is optional

    def _dumps(ev: dict[str, Any]) -> bytes:
        return (json.dumps(ev, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


def _stream(
    src: BinaryIO, out: BinaryIO, args: argparse.Namespace, source: str | None, counts: Counter[str]
) -> None:
    factory = reference.Normalizer if args.reference else Normalizer
    n = factory(
        args.dialect,
        max_line_bytes=args.max_line_bytes,
        max_depth=args.max_depth,
        max_nodes=args.max_nodes,
    )

    def write(events: list[dict[str, Any]]) -> None:
        for ev in events:
            counts[f"{ev['kind']}/{ev['subtype']}"] += 1
            if source is not None:
                ev["source"] = source
            out.write(_dumps(ev))

    while chunk := src.read(CHUNK):
        write(n.feed(chunk))
    write(n.finish())


def _normalize(args: argparse.Namespace) -> int:
    reference.check_options(args.dialect, args.max_line_bytes, args.max_depth, args.max_nodes)
    out = sys.stdout.buffer
    counts: Counter[str] = Counter()
    status = 0
    many = len(args.files) > 1
    for name in args.files:
        try:
            if name == "-":
                _stream(sys.stdin.buffer, out, args, "-" if many else None, counts)
            else:
                with open(name, "rb") as f:
                    _stream(f, out, args, name if many else None, counts)
        except OSError as exc:
            print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
    out.flush()
    if args.summary:
        total = sum(counts.values())
        print(f"{total} events from {len(args.files)} file(s)", file=sys.stderr)
        for key, n in sorted(counts.items()):
            print(f"  {n:6d}  {key}", file=sys.stderr)
    return status


def _golden(args: argparse.Namespace) -> int:
    from . import normalize

    fn = reference.normalize if args.reference else normalize
    failed = total = 0
    for dialect, inp, exp in golden.cases(Path(args.dir)):
        total += 1
        if not exp.exists():
            print(f"MISSING {inp} (no {exp.name})")
            failed += 1
            continue
        diffs = golden.check(dialect, inp, exp, fn)
        print(f"{'ok  ' if not diffs else 'FAIL'} {dialect}/{inp.name}")
        for d in diffs[:50]:
            print(f"    {d}")
        failed += bool(diffs)
    print(f"{total - failed} passed, {failed} failed")
    return 1 if failed or not total else 0


def _journal(args: argparse.Namespace) -> int:
    from . import validate_journal

    fn = reference.validate_journal if args.reference else validate_journal
    status = 0
    for name in args.files:
        try:
            data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        except OSError as exc:
            print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        violations = fn(data)
        for v in violations:
            kind = f" ({v['kind']})" if v["kind"] is not None else ""
            print(
                f"{name}:{v['line']}: {v['pointer'] or '/'}: {v['message']} [{v['keyword']}]{kind}"
            )
        records = sum(1 for line in data.split(b"\n") if line.strip(b" \t\r\x0b\x0c"))
        unknown = sum(v["keyword"] == "unknown_kind" for v in violations)
        bad = len({v["line"] for v in violations})
        print(
            f"{name}: {records} records, {bad} with violations "
            f"({len(violations)} violations, {unknown} unknown kinds)",
            file=sys.stderr,
        )
        status = status or (1 if violations else 0)
    return status


def _vectors(args: argparse.Namespace) -> int:
    from .oneshot import check_vector_file

    status = 0
    names: list[str] = []
    for name in args.files:  # a directory means the *.json files in it
        path = Path(name)
        names += sorted(map(str, path.glob("*.json"))) if path.is_dir() else [name]
    for name in names:
        report = check_vector_file(name, live=args.live)
        for line in report.lines():
            print(line)
        if report.error is not None:
            status = 2
        elif not report.ok:
            status = max(status, 1)
    return status


def _read_json(path: str, what: str) -> Any:
    from .oneshot.contract import load_json

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CheckfuError(f"{what} {path}: {exc.strerror or exc}") from None
    return load_json(data, f"{what} {path}")


def _run(args: argparse.Namespace) -> int:
    import os
    import signal
    import threading

    from .oneshot import TurnRequest, minimal_environment, stream_turn, validate_contract

    contract = validate_contract(_read_json(args.contract, "contract"))
    try:
        prompt = Path(args.prompt_file).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckfuError(f"prompt file {args.prompt_file}: {exc}") from None
    request = TurnRequest(
        prompt,
        _read_json(args.state, "state") if args.state else None,
        _read_json(args.output_schema, "output schema") if args.output_schema else None,
    )
    extra = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq:
            if name not in os.environ:
                continue
            value = os.environ[name]
        extra[name] = value

    # SIGINT/SIGTERM: cancel the turn and still print its ending and state (a second one, or
    # one before the turn started, interrupts at once; the stream's cleanup still runs)
    stopped: list[int] = []
    running: list = []  # the TurnStream, once it exists

    def stop(signum: int, frame: object) -> None:
        if stopped or not running:
            raise KeyboardInterrupt
        stopped.append(signum)
        running[0].cancel()

    main_thread = threading.current_thread() is threading.main_thread()
    previous = (
        {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        if main_thread
        else {}
    )
    out = sys.stdout.buffer
    last = None
    try:
        with stream_turn(
            contract,
            request,
            env=minimal_environment(extra),
            deadline_s=args.deadline,
            output_cap=args.output_cap,
            dialect=args.dialect,
            implementation="reference" if args.reference else "native",
            entrypoint=args.entrypoint,
        ) as stream:
            running.append(stream)
            for obs in stream:  # each observation as soon as the harness caused it
                out.write(_dumps(obs))
                out.flush()
                last = obs
            result = stream.result
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out.write(_dumps({"resulting_state": result.resulting_state}))
    out.flush()
    if args.state_out:
        Path(args.state_out).write_text(json.dumps(result.resulting_state) + "\n", "utf-8")
    if stopped:
        return 128 + stopped[0]
    return 0 if last is not None and last["type"] == "observation.finished" else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="checkfu-fast", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("normalize", help="normalize agent streams to events/v1 JSONL")
    n.add_argument("files", nargs="+", metavar="FILE", help="input file, or - for stdin")
    n.add_argument("--dialect", default="auto", choices=["auto", *DIALECTS])
    n.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    n.add_argument("--summary", action="store_true", help="print event counts to stderr")
    n.add_argument("--max-line-bytes", type=int, default=64 << 20)
    n.add_argument("--max-depth", type=int, default=64)
    n.add_argument("--max-nodes", type=int, default=1_000_000)
    g = sub.add_parser("golden", help="replay golden files and diff")
    g.add_argument("dir", nargs="?", default="vectors/events")
    g.add_argument("--reference", action="store_true")
    j = sub.add_parser("journal", help="validate runner journal records against the schema")
    j.add_argument("files", nargs="+", metavar="FILE", help="journal file, or - for stdin")
    j.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    sub.add_parser("dialects", help="list dialect names")
    v = sub.add_parser("vectors", help="replay oneshot-v1 author-kit vector files and diff")
    v.add_argument("files", nargs="+", metavar="FILE", help="vector file, or a directory of them")
    v.add_argument("--live", action="store_true", help="run the stub harness for real")
    r = sub.add_parser("run", help="run one oneshot-v1 turn: observations JSONL, then the state")
    r.add_argument("contract", metavar="CONTRACT.json")
    r.add_argument("--prompt-file", required=True, metavar="P")
    r.add_argument("--state", metavar="S.json", help="the prior state (resume)")
    r.add_argument("--output-schema", metavar="O.json", help="the answer's JSON schema")
    r.add_argument("--state-out", metavar="FILE", help="also write the new state here")
    r.add_argument("--dialect", default="auto", choices=["auto", *DIALECTS])
    r.add_argument("--deadline", type=float, default=600.0, help="seconds (default 600)")
    r.add_argument("--output-cap", type=int, default=64 << 20, help="bytes (default 64 MiB)")
    r.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="pass this variable to the harness (repeatable); nothing else is inherited",
    )
    r.add_argument("--entrypoint", help="run this binary instead of the contract's entrypoint")
    r.add_argument("--reference", action="store_true", help="use the pure-Python normalizer")
    args = p.parse_args(argv)
    try:
        if args.command == "normalize":
            return _normalize(args)
        if args.command == "golden":
            return _golden(args)
        if args.command == "journal":
            return _journal(args)
        if args.command == "vectors":
            return _vectors(args)
        if args.command == "run":
            return _run(args)
        print("\n".join(DIALECTS))
        return 0
    except (CheckfuError, ValueError, NotImplementedError) as exc:
        print(f"checkfu-fast: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
