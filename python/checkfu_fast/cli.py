"""``checkfu-fast`` / ``python -m checkfu_fast``.

Commands:
  normalize [--dialect D] [--jobs N] [--reference] [--summary] FILE...
                                                               events as JSONL on stdout
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
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, BinaryIO

from . import DIALECTS, CheckfuError, Normalizer, golden, reference

CHUNK = 1 << 20


def _dumps(ev: dict[str, Any]) -> bytes:
    """One JSONL line, the bytes ``normalize_jsonl`` writes (stdlib json: the output does not
    depend on which optional packages are installed)."""
    return reference.dumps_jsonl([ev])


def _stream(
    fd: int, out: BinaryIO, args: argparse.Namespace, source: str | None, counts: Counter[str]
) -> None:
    """Normalize what can be read from ``fd`` as it arrives: each read returns what is
    available (a pipe gives its lines as they are written) and its events are written and
    flushed at once. Without ``--reference``/``--summary`` the JSONL is written by the core."""
    budgets = {
        "max_line_bytes": args.max_line_bytes,
        "max_depth": args.max_depth,
        "max_nodes": args.max_nodes,
    }
    if args.reference or args.summary:
        n: Any = (reference.Normalizer if args.reference else Normalizer)(args.dialect, **budgets)

        def feed(chunk: bytes | None) -> bytes:
            events = n.feed(chunk) if chunk is not None else n.finish()
            for ev in events:
                counts[f"{ev['kind']}/{ev['subtype']}"] += 1
                if source is not None:
                    ev["source"] = source
            return reference.dumps_jsonl(events)

    else:
        native = Normalizer(args.dialect, **budgets, source=source)

        def feed(chunk: bytes | None) -> bytes:
            return native.feed_jsonl(chunk) if chunk is not None else native.finish_jsonl()

    while chunk := os.read(fd, CHUNK):
        if data := feed(chunk):
            out.write(data)
            out.flush()
    out.write(feed(None))
    out.flush()


def _parallel(args: argparse.Namespace, out: BinaryIO, many: bool) -> int:
    """``--jobs N``: files normalized N at a time in parallel by the core, written in order
    (the same bytes as one at a time)."""
    from . import _files

    status = 0
    budgets = (args.max_line_bytes, args.max_depth, args.max_nodes)
    for i in range(0, len(args.files), args.jobs):
        batch = args.files[i : i + args.jobs]
        results = _files(batch, None, args.dialect, budgets, args.jobs, tag_source=many)
        for name, r in zip(batch, results, strict=True):
            if isinstance(r, tuple):
                errno, message = r
                text = os.strerror(errno) if errno is not None else message
                print(f"checkfu-fast: {name}: {text}", file=sys.stderr)
                status = 1
            else:
                out.write(r)
                out.flush()
    return status


def _quiet_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover
        pass


def _normalize(args: argparse.Namespace) -> int:
    reference.check_options(args.dialect, args.max_line_bytes, args.max_depth, args.max_nodes)
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    out = sys.stdout.buffer
    counts: Counter[str] = Counter()
    status = 0
    many = len(args.files) > 1
    try:
        if args.jobs > 1 and not (args.reference or args.summary or "-" in args.files):
            status = _parallel(args, out, many)
        else:
            for name in args.files:
                try:
                    if name == "-":
                        _stream(sys.stdin.buffer.fileno(), out, args, "-" if many else None, counts)
                    else:
                        with open(name, "rb") as f:
                            _stream(f.fileno(), out, args, name if many else None, counts)
                except BrokenPipeError:
                    raise
                except OSError as exc:
                    print(f"checkfu-fast: {name}: {exc.strerror or exc}", file=sys.stderr)
                    status = 1
        out.flush()
    except BrokenPipeError:
        # the reader went away (e.g. `| head`): stop quietly, as a filter does
        _quiet_stdout()
        return 0
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

    from .oneshot import TurnRequest, minimal_environment, run_turn, validate_contract

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
    result = run_turn(
        contract,
        request,
        env=minimal_environment(extra),
        deadline_s=args.deadline,
        output_cap=args.output_cap,
        dialect=args.dialect,
        implementation="reference" if args.reference else "native",
        entrypoint=args.entrypoint,
    )
    out = sys.stdout.buffer
    for obs in result.observations:
        out.write(_dumps(obs))
    out.write(_dumps({"resulting_state": result.resulting_state}))
    out.flush()
    if args.state_out:
        Path(args.state_out).write_text(json.dumps(result.resulting_state) + "\n", "utf-8")
    return 0 if result.observations[-1]["type"] == "observation.finished" else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="checkfu-fast", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    n = sub.add_parser("normalize", help="normalize agent streams to events/v1 JSONL")
    n.add_argument("files", nargs="+", metavar="FILE", help="input file, or - for stdin")
    n.add_argument("--dialect", default="auto", choices=["auto", *DIALECTS])
    n.add_argument("--reference", action="store_true", help="use the pure-Python reference")
    n.add_argument("--summary", action="store_true", help="print event counts to stderr")
    n.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="normalize N files at a time in parallel (same output; default 1)",
    )
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
        _quiet_stdout()
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
