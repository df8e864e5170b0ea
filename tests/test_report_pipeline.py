"""``report --no-cache``: the whole pipeline in the core (``_UsageMerge.fold_files``: every
file folded on every core and merged in file order there). Its output, warnings and exit
status are those of the per-file path the cache takes (``report.fold_files``), file by file."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import cli
from checkfu_fast import report as report_mod
from checkfu_fast.usage import CoreFold
from conftest import ROOT

EXAMPLES = ROOT / "docs" / "examples-sessions"

pytestmark = pytest.mark.skipif(
    report_mod._native_module() is None, reason="the core is not built (reference fallback)"
)


def _assistant(mid: str, ts: str, out: int, **cwd: str) -> str:
    """A claude session line; without ``cwd`` its project is the file's folder under
    ``projects/`` (``report.claude_project``)."""
    return json.dumps(
        {
            "type": "assistant",
            "sessionId": "s-" + mid,
            "requestId": "req_" + mid,
            "timestamp": ts,
            **cwd,
            "uuid": "u" + mid,
            "message": {
                "id": mid,
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "content": [{"type": "text", "text": "x"}],
                "usage": {"input_tokens": 10, "output_tokens": out},
            },
        }
    )


def tree(root: Path) -> list[str]:
    """Session files under ``projects/`` (some reached through ``..`` and ``//``), rollouts, a
    missing file and one the core leaves to Python (a timestamp in Arabic-Indic digits), in
    the order given."""
    names = []
    for i, project in enumerate(["-home-a", "-home-b", "-home-a"]):
        d = root / "projects" / project
        d.mkdir(parents=True, exist_ok=True)
        for src in ("claude-session.jsonl", "claude-subagent.jsonl"):
            p = d / f"{i}-{src}"
            shutil.copy(EXAMPLES / src, p)
            names.append(str(p))
    names.append(str(root / "projects" / "-home-b" / ".." / "-home-a" / "0-claude-session.jsonl"))
    names.append(str(root) + "/projects//-home-b/./1-claude-subagent.jsonl")
    names.insert(2, str(root / "projects" / "-home-a" / "missing.jsonl"))
    odd = root / "projects" / "-home-c" / "odd.jsonl"
    odd.parent.mkdir()
    odd.write_text(_assistant("m1", "٢٠٢٦-03-29T01:30:00Z", 5, cwd="/w") + "\n", encoding="utf-8")
    names.insert(4, str(odd))
    # no cwd: the project from the path, as os.path.normpath reads it
    for mid in ("n1", "n2"):
        p = root / "projects" / "-home-d" / f"{mid}.jsonl"
        p.parent.mkdir(exist_ok=True)
        p.write_text(_assistant(mid, "2026-03-29T01:30:00Z", 7) + "\n")
    names.append(str(root / "projects" / "-home-b" / ".." / "-home-d" / "n1.jsonl"))
    names.append(str(root) + "//projects/./-home-d//n2.jsonl")
    rollouts = root / "sessions"
    rollouts.mkdir()
    shutil.copy(EXAMPLES / "codex-rollout.jsonl", rollouts / "r.jsonl")
    names.append(str(rollouts / "r.jsonl"))
    return names


def _masked(err: str) -> str:
    """stderr with the progress lines' rates (which vary) masked."""
    return re.sub(r"[\d.]+ MB/s, ETA \S+", "MB/s", err)


def both(argv: list[str], capsys: Any, tmp_path: Path, monkeypatch: Any) -> tuple[Any, Any]:
    """``(rc, out, err)`` of ``report --no-cache argv`` and of ``report argv`` with a fresh
    cache (the per-file path)."""
    got = []
    for i, extra in enumerate((["--no-cache"], [])):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / f"cache{i}"))
        rc = cli.main(["report", *extra, *argv])
        out, err = capsys.readouterr()
        got.append((rc, out, _masked(err)))
    return got[0], got[1]


@pytest.mark.parametrize(
    "argv",
    [
        ["--json", "--tz", "UTC"],
        ["--json", "--tz", "UTC", "--by", "project,model"],
        ["--tz", "UTC", "--by", "session"],
        ["--json", "--tz", "UTC", "--dialect", "claude"],
        ["--json", "--tz", "UTC", "--progress"],
        ["--json", "--tz", "UTC", "--dialect", "claude", "--progress"],
    ],
)
def test_no_cache_equals_the_per_file_path(argv, capsys, tmp_path, monkeypatch) -> None:
    names = tree(tmp_path / "t")
    core, per_file = both([*argv, *names], capsys, tmp_path, monkeypatch)
    assert core == per_file
    rc, out, err = core
    assert rc == 1 and "missing.jsonl" in err
    if "--dialect" in argv:  # the rollout: none of its lines is claude's
        assert "r.jsonl: --dialect claude recognised none" in err
    if "--json" in argv:
        doc = json.loads(out)
        assert doc["files"] == len(names) - 1
        if "project,model" in argv:
            assert {r["project"] for r in doc["rows"]} >= {"-home-d"}
    if "--progress" in argv:
        assert err.count(f"/{len(names)} files") == len(names)


def test_progress_in_runs(capsys, tmp_path, monkeypatch) -> None:
    """With ``--progress`` the core folds runs of PROGRESS_FILES files: the same lines."""
    monkeypatch.setattr(report_mod, "PROGRESS_FILES", 2)
    names = tree(tmp_path / "t")
    argv = ["--json", "--progress", "--dialect", "claude", *names]
    core, per_file = both(argv, capsys, tmp_path, monkeypatch)
    assert core == per_file


def test_a_directory_the_same_both_ways(capsys, tmp_path, monkeypatch) -> None:
    tree(tmp_path / "t")
    argv = ["--json", "--by", "day,project", str(tmp_path / "t")]
    core, per_file = both(argv, capsys, tmp_path, monkeypatch)
    assert core == per_file and core[0] == 0  # a walk finds no missing file


def test_fold_files_stops_before_a_file_left_to_python(tmp_path) -> None:
    names = tree(tmp_path / "t")
    native = report_mod._native_module()
    budget = report_mod.BUDGET
    fold = CoreFold(native)
    assert fold.fold_files(names, "auto", budget) == (2, [])  # names[2] is missing
    assert fold.fold_files(names[3:], "auto", budget) == (1, [])  # then the odd one
    # every file the core reads, on 1 to 3 threads: the same merge
    readable = [n for i, n in enumerate(names) if i not in (2, 4)]
    docs = []
    for jobs in (1, 2, 3):
        fold = CoreFold(native, by=("session",))
        merged, quiet = fold._merge.fold_files(readable, "claude", *budget, jobs)
        assert merged == len(readable) and quiet == [(len(readable) - 1, quiet[0][1])]
        docs.append((fold.totals(), fold.rows()))
    assert docs[0] == docs[1] == docs[2]
    with pytest.raises(ValueError, match="jobs"):
        CoreFold(native)._merge.fold_files(readable, "auto", *budget, 0)
    assert CoreFold(native).fold_files([], "auto", budget) == (0, [])
