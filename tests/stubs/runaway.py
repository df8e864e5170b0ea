"""A runaway harness for the TurnBudget tests: opencode-format JSON lines, one step at a time.

``runaway.py MODE``: ``same`` repeats one tool call with identical arguments; ``vary`` changes
the arguments every step; ``idle`` prints one step and then only sleeps; ``priced`` prints
claude messages with tokens and a model but no cost (10,000 in, 1,000 out each). Each other step
reports 100 input and 10 output tokens and a cost of 0.01 USD. At most 3,000 steps (about
30 s): a budget stops it long before.
"""

import json
import sys
import time

MODE = sys.argv[1]
SID = "ses_runaway"


def put(kind: str, part: dict) -> None:
    line = {"type": kind, "timestamp": int(time.time() * 1000), "sessionID": SID, "part": part}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def step(i: int) -> None:
    msg = f"msg_{i}"
    put("step_start", {"id": f"prt_{i}a", "sessionID": SID, "messageID": msg, "type": "step-start"})
    command = "ls" if MODE == "same" else f"ls {i}"
    state = {
        "status": "completed",
        "input": {"command": command},
        "output": "x",
        "title": command,
        "metadata": {},
        "time": {"start": 1, "end": 2},
    }
    put(
        "tool_use",
        {
            "id": f"prt_{i}b",
            "sessionID": SID,
            "messageID": msg,
            "type": "tool",
            "callID": f"call_{i}",
            "tool": "bash",
            "state": state,
        },
    )
    tokens = {"input": 100, "output": 10, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    put(
        "step_finish",
        {
            "id": f"prt_{i}c",
            "sessionID": SID,
            "messageID": msg,
            "type": "step-finish",
            "reason": "tool-calls",
            "cost": 0.01,
            "tokens": tokens,
        },
    )


def priced(i: int) -> None:
    """A claude stream that reports tokens and a model but no cost (until its result)."""
    if i == 0:
        init = {"type": "system", "subtype": "init", "session_id": SID, "tools": []}
        sys.stdout.write(json.dumps(init) + "\n")
    message = {
        "id": f"msg_{i}",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": f"step {i}"}],
        "usage": {"input_tokens": 10_000, "output_tokens": 1_000},
    }
    sys.stdout.write(json.dumps({"type": "assistant", "message": message}) + "\n")
    sys.stdout.flush()


for i in range(3000):
    if MODE == "priced":
        priced(i)
        time.sleep(0.01)
        continue
    if MODE == "idle" and i > 0:
        time.sleep(0.01)
        continue
    step(i)
    time.sleep(0.01)
