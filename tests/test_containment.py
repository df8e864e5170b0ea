"""Containment and hygiene of live turns (issue 11), one stub harness per failure mode:
daemons that setsid and close their fds, /proc/$PPID/environ, secrets on stderr and stdout,
SIGTERM/SIGKILL/SIGINT to the runner, inherited SIG_IGN, non-executables, host exhaustion."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from checkfu_fast.oneshot import (
    TurnRequest,
    executor,
    minimal_environment,
    pid_namespace_available,
    run_turn,
)
from checkfu_fast.oneshot.executor import private_staging_dir, run_process
from checkfu_fast.oneshot.redact import MARK, redact_deep, redactor
from livehelp import FAST, STUB, contract, gone, harness, kill_token, token

CONTAINED = pytest.mark.skipif(
    not pid_namespace_available(), reason="this machine allows no PID namespace"
)
PYTHONPATH = {"PYTHONPATH": os.pathsep.join(sys.path)}


# -- containment ---------------------------------------------------------------------------------


@CONTAINED
@pytest.mark.parametrize("hang", [False, True])
def test_a_setsid_daemon_with_closed_fds_does_not_outlive_the_turn(hang):
    tok = token()
    args = ("daemon", tok, "hang") if hang else ("daemon", tok)
    try:
        r = run_turn(
            contract(), TurnRequest("go"), deadline_s=1.5 if hang else 30, **harness(*args), **FAST
        )
        assert r.process.containment == "pid_namespace"
        assert r.process.stdout == b"daemonized\n"
        assert r.process.timed_out is hang
        assert gone(tok, within=2.0)
    finally:
        kill_token(tok)


@CONTAINED
def test_an_escapee_holding_stdout_is_killed_with_the_namespace():
    """The S2 limit of the process-group executor is gone: the double-forked, setsid'd
    grandchild holding our stdout dies with the namespace instead of being reported."""
    with private_staging_dir() as d:
        t = time.monotonic()
        r = run_process(
            sys.executable,
            [STUB, "escape"],
            stdin=None,
            staging_dir=d,
            env=minimal_environment({"PIDFILE": os.path.join(d, "pids")}),
            **FAST,
        )
        assert time.monotonic() - t < 3
    assert (r.containment, r.exit_code, r.stdout) == ("pid_namespace", 0, b"escaped\n")
    assert not r.escaped_descendants  # it held the pipe, then died with the namespace


def test_process_group_containment_is_reported_and_its_limit_documented():
    tok = token()
    try:
        r = run_turn(
            contract(),
            TurnRequest("go"),
            containment="process_group",
            **harness("daemon", tok),
            **FAST,
        )
        assert r.process.containment == "process_group"
        assert with_daemon(tok)  # the documented limit of the fallback: outside the group
    finally:
        kill_token(tok)


def with_daemon(tok):
    from livehelp import with_token

    deadline = time.monotonic() + 2
    while not with_token(tok) and time.monotonic() < deadline:
        time.sleep(0.05)
    return with_token(tok)


def test_without_namespaces_auto_falls_back_to_the_process_group(monkeypatch):
    monkeypatch.setattr(executor, "_NS_AVAILABLE", False)
    with private_staging_dir() as d:
        r = run_process("/bin/echo", ["x"], stdin=None, staging_dir=d)
    assert (r.containment, r.stdout, r.exit_code) == ("process_group", b"x\n", 0)


@CONTAINED
def test_containment_keeps_exit_status_and_signal_apart():
    with private_staging_dir() as d:
        for args, status in ((["exit", "3"], (3, None)), (["self-signal", "15"], (None, 15))):
            r = run_process(
                sys.executable,
                [STUB, *args],
                stdin=None,
                staging_dir=d,
                containment="pid_namespace",
            )
            assert (r.exit_code, r.signal, r.containment) == (*status, "pid_namespace")


@CONTAINED
def test_the_harness_cannot_read_the_runners_environment(monkeypatch):
    monkeypatch.setenv("CHECKFU_RUNNER_SECRET", "runner-only-value-1234")
    r = run_turn(
        contract(output_mode="text"),
        TurnRequest("go"),
        env=minimal_environment({"MINE": "harness-visible"}),
        **harness("peek-environ"),
    )
    out = r.process.stdout.decode()
    assert "runner-only-value-1234" not in out and "CHECKFU_RUNNER_SECRET" not in out
    if os.geteuid() == 0:  # a root harness has a user namespace of its own: not even its init
        assert out.count("/proc/1/environ: Permission denied") == 2
    else:  # its parent (the namespace's init) has its own env
        assert "MINE=harness-visible" in out
    visible = json.loads(out.rsplit("pids ", 1)[1])
    assert visible[:2] == [1, 2] and len(visible) <= 4  # a fresh /proc: the namespace only


def test_the_executor_environment_is_exactly_env_also_contained():
    """No LC_CTYPE from Python's C-locale coercion in the launcher, nothing of the host."""
    with private_staging_dir() as d:
        for containment in ("pid_namespace", "process_group"):
            if containment == "pid_namespace" and not pid_namespace_available():
                continue
            r = run_process(
                "/usr/bin/env",
                [],
                stdin=None,
                staging_dir=d,
                env={"ONLY": "this"},
                containment=containment,
            )
            assert r.stdout == b"ONLY=this\n", containment


