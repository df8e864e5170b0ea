"""The command line: normalize to JSONL, golden replay, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import checkfu_fast

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "vectors" / "samples" / "claude-api-error.jsonl"


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        check=False,
    )


def test_normalize_file_writes_the_same_events_as_the_api() -> None:
    res = run("normalize", str(SAMPLE))
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    assert events == checkfu_fast.normalize(SAMPLE.read_bytes())


def test_stdin_and_summary() -> None:
    res = run(
        "normalize",
        "--dialect",
        "codex",
        "--summary",
        "-",
        stdin=b'{"type":"turn.started"}\nnot json\n',
    )
    assert res.returncode == 0
    kinds = [(e["kind"], e["subtype"]) for e in map(json.loads, res.stdout.splitlines())]
    assert kinds == [("status", "turn_started"), ("status", "non_json")]
    assert b"2 events from 1 file(s)" in res.stderr


def test_many_files_tag_their_source() -> None:
    res = run("normalize", str(SAMPLE), "-", stdin=b'{"type":"result"}\n')
    sources = {json.loads(line)["source"] for line in res.stdout.splitlines()}
    assert sources == {str(SAMPLE), "-"}


def test_errors_exit_nonzero() -> None:
    assert run("normalize", "--dialect", "bogus", "-").returncode == 2
    assert run("normalize", "--max-depth", "0", "-").returncode == 2
    missing = run("normalize", "does-not-exist.jsonl")
    assert missing.returncode == 1
    assert b"does-not-exist.jsonl" in missing.stderr


def test_golden_command(tmp_path: Path) -> None:
    ok = run("golden", str(ROOT / "vectors" / "events"))
    assert ok.returncode == 0, ok.stdout.decode()
    case = tmp_path / "codex"
    case.mkdir()
    (case / "t.input.jsonl").write_bytes(b'{"type":"turn.started"}\n')
    (case / "t.expected.jsonl").write_text(json.dumps({"kind": "status"}) + "\n")
    bad = run("golden", str(tmp_path))
    assert bad.returncode == 1
    assert b"/0/subtype: expected (absent)" in bad.stdout


def test_journal_command(tmp_path: Path) -> None:
    ok = tmp_path / "ok.jsonl"
    ok.write_text('{"kind":"run.start","engineSha":"a","engineVersion":"1","engineRoot":"/"}\n')
    res = run("journal", str(ok))
    assert res.returncode == 0
    assert b"1 records, 0 with violations" in res.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind":"queue.launch","queueId":"q","attempt":0,"token":"t"}\n{"kind":"x"}\n')
    res = run("journal", str(bad))
    assert res.returncode == 1
    assert res.stdout.decode().splitlines() == [
        f"{bad}:1: /attempt: must be >= 1 [minimum] (queue.launch)",
        f'{bad}:2: /kind: unknown kind "x" [unknown_kind] (x)',
    ]
