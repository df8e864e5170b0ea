"""Files, outputs and bad input (issue 23, docs/errors.md): never lose a byte, never hang,
never die. Each test is one case of the issue, reproduced from outside (the CLI in a
subprocess, or the public API)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import checkfu_fast
from checkfu_fast import normalize_files, normalize_jsonl, usage_totals
from checkfu_fast.errors import DamagedInput, OutputIsInput
from checkfu_fast.inputs import open_input

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "vectors" / "samples" / "claude-api-error.jsonl"
SESSION = ROOT / "vectors" / "samples" / "claude-session.jsonl"


def run(
    *args: str, stdout: object = subprocess.PIPE, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "checkfu_fast", *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        cwd=ROOT,
        check=False,
        timeout=timeout,
    )


def zstd_bytes(data: bytes, **kw: object) -> bytes:
    zstandard = pytest.importorskip("zstandard")
    return bytes(zstandard.ZstdCompressor(**kw).compress(data))


# --- data loss ----------------------------------------------------------------------------


def test_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    a.write_bytes(SAMPLE.read_bytes())
    r = run("normalize", "-o", str(a), str(a))
    assert r.returncode == 2, r.stderr
    assert b"refusing" in r.stderr
    assert a.read_bytes() == SAMPLE.read_bytes()
    # stdout appended to an input: the same refusal
    with a.open("ab") as out:
        r = run("normalize", str(a), stdout=out)
    assert r.returncode == 2
    assert a.read_bytes() == SAMPLE.read_bytes()
    with pytest.raises(OutputIsInput):
        from checkfu_fast.outputs import refuse_aliases

        refuse_aliases([str(a)], [str(tmp_path / "." / "a.jsonl")])


def test_output_inside_a_walked_directory_is_not_read_back(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out.jsonl"
    r = run("normalize", str(tmp_path), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == normalize_jsonl(SAMPLE.read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "out.jsonl"]


@pytest.mark.parametrize("fmt", ["jsonl", "arrow", "parquet"])
def test_out_dir_never_follows_a_planted_symlink(tmp_path: Path, fmt: str) -> None:
    if fmt != "jsonl":
        pytest.importorskip("pyarrow")
    src = tmp_path / "a.jsonl"
    src.write_bytes(SAMPLE.read_bytes())
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n")
    (name,) = checkfu_fast.output_names([str(src)], fmt)
    (out_dir / name).symlink_to(victim)
    (written,) = normalize_files([src], out_dir, format=fmt, jobs=1)
    assert victim.read_bytes() == b"precious\n"
    assert not os.path.islink(written)
    assert os.path.getsize(written) > 0
    assert sorted(p.name for p in out_dir.iterdir()) == [name]


def test_a_truncated_zst_is_an_error_not_an_empty_file(tmp_path: Path) -> None:
    good = zstd_bytes(SAMPLE.read_bytes(), write_content_size=False)
    bad = tmp_path / "cut.jsonl.zst"
    bad.write_bytes(good[: len(good) // 2])
    for argv in (["normalize"], ["report"], ["audit"]):
        r = run(*argv, str(bad))
        assert r.returncode == 1, (argv, r.stderr)
        assert b"cut.jsonl.zst: damaged zstd data" in r.stderr, r.stderr
        assert b"Traceback" not in r.stderr
    with pytest.raises(DamagedInput), open_input(bad) as f:
        f.read()
    with pytest.raises(OSError, match="damaged zstd"):
        normalize_files([bad])


def odd_streams() -> dict[str, bytes]:
    """Compressed files both decompressors must agree on (the same bytes or both an error)."""
    body = SAMPLE.read_bytes()
    gz = gzip.compress(body, mtime=0)
    cases = {
        "gzip": gz,
        "gzip two members": gz + gzip.compress(b'{"x":1}\n', mtime=0),
        "gzip trailing zeros": gz + b"\0" * 9,
        "gzip zeros then junk": gz + b"\0\0junk",
        "gzip junk": gz + b"junk",
        "gzip truncated": gz[:-5],
        "gzip only a magic": gz[:2],
        "gzip bad crc": gz[:-8] + bytes([gz[-8] ^ 1]) + gz[-7:],
        "gzip bad size": gz[:-4] + bytes([gz[-4] ^ 1]) + gz[-3:],
        "gzip empty member": gzip.compress(b"", mtime=0),
    }
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return cases
    zs = zstd_bytes(body)
    checked = zstd_bytes(body, write_checksum=True)
    skippable = b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"hello"
    # a raw-block frame whose header states a content size: right, too large, too small
    raw = b'{"a":1}\n'

    def raw_frame(stated: int) -> bytes:
        return (
            b"\x28\xb5\x2f\xfd\x20"
            + bytes([stated])
            + ((len(raw) << 3) | 1).to_bytes(3, "little")
            + raw
        )

    cases |= {
        "zstd": zs,
        "zstd two frames": zs + zstd_bytes(b'{"x":1}\n'),
        "zstd skippable after": zs + skippable,
        "zstd skippable between": zs + skippable + zs,
        "zstd truncated": zs[:-7],
        "zstd truncated no size": zstd_bytes(body, write_content_size=False)[:-7],
        "zstd trailing zero": zs + b"\0",
        "zstd junk": zs + b"junkjunk",
        "zstd raw frame": raw_frame(len(raw)),
        "zstd false size large": raw_frame(len(raw) + 1),
        "zstd false size small": raw_frame(len(raw) - 1),
        "zstd cut skippable": zs + skippable[:-2],
        "zstd checksum": zstd_bytes(body, write_checksum=True),
        "zstd bad checksum": checked[:-1] + bytes([checked[-1] ^ 1]),
    }
    return cases


def python_read(path: Path) -> bytes | None:
    try:
        with open_input(path) as f:
            out = b""
            while chunk := f.read(1 << 16):
                out += chunk
            return out
    except DamagedInput:
        return None


def rust_read(path: Path) -> bytes | None:
    (r,) = checkfu_fast._files([str(path)], None, "auto", (1 << 26, 64, 10**6), 1, tag_source=False)
    return None if isinstance(r, tuple) else bytes(r)


@pytest.mark.parametrize("name", sorted(odd_streams()))
def test_both_decompressors_agree(tmp_path: Path, name: str) -> None:
    p = tmp_path / "x.jsonl.gz"
    p.write_bytes(odd_streams()[name])
    plain = python_read(p)
    expected = None if plain is None else normalize_jsonl(plain)
    assert rust_read(p) == expected, name
    ok = {"gzip", "gzip two members", "gzip trailing zeros", "gzip empty member", "zstd"}
    ok |= {"zstd two frames", "zstd skippable after", "zstd skippable between"}
    ok |= {"zstd raw frame", "zstd checksum"}
    assert (plain is not None) == (name in ok), name


def test_report_json_is_json_when_sums_overflow(tmp_path: Path) -> None:
    line = {
        "type": "result",
        "subtype": "success",
        "session_id": "s",
        "result": "ok",
        "total_cost_usd": 1e308,
        "usage": {"input_tokens": 1e308, "output_tokens": 1},
    }
    for i in range(3):
        (tmp_path / f"{i}.jsonl").write_text(json.dumps(line | {"session_id": f"s{i}"}) + "\n")
    r = run("report", "--json", str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    assert doc["total"]["inputTokens"] is None


def damaged_gzip(tmp_path: Path) -> Path:
    """A gzip whose first megabytes are good and whose end is cut off."""
    body = b"".join(
        json.dumps(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": f"{i}"}]}}
        ).encode()
        + b"\n"
        for i in range(200_000)
    )
    gz = gzip.compress(body, compresslevel=1, mtime=0)
    p = tmp_path / "big.jsonl.gz"
    p.write_bytes(gz[: len(gz) - 1000])
    return p


@pytest.mark.parametrize("fmt", ["jsonl", "arrow", "parquet"])
def test_a_failed_input_leaves_no_partial_output(tmp_path: Path, fmt: str) -> None:
    if fmt != "jsonl":
        pytest.importorskip("pyarrow")
    bad = damaged_gzip(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(OSError, match=r"big\.jsonl\.gz") as info:
        normalize_files([bad], out_dir, format=fmt, jobs=1)
    assert isinstance(info.value, OSError)
    assert list(out_dir.iterdir()) == []


# --- crashes and hangs ----------------------------------------------------------------------


@pytest.mark.parametrize("command", ["normalize", "report", "audit"])
@pytest.mark.parametrize("kind", ["gz", "zst"])
def test_a_damaged_file_is_a_per_file_error_and_the_rest_is_read(
    tmp_path: Path, command: str, kind: str
) -> None:
    body = SAMPLE.read_bytes()
    data = gzip.compress(body, mtime=0) if kind == "gz" else zstd_bytes(body)
    bad = tmp_path / f"a-bad.jsonl.{kind}"
    # gzip cut short (was EOFError), zstd with garbage inside (was ZstdError)
    cut = data[: len(data) // 2]
    bad.write_bytes(cut if kind == "gz" else cut + b"\xff" * 64 + data[len(data) // 2 :])
    good = tmp_path / "b-good.jsonl"
    good.write_bytes(SESSION.read_bytes())
    r = run(command, str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert f"a-bad.jsonl.{kind}: damaged".encode() in r.stderr, r.stderr
    assert b"Traceback" not in r.stderr
    if command == "normalize":
        assert f'"source":"{good}"'.encode() in r.stdout
    elif command == "report":
        assert b"1 file(s)" in r.stdout


def test_a_timestamp_at_the_edge_of_time_does_not_overflow(tmp_path: Path) -> None:
    line = {
        "type": "result",
        "subtype": "success",
        "session_id": "s",
        "result": "ok",
        "timestamp": "0001-01-01T00:00:00+01:00",
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    late = line | {"timestamp": "9999-12-31T23:59:59-01:00", "session_id": "t"}
    data = (json.dumps(line) + "\n" + json.dumps(late) + "\n").encode()
    totals = usage_totals(checkfu_fast.normalize(data, "claude"), by_day=True)
    assert totals["total"]["inputTokens"] == 10
    p = tmp_path / "t.jsonl"
    p.write_bytes(data)
    for by in ("session", "model", "day"):
        r = run("report", "--by", by, str(p))
        assert r.returncode == 0, r.stderr


def test_a_deeply_nested_mapping_file_is_a_mapping_error(tmp_path: Path) -> None:
    m = tmp_path / "deep.json"
    m.write_text('{"dialect": "x", "rules": ' + "[" * 3000 + "]" * 3000 + "}")
    with pytest.raises(checkfu_fast.MappingError):
        checkfu_fast.load_dialect(str(m))
    r = run("normalize", "--dialect", str(m), str(SAMPLE))
    assert r.returncode == 2
    assert b"Traceback" not in r.stderr


@pytest.mark.parametrize(
    "text",
    [
        '{"checkfu_dialect": 1, "dialect": "north", "rules": [{"match": {"type": "a", "type": "b"},'
        ' "emit": [{"kind": "status", "subtype": "x"}]}]}',
        '{"checkfu_dialect": 1, "dialect": "north", "rules": [{"match": {"type": "\\ud800"},'
        ' "emit": [{"kind": "status", "subtype": "x"}]}]}',
    ],
    ids=["duplicate key", "lone surrogate"],
)
def test_a_mapping_file_reads_the_same_on_both_paths(tmp_path: Path, text: str) -> None:
    m = tmp_path / "m.json"
    m.write_text(text)
    with pytest.raises(checkfu_fast.MappingError):
        checkfu_fast.load_dialect(str(m))
    if checkfu_fast._native is not None:
        with pytest.raises(ValueError):
            checkfu_fast._native.Mapping(text)
    for ref in ([], ["--reference"]):
        r = run("normalize", *ref, "--dialect", str(m), str(SAMPLE))
        assert r.returncode == 2 and b"Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("special", ["fifo", "devzero"])
def test_a_fifo_or_device_in_a_directory_is_skipped_with_a_warning(
    tmp_path: Path, special: str
) -> None:
    (tmp_path / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    x = tmp_path / "x.jsonl"
    if special == "fifo":
        os.mkfifo(x)
    else:
        x.symlink_to("/dev/zero")
    for argv in (["normalize"], ["report"], ["audit"], ["normalize", "--jobs", "2"]):
        r = run(*argv, str(tmp_path), timeout=60)
        assert r.returncode == 0, (argv, r.stderr)
        assert b"x.jsonl: " in r.stderr and b"skipped" in r.stderr, r.stderr
    with pytest.warns(checkfu_fast.paths.SkippedFileWarning):
        assert len(normalize_files([tmp_path])) == 1


def test_closed_stdout_and_a_full_disk_are_reported_as_output_errors(tmp_path: Path) -> None:
    r = subprocess.run(
        f"{sys.executable} -m checkfu_fast dialects >&-", shell=True, capture_output=True, cwd=ROOT
    )
    assert r.returncode == 1
    assert b"standard output is closed" in r.stderr and b"Traceback" not in r.stderr
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    journal = tmp_path / "j.jsonl"
    journal.write_text('{"kind": "nope"}\n' * 5000)
    for argv in (
        ["normalize", str(SESSION)],
        ["journal", str(journal)],
        ["report", str(SESSION)],
        ["audit", str(SESSION)],
    ):
        with open("/dev/full", "wb") as full:
            r = run(*argv, stdout=full)
        assert r.returncode == 1, (argv, r.stderr)
        assert r.stderr.startswith(b"checkfu-fast: standard output: No space left"), r.stderr
        assert b"Traceback" not in r.stderr and str(SESSION).encode() not in r.stderr


def test_terminal_output_escapes_control_characters(tmp_path: Path) -> None:
    evil = "s\x1b]0;pwned\x07\x1b[31m\nfake row"
    line = {
        "type": "result",
        "subtype": "success",
        "session_id": evil,
        "result": "ok",
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    p = tmp_path / "t.jsonl"
    p.write_text(json.dumps(line) + "\n" + json.dumps({"type": "\x1b[2Jzap"}) + "\n")
    for argv in (["report"], ["audit"]):
        r = run(*argv, str(p))
        assert r.returncode == 0, r.stderr
        assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
        assert b"\\x1b" in r.stdout
    r = run("report", str(p))
    assert not any(row.startswith(b"fake row") for row in r.stdout.splitlines())


# --- memory and time ------------------------------------------------------------------------


def test_vector_validation_stops_collecting_after_a_bound(tmp_path: Path) -> None:
    from checkfu_fast.oneshot.vectors import SHOWN_FAILURES, check_vector_file

    kit = json.loads((ROOT / "vectors" / "oneshot-v1-author-kit.json").read_text())
    bad = json.loads(json.dumps(kit["vectors"][0]))
    bad["exchange"]["stdout"] = bad["exchange"]["stdout"] + "x"
    kit["vectors"] = [bad] * (SHOWN_FAILURES + 150)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(kit))
    report = check_vector_file(p)
    assert not report.ok
    assert len(report.vectors) == SHOWN_FAILURES
    assert (report.more, report.more_failed) == (150, 150)
    assert report.lines()[-1].startswith("... and 150 more vector(s), 150 failing")


def test_the_docs_count_the_journal_kinds_of_the_schema() -> None:
    import re

    schema = json.loads((ROOT / "python/checkfu_fast/schemas/events-v1.schema.json").read_text())

    def consts(d: dict) -> list[str]:
        kind = d.get("properties", {}).get("kind", {})
        here = [kind["const"]] if "const" in kind else []
        return here + [c for branch in d.get("allOf", []) for c in consts(branch)]

    kinds = {c for d in schema["$defs"].values() for c in consts(d)}
    counts = {
        int(m)
        for doc in [ROOT / "README.md", ROOT / "docs" / "journal.md"]
        for m in re.findall(r"(\d+) (?:record )?kinds", doc.read_text())
    }
    assert kinds and counts == {len(kinds)}, (len(kinds), counts)


BOMB = """
import gzip, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import checkfu_fast
try:
    out = checkfu_fast.normalize_files([sys.argv[1]], jobs=1)
    print("ok", len(out[0]))
