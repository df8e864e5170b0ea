"""Live turns: run_turn and `checkfu-fast run` against stub harnesses (docs/oneshot.md 3, 4)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from checkfu_fast.cli import main
from checkfu_fast.oneshot import TurnRequest, minimal_environment, run_turn

STUB = str(Path(__file__).with_name("stubs") / "harness.py")
FAST = {"sigint_grace_s": 0.2, "sigterm_grace_s": 0.2, "drain_s": 0.3}
CLAUDE_OK = (
    '{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":'
    '[{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/w/a"}}]}}\n'
    '{"type":"result","subtype":"success","is_error":false,"result":"All good.",'
    '"duration_ms":40,"total_cost_usd":0.0123}\n'
)


def contract(**over):
    c = {
        "image": "ghcr.io/acme/claude-code:2.1.0",
        "entrypoint": "/usr/local/bin/claude",
        "protocol": "oneshot-v1",
        "argv": ["--prompt-file", "{prompt_path}"],
        "prompt_transport": "argv_path",
        "output_mode": "stream_json",
        "resume_flag": "--continue",
    }
    c.update(over)
    return c


def types(result):
    return [o["type"].removeprefix("observation.") for o in result.observations]


def test_live_turn_sees_staged_prompt_and_reports_measured_turn(tmp_path):
    out = tmp_path / "stdout"
    out.write_text(CLAUDE_OK)
    record = tmp_path / "record.json"
    env = minimal_environment({"CHECKFU_STUB_STDOUT": str(out), "CHECKFU_STUB_RECORD": str(record)})
    stub = str(Path(__import__("checkfu_fast.oneshot.stub").oneshot.stub.__file__))
    prior = {"schema_version": 1, "turn": 1, "last_response": "hi"}
    result = run_turn(
        contract(),
        TurnRequest("Fix it: $HOME {x}", prior),
        env=env,
        entrypoint=sys.executable,
        entrypoint_prefix=(stub,),
    )
    seen = json.loads(record.read_text())
    root = result.staging_dir
    assert seen["argv"] == ["--prompt-file", f"{root}/prompt.txt", "--continue"]
    assert seen["stdin"] is None
    assert seen["staged_files"] == [{"path": f"{root}/prompt.txt", "content": "Fix it: $HOME {x}"}]
    assert not os.path.exists(root)  # the private staging dir is gone
    assert types(result) == ["ready", "tool_use", "finished"]
    finished = result.observations[-1]["payload"]
    assert finished["vendor_reported_cost_microusd"] == 12300
    turn = finished["turn"]
    assert (turn["filesystem_commands"], turn["model_calls"], turn["execution"]) == (1, 1, "shell")
    assert turn["wall_time_ms"] == result.process.wall_time_ms  # measured, not the reported 40
    assert result.resulting_state == {"schema_version": 1, "turn": 2, "last_response": "All good."}


@pytest.mark.parametrize(
    ("prefix", "options", "error_type"),
    [
        ((STUB, "never-read"), {"deadline_s": 0.3}, "runtime.turn_deadline_exceeded"),
        ((STUB, "flood"), {"output_cap": 1 << 16}, "validation.payload_too_large"),
        ((STUB, "exit", "7"), {}, "runtime.harness_failed"),
        ((STUB, "self-signal", "9"), {}, "runtime.harness_failed"),
    ],
)
def test_live_failure_endings(prefix, options, error_type):
    result = run_turn(
        contract(prompt_transport="stdin", argv=[]),
        TurnRequest("x"),
        entrypoint=sys.executable,
        entrypoint_prefix=prefix,
        **options,
        **FAST,
    )
    assert types(result)[0] == "ready" and types(result)[-1] == "failed"
    assert result.observations[-1]["payload"]["error"]["type"] == error_type


def test_missing_entrypoint_is_harness_unavailable():
    result = run_turn(contract(entrypoint="/opt/nowhere/claude"), TurnRequest("x"))
    assert types(result) == ["ready", "failed"]
    err = result.observations[-1]["payload"]["error"]
    assert err == {
        "type": "runtime.harness_unavailable",
        "message": "entrypoint /opt/nowhere/claude not found",
    }


def test_cli_run_prints_observations_then_state(tmp_path, capsys):
    script = tmp_path / "harness.sh"
    script.write_text(
        "#!/bin/sh\n"
        'printf \'%s\\n\' "{\\"type\\":\\"result\\",\\"subtype\\":\\"success\\",'
        '\\"is_error\\":false,\\"result\\":\\"$(cat "$2")\\"}"\n'
    )
    script.chmod(0o755)
    c = tmp_path / "contract.json"
    c.write_text(json.dumps(contract(entrypoint=str(script))))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("pong")
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"schema_version": 1, "turn": 3, "last_response": "ping"}))
    new_state = tmp_path / "new.json"
    argv = ["run", str(c), "--prompt-file", str(prompt), "--state", str(state)]
    assert main([*argv, "--state-out", str(new_state)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x.get("type") for x in lines] == ["observation.ready", "observation.finished", None]
    want = {"schema_version": 1, "turn": 4, "last_response": "pong"}
    assert lines[-1] == {"resulting_state": want}
    assert json.loads(new_state.read_text()) == want


def test_cli_run_passes_the_output_schema_and_takes_the_structured_answer(tmp_path, capsys):
    """--output-schema: the schema reaches the harness compactly after its flag (argv_json);
    the result's structured_output becomes last_response. The harness echoes the schema."""
    script = tmp_path / "harness.sh"
    script.write_text(
        "#!/bin/sh\n"
        "for last; do :; done\n"
        f'printf "%s" "$last" > {tmp_path}/schema-arg.txt\n'
        'printf \'{"type":"result","subtype":"success","is_error":false,"result":"x",'
        '"structured_output":%s}\\n\' "$last"\n'
    )
    script.chmod(0o755)
    c = tmp_path / "contract.json"
    over = {"output_schema_flag": "--json-schema", "output_schema_transport": "argv_json"}
    c.write_text(json.dumps(contract(entrypoint=str(script), **over)))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("q")
    schema = tmp_path / "schema.json"
    answer = {"type": "object", "properties": {"answer": {"type": "string"}}}
    schema.write_text(json.dumps(answer, indent=4))
    argv = ["run", str(c), "--prompt-file", str(prompt), "--output-schema", str(schema)]
    assert main(argv) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    compact = json.dumps(answer, separators=(",", ":"))
    assert (tmp_path / "schema-arg.txt").read_text() == compact  # the argument, byte for byte
    assert lines[-1]["resulting_state"]["last_response"] == compact
    assert lines[-2]["type"] == "observation.finished"


def test_cli_run_rejects_a_bad_contract_with_its_pointer(tmp_path, capsys):
    c = tmp_path / "contract.json"
    c.write_text(json.dumps(contract(argv=["--prompt-file"])))
    prompt = tmp_path / "p"
    prompt.write_text("x")
    assert main(["run", str(c), "--prompt-file", str(prompt)]) == 2
    err = capsys.readouterr().err
    assert "validation.malformed at /argv: prompt.placeholder" in err
