"""oneshot-v1 section 3: run a harness process safely (Linux/POSIX, stdlib only).

What it guarantees (each is a test in tests/test_executor.py, ids from the reliability notes):

- S13 no shell, argv passed as whole elements; NUL or > 128 KiB arguments rejected before spawn.
- S15 the entrypoint is an absolute path checked up front (``spawn_error`` ``not_found`` /
  ``not_executable``); ``PATH`` is never searched.
- S14 staged files: one safe name component each, created ``O_CREAT|O_EXCL|O_NOFOLLOW`` 0600
  relative to the staging directory (a planted symlink is an error, its target untouched),
  removed after the run; ``private_staging_dir`` makes a 0700 ``mkdtemp`` and removes it.
- S12 the child environment is exactly ``env`` (``minimal_environment()`` when None): nothing is
  inherited from the host.
- S5/S6/S7 one ``selectors`` loop writes stdin and reads stdout and stderr together (no
  deadlock on large prompts); EPIPE means the child stopped reading (``stdin_broken``); the
  write is under the deadline.
- S1 the child runs in a new session (its own process group); on deadline, output cap or
  cancellation the group gets SIGINT, SIGTERM after ``sigint_grace_s``, SIGKILL after
  ``sigterm_grace_s``; then a bounded drain (``drain_s``) and our pipe ends are closed
  regardless of EOF. When the leader exits by itself but its pipes stay open, the rest of the
  group is killed after ``drain_s``.
- S2 a descendant that left the group (``setsid``, double fork) cannot be signalled through the
  group; the bounded drain still returns on time and ``escaped_descendants`` says a pipe was
  still held open. Containing such processes needs a cgroup or a PID namespace (a container
  executor), which this local executor does not have.
- S3 stdout beyond ``output_cap`` is not stored: the group is killed, ``output_truncated``.
- S4 stderr is drained into a ring buffer of the last ``stderr_tail_bytes`` bytes.
- S8 ``exit_code`` and ``signal`` are reported apart; a kill is never mapped to success.
- S9 every child is reaped and every fd closed, also on errors.
- S10 any exception while waiting (``KeyboardInterrupt`` included) kills and reaps the group
  before it propagates; the loop wakes at least every 50 ms.
- S11 limit: if *this* process is SIGKILLed, the child is not killed (``PR_SET_PDEATHSIG``
  would need ``preexec_fn``, unsafe with threads); its stdin and stdout pipes break, which
  harnesses reading stdin or writing stdout notice. Run under a supervisor that owns a cgroup
  when that matters.
- S16/S17 stdout is returned byte for byte through pipes (never a pty): CRLF, binary junk and a
  half-written last line are preserved for the normalizer.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..errors import CheckfuError

MAX_ARG_BYTES = 131_072 - 1  # Linux MAX_ARG_STRLEN includes the terminating NUL
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
READ_CHUNK = 1 << 16
TICK_S = 0.05


@dataclass(frozen=True)
class StagedFile:
    name: str  # a single safe path component, e.g. "prompt.txt"
    content: bytes


@dataclass(frozen=True)
class ProcessResult:
    stdout: bytes
    stderr_tail: bytes
    exit_code: int | None
    signal: int | None
    timed_out: bool
    killed_by_us: bool
    output_truncated: bool
    wall_time_ms: int
    spawn_error: str | None
    spawn_error_message: str | None
    escaped_descendants: bool
    stdin_broken: bool


class StagingError(CheckfuError, ValueError):
    """An unsafe staged file name, or something already at its place (a planted symlink)."""

    code = "validation.malformed"


def minimal_environment(
    extra: Mapping[str, str] | None = None, *, home: str | None = None
) -> dict[str, str]:
    """``PATH`` (a fixed safe list), ``HOME`` (``home``, else the host user's home directory),
    ``LANG=C.UTF-8``, then ``extra`` exactly. Nothing else from the host environment."""
    env = {
        "PATH": SAFE_PATH,
        "HOME": home if home is not None else os.path.expanduser("~"),
        "LANG": "C.UTF-8",
    }
    env.update(extra or {})
    return env


@contextlib.contextmanager
def private_staging_dir() -> Iterator[str]:
    """A fresh ``mkdtemp`` directory (mode 0700), removed with its content afterwards."""
    path = tempfile.mkdtemp(prefix="checkfu-oneshot-")
    try:
        os.chmod(path, 0o700)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def check_staged_name(name: str) -> None:
    raw = name.encode("utf-8", "surrogatepass") if isinstance(name, str) else b""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or "/" in name
        or "\\" in name
        or "\x00" in name
        or len(raw) > 255
    ):
        raise StagingError(f"unsafe staged file name {name!r}: must be one plain path component")


def _stage(staging_dir: str, files: Sequence[StagedFile]) -> list[str]:
    for f in files:
        check_staged_name(f.name)
    written: list[str] = []
    dfd = os.open(staging_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for f in files:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(f.name, flags, 0o600, dir_fd=dfd)
            except FileExistsError:
                raise StagingError(
                    f"staged file {f.name!r} already exists in {staging_dir} (not overwritten)"
                ) from None
            written.append(f.name)
            with os.fdopen(fd, "wb") as out:
                out.write(f.content)
    except BaseException:
        _unstage(dfd, written)
        os.close(dfd)
        raise
    os.close(dfd)
    return written


def _unstage(dfd: int, names: list[str]) -> None:
    for name in names:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)


def _check_argv(argv: Sequence[str]) -> list[str]:
    out = []
    for i, a in enumerate(argv):
        if not isinstance(a, str):
            raise TypeError(f"argv[{i}] must be str, not {type(a).__name__}")
        if "\x00" in a:
            raise ValueError(f"argv[{i}] contains NUL; pass such text via stdin or a file")
        if len(a.encode("utf-8", "surrogatepass")) > MAX_ARG_BYTES:
            raise ValueError(
                f"argv[{i}] is longer than 128 KiB, the Linux limit for one argument; "
                "pass it via stdin or a staged file"
            )
        out.append(a)
    return out


def _spawn_check(entrypoint: str) -> tuple[str, str] | None:
    if not os.path.isabs(entrypoint):
        return "not_found", f"entrypoint {entrypoint!r} is not an absolute path"
    try:
        st = os.stat(entrypoint)
    except FileNotFoundError:
        return "not_found", f"entrypoint {entrypoint} not found"
    except OSError as exc:
        return "not_executable", f"entrypoint {entrypoint}: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode) or not os.access(entrypoint, os.X_OK):
        return "not_executable", f"entrypoint {entrypoint} is not an executable file"
    return None


def _not_run(kind: str, message: str) -> ProcessResult:
    return ProcessResult(b"", b"", None, None, False, False, False, 0, kind, message, False, False)


class _Group:
    """Signals to the child's process group, guarded against pgid 0, 1 and our own group."""

    def __init__(self, pid: int) -> None:
        self.pgid = pid if pid > 1 and pid != os.getpgrp() else None

    def send(self, sig: int) -> None:
        if self.pgid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)