except MemoryError as exc:
    print("MemoryError", exc)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
def test_a_short_line_gzip_bomb_in_memory_is_a_memory_error(tmp_path: Path) -> None:
    # 65 KB of gzip expanding to 64 MiB of short lines: about 5 GB of JSONL, more than the limit
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"x\n" * (32 << 20), compresslevel=9, mtime=0))
    limit = 1536 << 20
    r = subprocess.run(
        [sys.executable, "-c", BOMB.format(limit=limit), str(bomb)],
        capture_output=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # not SIGABRT (-6)
    assert r.stdout.startswith(b"MemoryError"), r.stdout


INTERRUPTED = """
import sys
import checkfu_fast
print("start", flush=True)
try:
    checkfu_fast.normalize_files([sys.argv[1]], sys.argv[2], jobs=1)
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_stops_normalize_files_and_removes_the_partial_output(tmp_path: Path) -> None:
    import signal
    import time

    # 16 MiB of short lines behind 16 KB of gzip: over a GB of JSONL, many seconds of work
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"x\n" * (8 << 20), compresslevel=9, mtime=0))
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, str(bomb), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert p.stdout is not None
        assert p.stdout.readline() == b"start\n"
        time.sleep(1.0)  # the core is writing by now
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)  # a hang guard, not a timing assert
    finally:
        p.kill()
    assert stdout == b"interrupted\n", (stdout, stderr[-2000:])
    assert list(out.iterdir()) == []


# --- memory per junk line -----------------------------------------------------------------

JUNK = """
import gc, sys
import checkfu_fast
def status(key):
    with open("/proc/self/status") as f:  # VmHWM: the peak RSS so far; VmRSS: now (KiB)
        return int(next(l.split()[1] for l in f if l.startswith(key))) // 1024
checkfu_fast.normalize(b"y\\n" * 1000, "claude")  # warm up
line, how = sys.argv[1].encode() + b"\\n", sys.argv[2]
data = line * 100_000
base = status("VmRSS:")
if how == "normalize":
    out = checkfu_fast.normalize(data, "claude")
elif how == "feed":
    n = checkfu_fast.Normalizer("claude")
    out = n.feed(data) + n.finish()
elif how == "jsonl":
    out = checkfu_fast.normalize_jsonl(data, "claude")
elif how == "stream":  # 4 MiB of junk fed 64 KiB at a time, each piece's events dropped
    n, out = checkfu_fast.Normalizer("claude"), None
    piece = line * ((64 << 10) // len(line))
    for _ in range(64):
        assert n.feed(piece)
peak = status("VmHWM:") - base
del out, data
gc.collect()
print(peak, status("VmRSS:") - base)
"""


def junk_peak(line: str, how: str) -> tuple[int, int]:
    """(peak growth, growth still resident after the output is dropped) in MiB."""
    r = subprocess.run(
        [sys.executable, "-c", JUNK, line, how],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    peak, kept = map(int, r.stdout.split())
    return peak, kept


@pytest.mark.parametrize("line", ["y", "{y", "1"])
@pytest.mark.parametrize("how", ["normalize", "feed"])
def test_the_core_keeps_no_kilobytes_per_junk_line(how: str, line: str) -> None:
    """100,000 short junk lines (195 KiB): the core makes its per-line structures a bounded
    group at a time, each line's one event without spare room (a 1-event line had room for
    4, ~2 KiB, and a 256 KiB group of 2-byte lines was 128k lines: +365 MiB peak for `y`,
    +316 MiB still resident once the events were dropped). What is left is the output: the
    event dicts, 47 MiB of Python objects for `y` (89 MiB for `{y`, whose events carry an
    error object)."""
    peak, kept = junk_peak(line, how)
    assert peak <= (96 if line != "{y" else 144), (peak, kept)
    assert kept <= 32, (peak, kept)


@pytest.mark.parametrize("line", ["y", "{y"])
def test_feeding_junk_in_pieces_stays_flat(line: str) -> None:
    """4 MiB of junk lines fed 64 KiB at a time: memory does not grow with the stream (a
    64 KiB piece of 2-byte lines was one group of 32k lines, ~70 MiB of core structures)."""
    peak, kept = junk_peak(line, "stream")
    assert peak <= 48, (peak, kept)


@pytest.mark.parametrize("line", ["y", "{y"])
def test_jsonl_of_junk_lines_is_output_sized(line: str) -> None:
    """The JSONL of 100,000 junk lines (12-20 MiB of output): the output buffer and its one
    copy into Python, nothing per line beyond."""
    peak, kept = junk_peak(line, "jsonl")
    assert peak <= (64 if line == "y" else 96), (peak, kept)


DICTS_UNDER_LIMIT = """
import resource, sys
import checkfu_fast
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
how, headroom = sys.argv[1], int(sys.argv[2]) << 20
data = b"y\\n" * (16 << 20)  # 16 M junk lines: some GB of event dicts
resource.setrlimit(resource.RLIMIT_AS, (vm() + headroom, resource.RLIM_INFINITY))
try:
    if how == "normalize":
        checkfu_fast.normalize(data, "claude")
    elif how == "lean":
        checkfu_fast.normalize(data, "claude", fields="lean")
    else:
        n = checkfu_fast.Normalizer("claude")
        n.feed(data)
    print("no error")
except MemoryError:
    print("MemoryError")
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
@pytest.mark.parametrize("headroom", [160, 330, 480])
@pytest.mark.parametrize("how", ["normalize", "lean", "feed"])
def test_the_dict_paths_run_out_of_memory_with_memory_error(how: str, headroom: int) -> None:
    """Event dicts that do not fit under RLIMIT_AS: MemoryError wherever the allocation fails
    (pyo3 panicked when CPython could not make a str or dict: PanicException "PyObject pointer
    is null", sometimes twice over, in most trials)."""
    r = subprocess.run(
        [sys.executable, "-c", DICTS_UNDER_LIMIT, how, str(headroom)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # not SIGABRT (-6)
    assert r.stdout.splitlines()[-1] == "MemoryError", (r.stdout, r.stderr[-2000:])


REPORT_PEAK = """
import sys
from checkfu_fast.cli import main
def hwm():
    with open("/proc/self/status") as f:  # VmHWM: the peak RSS so far, in KiB
        return int(next(l.split()[1] for l in f if l.startswith("VmHWM:"))) // 1024
main(["report", "--json", sys.argv[2]])  # warm up on a small file: imports, prices
base = hwm()
main(["report", "--json", sys.argv[1]])
print(hwm() - base, file=sys.stderr)
"""


def test_report_on_a_short_line_gzip_bomb_stays_small(tmp_path: Path) -> None:
    """An 8 KB gzip of 8 MiB of 2-byte lines (4 M junk lines): report's peak does not grow
    with the lines (the 65 KB gzip of 64 MiB peaked at 1.1 GB with 1 MiB feeds of event dicts;
    on 2026-12-05's main the whole `report` process on it peaks at 44 MiB in 24 s, the stream
    folded piece by piece)."""
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"x\n" * (4 << 20), compresslevel=9, mtime=0))
    r = subprocess.run(
        [sys.executable, "-c", REPORT_PEAK, str(bomb), str(SESSION)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stderr.split()[-1]) <= 64, r.stderr[-2000:]


@pytest.mark.parametrize("fmt", ["arrow", "parquet"])
def test_ctrl_c_stops_an_arrow_or_parquet_file_being_written(tmp_path: Path, fmt: str) -> None:
    """Ctrl-C while normalize_files writes Arrow/Parquet to out_dir: the file being written
    stops at its next batch and leaves nothing (it ran to its end and landed in out_dir)."""
    pytest.importorskip("pyarrow")
    import signal
    import time

    line = json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "x" * 40}]}}
    ).encode()
    big = tmp_path / "big.jsonl.gz"
    big.write_bytes(gzip.compress((line + b"\n") * 2_000_000, compresslevel=1, mtime=0))
    out = tmp_path / "out"
    out.mkdir()
    script = INTERRUPTED.replace("jobs=1)", f"jobs=1, format={fmt!r})")
    p = subprocess.Popen(
        [sys.executable, "-c", script, str(big), str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert p.stdout is not None
        assert p.stdout.readline() == b"start\n"
        time.sleep(1.0)  # the first chunks are being written by now (all: seconds more)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)  # a hang guard, not a timing assert
    finally:
        p.kill()
    assert stdout == b"interrupted\n", (stdout, stderr[-2000:])
    assert list(out.iterdir()) == []


JUNK_BOMB_LINES = 8 << 20  # 16 MiB of 2-byte junk lines: one 16 MiB read, 8 M rows


def test_a_cancel_flag_stops_feed_arrow_within_its_chunk() -> None:
    """A feed_arrow of one big chunk (8 MiB of 2-byte junk lines: 4 M rows, seconds of core
    work) stops when its CancelFlag is set from another thread: InterruptedError, not the
    whole chunk's batches (the chunk was one uninterruptible core call), and the stream is
    over (ValueError after)."""
    import threading
    import time

    from checkfu_fast import _native

    n = _native.Normalizer("claude")
    flag = _native.CancelFlag()
    got: list[object] = []

    def convert() -> None:
        try:
            got.append(len(n.feed_arrow(b"x\n" * (4 << 20), 65536, flag)))
        except BaseException as exc:
            got.append(exc)

    worker = threading.Thread(target=convert)
    worker.start()
    time.sleep(0.5)  # well inside the call (all of it takes seconds)
    assert not flag.is_set()
    flag.set()
    worker.join(timeout=120)  # a hang guard, not a timing assert
    assert not worker.is_alive()
    assert len(got) == 1 and isinstance(got[0], InterruptedError), got
    with pytest.raises(ValueError, match="cancelled"):
        n.feed_arrow(b"{}\n")


INTERRUPTED_JUNK = """
import sys, time
import pyarrow
import checkfu_fast
t = time.process_time()
checkfu_fast.normalize_arrow(b"x\\n" * (512 << 10), "claude")  # the core's pace on 1 MiB of it
unit = time.process_time() - t
print("start", unit, flush=True)
t = time.process_time()
try:
    out_dir = sys.argv[2] if sys.argv[2] != "-" else None  # "-": Arrow in memory
    checkfu_fast.normalize_files([sys.argv[1]], out_dir, jobs=1, format=sys.argv[3])
    print("finished", flush=True)
except KeyboardInterrupt:  # the CPU time spent, in units of 1 MiB of junk converted
    print("interrupted", round((time.process_time() - t) / unit, 1), flush=True)
"""


@pytest.mark.parametrize("fmt", ["arrow", "parquet", "arrow in memory"])
def test_ctrl_c_stops_an_arrow_or_parquet_junk_bomb_mid_read(tmp_path: Path, fmt: str) -> None:
    """Ctrl-C while normalize_files converts a 16 KB gzip of 16 MiB of 2-byte junk lines to
    Arrow/Parquet in out_dir: the file is one 16 MiB read whose 8 M rows were one core call
    (~20 s under load), which Ctrl-C waited for (in memory, `format="arrow"` without out_dir:
    the whole file); now the core's cancel flag stops it within a window of input, and
    nothing is left in out_dir. Measured in CPU time, in units of what 1 MiB of the junk costs
    the same process (no wall-clock bound): Ctrl-C comes after about one unit, the whole read
    costs 16 or more (21 and 24 before the flag), and the bound is half of that."""
    pytest.importorskip("pyarrow")
    import signal
    import time

    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"x\n" * JUNK_BOMB_LINES, compresslevel=9, mtime=0))
    out = tmp_path / "out"
    out.mkdir()
    where = [str(out), fmt] if fmt != "arrow in memory" else ["-", "arrow"]
    p = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_JUNK, str(bomb), *where],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert p.stdout is not None
        start, unit = p.stdout.readline().split()
        assert start == b"start"
        time.sleep(max(float(unit), 0.2))  # inside the conversion of the 16 MiB read by now
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=300)  # a hang guard, not a timing assert
    finally:
        p.kill()
    assert stdout.split()[0] == b"interrupted", (stdout, stderr[-2000:])
    assert float(stdout.split()[1]) < 8, stdout  # 1 MiB units: the read is 16
    assert list(out.iterdir()) == []


