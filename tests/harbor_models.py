"""Harbor's own ATIF models (``harbor.models.trajectories``), for validating exports.

The ``harbor`` package (PyPI, Apache-2.0) declares Python >= 3.12 and pulls a large dependency
tree, but its trajectory models import only pydantic and the standard library. So the tests
fetch the pinned wheel once (``pip download``, no install, no dependencies) into a cache
directory, put the wheel on ``sys.path`` (a wheel is a zip) and import the models from it.
Nothing is vendored. Without the registry (offline) or pydantic the tests that need the models
skip, saying why.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

HARBOR = "harbor==0.26.0"  # ATIF-v1.8 (audio content parts; v1.7's subagent_trajectories)
CACHE = Path(os.environ.get("CHECKFU_TEST_CACHE", Path.home() / ".cache" / "checkfu-fast-tests"))


def load() -> ModuleType:
    """``harbor.models.trajectories`` (skips the calling test when it cannot be had)."""
    try:
        import pydantic  # noqa: F401
    except ImportError:
        pytest.skip("pydantic is absent (the test extra installs it): no Harbor ATIF models")
    try:
        return importlib.import_module("harbor.models.trajectories")
    except ImportError:
        pass
    target = CACHE / HARBOR.replace("==", "-")
    wheels = sorted(target.glob("harbor-*.whl")) if target.is_dir() else []
    if not wheels:
        target.mkdir(parents=True, exist_ok=True)
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--python-version", "3.12", "--disable-pip-version-check", "-q", HARBOR,
            "-d", str(target),
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"cannot fetch {HARBOR} from PyPI for its ATIF models: {exc}")
        wheels = sorted(target.glob("harbor-*.whl"))
        if proc.returncode != 0 or not wheels:
            pytest.skip(
                f"cannot fetch {HARBOR} from PyPI for its ATIF models: {proc.stderr[-300:]}"
            )
    sys.path.append(str(wheels[-1]))
    return importlib.import_module("harbor.models.trajectories")


def validate(doc: dict) -> object:
    """Harbor's ``Trajectory.model_validate`` of an exported document (raises when invalid)."""
    return load().Trajectory.model_validate(doc)
