"""oneshot-v1 section 3: run a harness process safely (Linux, stdlib only, Python 3.10+).

What it guarantees (each is a test in tests/test_executor.py, ids from the reliability notes
section 3.2):

- S13 no shell, argv passed as whole elements, never re-split (a value starting with ``-`` is
  passed verbatim: the contract template decides where it goes). NUL or more than 131,071
  bytes in one argument (Linux ``MAX_ARG_STRLEN`` counts the terminating NUL) raise
  ``ValueError`` before anything runs, as does a command line over ``ARG_MAX`` (``E2BIG``).
- S15 the entrypoint must be an absolute path and is checked up front (``spawn_error``
  ``not_found`` / ``not_executable``); ``PATH`` is never searched.
- S14 staged files: one safe name component each, created ``O_CREAT|O_EXCL|O_NOFOLLOW`` 0600
  relative to the staging directory (``dir_fd``); anything already there (a planted symlink)
  is a ``StagingError`` and its target is untouched. Files are removed after the run;
  ``private_staging_dir`` (``make_staging_dir``) makes ``<root>/checkfu-oneshot-XXXX/turn``
  (the runner's root of staging directories, then a private per-turn parent, each 0700) and
  removes it with its content and parent, ``0o000`` directories included (``remove_tree``).
  The parent's ``lock`` file is ``flock``-ed by the runner for the whole turn; a runner that
  dies without cleaning up (SIGKILL) lets go of it, and the next turn's ``make_staging_dir``
  removes that directory (``sweep_staging_root``: never one whose lock is held, no symlink
  followed, at most ``SWEEP_REMOVE`` per turn).
- S12 the child environment is exactly ``env`` (``minimal_environment(home=staging_dir)`` when
  None): nothing is inherited from the host environment.
- S5/S6/S7 one ``selectors`` loop over the raw pipe fds writes stdin and reads stdout and
  stderr together (no deadlock on large prompts); EPIPE, or the leader exiting with prompt
  bytes unwritten, means the child stopped reading (``stdin_broken``), not an error; the
  write is under the deadline.
- S1 the child runs in a new session (``start_new_session``, so its own process group; no
  ``preexec_fn``). On deadline or output cap the group gets SIGINT, SIGTERM after
  ``sigint_grace_s``, SIGKILL after ``sigterm_grace_s``; then a bounded drain (``drain_s``)
  and our pipe ends are closed regardless of EOF. When the leader exits by itself but members
  of its group still hold the pipes after ``drain_s``, the group is SIGKILLed
  (``killed_by_us``). Group members that let go of the pipes are SIGKILLed too once the
  leader has exited: a one-shot turn leaves nothing running in its group.
  The leader is reaped only after the last signal (``waitid(WNOWAIT)`` peeks at its exit), so
  the pgid cannot have been reused; signals are never sent to pgid 0, 1 or our own group.
  A pidfd (Linux 5.3+) wakes the loop when the leader exits.
- S2 limit (``containment="process_group"``): a descendant that left the group (``setsid``,
  double fork) cannot be signalled through the group and is not killed. The bounded drain
  still returns on time and ``escaped_descendants`` says a pipe was still held open after the
  group was killed (an escapee holding no pipe goes unnoticed). With
  ``containment="pid_namespace"`` (the default where :func:`pid_namespace_available`) there is
  no such limit: the harness runs in a fresh PID namespace with its own ``/proc`` under the
  launcher ``_init.py`` (the group leader); killing the group kills the namespace's init, and
  the kernel then kills every process in the namespace. The launcher reports the harness's
  own exit status or signal over a socket, resets every signal disposition and the signal
  mask for it, and, if this process dies, kills the namespace and removes ``cleanup_dir``.
  ``/proc`` stays locked for a root harness (a user namespace of its own, see ``_init.py``)
  and the root of staging directories is covered but for this turn's: a harness sees neither
  the host's processes nor other turns' staged files. The probe answers once; a host shortage
  while probing is no answer (that turn is ``host_resources``, the next one probes again).
- S3 stdout beyond ``output_cap`` is not stored: the group is killed, ``output_truncated``.
- S4 stderr is drained concurrently into a ring buffer of the last ``stderr_tail_bytes``.
- S8 ``exit_code`` and ``signal`` are reported apart; a death by signal is never mapped to an
  exit status (no shell in between), and an unknown status is ``None``, never 0.
- S9 every child is reaped and every fd closed, also on errors.
- S10 any exception while waiting (``KeyboardInterrupt`` included) SIGKILLs the group and
  reaps the leader before it propagates; the loop wakes at least every 50 ms.
- S11 if *this* process dies (SIGKILL, OOM), the harness gets SIGKILL from the kernel: it is
  started through util-linux ``setpriv --pdeathsig KILL`` (``PR_SET_PDEATHSIG`` set in the
  child before it execs the entrypoint: same pid, argv and environment; no ``preexec_fn``).
  The signal is tied to the thread that forked, which is the thread blocked in
  ``run_process`` for the whole run, so it cannot fire early. Limits: it reaches the harness,
  not its descendants (those die of SIGPIPE/EPIPE on their next write to our closed pipes, or
  see EOF on stdin; a silent idle grandchild lives on), and without ``setpriv`` (not Linux,
  or ``parent_death_signal=False``) only the pipe effect holds. Run under a supervisor that
  owns a cgroup when that matters. An entrypoint that ``setpriv`` cannot execute (a missing
  script interpreter) is reported as a ``spawn_error``, as without it.
- Live: ``on_stdout(chunk)`` gets every kept stdout chunk as it is read (in the thread running
  ``run_process``); a set ``cancel`` flag starts the kill ladder (``cancelled``).
- Spawn errors: an entrypoint that is neither ELF nor a ``#!`` script is ``not_executable``
  (``execvp`` would run it with ``/bin/sh``); ``EMFILE``, ``ENFILE``, ``ENOMEM``, ``EAGAIN`` or
  ``ENOSPC`` while spawning is ``host_resources`` (the host's fault, not the harness's).
- S16/S17 stdout is returned byte for byte through pipes (never a pty): CRLF, binary junk and
  a half-written last line are preserved for the normalizer; stderr is kept apart.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import itertools
import os
import secrets
import selectors
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import CheckfuError

MAX_ARG_BYTES = 131_072 - 1  # Linux MAX_ARG_STRLEN includes the terminating NUL
SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
READ_CHUNK = 1 << 16
STDERR_TAIL_BYTES = 64 * 1024
TICK_S = 0.05
_WAIT_PEEK = os.WEXITED | os.WNOHANG | os.WNOWAIT
SETPRIV = next((p for p in ("/usr/bin/setpriv", "/bin/setpriv") if os.access(p, os.X_OK)), None)
_SETPRIV_FAILED = b"setpriv: failed to execute "
_INIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_init.py")
# errors of the host, not of the harness: no descriptors, no memory, no processes left
_HOST_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.ENOSPC})
# of those, the ones that pass (ENOSPC from unshare is a namespace limit, often set to 0)
_TRANSIENT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN})
CONTAINMENTS = ("auto", "pid_namespace", "process_group")


class _Flag(Protocol):
    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class StagedFile:
    name: str  # a single safe path component, e.g. "prompt.txt"
    content: bytes


@dataclass(frozen=True)
class ProcessResult:
    stdout: bytes  # at most output_cap bytes, exactly as written
    stderr_tail: bytes  # the last stderr_tail_bytes bytes of stderr (ring buffer)
    exit_code: int | None  # None when killed by a signal, never started, or status unknown
    signal: int | None  # the signal number when the leader died by a signal
    timed_out: bool  # the deadline was reached (we killed the group)
    killed_by_us: bool  # we signalled the group (deadline, cap, pipes held after exit)
    output_truncated: bool  # stdout went past output_cap (stderr is a bounded ring anyway)
    wall_time_ms: int  # measured, spawn to reap
    spawn_error: str | None  # None, "not_found" or "not_executable" (then nothing ran)
    spawn_error_message: str | None  # e.g. "entrypoint /x/y not found"
    escaped_descendants: bool  # a process outside our group held a pipe past the drain
    stdin_broken: bool  # the child stopped reading stdin (EPIPE), not an error
    cancelled: bool = False  # the caller cancelled the turn (we killed the group)
    containment: str = "process_group"  # "pid_namespace" or "process_group" (what applied)


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


STAGING_PREFIX = "checkfu-oneshot-"
STAGING_LOCK = "lock"  # in each turn's private parent, flock-ed by its runner for the turn
SWEEP_SCAN = 256  # entries of the root of staging directories one sweep looks at
SWEEP_REMOVE = 8  # dead runners' directories one sweep removes
UNLOCKED_STALE_S = 24 * 3600  # age after which a directory without a lock file is swept


def _root_path() -> str:
    """Where :func:`staging_root` is."""
    return os.path.join(tempfile.gettempdir(), f"{STAGING_PREFIX}{os.geteuid()}")


def _remove_empty_root() -> None:
    """The root of staging directories removed if it is this user's and empty."""
    path = _root_path()
    with contextlib.suppress(OSError):  # another turn's directory is in it: it stays
        if os.lstat(path).st_uid == os.geteuid():
            os.rmdir(path)  # (a symlink is not removed: ENOTDIR)


