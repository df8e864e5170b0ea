"""What ``checkfu-fast report`` reads and in which zone: the default locations of the session
files (:func:`default_paths`) and the time zone (:func:`local_zone`). Light on imports: the
re-run that finds its output in the memo (:func:`checkfu_fast.report_cache.memo_hit`) uses them
before anything that folds is imported."""

from __future__ import annotations

import os
from datetime import datetime, timezone, tzinfo

from .paths import Stamp, walk


def _split(value: str | None) -> list[str]:
    return [p for p in (value or "").split(",") if p.strip()]


def default_paths(
    env: dict[str, str] | None = None, stats: dict[str, Stamp] | None = None
) -> tuple[list[str], list[str]]:
    """The default inputs and the folders they come from.

    claude: ``projects`` of each folder of ``$CLAUDE_CONFIG_DIR`` (comma-separated), else
    ``~/.config/claude/projects`` and ``~/.claude/projects``; codex: ``sessions`` and
    ``archived_sessions`` of each folder of ``$CODEX_HOME`` (comma-separated, default
    ``~/.codex``), a rollout in both counted once (the active copy). Codex files are taken in
    the order of their names (``rollout-<time>-<id>``: the order they were written). ``stats``
    gets each file's :data:`~checkfu_fast.paths.Stamp` (:func:`checkfu_fast.paths.walk`)."""
    e = os.environ if env is None else env
    home = e.get("HOME") or os.path.expanduser("~")
    dirs: list[str] = []
    claude = [
        os.path.join(os.path.expanduser(d.strip()), "projects")
        for d in _split(e.get("CLAUDE_CONFIG_DIR"))
    ] or [
        os.path.join(home, ".config", "claude", "projects"),
        os.path.join(home, ".claude", "projects"),
    ]
    files: list[str] = []
    for d in claude:
        if os.path.isdir(d):
            dirs.append(d)
            files += walk(d, (".jsonl",), stats)
    codex: list[str] = []
    for h in _split(e.get("CODEX_HOME")) or [os.path.join(home, ".codex")]:
        h = os.path.expanduser(h.strip())
        active = os.path.join(h, "sessions")
        archived = os.path.join(h, "archived_sessions")
        names: set[str] = set()
        if os.path.isdir(active):
            dirs.append(active)
            got = list(walk(active, (".jsonl", ".jsonl.gz", ".jsonl.zst"), stats))
            names |= {os.path.basename(f) for f in got}
            codex += got
        if os.path.isdir(archived):
            dirs.append(archived)
            codex += [
                f
                for f in walk(archived, (".jsonl", ".jsonl.gz", ".jsonl.zst"), stats)
                if os.path.basename(f) not in names
            ]
    codex.sort(key=lambda f: (os.path.basename(f), f))
    return files + codex, dirs


def local_zone(name: str | None = None) -> tzinfo:
    """``name`` (IANA), else ``$TZ``, else the machine's zone (``/etc/localtime``)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    want = name if name is not None else os.environ.get("TZ")
    if want:
        want = want.lstrip(":")
        try:
            if want.startswith("/"):
                with open(want, "rb") as f:
                    return ZoneInfo.from_file(f, key=want)
            return ZoneInfo(want)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            if name is not None:
                raise ValueError(f"--tz {name}: not a known IANA time zone") from None
            return _fixed_local()
    try:
        with open("/etc/localtime", "rb") as f:
            return ZoneInfo.from_file(f, key=_zone_name())
    except (OSError, ValueError):
        return _fixed_local()


def _zone_name() -> str:
    try:
        target = os.readlink("/etc/localtime")
    except OSError:
        return "localtime"
    return target.split("zoneinfo/", 1)[-1]


def _fixed_local() -> tzinfo:
    tz = datetime.now().astimezone().tzinfo
    return tz if tz is not None else timezone.utc