# -- hygiene: redaction --------------------------------------------------------------------------


def test_env_values_and_secret_tokens_never_reach_observations():
    secret = "s3cr3t-Value-of-the-harness"
    r = run_turn(
        contract(),
        TurnRequest("go"),
        env=minimal_environment({"CHECKFU_SECRET": secret}),
        **harness("secrets"),
    )
    text = json.dumps(r.observations)
    for leaked in (secret, "sk-proj-A1b2", "x9Yx9Y", "ghp_Zz9"):
        assert leaked not in text
        assert leaked.encode() not in r.process.stderr_tail
    assert r.observations[-1]["type"] == "observation.failed"
    message = r.observations[-1]["payload"]["error"]["message"]
    assert message == f"harness exited with status 1: error: auth failed for {MARK} ({MARK})"
    content = r.observations[1]["payload"]["content"]
    assert content == f"key {MARK} and {MARK} and Bearer {MARK}"
    assert secret not in r.resulting_state["last_response"]


def test_redaction_rules():
    redact = redactor({"API": "value-of-at-least-8", "SHORT": "abc", "HOME": "/home/some/user"})
    hidden = {
        "uses value-of-at-least-8 here": f"uses {MARK} here",
        "sk-ant-api03-" + "Ab1" * 10: MARK,
        "AKIAIOSFODNN7EXAMPLE": MARK,
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30": f"Authorization: Bearer {MARK}",
        "digest " + "0123456789abcdef" * 4: f"digest {MARK}",
        "b64 " + "QmFzZTY0IGtleSBtYXRlcmlhbCBmb3IgdGVzdGluZzEy": f"b64 {MARK}",
    }
    for text, expected in hidden.items():
        assert redact(text) == expected, text
    kept = [
        "abc stays (too short to tell from text)",
        "/home/some/user/file stays (HOME is no secret)",
        "sha 3f786850e387550fdab836ed7e6dc881de23001b stays (a git id)",
        "evt_" + "ab12" * 8 + " stays (our own digests)",
        "/usr/lib/python3.11/site-packages/SomeModule42/x.py",
        "a" * 300,
    ]
    for text in kept:
        assert redact(text) == text
    deep = redact_deep(
        {"a": ["value-of-at-least-8", {"b": 1}], "value-of-at-least-8": None}, redact
    )
    assert deep == {"a": [MARK, {"b": 1}], MARK: None}  # a secret used as a key: hidden too


# -- signals to the runner -----------------------------------------------------------------------

RUNNER = textwrap.dedent(
    """
    import os, signal, sys, time
    sys.path.insert(0, {tests!r})
    from livehelp import contract, harness
    from checkfu_fast.oneshot import TurnRequest, stream_turn
    if {ignore_sigint!r}:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    mode = {mode!r}
    opts = (
        {{"entrypoint": mode[0], "entrypoint_prefix": mode[1:]}} if mode[0].startswith("/")
        else harness(*mode)
    )
    with stream_turn(contract(), TurnRequest("go"), **opts,
                     sigint_grace_s=0.3, sigterm_grace_s=0.3, drain_s=0.3) as s:
        print(s._root, flush=True)
        for obs in s:
            pass
    print(s.result.process.stdout.decode(), flush=True)
    """
)


