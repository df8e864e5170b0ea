#!/usr/bin/env python3
"""Regenerate the golden expected outputs from the pure-Python reference.

For every ``vectors/events/<dialect>/<name>.input.jsonl`` this runs
``checkfu_fast.reference.normalize(data, <dialect>)`` on the file's bytes and writes
``<name>.expected.jsonl`` next to it: one event per line,
``json.dumps(ev, ensure_ascii=False, sort_keys=False)``, LF-terminated.

Run from the project root:  python vectors/regen.py   (``--check`` compares instead of writing)

Only ``checkfu_fast.reference`` is imported (never the native package): if
``python/checkfu_fast/__init__.py`` exists and fails to import, the reference is loaded under a
stub parent package.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYDIR = ROOT / "python"


def load_reference() -> types.ModuleType:
    sys.path.insert(0, str(PYDIR))
    try:
        return importlib.import_module("checkfu_fast.reference")
    except Exception:  # the top-level package may need the native module; bypass it
        for name in [n for n in sys.modules if n == "checkfu_fast" or n.startswith("checkfu_fast.")]:
            del sys.modules[name]
        parent = types.ModuleType("checkfu_fast")
        parent.__path__ = [str(PYDIR / "checkfu_fast")]
        sys.modules["checkfu_fast"] = parent
        pkg = PYDIR / "checkfu_fast" / "reference"
        spec = importlib.util.spec_from_file_location(
            "checkfu_fast.reference", pkg / "__init__.py", submodule_search_locations=[str(pkg)]
        )
        mod = importlib.util.module_from_spec(spec)
        sys.modules["checkfu_fast.reference"] = mod
        spec.loader.exec_module(mod)
        return mod


def render(events: list) -> str:
    return "".join(json.dumps(ev, ensure_ascii=False, sort_keys=False) + "\n" for ev in events)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    ref = load_reference()
    inputs = sorted((HERE / "events").glob("*/*.input.jsonl"))
    stale = 0
    for path in inputs:
        dialect = path.parent.name
        events = ref.normalize(path.read_bytes(), dialect)
        out = path.with_name(path.name[: -len(".input.jsonl")] + ".expected.jsonl")
        text = render(events)
        rel = out.relative_to(ROOT)
        if check:
            if not out.exists() or out.read_text(encoding="utf-8") != text:
                print(f"STALE {rel}")
                stale += 1
        else:
            out.write_text(text, encoding="utf-8", newline="\n")
            print(f"wrote {rel} ({len(events)} events)")
    if not inputs:
        print("no *.input.jsonl found under vectors/events/", file=sys.stderr)
        return 1
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
