"""Deterministic generator of realistic claude / cursor / codex JSONL streams for benchmarks.

Records are built from templates modelled on the real samples in ``shared/corpus/real/``:

* claude: ``system/init`` (tools, slash commands...), ``assistant`` text / thinking / tool_use
  lines with per-message usage, ``user`` tool_result lines, a final ``result``;
* cursor: ``system/init``, ``user``, streamed ``assistant`` text chunks, ``tool_call``
  ``started`` + ``completed`` (read / shell / edit / grep), ``result`` with ``request_id``;
* codex: ``thread.started``, ``turn.started``, ``item.*`` (reasoning, agent_message,
  command_execution, file_change, todo_list, mcp_tool_call), ``turn.completed`` with usage.

Line sizes: median around 600 B, and about 2% of lines are big tool results (file contents,
command output) of 10-300 KB. Text mixes ASCII, accents, CJK and emoji; about one line in eight
is serialized with ``ensure_ascii=True`` so that ``\\u00e9`` / ``\\ud83d\\ude00`` escapes occur,
and code / output text carries ``\\n``, ``\\"``, ``\\\\`` and ``\\t`` escapes everywhere.

Everything comes from one seeded ``random.Random``: same arguments, same bytes.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["DIALECTS", "line_sizes", "make_corpus", "make_mixed"]

DIALECTS = ("claude", "cursor", "codex", "north", "canary", "solweb")

BIG_FRACTION = 0.02  # share of lines that carry a large tool result
BIG_MIN, BIG_MAX = 10_000, 240_000  # characters; escapes make the lines ~25% longer
ASCII_ESCAPED_FRACTION = 0.125  # lines dumped with ensure_ascii=True

_WORDS_TEXT = (
    "the file function test module return value error config build cargo python rust parse "
    "line stream event output input session token usage cache model request response check "
    "update create delete read write path directory branch commit merge review patch diff "
    "normalize budget depth nodes framing dialect schema vector fixture benchmark release "
    "let me first look at this and then run the tests again to confirm that it works"
)
_WORDS = tuple(_WORDS_TEXT.split())
_INTL = (
    "café", "naïve", "résumé", "Ünïcödé", "señor", "façade", "Zürich", "déjà", "vu", "crème",
    "日本語", "テスト", "中文字符", "한국어", "überprüfen", "Ελληνικά", "русский", "مرحبا",
    "😀", "🚀", "✅", "❌", "🤖", "⚠️", "→", "…", "—", "«guillemets»", "½", "€100",
)  # fmt: skip
_CODE = (
    "def normalize(data: bytes, dialect: str = \"auto\") -> list[dict]:",
    "    \"\"\"Normalize a whole stream to events/v1 events.\"\"\"",
    "    for line in data.split(b\"\\n\"):",
    "        if not line.strip():",
    "            continue",
    "    return [json.loads(x) for x in lines]  # noqa: E501",
    "fn parse(&mut self) -> Result<Value, JsonError> {",
    "    let s = \"C:\\\\Users\\\\dev\\\\project\";",
    "    match self.peek() { Some(b'\"') => self.string(), _ => self.number() }",
    "}",
    "    print(f\"résultat: {value!r} → ok ✅\")",
    "// 日本語のコメント: パーサーの境界チェック",
    "\tindent\twith\ttabs\tand a trailing backslash \\",
    "const MSG = 'naïve café — ünïcödé 😀';",
    "    raise ValueError(\"unexpected \\\"quote\\\" at column 17\")",
    "import os, sys, json  # standard library only",
    "",
    "class Framer:",
    "    __slots__ = (\"_max\", \"_pending\", \"_total\")",
    "    assert len(buf) <= self._max + 1, \"buffer overflow\"",
)  # fmt: skip
_OUTPUT = (
    "test tests/test_vectors.py::test_vector[claude-001] PASSED",
    "test tests/test_vectors.py::test_vector[codex-017] PASSED",
    "test tests/test_parse.py::test_surrogates FAILED",
    "-rw-r--r--  1 dev  staff   4096 Oct 13 02:11 README.md",
    "drwxr-xr-x  5 dev  staff    160 Oct 13 02:11 src",
    "   Compiling checkfu-fast v0.1.0 (/work/main)",
    "    Finished `release` profile [optimized] target(s) in 12.34s",
    "warning: unused variable: `x` --> src/lib.rs:42:9",
    "error[E0308]: mismatched types: expected `&str`, found `String`",
    "src/parse.rs:118:        let c = s[i]; // «hot loop» ✓",
    "Résumé: 3 passed, 1 failed, 0 skipped in 0.42s ⏱",
    "M  rust/framing.rs\nA  benches/corpus.py",
    "{\"status\": \"ok\", \"path\": \"C:\\\\tmp\\\\out.json\"}",
    "2025-10-13T02:11:18.070Z INFO server: listening on 0.0.0.0:8080 🚀",
    "Traceback (most recent call last):\n  File \"<stdin>\", line 1, in <module>",
    "中文输出: 构建成功 (build succeeded)",
)  # fmt: skip
_TOOLS = (
    "Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "Write", "NotebookEdit",
    "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell", "SlashCommand",
)  # fmt: skip
_PATHS = (
    "README.md", "rust/parse.rs", "rust/framing.rs", "python/checkfu_fast/__init__.py",
    "tests/test_vectors.py", "docs/events.md", "src/ünïcode/データ.py", "Cargo.toml",
)  # fmt: skip


class _Gen:
    """Shared text helpers over one seeded RNG."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self._line_no = 0

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def hexid(self, n: int) -> str:
        return f"{self.r.getrandbits(4 * n):0{n}x}"

    def toolu(self) -> str:
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        return "toolu_01" + "".join(self.r.choices(alphabet, k=22))

    def prose(self, n_words: int) -> str:
        r = self.r
        words = r.choices(_WORDS, k=n_words)
        for _ in range(max(1, n_words // 12)):
            words[r.randrange(n_words)] = r.choice(_INTL)
        text = " ".join(words)
        if n_words > 30 and r.random() < 0.5:  # paragraphs / markdown
            cut = len(text) // 2
            text = text[:cut] + '\n\n- **"' + r.choice(_WORDS) + '"** `x\\y`\n' + text[cut:]
        return text[0].upper() + text[1:] + "."

    def short(self) -> str:
        return self.prose(self.r.randint(6, 40))

    def block(self, target: int, pool: tuple[str, ...]) -> str:
        """About ``target`` characters of code / output lines (escape-heavy)."""
        r = self.r
        n = max(1, target // 36)
        parts = r.choices(pool, k=n)
        out = []
        for p in parts:
            self._line_no += 1
            out.append(f"{self._line_no:>6}\t{p}" if pool is _CODE else p)
        return "\n".join(out)

    def tool_text(self, big: bool) -> str:
        r = self.r
        pool = _CODE if r.random() < 0.5 else _OUTPUT
        if big:
            # log-uniform between BIG_MIN and BIG_MAX
            size = int(BIG_MIN * (BIG_MAX / BIG_MIN) ** r.random())
        else:
            size = int(r.lognormvariate(6.2, 0.9))  # median ~500 chars
        return self.block(size, pool)

    def dumps(self, obj: Any) -> str:
        ascii_only = self.r.random() < ASCII_ESCAPED_FRACTION
        return json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":"))


# ---------------------------------------------------------------- claude


def _claude_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    sid = g.uuid()
    model = r.choice(("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805"))
    yield {
        "type": "system", "subtype": "init", "cwd": f"/tmp/gh-issue-solver-{r.getrandbits(40)}",
        "session_id": sid, "tools": list(_TOOLS), "mcp_servers": [], "model": model,
        "permissionMode": "bypassPermissions",
        "slash_commands": ["compact", "context", "cost", "init", "pr-comments", "review"],
        "apiKeySource": "none", "output_style": "default",
        "agents": ["general-purpose", "statusline-setup"], "uuid": g.uuid(),
    }  # fmt: skip
    turns = r.randint(8, 60)
    cost = 0.0
    for _ in range(turns):
        mid = "msg_01" + g.hexid(22)
        use = {
            "input_tokens": r.randint(1, 50),
            "cache_creation_input_tokens": r.randint(0, 20000),
            "cache_read_input_tokens": r.randint(0, 200000),
            "cache_creation": {"ephemeral_5m_input_tokens": r.randint(0, 20000),
                               "ephemeral_1h_input_tokens": 0},
            "output_tokens": r.randint(1, 2000), "service_tier": "standard",
        }  # fmt: skip

        def assistant(
            content: list[dict[str, Any]], mid: str = mid, use: dict[str, Any] = use
        ) -> dict[str, Any]:
            return {
                "type": "assistant",
                "message": {"model": model, "id": mid, "type": "message", "role": "assistant",
                            "content": content, "stop_reason": None, "stop_sequence": None,
                            "usage": use},
                "parent_tool_use_id": None, "session_id": sid, "uuid": g.uuid(),
            }  # fmt: skip

        if r.random() < 0.2:
            yield assistant(
                [
                    {
                        "type": "thinking",
                        "thinking": g.prose(r.randint(20, 120)),
                        "signature": g.hexid(64),
                    }
                ]
            )
        if r.random() < 0.6:
            yield assistant([{"type": "text", "text": g.short()}])
        for _ in range(r.choice((1, 1, 1, 2, 3))):
            tid = g.toolu()
            name = r.choice(("Bash", "Read", "Edit", "Grep", "Glob", "TodoWrite"))
            if name == "Bash":
                inp: dict[str, Any] = {
                    "command": r.choice(_OUTPUT)[:60].replace("\n", " "),
                    "description": g.prose(6),
                }
            elif name == "Edit":
                inp = {
                    "file_path": "/work/" + r.choice(_PATHS),
                    "old_string": g.block(r.randint(40, 400), _CODE),
                    "new_string": g.block(r.randint(40, 400), _CODE),
                }
            else:
                inp = {"file_path": "/work/" + r.choice(_PATHS), "pattern": r.choice(_WORDS)}
            yield assistant([{"type": "tool_use", "id": tid, "name": name, "input": inp}])
            big = r.random() < BIG_FRACTION * 2.5  # tool results are ~40% of lines
            text = g.tool_text(big)
            content: Any = text if r.random() < 0.7 else [{"type": "text", "text": text}]
            block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": content}
            if r.random() < 0.08:
                block["is_error"] = True
            elif r.random() < 0.5:
                block["is_error"] = False
            yield {
                "type": "user",
                "message": {"role": "user", "content": [block]},
                "parent_tool_use_id": None,
                "session_id": sid,
                "uuid": g.uuid(),
            }
        cost += r.random() * 0.05
    ok = r.random() < 0.9
    yield {
        "type": "result", "subtype": "success" if ok else "error_max_turns", "is_error": not ok,
        "duration_ms": r.randint(1000, 900000), "duration_api_ms": r.randint(1000, 900000),
        "num_turns": turns, "result": g.prose(r.randint(20, 150)), "session_id": sid,
        "total_cost_usd": round(cost, 7),
        "usage": {"input_tokens": r.randint(10, 900), "cache_creation_input_tokens":
                  r.randint(0, 90000), "cache_read_input_tokens": r.randint(0, 3000000),
                  "output_tokens": r.randint(10, 90000),
                  "server_tool_use": {"web_search_requests": 0}, "service_tier": "standard"},
        "modelUsage": {model: {"inputTokens": r.randint(10, 900), "outputTokens":
                               r.randint(10, 90000), "costUSD": round(cost, 7)}},
        "permission_denials": [], "uuid": g.uuid(),
    }  # fmt: skip


# ---------------------------------------------------------------- cursor


def _cursor_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    sid = g.uuid()
    yield {
        "type": "system",
        "subtype": "init",
        "apiKeySource": "login",
        "cwd": "/Users/user/project",
        "session_id": sid,
        "model": r.choice(("Claude 4 Sonnet", "GPT-5", "Auto")),
        "permissionMode": "default",
    }
    yield {
        "type": "user",
        "message": {
            "role": "user",
            "content": [{"type": "text", "text": g.prose(r.randint(10, 80))}],
        },
        "session_id": sid,
    }
    for _ in range(r.randint(8, 60)):
        for _ in range(r.randint(1, 4)):  # streamed assistant chunks
            yield {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": g.prose(r.randint(20, 140))}],
                },
                "session_id": sid,
                "model_call_id": g.uuid(),
            }
        cid = "toolu_vrtx_" + g.toolu()[8:]
        kind = r.choice(("read", "read", "shell", "edit", "grep"))
        big = r.random() < BIG_FRACTION * 4.5  # completed tool calls are ~22% of lines
        text = g.tool_text(big)
        path = r.choice(_PATHS)
        if kind == "read":
            key, args = "readToolCall", {"path": path}
            res = {
                "success": {
                    "content": text,
                    "isEmpty": False,
                    "exceededLimit": False,
                    "totalLines": text.count("\n") + 1,
                    "totalChars": len(text),
                }
            }
        elif kind == "shell":
            key, args = "shellToolCall", {"command": "cargo test --release", "workingDirectory": ""}
            code = 0 if r.random() < 0.85 else 1
            res = (
                {
                    "success": {
                        "command": "cargo test",
                        "exitCode": 0,
                        "stdout": text,
                        "stderr": "",
                        "executionTime": r.randint(5, 90000),
                    }
                }
                if code == 0
                else {
                    "failure": {
                        "command": "cargo test",
                        "exitCode": 1,
                        "stdout": "",
                        "stderr": text,
                        "executionTime": r.randint(5, 90000),
                    }
                }
            )
        elif kind == "edit":
            key, args = "editToolCall", {"path": path, "streamContent": g.block(200, _CODE)}
            res = {
                "success": {
                    "path": "/Users/user/project/" + path,
                    "linesAdded": 3,
                    "linesRemoved": 1,
                    "diffString": text,
                }
            }
        else:
            key, args = "grepToolCall", {"pattern": r.choice(_WORDS), "path": "."}
            res = {
                "success": {
                    "pattern": "x",
                    "path": ".",
                    "outputMode": "content",
                    "workspaceResults": {
                        "/Users/user/project": {
                            "content": {
                                "matches": [
                                    {
                                        "file": path,
                                        "matches": [{"lineNumber": 12, "content": "let x = 1;"}],
                                    }
                                ]
                            }
                        }
                    },
                    "output": text,
                }
            }
        yield {
            "type": "tool_call",
            "subtype": "started",
            "call_id": cid,
            "tool_call": {key: {"args": args}},
            "session_id": sid,
        }
        yield {
            "type": "tool_call",
            "subtype": "completed",
            "call_id": cid,
            "tool_call": {key: {"args": args, "result": res}},
            "session_id": sid,
        }
    yield {
        "type": "result",
        "subtype": "success",
        "duration_ms": r.randint(1000, 90000),
        "duration_api_ms": r.randint(1000, 90000),
        "is_error": False,
        "result": g.prose(r.randint(20, 200)),
        "session_id": sid,
        "request_id": g.uuid(),
        "usage": {
            "inputTokens": r.randint(1000, 90000),
            "outputTokens": r.randint(10, 9000),
            "cacheReadTokens": r.randint(0, 90000),
            "cacheWriteTokens": 0,
        },
    }