def start_runner(tmp_path, *mode, ignore_sigint=False):
    script = RUNNER.format(tests=str(Path(__file__).parent), mode=mode, ignore_sigint=ignore_sigint)
    return subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **PYTHONPATH, "TMPDIR": str(tmp_path)},
    )


def wait_for(path: Path, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT])
def test_signal_to_the_runner_mid_turn_kills_the_group_and_removes_the_staging_dir(tmp_path, sig):
    if sig != signal.SIGINT and not pid_namespace_available():
        pytest.skip("without a namespace only the SIGINT path (KeyboardInterrupt) cleans up")
    tok = token()
    started = tmp_path / "started"
    runner = start_runner(tmp_path, "stream-forever", str(started), tok)
    try:
        staging = Path(runner.stdout.readline().strip())
        wait_for(started)
        assert staging.is_dir() and with_daemon(tok)
        runner.send_signal(sig)
        runner.wait(timeout=10)
        assert gone(tok, within=3.0)
        deadline = time.monotonic() + 3
        while staging.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not staging.exists()
    finally:
        runner.kill()
        runner.wait()
        kill_token(tok)


def test_sigint_at_any_moment_of_the_spawn_leaks_nothing(tmp_path):
    """SIGINT after 0..150 ms: before, during and after the harness is spawned."""
    for i, delay in enumerate([0.0, 0.02, 0.05, 0.08, 0.11, 0.15]):
        tok = token()
        work = tmp_path / str(i)
        work.mkdir()
        runner = start_runner(work, "stream-forever", "", tok)
        try:
            time.sleep(delay + 0.15)  # the interpreter and imports take about 150 ms
            runner.send_signal(signal.SIGINT)
            runner.wait(timeout=15)
            assert gone(tok, within=3.0), delay
            deadline = time.monotonic() + 3
            while list(work.iterdir()) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert list(work.iterdir()) == [], delay
        finally:
            runner.kill()
            runner.wait()
            kill_token(tok)


@CONTAINED
def test_an_inherited_sig_ign_is_reset_for_the_harness(tmp_path):
    """The runner ignores SIGINT (nohup, a background job); the harness (grep here: Python
    would set its own SIG_IGN for SIGPIPE) starts with nothing ignored and nothing blocked."""
    runner = start_runner(
        tmp_path, "/bin/grep", "^Sig[IB]", "/proc/self/status", ignore_sigint=True
    )
    out, _ = runner.communicate(timeout=30)
    masks = dict(line.split(":\t") for line in out.splitlines() if line.startswith("Sig"))
    assert masks == {"SigBlk": "0000000000000000", "SigIgn": "0000000000000000"}


# -- spawn errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("guard", [True, False])
@pytest.mark.parametrize("containment", ["pid_namespace", "process_group"])
def test_a_shebangless_text_file_is_a_spawn_error(tmp_path, guard, containment):
    if containment == "pid_namespace" and not pid_namespace_available():
        pytest.skip("no PID namespace here")
    f = tmp_path / "not-a-program"
    marker = tmp_path / "ran"
    f.write_text(f"touch {marker}\necho ran\n")
    f.chmod(0o755)
    r = run_turn(
        contract(entrypoint=str(f)),
        TurnRequest("go"),
        parent_death_signal=guard,
        containment=containment,
    )
    assert r.observations[-1]["type"] == "observation.failed"
    assert r.observations[-1]["payload"]["error"]["type"] == "runtime.harness_unavailable"
    assert r.process.spawn_error == "not_executable" and not marker.exists()


@CONTAINED
def test_an_exec_failure_inside_the_namespace_is_a_spawn_error(tmp_path):
    f = tmp_path / "script"
    f.write_text("#!/nonexistent/interpreter\n")
    f.chmod(0o755)
    with private_staging_dir() as d:
        r = run_process(str(f), [], stdin=None, staging_dir=d, containment="pid_namespace")
    assert r.spawn_error == "not_found" and "No such file" in r.spawn_error_message


