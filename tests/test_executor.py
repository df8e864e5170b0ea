"""The local executor against misbehaving harnesses: failure modes S1-S17 of the reliability
notes (section 3.2), one or more tests each. Bounds on time are generous (no speed claims)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from checkfu_fast.oneshot import executor
from checkfu_fast.oneshot.executor import (
    StagedFile,
    StagingError,
    minimal_environment,
    private_staging_dir,
    run_process,
)

STUBS = Path(__file__).with_name("stubs")
STUB = str(STUBS / "harness.py")
FAST = {"sigint_grace_s": 0.2, "sigterm_grace_s": 0.2, "drain_s": 0.3}
LADDER_S = 0.2 + 0.2 + 1.0 + 2 * 0.3  # graces, the SIGKILL rung's wait, two drains


@pytest.fixture
def staging():
    with private_staging_dir() as d:
        yield d


@pytest.fixture
def pidfile(tmp_path):
    path = tmp_path / "pids"
    yield path
    for pid in pids(path):  # never leave a stray process behind, whatever the test did
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


OUR_PID_NS = os.readlink("/proc/self/ns/pid")


def pids(path: Path) -> list[int]:
    """Pids the stub noted, only those of our own PID namespace (see note_pid)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        pid, _, ns = line.partition(" ")
        if not ns or ns == OUR_PID_NS:
            out.append(int(pid))
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def stub(mode, *args, staging, stdin=None, env=None, pidfile=None, **kw):
    """The S1-S17 tests hold the process-group executor (the fallback) to its guarantees;
    the contained one is tested in tests/test_containment.py."""
    kw.setdefault("containment", "process_group")
    env = dict(env if env is not None else minimal_environment())
    if pidfile is not None:
        env["PIDFILE"] = str(pidfile)
    return run_process(
        sys.executable, [STUB, mode, *args], stdin=stdin, staging_dir=staging, env=env, **kw
    )


def test_s1_deadline_kills_the_whole_group(staging, pidfile):
    t = time.monotonic()
    r = stub("descendants", staging=staging, pidfile=pidfile, deadline_s=0.5, **FAST)
    assert time.monotonic() - t < 0.5 + 0.4 + 0.6 + 3
    assert r.timed_out and r.killed_by_us and r.exit_code is None
    assert r.signal == signal.SIGINT  # python dies of the first rung of the ladder
    assert r.stdout == b"started\n"
    (grandchild,) = pids(pidfile)
    deadline = time.monotonic() + 2
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(grandchild)


def test_s1_leader_exits_but_a_group_member_holds_the_pipes(staging, pidfile):
    t = time.monotonic()
    r = stub("leave-member", staging=staging, pidfile=pidfile, **FAST)
    assert time.monotonic() - t < LADDER_S + 3  # the member sleeps 1000 s with our pipes
    assert (r.exit_code, r.stdout, r.timed_out) == (0, b"leaving\n", False)
    assert r.killed_by_us and not r.escaped_descendants
    (member,) = pids(pidfile)
    assert wait_gone(member)


def test_s1_group_leftovers_are_killed_after_the_leader_exits(staging, pidfile):
    r = stub("leave-daemon", staging=staging, pidfile=pidfile, **FAST)
    assert (r.exit_code, r.stdout, r.killed_by_us) == (0, b"leaving\n", False)
    (member,) = pids(pidfile)
    assert wait_gone(member)


def test_s1_ladder_reaches_sigkill(staging):
    t = time.monotonic()
    r = stub("stubborn", staging=staging, deadline_s=0.3, **FAST)
    assert r.signal == signal.SIGKILL and r.timed_out
    assert 0.3 + 0.4 <= time.monotonic() - t < 4


def test_s2_escaped_descendant_does_not_hold_us(staging, pidfile):
    t = time.monotonic()
    r = stub("escape", staging=staging, pidfile=pidfile, **FAST)
    assert time.monotonic() - t < 3  # the escapee sleeps 30 s with our stdout open
    assert r.exit_code == 0 and r.stdout == b"escaped\n"
    assert r.escaped_descendants
    (escapee,) = pids(pidfile)
    assert alive(escapee)  # documented limit: outside our group, not ours to kill


