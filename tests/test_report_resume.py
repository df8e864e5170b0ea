"""``checkfu-fast report``'s cache reads an append-only file that grew from where it ended
(issue 21; docs/usage.md, "The cache"): the fold's state at the old end is kept with the file's
summary (the core's checkpoint) and the fold goes on over the new bytes only, with the totals of
a run without the cache, wherever the cut falls (inside a message's lines, between two codex
counters); a file whose old bytes changed (truncated, rewritten) is read again whole."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from checkfu_fast import cli, report
from conftest import ROOT

native = pytest.importorskip("checkfu_fast._native")

EXAMPLES = ROOT / "docs" / "examples-sessions"
BUDGET = (64 << 20, 64, 1_000_000)


class Spy:
    """The core, recording which files the report's fold read and which it resumed."""

    def __init__(self) -> None:
        self.read: list[str] = []
        self.resumed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(native, name)

    def _usage_fold_resume(self, files: list[Any], *a: Any, **k: Any) -> list[Any]:
        out = native._usage_fold_resume(files, *a, **k)
        for (path, _, _), res in zip(files, out, strict=True):
            self.read.append(os.path.basename(path))
            if res is not None and res[4]:
                self.resumed.append(os.path.basename(path))
        return out


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Spy:
    s = Spy()
    monkeypatch.setattr(report, "_native_module", lambda: s)
    return s


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(["report", "--tz", "UTC", "--json", "--by", "session", *argv]) in (0, 1)
    return capsys.readouterr().out


def lines(name: str) -> list[bytes]:
    return (EXAMPLES / name).read_bytes().splitlines(keepends=True)


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "projects" / "-home-dev-p").mkdir(parents=True)
    (root / "sessions").mkdir()
    shutil.copy(EXAMPLES / "claude-subagent.jsonl", root / "projects" / "-home-dev-p")
    shutil.copy(EXAMPLES / "codex-rollout-paginated.jsonl", root / "sessions")
    return root


def message_id(line: bytes) -> Any:
    d = json.loads(line)
    return d.get("message", {}).get("id") if isinstance(d.get("message"), dict) else None


def test_the_cuts_fall_where_the_state_matters() -> None:
    claude, codex = lines("claude-session.jsonl"), lines("codex-rollout.jsonl")
    # one message's usage on lines 4-6: the cut after line 5 splits it
    assert message_id(claude[4]) == message_id(claude[5]) == message_id(claude[6])
    # the codex counters on lines 20 and 21: the second needs the first
    assert b"token_count" in codex[20] and b"token_count" in codex[21]


@pytest.mark.parametrize(
    ("name", "where", "cut"),
    [
        ("claude-session.jsonl", "projects/-home-dev-p", 6),  # inside message lines 4-6
        ("claude-session.jsonl", "projects/-home-dev-p", 1),
        ("codex-rollout.jsonl", "sessions", 21),  # between two counters
        ("codex-rollout.jsonl", "sessions", 4),  # after turn_context: the model carried
    ],
)
def test_a_grown_file_is_read_from_where_it_ended(tmp_path, capsys, spy, name, where, cut) -> None:
    root = tree(tmp_path)
    f = root / where / name
    data = lines(name)
    f.write_bytes(b"".join(data[:cut]))
    assert run(capsys, str(root)) == run(capsys, "--no-cache", str(root))
    with f.open("ab") as out:  # the rest, appended in two steps
        out.write(b"".join(data[cut : cut + 2]))
    grown = run(capsys, str(root))
    assert spy.resumed == [name]
    assert grown == run(capsys, "--no-cache", str(root))
    with f.open("ab") as out:
        out.write(b"".join(data[cut + 2 :]))
    grown = run(capsys, str(root))
    assert spy.resumed == [name, name]
    assert grown == run(capsys, "--no-cache", str(root))
    # the other files came from the cache: only the grown one was read (twice)
    assert sorted(spy.read) == sorted(
        ["claude-subagent.jsonl", "codex-rollout-paginated.jsonl"] + [name] * 3
    )


