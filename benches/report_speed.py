"""``checkfu-fast report`` against what users write themselves, on a tree of session files.

    python3 benches/report_speed.py [MB]      # default 50 MB; one run of each, side by side

The tree: copies of the shipped claude session files and codex rollouts
(docs/examples-sessions), each copy with its own message, request and thread ids, under
``projects/`` and ``sessions/`` of a temporary directory. Timed, each single-threaded as users
write them (issue 21's targets):

- ``report``: ``checkfu-fast report --json --tz UTC DIR`` in a fresh process (its defaults:
  estimates on);
- ``split+orjson``: read every file, split its lines and ``orjson.loads`` each (the floor of any
  Python reader);
- ``python reader``: the 40-line script a user writes: orjson per line, claude assistant usage
  deduplicated by ``(message.id, requestId)`` keeping the largest (ccusage's rule), codex the last
  ``total_token_usage`` per file; it prints the same token totals (checked).

Prints MB/s and the ratios (report / each other). Numbers depend on the machine and its load.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples-sessions"


def build(root: Path, mb: float) -> int:
    claude = (EXAMPLES / "claude-session.jsonl").read_text()
    codex = (EXAMPLES / "codex-rollout.jsonl").read_text()
    size = i = 0
    while size < mb * (1 << 20):
        c = re.sub(r'"(msg_|req_)', rf'"\g<1>{i}x', claude)
        p = root / "projects" / f"-home-dev-p{i % 20}" / f"s{i}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(c)
        r = codex.replace("019b", f"{i:04x}")
        q = root / "sessions" / "2026" / "07" / f"{i % 28 + 1:02d}" / f"rollout-{i:06d}.jsonl"
        q.parent.mkdir(parents=True, exist_ok=True)
        q.write_text(r)
        size += len(c.encode()) + len(r.encode())
        i += 1
    return size


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


def report(root: Path) -> dict:
    cmd = [sys.executable, "-m", "checkfu_fast", "report", "--json", "--tz", "UTC", str(root)]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    out = subprocess.run(cmd, capture_output=True, check=True, env=env).stdout
    return json.loads(out)


def main(mb: float = 50.0) -> dict:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        size = build(root, mb)
        paths = files(root)
        t_rep, doc = timed(report, root)
        t_split, _ = timed(split_orjson, paths)
        t_py, (inp, out) = timed(python_reader, paths)
        assert (doc["total"]["inputTokens"], doc["total"]["outputTokens"]) == (inp, out)
        mib = size / (1 << 20)
        res = {
            "MiB": round(mib, 1),
            "files": len(paths),
            "report MB/s": round(mib / t_rep, 1),
            "split+orjson MB/s": round(mib / t_split, 1),
            "python reader MB/s": round(mib / t_py, 1),
            "report / split+orjson": round(t_split / t_rep, 2),
            "report / python reader": round(t_py / t_rep, 2),
        }
        return res


if __name__ == "__main__":
    print(json.dumps(main(float(sys.argv[1]) if len(sys.argv) > 1 else 50.0), indent=1))
