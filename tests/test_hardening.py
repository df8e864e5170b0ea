"""Issue 22, security: containment that holds against a root harness, a probe that a passing
shortage cannot switch off, staging directories other turns cannot read, removal that survives
``0o000`` directories, redaction of keys, numbers and a secret cut by the stderr buffer; and
issue 24's redaction that keeps ids (live == replay). Each case is an attack that worked on
the main of 2026-12-04."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast.oneshot import (
    TurnRequest,
    minimal_environment,
    observe,
    pid_namespace_available,
    run_turn,
    stream_turn,
    validate_contract,
)
from checkfu_fast.oneshot.redact import MARK, redact_bytes, redactor
from livehelp import FAST, contract, harness

CONTAINED = pytest.mark.skipif(
    not pid_namespace_available(), reason="this machine allows no PID namespace"
)
PYTHONPATH = os.pathsep.join(p for p in sys.path if p)
ROOT = Path(__file__).resolve().parents[1]


def _importable_as(user: int) -> bool:
    """Whether ``user`` can import the package from this checkout (a clone under a 0700
    directory such as ``mktemp -d``'s is not readable by nobody)."""
    cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", sys.executable]
    proc = subprocess.run(
        [*cmd, "-c", "import checkfu_fast"],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
        check=False,
    )
    return proc.returncode == 0


def run_script(code: str, env: dict[str, str] | None = None, user: int | None = None) -> str:
    """``code`` in a fresh interpreter (optionally as ``user`` through setpriv); its stdout."""
    cmd = [sys.executable, "-c", code]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": PYTHONPATH, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


# -- a root harness cannot leave its namespace's view ---------------------------------------------

ESCAPE_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {tests!r})
    from checkfu_fast.oneshot import TurnRequest, minimal_environment, run_turn
    from livehelp import contract, harness
    env = minimal_environment({{"RUNNER_PID": str(os.getpid())}})
    r = run_turn(contract(output_mode="text"), TurnRequest("go"), env=env,
                 **harness("escape-proc"))
    with open("/proc/self/oom_score_adj") as f:
        oom = f.read().strip()
    print(json.dumps([r.process.containment, r.process.stdout.decode(), oom]))
    """
)


@CONTAINED
def test_a_harness_that_unmounts_proc_sees_nothing_of_the_host():
    """As root (the default containment) the harness could ``umount -l /proc``, see the host's
    processes, read the runner's environment and make the runner the OOM killer's pick."""
    secret = "runner-only-secret-3f9a71"
    code = ESCAPE_SCRIPT.format(tests=str(Path(__file__).parent))
    containment, stdout, oom = json.loads(run_script(code, env={"CHECKFU_RUNNER_SECRET": secret}))
    assert containment == "pid_namespace"
    report = json.loads(stdout)
    assert report["umount"] is False  # /proc is locked in place
    assert report["pids"] <= 4  # the namespace only
    assert secret not in report["environ"]
    assert report["oom"] != "written" and oom != "1000"


@CONTAINED
@pytest.mark.skipif(os.geteuid() != 0, reason="the root harness's file access needs root")
def test_a_root_harness_keeps_root_file_access(tmp_path):
    """The user namespace that locks /proc maps every id: a root harness still reads and writes
    files of other users (here a 0o600 file owned by nobody) as it did before."""
    f = tmp_path / "theirs"
    f.write_text("their content\n")
    os.chown(f, 65534, 65534)
    f.chmod(0o600)
    tmp_path.chmod(0o755)
    r = run_turn(
        contract(output_mode="text", entrypoint="/bin/cat", argv=[str(f)]), TurnRequest("go")
    )
    assert (r.process.containment, r.process.stdout) == ("pid_namespace", b"their content\n")
    r = run_turn(
        contract(output_mode="text", entrypoint="/usr/bin/id", argv=["-u"]), TurnRequest("go")
    )
    assert r.process.stdout == b"0\n"


# -- the namespace probe ---------------------------------------------------------------------------

SHORTAGE_SCRIPT = textwrap.dedent(
    """
    import json, os
    from checkfu_fast.oneshot import TurnRequest, run_turn
    contract = {{
        "image": "x", "entrypoint": "/bin/echo", "protocol": "oneshot-v1", "argv": ["hi"],
        "prompt_transport": "stdin", "output_mode": "text",
    }}
    TurnRequest("warm up")  # imports, no turn: the probe has not run yet
    fds = []
    try:
        while True:
            fds.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    for fd in fds[len(fds) - {free}:]:
        os.close(fd)
    del fds[len(fds) - {free}:]
    try:
        first = run_turn(contract, TurnRequest("go"))
        first = [first.observations[-1]["type"], first.process.spawn_error,
                 os.path.exists(os.path.dirname(first.staging_dir))]
    except Exception as exc:
        first = [type(exc).__name__, str(exc)]
    for fd in fds:
        os.close(fd)
    later = run_turn(contract, TurnRequest("go"))
    print(json.dumps([first, later.process.containment, later.process.stdout.decode()]))
    """
)


@CONTAINED
@pytest.mark.parametrize("free", [1, 2, 3, 4])
def test_a_passing_fd_shortage_does_not_switch_containment_off(free):
    code = SHORTAGE_SCRIPT.format(free=free)
    proc = subprocess.run(
        ["/bin/sh", "-c", f'ulimit -n 256 && exec {sys.executable} -c "$0"', code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": PYTHONPATH},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, containment, stdout = json.loads(proc.stdout)
    # the short turn is the host's failure (never a bare OSError) ...
    assert first[:2] in (
        ["observation.retryable_failure", "host_resources"],
        ["observation.finished", None],  # (enough room after all)
    ), first
    assert first[2] is False  # its staging directory was removed all the same
    # ... and the next turn is contained again
    assert (containment, stdout) == ("pid_namespace", "hi\n")


# -- staging directories ---------------------------------------------------------------------------


def argv_path_contract(**over):
    return contract(
        output_mode="text", argv=["{prompt_path}"], prompt_transport="argv_path", **over
    )


@CONTAINED
def test_a_harness_cannot_read_a_concurrent_turns_prompt(tmp_path):
    secret = "the other turn's private prompt 5d1c"
    flag, started = tmp_path / "flag", tmp_path / "started"
    with stream_turn(
        argv_path_contract(),
        TurnRequest(secret),
        deadline_s=30,
        **harness("wait-flag", str(flag), str(started)),
    ) as a:
        try:
            for _ in range(500):
                if started.exists():
                    break
                threading.Event().wait(0.02)
            assert started.exists()
            b = run_turn(argv_path_contract(), TurnRequest("mine"), **harness("find-prompts"))
        finally:
            flag.touch()
        assert a.result.process.stdout == b"released\n"
    found = json.loads(b.process.stdout)
    assert secret not in found
    assert "mine" in found  # its own prompt (other runners' turns may show up: not ours)


def test_staging_dirs_have_a_private_per_turn_parent():
    seen = []
    r = run_turn(
        argv_path_contract(entrypoint="/bin/sh"),
        TurnRequest("x"),
        entrypoint_prefix=("-c", 'echo "$PWD"', "sh"),
    )
    staging = r.staging_dir
    seen.append(staging)
    assert r.process.stdout.decode().strip() == staging
    parent = os.path.dirname(staging)
    assert os.path.basename(parent).startswith("checkfu-oneshot-")
    assert not os.path.exists(staging) and not os.path.exists(parent)  # both removed


KILLED_RUNNER_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from checkfu_fast.oneshot import TurnRequest, stream_turn
    from livehelp import contract, harness
    c = contract(output_mode="text", argv=["{{prompt_path}}"], prompt_transport="argv_path")
    with stream_turn(c, TurnRequest({secret!r}), containment="process_group", deadline_s=60,
                     **harness("wait-flag", {flag!r}, {started!r})) as s:
        list(s)
    """
)