def test_dedup_across_files_stays_exact(tmp_path, capsys, spy) -> None:
    """Two session files with the same messages (a resumed session copies the earlier one's
    lines): each message counts once, the best copy, while one of the files grows."""
    root = tree(tmp_path)
    data = lines("claude-session.jsonl")
    a = root / "projects" / "-home-dev-p" / "a.jsonl"
    b = root / "projects" / "-home-dev-q" / "b.jsonl"
    b.parent.mkdir()
    a.write_bytes(b"".join(data))
    b.write_bytes(b"".join(data[:5]))  # message lines 4-5 of 4-6: a partial copy
    assert run(capsys, str(root)) == run(capsys, "--no-cache", str(root))
    with b.open("ab") as out:
        out.write(b"".join(data[5:]))
    assert run(capsys, str(root)) == run(capsys, "--no-cache", str(root))
    assert spy.resumed == ["b.jsonl"]


@pytest.mark.parametrize("change", ["truncated", "rewritten-end", "rewritten-head", "no-newline"])
def test_a_file_whose_old_bytes_changed_is_read_whole(tmp_path, capsys, spy, change) -> None:
    root = tree(tmp_path)
    f = root / "sessions" / "codex-rollout.jsonl"
    data = lines("codex-rollout.jsonl")
    first = b"".join(data[:25])
    if change == "no-newline":  # the last line still being written
        first = first[:-40]
    f.write_bytes(first)
    run(capsys, str(root))
    whole = b"".join(data)
    if change == "truncated":
        whole = b"".join(data[:12])
    elif change == "rewritten-end":  # the same length, a byte before the old end changed
        whole = whole.replace(b'"turn_context"', b'"turn_kontext"', 2)
        assert whole[: len(first)] != first and len(whole) > len(first)
    elif change == "rewritten-head":
        whole = whole.replace(b"019b", b"019c", 1)
    f.write_bytes(whole)
    grown = run(capsys, str(root))
    assert spy.resumed == []
    assert spy.read[-1] == "codex-rollout.jsonl"
    assert grown == run(capsys, "--no-cache", str(root))


def test_resumed_folds_equal_whole_folds_at_every_line_end(tmp_path) -> None:
    """The core's checkpoint, kept as JSON, at every line end of every session example: the
    fold of the whole file from it is the fold of the whole file."""
    t = tmp_path / "t.jsonl"
    checked = cuts = 0
    for src in sorted(EXAMPLES.glob("*.jsonl")):
        data = src.read_bytes()
        for cut in [i + 1 for i, b in enumerate(data) if b == 10]:
            t.write_bytes(data[:cut])
            (first,) = native._usage_fold_resume([(str(t), None, None)], "auto", *BUDGET)
            state = json.loads(json.dumps([*first[:4], first[5]]))
            t.write_bytes(data)
            (got,) = native._usage_fold_resume([(str(t), None, state)], "auto", *BUDGET)
            (whole,) = native._usage_fold_limits([(str(t), None)], "auto", *BUDGET)
            # the summary, the counts and the rateLimits readings
            assert json.loads(json.dumps([*got[:3], got[5]])) == json.loads(json.dumps(whole))
            checked += got[4]
            cuts += 1
    # resumed except where auto had not decided the dialect yet (the first lines held)
    assert checked >= 0.8 * cuts


def test_a_damaged_checkpoint_reads_the_file_whole(tmp_path) -> None:
    t = tmp_path / "t.jsonl"
    data = (EXAMPLES / "codex-rollout.jsonl").read_bytes()
    t.write_bytes(data[: data.index(b"\n", 3000) + 1])
    (first,) = native._usage_fold_resume([(str(t), None, None)], "auto", *BUDGET)
    t.write_bytes(data)
    (whole,) = native._usage_fold_files([(str(t), None)], "auto", *BUDGET)
    (good,) = native._usage_fold_resume([(str(t), None, [*first[:4], first[5]])], "auto", *BUDGET)
    assert good[4] is True
    for damage in (
        [first[0], first[1], first[2], [1, 2], first[5]],
        [first[0], first[1], first[2], [*first[3][:3], "nodialect", *first[3][4:]], first[5]],
        [first[0], first[1], first[2], [*first[3][:6], "later", *first[3][7:]], first[5]],
        [[["x"]], 1, 2, first[3], first[5]],
        [first[0], first[1], first[2], first[3], [["codex", "5h"]]],
        [*first[:4]],
        "text",
    ):
        (got,) = native._usage_fold_resume([(str(t), None, damage)], "auto", *BUDGET)
        assert got[4] is False
        assert json.loads(json.dumps(list(got[:3]))) == json.loads(json.dumps(list(whole)))