def test_s2_escaped_descendant_under_the_deadline(staging, pidfile):
    t = time.monotonic()
    r = stub("escape", "hang", staging=staging, pidfile=pidfile, deadline_s=0.5, **FAST)
    assert time.monotonic() - t < 0.5 + LADDER_S + 3
    assert r.timed_out and r.killed_by_us and r.escaped_descendants
    assert r.signal == signal.SIGINT and r.stdout == b"escaped\n"


@pytest.mark.parametrize("kind", ["lines", "binary"])
def test_s3_output_cap(staging, kind):
    r = stub("flood", kind, staging=staging, output_cap=1 << 20, **FAST)
    assert r.output_truncated and r.killed_by_us and not r.timed_out
    assert len(r.stdout) == 1 << 20
    assert r.exit_code is None and r.signal is not None


def test_s3_exactly_at_the_cap_is_not_truncated(staging, tmp_path):
    f = tmp_path / "data"
    f.write_bytes(b"q" * 5000)
    r = stub("raw", str(f), staging=staging, output_cap=5000)
    assert (r.stdout, r.output_truncated, r.killed_by_us, r.exit_code) == (
        b"q" * 5000,
        False,
        False,
        0,
    )


def test_s4_stderr_flood_is_drained_into_a_tail(staging):
    r = stub("stderr-flood", staging=staging, stderr_tail_bytes=4096, deadline_s=30)
    assert r.exit_code == 0 and r.stdout == b"done\n" and not r.timed_out
    assert len(r.stderr_tail) == 4096 and r.stderr_tail.endswith(b"last stderr line\n")


def test_s5_large_prompt_while_the_child_writes_first(staging):
    prompt = b"p" * (8 << 20)
    r = stub("write-first", staging=staging, stdin=prompt, deadline_s=30)
    assert r.exit_code == 0 and not r.timed_out and not r.stdin_broken
    assert r.stdout.endswith(b"\n8388608\n") and len(r.stdout) == (1 << 20) + 1 + 8


def test_s6_child_closes_stdin_unread(staging):
    r = stub("close-stdin", staging=staging, stdin=b"x" * (8 << 20), deadline_s=30)
    assert r.stdin_broken and r.exit_code == 0 and r.stdout == b"bye\n"


def test_s6_child_exits_without_reading(staging):
    r = run_process("/bin/true", [], stdin=b"x" * (8 << 20), staging_dir=staging, deadline_s=30)
    assert r.stdin_broken and r.exit_code == 0 and not r.killed_by_us


def test_s6_empty_stdin_is_eof_not_devnull_confusion(staging):
    r = run_process("/bin/cat", [], stdin=b"", staging_dir=staging, deadline_s=30)
    assert (r.stdout, r.exit_code, r.stdin_broken) == (b"", 0, False)
    r = run_process("/bin/cat", [], stdin=None, staging_dir=staging, deadline_s=30)
    assert (r.stdout, r.exit_code) == (b"", 0)


def test_s7_stdin_write_is_under_the_deadline(staging):
    t = time.monotonic()
    r = stub("never-read", staging=staging, stdin=b"x" * (8 << 20), deadline_s=0.5, **FAST)
    assert r.timed_out and time.monotonic() - t < 4


@pytest.mark.parametrize(
    ("args", "exit_code", "sig"),
    [(("exit", "0"), 0, None), (("exit", "3"), 3, None), (("self-signal", "15"), None, 15)],
)
def test_s8_exit_code_and_signal_apart(staging, args, exit_code, sig):
    r = stub(*args, staging=staging)
    assert (r.exit_code, r.signal, r.killed_by_us, r.timed_out) == (exit_code, sig, False, False)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def zombies_of_ours() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if fields[0] == "Z" and int(fields[1]) == me:
                found.append(int(entry))
    return found


def many_runs(staging, n):
    before = open_fds()
    for i in range(n):
        r = run_process(
            "/bin/sh",
            ["-c", "echo out; echo err >&2; exit $0", str(i % 3)],
            stdin=b"x" if i % 2 else None,
            staging_dir=staging,
            staged_files=[StagedFile("prompt.txt", b"p")] if i % 5 == 0 else (),
        )
        assert r.exit_code == i % 3
    assert zombies_of_ours() == []
    assert open_fds() == before
    assert os.listdir(staging) == []