def test_a_sigkilled_runners_turn_is_swept_by_the_next_turn_never_while_it_lives(
    tmp_path, monkeypatch
):
    """The process-group fallback (no launcher to clean up after the runner): a runner
    SIGKILLed mid-turn leaves its staging directory and staged prompt; the next turn of this
    user removes them, but a turn started while the runner still lives leaves them alone."""
    tmp = tmp_path / "tmp"  # a $TMPDIR of this test's own (here and in the runner)
    tmp.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setenv("TMPDIR", str(tmp))
    flag, started = tmp_path / "flag", tmp_path / "started"
    secret = "the killed runner's prompt 41c9"
    code = KILLED_RUNNER_SCRIPT.format(
        tests=str(Path(__file__).parent), secret=secret, flag=str(flag), started=str(started)
    )
    runner = subprocess.Popen(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYTHONPATH}
    )
    try:
        for _ in range(1000):
            if started.exists() or runner.poll() is not None:
                break
            threading.Event().wait(0.02)
        assert started.exists()
        root = tmp / f"checkfu-oneshot-{os.geteuid()}"
        (parent,) = root.iterdir()
        (prompt,) = (parent / "turn").iterdir()
        assert prompt.read_text() == secret
        echo = contract(output_mode="text", entrypoint="/bin/echo", argv=["hi"])
        assert run_turn(echo, TurnRequest("go")).process.stdout == b"hi\n"
        assert prompt.read_text() == secret  # its runner lives: its directory stays
    finally:
        runner.kill()
        runner.wait()
    assert prompt.read_text() == secret  # left behind by the killed runner
    assert run_turn(echo, TurnRequest("go")).process.stdout == b"hi\n"
    assert not parent.exists()  # removed by the next turn
    assert os.listdir(tmp) == []


