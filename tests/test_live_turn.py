"""Live turns (issue 11): stream_turn, astream_turn, cancel, run_turn as a collect, memory under
the output cap, `checkfu-fast run` printing as it goes. Stub harness modes in tests/stubs/."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from checkfu_fast.oneshot import (
    TurnRequest,
    astream_turn,
    observe,
    run_turn,
    stream_turn,
    validate_contract,
)
from livehelp import FAST, contract, gone, harness, kill_token, token

ENDINGS = {"observation.finished", "observation.failed", "observation.retryable_failure"}


def endings(observations):
    return [o for o in observations if o["type"] in ENDINGS]


def replay(c, request, process):
    return observe(validate_contract(c), request, process.stdout, process=process)[0]


def test_first_observation_arrives_while_the_harness_still_runs(tmp_path):
    flag = tmp_path / "flag"
    with stream_turn(
        contract(), TurnRequest("go"), deadline_s=10, **harness("stream-wait", str(flag), "8")
    ) as stream:
        seen = []
        for obs in stream:
            seen.append(obs["type"])
            if obs["type"] == "observation.agent_message":
                assert stream.running  # the harness waits for the flag we have not made yet
                flag.touch()
        assert seen[:2] == ["observation.ready", "observation.agent_message"]
        assert seen[-1] == "observation.finished"
        assert stream.result.process.exit_code == 0
        # the harness's wait was ended by our flag, made when we saw its first line live
        assert stream.result.resulting_state["last_response"] == "done"


class LineObserver:
    """A stand-in fold, incremental by construction: one observation per complete line."""

    retry = None  # the Observer interface: no retry time

    def __init__(self, contract, request, *, dialect="auto", implementation="native", redact=None):
        self.buf, self.started = b"", False

    def feed(self, data):
        out = [] if self.started else [{"type": "observation.ready", "payload": {}}]
        self.started = True
        *lines, self.buf = (self.buf + data).split(b"\n")
        return out + [{"type": "line", "payload": {"content": x.decode()}} for x in lines]

    def finish(self, process=None):
        return [{"type": "observation.finished", "payload": {"cancelled": process.cancelled}}]

    @property
    def state(self):
        return {"schema_version": 1, "turn": 1, "last_response": ""}


def test_the_stream_hands_on_what_the_fold_gives_while_the_harness_runs(tmp_path, monkeypatch):
    """The plumbing is live whatever the fold: an observation made from the first line reaches
    the consumer while the harness still waits (for a flag the consumer makes on seeing it)."""
    from checkfu_fast.oneshot import turn

    monkeypatch.setattr(turn, "Observer", LineObserver)
    flag = tmp_path / "flag"
    with stream_turn(
        contract(), TurnRequest("go"), deadline_s=10, **harness("stream-wait", str(flag), "8")
    ) as stream:
        for obs in stream:
            if obs["type"] == "line" and not flag.exists():
                assert stream.running
                flag.touch()
    assert obs == {"type": "observation.finished", "payload": {"cancelled": False}}
    assert b'"result": "done"' in stream.result.process.stdout  # the flag ended its wait


def test_the_async_stream_is_live_too(tmp_path, monkeypatch):
    from checkfu_fast.oneshot import turn

    monkeypatch.setattr(turn, "Observer", LineObserver)
    flag = tmp_path / "flag"

    async def consume():
        stream = astream_turn(
            contract(), TurnRequest("go"), deadline_s=10, **harness("stream-wait", str(flag), "8")
        )
        async for obs in stream:
            if obs["type"] == "line" and not flag.exists():
                assert stream._stream.running
                flag.touch()
        return stream.result

    result = asyncio.run(consume())
    assert b'"result": "done"' in result.process.stdout


def test_stream_equals_observe_on_the_same_stdout(tmp_path):
    """The live observations are observe() on the stdout the harness wrote, byte for byte."""
    flag = tmp_path / "flag"
    flag.touch()
    request = TurnRequest("go")
    with stream_turn(contract(), request, **harness("stream-wait", str(flag))) as stream:
        live = list(stream)
    result = stream.result
    assert result.observations == live
    expected = replay(contract(), request, result.process)
    assert json.dumps(live, sort_keys=False) == json.dumps(expected, sort_keys=False)
    assert [o["type"] for o in live][-1] == "observation.finished"
    assert result.resulting_state["last_response"] == "done"


def test_run_turn_is_stream_turn_collected(tmp_path):
    flag = tmp_path / "flag"
    flag.touch()
    request = TurnRequest("go")
    result = run_turn(contract(), request, **harness("stream-wait", str(flag)))
    assert result.observations == replay(contract(), request, result.process)
    assert not os.path.exists(result.staging_dir)


def test_cancel_from_another_thread_ends_with_one_interrupted_finish(tmp_path):
    tok = token()
    started = tmp_path / "started"
    try:
        stream = stream_turn(
            contract(), TurnRequest("go"), **harness("stream-forever", str(started), tok), **FAST
        )
        deadline = time.monotonic() + 10
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        t = time.monotonic()
        threading.Thread(target=stream.cancel).start()
        observations = list(stream)
        assert time.monotonic() - t < 5
        assert len(endings(observations)) == 1
        assert observations[-1] == {
            "type": "observation.finished",
            "payload": observations[-1]["payload"] | {"stop_reason": "interrupted"},
        }
        process = stream.result.process
        assert process.cancelled and process.killed_by_us and not process.timed_out
        stream.cancel()  # again, after the end: harmless
        assert gone(tok)
        assert not os.path.exists(stream.result.staging_dir)
    finally:
        kill_token(tok)


def test_leaving_the_block_early_cancels_and_cleans_up(tmp_path):
    tok = token()
    try:
        with stream_turn(
            contract(), TurnRequest("go"), **harness("stream-forever", "", tok), **FAST
        ) as stream:
            root = stream._root
            time.sleep(0.3)
        assert stream.result.process.cancelled
        assert not os.path.exists(root) and gone(tok)
    finally:
        kill_token(tok)


def test_cancelling_the_asyncio_task_kills_the_group_and_reraises():
    tok = token()
    seen: list[str] = []
    state: dict[str, object] = {}

    async def consume():
        stream = astream_turn(
            contract(), TurnRequest("go"), **harness("stream-forever", "", tok), **FAST
        )
        state["stream"] = stream
        async for obs in stream:
            seen.append(obs["type"])

    async def main():
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.6)
        task.cancel()
        t = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        state["cleanup_s"] = time.monotonic() - t

    try:
        asyncio.run(main())
        stream = state["stream"]
        assert not stream._stream.running  # the cleanup was awaited before the re-raise
        assert stream.result.process.cancelled
        assert not os.path.exists(stream.result.staging_dir)
        assert gone(tok, within=0.5)
        assert state["cleanup_s"] < 5
    finally:
        kill_token(tok)


def test_astream_turn_iterates_to_the_end(tmp_path):
    flag = tmp_path / "flag"
    flag.touch()

    async def collect():
        stream = astream_turn(contract(), TurnRequest("go"), **harness("stream-wait", str(flag)))
        return [obs async for obs in stream], stream.result

    observations, result = asyncio.run(collect())
    assert observations == result.observations
    assert observations[-1]["type"] == "observation.finished"


def test_output_cap_ends_the_stream_once():
    with stream_turn(
        contract(), TurnRequest("go"), output_cap=64 << 10, **harness("flood"), **FAST
    ) as stream:
        observations = list(stream)
    assert endings(observations) == [observations[-1]]
    assert observations[-1]["payload"]["error"]["type"] == "validation.payload_too_large"
    assert stream.result.process.output_truncated


def test_deadline_ends_the_stream_once(tmp_path):
    tok = token()
    try:
        with stream_turn(
            contract(),
            TurnRequest("go"),
            deadline_s=0.5,
            **harness("stream-forever", "", tok),
            **FAST,
        ) as stream:
            observations = list(stream)
        assert endings(observations) == [observations[-1]]
        assert observations[-1]["payload"]["error"]["type"] == "runtime.turn_deadline_exceeded"
        assert gone(tok)
    finally:
        kill_token(tok)


def test_contract_errors_raise_before_anything_runs():
    from checkfu_fast.oneshot import ContractError

    with pytest.raises(ContractError):
        stream_turn({"protocol": "oneshot-v1"}, TurnRequest("go"))


RSS_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))  # fail fast, never swap the host
    from checkfu_fast.oneshot import TurnRequest, run_turn
    contract = {
        "image": "x", "entrypoint": "/usr/bin/yes", "protocol": "oneshot-v1", "argv": [],
        "prompt_transport": "stdin", "output_mode": "stream_json",
    }
    r = run_turn(contract, TurnRequest("go"), deadline_s=120)  # the default 64 MiB cap
    print(r.observations[-1]["payload"]["error"]["type"], len(r.process.stdout))
    with open("/proc/self/status") as f:  # VmHWM: the peak RSS of this process, in KiB
        print(next(l.split()[1] for l in f if l.startswith("VmHWM:")), flush=True)
    """
)


