#!/usr/bin/env python3
"""A misbehaving harness for tests/test_executor.py: ``harness.py MODE [ARG...]``.

Run as ``sys.executable harness.py MODE``; every mode is one failure mode of the reliability
notes (section 3.2). Pids of spawned descendants are written to the file ``$PIDFILE``.
"""

import json
import os
import signal
import subprocess
import sys
import time


def note_pid(pid: int) -> None:
    """The pid and the PID namespace it is counted in (a contained harness's pids mean
    nothing outside: the tests ignore those, never signalling a stranger)."""
    with open(os.environ["PIDFILE"], "a") as f:
        f.write(f"{pid} {os.readlink('/proc/self/ns/pid')}\n")


def main() -> None:
    mode, args = sys.argv[1], sys.argv[2:]
    out = sys.stdout.buffer
    if mode == "argv":  # S13: print the argv exactly as received
        out.write(json.dumps(args).encode() + b"\n")
    elif mode == "descendants":  # S1: a grandchild in our group keeps the pipes open
        child = subprocess.Popen(["sleep", "1000"])
        note_pid(child.pid)
        out.write(b"started\n")
        out.flush()
        time.sleep(1000)
    elif mode == "leave-member":  # S1: exits at once, a group member keeps the pipes open
        note_pid(subprocess.Popen(["sleep", "1000"]).pid)
        out.write(b"leaving\n")
    elif mode == "leave-daemon":  # S1: exits at once, a group member without our pipes lives on
        devnull = subprocess.DEVNULL
        child = subprocess.Popen(["sleep", "1000"], stdout=devnull, stderr=devnull)
        note_pid(child.pid)
        out.write(b"leaving\n")
    elif mode == "silent":  # S11: never writes, never reads, never exits
        note_pid(os.getpid())
        time.sleep(1000)
    elif mode == "stubborn":  # S1: ignores SIGINT and SIGTERM
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        out.write(b"ignoring\n")
        out.flush()
        while True:
            time.sleep(0.05)
    elif mode == "escape":  # S2: a double-forked, setsid'd grandchild holds stdout open
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                note_pid(os.getpid())
                time.sleep(30)
                os._exit(0)
            os._exit(0)
        out.write(b"escaped\n")
        if args[:1] == ["hang"]:  # S2 under the deadline: the leader never exits either
            out.flush()
            time.sleep(1000)
    elif mode == "flood":  # S3: endless output, with or without newlines
        chunk = b"y\n" * 32768 if args[:1] != ["binary"] else bytes(range(256)) * 256
        chunk = chunk.replace(b"\n", b"") if args[:1] == ["binary"] else chunk
        while True:
            out.write(chunk)
    elif mode == "stderr-flood":  # S4: 50 MiB on stderr, then a normal answer
        err = sys.stderr.buffer
        for _ in range(800):
            err.write(b"e" * 65535 + b"\n")
        err.write(b"last stderr line\n")
        err.flush()
        out.write(b"done\n")
    elif mode == "write-first":  # S5: writes 1 MiB before reading stdin
        out.write(b"x" * (1 << 20) + b"\n")
        out.flush()
        data = sys.stdin.buffer.read()
        out.write(f"{len(data)}\n".encode())
    elif mode == "close-stdin":  # S6: closes stdin unread and exits
        os.close(0)
        out.write(b"bye\n")
    elif mode == "never-read":  # S7: never reads stdin, never exits
        while True:
            time.sleep(0.05)
    elif mode == "exit":  # S8
        out.write(b"exiting\n")
        out.flush()
        sys.exit(int(args[0]))
    elif mode == "self-signal":  # S8
        out.flush()
        os.kill(os.getpid(), int(args[0]))
        time.sleep(5)
    elif mode == "ticker":  # S11: writes a line every 50 ms until its stdout breaks
        note_pid(os.getpid())
        while True:
            out.write(b"tick\n")
            out.flush()
            time.sleep(0.05)
    elif mode == "raw":  # S16/S17: write the bytes of a file exactly, then stderr
        with open(args[0], "rb") as f:
            out.write(f.read())
        sys.stderr.write("on stderr\n")
    elif mode == "cat-staged":  # S14: print the staged file the argv names
        with open(args[0], "rb") as f:
            out.write(f.read())
        st = os.stat(args[0])
        out.write(f"\nmode={oct(st.st_mode & 0o777)}\n".encode())
    elif mode == "stream-wait":  # live turns: one claude line, then wait for FLAG to exist
        out.write(CLAUDE_MESSAGE + b"\n")
        out.flush()
        deadline = time.monotonic() + float(args[1] if len(args) > 1 else 20)
        while not os.path.exists(args[0]) and time.monotonic() < deadline:
            time.sleep(0.02)
        answer = "done" if os.path.exists(args[0]) else "no flag"  # was the wait ended by it?
        out.write(json.dumps({**CLAUDE_RESULT, "result": answer}).encode() + b"\n")
    elif mode == "stream-wait-undecided":  # auto: 8 lines no dialect claims, then wait for FLAG
        line = {"type": "assistant", "message": {"id": "m", "role": "assistant", "content": []}}
        for i in range(8):
            line["message"]["content"] = [{"type": "text", "text": f"part {i}"}]
            line["message"]["id"] = f"m{i}"
            out.write(json.dumps(line).encode() + b"\n")
        out.flush()
        deadline = time.monotonic() + float(args[1] if len(args) > 1 else 20)
        while not os.path.exists(args[0]) and time.monotonic() < deadline:
            time.sleep(0.02)
        answer = "done" if os.path.exists(args[0]) else "no flag"
        out.write(json.dumps({**CLAUDE_RESULT, "result": answer}).encode() + b"\n")
    elif mode == "stream-forever":  # cancel: one claude line, then a line every 50 ms
        out.write(CLAUDE_MESSAGE + b"\n")
        out.flush()
        if args and args[0]:
            open(args[0], "w").close()  # tells the test we are running
        while True:
            out.write(b'{"type":"system","subtype":"heartbeat"}\n')
            out.flush()
            time.sleep(0.05)
    elif mode == "daemon":  # containment: a setsid'd double-forked daemon that closes its fds
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for fd in range(0, 3):
                    os.close(fd)
                code = "import time; time.sleep(1000)"
                os.execv(sys.executable, [sys.executable, "-c", code, args[0]])
            os._exit(0)
        time.sleep(0.2)  # the daemon is on its own by now
        out.write(b"daemonized\n")
        if args[1:] == ["hang"]:
            out.flush()
            time.sleep(1000)
    elif mode == "peek-environ":  # hygiene: try to read the environment of our parent
        for pid in (os.getppid(), 1):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    out.write(f.read().replace(b"\0", b"\n") + b"\n")
            except OSError as exc:
                out.write(f"/proc/{pid}/environ: {exc.strerror}\n".encode())
        visible = sorted(int(d) for d in os.listdir("/proc") if d.isdigit())
        out.write(f"pids {visible}\n".encode())
    elif mode == "sigign":  # the signal dispositions we were started with (SigIgn mask)
        with open("/proc/self/status") as f:
            mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigIgn:"))
        out.write(json.dumps([s for s in range(1, 64) if mask >> (s - 1) & 1]).encode() + b"\n")
    elif mode == "secrets":  # hygiene: an environment value and tokens on stdout and stderr
        value = os.environ["CHECKFU_SECRET"]
        text = f"key {value} and sk-proj-{'A1b2' * 8} and Bearer {'x9Y' * 10}"
        out.write(json.dumps(claude_text(text)).encode() + b"\n")
        sys.stderr.write(f"error: auth failed for {value} (ghp_{'Zz9' * 12})\n")
        sys.exit(1)
    elif mode == "escape-proc":  # containment: unmount /proc, then look at the runner
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        report = {"umount": libc.umount2(b"/proc", 2) == 0}  # MNT_DETACH
        report["pids"] = len([d for d in os.listdir("/proc") if d.isdigit()])
        runner = os.environ["RUNNER_PID"]
        try:
            with open(f"/proc/{runner}/environ", "rb") as f:
                report["environ"] = f.read().decode("utf-8", "replace")
        except OSError as exc:
            report["environ"] = exc.strerror
        try:
            with open(f"/proc/{runner}/oom_score_adj", "w") as f:
                f.write("1000")
            report["oom"] = "written"
        except OSError as exc:
            report["oom"] = exc.strerror
        out.write(json.dumps(report).encode() + b"\n")
    elif mode == "wait-flag":  # hold the turn until FLAG exists (STARTED is made at once)
        open(args[1], "w").close()
        deadline = time.monotonic() + 20
        while not os.path.exists(args[0]) and time.monotonic() < deadline:
            time.sleep(0.02)
        out.write(b"released\n")
    elif mode == "find-prompts":  # hygiene: every staged prompt this harness can read
        found = []
        roots = {
            os.environ.get("TMPDIR") or "/tmp",
            "/tmp",
            "/var/tmp",
            os.path.dirname(os.getcwd()),
        }
        for root in roots:
            for where, _, files in os.walk(root):
                for name in files:
                    if name == "prompt.txt":
                        try:
                            with open(os.path.join(where, name)) as f:
                                found.append(f.read())
                        except OSError:
                            pass
        out.write(json.dumps(found).encode() + b"\n")
    elif mode == "lock-dir":  # hygiene: leave a 0o000 directory (with a file) in the cwd
        os.makedirs("locked/inner")
        open("locked/inner/file", "w").close()
        os.chmod("locked/inner", 0)
        os.chmod("locked", 0)
        out.write(b"locked\n")
    elif mode == "secret-tool":  # hygiene: env secrets as a JSON key and as a number
        key, number = os.environ["CHECKFU_KEY"], int(os.environ["CHECKFU_NUMBER"])
        use = {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {key: number}}
        line = {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [use]}}
        out.write(CLAUDE_INIT + b"\n" + json.dumps(line).encode() + b"\n")
        out.write(json.dumps(CLAUDE_RESULT).encode() + b"\n")
    elif mode == "flood-messages":  # observations: N assistant messages (of SIZE), then a result
        out.write(CLAUDE_INIT + b"\n")
        pad = "x" * int(args[1]) if len(args) > 1 else ""
        for i in range(int(args[0])):
            line = claude_text(f"m{i}{pad}")
            line["message"]["id"] = f"msg_{i}"
            out.write(json.dumps(line).encode() + b"\n")
        out.write(json.dumps(CLAUDE_RESULT).encode() + b"\n")
    elif mode == "stderr-cut":  # hygiene: the stderr tail's cut falls inside a secret
        value, shown = os.environ["CHECKFU_SECRET"], int(args[0])
        size = int(args[1])  # the runner's stderr_tail_bytes
        sys.stderr.write(value + "x" * (size - shown - 1) + "\n")
        sys.stderr.flush()
        sys.exit(1)
    else:
        sys.exit(f"unknown mode {mode}")


def claude_text(text: str) -> dict:
    return {
        "type": "assistant",
        "message": {
            "id": "msg_live",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
        },
    }


# a live claude stream opens with its init line, which is what lets `auto` decide at once
CLAUDE_INIT = json.dumps(
    {"type": "system", "subtype": "init", "session_id": "live", "tools": ["Bash"]}
).encode()
CLAUDE_MESSAGE = CLAUDE_INIT + b"\n" + json.dumps(claude_text("working on it")).encode()
CLAUDE_RESULT = {"type": "result", "subtype": "success", "is_error": False, "result": "done"}


if __name__ == "__main__":
    main()