# -- removal ---------------------------------------------------------------------------------------

LOCKED_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {tests!r})
    from checkfu_fast.oneshot import TurnRequest, run_turn
    from livehelp import STUB, contract
    def usable(path):
        try:
            return os.stat(path) and os.access(path, os.X_OK)
        except OSError:
            return False
    # an interpreter this user may run (the venv's may live under a private home)
    exe = next(p for p in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3")
               if usable(p))
    out = []
    for containment in ("process_group", "auto"):
        r = run_turn(contract(output_mode="text"), TurnRequest("go"), containment=containment,
                     entrypoint=exe, entrypoint_prefix=(STUB, "lock-dir"))
        out.append([r.process.stdout.decode(), os.path.exists(r.staging_dir)])
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None, reason="needs setpriv to drop root"
)
def test_a_0o000_directory_does_not_keep_the_staging_dir_alive():
    """As a non-root runner (root ignores modes: this runs the turn as nobody when root)."""
    tests = Path(__file__).parent
    code = LOCKED_SCRIPT.format(tests=str(tests))
    user = 65534 if os.geteuid() == 0 else None
    if user is not None and not os.access(sys.executable, os.X_OK):
        pytest.skip("the interpreter is not usable by nobody")
    if user is not None and not _importable_as(user):
        pytest.skip("the checkout is not readable by nobody (a private parent directory)")
    out = json.loads(run_script(code, user=user))
    assert out == [["locked\n", False], ["locked\n", False]]


# -- redaction -------------------------------------------------------------------------------------


def test_a_secret_used_as_a_json_key_or_a_number_is_redacted():
    key, number = "key-secret-value-7f3e", "987654321012"
    env = minimal_environment({"CHECKFU_KEY": key, "CHECKFU_NUMBER": number})
    r = run_turn(contract(), TurnRequest("go"), env=env, **harness("secret-tool"))
    text = json.dumps(r.observations)
    (use,) = [o for o in r.observations if o["type"] == "observation.tool_use"]
    assert key not in text and number not in text, use
    assert use["payload"]["tool_use_id"] == "toolu_01"
    assert use["payload"]["args"] == {MARK: MARK}