EMFILE_SCRIPT = textwrap.dedent(
    """
    import json, os, resource, sys
    from checkfu_fast.oneshot import TurnRequest, run_turn
    contract = {
        "image": "x", "entrypoint": "/bin/echo", "protocol": "oneshot-v1", "argv": ["hi"],
        "prompt_transport": "stdin", "output_mode": "text",
    }
    run_turn(contract, TurnRequest("warm up"))  # imports and the namespace probe, before
    fds = []
    try:
        while True:
            fds.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    for fd in fds[-2:]:  # room for the staging dir, not for the pipes
        os.close(fd)
    r = run_turn(contract, TurnRequest("go"))
    for fd in fds[:-2]:
        os.close(fd)
    print(json.dumps([r.observations[-1], r.process.spawn_error]))
    """
)


def test_host_fd_exhaustion_is_not_blamed_on_the_harness():
    proc = subprocess.run(
        ["/bin/sh", "-c", f'ulimit -n 256 && exec {sys.executable} -c "$0"', EMFILE_SCRIPT],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **PYTHONPATH},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ending, kind = json.loads(proc.stdout)
    assert kind == "host_resources"
    assert ending["type"] == "observation.retryable_failure"
    assert ending["payload"]["error"]["type"] == "runtime.runner_unavailable"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_run_on_sigterm_or_sigint_still_prints_the_ending(tmp_path, sig):
    """`checkfu-fast run` cancels the turn on SIGTERM/SIGINT: the ending observation and the
    state are printed (no lost record), the group is gone, the exit status is 128 + signal."""
    tok = token()
    started = tmp_path / "started"
    c = tmp_path / "c.json"
    c.write_text(json.dumps(contract(entrypoint=sys.executable)))
    prompt = tmp_path / "p.txt"
    prompt.write_text("go")
    wrapper = tmp_path / "harness.sh"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {STUB} stream-forever {started} {tok}\n")
    wrapper.chmod(0o755)
    work = tmp_path / "tmp"
    work.mkdir()
    cli = ["-m", "checkfu_fast", "run", str(c), "--prompt-file", str(prompt)]
    proc = subprocess.Popen(
        [sys.executable, *cli, "--entrypoint", str(wrapper)],
        stdout=subprocess.PIPE,
        env={**os.environ, **PYTHONPATH, "TMPDIR": str(work)},
    )
    try:
        wait_for(started)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=20)
        lines = [json.loads(line) for line in out.splitlines()]
        assert lines[-2]["type"] == "observation.finished"
        assert lines[-2]["payload"]["stop_reason"] == "interrupted"
        assert "resulting_state" in lines[-1]
        assert proc.returncode == 128 + sig
        assert gone(tok) and list(work.iterdir()) == []
    finally:
        proc.kill()
        proc.wait()
        kill_token(tok)


@pytest.mark.parametrize("err", [errno.ENOMEM, errno.EAGAIN])
@pytest.mark.parametrize("containment", ["pid_namespace", "process_group"])
def test_host_memory_or_process_exhaustion_at_spawn_is_host_resources(
    monkeypatch, err, containment
):
    """ENOMEM/EAGAIN from fork cannot be provoked reliably as root (RLIMIT_NPROC does not apply):
    the spawn itself is made to fail with it."""

    def refuse(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(executor.subprocess, "Popen", refuse)
    with private_staging_dir() as d:
        r = run_process("/bin/true", [], stdin=None, staging_dir=d, containment=containment)
    assert r.spawn_error == "host_resources" and os.strerror(err) in r.spawn_error_message


def test_many_contained_turns_at_once_leak_no_fd_and_no_child(tmp_path):
    """S9 for the live path: 24 turns from 8 threads at once (namespaces, sockets, workers)."""
    from concurrent.futures import ThreadPoolExecutor

    flag = tmp_path / "flag"
    flag.touch()

    def one(_):
        r = run_turn(contract(), TurnRequest("go"), **harness("stream-wait", str(flag)))
        return r.observations[-1]["type"], r.resulting_state["last_response"]

    run_turn(contract(), TurnRequest("go"), **harness("stream-wait", str(flag)))  # warm up
    fds = len(os.listdir("/proc/self/fd"))
    children = set(our_children())
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(24)))
    assert results == [("observation.finished", "done")] * 24
    assert len(os.listdir("/proc/self/fd")) == fds
    assert set(our_children()) <= children  # every launcher reaped, not even a zombie


