"""The contained launcher of a harness (stdlib only, run as ``python3 -I -S _init.py``).

``_init.py SOCK_FD CLEANUP_DIR -- ENTRYPOINT ARG...`` (``CLEANUP_DIR`` may be empty).

Started by the executor as the leader of the turn's process group. It puts the harness in a
fresh PID namespace with its own ``/proc`` (``unshare(CLONE_NEWPID | CLONE_NEWNS)``, plus
``CLONE_NEWUSER`` mapping the caller's own uid when not root), forks the namespace's init (pid
1), which forks the harness (pid 2). When the namespace's init dies, the kernel SIGKILLs every
process left in the namespace, ``setsid`` daemons with closed descriptors included.

Messages to the executor on ``SOCK_FD`` (a socket; one ASCII line each):
  ``ns 1`` / ``ns 0 <errno>``   the namespace (with its /proc) was made / could not be (then
                                the harness is our direct child, or, when only the /proc mount
                                failed, in the namespace without a fresh /proc; either way the
                                executor reports ``process_group``)
  ``exec <errno>``             the harness could not be executed (no shell fallback)
  ``exit <n>`` / ``signal <n>`` how the harness itself ended

End of file on ``SOCK_FD`` while we live means the executor died (when it finishes a turn it
kills the whole group, us included, before closing its end): ``CLEANUP_DIR`` is removed and
every process of the namespace is SIGKILLed (uncontained: our process group), so a runner
killed by SIGKILL still leaves no process and no staged prompt behind.

The harness gets every signal disposition reset to the default and an empty signal mask (an
inherited ``SIG_IGN`` for SIGINT from ``nohup`` or a background shell does not reach it, nor
one for the signals 32 and 33 that glibc reserves: those are reset with ``rt_sigaction``).
(stdlib only and few imports: this runs once per turn, its start-up is the containment's cost)
"""

# ruff: noqa: SIM105  (try/except/pass: no contextlib import, it slows the start)
import ctypes
import errno
import os
import select
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
# rt_sigaction(2) by number, per machine: glibc keeps signals 32 and 33 for itself and refuses
# them to sigaction(), yet a SIG_IGN on them is inherited through exec (Debian's GNU make leaves
# both ignored for its recipes), so they are reset with the system call itself
SYS_RT_SIGACTION = {"x86_64": 13, "aarch64": 134}


def _say(sock: int, text: str) -> None:
    try:
        os.write(sock, text.encode() + b"\n")
    except OSError:
        pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _unshare() -> int:
    """0 when the namespaces were made, else the errno."""
    libc = _libc()
    flags = CLONE_NEWPID | CLONE_NEWNS
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    if libc.unshare(flags) != 0:
        return ctypes.get_errno() or errno.EPERM
    if uid != 0:
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError as exc:
            return exc.errno or errno.EPERM
    return 0


def _mount_proc() -> None:
    libc = _libc()
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount --make-rprivate /")
    if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        raise OSError(ctypes.get_errno(), "mount proc")


def _default_signals() -> None:
    refused = []
    for sig in range(1, signal.NSIG):
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except OSError:
            refused.append(sig)  # EINVAL: one glibc reserves
        except (ValueError, RuntimeError):
            pass
    nr = SYS_RT_SIGACTION.get(os.uname().machine)
    if refused and nr is not None:
        libc = _libc()
        act = ctypes.create_string_buffer(32)  # all zero: SIG_DFL, no flags, an empty mask
        for sig in refused:
            libc.syscall(ctypes.c_long(nr), ctypes.c_long(sig), act, None, ctypes.c_long(8))
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _original_environment() -> dict[bytes, bytes]:
    """The environment exactly as we were started with it: Python's C-locale coercion
    (PEP 538) adds ``LC_CTYPE`` to ``os.environ``, which the harness must not see."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(os.environb)
    env: dict[bytes, bytes] = {}
    for item in raw.split(b"\0"):
        name, eq, value = item.partition(b"=")
        if eq and name:
            env.setdefault(name, value)
    return env


ENV: dict[bytes, bytes] = {}


def _start_harness(sock: int, argv: list[str]) -> int | None:
    """Fork and exec the harness; its pid, or None (reported) when it could not be executed."""
    r, w = os.pipe()  # close-on-exec: EOF without data means the exec succeeded
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _default_signals()
            os.execve(argv[0], argv, ENV)
        except OSError as exc:
            os.write(w, str(exc.errno or errno.ENOEXEC).encode())
        finally:
            os._exit(127)
    os.close(w)
    data = b""
    while True:
        try:
            chunk = os.read(r, 64)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if not chunk:
            break
        data += chunk
    os.close(r)
    if data:
        os.waitpid(pid, 0)
        _say(sock, f"exec {int(data)}")
        return None
    return pid


def _finish(cleanup: str) -> None:
    """The executor let go of us while we live: it died (it kills the whole group, us included,
    before it closes its end when it finishes a turn). Remove the staging directory, then kill
    what is left: the whole namespace (we are its init) or, uncontained, our process group."""
    if cleanup:
        import shutil  # only here: it is slow to import

        shutil.rmtree(cleanup, ignore_errors=True)
    try:
        if os.getpid() == 1:
            os.kill(-1, signal.SIGKILL)  # every other process of the namespace
        else:
            os.killpg(0, signal.SIGKILL)  # our group (the harness's, unless it left it)
    except OSError:
        pass


def _supervise(sock: int, cleanup: str, argv: list[str]) -> None:
    """Run the harness; report how it ended; then wait for the executor to let go."""
    if select.select([sock], [], [], 0)[0] and not os.read(sock, 64):
        _finish(cleanup)  # the executor died while we were starting: run nothing
        return
    harness = _start_harness(sock, argv)
    null = os.open(os.devnull, os.O_RDWR)  # the harness has our pipes: let go of them
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    done = harness is None
    watch = [sock]
    if harness is not None and hasattr(os, "pidfd_open"):
        try:  # a pidfd wakes us the moment the harness exits
            watch.append(os.pidfd_open(harness))
        except OSError:
            pass
    while True:
        try:
            ready, _, _ = select.select(watch if not done else [sock], [], [], 0.05)
        except InterruptedError:  # pragma: no cover - PEP 475 retries
            continue
        if sock in ready:
            try:
                data = os.read(sock, 64)
            except OSError:
                data = b""
            if not data:  # the executor closed its end (done) or died
                _finish(cleanup)
                return
        while True:  # reap everything (we may be the namespace's init)
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid == harness and not done:
                done = True
                if os.WIFSIGNALED(status):
                    _say(sock, f"signal {os.WTERMSIG(status)}")
                else:
                    _say(sock, f"exit {os.waitstatus_to_exitcode(status)}")


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)  # the group's signals are for the harness
    ENV.update(_original_environment())
    sock, cleanup = int(sys.argv[1]), sys.argv[2]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    os.set_inheritable(sock, False)
    problem = _unshare()
    if problem:
        _say(sock, f"ns 0 {problem}")
        _supervise(sock, cleanup, argv)
        return
    pid = os.fork()
    if pid == 0:  # pid 1 of the new namespace
        try:
            _mount_proc()
        except OSError as exc:  # no fresh /proc: still contained, but not reported as such
            _say(sock, f"ns 0 {exc.errno or errno.EPERM}")
        else:
            _say(sock, "ns 1")
        try:
            _supervise(sock, cleanup, argv)
        finally:
            os._exit(0)
    os.close(sock)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    while True:
        try:
            os.waitpid(pid, 0)
            break
        except InterruptedError:  # pragma: no cover
            continue
    os._exit(0)


if __name__ == "__main__":
    main()