def test_redaction_of_keys_numbers_and_collisions():
    redact = redactor({"A": "first-secret-1", "B": "second-secret-2", "N": "31415926535"})
    from checkfu_fast.oneshot.redact import redact_deep

    deep = redact_deep(
        {"first-secret-1": 1, "second-secret-2": 2, "n": 31415926535, "f": 2.5, "t": True}, redact
    )
    assert list(deep.values()) == [1, 2, MARK, 2.5, True]  # no value lost to a key collision
    assert all(MARK in k and "secret" not in k for k in list(deep)[:2])


@pytest.mark.parametrize("shown", [18, 8, 3, 1])
def test_a_secret_cut_by_the_stderr_buffer_is_redacted(shown):
    secret = "Zq7-secret-of-24-chars!!"
    assert len(secret) == 24
    size = 4096
    r = run_turn(
        contract(),
        TurnRequest("go"),
        env=minimal_environment({"CHECKFU_SECRET": secret}),
        stderr_tail_bytes=size,
        **harness("stderr-cut", str(shown), str(size)),
    )
    assert len(r.process.stderr_tail) <= size + len(MARK)
    assert r.process.stderr_tail.startswith(MARK.encode()), r.process.stderr_tail[:40]
    message = r.observations[-1]["payload"]["error"]["message"]
    assert secret[-shown:] + "x" not in message
    assert message.startswith(f"harness exited with status 1: {MARK}x")


def test_redact_bytes_hides_a_secret_cut_at_the_start():
    redact = redactor({"S": "abcdefgh-secret"})
    assert redact_bytes(b"h-secret and more", redact, cut=True) == MARK.encode() + b" and more"
    assert redact_bytes(b"h-secret and more", redact) == b"h-secret and more"  # not cut: text


TOOL_ID = "call_Ab3|fc_0d54" + "0123456789abcdef" * 3  # a Codex call id: 48 hex digits in it


def id_stream() -> bytes:
    init = {"type": "system", "subtype": "init", "session_id": "s", "tools": ["Bash"]}
    use = {"type": "tool_use", "id": TOOL_ID, "name": "Bash", "input": {"command": "ls"}}
    res = {"type": "tool_result", "tool_use_id": TOOL_ID, "content": "a\nb"}
    lines = [
        init,
        {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [use]}},
        {"type": "user", "message": {"role": "user", "content": [res]}},
        {"type": "result", "subtype": "success", "is_error": False, "result": "done"},
    ]
    return b"".join(json.dumps(x).encode() + b"\n" for x in lines)


def test_redaction_keeps_ids_and_live_equals_replay(tmp_path):
    raw = tmp_path / "stdout"
    raw.write_bytes(id_stream())
    c = contract()
    r = run_turn(c, TurnRequest("go"), **harness("raw", str(raw)))
    ids = [o["payload"]["tool_use_id"] for o in r.observations if "tool_use_id" in o["payload"]]
    assert ids == [TOOL_ID, TOOL_ID]
    replayed, _ = observe(validate_contract(c), TurnRequest("go"), raw.read_bytes())
    live = r.observations[:-1]
    assert live == replayed[:-1]  # (the ending of a replay has no process: no wall time)


def test_heuristic_rules_only_on_free_text():
    redact = redactor({})
    key = "0123456789abcdef" * 4
    assert redact(f"error: bad key {key}") == f"error: bad key {MARK}"  # free text
    assert redact.exact(f"call_{key}") == f"call_{key}"  # an id: kept
    assert redact.exact("sk-ant-api03-" + "Ab1" * 10) == MARK  # a known format: everywhere


def test_known_credentials_are_redacted_in_replays_too():
    stream = id_stream().replace(b'"ls"', b"\"curl -H 'Authorization: Bearer abcdefgh12345'\"")
    obs, _ = observe(validate_contract(contract()), TurnRequest("go"), stream)
    (use,) = [o for o in obs if o["type"] == "observation.tool_use"]
    assert use["payload"]["args"] == {"command": f"curl -H 'Authorization: Bearer {MARK}'"}
    assert use["payload"]["tool_use_id"] == TOOL_ID