def test_s9_no_zombies_or_fd_leaks(staging):
    many_runs(staging, 200)


@pytest.mark.slow
def test_s9_no_zombies_or_fd_leaks_1000(staging):
    many_runs(staging, 1000)


def test_s10_keyboard_interrupt_kills_the_group_and_propagates(tmp_path):
    pidfile = tmp_path / "pids"
    script = textwrap.dedent(
        f"""
        import os, signal, sys, threading, time
        from checkfu_fast.oneshot.executor import (
            minimal_environment, private_staging_dir, run_process)
        fired = []
        def interrupt():
            fired.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Timer(0.5, interrupt).start()
        env = minimal_environment({{"PIDFILE": {str(pidfile)!r}}})
        with private_staging_dir() as d:
            try:
                run_process(
                    sys.executable, [{STUB!r}, "descendants"], stdin=None, staging_dir=d, env=env,
                    containment="process_group",
                )
            except KeyboardInterrupt:
                print(f"interrupted {{time.monotonic() - fired[0]:.3f}}", flush=True)
                raise
        """
    )
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=30)
    assert time.monotonic() - t < 5
    word, seconds = proc.stdout.split()
    assert word == b"interrupted" and float(seconds) < 1.5  # killed, reaped, re-raised
    assert b"KeyboardInterrupt" in proc.stderr and proc.returncode != 0
    (grandchild,) = pids(pidfile)
    assert wait_gone(grandchild)


RUNNER = """
import sys
from checkfu_fast.oneshot.executor import minimal_environment, private_staging_dir, run_process
env = minimal_environment({{"PIDFILE": {pidfile!r}}})
with private_staging_dir() as d:
    with open({pidfile!r} + ".staging", "w") as f:
        f.write(d)
    run_process(sys.executable, [{stub!r}, {mode!r}], stdin=None, staging_dir=d, env=env,
                parent_death_signal={guard!r}, containment="process_group")
"""


