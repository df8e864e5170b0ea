#!/usr/bin/env python3
"""After ``python3 vectors/regen.py``: check that the changed golden files only *gained* the given
top-level keys (default ``retryAt retryAfterMs``) against ``git HEAD``: every other key, value
and the key order are unchanged, no event is added or lost. Exit 1 on any other change.

Run from the project root:  python3 vectors/check_gained.py [KEY...]
"""

from __future__ import annotations

import json
import subprocess
import sys


def main(keys: tuple[str, ...]) -> int:
    changed = subprocess.run(
        ["git", "diff", "--name-only", "--", "vectors/events"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    bad = gained = 0
    for path in changed:
        old = subprocess.run(
            ["git", "show", f"HEAD:{path}"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        with open(path, encoding="utf-8") as f:
            new = f.read().splitlines()
        if len(old) != len(new):
            print(f"{path}: {len(old)} events before, {len(new)} now")
            bad += 1
            continue
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            before, after = json.loads(a), json.loads(b)
            kept = {k: v for k, v in after.items() if k not in keys}
            if list(kept.items()) != list(before.items()) or any(k in before for k in keys):
                print(f"{path}:{i + 1}: changed beyond {', '.join(keys)}")
                bad += 1
            elif kept != after:
                gained += 1
                print(f"{path}:{i + 1}: +{ {k: after[k] for k in keys if k in after} }")
    print(f"{len(changed)} files changed, {gained} events gained keys, {bad} other changes")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(tuple(sys.argv[1:]) or ("retryAt", "retryAfterMs")))