def staging_root() -> str | None:
    """The runner's directory of staging directories, ``$TMPDIR/checkfu-oneshot-<euid>``
    (mode 0700, owned by this user; made when needed, removed once empty). ``None`` when
    something else
    is at that place (another owner, a symlink, open modes): then each staging directory's
    private parent is made in ``$TMPDIR`` itself and contained harnesses are not kept from
    the others' (see :func:`run_process`)."""
    path = _root_path()
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return path


def make_staging_dir() -> str:
    """A fresh staging directory ``<root>/checkfu-oneshot-XXXX/turn``: its private parent is
    made for this turn alone (as ``mkdtemp`` makes one: mode 0700, owned by the runner), so that
    nothing beside it is this turn's; both go with :func:`remove_staging_dir`. The parent holds
    a lock file (``lock``) that this process keeps ``flock``-ed until :func:`remove_staging_dir`
    (through a close-on-exec descriptor no harness inherits): the kernel drops the lock when the
    runner dies, SIGKILL included, and :func:`sweep_staging_root` (run here, after the new
    directory is made) removes the directories of runners that died that way."""
    made: list[str] = []  # the private parent's name, kept before it is made
    # everything inside the guard, the root's and the parent's making too: a KeyboardInterrupt
    # (the runner's Ctrl-C) raised at any moment (as `mkdir` returns, during the sweep of the
    # root) removes what was made, whose name the caller never got, and the root once empty
    try:
        root = staging_root()
        for attempt in range(3):
            try:
                _make_parent(root, made)
                break
            except FileNotFoundError:  # the root was removed (empty) in between: make it again
                if attempt == 2:
                    raise
                root = staging_root()
        parent = made[-1]
        path = os.path.join(parent, "turn")
        os.chmod(parent, 0o700)
        _hold_lock(parent, path)
        os.mkdir(path, 0o700)
        if root is not None and os.path.dirname(parent) == root:
            sweep_staging_root(root, keep=os.path.basename(parent))
    except BaseException:
        for parent in made:
            _release_lock(os.path.join(parent, "turn"))
            remove_tree(parent)
        _remove_empty_root()
        raise
    return path