WRITERS_UNDER_LIMIT = """
import resource, sys
import checkfu_fast
def vm():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
how, headroom, path = sys.argv[1], int(sys.argv[2]) << 20, sys.argv[3]
data = b"y\\n" * (16 << 20)  # 16 M junk lines: some GB of JSONL or Arrow columns
table = None
if how == "concat":  # 2 M rows in 32 batches, made before the limit: their one-batch copy
    table = checkfu_fast.normalize_arrow(data[: 4 << 20], "claude", batch_rows=65536)
checkfu_fast.normalize_arrow(b"y\\n" * 1000, "claude")  # warm up
checkfu_fast.normalize_jsonl(b"y\\n" * 1000, "claude")
resource.setrlimit(resource.RLIMIT_AS, (vm() + headroom, resource.RLIM_INFINITY))
try:
    if how == "normalize_jsonl":
        checkfu_fast.normalize_jsonl(data, "claude")
    elif how == "feed_jsonl":
        checkfu_fast.Normalizer("claude").feed_jsonl(data)
    elif how == "normalize_arrow":
        checkfu_fast.normalize_arrow(data, "claude")
    elif how == "feed_arrow":
        checkfu_fast.Normalizer("claude").feed_arrow(data)
    elif how == "files_arrow":
        checkfu_fast.normalize_files([path], format="arrow", jobs=1)
    elif how == "concat":
        table.__arrow_c_array__()
    print("no error")
except MemoryError:
    print("MemoryError")
except BaseException as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
@pytest.mark.parametrize("headroom", [96, 400])
@pytest.mark.parametrize(
    "how",
    ["normalize_jsonl", "feed_jsonl", "normalize_arrow", "feed_arrow", "files_arrow", "concat"],
)
def test_the_in_memory_writers_run_out_of_memory_with_memory_error(
    tmp_path: Path, how: str, headroom: int
) -> None:
    """JSONL or Arrow output held in memory that does not fit under RLIMIT_AS: MemoryError,
    the process lives. The JSONL buffer and the Arrow column builders grew with Rust's
    infallible allocation, whose failure aborts the process (SIGABRT, "memory allocation of N
    bytes failed"); now every growth is try_reserve."""
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"y\n" * (16 << 20))
    r = subprocess.run(
        [sys.executable, "-c", WRITERS_UNDER_LIMIT, how, str(headroom), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # not SIGABRT (-6)
    assert r.stdout.splitlines()[-1] == "MemoryError", (r.stdout, r.stderr[-2000:])