EXECUTOR_RSS_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))
    from checkfu_fast.oneshot.executor import private_staging_dir, run_process
    chunks = []
    with private_staging_dir() as d:
        r = run_process("/usr/bin/yes", [], stdin=None, staging_dir=d, on_stdout=chunks.append)
        del chunks[:]  # what a consumer that keeps the bytes would hold, at most the cap
    print(r.output_truncated, len(r.stdout))
    with open("/proc/self/status") as f:  # VmHWM: the peak RSS of this process, in KiB
        print(next(l.split()[1] for l in f if l.startswith("VmHWM:")), flush=True)
    """
)


NULL_FOLD = textwrap.dedent(
    """
    from checkfu_fast.oneshot import TurnRequest, run_turn, turn
    class NullFold:  # keeps nothing: measured is everything of the turn but the fold
        def __init__(self, *a, **k):
            pass
        def feed(self, data):
            return []
        def finish(self, process=None):
            error = {"type": "validation.payload_too_large", "message": "cap"}
            return [{"type": "observation.failed", "payload": {"error": error}}]
        state = {"schema_version": 1, "turn": 1, "last_response": ""}
        retry = None
    turn.Observer = NullFold
    """
)
TURN_RSS_SCRIPT = RSS_SCRIPT.replace(
    "from checkfu_fast.oneshot import TurnRequest, run_turn\n", NULL_FOLD
)
assert TURN_RSS_SCRIPT != RSS_SCRIPT


def peak_rss_mib_of(script: str) -> tuple[subprocess.CompletedProcess, float]:
    """Run ``script`` in a fresh Python; its own peak RSS (``VmHWM``, its last line). Not
    ``getrusage``: Linux carries ``ru_maxrss`` across ``execve``, so a child of a big pytest
    process would report the parent's peak."""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=300, text=True
    )
    lines = proc.stdout.splitlines()
    peak = int(lines.pop()) / 1024 if proc.returncode == 0 and lines else float("inf")
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, "\n".join(lines), proc.stderr
    ), peak


