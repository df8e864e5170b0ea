"""The core's allocator purge delay (python/checkfu_fast/__init__.py): mimalloc's own (1 s) for a
library import; a short one for ``checkfu-fast report`` (as the console script or ``python -m
checkfu_fast``), set for the native module's import only; a user's own value left alone; nothing
inherited by child processes. mimalloc prints its options as it loads (``MIMALLOC_VERBOSE``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import checkfu_fast

pytestmark = pytest.mark.skipif(
    checkfu_fast.IMPLEMENTATION != "native", reason="the native core is not installed"
)

#: What the package leaves in the environment once imported, printed by the process.
LEFT = "import os, checkfu_fast; print(repr(os.environ.get('MIMALLOC_PURGE_DELAY')))"
SCRIPT = Path(sys.executable).with_name("checkfu-fast")


def run(cmd: list[str], extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env["MIMALLOC_VERBOSE"] = "1"
    env.update(extra or {})
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)


def delay(done: subprocess.CompletedProcess[str]) -> int:
    """The purge delay mimalloc loaded with (its option print)."""
    (ms,) = re.findall(r"option 'purge_delay': (-?\d+)", done.stderr)
    return int(ms)


def test_a_library_import_keeps_mimallocs_own_delay() -> None:
    done = run([sys.executable, "-c", LEFT])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
    assert delay(done) == 1000


def test_report_run_as_a_module_gets_the_short_delay(tmp_path: Path) -> None:
    done = run([sys.executable, "-m", "checkfu_fast", "report", "--no-cache", str(tmp_path)])
    assert delay(done) == 30
    # the one-word spelling of -m, and the cli module run directly
    done = run([sys.executable, "-mcheckfu_fast", "report", "--no-cache", str(tmp_path)])
    assert delay(done) == 30
    done = run([sys.executable, "-m", "checkfu_fast.cli", "report", "--no-cache", str(tmp_path)])
    assert delay(done) == 30


@pytest.mark.skipif(not SCRIPT.exists(), reason="no checkfu-fast console script beside python")
def test_report_run_as_the_console_script_gets_the_short_delay(tmp_path: Path) -> None:
    assert delay(run([str(SCRIPT), "report", "--no-cache", str(tmp_path)])) == 30
    assert delay(run([str(SCRIPT), "dialects"])) == 1000


def test_other_commands_keep_mimallocs_own_delay(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    done = run([sys.executable, "-m", "checkfu_fast", "normalize", "--jobs", "2", str(empty)])
    assert done.returncode == 0, done.stderr
    assert delay(done) == 1000


def test_the_short_delay_is_not_left_in_the_environment() -> None:
    # the console script's argv (its name as pip writes it), as it is when the package loads
    for name in ("checkfu-fast", "checkfu-fast.exe", "checkfu-fast-script.py"):
        code = f"import sys; sys.argv[:] = [{'/bin/' + name!r}, 'report']; {LEFT}"
        done = run([sys.executable, "-c", code])
        assert done.returncode == 0, done.stderr
        assert delay(done) == 30
        assert done.stdout.strip() == "None"  # children of the process do not inherit it
    # another program whose first argument happens to be "report" is a library caller
    code = f"import sys; sys.argv[:] = ['/bin/other-tool', 'report']; {LEFT}"
    assert delay(run([sys.executable, "-c", code])) == 1000


def test_a_users_own_delay_wins(tmp_path: Path) -> None:
    done = run([sys.executable, "-c", LEFT], {"MIMALLOC_PURGE_DELAY": "250"})
    assert done.stdout.strip() == "'250'"
    assert delay(done) == 250
    cmd = [sys.executable, "-m", "checkfu_fast", "report", "--no-cache", str(tmp_path)]
    assert delay(run(cmd, {"MIMALLOC_PURGE_DELAY": "250"})) == 250
