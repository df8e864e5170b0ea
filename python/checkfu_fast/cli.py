"""``checkfu-fast`` / ``python -m checkfu_fast``.

Commands:
  normalize [--dialect D] [--reference] [--summary] FILE...   events as JSONL on stdout
  golden [--reference] [DIR]                                   replay golden files, diff precisely
  journal [--reference] FILE...                                validate runner journal records
  dialects                                                     list the dialect names

Exit codes: 0 success, 1 a golden mismatch, a journal violation or an unreadable file,
2 usage error.
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
    args = p.parse_args(argv)
    try:
        if args.command == "normalize":
            return _normalize(args)
        if args.command == "golden":
            return _golden(args)
        if args.command == "journal":
            return _journal(args)
        print("\n".join(DIALECTS))
        return 0
    except (CheckfuError, ValueError, NotImplementedError) as exc:
        print(f"checkfu-fast: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