# ---------------------------------------------------------------- codex


def _codex_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    yield {"type": "thread.started", "thread_id": g.uuid()}
    for _ in range(r.randint(1, 4)):
        yield {"type": "turn.started"}
        for n in range(r.randint(6, 40)):
            iid = f"item_{n}"
            k = r.random()
            if k < 0.2:
                yield {
                    "type": "item.completed",
                    "item": {
                        "id": iid,
                        "type": "reasoning",
                        "text": "**" + g.prose(5) + "**\n\n" + g.prose(r.randint(40, 160)),
                    },
                }
            elif k < 0.4:
                yield {
                    "type": "item.completed",
                    "item": {
                        "id": iid,
                        "type": "agent_message",
                        "text": g.prose(r.randint(40, 200)),
                    },
                }
            elif k < 0.85:
                cmd = "/bin/bash -lc " + json.dumps(
                    r.choice(
                        (
                            "rg -n 'fn parse' rust",
                            "cat README.md",
                            "cargo test -q",
                            "python3 -m pytest -q",
                            "ls -la",
                            "sed -n 1,200p rust/parse.rs",
                        )
                    )
                )
                yield {
                    "type": "item.started",
                    "item": {
                        "id": iid,
                        "type": "command_execution",
                        "command": cmd,
                        "aggregated_output": "",
                        "exit_code": None,
                        "status": "in_progress",
                    },
                }
                code = 0 if r.random() < 0.85 else r.choice((1, 2, 127))
                big = r.random() < BIG_FRACTION * 3.5  # ~28% of lines complete a command
                yield {
                    "type": "item.completed",
                    "item": {
                        "id": iid,
                        "type": "command_execution",
                        "command": cmd,
                        "aggregated_output": g.tool_text(big),
                        "exit_code": code,
                        "status": "completed" if code == 0 else "failed",
                    },
                }
            elif k < 0.92:
                yield {
                    "type": "item.completed",
                    "item": {
                        "id": iid,
                        "type": "file_change",
                        "changes": [
                            {
                                "path": "/tmp/work/" + r.choice(_PATHS),
                                "kind": r.choice(("add", "update", "delete")),
                            }
                            for _ in range(r.randint(1, 4))
                        ],
                        "status": "completed",
                    },
                }
            elif k < 0.96:
                items = [
                    {"text": g.prose(r.randint(3, 9)), "completed": r.random() < 0.5}
                    for _ in range(r.randint(3, 8))
                ]
                yield {
                    "type": r.choice(("item.started", "item.updated")),
                    "item": {"id": iid, "type": "todo_list", "items": items},
                }
            else:
                args = {"query": g.prose(6), "limit": r.randint(1, 50)}
                yield {
                    "type": "item.started",
                    "item": {
                        "id": iid,
                        "type": "mcp_tool_call",
                        "server": "docs",
                        "tool": "search",
                        "arguments": args,
                        "result": None,
                        "error": None,
                        "status": "in_progress",
                    },
                }
                yield {
                    "type": "item.completed",
                    "item": {
                        "id": iid,
                        "type": "mcp_tool_call",
                        "server": "docs",
                        "tool": "search",
                        "arguments": args,
                        "result": {
                            "content": [{"type": "text", "text": g.tool_text(False)}],
                            "structured_content": None,
                        },
                        "error": None,
                        "status": "completed",
                    },
                }
        yield {
            "type": "turn.completed",
            "usage": {
                "input_tokens": r.randint(1000, 300000),
                "cached_input_tokens": r.randint(0, 200000),
                "output_tokens": r.randint(10, 20000),
            },
        }


