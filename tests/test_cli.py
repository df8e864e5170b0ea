"""The command line: normalize to JSONL, golden replay, exit codes."""

from __future__ import annotations

import argparse
import fcntl
import json
import re
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import cli

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


#: Runs ``checkfu-fast ARGS`` in this process (``cli.main``, the command line's argv), then
#: prints which of the package's heavier modules it imported.
IMPORTED = (
    "import sys\n"
    "from checkfu_fast import cli\n"
    "status = cli.main()\n"
    "heavy = ('checkfu_fast.reference', 'checkfu_fast.report', 'checkfu_fast.export')\n"
    "print(sorted(m for m in sys.modules if m in heavy), status, file=sys.stderr)\n"
)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_normalize_imports_neither_the_twin_nor_report_nor_export(jobs: str) -> None:
    """The command's start: the options are checked by the core, the parser leaves report's
    and export's options (and modules) to their own commands; the output is the same."""
    args = ["normalize", "--jobs", jobs, str(SAMPLE), str(SAMPLE)]
    res = subprocess.run([sys.executable, "-c", IMPORTED, *args], capture_output=True, check=False)
    assert res.stderr.decode().strip() == "[] 0"
    assert res.stdout == run(*args).stdout == run(*args, "--reference").stdout
    for bad, field in (("--max-depth", "0"), ("--max-nodes", "-1"), ("--fields", "nope")):
        err = run("normalize", "--jobs", jobs, bad, field, str(SAMPLE))
        assert (err.returncode, err.stdout) == (2, b"")
        ref = run("normalize", "--jobs", jobs, "--reference", bad, field, str(SAMPLE))
        assert err.stderr == ref.stderr  # the core's message is the twin's


def test_report_and_export_still_take_their_options() -> None:
    for command in ("report", "export"):
        res = run(command, "--help")
        assert res.returncode == 0 and b"--dialect" in res.stdout, res.stderr
    assert b"--by" in run("report", "--help").stdout
    session = ROOT / "docs" / "examples-sessions" / "claude-session.jsonl"
    args = ["report", "--json", "--no-cache", "--tz", "UTC", "--by", "model", str(session)]
    res = subprocess.run([sys.executable, "-c", IMPORTED, *args], capture_output=True, check=False)
    assert json.loads(res.stdout) == json.loads(run(*args).stdout)
    assert json.loads(res.stdout)["rows"]  # the claude session's models
    assert "'checkfu_fast.report'" in res.stderr.decode()


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


# --- issue 15: a CLI that behaves like one -------------------------------------------------

MAPPING = ROOT / "tests" / "data" / "gemini-cli.mapping.json"
GEMINI = (
    b'{"type":"init","session_id":"s-1","model":"gemini-2.5-pro"}\n'
    b'{"type":"message","role":"assistant","content":"Sure","timestamp":"t"}\n'
)
COMMAND_NAMES = (
    "normalize",
    "golden",
    "journal",
    "dialects",
    "vectors",
    "run",
    "report",
    "audit",
    "export",
)


def test_build_parser_for_one_command_parses_as_the_whole_parser() -> None:
    # build_parser(command) makes that command's parser only: the same options, defaults, help
    argvs = [
        ["normalize", "--jobs", "2", "--fields", "lean", "--no-progress", "a.jsonl", "b"],
        ["normalize", "--dialect", "codex", "-o", "out.jsonl", "--max-depth", "9", "-"],
        ["audit", "--json", "--progress", "d"],
        ["golden"],
        ["journal", "--reference", "j.jsonl"],
        ["report", "--json", "x.jsonl"],
    ]
    whole = cli.build_parser()
    for argv in argvs:
        assert cli.build_parser(argv[0]).parse_args(argv) == whole.parse_args(argv), argv
    (action,) = (
        a for a in cli.build_parser("normalize")._actions
        if isinstance(a, argparse._SubParsersAction)
    )  # fmt: skip
    assert list(action.choices) == ["normalize"]
    assert action.choices["normalize"].format_help() == subparsers()["normalize"].format_help()