#: The characters of a private parent's random part, as ``tempfile.mkdtemp`` names them.
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def _make_parent(root: str | None, made: list[str]) -> None:
    """Make a new private parent in ``root`` (``$TMPDIR`` when None), as ``tempfile.mkdtemp``
    does (``checkfu-oneshot-`` and 8 random characters, mode 0700, a taken name tried again),
    its name appended to ``made`` *before* ``mkdir``: whatever is raised from then on, the
    caller knows what to remove (``mkdtemp`` made the directory, then returned its name: an
    interrupt in between left one no one knew of). The name is random, so a directory of that
    name that this did not make is not to be expected."""
    base = root if root is not None else tempfile.gettempdir()
    for _ in range(100):
        name = os.path.join(
            base, STAGING_PREFIX + "".join(secrets.choice(_NAME_CHARS) for _ in range(8))
        )
        made.append(name)
        try:
            os.mkdir(name, 0o700)
        except FileExistsError:
            made.pop()  # another's: not to be removed
            continue
        except OSError:
            made.pop()  # nothing was made
            raise
        return
    raise FileExistsError(errno.EEXIST, "no unused name for a staging directory", base)


_HELD: dict[str, int] = {}  # staging directory -> descriptor of its parent's flock-ed lock file
_HELD_LOCK = threading.Lock()