# -- the output cap --------------------------------------------------------------------------------

YES = {"image": "x", "entrypoint": "/usr/bin/yes", "protocol": "oneshot-v1", "argv": []}
YES_CONTRACT = {**YES, "prompt_transport": "stdin", "output_mode": "stream_json"}


def test_stream_json_reads_at_the_pipes_speed_and_the_cap_wins_over_the_deadline():
    """The live fold no longer throttles reading: `yes` reaches a 4 MiB cap at once, so the
    turn ends payload_too_large, not turn_deadline_exceeded (the fold of 2 million junk lines
    takes far longer than the 3 s deadline)."""
    r = run_turn(YES_CONTRACT, TurnRequest("go"), output_cap=4 << 20, deadline_s=3, **FAST)
    assert r.process.output_truncated and len(r.process.stdout) == 4 << 20
    assert r.observations[-1]["payload"]["error"]["type"] == "validation.payload_too_large"
    assert r.process.wall_time_ms < 2500  # killed at the cap, well before the deadline
    assert not r.process.timed_out  # and the fold of the junk caught up before it (collapsed)


PEAK_SCRIPT = """
from checkfu_fast.oneshot import TurnRequest, observe, run_turn, validate_contract
from checkfu_fast.oneshot.executor import make_staging_dir, remove_staging_dir, run_process
def hwm():
    with open("/proc/self/status") as f:  # VmHWM: the peak RSS so far, in KiB
        return int(next(l.split()[1] for l in f if l.startswith("VmHWM:"))) // 1024
contract = validate_contract({contract!r})
observe(contract, TurnRequest("warm up"), b"y\\n" * 1000)
base = hwm()
{body}
print(hwm() - base)
"""


def peak_growth_mib(body: str, contract: dict | None = None) -> int:
    code = PEAK_SCRIPT.format(contract=contract or YES_CONTRACT, body=body)
    return int(run_script(code).split()[-1])


def test_run_process_holds_the_cap_once():
    """64 MiB of `yes`: the kept stdout grows in place and is handed over without a copy (the
    executor held twice the cap)."""
    body = (
        "d = make_staging_dir()\n"
        "r = run_process('/usr/bin/yes', [], stdin=None, staging_dir=d)\n"
        "assert r.output_truncated and len(r.stdout) == 64 << 20\n"
        "remove_staging_dir(d)"
    )
    assert peak_growth_mib(body) <= 64 + 16


def test_observe_replays_a_stored_stdout_in_pieces():
    """observe() of 1 MiB of short lines feeds it in pipe-sized pieces: the events of one
    piece at a time, not half a million event dicts at once."""
    body = "obs, _ = observe(contract, TurnRequest('go'), b'y\\n' * (1 << 19))"
    assert peak_growth_mib(body) <= 32


@pytest.mark.parametrize("mode", ["text", "stream_json"])
def test_a_turn_holds_at_most_the_cap_and_16_mib(mode):
    """run_turn on `yes` to the default 64 MiB cap: the stored stdout once (the exchange's
    decoded copy is made on access), at most 2 MiB queued for the fold, the fold's pieces
    (stream_json: 33 million junk lines, collapsed, folded within the 8 s deadline or cut by it
    on a loaded machine)."""
    body = (
        "r = run_turn(contract, TurnRequest('go'), deadline_s=8)\n"
        "assert r.process.output_truncated and len(r.process.stdout) == 64 << 20\n"
        "assert r.observations[-1]['payload']['error']['type'] == 'validation.payload_too_large'"
    )
    assert peak_growth_mib(body, {**YES_CONTRACT, "output_mode": mode}) <= 64 + 16