def subparsers() -> dict[str, argparse.ArgumentParser]:
    (action,) = (
        a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    return dict(action.choices)


def harness_contract(tmp_path: Path, script: str) -> Path:
    """A contract whose entrypoint is the shell ``script`` (the prompt file is its $2)."""
    harness = tmp_path / "harness.sh"
    harness.write_text("#!/bin/sh\n" + script)
    harness.chmod(0o755)
    contract = {
        "image": "ghcr.io/acme/claude-code:2.1.0",
        "entrypoint": str(harness),
        "protocol": "oneshot-v1",
        "argv": ["--prompt-file", "{prompt_path}"],
        "prompt_transport": "argv_path",
        "output_mode": "stream_json",
    }
    path = tmp_path / "contract.json"
    path.write_text(json.dumps(contract))
    (tmp_path / "prompt.txt").write_text("hello")
    return path


def test_every_command_is_covered_here() -> None:
    """The tests below walk COMMAND_NAMES: a new command must be added to them."""
    assert set(subparsers()) == set(COMMAND_NAMES)


def test_version() -> None:
    res = run("--version")
    assert res.returncode == 0
    assert res.stdout.decode() == f"checkfu-fast {checkfu_fast.__version__}\n"
    assert checkfu_fast.__version__ == "0.1.0"


def test_top_level_help_is_plain_text_with_examples_and_exit_codes() -> None:
    res = run("--help")
    assert res.returncode == 0
    text = res.stdout.decode()
    assert "``" not in text and ":func:" not in text and ".. " not in text
    assert text.split("\n\n")[1].startswith("Normalize coding-agent CLI streams")
    assert "examples:\n  checkfu-fast normalize" in text
    assert "exit codes (every command):" in text
    for name in COMMAND_NAMES:
        assert f"    {name}" in text


def test_project_description_is_plain_text() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    (description,) = re.findall(r'^description = "(.*)"$', text, re.M)
    assert not re.search(r"``|:[a-z]+:`|\*\*", description), description
    assert 'readme = "README.md"' in text  # Markdown, rendered as such by PyPI


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_every_command_has_help_with_examples(name: str) -> None:
    res = run(name, "--help")
    assert res.returncode == 0, res.stderr
    text = res.stdout.decode()
    assert "``" not in text
    examples = text.split("examples:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert examples and all(f"checkfu-fast {name}" in line for line in examples)
    assert "exit codes (every command):" in text


def test_help_examples_with_shipped_files_run() -> None:
    """The examples naming the project's own files work as printed (from the project root)."""
    for argv in (
        ["normalize", "--summary", "vectors/samples/claude-api-error.jsonl"],
        ["golden", "vectors/events"],
        ["vectors", "vectors/oneshot"],
        ["dialects"],
    ):
        assert f"checkfu-fast {' '.join(argv)}" in run(argv[0], "--help").stdout.decode() + (
            run("--help").stdout.decode()
        )
        res = run(*argv)
        assert res.returncode == 0, (argv, res.stderr)


def test_dialect_takes_a_mapping_file_for_every_command_that_has_it() -> None:
    with_dialect = {
        name: p
        for name, p in subparsers().items()
        if any("--dialect" in a.option_strings for a in p._actions)
    }
    assert set(with_dialect) == {"normalize", "run", "report", "audit", "export"}
    required = {
        "normalize": ["-"],
        "run": ["c.json", "--prompt-file", "p"],
        "report": ["-"],
        "audit": ["-"],
        "export": ["--format", "atif", "-"],
    }
    for name, parser in with_dialect.items():
        args = parser.parse_args([*required[name], "--dialect", str(MAPPING)])
        assert isinstance(args.dialect, checkfu_fast.MappedDialect), name
        assert args.dialect.NAME == "north"
        assert parser.parse_args([*required[name], "--dialect", "codex"]).dialect == "codex"
        assert parser.parse_args(required[name]).dialect == "auto"


def test_normalize_with_a_mapping_file() -> None:
    res = run("normalize", "--dialect", str(MAPPING), "-", stdin=GEMINI)
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    assert [(e["dialect"], e["kind"], e["subtype"]) for e in events] == [
        ("north", "status", "init"),
        ("north", "message", "text"),
    ]
    assert events == checkfu_fast.normalize(GEMINI, checkfu_fast.load_dialect(MAPPING))


def test_run_with_a_mapping_file(tmp_path: Path) -> None:
    lines = GEMINI.decode().replace('"', '\\"').splitlines()
    c = harness_contract(tmp_path, "".join(f'printf "%s\\n" "{line}"\n' for line in lines))
    prompt = str(tmp_path / "prompt.txt")
    res = run("run", str(c), "--prompt-file", prompt, "--dialect", str(MAPPING))
    assert res.returncode in (0, 1), res.stderr  # accepted: the turn ran
    assert json.loads(res.stdout.splitlines()[0])["type"] == "observation.ready"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["normalize", "--dialect", "bogus", "-"], b"unknown dialect 'bogus'"),
        (["normalize", "--dialect", "missing.json", "-"], b"mapping file missing.json not found"),
        (["run", "c.json", "--prompt-file", "p", "--dialect", "bogus"], b"unknown dialect"),
    ],
)
def test_a_bad_dialect_is_a_usage_error(argv: list[str], message: bytes) -> None:
    res = run(*argv)
    assert res.returncode == 2
    assert message in res.stderr


def test_a_bad_mapping_file_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"checkfu_dialect": 1}')
    res = run("normalize", "--dialect", str(bad), "-")
    assert res.returncode == 2
    assert str(bad).encode() in res.stderr


REQUIRED = {
    "normalize": ["-"],
    "journal": ["-"],
    "vectors": ["x"],
    "run": ["c", "--prompt-file", "p"],
    "report": ["-"],
    "audit": ["-"],
    "export": ["--format", "atif", "-"],
}


