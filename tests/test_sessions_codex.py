"""Codex rollout files (issue 14): `auto` finds them, native == reference on every rollout
golden, and session files read by path through gzip and zstd, bounded in memory."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import UsageFold, reference
from checkfu_fast.inputs import open_input
from conftest import ROOT

zstandard = pytest.importorskip("zstandard")

GOLDEN = ROOT / "vectors" / "events" / "codex"
ROLLOUTS = sorted(GOLDEN.glob("rollout-*.input.jsonl"))
EXAMPLE = ROOT / "docs" / "examples-sessions" / "codex-rollout.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args], capture_output=True, env=ENV, check=False
    )


@pytest.mark.parametrize("path", ROLLOUTS, ids=lambda p: p.name)
def test_auto_reads_rollouts_as_codex(path: Path) -> None:
    data = path.read_bytes()
    native = checkfu_fast.normalize(data)
    assert native == reference.normalize(data)
    assert {e["dialect"] for e in native} == {"codex"}
    assert not any(e["subtype"] == "dialect_fallback" for e in native)
    # named or sniffed: the same events
    assert native == checkfu_fast.normalize(data, "codex")
    assert checkfu_fast.normalize_jsonl(data) == reference.normalize_jsonl(data)


def test_every_envelope_line_has_its_timestamp() -> None:
    events = checkfu_fast.normalize(EXAMPLE.read_bytes())
    for e in events:
        assert e["timestamp"] == json.loads(e["raw"])["timestamp"]
    keys = list(events[0])
    assert keys.index("timestamp") == keys.index("sessionId") + 1


def test_response_items_are_the_content_and_duplicates_are_progress() -> None:
    events = checkfu_fast.normalize(EXAMPLE.read_bytes())
    texts = [e for e in events if e["kind"] == "message" and e["subtype"] == "text"]
    # the typed prompts once each (not again from event_msg/user_message), the context as system
    assert [(e["role"], e["text"][:20]) for e in texts] == [
        ("system", "<permissions instruc"),
        ("system", "<environment_context"),
        ("user", "Add a --verbose flag"),
        ("assistant", "Added `-v/--verbose`"),
        ("user", "now refactor the log"),
    ]
    calls = [e["tool"].get("id") for e in events if e["kind"] == "tool_call"]
    results = [e["tool"].get("id") for e in events if e["subtype"] == "tool_result"]
    # shell, apply_patch, local_shell_call, web_search (no id): each call answered, in order
    assert calls == results and len(calls) == 4
    assert [e["subtype"] for e in events].count("compaction") == 1


def _zst(data: bytes, frames: int = 1) -> bytes:
    c = zstandard.ZstdCompressor()
    step = -(-len(data) // frames)
    return b"".join(c.compress(data[i : i + step]) for i in range(0, len(data), step))


@pytest.fixture
def packed(tmp_path: Path) -> dict[str, Path]:
    data = EXAMPLE.read_bytes() * 3
    out = {"plain": tmp_path / "r.jsonl"}
    out["plain"].write_bytes(data)
    out["gz"] = tmp_path / "r.jsonl.gz"
    out["gz"].write_bytes(gzip.compress(data[:5000]) + gzip.compress(data[5000:]))  # 2 members
    out["zst"] = tmp_path / "r.jsonl.zst"
    out["zst"].write_bytes(_zst(data, frames=3))
    out["noext"] = tmp_path / "compressed-without-suffix"  # detected by magic, not by name
    out["noext"].write_bytes(_zst(data))
    return out


def test_compressed_files_read_like_the_plain_file(packed: dict[str, Path]) -> None:
    expected = checkfu_fast.normalize_jsonl(packed["plain"].read_bytes())
    names = [str(packed[k]) for k in ("plain", "gz", "zst", "noext")]
    assert checkfu_fast.normalize_files(names) == [expected] * 4
    for name in names:
        with open_input(name) as f:
            assert f.read() == packed["plain"].read_bytes()
        assert cli("normalize", name).stdout == expected
        assert cli("normalize", "--reference", name).stdout == expected
    assert cli("normalize", "--jobs", "2", *names[1:]).returncode == 0


def test_report_and_audit_read_compressed_files(packed: dict[str, Path]) -> None:
    plain = cli("report", "--json", str(packed["plain"]))
    for k in ("gz", "zst"):
        assert cli("report", "--json", str(packed[k])).stdout == plain.stdout
    doc = json.loads(plain.stdout)
    # the same thread three times in one stream: the counter drops twice, so three counters
    assert doc["total"]["inputTokens"] == 3 * 44960
    a = cli("audit", "--json", str(packed["zst"]))
    b = cli("audit", "--json", str(packed["plain"]))
    assert a.returncode == b.returncode
    assert json.loads(a.stdout)["files"] == json.loads(b.stdout)["files"] == 1


def test_a_corrupt_zstd_file_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00garbage" * 8)
    with pytest.raises(OSError):
        checkfu_fast.normalize_files([str(bad)])
    assert cli("normalize", str(bad)).returncode != 0


def test_compressed_bytes_are_not_decompressed_by_normalize() -> None:
    """normalize(bytes) reads JSONL only (docs: decompress first, or pass the path)."""
    data = gzip.compress(EXAMPLE.read_bytes())
    native = checkfu_fast.normalize(data)
    assert native == reference.normalize(data)
    assert all(e["kind"] in ("error", "status") for e in native)


BOMB = """
import json, sys
import checkfu_fast
out = checkfu_fast.normalize_files([sys.argv[1]], max_line_bytes=1 << 20)[0]
events = [json.loads(x) for x in out.splitlines()]
errors = [(e["subtype"], e.get("lineBytes")) for e in events if e["kind"] == "error"]
assert errors == [("line_too_long", 256 << 20)], errors
# VmHWM: this process's own peak (ru_maxrss would include the parent's peak before exec)
hwm = next(x for x in open("/proc/self/status") if x.startswith("VmHWM:"))
print(int(hwm.split()[1]) // 1024, len(errors))
"""


@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_decompression_bomb_stays_bounded(tmp_path: Path, kind: str) -> None:
    """256 MiB of one line, compressed to a few hundred KiB: the budget sees the decompressed
    line (one error/line_too_long, after the auto fallback notice) and the process never holds
    it."""
    size = 256 << 20
    path = tmp_path / f"bomb.jsonl.{kind}"
    block = b"a" * (1 << 20)
    if kind == "gz":
        with gzip.open(path, "wb", compresslevel=1) as f:
            for _ in range(size >> 20):
                f.write(block)
    else:
        with path.open("wb") as raw, zstandard.ZstdCompressor().stream_writer(raw) as f:
            for _ in range(size >> 20):
                f.write(block)
    assert path.stat().st_size < size // 100
    r = subprocess.run([sys.executable, "-c", BOMB, str(path)], capture_output=True, env=ENV)
    assert r.returncode == 0, r.stderr
    rss_mib, errors = map(int, r.stdout.split())
    assert errors == 1
    assert rss_mib < 160  # the interpreter (~20 MiB) plus chunks and windows, not 256 MiB


def test_resumed_rollouts_count_once_in_any_order() -> None:
    inputs = ROOT / "vectors" / "usage" / "inputs"
    files = [inputs / "codex-rollout-resume-1.jsonl", inputs / "codex-rollout-resume-2.jsonl"]
    totals = []
    for order in (files, files[::-1]):
        fold = UsageFold()
        for p in order:
            fold.start_stream()
            for e in checkfu_fast.normalize(p.read_bytes()):
                fold.add(e)
            fold.end_stream()
        totals.append(fold.totals())
    assert totals[0] == totals[1]
    assert totals[0]["total"]["inputTokens"] == 4600
