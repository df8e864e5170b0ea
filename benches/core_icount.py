"""Instructions per input byte of the core's paths (``examples/core_bench.rs``), exact whatever
the machine's load: valgrind (cachegrind, no cache simulation) counts each path's one round,
minus a run that only reads the file.

    cargo build --release --example core_bench --features arrow
    python3 benches/core_icount.py target/release/examples/core_bench FILE...

FILE: the bench corpora written out (``benches/corpus.py``: ``make_corpus("claude", 8 << 20)``,
``make_mixed(8 << 20)``). Prints one row per path and, for the writers, their share of the
path's instructions (what the path costs beyond the core's ``normalize``, which parses and maps
every line and writes nothing).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PATHS = ("parse", "normalize", "fold", "jsonl", "jsonl_lean", "arrow", "arrow_lean")
WRITERS = ("jsonl", "jsonl_lean", "arrow", "arrow_lean")


def instructions(binary: str, file: str, only: str) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         binary, file, "--rounds", "1", "--only", only],
        capture_output=True, text=True, check=True,
    ).stderr  # fmt: skip
    m = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if m is None:
        raise SystemExit(f"no instruction count from valgrind:\n{out}")
    return int(m.group(1).replace(",", ""))


def main() -> None:
    binary, files = sys.argv[1], sys.argv[2:]
    per: dict[tuple[str, str], float] = {}
    for f in files:
        size = Path(f).stat().st_size
        base = instructions(binary, f, "none")
        for p in PATHS:
            per[(f, p)] = (instructions(binary, f, p) - base) / size
    names = [Path(f).stem for f in files]
    print("| instructions / input byte | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(files))
    for p in PATHS:
        print(f"| `{p}` | " + " | ".join(f"{per[(f, p)]:.1f}" for f in files) + " |")
    print()
    print("| writer's share (path - `normalize`) / path | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(files))
    for p in WRITERS:
        cells = [1 - per[(f, "normalize")] / per[(f, p)] for f in files]
        print(f"| `{p}` | " + " | ".join(f"{c:.0%}" for c in cells) + " |")


if __name__ == "__main__":
    main()
