"""Markdown table of the normalize benchmarks.

    python3 benches/report.py                 # run the benchmarks, then print the table
    python3 benches/report.py --json b.json   # only read an existing --benchmark-json file

Columns: corpus, size, path, MB/s from the median round and from the fastest round, ratio of the
median MB/s vs the reference and vs the orjson baseline on the same corpus (> 1 means faster),
and whether the events equal the reference's.
The project targets: native >= 2x reference and >= 1.5x orjson baseline.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS_ORDER = ("claude", "cursor", "codex", "north", "canary", "solweb", "mixed")
PATH_ORDER = ("native", "native_chunked_64k", "orjson_baseline", "reference")
TARGETS = {"reference": 2.0, "orjson_baseline": 1.5}


def run(json_path: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(ROOT / "benches"),
        "--benchmark-enable",
        f"--benchmark-json={json_path}",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
    ]
    print("$", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, cwd=ROOT, check=True, stdout=sys.stderr)


def table(doc: dict) -> str:
    rows: dict[tuple[str, str], dict] = {}
    for b in doc["benchmarks"]:
        info = b["extra_info"]
        if "MB" not in info or str(b.get("group", "")).startswith(("outputs-", "observe-")):
            continue  # the normalize groups only (a `make bench` run holds every bench)
        corpus = info.get("corpus") or b["params"]["corpus"]
        path = info.get("path") or b["params"]["path"]
        rows[(corpus, path)] = {
            "mbs": info["MB"] / b["stats"]["median"],
            "MB": info["MB"],
            "best": info["MB"] / b["stats"]["min"],
            "agrees": info.get("agrees"),
        }

    def key(k: tuple[str, str]) -> tuple[int, int, str, str]:
        c, p = k
        return (
            CORPUS_ORDER.index(c) if c in CORPUS_ORDER else 99,
            PATH_ORDER.index(p) if p in PATH_ORDER else 99,
            c,
            p,
        )

    out = [
        "| corpus | MB | path | MB/s (median) | MB/s (best) | vs reference | vs orjson baseline "
        "| agrees |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | :---: |",
    ]
    misses = []
    for c, p in sorted(rows, key=key):
        r = rows[(c, p)]
        ratios = []
        for base in ("reference", "orjson_baseline"):
            b = rows.get((c, base))
            if b is None:
                ratios.append("-")
                continue
            ratio = r["mbs"] / b["mbs"]
            ratios.append(f"{ratio:.2f}x")
            if p.startswith("native") and ratio < TARGETS[base]:
                misses.append(f"{c}/{p}: {ratio:.2f}x vs {base} (target {TARGETS[base]}x)")
        agrees = {True: "yes", False: "**NO**", None: "?"}[r["agrees"]]
        out.append(
            f"| {c} | {r['MB']:.1f} | {p} | {r['mbs']:.1f} | {r['best']:.1f} | {ratios[0]} "
            f"| {ratios[1]} | {agrees} |"
        )
    machine = doc.get("machine_info", {})
    out.append("")
    out.append(
        f"python {machine.get('python_version', '?')}, "
        f"{machine.get('cpu', {}).get('brand_raw', machine.get('processor', '?'))}, "
        f"{doc.get('datetime', '')}"
    )
    if misses:
        out.append("")
        out.append("Below target: " + "; ".join(misses))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", type=Path, help="read this --benchmark-json file instead of running")
    ap.add_argument(
        "--out",
        type=Path,
        default=Path("/tmp/b.json"),
        help="where the run writes its json (default /tmp/b.json)",
    )
    args = ap.parse_args(argv)
    path = args.json
    if path is None:
        path = args.out
        run(path)
    print(table(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