def _hold_lock(parent: str, path: str) -> None:
    """Create ``parent/lock`` already held: an exclusive ``flock`` on a new file
    ``lock.new``, then renamed (a sweep that saw ``lock`` unlocked in between would take
    this live directory). The lock is held for ``path``'s turn. With no descriptor (or no
    room) left there is no lock file: the directory is then one of those
    :func:`sweep_staging_root` removes only when old, like an older version's."""
    new = os.path.join(parent, STAGING_LOCK + ".new")
    try:
        fd = os.open(
            new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
    except OSError as exc:
        if exc.errno in _HOST_ERRNOS:
            return
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (a fresh file: no one else has it)
        os.rename(new, os.path.join(parent, STAGING_LOCK))
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(new)
        raise
    with _HELD_LOCK:
        _HELD[path] = fd


def _release_lock(path: str) -> None:
    with _HELD_LOCK:
        fd = _HELD.pop(path, None)
    if fd is not None:
        os.close(fd)


def remove_staging_dir(path: str) -> None:
    """Remove a staging directory of :func:`make_staging_dir` with its private parent (and
    whatever the harness left there, ``0o000`` directories included), and the runner's root
    of staging directories once it is empty. The parent's lock is let go of last."""
    parent = os.path.dirname(path)
    if os.path.basename(parent).startswith(STAGING_PREFIX) and os.path.basename(path) == "turn":
        try:
            with contextlib.suppress(OSError):  # empty (the usual case): no descriptor needed,
                os.rmdir(path)  # so a turn that ended for want of descriptors leaves nothing
                with contextlib.suppress(FileNotFoundError):  # (no lock file: see _hold_lock)
                    os.unlink(os.path.join(parent, STAGING_LOCK))
                os.rmdir(parent)
            remove_tree(parent)
        finally:
            _release_lock(path)
        root = os.path.dirname(parent)
        if os.path.basename(root) == f"{STAGING_PREFIX}{os.geteuid()}":
            with contextlib.suppress(OSError):  # another turn's directory is in it: it stays
                os.rmdir(root)
    else:
        remove_tree(path)


def sweep_staging_root(root: str, keep: str = "") -> int:
    """Remove the staging directories that runners which died without cleaning up (SIGKILL,
    OOM, a dead parent; a SIGTERM without a handler in the process-group fallback) left in
    ``root``, the runner's root of staging directories (:func:`staging_root`: this user's,
    0700); the number removed. A directory goes only when this process can take its lock
    (``flock``, not waiting): no process holds it, so its runner is gone. One whose lock is
    held stays, whoever holds it (this process included). One without a lock file (a runner
    of an older version, or one without a descriptor to spare) goes only once its parent was
    last changed ``UNLOCKED_STALE_S`` (a day) ago. Nothing is followed: an entry that is not a
    directory of this user (a symlink) or whose lock is not a regular file is left alone.
    Bounded: the first ``SWEEP_SCAN`` entries are looked at and at most ``SWEEP_REMOVE``
    directories removed per call (each new turn calls it). Errors are ignored (a sweep never
    fails a turn)."""
    removed = 0
    try:
        rfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        st = os.fstat(rfd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return 0
        with os.scandir(rfd) as entries:
            names = [e.name for e in itertools.islice(entries, SWEEP_SCAN)]
        for name in names:
            if removed >= SWEEP_REMOVE:
                break
            if name.startswith(STAGING_PREFIX) and name != keep:
                removed += _sweep_one(rfd, root, name)
    except OSError:
        pass
    finally:
        os.close(rfd)
    return removed


def _sweep_one(rfd: int, root: str, name: str) -> bool:
    """Remove ``root/name`` if its runner is dead (see :func:`sweep_staging_root`), holding
    its lock while it goes so that no other sweep works on it at the same time."""
    try:
        dfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=rfd)
    except OSError:
        return False  # gone, a symlink, not a directory
    lock = None
    try:
        st = os.fstat(dfd)
        if st.st_uid != os.geteuid():
            return False
        try:  # (O_NONBLOCK: a planted FIFO does not hang the open)
            lock = os.open(
                STAGING_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd
            )
        except FileNotFoundError:
            if time.time() - st.st_mtime < UNLOCKED_STALE_S:
                return False  # no lock file yet, or a recent runner of an older version
        else:
            if not stat.S_ISREG(os.fstat(lock).st_mode):
                return False
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return False  # held: its runner lives
        path = os.path.join(root, name)
        if not os.path.samestat(st, os.lstat(path)):
            return False  # (replaced since it was opened)
        remove_tree(path)
        return not os.path.lexists(path)
    except OSError:
        return False
    finally:
        if lock is not None:
            os.close(lock)
        os.close(dfd)


def remove_tree(path: str) -> None:
    """``shutil.rmtree`` that a harness's ``0o000`` directories do not stop (a non-root runner
    cannot list or empty them): what is left after a first pass is opened up (each directory
    reached without following symlinks, ``O_PATH`` then chmod through ``/proc/self/fd``),
    then removed again. Errors are ignored: the tree is gone or what is left is not ours."""
    if not os.path.lexists(path):
        return
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    _open_up(path)
    shutil.rmtree(path, ignore_errors=True)


def _open_up(top: str) -> None:
    pending = [top]
    seen = 0
    while pending and seen < 1_000_000:  # bounded: a tree the harness made in its deadline
        path = pending.pop()
        seen += 1
        try:
            fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            os.chmod(f"/proc/self/fd/{fd}", 0o700)
            names = os.listdir(f"/proc/self/fd/{fd}")
        except OSError:
            names = []
        finally:
            os.close(fd)
        pending.extend(os.path.join(path, name) for name in names)


@contextlib.contextmanager
def private_staging_dir() -> Iterator[str]:
    """A fresh staging directory (:func:`make_staging_dir`), removed with its content and its
    private parent afterwards."""
    path = make_staging_dir()
    try:
        yield path
    finally:
        remove_staging_dir(path)


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
    if not files:
        return []
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
    try:
        with open(entrypoint, "rb") as f:
            magic = f.read(4)
    except OSError:
        magic = b"\x7fELF"  # execute-only: let the kernel decide
    if not (magic.startswith(b"#!") or magic == b"\x7fELF"):
        # execvp (setpriv, sh) would run a shebang-less text file with /bin/sh: refuse it
        return "not_executable", (
            f"entrypoint {entrypoint} is not a valid executable (neither ELF nor a #! script)"
        )
    return None


def _not_run(kind: str, message: str, containment: str = "process_group") -> ProcessResult:
    return ProcessResult(
        b"",
        b"",
        None,
        None,
        False,
        False,
        False,
        0,
        kind,
        message,
        False,
        False,
        False,
        containment,
    )


def _host_failure(exc: OSError, what: str) -> ProcessResult:
    """The host ran out of something (EMFILE, ENOMEM, EAGAIN): not the harness's fault."""
    return _not_run("host_resources", f"cannot start {what}: {exc.strerror} (host resources)")


_NS_LOCK = threading.Lock()
_NS_AVAILABLE: bool | None = None


class _HostShortage(Exception):
    """The namespace probe could not run for want of host resources (a passing state)."""

    def __init__(self, exc: OSError) -> None:
        super().__init__(exc)
        self.error = exc


def pid_namespace_available() -> bool:
    """Can this process put a harness in a fresh PID namespace with its own ``/proc``?
    Probed (the contained launcher runs ``/bin/true``) until a probe gives an answer, which is
    then cached. A probe that the host's shortage stopped (no descriptors, memory or processes
    left) answers ``False`` for now and is run again next time."""
    try:
        return _namespaces()
    except _HostShortage:
        return False


def _namespaces() -> bool:
    """:func:`pid_namespace_available`, raising ``_HostShortage`` for a passing shortage."""
    global _NS_AVAILABLE
    with _NS_LOCK:
        if _NS_AVAILABLE is None:
            _NS_AVAILABLE = _probe_namespace()
        return _NS_AVAILABLE


def _probe_namespace() -> bool:
    if not sys.platform.startswith("linux") or not sys.executable:
        return False
    true = next((p for p in ("/bin/true", "/usr/bin/true") if os.access(p, os.X_OK)), None)
    if true is None:
        return False
    try:
        ours, theirs = socket.socketpair()
    except OSError as exc:
        if exc.errno in _HOST_ERRNOS:
            raise _HostShortage(exc) from None
        return False
    try:
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _INIT, str(theirs.fileno()), "", "", "", "--", true],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            if exc.errno in _HOST_ERRNOS:
                raise _HostShortage(exc) from None
            return False
        finally:
            theirs.close()
        ours.settimeout(10.0)
        data = b""
        try:
            while b"exit" not in data and b"ns 0" not in data and b"exec" not in data:
                chunk = ours.recv(256)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        finally:
            ours.close()  # the launcher ends once we let go
            try:
                proc.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    finally:
        ours.close()
    for line in data.decode("ascii", "replace").splitlines():
        word, _, rest = line.partition(" ")
        code = rest.split()[-1] if rest.split() else ""
        # the launcher ran short of something the host lacks for now: no answer yet
        if word in ("ns", "exec") and code.isdigit() and int(code) in _TRANSIENT_ERRNOS:
            raise _HostShortage(OSError(int(code), os.strerror(int(code))))
    return data.startswith(b"ns 1\n") and b"exit 0" in data


