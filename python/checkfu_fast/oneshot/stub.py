"""A stub harness for live vector runs (stdlib only, run as a script).

It records what it received — argv, stdin (or that stdin was /dev/null) and the content of
every staged file named in argv — to the JSON file ``$CHECKFU_STUB_RECORD``, then writes the
bytes of ``$CHECKFU_STUB_STDOUT`` (a file) to stdout unchanged and exits with
``$CHECKFU_STUB_EXIT`` (default 0).
"""

import json
import os
import re
import stat
import sys


def _is_devnull(fd: int) -> bool:
    try:
        st, null = os.fstat(fd), os.stat(os.devnull)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == null.st_rdev


def _files(argv: list[str]) -> list[dict[str, str]]:
    """Every existing file named by an absolute path anywhere in argv, in order of appearance."""
    found: list[dict[str, str]] = []
    seen: set[str] = set()
    for arg in argv:
        for match in re.finditer(r"/[^\s'\"`=,;()<>]+", arg):
            candidate = match.group(0)
            while candidate and not os.path.isfile(candidate) and candidate[-1] in ".:!?":
                candidate = candidate[:-1]
            if candidate in seen or not os.path.isfile(candidate):
                continue
            seen.add(candidate)
            with open(candidate, "rb") as f:
                content = f.read().decode("utf-8", "surrogateescape")
            found.append({"path": candidate, "content": content})
    return found


def main() -> int:
    argv = sys.argv[1:]
    stdin = None if _is_devnull(0) else sys.stdin.buffer.read().decode("utf-8", "surrogateescape")
    record = {"argv": argv, "stdin": stdin, "staged_files": _files(argv), "cwd": os.getcwd()}
    with open(os.environ["CHECKFU_STUB_RECORD"], "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False)
    with open(os.environ["CHECKFU_STUB_STDOUT"], "rb") as f:
        sys.stdout.buffer.write(f.read())
    sys.stdout.buffer.flush()
    return int(os.environ.get("CHECKFU_STUB_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main())
