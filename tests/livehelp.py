"""Shared helpers of the live-turn and containment tests (stub harness, process scans)."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

STUB = str(Path(__file__).with_name("stubs") / "harness.py")
FAST = {"sigint_grace_s": 0.5, "sigterm_grace_s": 0.5, "drain_s": 0.3}


def contract(**over):
    c = {
        "image": "ghcr.io/acme/claude-code:2.1.0",
        "entrypoint": "/usr/local/bin/claude",
        "protocol": "oneshot-v1",
        "argv": [],
        "prompt_transport": "stdin",
        "output_mode": "stream_json",
    }
    c.update(over)
    return c


def harness(mode: str, *args: str) -> dict:
    """Options of run_turn/stream_turn that run the stub harness in ``mode``."""
    return {"entrypoint": sys.executable, "entrypoint_prefix": (STUB, mode, *args)}


def token() -> str:
    return f"checkfu-token-{uuid.uuid4().hex}"


def with_token(tok: str) -> list[int]:
    """Host pids of live (non-zombie) processes whose command line contains ``tok``."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmdline = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().rsplit(") ", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if tok.encode() in cmdline and state != "Z":
            found.append(int(d))
    return found


def gone(tok: str, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while with_token(tok) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not with_token(tok)


def kill_token(tok: str) -> None:
    import contextlib
    import signal

    for pid in with_token(tok):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
