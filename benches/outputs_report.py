"""Ratios table for ``benches/test_bench_outputs.py`` and Python memory per input MB.

    python3 benches/outputs_report.py out.json     # table from a --benchmark-json file
    python3 benches/outputs_report.py --memory     # tracemalloc: dicts vs JSONL vs Arrow

MB/s is input MB over the median round (``--best``: the fastest round, the better estimate
of uncontended speed on a shared machine). Ratios compare medians on the same corpus in the same
run (> 1: faster). Memory: ``tracemalloc`` (Python's allocator only; the core's own buffers
are Rust allocations and are not counted): what the result keeps alive and the peak during the
call, per MB of input. The Arrow result's buffers are Rust allocations too: they are counted
apart (``get_total_buffer_size`` of the pyarrow table, imported zero-copy).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

RATIOS = (
    ("normalize_arrow_lean", "split_orjson_loads", ">= 2.0"),
    ("normalize_dicts_lean", "split_orjson_loads", ">= 1.2"),
    ("normalize_jsonl_lean", "split_orjson_loads", ">= 1.5"),
    ("normalize_dicts", "split_orjson_loads", ""),
    ("normalize_jsonl", "split_orjson_loads", ""),
    ("normalize_jsonl", "normalize_orjson_dumps", ""),
    ("normalize_jsonl", "normalize_dicts", ""),
    ("normalizer_64k", "normalize_dicts", ""),
    ("normalizer_jsonl_64k", "normalize_jsonl", ""),
    ("files_jobs2", "files_jobs1", ""),
    ("files_out_jobs2", "files_out_jobs1", ""),
    ("normalize_arrow", "normalize_dicts", ""),
    ("normalize_arrow_table", "normalize_dicts", ""),
    ("bigfile_jobs2", "bigfile_jobs1", ""),
    ("files_arrow_jobs2", "files_arrow_jobs1", ""),
)


def table(doc: dict, stat: str = "median") -> str:
    mbs: dict[tuple[str, str], float] = {}
    for b in doc["benchmarks"]:
        if not str(b.get("group", "")).startswith("outputs-"):
            continue  # a whole-suite run (`make bench`) holds the other benches too
        info = b["extra_info"]
        mbs[(info["corpus"], info["path"])] = info["MB"] / b["stats"][stat]
    corpora = sorted({c for c, _ in mbs}, key=lambda c: (c != "claude", c))
    paths = list(dict.fromkeys(p for _, p in mbs))
    out = ["| path | " + " | ".join(f"{c} MB/s" for c in corpora) + " |"]
    out.append("|---|" + "---:|" * len(corpora))
    for p in paths:
        out.append(f"| `{p}` | " + " | ".join(f"{mbs.get((c, p), 0):.0f}" for c in corpora) + " |")
    out += ["", "| ratio | " + " | ".join(corpora) + " | target |"]
    out.append("|---|" + "---:|" * len(corpora) + "---|")
    for a, b, target in RATIOS:
        cells = []
        for c in corpora:
            if (c, a) in mbs and (c, b) in mbs:
                cells.append(f"{mbs[(c, a)] / mbs[(c, b)]:.2f}x")
            else:
                cells.append("-")
        out.append(f"| `{a}` / `{b}` | " + " | ".join(cells) + f" | {target} |")
    return "\n".join(out)


def memory(size: int = 8 << 20) -> str:
    import checkfu_fast
    from corpus import make_corpus, make_mixed

    rows = [
        "| corpus | result | fields | Python, kept alive per input MB "
        "| Python, peak per input MB | Arrow buffers per input MB |"
    ]
    rows.append("|---|---|---|---:|---:|---:|")
    for name in ("claude", "mixed"):
        data = make_mixed(size) if name == "mixed" else make_corpus(name, size)
        mb = len(data)  # bytes per input byte = MB per input MB
        for label, fn in (
            ("dicts (`normalize`)", checkfu_fast.normalize),
            ("JSONL (`normalize_jsonl`)", checkfu_fast.normalize_jsonl),
            ("Arrow (`normalize_arrow`)", checkfu_fast.normalize_arrow),
        ):
            for fields in ("all", "lean"):
                gc.collect()
                tracemalloc.start()
                result = fn(data, fields=fields)
                kept, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
                native = "-"
                if label.startswith("Arrow"):
                    import pyarrow as pa

                    native = f"{pa.table(result).get_total_buffer_size() / mb:,.2f}"
                del result
                rows.append(
                    f"| {name} | {label} | {fields} | {kept / mb:,.2f} | {peak / mb:,.2f} "
                    f"| {native} |"
                )
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("json", nargs="?", type=Path)
    p.add_argument("--memory", action="store_true")
    p.add_argument("--best", action="store_true", help="fastest round instead of the median")
    args = p.parse_args()
    if args.json:
        print(table(json.loads(args.json.read_text()), "min" if args.best else "median"))
    if args.memory:
        print(memory())


if __name__ == "__main__":
    main()