def run_process(
    entrypoint: str,
    argv: Sequence[str],
    *,
    stdin: bytes | None,
    staging_dir: str,
    staged_files: Sequence[StagedFile] = (),
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    deadline_s: float = 600.0,
    output_cap: int = 64 * 1024 * 1024,
    stderr_tail_bytes: int = 64 * 1024,
    sigint_grace_s: float = 2.0,
    sigterm_grace_s: float = 2.0,
    drain_s: float = 2.0,
) -> ProcessResult:
    """Run ``entrypoint argv...`` once and return what happened (see the module docstring)."""
    args = _check_argv(argv)
    problem = _spawn_check(entrypoint)
    if problem is not None:
        return _not_run(*problem)
    child_env = dict(env) if env is not None else minimal_environment(home=staging_dir)
    staged = _stage(staging_dir, staged_files)
    try:
        return _run(
            [entrypoint, *args],
            stdin,
            cwd or staging_dir,
            child_env,
            deadline_s,
            output_cap,
            stderr_tail_bytes,
            (sigint_grace_s, sigterm_grace_s, drain_s),
        )
    finally:
        dfd = os.open(staging_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        _unstage(dfd, staged)
        os.close(dfd)


def _run(
    cmd: list[str],
    stdin: bytes | None,
    cwd: str,
    env: dict[str, str],
    deadline_s: float,
    output_cap: int,
    tail_bytes: int,
    graces: tuple[float, float, float],
) -> ProcessResult:
    sigint_grace, sigterm_grace, drain = graces
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            close_fds=True,
            start_new_session=True,
        )
    except FileNotFoundError as exc:  # e.g. a missing cwd or script interpreter
        return _not_run("not_found", f"cannot start {cmd[0]}: {exc.strerror}: {exc.filename}")
    except OSError as exc:  # ENOEXEC, EACCES, E2BIG
        return _not_run("not_executable", f"cannot start {cmd[0]}: {exc.strerror}")
    started = time.monotonic()
    group = _Group(proc.pid)
    sel = selectors.DefaultSelector()
    stdout = bytearray()
    tail = bytearray()
    pending = memoryview(stdin) if stdin else memoryview(b"")
    state = {"stdin_broken": False, "truncated": False}
    open_fds: dict[int, str] = {}

    def close(fd: int) -> None:
        with contextlib.suppress(KeyError, ValueError):
            sel.unregister(fd)
        open_fds.pop(fd, None)
        with contextlib.suppress(OSError):
            os.close(fd)

    # take the raw fds from the Popen file objects so that only we close them
    for name, fobj in (("stdout", proc.stdout), ("stderr", proc.stderr), ("stdin", proc.stdin)):
        if fobj is None:
            continue
        fd = os.dup(fobj.fileno())
        fobj.close()
        os.set_blocking(fd, False)
        open_fds[fd] = name
        sel.register(fd, selectors.EVENT_WRITE if name == "stdin" else selectors.EVENT_READ, name)
    proc.stdin = proc.stdout = proc.stderr = None
    if stdin is not None and not pending:
        for fd, name in list(open_fds.items()):
            if name == "stdin":
                close(fd)

    def pump(until: float, stop_on_exit: bool = False) -> None:
        """Move bytes until ``until``, every pipe is closed, the output cap is reached, or (with
        ``stop_on_exit``) the leader has exited."""
        nonlocal pending
        while open_fds:
            left = until - time.monotonic()
            if left <= 0:
                return
            for key, _ in sel.select(min(left, TICK_S)):
                fd, name = key.fd, key.data
                if name == "stdin":
                    try:
                        n = os.write(fd, pending[:READ_CHUNK])
                    except BlockingIOError:
                        continue
                    except (BrokenPipeError, ConnectionResetError):
                        state["stdin_broken"] = True
                        close(fd)
                        continue
                    pending = pending[n:]
                    if not pending:
                        close(fd)
                    continue
                try:
                    data = os.read(fd, READ_CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    close(fd)
                elif name == "stdout":
                    room = output_cap - len(stdout)
                    if room > 0:
                        stdout.extend(data[:room])
                    if len(data) > room:
                        state["truncated"] = True
                else:
                    tail.extend(data)
                    if len(tail) > tail_bytes:
                        del tail[: len(tail) - tail_bytes]
            if state["truncated"] and not killed:
                return
            if stop_on_exit and proc.poll() is not None:
                return

    def reading_open() -> bool:
        return any(n != "stdin" for n in open_fds.values())

    deadline = started + deadline_s
    timed_out = killed = False
    escaped = False
    try:
        while True:
            pump(deadline, stop_on_exit=True)
            if state["truncated"] or time.monotonic() >= deadline:
                timed_out = not state["truncated"]
                break
            if proc.poll() is not None:
                break
            if not reading_open():
                # pipes closed but the leader lives on: wait for it under the deadline
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=min(TICK_S, max(deadline - time.monotonic(), 0)))
                if proc.poll() is not None:
                    break
        if timed_out or state["truncated"]:
            killed = True
            for sig, grace in (
                (signal.SIGINT, sigint_grace),
                (signal.SIGTERM, sigterm_grace),
                (signal.SIGKILL, 0.0),
            ):
                group.send(sig)
                end = time.monotonic() + grace
                while time.monotonic() < end and proc.poll() is None:
                    pump(min(end, time.monotonic() + TICK_S), stop_on_exit=True)
                if proc.poll() is not None:
                    break
            proc.wait()
            group.send(signal.SIGKILL)  # whatever is left of the group
        # the leader is gone: give the pipes a bounded drain, then clean up the rest of the group
        pump(time.monotonic() + drain)
        if reading_open():
            killed = True
            group.send(signal.SIGKILL)
            pump(time.monotonic() + drain)
            escaped = reading_open()
        returncode = proc.wait()
    except BaseException:
        group.send(signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.wait(timeout=5)
        raise
    finally:
        for fd in list(open_fds):
            close(fd)
        sel.close()
    wall_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(
        stdout=bytes(stdout),
        stderr_tail=bytes(tail),
        exit_code=returncode if returncode >= 0 else None,
        signal=-returncode if returncode < 0 else None,
        timed_out=timed_out,
        killed_by_us=killed,
        output_truncated=state["truncated"],
        wall_time_ms=wall_ms,
        spawn_error=None,
        spawn_error_message=None,
        escaped_descendants=escaped,
        stdin_broken=state["stdin_broken"],
    )


__all__ = [
    "ProcessResult",
    "StagedFile",
    "StagingError",
    "minimal_environment",
    "private_staging_dir",
    "run_process",
]