# ------------------------------------------- mapped dialects (north, canary, solweb)
# Line sizes follow the same distribution as above: each text delta carries a paragraph-sized
# piece of prose (relays batch tokens), and BIG_FRACTION of the tool-call lines carry a large
# argument payload.


def _north_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    cid, model = "chatcmpl-" + g.hexid(24), r.choice(("gpt-4.1", "gpt-4o-2024-08-06"))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": 1760000000,
            "model": model,
            "system_fingerprint": "fp_" + g.hexid(10),
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for _ in range(r.randint(4, 14)):
        yield chunk({"content": g.prose(r.randint(60, 160))})
    call = "call_" + g.hexid(24)
    yield chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": call,
                    "type": "function",
                    "function": {"name": r.choice(_TOOLS), "arguments": ""},
                }
            ]
        }
    )
    for _ in range(r.randint(1, 4)):
        args = json.dumps({"path": r.choice(_PATHS), "content": g.tool_text(r.random() < 0.05)})
        yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]})
    yield chunk({}, "tool_calls")
    yield {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 1760000000,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": r.randint(500, 90000),
            "completion_tokens": r.randint(10, 4000),
            "prompt_tokens_details": {"cached_tokens": r.randint(0, 400)},
        },
    }


def _canary_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    mid = "msg_01" + g.hexid(22)
    yield {
        "type": "message_start",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": r.randint(5, 900),
                "cache_read_input_tokens": r.randint(0, 40000),
                "cache_creation_input_tokens": r.randint(0, 4000),
                "output_tokens": 1,
            },
        },
    }
    yield {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    for _ in range(r.randint(4, 14)):
        yield {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": g.prose(r.randint(60, 160))},
        }
    yield {"type": "content_block_stop", "index": 0}
    yield {
        "type": "content_block_start",
        "index": 1,
        "content_block": {
            "type": "tool_use",
            "id": g.toolu(),
            "name": r.choice(_TOOLS),
            "input": {},
        },
    }
    for _ in range(r.randint(1, 4)):
        part = json.dumps({"content": g.tool_text(r.random() < 0.05)})
        yield {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": part},
        }
    yield {"type": "content_block_stop", "index": 1}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": {"output_tokens": r.randint(10, 4000)},
    }
    yield {"type": "message_stop"}