def our_children() -> list[int]:
    """Children of this process, zombies included."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                ppid = next(int(line.split()[1]) for line in f if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue
        if ppid == os.getpid():
            found.append(int(d))
    return found


SAME_BOTH_WAYS = [  # (stub mode and args, run_process options, the fields compared)
    (["exit", "3"], {}, ("exit_code", "signal", "stdout", "killed_by_us")),
    (["self-signal", "9"], {}, ("exit_code", "signal", "killed_by_us")),
    (["stubborn"], {"deadline_s": 1.5}, ("signal", "timed_out", "killed_by_us")),
    (["descendants"], {"deadline_s": 0.5}, ("signal", "timed_out", "stdout")),
    (["flood"], {"output_cap": 1 << 20}, ("output_truncated", "killed_by_us", "timed_out")),
    (["stderr-flood"], {}, ("stdout", "stderr_tail", "exit_code")),
    (["write-first"], {"stdin": b"p" * (4 << 20)}, ("stdout", "exit_code", "stdin_broken")),
    (["close-stdin"], {"stdin": b"p" * (1 << 20)}, ("stdout", "exit_code", "stdin_broken")),
    (["leave-daemon"], {}, ("stdout", "exit_code", "killed_by_us")),
]


@CONTAINED
@pytest.mark.parametrize(("args", "options", "fields"), SAME_BOTH_WAYS, ids=lambda v: str(v))
def test_the_namespace_keeps_the_s1_to_s17_results(tmp_path, args, options, fields):
    """The same misbehaving harness gives the same result fields in both containments."""
    options = {"stdin": None, **FAST, **options}
    env = minimal_environment({"PIDFILE": str(tmp_path / "pids")})
    got = {}
    with private_staging_dir() as d:
        for containment in ("process_group", "pid_namespace"):
            r = run_process(
                sys.executable,
                [STUB, *args],
                staging_dir=d,
                env=env,
                containment=containment,
                **options,
            )
            assert r.containment == containment
            got[containment] = {f: getattr(r, f) for f in fields}
    assert got["pid_namespace"] == got["process_group"]


@CONTAINED
def test_an_interrupt_inside_popen_after_the_fork_leaks_nothing(tmp_path, monkeypatch):
    """The spawn window of a direct run_process call (no worker thread): KeyboardInterrupt
    lands after the fork, before Popen returns (the child is lost to us). Contained, our end of
    the launcher's socket closes on the way out, so the launcher ends the turn itself."""
    tok = token()
    real = executor.subprocess.Popen
    spawned = []

    def interrupted(*args, **kwargs):
        spawned.append(real(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(executor.subprocess, "Popen", interrupted)
    cleanup = tmp_path / "staging"
    cleanup.mkdir()
    try:
        with pytest.raises(KeyboardInterrupt), private_staging_dir() as d:
            run_process(
                sys.executable,
                [STUB, "stream-forever", "", tok],
                stdin=None,
                staging_dir=d,
                containment="pid_namespace",
                cleanup_dir=str(cleanup),
            )
        spawned[0].wait(timeout=5)  # the launcher (its argv has the token too) ended by itself
        assert gone(tok, within=3.0)
        assert not cleanup.exists()  # and removed the directory it was given
    finally:
        kill_token(tok)


@pytest.mark.parametrize("how", ["sys.exit(3)", "raise RuntimeError('runner bug')"])
def test_a_runner_that_exits_mid_turn_cancels_it_at_exit(tmp_path, how):
    """No `with`, no cancel: the interpreter's exit (atexit) still ends the turn and cleans up,
    contained or not."""
    tok = token()
    started = tmp_path / "started"
    script = textwrap.dedent(
        f"""
        import os, sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from livehelp import contract, harness
        from checkfu_fast.oneshot import TurnRequest, stream_turn
        s = stream_turn(contract(), TurnRequest("go"), containment="process_group",
                        **harness("stream-forever", {str(started)!r}, {tok!r}),
                        sigint_grace_s=0.3, sigterm_grace_s=0.3, drain_s=0.3)
        print(s._root, flush=True)
        while not os.path.exists({str(started)!r}):
            time.sleep(0.02)
        {how}
        """
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **PYTHONPATH, "TMPDIR": str(tmp_path)},
    )
    try:
        staging = Path(runner.stdout.readline().strip())
        runner.wait(timeout=20)
        assert runner.returncode != 0
        assert gone(tok, within=3.0) and not staging.exists()
    finally:
        runner.kill()
        runner.wait()
        kill_token(tok)