def test_executor_reading_yes_to_the_default_cap_is_bounded_by_the_cap():
    """The executor's part: 64 MiB of 2-byte lines, kept and handed on, peak RSS < 512 MiB."""
    proc, peak_mib = peak_rss_mib_of(EXECUTOR_RSS_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["True", str(64 << 20)]
    assert peak_mib < 512, f"peak RSS {peak_mib:.0f} MiB"


def test_a_turn_reading_yes_to_the_default_cap_is_bounded_but_for_the_fold():
    """run_turn with `yes` and a fold that keeps nothing: the worker, the queue, the result
    (stdout kept and decoded in the exchange) stay under 512 MiB."""
    proc, peak_mib = peak_rss_mib_of(TURN_RSS_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["validation.payload_too_large", str(64 << 20)]
    assert peak_mib < 512, f"peak RSS {peak_mib:.0f} MiB"


@pytest.mark.slow
def test_yes_under_the_default_cap_stays_well_under_512_mib():
    """`yes` (2-byte lines) up to the default 64 MiB output cap: the runner's peak RSS is bounded
    by the cap, not by the 33 million lines."""
    proc, peak_mib = peak_rss_mib_of(RSS_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["validation.payload_too_large", str(64 << 20)]
    assert peak_mib < 512, f"peak RSS {peak_mib:.0f} MiB"


def test_cli_run_prints_observations_as_they_happen(tmp_path):
    """`checkfu-fast run`: the first JSONL line is out while the harness still waits."""
    flag = tmp_path / "flag"
    c = tmp_path / "c.json"
    c.write_text(json.dumps(contract(entrypoint=sys.executable)))
    prompt = tmp_path / "p.txt"
    prompt.write_text("go")
    wrapper = tmp_path / "harness.sh"  # the CLI has no entrypoint_prefix: a wrapper script
    from livehelp import STUB

    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {STUB} stream-wait {flag} 8\n")
    wrapper.chmod(0o755)
    cli = ["-m", "checkfu_fast", "run", str(c), "--prompt-file", str(prompt)]
    proc = subprocess.Popen(
        [sys.executable, *cli, "--entrypoint", str(wrapper)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        first = json.loads(proc.stdout.readline())
        assert first["type"] == "observation.ready"
        assert proc.poll() is None  # still running: the harness waits for the flag
    finally:
        flag.touch()
        rest = [json.loads(line) for line in proc.stdout.read().splitlines()]
        proc.wait(timeout=30)
    assert rest[-1]["resulting_state"]["last_response"] == "done"  # the flag ended the wait
    assert rest[-2]["type"] == "observation.finished" and proc.returncode == 0


def test_turn_result_exposes_the_retry_time_of_a_retryable_failure(tmp_path):
    stdout = tmp_path / "out.jsonl"
    stdout.write_bytes(
        b'{"type":"system","subtype":"init","session_id":"s","tools":["Bash"]}\n'
        b'{"type":"system","subtype":"api_retry","attempt":3,"max_retries":3,'
        b'"retry_delay_ms":4000,"error_status":529,"error":"server_error","session_id":"s"}\n'
    )
    result = run_turn(contract(), TurnRequest("go"), deadline_s=10, **harness("raw", str(stdout)))
    assert result.observations[-1]["type"] == "observation.retryable_failure"
    assert (result.retry_at, result.retry_after_ms) == (None, 4000)
    ok = run_turn(contract(), TurnRequest("go"), deadline_s=10, **harness("stream-wait", "x", "0"))
    assert ok.observations[-1]["type"] == "observation.finished"
    assert (ok.retry_at, ok.retry_after_ms) == (None, None)
