"""Live exports of a running turn: ``stream_turn(..., trajectory=PATH)`` keeps a valid ATIF file
after every step (temp file + rename), a runner killed with SIGKILL mid-turn leaves every step
seen so far, and ``otel=True`` exports each span as it closes, while the turn still runs."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast.export import to_atif
from checkfu_fast.oneshot import TurnRequest, astream_turn, run_turn, stream_turn
from conftest import ROOT
from harbor_models import validate
from livehelp import FAST, contract

STREAM = ROOT / "vectors" / "events" / "claude" / "subagent.input.jsonl"

# writes the first N lines of FILE one by one, then a blank line every 50 ms (blank lines are
# nothing) until FLAG exists or its stdout breaks (its runner died), then the rest
HARNESS = textwrap.dedent(
    """
    import os, sys, time
    lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
    n, flag = int(sys.argv[2]), sys.argv[3]
    out = sys.stdout.buffer
    for line in lines[:n]:
        out.write(line); out.flush(); time.sleep(0.02)
    deadline = time.monotonic() + 60
    while not os.path.exists(flag) and time.monotonic() < deadline:
        out.write(b"\\n"); out.flush(); time.sleep(0.05)
    for line in lines[n:]:
        out.write(line); out.flush()
    """
)


def _expected(n: int) -> dict:
    lines = STREAM.read_bytes().splitlines(keepends=True)
    return to_atif(checkfu_fast.normalize(b"".join(lines[:n]), "claude"))


def _options(tmp_path: Path, n: int, flag: Path) -> dict:
    script = tmp_path / "harness.py"
    script.write_text(HARNESS)
    return {
        "entrypoint": sys.executable,
        "entrypoint_prefix": (str(script), str(STREAM), str(n), str(flag)),
        "dialect": "claude",
        "deadline_s": 60,
        **FAST,
    }


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _wait_for(pred, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_trajectory_is_valid_after_every_step_and_whole_at_the_end(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    flag = tmp_path / "flag"
    lines = len(STREAM.read_bytes().splitlines())
    with stream_turn(
        contract(), TurnRequest("go"), trajectory=str(out), **_options(tmp_path, 3, flag)
    ) as stream:
        for _obs in stream:
            doc = _read(out)
            assert doc is not None  # the file is always a whole document
            validate(doc)
            if doc == _expected(3) and not flag.exists():
                flag.touch()  # the first three lines are all in the file: let it finish
        assert stream.result.process.exit_code == 0
    assert flag.exists()
    final = _read(out)
    assert final is not None
    validate(final)
    assert final == _expected(lines)
    assert not list(tmp_path.glob(".t.json.partial"))  # the temp file was renamed


RUNNER = textwrap.dedent(
    """
    import sys
    from checkfu_fast.oneshot import TurnRequest, stream_turn
    sys.path.insert(0, sys.argv[1])
    from livehelp import FAST, contract
    script, stream, n, flag, out = sys.argv[2:7]
    opts = dict(entrypoint=sys.executable, entrypoint_prefix=(script, stream, n, flag),
                dialect="claude", deadline_s=120, **FAST)
    with stream_turn(contract(), TurnRequest("go"), trajectory=out, **opts) as s:
        for obs in s:
            print(obs["type"], flush=True)
    """
)


@pytest.mark.parametrize("n", [3, 8])
def test_a_sigkilled_runner_leaves_a_valid_partial_trajectory(tmp_path: Path, n: int) -> None:
    out = tmp_path / "t.json"
    flag = tmp_path / "flag"  # never made: the harness waits (and dies with its stdout)
    _options(tmp_path, n, flag)  # writes the harness script
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    proc = subprocess.Popen(
        [sys.executable, str(runner), str(ROOT / "tests"), str(tmp_path / "harness.py"),
         str(STREAM), str(n), str(flag), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    expected = _expected(n)
    try:
        _wait_for(lambda: _read(out) == expected or proc.poll() is not None)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else b""
        os.kill(proc.pid, signal.SIGKILL)  # mid-turn: the harness is still running
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    doc = _read(out)
    assert doc is not None
    validate(doc)
    assert doc == expected  # every step seen so far
    assert len(doc["steps"]) >= 1


def test_astream_and_run_turn_take_a_trajectory(tmp_path: Path) -> None:
    flag = tmp_path / "flag"
    flag.touch()
    lines = len(STREAM.read_bytes().splitlines())

    async def consume(path: Path) -> None:
        async with astream_turn(
            contract(), TurnRequest("go"), trajectory=path, **_options(tmp_path, 0, flag)
        ) as s:
            async for _ in s:
                pass

    asyncio.run(consume(tmp_path / "a.json"))
    assert _read(tmp_path / "a.json") == _expected(lines)
    run_turn(contract(), TurnRequest("go"), trajectory=tmp_path / "r.json",
             **_options(tmp_path, 0, flag))  # fmt: skip
    assert _read(tmp_path / "r.json") == _expected(lines)


def test_a_bad_trajectory_path_raises_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        stream_turn(contract(), TurnRequest("go"), trajectory=tmp_path / "no" / "t.json",
                    **_options(tmp_path, 0, tmp_path / "flag"))  # fmt: skip


def test_otel_spans_leave_as_they_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is absent")
    from otlp_receiver import Receiver

    r = Receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.endpoint)
    flag = tmp_path / "flag"
    try:
        # line 8 of the stream is the sub-agent's Bash result: its execute_tool span has closed
        with stream_turn(contract(), TurnRequest("go"), otel=True,
                         **_options(tmp_path, 8, flag)) as stream:  # fmt: skip
            tools: list[dict] = []

            def bash_arrived() -> bool:
                tools[:] = [s for s in r.spans if s["name"] == "execute_tool Bash"]
                return bool(tools)

            _wait_for(bash_arrived, within=30)
            assert stream.running  # the turn goes on: the span left as it closed
            assert not [s for s in r.spans if s["name"] == "invoke_agent claude"]
            flag.touch()
            for _ in stream:
                pass
        _wait_for(lambda: any(s["name"] == "invoke_agent claude" for s in r.spans), within=30)
    finally:
        r.close()
    names = sorted(s["name"] for s in r.spans)
    assert names.count("execute_tool Bash") == 1 and "execute_tool Task" in names
    assert len({s["trace_id"] for s in r.spans}) == 1