@pytest.fixture
def own_tmpdir(tmp_path, monkeypatch):
    """A ``$TMPDIR`` of this test's own (here and in the runners it starts): the sweep sees
    only this test's staging directories, not those of concurrent runs."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


def assert_the_next_turn_sweeps(left: str, tmp: Path) -> None:
    """``left`` (a staging directory) was left by a runner that died without cleaning up; the
    next turn's ``make_staging_dir`` removes it with its private parent, and once that turn
    has ended nothing of either is left in ``$TMPDIR``."""
    parent = os.path.dirname(left)
    assert os.path.isdir(left) and os.path.isfile(os.path.join(parent, "lock"))
    with private_staging_dir() as d:
        assert not os.path.lexists(parent)
        assert os.path.isdir(d)
    assert os.listdir(tmp) == []


def test_s11_parent_death_breaks_the_childs_pipes(pidfile, own_tmpdir):
    """Without the parent-death signal (no setpriv): a harness that writes stdout still dies
    of the broken pipe soon after its runner is SIGKILLed; the next turn removes the staging
    directory the runner left."""
    script = RUNNER.format(pidfile=str(pidfile), stub=STUB, mode="ticker", guard=False)
    runner = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 10
        while not pids(pidfile) and time.monotonic() < deadline:
            time.sleep(0.02)
        (child,) = pids(pidfile)
        assert alive(child)
    finally:
        runner.kill()
        runner.wait()
    assert wait_gone(child, within=5.0)
    assert_the_next_turn_sweeps(Path(f"{pidfile}.staging").read_text(), own_tmpdir)


def test_s11_silent_child_is_killed_with_its_parent(pidfile, own_tmpdir):
    """PR_SET_PDEATHSIG (through setpriv): a harness that neither writes nor reads dies with a
    SIGKILLed runner instead of running on (and billing) as an orphan; the next turn removes
    the staging directory the runner left."""
    script = RUNNER.format(pidfile=str(pidfile), stub=STUB, mode="silent", guard=True)
    runner = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 10
        while not pids(pidfile) and time.monotonic() < deadline:
            time.sleep(0.02)
        (child,) = pids(pidfile)
    finally:
        runner.kill()
        runner.wait()
    assert wait_gone(child, within=1.0)
    assert_the_next_turn_sweeps(Path(f"{pidfile}.staging").read_text(), own_tmpdir)


HOLDER = """
import sys
from checkfu_fast.oneshot.executor import make_staging_dir, remove_staging_dir
d = make_staging_dir()
print(d, flush=True)
sys.stdin.read()  # holds the lock until its stdin closes (or it is killed)
remove_staging_dir(d)
"""


def holder() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def test_s11_a_dead_runners_staging_dir_is_swept_a_live_ones_is_not(own_tmpdir):
    dead, dead_dir = holder()
    live, live_dir = holder()
    try:
        dead.kill()
        dead.wait()
        with private_staging_dir() as mine:
            with private_staging_dir():  # this process's own live turn: its lock is held too
                assert os.path.isdir(mine)
            assert not os.path.lexists(os.path.dirname(dead_dir))
            assert os.path.isdir(live_dir)  # its runner holds the lock
        assert os.path.isdir(live_dir)
    finally:
        live.communicate("")  # the live runner ends its turn normally
    assert live.returncode == 0
    assert not os.path.lexists(os.path.dirname(live_dir))
    assert os.listdir(own_tmpdir) == []


def test_s11_a_sweep_before_the_new_lock_is_taken_spares_the_new_dir(own_tmpdir, monkeypatch):
    """A concurrent turn's sweep that runs after this turn made its directory but before it
    took its lock (here: right before the ``flock``) finds no unlocked lock file to take."""
    root = str(own_tmpdir / f"checkfu-oneshot-{os.geteuid()}")
    real, swept = fcntl.flock, []

    def flock_after_a_sweep(fd, op):
        if not swept:
            swept.append(None)  # (the sweep's own flock calls go straight through)
            swept[0] = executor.sweep_staging_root(root)
        return real(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock_after_a_sweep)
    with private_staging_dir() as d:
        assert os.path.isdir(d) and swept == [0]
        assert sorted(os.listdir(os.path.dirname(d))) == ["lock", "turn"]
    assert os.listdir(own_tmpdir) == []


def test_a_ctrl_c_during_the_sweep_leaves_no_staging_dir(own_tmpdir, monkeypatch):
    """A KeyboardInterrupt raised while ``make_staging_dir`` sweeps the root (a runner's Ctrl-C
    arriving then: seen in test_containment's SIGINT-at-any-moment case under load) removes the
    directory it made and its private parent: the caller never got the name to remove it."""
    seen: list[str] = []

    def interrupted(root: str, keep: str = "") -> int:
        seen.extend(os.listdir(os.path.join(root, keep)))  # made, locked, then the sweep
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "sweep_staging_root", interrupted)
    with pytest.raises(KeyboardInterrupt):
        executor.make_staging_dir()
    assert sorted(seen) == ["lock", "turn"]
    root = own_tmpdir / f"checkfu-oneshot-{os.geteuid()}"
    assert not root.exists()  # the root too, once empty


@pytest.mark.parametrize("when", ["mkdir", "chmod"])
def test_a_ctrl_c_as_the_parent_is_made_leaves_nothing(own_tmpdir, monkeypatch, when):
    """A KeyboardInterrupt raised just after the private parent is made (as ``mkdir`` returns,
    where ``tempfile.mkdtemp`` then still had to hand its name back, or at the next step)
    removes it: nothing is left in the root, and the next turn works."""
    root = own_tmpdir / f"checkfu-oneshot-{os.geteuid()}"
    made: list[str] = []
    real_mkdir, real_chmod = os.mkdir, os.chmod

    def mkdir(path, mode=0o777, **kw):
        real_mkdir(path, mode, **kw)
        if os.path.dirname(os.fspath(path)) == str(root):
            made.append(os.fspath(path))
            if when == "mkdir":
                raise KeyboardInterrupt

    def chmod(path, mode, **kw):
        if when == "chmod" and os.fspath(path) in made:
            raise KeyboardInterrupt
        return real_chmod(path, mode, **kw)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "chmod", chmod)
    with pytest.raises(KeyboardInterrupt):
        executor.make_staging_dir()
    monkeypatch.undo()
    assert len(made) == 1 and os.path.basename(made[0]).startswith("checkfu-oneshot-")
    assert not root.exists()  # the root too, once empty
    path = executor.make_staging_dir()
    assert sorted(os.listdir(os.path.dirname(path))) == ["lock", "turn"]
    executor.remove_staging_dir(path)
    assert not root.exists() or os.listdir(root) == []


def test_a_ctrl_c_as_the_root_is_made_leaves_nothing(own_tmpdir, monkeypatch):
    """A KeyboardInterrupt just after the root of staging directories is made (seen in
    test_containment's SIGINT-at-any-moment case under load: an empty root left behind)."""
    real = executor.staging_root

    def interrupted() -> str | None:
        real()
        raise KeyboardInterrupt

    monkeypatch.setattr(executor, "staging_root", interrupted)
    with pytest.raises(KeyboardInterrupt):
        executor.make_staging_dir()
    assert os.listdir(own_tmpdir) == []


def old_lockless(root: Path, name: str, age_s: float) -> Path:
    """A staging directory as a runner of an older version left it (no lock file)."""
    parent = root / name
    (parent / "turn").mkdir(parents=True, mode=0o700)
    (parent / "turn" / "prompt.txt").write_text("x")
    when = time.time() - age_s
    os.utime(parent, (when, when))
    return parent


def test_s11_the_sweep_takes_old_lockless_dirs_and_follows_no_symlink(own_tmpdir, tmp_path):
    root = own_tmpdir / f"checkfu-oneshot-{os.geteuid()}"
    root.mkdir(mode=0o700)
    day = executor.UNLOCKED_STALE_S
    old = old_lockless(root, "checkfu-oneshot-old00000", day + 60)
    recent = old_lockless(root, "checkfu-oneshot-recent00", day - 600)  # may still be running
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "lock").write_text("keep")
    (outside / "turn").mkdir()
    link = root / "checkfu-oneshot-link0000"
    link.symlink_to(outside)
    os.utime(link, (time.time() - 2 * day,) * 2, follow_symlinks=False)
    fifo = old_lockless(root, "checkfu-oneshot-fifo0000", day + 60)
    os.mkfifo(fifo / "lock")  # not a regular lock file: left alone (and no hang on it)
    os.utime(fifo, (time.time() - 2 * day,) * 2)
    with private_staging_dir():
        assert not old.exists()
        assert recent.is_dir() and (recent / "turn" / "prompt.txt").exists()
        assert link.is_symlink() and (outside / "lock").read_text() == "keep"
        assert (outside / "turn").is_dir()
        assert fifo.is_dir()
    assert sorted(os.listdir(root)) == sorted([link.name, fifo.name, recent.name])


def test_s11_one_sweep_removes_a_bounded_number_of_dirs(own_tmpdir):
    root = own_tmpdir / f"checkfu-oneshot-{os.geteuid()}"
    root.mkdir(mode=0o700)
    n = executor.SWEEP_REMOVE + 3
    for i in range(n):
        old_lockless(root, f"checkfu-oneshot-{i:08d}", executor.UNLOCKED_STALE_S + 60)
    with private_staging_dir():
        assert len(os.listdir(root)) == 1 + 3  # this turn's and the 3 left for the next turn
    with private_staging_dir():
        assert len(os.listdir(root)) == 1
    assert os.listdir(own_tmpdir) == []


def test_s11_every_exit_path_lets_go_of_the_lock(own_tmpdir):
    """An exception in the turn, a timeout, a spawn error: the directory is removed and its
    lock's descriptor closed (none is held once no turn runs)."""
    before = open_fds()
    with pytest.raises(RuntimeError), private_staging_dir() as d:
        raise RuntimeError("the turn failed")
    assert not os.path.lexists(os.path.dirname(d))
    with private_staging_dir() as d:
        assert stub("stubborn", staging=d, deadline_s=0.3, **FAST).timed_out
    with private_staging_dir() as d:
        assert run_process("/no/such", [], stdin=None, staging_dir=d).spawn_error == "not_found"
    assert executor._HELD == {}
    assert open_fds() == before
    assert os.listdir(own_tmpdir) == []


def env_of_child(staging, env):
    r = run_process("/usr/bin/env", [], stdin=None, staging_dir=staging, env=env)
    return dict(line.split("=", 1) for line in r.stdout.decode().splitlines())


def test_s12_environment_is_exactly_the_allowlist(staging, monkeypatch):
    monkeypatch.setenv("CHECKFU_TEST_SECRET", "hunter2")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-host")
    assert env_of_child(staging, None) == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": staging,
        "LANG": "C.UTF-8",
    }
    assert env_of_child(staging, {"ONLY": "this"}) == {"ONLY": "this"}
    got = env_of_child(staging, minimal_environment({"ANTHROPIC_API_KEY": "sk-agent"}))
    assert got["ANTHROPIC_API_KEY"] == "sk-agent" and "CHECKFU_TEST_SECRET" not in got


