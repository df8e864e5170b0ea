"""Peak memory of reprocessing one large Codex rollout file, plain and ``.jsonl.zst``.

Generates a rollout of ``CHECKFU_SESSION_BYTES`` bytes (default 8 MiB; 1 GiB by hand:
``CHECKFU_SESSION_BYTES=1073741824 python benches/session_rss.py``), compresses it with zstd
(and gzip with ``--gzip``), then runs each path in a fresh subprocess and reports its peak RSS
(``ru_maxrss`` of that child from ``os.wait4``) and wall time:

- ``normalize_files``: ``checkfu_fast.normalize_files([path], out_dir)`` (Rust reads, decompresses
  and writes in 1 MiB chunks);
- ``cli normalize``: ``checkfu-fast normalize PATH > /dev/null`` (Python decompresses, the core
  normalizes chunk by chunk);
- ``cli report``: ``checkfu-fast report PATH`` (usage folded as events come, none kept).

The file is made of turns like ``docs/examples-sessions/codex-rollout.jsonl`` (messages, a
function call and output, reasoning, token counts), each with fresh ids and growing counters.
Run from the repo root with PYTHONPATH=python. Linux carries a process's peak RSS across exec
into its child's ``ru_maxrss``: this driver stays small (the "import only" row is the floor), so
the numbers are the children's own, up to that floor.
"""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_BYTES = 8 << 20


def _line(ts: str, t: str, payload: dict[str, object]) -> bytes:
    doc = {"timestamp": ts, "type": t, "payload": payload}
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def write_rollout(path: Path, size: int) -> int:
    """A rollout of at least ``size`` bytes at ``path``; returns the token total written."""
    total = 0
    with path.open("wb") as f:
        f.write(
            _line(
                "2026-07-14T09:12:03.518Z",
                "session_meta",
                {
                    "id": "019b2c4e-7a10-7d22-9c3b-5e8f1a2b3c4d",
                    "timestamp": "2026-07-14T09:12:03Z",
                    "cwd": "/home/dev/proj",
                    "originator": "codex_cli_rs",
                    "cli_version": "0.146.0",
                    "source": "cli",
                    "base_instructions": {"text": "You are Codex. " * 200},
                },
            )
        )
        written = i = 0
        # texts of random words (seeded), more of them than a zstd window holds: the file
        # compresses about as much as real transcripts do, not 100:1
        rng = random.Random(14)
        words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
                 for _ in range(5000)]  # fmt: skip
        pads = [" ".join(rng.choices(words, k=150)) for _ in range(8000)]
        while written < size:
            i += 1
            pad = pads[i % len(pads)]
            ts = f"2026-07-14T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}.000Z"
            total += 1000
            usage = {"input_tokens": total, "cached_input_tokens": total // 2,
                     "output_tokens": total // 10, "reasoning_output_tokens": 0,
                     "total_tokens": total + total // 10}  # fmt: skip
            lines = [
                _line(ts, "turn_context", {"turn_id": f"t{i}", "model": "gpt-5.5"}),
                _line(ts, "response_item", {"type": "message", "role": "user",
                      "content": [{"type": "input_text", "text": f"step {i}: {pad}"}]}),
                _line(ts, "response_item", {"type": "reasoning", "summary": [
                      {"type": "summary_text", "text": f"**thinking {i}**"}]}),
                _line(ts, "response_item", {"type": "function_call", "name": "shell",
                      "arguments": json.dumps({"command": ["bash", "-lc", f"echo {i}"]}),
                      "call_id": f"call_{i}"}),
                _line(ts, "response_item", {"type": "function_call_output", "call_id": f"call_{i}",
                      "output": json.dumps({"output": pads[(i * 7) % len(pads)],
                      "metadata": {"exit_code": 0}})}),
                _line(ts, "event_msg", {"type": "token_count", "info": {
                      "total_token_usage": usage, "last_token_usage": usage}}),
                _line(ts, "response_item", {"type": "message", "role": "assistant",
                      "content": [{"type": "output_text", "text": f"done {i}. {pad}"}]}),
            ]  # fmt: skip
            for b in lines:
                f.write(b)
                written += len(b)
    return total


def compress(src: Path, kind: str) -> Path:
    if kind == "zst":
        import zstandard

        out = src.with_name(src.name + ".zst")
        with src.open("rb") as i, out.open("wb") as o:
            zstandard.ZstdCompressor(level=3).copy_stream(i, o)
    else:
        import gzip
        import shutil

        out = src.with_name(src.name + ".gz")
        with src.open("rb") as i, gzip.open(out, "wb", compresslevel=6) as o:
            shutil.copyfileobj(i, o, 1 << 20)
    return out


def measure(argv: list[str]) -> tuple[float, float]:
    """(peak RSS in MiB, seconds) of one child process."""
    t = time.perf_counter()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(argv, stdout=null)
        _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"{argv} exited with {status}")
    return ru.ru_maxrss / 1024, time.perf_counter() - t


def runs(path: Path, out_dir: Path) -> list[tuple[str, list[str]]]:
    py = sys.executable
    files = f"import checkfu_fast; checkfu_fast.normalize_files([{str(path)!r}], {str(out_dir)!r})"
    return [
        ("normalize_files", [py, "-c", files]),
        ("cli normalize", [py, "-m", "checkfu_fast", "normalize", str(path)]),
        ("cli report", [py, "-m", "checkfu_fast", "report", str(path)]),
    ]


def main(size: int | None = None, gz: bool = False) -> list[dict[str, object]]:
    size = size or int(os.environ.get("CHECKFU_SESSION_BYTES", DEFAULT_BYTES))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "rollout.jsonl"
        write_rollout(plain, size)
        inputs = [plain, compress(plain, "zst")] + ([compress(plain, "gz")] if gz else [])
        idle, _ = measure([sys.executable, "-c", "import checkfu_fast"])
        for path in inputs:
            for name, argv in runs(path, Path(tmp)):
                rss, secs = measure(argv)
                rows.append({"input": path.name, "bytes": path.stat().st_size, "run": name,
                             "peakRssMiB": round(rss, 1), "seconds": round(secs, 2)})  # fmt: skip
                for f in Path(tmp).glob("*.events.jsonl"):
                    f.unlink()
        rows.append({"input": "-", "bytes": 0, "run": "import only", "peakRssMiB": round(idle, 1),
                     "seconds": 0.0})  # fmt: skip
    return rows


if __name__ == "__main__":
    out = main(gz="--gzip" in sys.argv)
    print(f"{'input':22} {'MiB on disk':>11} {'run':16} {'peak RSS MiB':>12} {'s':>7}")
    for r in out:
        mib = int(r["bytes"]) / (1 << 20)  # type: ignore[call-overload]
        name, run, rss, secs = r["input"], r["run"], r["peakRssMiB"], r["seconds"]
        print(f"{name!s:22} {mib:11.1f} {run!s:16} {rss!s:>12} {secs!s:>7}")