def test_the_checkpoint_keeps_the_dialect_context(tmp_path) -> None:
    """The engine's dialect context at the checkpoint (the model of the rollout's last
    ``turn_context``) is kept: the resumed part's readings name it themselves, whatever the
    fold's own model (cleared here)."""
    t = tmp_path / "t.jsonl"
    data = lines("codex-rollout.jsonl")
    assert b'"turn_context"' in data[3]
    t.write_bytes(b"".join(data[:4]))
    (first,) = native._usage_fold_resume([(str(t), None, None)], "auto", *BUDGET)
    checkpoint = list(first[3])
    assert checkpoint[12] == "gpt-5.5"
    checkpoint[9] = None  # the fold's own model
    t.write_bytes(b"".join(data))
    (whole,) = native._usage_fold_files([(str(t), None)], "auto", *BUDGET)
    (got,) = native._usage_fold_resume(
        [(str(t), None, [*first[:3], checkpoint, first[5]])], "auto", *BUDGET
    )
    assert got[4] is True
    assert json.loads(json.dumps(list(got[:3]))) == json.loads(json.dumps(list(whole)))
    assert "gpt-5.5" in json.dumps(whole) and "unknown" not in json.dumps(whole[0][0])
    # without it, the resumed readings name none
    checkpoint[12] = None
    (bare,) = native._usage_fold_resume(
        [(str(t), None, [*first[:3], checkpoint, first[5]])], "auto", *BUDGET
    )
    assert bare[4] is True
    assert json.loads(json.dumps(list(bare[:3]))) != json.loads(json.dumps(list(whole)))


def test_the_checkpoint_keeps_the_service_tier(tmp_path) -> None:
    """The context's service tier (a codex ``thread_settings_applied`` with ``service_tier``
    ``fast``) is kept too: readings appended after the checkpoint are still fast ones, booked on
    ``"<model> (fast)"``; a checkpoint naming a speed the core does not know is not used."""
    t = tmp_path / "t.jsonl"
    data = (ROOT / "vectors/events/codex/rollout-fast-tier.input.jsonl").read_bytes()
    rows = data.splitlines(keepends=True)
    cut = next(i for i, r in enumerate(rows) if b'"token_count"' in r and i > 8)  # fast turn
    t.write_bytes(b"".join(rows[:cut]))
    (first,) = native._usage_fold_resume([(str(t), None, None)], "auto", *BUDGET)
    checkpoint = list(first[3])
    assert checkpoint[12:] == ["gpt-5.5", "fast"]
    t.write_bytes(data)
    (whole,) = native._usage_fold_files([(str(t), None)], "auto", *BUDGET)
    (got,) = native._usage_fold_resume(
        [(str(t), None, [*first[:3], checkpoint, first[5]])], "auto", *BUDGET
    )
    assert got[4] is True
    assert json.loads(json.dumps(list(got[:3]))) == json.loads(json.dumps(list(whole)))
    assert "gpt-5.5 (fast)" in json.dumps(whole)
    # without the tier the resumed fast readings are booked at the standard tier
    checkpoint[13] = None
    (bare,) = native._usage_fold_resume(
        [(str(t), None, [*first[:3], checkpoint, first[5]])], "auto", *BUDGET
    )
    assert json.loads(json.dumps(list(bare[:3]))) != json.loads(json.dumps(list(whole)))
    # a checkpoint naming a speed the core does not know is not resumed: the file is read whole
    checkpoint[13] = "warp"
    (foreign,) = native._usage_fold_resume(
        [(str(t), None, [*first[:3], checkpoint, first[5]])], "auto", *BUDGET
    )
    assert foreign[4] is False
    assert json.loads(json.dumps(list(foreign[:3]))) == json.loads(json.dumps(list(whole)))