def test_s13_arguments_are_whole_literal_elements(staging):
    hostile = [
        "--dangerously-skip-permissions",
        "$(rm -rf /)",
        "-c key=val",
        "a b\tc",
        "'quoted' \"double\"",
        "; echo pwned",
        "",
        "é ✓",
    ]
    r = stub("argv", *hostile, staging=staging)
    assert json.loads(r.stdout) == hostile


def test_s13_longest_single_argument_passes(staging):
    longest = "é" * ((128 * 1024 - 1) // 2) + "x"  # 131,071 bytes of UTF-8
    assert len(longest.encode()) == 128 * 1024 - 1
    r = stub("argv", longest, staging=staging)
    assert r.exit_code == 0 and json.loads(r.stdout) == [longest]


def test_s13_command_line_over_arg_max_is_a_value_error(staging):
    arg_max = os.sysconf("SC_ARG_MAX")
    if arg_max > 64 << 20:
        pytest.skip(f"ARG_MAX is {arg_max}")
    many = ["y" * 100_000] * (arg_max // 100_000 + 2)
    with pytest.raises(ValueError, match="stdin or a staged file"):
        run_process(
            "/bin/true",
            many,
            stdin=None,
            staging_dir=staging,
            staged_files=[StagedFile("p.txt", b"")],
        )
    assert os.listdir(staging) == []


@pytest.mark.parametrize("bad", ["a\x00b", "x" * (128 * 1024)])
def test_s13_nul_and_oversized_arguments_rejected_before_spawn(staging, bad):
    with pytest.raises(ValueError, match=r"stdin|NUL"):
        run_process("/bin/echo", [bad], stdin=None, staging_dir=staging)


def test_s14_staged_files_are_private_and_removed(staging):
    path = os.path.join(staging, "prompt.txt")
    r = stub(
        "cat-staged",
        path,
        staging=staging,
        staged_files=[StagedFile("prompt.txt", "héllo {prompt_path}".encode())],
    )
    assert r.stdout == "héllo {prompt_path}\nmode=0o600\n".encode()
    assert os.listdir(staging) == []


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "/etc/passwd", "a\\b", "a\x00b", "x" * 256]
)
def test_s14_unsafe_names_rejected(staging, name):
    with pytest.raises(StagingError):
        run_process(
            "/bin/true", [], stdin=None, staging_dir=staging, staged_files=[StagedFile(name, b"")]
        )


