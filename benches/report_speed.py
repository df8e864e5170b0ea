"""``checkfu-fast report`` against what users write themselves, on a tree of session files.

    python3 benches/report_speed.py [MB]      # default 50 MB; one run of each, side by side

The tree: copies of the shipped claude session files and codex rollouts
(docs/examples-sessions), each copy with its own message, request and thread ids, under
``projects/`` and ``sessions/`` of a temporary directory. Timed, each single-threaded as users
write them (issue 21's targets), each the fastest of 3 runs (the report's without the RSS launcher
below):

- ``report --no-cache``: ``checkfu-fast report --no-cache --json --tz UTC DIR`` in a fresh
  process (its defaults otherwise: estimates on; the fold in the core on every core);
- ``split+orjson``: read every file, split its lines and ``orjson.loads`` each (the floor of any
  Python reader);
- ``python reader``: the 40-line script a user writes: orjson per line, claude assistant usage
  deduplicated by ``(message.id, requestId)`` keeping the largest (ccusage's rule), codex the last
  ``total_token_usage`` per file; it prints the same token totals (checked).

Then, with the cache (``$XDG_CACHE_HOME`` in the temporary directory): the first run (which
fills it), a re-run (the memo: the same options over unchanged files) and a re-run with the
memo removed (every file's summary from the per-file cache, the fold across files redone).
Every run's document must be the same.

Prints MB/s, the ratios (report / each other), the re-run times, the report's peak RSS in each
mode and the load averages before and after. Numbers depend on the machine and its load.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples-sessions"


def build(root: Path, mb: float) -> int:
    """``mb`` MiB of session files under ``root``, modified an hour ago (a run over files
    modified in the last 2 s is not memoized: report_cache.RACY_NS)."""
    claude = (EXAMPLES / "claude-session.jsonl").read_text()
    codex = (EXAMPLES / "codex-rollout.jsonl").read_text()
    size = i = 0
    written = []
    while size < mb * (1 << 20):
        c = re.sub(r'"(msg_|req_)', rf'"\g<1>{i}x', claude)
        p = root / "projects" / f"-home-dev-p{i % 20}" / f"s{i}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(c)
        r = codex.replace("019b", f"{i:04x}")
        q = root / "sessions" / "2026" / "07" / f"{i % 28 + 1:02d}" / f"rollout-{i:06d}.jsonl"
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_text(r)
        written += [p, q]
        size += len(c.encode()) + len(r.encode())
        i += 1
    t = time.time_ns() - 3600 * 10**9
    for p in written:
        os.utime(p, ns=(t, t))
    return size


#: Lines appended to a session file by :func:`grow` (no usage: the totals stay the same).
GROWTH = b"".join(
    line
    for line in (EXAMPLES / "claude-session.jsonl").read_bytes().splitlines(keepends=True)
    if b'"type":"ai-title"' in line or b'"type":"last-prompt"' in line
)


def grow(root: Path) -> None:
    """An active session: a few lines appended to the first claude session file."""
    with (root / "projects" / "-home-dev-p0" / "s0.jsonl").open("ab") as f:
        f.write(GROWTH)


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.jsonl"))


def split_orjson(paths: list[Path]) -> int:
    n = 0
    for p in paths:
        for line in p.read_bytes().split(b"\n"):
            if line:
                orjson.loads(line)
                n += 1
    return n


def python_reader(paths: list[Path]) -> tuple[int, int]:
    """A user's script: claude messages (ccusage's dedup) plus codex last counters."""
    best: dict[tuple, tuple[int, dict]] = {}
    inp = out = 0
    for p in paths:
        last = None
        for line in p.read_bytes().split(b"\n"):
            if not line:
                continue
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if d.get("type") == "assistant":
                m = d.get("message") or {}
                u = m.get("usage")
                if not u or m.get("model") == "<synthetic>":
                    continue
                key = (m.get("id"), d.get("requestId"))
                size = sum(u.get(k, 0) for k in ("input_tokens", "output_tokens"))
                if key not in best or size > best[key][0]:
                    best[key] = (size, u)
            elif d.get("type") == "event_msg":
                info = (d.get("payload") or {}).get("info")
                if isinstance(info, dict) and info.get("total_token_usage"):
                    last = info["total_token_usage"]
        if last is not None:
            inp += last["input_tokens"]
            out += last["output_tokens"]
    for _, u in best.values():
        inp += (
            u.get("input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
            + u.get("cache_creation_input_tokens", 0)
        )
        out += u.get("output_tokens", 0)
    return inp, out


def timed(fn, *a):
    t = time.perf_counter()
    r = fn(*a)
    return time.perf_counter() - t, r


def report_env(cache: Path) -> dict[str, str]:
    """The report's environment: its own cache directory, and bytecode written (an installed
    package has its .pyc files; this checkout's environment may say not to write them)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), XDG_CACHE_HOME=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


