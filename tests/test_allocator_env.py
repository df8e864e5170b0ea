"""The core's allocator purge delay (python/checkfu_fast/__init__.py): set for the import of
the native module only, a user's own value left alone, nothing inherited by child processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import checkfu_fast

pytestmark = pytest.mark.skipif(
    checkfu_fast.IMPLEMENTATION != "native", reason="the native core is not installed"
)

CHECK = "import os, checkfu_fast; print(repr(os.environ.get('MIMALLOC_PURGE_DELAY')))"


def run(extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update(extra)
    return subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, check=True
    )


def test_delay_applied_at_load_and_not_left_in_the_environment() -> None:
    done = run({"MIMALLOC_VERBOSE": "1"})
    assert done.stdout.strip() == "None"  # children of the process do not inherit it
    # mimalloc prints its options as it loads (the module's import)
    assert "option 'purge_delay': 30" in done.stderr


def test_a_users_own_delay_wins() -> None:
    done = run({"MIMALLOC_VERBOSE": "1", "MIMALLOC_PURGE_DELAY": "250"})
    assert done.stdout.strip() == "'250'"
    assert "option 'purge_delay': 250" in done.stderr