def test_s14_planted_symlink_is_not_followed(staging, tmp_path):
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")
    os.symlink(target, os.path.join(staging, "prompt.txt"))
    with pytest.raises(StagingError, match="already exists"):
        run_process(
            "/bin/true",
            [],
            stdin=None,
            staging_dir=staging,
            staged_files=[StagedFile("prompt.txt", b"overwrite")],
        )
    assert target.read_bytes() == b"keep me"


def test_s14_dangling_symlink_and_duplicates(staging, tmp_path):
    os.symlink(tmp_path / "nowhere", os.path.join(staging, "a.txt"))
    with pytest.raises(StagingError):
        run_process(
            "/bin/true",
            [],
            stdin=None,
            staging_dir=staging,
            staged_files=[StagedFile("a.txt", b"")],
        )
    assert not (tmp_path / "nowhere").exists()
    os.unlink(os.path.join(staging, "a.txt"))
    twice = [StagedFile("b.txt", b"1"), StagedFile("b.txt", b"2")]
    with pytest.raises(StagingError):
        run_process("/bin/true", [], stdin=None, staging_dir=staging, staged_files=twice)
    assert os.listdir(staging) == []  # the first one is removed again


def test_s14_staged_files_removed_after_a_timeout(staging):
    r = stub(
        "never-read",
        staging=staging,
        staged_files=[StagedFile("prompt.txt", b"p")],
        deadline_s=0.2,
        **FAST,
    )
    assert r.timed_out and os.listdir(staging) == []