def test_a_turn_keeps_a_bounded_number_of_observations():
    """A flood of short messages: the stream yields every observation, the result keeps the
    first MAX_KEPT_OBSERVATIONS - 1 and the ending, and counts the rest."""
    from checkfu_fast.oneshot.turn import MAX_KEPT_OBSERVATIONS

    n = MAX_KEPT_OBSERVATIONS + 2_000
    with stream_turn(contract(), TurnRequest("go"), **harness("flood-messages", str(n))) as s:
        seen = sum(1 for _ in s)
        r = s.result
    assert seen == n + 2  # ready, the messages, the ending
    assert len(r.observations) == MAX_KEPT_OBSERVATIONS
    assert r.observations_dropped == n + 2 - MAX_KEPT_OBSERVATIONS
    assert r.observations[-1]["type"] == "observation.finished"
    assert r.observations[-2]["payload"]["content"] == f"m{MAX_KEPT_OBSERVATIONS - 3}"


# -- a junk flood folds at the pipe's pace (collapse_junk) ---------------------------------------

JUNK_LINES = [b"y", b"{y", b"\xff\xfe", b"1", b'"s"', b"  ", b"", b"\x1b[0m progress", b"[1,"]


def _with_junk(stdout: bytes, rng: random.Random) -> bytes:
    """``stdout`` with runs of junk lines (every kind, blank lines among them) put between
    its lines at random: between deltas, before the result, at both ends."""
    out = []
    for line in [*stdout.splitlines(keepends=True), b""]:
        if rng.random() < 0.5:
            out += [rng.choice(JUNK_LINES) + b"\n" for _ in range(rng.randint(1, 6))]
        out.append(line)
    return b"".join(out)


def _vectors() -> list[tuple[dict, TurnRequest, bytes]]:
    found = []
    for path in sorted((ROOT / "vectors" / "oneshot").glob("*.json")):
        for v in json.loads(path.read_text())["vectors"]:
            ex = v["exchange"]
            if v["authoring"]["output_mode"] != "stream_json" or ex["stdout"] is None:
                continue
            contract = validate_contract(v["authoring"])
            request = TurnRequest(ex["prompt"], ex["prior_state"], ex["output_schema"])
            found.append((contract, request, ex["stdout"].encode("utf-8", "surrogatepass")))
    return found


@pytest.mark.parametrize("implementation", ["native", "reference"])
def test_collapsed_junk_folds_to_the_same_observations(monkeypatch, implementation):
    """The oneshot fold gets each run of junk lines as its first line of each kind: every
    oneshot vector's stdout with junk runs put between its lines (each chunking) gives the same
    observations and state as with an event for every junk line."""
    from checkfu_fast import Normalizer, reference
    from checkfu_fast.oneshot.observe import Observer

    def every_line(self, dialect):
        if self._implementation == "reference":
            return reference.Normalizer(dialect)
        return Normalizer(dialect)

    rng = random.Random(22)
    cases = [(c, r, _with_junk(out, rng)) for c, r, out in _vectors() for _ in range(2)]
    assert len(cases) > 40
    collapsed = [observe(c, r, out, implementation=implementation) for c, r, out in cases]
    monkeypatch.setattr(Observer, "_make_normalizer", every_line)
    for (c, r, out), want in zip(cases, collapsed, strict=True):
        assert observe(c, r, out, implementation=implementation) == want