def _solweb_session(g: _Gen) -> Iterator[dict[str, Any]]:
    r = g.r
    rid, seq = "resp_" + g.hexid(48), 0

    def ev(**fields: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return {**fields, "sequence_number": seq}

    resp = {
        "id": rid,
        "object": "response",
        "created_at": 1760000000,
        "status": "in_progress",
        "model": "gpt-5",
        "output": [],
        "usage": None,
    }
    yield ev(type="response.created", response=resp)
    item = "msg_" + g.hexid(48)
    texts = [g.prose(r.randint(60, 160)) for _ in range(r.randint(4, 14))]
    for t in texts:
        yield ev(
            type="response.output_text.delta",
            item_id=item,
            output_index=0,
            content_index=0,
            delta=t,
            logprobs=[],
            obfuscation=g.hexid(8),
        )
    yield ev(
        type="response.output_text.done",
        item_id=item,
        output_index=0,
        content_index=0,
        text=" ".join(texts),
        logprobs=[],
    )
    args = json.dumps({"path": r.choice(_PATHS), "content": g.tool_text(r.random() < 0.05)})
    yield ev(
        type="response.output_item.done",
        output_index=1,
        item={
            "id": "fc_" + g.hexid(48),
            "type": "function_call",
            "status": "completed",
            "arguments": args,
            "call_id": "call_" + g.hexid(24),
            "name": r.choice(_TOOLS),
        },
    )
    yield ev(
        type="response.completed",
        response={
            **resp,
            "status": "completed",
            "usage": {
                "input_tokens": r.randint(500, 90000),
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": r.randint(10, 4000),
                "output_tokens_details": {"reasoning_tokens": r.randint(0, 900)},
            },
        },
    )


_SESSIONS: dict[str, Callable[[_Gen], Iterator[dict[str, Any]]]] = {
    "claude": _claude_session,
    "cursor": _cursor_session,
    "codex": _codex_session,
    "north": _north_session,
    "canary": _canary_session,
    "solweb": _solweb_session,
}


def make_corpus(dialect: str, target_bytes: int, seed: int = 0) -> bytes:
    """A stream of whole sessions of ``dialect``, stopping at the first line past target_bytes.

    Every line is LF-terminated; the result is at least ``target_bytes`` long (by at most one
    line more).
    """
    try:
        session = _SESSIONS[dialect]
    except KeyError:
        raise ValueError(f"no corpus generator for dialect {dialect!r}") from None
    g = _Gen(seed * 1_000_003 + DIALECTS.index(dialect))
    parts: list[bytes] = []
    total = 0
    while total < target_bytes:
        for rec in session(g):
            line = (g.dumps(rec) + "\n").encode("utf-8")
            parts.append(line)
            total += len(line)
            if total >= target_bytes:
                break
    return b"".join(parts)


def make_mixed(target_bytes: int, seed: int = 0) -> bytes:
    """claude + cursor + codex streams of a third of ``target_bytes`` each, concatenated.

    Note: with ``dialect="auto"`` the normalizer locks onto the first decisive line (claude), so
    the cursor and codex parts are mapped with the claude mapping (mostly ``status/unknown``);
    the framing, parsing and budget work is the same.
    """
    third = target_bytes // 3
    return b"".join(make_corpus(d, third, seed) for d in ("claude", "cursor", "codex"))


def line_sizes(data: bytes) -> list[int]:
    return [len(x) for x in data.split(b"\n") if x]


if __name__ == "__main__":  # quick stats: python3 benches/corpus.py [MB]
    import statistics
    import sys
    import time

    UESC = b"\\u"
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 20
    for name in (*DIALECTS, "mixed"):
        t0 = time.perf_counter()
        data = make_mixed(int(mb * 1e6)) if name == "mixed" else make_corpus(name, int(mb * 1e6))
        dt = time.perf_counter() - t0
        sizes = line_sizes(data)
        big = sum(s >= BIG_MIN for s in sizes)
        print(
            f"{name:7} {len(data) / 1e6:6.1f} MB in {dt:.2f}s  lines={len(sizes)} "
            f"median={statistics.median(sizes):.0f}B big={big / len(sizes):.1%} "
            f"max={max(sizes)}B nonascii={sum(b >= 0x80 for b in data[:1_000_000]) / 1e4:.2f}% "
            f"u-escapes={data.count(UESC)}"
        )
