"""``checkfu-fast normalize --jobs N`` as a user runs it: wall time, peak RSS, a hashing control.

    PYTHONPATH=python python3 benches/cli_jobs.py [--file-mb 24] [--rounds 3] [--dir-mb 1024]

1. Speed: four files (the claude and mixed bench corpora, ``--file-mb`` each, two of each),
   ``checkfu-fast normalize --jobs 1`` and ``--jobs 2`` with the JSONL to ``/dev/null``, in
   fresh processes, alternated, the fastest of ``--rounds`` each; beside them, in the same run,
   the same four files hashed (SHA-256, which releases the GIL) on one and on two threads: what
   two cores gave at that moment on this machine (1.0x when another job holds the second one).
2. Memory: a directory of ``--dir-mb`` MiB (default 1 GiB: eight files, the corpora repeated),
   ``--jobs 1`` and ``--jobs 2``: JSONL to ``/dev/null`` and Parquet to a temporary file, full
   and lean; the peak RSS of each child (``ru_maxrss`` from ``os.wait4``). The files are
   written by a child process, so this driver stays small: Linux carries a parent's resident
   size into a child's ``ru_maxrss`` (up to the parent's own, the "driver" floor printed
   beside); the memory table runs first, before the speed rounds load the corpora here.

The children run with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` dropped from their
environment), as an installed package runs: without its ``.pyc`` files every start compiles the
package's modules again (``import checkfu_fast.cli`` 108 against 55 ms), a serial part no user
pays. ``uptime`` is printed before and after: the machine's load is part of every number.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

MiB = 1 << 20


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


#: The children's environment: bytecode written and read, as an installed package's.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(args: list[str], stdout: int | None = subprocess.DEVNULL) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of ``python -m checkfu_fast ARGS`` in a fresh process."""
    t = time.perf_counter()
    p = subprocess.Popen(
        [sys.executable, "-m", "checkfu_fast", *args],
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=ENV,
    )
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({status}): {args}")
    return wall, usage.ru_maxrss / 1024


def floor_rss() -> float:
    p = subprocess.Popen([sys.executable, "-c", "import checkfu_fast"], env=ENV)
    _, _, usage = os.wait4(p.pid, 0)
    return usage.ru_maxrss / 1024


def hash_files(files: list[Path], threads: int) -> float:
    """Seconds to SHA-256 ``files`` (read in 1 MiB pieces) on ``threads`` threads."""
    todo = list(files)
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                f = todo.pop(0)
            h = hashlib.sha256()
            with f.open("rb") as r:
                while piece := r.read(MiB):
                    h.update(piece)

    t = time.perf_counter()
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    return time.perf_counter() - t


def best(rounds: int, fns: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The fastest of ``rounds`` of each, the functions alternated round by round."""
    out = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            out[k] = min(out[k], fn())
    return out


def write_files(root: Path, file_mb: int, dir_mb: int) -> None:
    """Four files of ``file_mb`` MiB (two claude, two mixed) in ``root/four``, and unless
    ``dir_mb`` is 0 a directory ``root/dir`` of eight files, ``dir_mb`` MiB in all (the corpora
    repeated). Run in a child process (``--write-into``): the corpora never live here."""
    from corpus import make_corpus, make_mixed

    size = file_mb * MiB
    corpora = {"claude": make_corpus("claude", size), "mixed": make_mixed(size)}
    (root / "four").mkdir()
    for i in range(4):
        name = ("claude", "mixed")[i % 2]
        (root / "four" / f"{i}-{name}.jsonl").write_bytes(corpora[name])
    if not dir_mb:
        return
    (root / "dir").mkdir()
    per = dir_mb * MiB // 8
    for i in range(8):
        name = ("claude", "mixed")[i % 2]
        data = corpora[name]
        with (root / "dir" / f"{i}-{name}.jsonl").open("wb") as w:
            written = 0
            while written < per:
                piece = data[: per - written]
                w.write(piece)
                written += len(piece)


def memory(root: Path) -> None:
    big = root / "dir"
    mb = sum(f.stat().st_size for f in big.iterdir()) / 1e6
    out = root / "out.parquet"
    print(f"\ndirectory of 8 files, {mb:.0f} MB, one run each:\n")
    print("| output | fields | --jobs | peak RSS MiB | seconds | MB/s |")
    print("|---|---|---:|---:|---:|---:|")
    for fmt, fields in (
        ("jsonl", "all"),
        ("jsonl", "lean"),
        ("parquet", "all"),
        ("parquet", "lean"),
    ):
        for jobs in ("1", "2"):
            cmd = ["normalize", "--jobs", jobs, "--fields", fields, "--no-progress"]
            if fmt == "parquet":
                cmd += ["--format", "parquet", "-o", str(out)]
            wall, rss = run([*cmd, str(big)])
            out.unlink(missing_ok=True)
            print(f"| {fmt} | {fields} | {jobs} | {rss:.0f} | {wall:.1f} | {mb / wall:.0f} |")
    print(f"| `import checkfu_fast` only | | | {floor_rss():.0f} | | |")
    print(f"| this driver (a floor for the children) | | | {driver_rss():.0f} | | |")
    print(f"\nafter memory: {uptime()}")


def driver_rss() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def speed(root: Path, rounds: int) -> None:
    files = sorted((root / "four").iterdir())
    mb = sum(f.stat().st_size for f in files) / 1e6
    paths = [str(f) for f in files]
    hash_files(files, 1)  # the page cache warm for everyone
    run(["normalize", "--jobs", "2", *paths])  # the package's .pyc files written
    t = best(
        rounds,
        {
            "jobs1": lambda: run(["normalize", "--jobs", "1", *paths])[0],
            "jobs2": lambda: run(["normalize", "--jobs", "2", *paths])[0],
            "hash1": lambda: hash_files(files, 1),
            "hash2": lambda: hash_files(files, 2),
        },
    )
    print(f"\n4 files, {mb:.0f} MB in all, fastest of {rounds} rounds:\n")
    print("| run | seconds | MB/s | jobs 2 / jobs 1 |")
    print("|---|---:|---:|---:|")
    for a, b, label in (
        ("jobs1", "jobs2", "`checkfu-fast normalize --jobs {n}` > /dev/null"),
        ("hash1", "hash2", "SHA-256 of the files on {n} thread(s) (control)"),
    ):
        for k, n in ((a, 1), (b, 2)):
            ratio = f"{t[a] / t[b]:.2f}x" if k == b else ""
            print(f"| {label.format(n=n)} | {t[k]:.2f} | {mb / t[k]:.0f} | {ratio} |")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--file-mb", type=int, default=24)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir-mb", type=int, default=1024)
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--write-into", help=argparse.SUPPRESS)
    args = p.parse_args()
    dir_mb = 0 if args.skip_memory else args.dir_mb
    if args.write_into:
        write_files(Path(args.write_into), args.file_mb, dir_mb)
        return
    print(f"before: {uptime()}")
    with tempfile.TemporaryDirectory(prefix="cli-jobs-") as tmp:
        root = Path(tmp)
        subprocess.run(
            [sys.executable, __file__, "--write-into", tmp, "--file-mb", str(args.file_mb),
             "--dir-mb", str(dir_mb)],
            check=True,
        )  # fmt: skip
        if not args.skip_memory:
            memory(root)
        if not args.skip_speed:
            speed(root, args.rounds)
    print(f"\nafter: {uptime()}")


if __name__ == "__main__":
    main()
