"""``checkfu-fast export --format atif|otel|html FILE|DIR|- [-o OUT]``."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from harbor_models import validate

SESSIONS = ROOT / "docs" / "examples-sessions"
SUBAGENT_STREAM = ROOT / "vectors" / "events" / "claude" / "subagent.input.jsonl"


def run(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", "export", *args],
        input=stdin,
        capture_output=True,
        cwd=ROOT,
        check=False,
        env=env,
    )


def test_atif_directory_one_trajectory_per_session(tmp_path: Path) -> None:
    res = run("--format", "atif", "-o", str(tmp_path / "out"), str(SESSIONS))
    assert res.returncode == 0, res.stderr
    files = sorted((tmp_path / "out").glob("*.json"))
    docs = {p.stem: json.loads(p.read_text()) for p in files}
    for doc in docs.values():
        validate(doc)
    # claude-session.jsonl and claude-subagent.jsonl (its sidechain file) are one session
    sids = {d["session_id"] for d in docs.values()}
    assert len(docs) == len(sids) == 4
    nested = [d for d in docs.values() if d.get("subagent_trajectories")]
    assert nested, "the claude sub-agent file is embedded in its parent session"
    assert b"4 session(s) written" in res.stderr


def test_atif_stdout_and_stdin() -> None:
    data = SUBAGENT_STREAM.read_bytes()
    res = run("--format", "atif", "-", stdin=data)
    assert res.returncode == 0, res.stderr
    (line,) = res.stdout.decode().splitlines()
    doc = json.loads(line)
    validate(doc)
    assert doc["subagent_trajectories"][0]["trajectory_id"] == "toolu_012hZhNyfdf6Y156ryHJSbxd"


def test_atif_one_file_and_agent_name(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    res = run(
        "--format", "atif", "--agent-name", "claude-code", "-o", str(out), str(SUBAGENT_STREAM)
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["agent"]["name"] == "claude-code"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # no temp file left


def test_html_pages(tmp_path: Path) -> None:
    res = run(
        "--format", "html", "-o", str(tmp_path / "pages"), str(ROOT / "docs" / "examples-2026")
    )
    assert res.returncode == 0, res.stderr
    pages = list((tmp_path / "pages").glob("*.html"))
    assert len(pages) >= 10
    for p in pages:
        text = p.read_text()
        assert text.startswith("<!DOCTYPE html>") and "default-src 'none'" in text
    one = run("--format", "html", str(SUBAGENT_STREAM))
    assert one.returncode == 0 and b"sub-agent" in one.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    several = run("--format", "html", str(ROOT / "docs" / "examples-2026"))
    assert several.returncode == 2 and b"give -o DIR" in several.stderr
    assert run("--format", "otel", "-o", "x", str(SUBAGENT_STREAM)).returncode == 2
    assert run("--format", "pdf", str(SUBAGENT_STREAM)).returncode == 2
    assert run(str(SUBAGENT_STREAM)).returncode == 2  # --format is required


def test_unreadable_and_empty_inputs_exit_1(tmp_path: Path) -> None:
    res = run("--format", "atif", str(tmp_path / "missing.jsonl"))
    assert res.returncode == 1 and b"missing.jsonl" in res.stderr
    (tmp_path / "empty").mkdir()
    res = run("--format", "atif", str(tmp_path / "empty"))
    assert res.returncode == 1 and b"no stream files" in res.stderr


def _env(**kw: str) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(kw)
    return env


def test_otel_to_a_real_receiver() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is absent")
    from otlp_receiver import Receiver

    r = Receiver()
    try:
        res = run("--format", "otel", str(SUBAGENT_STREAM), str(SESSIONS),
                  env=_env(OTEL_EXPORTER_OTLP_ENDPOINT=r.endpoint))  # fmt: skip
    finally:
        r.close()
    assert res.returncode == 0, res.stderr
    roots = [s for s in r.spans if not s["parent_span_id"]]
    assert len(roots) == 5  # the stream's session and the four of the session files
    n = len(r.spans)
    assert f"{n} of {n} span(s) in 5 trace(s) sent to {r.endpoint}".encode() in res.stderr


def test_otel_unreachable_endpoint_exits_1() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is absent")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = _env(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_EXPORTER_OTLP_TIMEOUT="2"
    )
    res = run("--format", "otel", str(SUBAGENT_STREAM), env=env)
    assert res.returncode == 1
    assert b"failed" in res.stderr