def test_collapse_junk_is_the_same_on_both_twins_in_any_chunking():
    """collapse_junk gives the same events and count on both twins whatever the chunking: the
    events of the lines it keeps (numbered densely), every other line counted."""
    from checkfu_fast import Normalizer, reference

    rng = random.Random(23)
    claude = (ROOT / "vectors" / "samples" / "claude-api-error.jsonl").read_bytes()
    for _ in range(30):
        data = _with_junk(claude, rng)
        runs = []
        for make in (Normalizer, reference.Normalizer):
            n = make("auto", collapse_junk=True)
            cut = sorted(rng.sample(range(len(data)), 5))
            pieces = [data[a:b] for a, b in zip([0, *cut], [*cut, len(data)], strict=True)]
            events = [e for p in pieces for e in n.feed(p)] + n.finish()
            runs.append((events, n.collapsed_lines))
        assert runs[0] == runs[1]
        events, collapsed = runs[0]
        full = checkfu_fast.normalize(data, "auto")
        # every line is accounted for: an event, or counted as collapsed
        assert len({e["position"] for e in full}) == len({e["position"] for e in events}) + (
            collapsed
        )
        kept = {e["position"] for e in events}
        assert [{**e, "seq": 0} for e in full if e["position"] in kept] == [
            {**e, "seq": 0} for e in events
        ]


def test_a_junk_flood_is_folded_before_the_deadline():
    """`yes` (33 million junk lines) to the default 64 MiB cap with a 60 s deadline: the fold
    catches up long before it (it folded 0.35 MiB/s, so the deadline cut it: timed_out)."""
    r = run_turn(YES_CONTRACT, TurnRequest("go"), deadline_s=60, **FAST)
    assert r.process.output_truncated and len(r.process.stdout) == 64 << 20
    assert not r.process.timed_out
    assert r.observations[-1]["payload"]["error"]["type"] == "validation.payload_too_large"