def test_s14_stagingerror_is_a_valueerror_with_a_code():
    assert issubclass(StagingError, ValueError)
    assert StagingError.code == "validation.malformed"


def test_s14_private_staging_dir():
    with private_staging_dir() as d:
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
        Path(d, "left-behind").write_text("x")
    assert not os.path.exists(d)


@pytest.mark.parametrize(
    ("entrypoint", "kind"),
    [("sh", "not_found"), ("/no/such/harness", "not_found"), ("/tmp", "not_executable")],
)
def test_s15_entrypoint_checked_up_front(staging, entrypoint, kind):
    r = run_process(entrypoint, [], stdin=None, staging_dir=staging)
    assert (r.spawn_error, r.exit_code, r.stdout) == (kind, None, b"")
    assert r.spawn_error_message


def test_s15_missing_script_interpreter_is_a_spawn_error(staging, tmp_path):
    f = tmp_path / "harness"
    f.write_text("#!/no/such/interpreter\n")
    f.chmod(0o755)
    for guard in (True, False):  # through setpriv or not, the same result
        r = run_process(str(f), [], stdin=None, staging_dir=staging, parent_death_signal=guard)
        assert (r.spawn_error, r.exit_code, r.stdout, r.stderr_tail) == (
            "not_found",
            None,
            b"",
            b"",
        )
        assert str(f) in (r.spawn_error_message or "")


def test_s15_non_executable_file(staging, tmp_path):
    f = tmp_path / "harness"
    f.write_text("#!/bin/sh\necho hi\n")
    assert run_process(str(f), [], stdin=None, staging_dir=staging).spawn_error == "not_executable"


def test_s15_script_by_absolute_path_only(staging):
    hello = STUBS / "hello.sh"
    r = run_process(str(hello), ["world"], stdin=None, staging_dir=staging)
    assert (r.stdout, r.exit_code, r.spawn_error) == (b"hello world\n", 0, None)
    env = minimal_environment({"PATH": str(STUBS)})  # even with it on PATH and in cwd
    r = run_process("hello.sh", [], stdin=None, staging_dir=staging, cwd=str(STUBS), env=env)
    assert r.spawn_error == "not_found" and r.stdout == b""


def test_s16_non_jsonl_stdout_is_returned_byte_for_byte(staging, tmp_path):
    junk = b'Traceback (most recent call last):\n<html>502</html>\n\xff\xfe\x00{"type":"resu'
    f = tmp_path / "junk"
    f.write_bytes(junk)
    assert stub("raw", str(f), staging=staging).stdout == junk


def test_s17_pipes_not_a_pty(staging, tmp_path):
    data = b"crlf line\r\n" + b"z" * (100 * 1024) + b"\n"
    f = tmp_path / "data"
    f.write_bytes(data)
    r = stub("raw", str(f), staging=staging)
    assert r.stdout == data  # no CRLF translation, no 4 KiB line limit
    assert r.stderr_tail == b"on stderr\n"  # not merged into stdout


def test_without_pidfd_the_loop_still_notices_exit_and_deadline(staging, pidfile, monkeypatch):
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    r = stub("exit", "3", staging=staging)
    assert (r.exit_code, r.stdout) == (3, b"exiting\n")
    r = stub("descendants", staging=staging, pidfile=pidfile, deadline_s=0.3, **FAST)
    assert r.timed_out and r.signal == signal.SIGINT
    (grandchild,) = pids(pidfile)
    assert wait_gone(grandchild)
