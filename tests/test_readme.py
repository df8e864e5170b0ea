"""The Python blocks of the README and docs run as written, from the project root."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "doc", ["README.md", "docs/mappings.md", "docs/journal.md", "docs/usage.md"]
)
def test_python_blocks_run(doc: str) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), re.S)
    assert blocks
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            exec(compile(block, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