#: Runs a command and writes its peak RSS (KiB) to the file named first: the report is forked
#: by this small process, not by the bench (Linux starts a child's ``ru_maxrss`` at its
#: parent's RSS when it forks: after the plain reader, the bench holds 115 MiB on a 200 MiB
#: tree, and every report run measured from here read at least that).
PEAK = (
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(sys.argv[2:])\n"
    "_, status, usage = os.wait4(p.pid, 0)\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status))\n"
)


def report(root: Path, cache: Path, *flags: str) -> tuple[dict, int]:
    """``checkfu-fast report --json --tz UTC [flags] ROOT`` in a fresh process: its document
    and its peak RSS (KiB)."""
    cmd = [sys.executable, "-m", "checkfu_fast", "report", "--json", "--tz", "UTC", *flags]
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as peak:
        wrapped = [sys.executable, "-c", PEAK, peak.name, *cmd, str(root)]
        p = subprocess.run(wrapped, stdout=out, env=report_env(cache), check=False)
        if p.returncode != 0:
            raise subprocess.CalledProcessError(p.returncode, cmd)
        out.seek(0)
        return json.loads(out.read()), int(peak.read())


def command() -> list[str]:
    """The user's command: the ``checkfu-fast`` console script beside this interpreter (what
    ``pip install`` puts on PATH), else ``python -m checkfu_fast``."""
    script = Path(sys.executable).with_name("checkfu-fast")
    return [str(script)] if script.exists() else [sys.executable, "-m", "checkfu_fast"]


def bare(root: Path, cache: Path, *flags: str) -> None:
    """``checkfu-fast report --json --tz UTC [flags] ROOT`` alone, as a user runs it: timed
    without :func:`report`'s RSS launcher (a second interpreter's start-up, ~30 ms, is not the
    report's)."""
    cmd = [*command(), "report", "--json", "--tz", "UTC", *flags, str(root)]
    subprocess.run(cmd, stdout=subprocess.DEVNULL, env=report_env(cache), check=True)


def best(n: int, fn, *a):
    """The fastest of ``n`` runs of ``fn(*a)`` (each side gets the same), and the last result."""
    times = []
    for _ in range(n):
        t, r = timed(fn, *a)
        times.append(t)
    return min(times), r


def load() -> str:
    """``uptime``'s load averages."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(mb: float = 50.0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "tree"
        cache = Path(d) / "cache"
        size = build(root, mb)
        paths = files(root)
        doc, rss = report(root, cache, "--no-cache")  # warm (page cache, .pyc); its RSS
        before = load()
        t_rep, _ = best(3, bare, root, cache, "--no-cache")
        t_split, _ = best(3, split_orjson, paths)
        t_py, (inp, out) = best(3, python_reader, paths)
        t_first, (first, rss_first) = timed(report, root, cache)  # fills the cache
        t_memo, (again, rss_memo) = timed(report, root, cache)  # the memo
        shutil.rmtree(cache / "checkfu_fast" / "memo")
        t_files, (files_doc, rss_files) = timed(report, root, cache)  # the per-file cache
        grow(root)
        t_grown, (grown_doc, rss_grown) = timed(report, root, cache)  # one file resumed
        assert (doc["total"]["inputTokens"], doc["total"]["outputTokens"]) == (inp, out)
        assert doc == first == again == files_doc == grown_doc
        mib = size / (1 << 20)
        res = {
            "MiB": round(mib, 1),
            "files": len(paths),
            "load": f"{before} -> {load()}",
            "report --no-cache MB/s": round(mib / t_rep, 1),
            "split+orjson MB/s": round(mib / t_split, 1),
            "python reader MB/s": round(mib / t_py, 1),
            "report / split+orjson": round(t_split / t_rep, 2),
            "report / python reader": round(t_py / t_rep, 2),
            "report first run with cache s": round(t_first, 3),
            "re-run s (memo)": round(t_memo, 3),
            "re-run s (per-file cache)": round(t_files, 3),
            "re-run s (a file grew: per-file cache, that file resumed)": round(t_grown, 3),
            "peak RSS MiB (--no-cache, first with cache, memo, per-file cache, a file grew)": [
                round(rss / 1024, 1),
                round(rss_first / 1024, 1),
                round(rss_memo / 1024, 1),
                round(rss_files / 1024, 1),
                round(rss_grown / 1024, 1),
            ],
        }
        return res


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]) if len(sys.argv) > 1 else 50.0), indent=1))