def test_a_turn_keeps_a_bounded_number_of_observation_bytes():
    """400 messages of 100,000 characters (40 MB, under the cap): the result keeps the first
    ones up to MAX_KEPT_BYTES and the ending (it kept all 400, 10,000 such would be 2.5 GB)."""
    from checkfu_fast.oneshot.turn import MAX_KEPT_BYTES, observation_bytes

    n, size = 400, 100_000
    with stream_turn(
        contract(), TurnRequest("go"), **harness("flood-messages", str(n), str(size))
    ) as s:
        seen = sum(1 for _ in s)
        r = s.result
    assert seen == n + 2 and r.observations_skipped == 0
    kept = r.observations[:-1]
    assert sum(observation_bytes(o) for o in kept) <= MAX_KEPT_BYTES
    assert len(kept) > (MAX_KEPT_BYTES // (size + 1000)) - 2  # as many as fit, in order
    assert [o["payload"]["content"][:4] for o in kept[1:3]] == ["m0xx", "m1xx"]
    assert r.observations_dropped == n + 2 - len(r.observations)
    assert r.observations[-1]["type"] == "observation.finished"


@pytest.mark.parametrize(("n", "size"), [(12_000, 0), (400, 100_000)])
def test_a_consumer_that_falls_behind_gets_a_bounded_queue(n, size):
    """A consumer that takes nothing until the turn has ended: the stream queued at most
    QUEUE_MAX_OBSERVATIONS observations of at most QUEUE_MAX_BYTES and the ending (the queue
    held every observation of the turn); the rest are counted in observations_skipped."""
    from checkfu_fast.oneshot.turn import (
        QUEUE_MAX_BYTES,
        QUEUE_MAX_OBSERVATIONS,
        observation_bytes,
    )

    args = ("flood-messages", str(n), str(size))
    with stream_turn(contract(), TurnRequest("go"), **harness(*args)) as s:
        assert s.wait(120)
        got = list(s)
        r = s.result
    assert got[-1]["type"] == "observation.finished"
    assert len(got) - 1 <= QUEUE_MAX_OBSERVATIONS
    assert sum(observation_bytes(o) for o in got[:-1]) <= QUEUE_MAX_BYTES
    assert len(got) + r.observations_skipped == n + 2
    assert r.observations_skipped > 0 and s.skipped == r.observations_skipped
    first = min(len(got), len(r.observations)) - 1
    assert got[:first] == r.observations[:first]  # the first ones, in order


# -- the mixed-threads attack: 80 turns of ten kinds on 8 threads, each with its ending -----------

FLOOD_CAP = {"output_cap": 4 << 20, "deadline_s": 3}
MIXED = [
    # (name, contract, options, (ending type, error type or stop reason))
    ("answer", contract(), harness("flood-messages", "3"), ("finished", "end_turn")),
    ("yes", YES_CONTRACT, FLOOD_CAP, ("failed", "validation.payload_too_large")),
    (
        "flood",
        contract(),
        {**harness("flood"), **FLOOD_CAP},
        ("failed", "validation.payload_too_large"),
    ),
    (
        "binary",
        contract(),
        {**harness("flood", "binary"), **FLOOD_CAP},
        ("failed", "validation.payload_too_large"),
    ),
    (
        "text-yes",
        {**YES_CONTRACT, "output_mode": "text"},
        FLOOD_CAP,
        ("failed", "validation.payload_too_large"),
    ),
    (
        "never-read",
        contract(),
        {**harness("never-read"), "deadline_s": 1},
        ("failed", "runtime.turn_deadline_exceeded"),
    ),
    (
        "heartbeats",
        contract(),
        {**harness("stream-forever"), "deadline_s": 1},
        ("failed", "runtime.turn_deadline_exceeded"),
    ),
    ("exit", contract(), harness("exit", "3"), ("failed", "runtime.harness_failed")),
    ("signal", contract(), harness("self-signal", "9"), ("failed", "runtime.harness_failed")),
    ("cancel", contract(), harness("stream-forever"), ("finished", "interrupted")),
]


def _ending_of(name, c, options):
    with stream_turn(c, TurnRequest("go"), **{**FAST, **options}) as s:
        for obs in s:
            if name == "cancel" and obs["type"] == "observation.agent_message":
                s.cancel()
        last = s.result.observations[-1]
    payload = last["payload"]
    detail = payload["error"]["type"] if "error" in payload else payload.get("stop_reason")
    return last["type"].removeprefix("observation."), detail


def test_eighty_mixed_turns_on_eight_threads_end_as_they_should():
    """Ten kinds of turn (an answer, floods of junk lines, of no newline and of text to a
    4 MiB cap with a 3 s deadline, deadlines, a failing exit, a signal, a cancel), eight of
    each, on eight threads at once: every turn has its own ending (16 of 80 were wrong when
    the fold throttled the reading)."""
    jobs = [MIXED[i % len(MIXED)] for i in range(80)]
    wrong: list[tuple[str, tuple[str, str]]] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        for name, c, options, want in jobs[k::8]:
            got = _ending_of(name, c, options)
            if got != want:
                with lock:
                    wrong.append((name, got))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not any(t.is_alive() for t in threads)
    assert wrong == []


def test_run_turn_in_an_executor_has_a_cancel_hook():
    """run_turn in loop.run_in_executor under asyncio.shield: cancelling the awaiting task
    cannot reach the thread, but run_turn's cancel flag can: the turn ends interrupted at once
    (it ran to its deadline, 19 s in the attack; here 60 s)."""
    import asyncio
    import functools

    stop = threading.Event()
    started = threading.Event()

    async def main():
        loop = asyncio.get_running_loop()
        call = functools.partial(
            run_turn,
            contract(),
            TurnRequest("go"),
            deadline_s=60,
            cancel=stop,
            **FAST,
            **harness("stream-forever"),
        )
        fut = loop.run_in_executor(None, call)

        async def waiter():
            started.set()
            return await asyncio.shield(fut)

        task = asyncio.ensure_future(waiter())
        await asyncio.sleep(0.5)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            stop.set()  # the hook: the thread sees it within a tick
        return await fut

    r = asyncio.run(main())
    assert started.is_set() and r.process.cancelled and not r.process.timed_out
    assert r.observations[-1]["type"] == "observation.finished"
    assert r.observations[-1]["payload"]["stop_reason"] == "interrupted"


def test_run_turn_refuses_a_cancel_that_is_not_a_flag():
    with pytest.raises(TypeError, match="is_set"):
        run_turn(contract(), TurnRequest("go"), cancel=True, **harness("exit", "0"))