class _Group:
    """Signals to the child's process group. Guarded: the group must be the child's own
    (pgid == pid, made by ``start_new_session``), never 0, 1 or our own group, and no signal
    is sent once the leader has been reaped (its pid, hence the pgid, could be reused)."""

    def __init__(self, pid: int) -> None:
        try:
            pgid = os.getpgid(pid)
        except OSError:
            pgid = -1
        self.pgid: int | None = pid if pgid == pid > 1 and pgid != os.getpgrp() else None

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
    stderr_tail_bytes: int = STDERR_TAIL_BYTES,
    sigint_grace_s: float = 2.0,
    sigterm_grace_s: float = 2.0,
    drain_s: float = 2.0,
    parent_death_signal: bool = True,
    containment: str = "auto",
    on_stdout: Callable[[bytes], Any] | None = None,
    cancel: _Flag | None = None,
    cleanup_dir: str | None = None,
) -> ProcessResult:
    """Run ``entrypoint argv...`` once and return what happened (see the module docstring).

    ``parent_death_signal``: SIGKILL the harness if this process dies (S11; needs ``setpriv``).
    ``containment``: ``"pid_namespace"`` (a fresh PID namespace with its own ``/proc``: nothing
    the harness starts outlives the turn), ``"process_group"`` (the group only), or ``"auto"``
    (the namespace where :func:`pid_namespace_available`, else the group); the result's
    ``containment`` says what applied. ``on_stdout(chunk)`` is called, in the thread running
    this function, with every stdout chunk kept (under the cap) as soon as it is read.
    ``cancel`` (anything with ``is_set()``, e.g. a ``threading.Event``): once set, the group
    goes down the kill ladder as at the deadline and the result has ``cancelled``.
    ``cleanup_dir``: a directory the contained launcher removes if this process dies before
    the turn ends (a runner killed by SIGKILL leaves no staged prompt behind).

    Raises ``ValueError`` for an argument that cannot be passed (NUL, over 128 KiB, or the whole
    command line over ``ARG_MAX``) and ``StagingError`` for an unsafe staged file; in both
    cases nothing ran. A missing or non-executable entrypoint is a result (``spawn_error``).
    """
    args = _check_argv(argv)
    for f in staged_files:
        check_staged_name(f.name)
    if containment not in CONTAINMENTS:
        raise ValueError(f"containment must be one of {CONTAINMENTS}, not {containment!r}")
    problem = _spawn_check(entrypoint)
    if problem is not None:
        return _not_run(*problem)
    child_env = dict(env) if env is not None else minimal_environment(home=staging_dir)
    try:
        contained = containment == "pid_namespace" or (containment == "auto" and _namespaces())
    except _HostShortage as short:  # this turn cannot run; the next one probes again
        return _host_failure(short.error, entrypoint)
    try:
        staged = _stage(staging_dir, staged_files)
    except OSError as exc:
        if exc.errno in _HOST_ERRNOS:
            return _host_failure(exc, entrypoint)
        raise
    try:
        if contained:
            root = staging_root()
            inside = root is not None and staging_dir.startswith(root + os.sep)
            hide, keep = (root, staging_dir) if inside and root is not None else ("", "")
            cmd = [sys.executable, "-I", "-S", _INIT, "{sock}", cleanup_dir or "", hide, keep]
            cmd.append("--")
            guard = []
        else:
            cmd = []
            guard = (
                [SETPRIV, "--pdeathsig", "KILL", "--"] if parent_death_signal and SETPRIV else []
            )
        return _Run(
            [*cmd, *guard, entrypoint, *args],
            stdin,
            output_cap=output_cap,
            tail_bytes=stderr_tail_bytes,
            guarded=bool(guard),
            contained=contained,
            on_stdout=on_stdout,
            cancel=cancel,
        ).run(
            cwd or staging_dir,
            child_env,
            deadline_s,
            (sigint_grace_s, sigterm_grace_s, drain_s),
        )
    finally:
        if staged:
            with contextlib.suppress(OSError):  # (no descriptor left: the caller removes it)
                dfd = os.open(staging_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                _unstage(dfd, staged)
                os.close(dfd)


class _Run:
    """One child: a selectors loop over raw pipe fds, the kill ladder, reaping."""

    def __init__(
        self,
        cmd: list[str],
        stdin: bytes | None,
        *,
        output_cap: int,
        tail_bytes: int,
        guarded: bool = False,
        contained: bool = False,
        on_stdout: Callable[[bytes], Any] | None = None,
        cancel: _Flag | None = None,
    ) -> None:
        self.cmd = cmd
        self.guarded = guarded  # cmd starts with setpriv: its exec failure is a spawn error
        self.contained = contained  # cmd starts with the launcher (_init.py)
        self.on_stdout = on_stdout
        self.cancel = cancel
        self.cancelled = False
        self.ctl: socket.socket | None = None  # our end of the launcher's socket
        self.ctl_buf = b""
        self.ns: bool | None = None  # the launcher made the namespace
        self.harness_status: int | None = None  # Popen-style returncode the launcher reported
        self.exec_errno: int | None = None
        self.stdin = stdin
        self.output_cap = max(output_cap, 0)
        self.tail_bytes = max(tail_bytes, 0)
        # the kept stdout: a BytesIO grows in place (realloc) and hands its buffer over as
        # ``bytes`` without a copy (getvalue), so the peak is about the cap, not twice it
        self.stdout = io.BytesIO()
        self.stored = 0
        self.tail = bytearray()
        self.pending = memoryview(b"")
        self.fds: dict[int, str] = {}  # fd -> "stdin" | "stdout" | "stderr"
        self.sel: selectors.BaseSelector | None = None
        self.truncated = False
        self.stdin_broken = False
        self.stopped_at_cap = False
        self.proc: subprocess.Popen[bytes] | None = None
        self.group: _Group | None = None
        self.status_known = True
        self.pidfd: int | None = None

    # -- spawning -------------------------------------------------------------------------------

    def run(
        self,
        cwd: str,
        env: dict[str, str],
        deadline_s: float,
        graces: tuple[float, float, float],
    ) -> ProcessResult:
        started = time.monotonic()
        pass_fds: tuple[int, ...]
        cmd, pass_fds, theirs = self.cmd, (), None
        try:
            if self.contained:
                self.ctl, theirs = socket.socketpair()
                self.ctl.setblocking(False)
                cmd = [str(theirs.fileno()) if a == "{sock}" else a for a in cmd]
                pass_fds = (theirs.fileno(),)
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE if self.stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                close_fds=True,
                pass_fds=pass_fds,
                start_new_session=True,
            )
        except FileNotFoundError as exc:  # e.g. a missing cwd or script interpreter
            self._close_ctl()
            where = f": {exc.filename}" if exc.filename else ""
            return _not_run("not_found", f"cannot start {self.target}: {exc.strerror}{where}")
        except OSError as exc:
            self._close_ctl()
            if exc.errno == errno.E2BIG:
                raise ValueError(
                    "the arguments and environment together exceed the system limit (ARG_MAX); "
                    "pass long text via stdin or a staged file"
                ) from None
            if exc.errno in _HOST_ERRNOS:
                return _host_failure(exc, self.target)
            return _not_run("not_executable", f"cannot start {self.target}: {exc.strerror}")
        except BaseException:
            self._close_ctl()
            raise
        finally:
            if theirs is not None:
                theirs.close()
        try:
            self.proc = proc
            self.group = _Group(proc.pid)
            return self._exec_failure(self._supervise(started, started + deadline_s, graces))
        except BaseException:
            # KeyboardInterrupt, a cancelled caller, a bug: never leave the group running
            if self.group is not None and self.group.pgid is not None:
                self.group.send(signal.SIGKILL)
            elif proc.returncode is None:
                proc.kill()
            self._reap(timeout=2.0)
            raise
        finally:
            self._close_ctl()
            for fd in list(self.fds):
                self._close(fd)
            self._close_pidfd()
            if self.sel is not None:
                self.sel.close()
            for fobj in (proc.stdin, proc.stdout, proc.stderr):
                if fobj is not None:
                    with contextlib.suppress(OSError):
                        fobj.close()

    @property
    def target(self) -> str:
        if self.contained:
            return self.cmd[self.cmd.index("--") + 1]
        return self.cmd[4] if self.guarded else self.cmd[0]

    def _close_ctl(self) -> None:
        if self.ctl is not None:
            if self.sel is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self.sel.unregister(self.ctl.fileno())
            self.fds.pop(self.ctl.fileno(), None)
            self.ctl.close()  # the launcher sees EOF: it kills what is left of the namespace
            self.ctl = None

    def _exec_failure(self, r: ProcessResult) -> ProcessResult:
        """``setpriv`` could not execute the entrypoint (exit 127, its message first on stderr,
        nothing on stdout): the same spawn error Popen would have given without it. Contained,
        the launcher reports the ``execve`` errno itself."""
        if self.exec_errno is not None:
            kind = "not_found" if self.exec_errno == errno.ENOENT else "not_executable"
            if self.exec_errno in _HOST_ERRNOS:
                kind = "host_resources"
            reason = os.strerror(self.exec_errno)
            return _not_run(kind, f"cannot start {self.target}: {reason}", r.containment)
        if not (self.guarded and r.exit_code == 127 and not r.stdout):
            return r
        if not r.stderr_tail.startswith(_SETPRIV_FAILED):
            return r
        reason = r.stderr_tail.split(b": ")[-1].strip().decode("utf-8", "replace")
        kind = "not_found" if reason == os.strerror(errno.ENOENT) else "not_executable"
        return _not_run(kind, f"cannot start {self.target}: {reason}")

    def _take_pipes(self) -> None:
        """Own the raw fds (the Popen file objects are closed) and register them."""
        proc = self.proc
        assert proc is not None
        self.sel = selectors.DefaultSelector()
        self._open_pidfd()
        for name in ("stdout", "stderr", "stdin"):
            fobj = getattr(proc, name)
            if fobj is None:
                continue
            fd = os.dup(fobj.fileno())
            setattr(proc, name, None)
            fobj.close()
            self.fds[fd] = name
            os.set_blocking(fd, False)
            self.sel.register(
                fd, selectors.EVENT_WRITE if name == "stdin" else selectors.EVENT_READ
            )
        if self.ctl is not None:
            self.fds[self.ctl.fileno()] = "status"
            self.sel.register(self.ctl.fileno(), selectors.EVENT_READ)
        if self.stdin is not None:
            self.pending = memoryview(self.stdin).cast("B")
            if not self.pending:
                self._close_stdin()

    # -- the loop -------------------------------------------------------------------------------

    def _close(self, fd: int) -> None:
        if self.sel is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(fd)
        self.fds.pop(fd, None)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _close_stdin(self) -> None:
        for fd, name in list(self.fds.items()):
            if name == "stdin":
                self._close(fd)

    def _reading(self) -> bool:
        return any(name in ("stdout", "stderr") for name in self.fds.values())

    def _active(self) -> bool:
        return any(name != "status" for name in self.fds.values())

    def _exited(self) -> bool:
        """Has the leader exited (contained: has the launcher reported the harness's end)?
        Does not reap it: a zombie leader keeps the pgid ours."""
        assert self.proc is not None
        if self.proc.returncode is not None:
            return True
        if self.harness_status is not None or self.exec_errno is not None:
            self._close_pidfd()  # the launcher's own exit comes later: it would spin the loop
            return True
        try:
            gone = os.waitid(os.P_PID, self.proc.pid, _WAIT_PEEK) is not None
        except ChildProcessError:  # reaped behind our back (SIGCHLD ignored by the host)
            self.status_known = False
            gone = True
        if gone:
            self._close_pidfd()  # readable from now on: it would spin the selector
        return gone

    def _open_pidfd(self) -> None:
        """A pidfd (Linux 5.3+) in the selector wakes the loop the moment the leader exits;
        without one the loop notices within ``TICK_S``."""
        assert self.proc is not None and self.sel is not None
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is None:
            return
        try:
            self.pidfd = pidfd_open(self.proc.pid)
        except OSError:
            return
        self.sel.register(self.pidfd, selectors.EVENT_READ)

    def _close_pidfd(self) -> None:
        if self.pidfd is None:
            return
        if self.sel is not None:
            with contextlib.suppress(KeyError, ValueError):
                self.sel.unregister(self.pidfd)
        with contextlib.suppress(OSError):
            os.close(self.pidfd)
        self.pidfd = None

    def _cancel_requested(self) -> bool:
        if self.cancel is not None and not self.cancelled and self.cancel.is_set():
            self.cancelled = True
        return self.cancelled

    def _pump(
        self, until: float, *, stop_on_exit: bool = False, watch_cancel: bool = False
    ) -> None:
        """Move bytes until ``until``, until no pipe is left (with ``stop_on_exit`` also until
        the leader exits), or until the output cap is first reached (``watch_cancel``: or the
        caller cancels). Sleeps in ticks of at most ``TICK_S`` so that signals
        (KeyboardInterrupt) and a cancel are seen promptly."""
        assert self.sel is not None
        while True:
            left = until - time.monotonic()
            if left <= 0 or (stop_on_exit and self._exited()):
                return
            if watch_cancel and self._cancel_requested():
                return
            if not self._active():  # (the launcher's socket is no pipe to drain)
                if not stop_on_exit:
                    return
                if self.pidfd is None and self.ctl is None:
                    time.sleep(min(left, TICK_S))
                    continue
            for key, _ in self.sel.select(min(left, TICK_S)):
                name = self.fds.get(key.fd)
                if name == "stdin":
                    self._write_stdin(key.fd)
                elif name == "status":
                    self._read_status()
                elif name is not None:
                    self._read(key.fd, name)
            if stop_on_exit and self.truncated and not self.stopped_at_cap:
                self.stopped_at_cap = True  # once: the caller starts the kill ladder
                return

    def _write_stdin(self, fd: int) -> None:
        try:
            n = os.write(fd, self.pending[:READ_CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.stdin_broken = True  # the child stopped reading: not an error
            self._close(fd)
            return
        self.pending = self.pending[n:]
        if not self.pending:
            self._close(fd)  # EOF for the child

    def _read_status(self) -> None:
        assert self.ctl is not None
        try:
            data = self.ctl.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the launcher is gone (killed with the group)
            self._close_ctl()
            return
        self.ctl_buf += data
        while b"\n" in self.ctl_buf:
            line, _, self.ctl_buf = self.ctl_buf.partition(b"\n")
            word, _, rest = line.decode("ascii", "replace").partition(" ")
            with contextlib.suppress(ValueError):
                if word == "ns":
                    self.ns = rest.split()[0] == "1"
                elif word == "exec":
                    self.exec_errno = int(rest)
                elif word == "exit":
                    self.harness_status = int(rest)
                elif word == "signal":
                    self.harness_status = -int(rest)

    def _read(self, fd: int, name: str) -> None:
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close(fd)
        elif name == "stdout":
            room = self.output_cap - self.stored
            if room > 0:
                kept = data[:room]
                self.stdout.write(kept)
                self.stored += len(kept)
                if self.on_stdout is not None:
                    self.on_stdout(kept)
            if len(data) > room:
                self.truncated = True
        elif self.tail_bytes:
            self.tail += data
            if len(self.tail) > self.tail_bytes:
                del self.tail[: len(self.tail) - self.tail_bytes]

    # -- supervision ----------------------------------------------------------------------------

    def _supervise(
        self, started: float, deadline: float, graces: tuple[float, float, float]
    ) -> ProcessResult:
        sigint_grace, sigterm_grace, drain = graces
        group = self.group
        assert group is not None
        self._take_pipes()
        timed_out = killed = escaped = False
        while True:
            self._pump(deadline, stop_on_exit=True, watch_cancel=True)
            if self.truncated:
                break
            if self._exited():
                break
            if self.cancelled:
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
        if timed_out or self.truncated or self.cancelled:
            killed = True
            for sig, grace in (
                (signal.SIGINT, sigint_grace),
                (signal.SIGTERM, sigterm_grace),
                (signal.SIGKILL, max(drain, 1.0)),
            ):
                group.send(sig)
                self._pump(time.monotonic() + grace, stop_on_exit=True)
                if self._exited():
                    break
        if self._exited():
            # the leader is gone (a zombie: its pgid is still ours). Whatever is left on stdin
            # was not read; then a bounded drain of what the group still writes
            if self.pending:
                self.stdin_broken = True
            self._close_stdin()
            self._pump(time.monotonic() + drain)
            if self._reading():
                killed = True  # group members hold our pipes: end them
                group.send(signal.SIGKILL)
                self._pump(time.monotonic() + drain)
                escaped = self._reading()  # still open: held from outside the group
            else:
                group.send(signal.SIGKILL)  # leftovers of the group that let go of our pipes
            returncode = self._reap(timeout=None)
            if self.harness_status is not None:  # contained: the harness's own status
                returncode = self.harness_status
        else:  # not dead a while after SIGKILL (uninterruptible sleep): do not hang on it
            returncode = None
        return ProcessResult(
            stdout=self.stdout.getvalue(),
            stderr_tail=bytes(self.tail),
            exit_code=returncode if returncode is not None and returncode >= 0 else None,
            signal=-returncode if returncode is not None and returncode < 0 else None,
            timed_out=timed_out,
            killed_by_us=killed,
            output_truncated=self.truncated,
            wall_time_ms=int((time.monotonic() - started) * 1000),
            spawn_error=None,
            spawn_error_message=None,
            escaped_descendants=escaped,
            stdin_broken=self.stdin_broken,
            cancelled=self.cancelled,
            containment="pid_namespace" if self.ns else "process_group",
        )

    def _reap(self, timeout: float | None) -> int | None:
        """Reap the leader; returns ``Popen``-style returncode, None when unknown or (with a
        timeout) not dead yet. After this no signal goes to the group any more."""
        proc = self.proc
        assert proc is not None
        if proc.returncode is not None:
            return proc.returncode
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                pid, status = os.waitpid(proc.pid, 0 if end is None else os.WNOHANG)
            except ChildProcessError:
                self.status_known = False
                pid, status = proc.pid, 0
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            if pid == proc.pid:
                break
            if end is not None and time.monotonic() >= end:
                return None  # Popen reaps it later (it stays in subprocess._active)
            time.sleep(0.01)
        if self.group is not None:
            self.group.pgid = None
        if not self.status_known:
            proc.returncode = 0  # what Popen itself records for ECHILD; we report None
            return None
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode


__all__ = [
    "CONTAINMENTS",
    "ProcessResult",
    "StagedFile",
    "StagingError",
    "minimal_environment",
    "pid_namespace_available",
    "private_staging_dir",
    "run_process",
]
