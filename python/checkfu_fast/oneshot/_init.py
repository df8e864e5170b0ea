"""The contained launcher of a harness (stdlib only, run as ``python3 -I -S _init.py``).

``_init.py SOCK_FD CLEANUP_DIR HIDE_DIR KEEP_DIR -- ENTRYPOINT ARG...`` (the three
directories may be empty).

Started by the executor as the leader of the turn's process group. It puts the harness in a
fresh PID namespace with its own ``/proc`` (``unshare(CLONE_NEWPID | CLONE_NEWNS)``, plus
``CLONE_NEWUSER`` mapping the caller's own uid when not root), forks the namespace's init (pid
1), which forks the harness (pid 2). When the namespace's init dies, the kernel SIGKILLs every
process left in the namespace, ``setsid`` daemons with closed descriptors included.

``/proc`` stays locked in place. A non-root caller's harness runs under its own uid without
any capability (it cannot unmount anything). A root caller's harness would be root in the
namespace's user namespace (the host's), free to ``umount -l /proc`` and see the host's
processes through the ``/proc`` beneath: so it gets a user namespace of its own
(``unshare(CLONE_NEWUSER | CLONE_NEWNS)`` in the harness's process, every uid and gid mapped to
itself by the init, so that its file access is root's as before). Mounts inherited into a
mount namespace owned by a less privileged user namespace are locked: it cannot unmount or
uncover ``/proc``, cannot mount another one (the PID namespace is not its user namespace's),
and has no capability outside its user namespace (it cannot ptrace the init, read another
process's ``/proc`` files or write their ``oom_score_adj``). Where no user namespace can be
made, the harness's bounding, inheritable and ambient sets lose ``CAP_SYS_ADMIN`` and
``CAP_SYS_PTRACE`` instead (no unmounting, no ptrace of the init).

``HIDE_DIR`` (the runner's directory of staging directories) is covered with an empty tmpfs in
the namespace, and ``KEEP_DIR`` (this turn's staging directory, inside it) is bound back at its
place: a harness sees no other turn's staged files.

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

CAP_SYS_PTRACE, CAP_SYS_ADMIN = 19, 21
PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
MS_BIND = 4096
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


def _hide(hide: str, keep: str) -> None:
    """Cover ``hide`` with an empty tmpfs and bind ``keep`` (inside it) back at its place; then
    re-enter the working directory through the new mounts (an old cwd would see beneath)."""
    if not hide:
        return
    libc = _libc()
    cwd = os.getcwd()
    keep_fd = os.open(keep, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) if keep else -1
    try:
        opts = b"mode=0700,size=64k,nr_inodes=64"
        if libc.mount(b"tmpfs", hide.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts) != 0:
            raise OSError(ctypes.get_errno(), "mount tmpfs")
        if keep_fd >= 0:
            try:
                os.makedirs(keep, 0o700)
                source = f"/proc/self/fd/{keep_fd}".encode()
                if libc.mount(source, keep.encode(), None, MS_BIND | MS_REC, None) != 0:
                    raise OSError(ctypes.get_errno(), "bind the staging directory")
            except OSError:
                libc.umount2(hide.encode(), 2)  # MNT_DETACH: the directories as they were
                raise
    finally:
        if keep_fd >= 0:
            os.close(keep_fd)
    os.chdir(cwd)


def _lock() -> bytes:
    """In the harness's process (root callers only): its own user namespace (``u``; the init
    then writes its maps), else the capabilities that could undo the /proc mount dropped
    (``c``)."""
    libc = _libc()
    if libc.unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0:
        return b"u"
    for cap in (CAP_SYS_ADMIN, CAP_SYS_PTRACE):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno() or errno.EPERM, "drop a capability")
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) x 2 words
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno() or errno.EPERM, "capget")
    for cap in (CAP_SYS_ADMIN, CAP_SYS_PTRACE):
        data[2] &= ~(1 << cap)  # inheritable: it would survive execve otherwise
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno() or errno.EPERM, "capset")
    return b"c"


def _map_ids(pid: int) -> None:
    """Every uid and gid of the harness's user namespace mapped to itself (written by us: the
    harness has no capability in our user namespace to write such a map itself)."""
    for name in ("uid_map", "gid_map"):
        _write(f"/proc/{pid}/{name}", "0 0 4294967295")


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


def _start_harness(sock: int, argv: list[str], lock: bool) -> int | None:
    """Fork and exec the harness; its pid, or None (reported) when it could not be executed.
    With ``lock`` the harness first gets its own user namespace (see ``_lock``)."""
    r, w = os.pipe()  # close-on-exec: EOF without data means the exec succeeded
    ready_r, ready_w = os.pipe() if lock else (-1, -1)
    go_r, go_w = os.pipe() if lock else (-1, -1)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            if lock:
                os.close(ready_r)
                os.close(go_w)
                os.write(ready_w, _lock())
                os.read(go_r, 1)  # the init has written our maps (or given up on us)
            _default_signals()
            os.execve(argv[0], argv, ENV)
        except OSError as exc:
            os.write(w, str(exc.errno or errno.ENOEXEC).encode())
        finally:
            os._exit(127)
    os.close(w)
    if lock:
        os.close(ready_w)
        os.close(go_r)
        try:
            if os.read(ready_r, 1) == b"u":
                _map_ids(pid)
            os.write(go_w, b"g")
        except OSError as exc:  # no map: the harness must not run
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            _say(sock, f"exec {exc.errno or errno.EPERM}")
            return None
        finally:
            os.close(ready_r)
            os.close(go_w)
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


def _finish(cleanup: str, hide: str = "") -> None:
    """The executor let go of us while we live: it died (it kills the whole group, us included,
    before it closes its end when it finishes a turn). Kill what is left and remove the staging
    directory: as the namespace's init, every other process of the namespace first, then the
    tmpfs over ``hide`` (the directory is beneath it), then the directory; uncontained, the
    directory first, then our process group (us included)."""
    contained = os.getpid() == 1
    if contained:
        try:
            os.kill(-1, signal.SIGKILL)  # every other process of the namespace
        except OSError:
            pass
        if hide:
            _libc().umount2(hide.encode(), 2)  # MNT_DETACH
    if cleanup:
        import shutil  # only here: it is slow to import

        shutil.rmtree(cleanup, ignore_errors=True)  # (our capabilities pass 0o000 modes)
        if hide:
            try:
                os.rmdir(hide)  # the runner's directory of staging directories, once empty
            except OSError:
                pass
    if not contained:
        try:
            os.killpg(0, signal.SIGKILL)  # our group (the harness's, unless it left it)
        except OSError:
            pass


def _supervise(
    sock: int, cleanup: str, argv: list[str], lock: bool = False, hide: str = ""
) -> None:
    """Run the harness; report how it ended; then wait for the executor to let go."""
    if select.select([sock], [], [], 0)[0] and not os.read(sock, 64):
        _finish(cleanup, hide)  # the executor died while we were starting: run nothing
        return
    harness = _start_harness(sock, argv, lock)
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
                _finish(cleanup, hide)
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
    sock, cleanup, hide, keep = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    os.set_inheritable(sock, False)
    root = os.geteuid() == 0  # (before the user namespace of a non-root caller)
    problem = _unshare()
    if problem:
        _say(sock, f"ns 0 {problem}")
        _supervise(sock, cleanup, argv)
        return
    pid = os.fork()
    if pid == 0:  # pid 1 of the new namespace
        try:
            _mount_proc()
            _hide(hide, keep)
        except OSError as exc:  # no fresh /proc: still contained, but not reported as such
            _say(sock, f"ns 0 {exc.errno or errno.EPERM}")
        else:
            _say(sock, "ns 1")
        try:
            _supervise(sock, cleanup, argv, lock=root, hide=hide)
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
