"""Instructions per input byte of the Python-facing paths, the module as installed (its
allocator, its build), exact whatever the machine's load: valgrind (cachegrind, no cache
simulation) counts a process that makes one call of a path (after a first, warming call)
and one that makes three, and the difference over two calls is one call's count.

    python3 benches/py_icount.py [--size MB] [PATH...]

PATH: ``split_orjson_loads`` (the floor of ``benches/test_bench_outputs.py``), the lean paths
``normalize_arrow_lean``, ``normalize_dicts_lean``, ``normalize_jsonl_lean`` and the full ones
``normalize_arrow``, ``normalize_dicts``, ``normalize_jsonl`` (default: the floor and the three
lean paths). The corpora are ``benches/corpus.py``'s (8 MiB). A ratio of counts is what the
ratios of the benchmarks would be if every path ran at the same instructions per cycle; it
leaves out what a count does not see (cache misses, page faults, memory bandwidth).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

CALLS = {
    "split_orjson_loads": "[orjson.loads(x) for x in d.split(b'\\n') if x.strip()]",
    "normalize_arrow_lean": "c.normalize_arrow(d, fields='lean')",
    "normalize_dicts_lean": "c.normalize(d, fields='lean')",
    "normalize_jsonl_lean": "c.normalize_jsonl(d, fields='lean')",
    "normalize_arrow": "c.normalize_arrow(d)",
    "normalize_dicts": "c.normalize(d)",
    "normalize_jsonl": "c.normalize_jsonl(d)",
}
DEFAULT = (
    "split_orjson_loads",
    "normalize_arrow_lean",
    "normalize_dicts_lean",
    "normalize_jsonl_lean",
)


def instructions(file: Path, call: str, n: int) -> int:
    code = (
        "import sys, orjson, checkfu_fast as c\n"
        f"d = open({str(file)!r}, 'rb').read()\n"
        f"x = {call}\n"
        "del x\n"
        f"for _ in range({n}):\n"
        f"    x = {call}\n"
        "    del x\n"
    )
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-c", code],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},  # dict probing moves a count by ±0.3 %
    ).stderr  # fmt: skip
    m = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if m is None:
        raise SystemExit(f"no instruction count from valgrind:\n{out}")
    return int(m.group(1).replace(",", ""))


def main() -> None:
    from corpus import make_corpus, make_mixed

    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="*", default=list(DEFAULT))
    p.add_argument("--size", type=int, default=8, help="corpus size in MiB")
    args = p.parse_args()
    unknown = [x for x in args.paths if x not in CALLS]
    if unknown:
        p.error(f"unknown paths {unknown}; choose from {list(CALLS)}")
    per: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("claude", "mixed"):
            data = (
                make_mixed(args.size << 20)
                if name == "mixed"
                else make_corpus(name, args.size << 20)
            )
            file = Path(tmp) / f"{name}.jsonl"
            file.write_bytes(data)
            for path in args.paths:
                one = instructions(file, CALLS[path], 1)
                three = instructions(file, CALLS[path], 3)
                per[(name, path)] = (three - one) / 2 / len(data)
    print("| instructions / input byte (one call) | claude | mixed |")
    print("|---|---:|---:|")
    for path in args.paths:
        print(f"| `{path}` | {per[('claude', path)]:.1f} | {per[('mixed', path)]:.1f} |")
    if "split_orjson_loads" in args.paths:
        print()
        print("| split + `orjson.loads` / path, by count | claude | mixed |")
        print("|---|---:|---:|")
        for path in args.paths:
            if path != "split_orjson_loads":
                cells = [
                    per[(c, "split_orjson_loads")] / per[(c, path)] for c in ("claude", "mixed")
                ]
                print(f"| `{path}` | {cells[0]:.2f}x | {cells[1]:.2f}x |")


if __name__ == "__main__":
    main()