def usage_error_argv(name: str) -> list[str]:
    return [name, *REQUIRED.get(name, []), "--no-such-option"]


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_usage_errors_exit_2_for_every_command(name: str) -> None:
    res = run(*usage_error_argv(name))
    assert res.returncode == 2
    assert b"unrecognized arguments: --no-such-option" in res.stderr
    assert b"Traceback" not in res.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["normalize", "missing.jsonl"],
        ["golden", "missing-dir"],
        ["journal", "missing.jsonl"],
        ["vectors", "missing.json"],
        ["run", "missing.json", "--prompt-file", "missing.txt"],
        ["export", "--format", "atif", "missing.jsonl"],
    ],
    ids=lambda argv: argv[0],
)
def test_an_unreadable_input_exits_1_for_every_command(argv: list[str]) -> None:
    res = run(*argv)
    assert res.returncode == 1, res.stderr
    assert b"missing" in res.stderr and b"Traceback" not in res.stderr


def test_run_with_an_unreadable_prompt_exits_1(tmp_path: Path) -> None:
    c = harness_contract(tmp_path, "exit 0\n")
    res = run("run", str(c), "--prompt-file", str(tmp_path / "nope.txt"))
    assert res.returncode == 1
    assert b"prompt file" in res.stderr and b"nope.txt: No such file or directory" in res.stderr


def test_a_rejected_vector_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "v.json"
    bad.write_text('{"vectors": 3}')
    res = run("vectors", str(bad))
    assert res.returncode == 2
    assert res.stdout.decode().startswith(f"ERROR {bad}: not a valid oneshot-v1 vector file")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["vectors", "{d}"], "{d}: no vector files (*.json) to check"),
        (["golden", "{d}"], "{d}: no golden files (DIALECT/NAME.input.jsonl) to check"),
        (["journal", "{d}/empty.jsonl"], "{d}/empty.jsonl: no journal records to check"),
        (["journal", "-"], "-: no journal records to check"),
    ],
    ids=["vectors", "golden", "journal", "journal-stdin"],
)
def test_nothing_to_check_fails_loudly(tmp_path: Path, argv: list[str], message: str) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"\n  \n")
    (tmp_path / "notes.txt").write_text("not a vector file")
    res = run(*(a.format(d=tmp_path) for a in argv), stdin=b" \n")
    assert res.returncode == 1
    assert f"checkfu-fast: {message.format(d=tmp_path)}\n" in res.stderr.decode()


def test_an_empty_dir_among_good_vector_files_still_fails(tmp_path: Path) -> None:
    res = run("vectors", str(ROOT / "vectors" / "oneshot-v1-author-kit.json"), str(tmp_path))
    assert res.returncode == 1
    assert f"{tmp_path}: no vector files".encode() in res.stderr


def test_run_shows_the_harness_stderr_tail_on_failure(tmp_path: Path) -> None:
    c = harness_contract(
        tmp_path, "echo 'loading config' >&2\necho 'fatal: no credentials found' >&2\nexit 3\n"
    )
    res = run("run", str(c), "--prompt-file", str(tmp_path / "prompt.txt"))
    assert res.returncode == 1
    last = json.loads(res.stdout.splitlines()[-2])
    assert last["type"] == "observation.failed"
    assert res.stderr.decode() == (
        "checkfu-fast: turn ended with observation.failed: runtime.harness_failed: "
        f"{last['payload']['error']['message']}\n"
    )
    assert "fatal: no credentials found" in res.stderr.decode()


def test_run_that_finishes_prints_nothing_on_stderr(tmp_path: Path) -> None:
    c = harness_contract(
        tmp_path,
        'echo \'{"type":"result","subtype":"success","is_error":false,"result":"ok"}\'\n'
        "echo 'a warning' >&2\n",
    )
    res = run("run", str(c), "--prompt-file", str(tmp_path / "prompt.txt"))
    assert res.returncode == 0
    assert res.stderr == b""


@pytest.mark.parametrize("name", COMMAND_NAMES)
def test_ctrl_c_exits_130_quietly_for_every_command(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, name, interrupted)
    assert cli.main([name, *REQUIRED.get(name, [])]) == 130
    assert capsys.readouterr() == ("", "")


def pipe_drained(proc: subprocess.Popen[bytes]) -> bool:
    assert proc.stdin is not None
    left = fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", left)[0] == 0


@pytest.mark.parametrize("name", ["normalize", "journal"])
def test_sigint_while_reading_stdin_exits_130_without_a_traceback(name: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "checkfu_fast", name, "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None
    proc.stdin.write(b'{"type":"turn.started"}\n')
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while not pipe_drained(proc):  # the command has started reading: it is in main()
        assert time.monotonic() < deadline, "the command never read its stdin"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == b""


def test_sigint_during_a_turn_exits_130_without_a_traceback(tmp_path: Path) -> None:
    started = tmp_path / "started"
    c = harness_contract(tmp_path, f"touch {started}\nexec sleep 60\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "checkfu_fast",
            "run",
            str(c),
            "--prompt-file",
            str(tmp_path / "prompt.txt"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while not started.exists():
        assert time.monotonic() < deadline, "the harness never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err
