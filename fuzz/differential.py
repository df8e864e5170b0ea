"""Differential fuzz target (atheris): the native core against the pure-Python reference.

    python3 fuzz/differential.py --make-seeds DIR        # write the seed corpus
    python3 fuzz/differential.py [libFuzzer flags] CORPUS_DIR... # fuzz (atheris = libFuzzer)
    python3 fuzz/differential.py CRASH_FILE              # replay one input

Each input is a 4-byte header and a body:

- byte 0 picks the dialect: ``auto`` or one of the nine names (255: an unknown name);
- byte 1 picks the budgets: below 128 the defaults, else small ones drawn from it (255: an
  out-of-range one, so both paths must raise the same typed error);
- byte 2 seeds the random chunking (sizes 1..64 bytes, sometimes up to 4 KiB, empty chunks too);
- byte 3 picks the mode: below 208 the body is a byte stream; 208 to 223: the body is a
  compressed file (behind a gzip magic when byte 0 is even, a zstd magic when odd) that
  Python's ``inputs.open_input`` and the core's ``normalize_files`` must both read to the same
  events or both refuse as damaged (docs/errors.md); from 224 the body is a mapping
  document (a user dialect) followed, after a NUL byte, by the stream to normalize with it.

The stream goes through ``checkfu_fast.normalize`` and ``checkfu_fast.Normalizer`` (native)
and ``checkfu_fast.reference.normalize`` / ``reference.Normalizer`` (Python), whole and chunked;
all four must give identical events (types, key order and float bits compared), native events
must be schema-valid (when ``../shared`` has the schema), every line of
``checkfu_fast.normalize_jsonl`` must ``json.loads`` to exactly the native event, every row of
``checkfu_fast.normalize_arrow`` (in batches of 3 rows; when pyarrow is installed) must turn back
into exactly the native event through ``checkfu_fast.arrow.rows_to_events``, and nothing
but the package's typed errors (``checkfu_fast.CheckfuError``) may escape. A mapping document
accepted by the reference loader (``load_dialect``) must compile in the native core, and one it
refuses must be refused by the core too. Python
coverage of the package (the reference) guides atheris; the native extension is not
instrumented.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["checkfu_fast"]):
    import checkfu_fast
    from checkfu_fast import CheckfuError, reference
    from checkfu_fast.golden import strict_key
    from checkfu_fast.reference import MappedDialect
    from checkfu_fast.reference import mapping as ref_mapping

from checkfu_fast import _native
from checkfu_fast.arrow import rows_to_events

try:
    import pyarrow as pa
except ImportError:  # pragma: no cover - without the arrow extra: the Arrow check is skipped
    pa = None

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT.parent / "shared" / "seeds" / "003_4dc6804f576ea617.txt"
DIALECT_CHOICES = ("auto", *checkfu_fast.DIALECTS)
MAPPING_MODE = 224
COMPRESSED_MODE = 208
# a stream for a fuzzed mapping when the input has none: a few real lines of each mapped dialect
SAMPLE = b"".join(
    b"".join(p.read_bytes().splitlines(keepends=True)[:4])
    for name in ("north", "canary", "solweb")
    for p in sorted((ROOT / "vectors" / "events" / name).glob("*.input.jsonl"))[:1]
)

try:
    import jsonschema_rs

    VALIDATOR = jsonschema_rs.validator_for(json.loads(SCHEMA.read_text(encoding="utf-8")))
except (ImportError, OSError):  # pragma: no cover - without shared/ or the test deps
    VALIDATOR = None


class Mismatch(AssertionError):
    """Native and reference disagree (or an invariant fails): a finding, kept by atheris."""


def canon(x):
    """Strict comparison key (types, key order, float bits); an unexpected type is a finding."""
    try:
        return strict_key(x)
    except TypeError as exc:
        raise Mismatch(f"unexpected type in an event: {exc}") from None


def outcome(fn):
    """``("ok", value)`` or ``("error", class name, message, code)`` for a typed error.

    Any other exception (including pyo3's PanicException, a BaseException) is a finding.
    """
    try:
        return ("ok", fn())
    except CheckfuError as exc:
        return ("error", type(exc).__name__, str(exc), getattr(exc, "code", None))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        raise Mismatch(f"an untyped exception escaped: {type(exc).__name__}: {exc}") from exc


def budgets(sel: int) -> dict:
    if sel < 128:
        return {}
    if sel == 255:
        return {"max_depth": 513}
    rng = random.Random(sel)
    return {
        "max_line_bytes": rng.randint(1, 600),
        "max_depth": rng.randint(1, 24),
        "max_nodes": rng.randint(1, 400),
    }


def chunks(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed * 1_000_003 + len(data))
    out, i = [], 0
    while i < len(data):
        r = rng.random()
        n = 0 if r < 0.05 else rng.randint(1, 4096) if r < 0.15 else rng.randint(1, 64)
        out.append(data[i : i + n])
        i += n
    return out


def incremental(make, parts: list[bytes]) -> list[dict]:
    n = make()
    events = []
    for part in parts:
        events += n.feed(part)
    events += n.finish()
    events += n.finish()  # idempotent: nothing more
    return events


def compare(label: str, data: bytes, results: dict) -> None:
    keyed = {name: canon(list(r)) for name, r in results.items()}
    first_name, first = next(iter(keyed.items()))
    for name, key in keyed.items():
        if key != first:
            a, b = results[first_name], results[name]
            raise Mismatch(f"{label}: {first_name} != {name}\n input={data!r}\n"
                           f" {first_name}={a!r}\n {name}={b!r}")  # fmt: skip


def check_stream(data: bytes, dialect, opts: dict, seed: int, label: str) -> None:
    parts = chunks(data, seed)
    runs = {
        "native": lambda: checkfu_fast.normalize(data, dialect, **opts),
        "reference": lambda: reference.normalize(data, dialect, **opts),
        "native-chunked": lambda: incremental(
            lambda: checkfu_fast.Normalizer(dialect, **opts), parts
        ),
        "reference-chunked": lambda: incremental(
            lambda: reference.Normalizer(dialect, **opts), parts
        ),
    }
    results = {name: outcome(fn) for name, fn in runs.items()}
    compare(label, data, results)
    kind, *rest = results["native"]
    if kind != "ok":
        return
    events = rest[0]
    # the JSONL writer: every line json.loads to exactly the event normalize() gives
    jsonl = outcome(lambda: checkfu_fast.normalize_jsonl(data, dialect, **opts))
    if jsonl[0] != "ok":
        raise Mismatch(f"{label}: normalize() ran, normalize_jsonl gave {jsonl!r} for {data!r}")
    decoded = [json.loads(line) for line in jsonl[1].split(b"\n")[:-1]]
    if canon(decoded) != canon(events):
        raise Mismatch(f"{label}: normalize_jsonl lines != normalize() for {data!r}\n"
                       f" jsonl={jsonl[1]!r}\n events={events!r}")  # fmt: skip
    # the Arrow writer: every row, turned back by row_to_event, is exactly the event (small
    # batches, so batch cuts and the concatenation of __arrow_c_array__ are crossed too)
    if pa is not None:
        arrow = outcome(lambda: checkfu_fast.normalize_arrow(data, dialect, batch_rows=3, **opts))
        if arrow[0] != "ok":
            raise Mismatch(f"{label}: normalize() ran, normalize_arrow gave {arrow!r} for {data!r}")
        for table in (pa.table(arrow[1]), pa.record_batch(arrow[1])):
            if canon(list(rows_to_events(table))) != canon(events):
                raise Mismatch(f"{label}: normalize_arrow rows != normalize() for {data!r}\n"
                               f" rows={table.to_pylist()!r}\n events={events!r}")  # fmt: skip
    if [e["seq"] for e in events] != list(range(len(events))):
        raise Mismatch(f"{label}: seq is not 0..n-1 for {data!r}")
    if isinstance(dialect, str) and dialect != "auto":
        if {e["dialect"] for e in events} - {dialect}:
            raise Mismatch(f"{label}: an event names another dialect for {data!r}")
    if VALIDATOR is not None:
        for ev in events:
            errors = [f"{e.instance_path}: {e.message}" for e in VALIDATOR.iter_errors(ev)]
            if errors:
                raise Mismatch(f"{label}: schema-invalid event {ev!r}: {errors}")


def check_mapping(body: bytes, opts: dict, seed: int) -> None:
    text_bytes, sep, stream = body.partition(b"\x00")
    stream = stream if sep else SAMPLE
    try:
        text = text_bytes.decode("utf-8")
    except UnicodeDecodeError:
        return  # load_dialect reads files as UTF-8 and refuses others (MappingError)
    ref = outcome(lambda: ref_mapping.load_text(text))
    try:
        native = ("ok", _native.Mapping(text))
    except ValueError as exc:
        native = ("error", str(exc))
    if ref[0] == "ok" and native[0] != "ok":
        raise Mismatch(
            f"mapping: the reference loads it, the native core refuses it ({native[1]}), so "
            f"normalize() would raise an untyped ValueError\n mapping={text!r}"
        )
    if ref[0] != "ok":
        if native[0] == "ok":
            raise Mismatch(
                f"mapping: the reference refuses it ({ref[1]}), the native core compiles it\n"
                f" mapping={text!r}"
            )
        return  # refused by load_dialect: the user never gets a dialect to pass on
    dialect = MappedDialect(ref[1])
    check_stream(stream, dialect, opts, seed, f"mapping {dialect.NAME!r} opts={opts}")


def check_compressed(body: bytes, zstd: bool) -> None:
    """Both decompressors on one file: the same events, or both a damaged-input error."""
    import os
    import tempfile

    from checkfu_fast.errors import DamagedInput
    from checkfu_fast.inputs import open_input

    data = (b"\x28\xb5\x2f\xfd" if zstd else b"\x1f\x8b") + body
    fd, path = tempfile.mkstemp(suffix=".jsonl.gz")
    try:
        os.write(fd, data)
        os.close(fd)
        try:
            with open_input(path) as f:
                plain = b"".join(iter(lambda: f.read(1 << 16), b""))
            py = checkfu_fast.normalize_jsonl(plain)
        except DamagedInput:
            py = None
        except OSError as exc:
            if "zstandard" in str(exc):
                return  # zstandard not installed: nothing to compare
            raise
        (r,) = checkfu_fast._files([path], None, "auto", (64 << 20, 64, 10**6), 1, tag_source=False)
        rust = None if isinstance(r, tuple) else bytes(r)
        if py != rust:
            raise Mismatch(
                f"compressed file: python {'refuses' if py is None else 'reads'} it, the core "
                f"{'refuses' if rust is None else 'reads'} it"
                + (" (different events)" if py is not None and rust is not None else "")
                + f"\n data={data[:200]!r}"
            )
    finally:
        os.unlink(path)


def test_one_input(data: bytes) -> None:
    if len(data) < 4:
        return
    d_sel, b_sel, seed, mode = data[0], data[1], data[2], data[3]
    body = data[4:]
    opts = budgets(b_sel)
    if mode >= MAPPING_MODE:
        check_mapping(body, opts, seed)
        return
    if mode >= COMPRESSED_MODE:
        check_compressed(body, zstd=bool(d_sel & 1))
        return
    dialect = "no-such-dialect" if d_sel == 255 else DIALECT_CHOICES[d_sel % len(DIALECT_CHOICES)]
    check_stream(body, dialect, opts, seed, f"dialect={dialect} opts={opts}")


def make_seeds(out: Path) -> int:
    """Seeds: every golden input whole (named and auto, default and small budgets), each line of
    them alone, the real corpus, and the shipped mappings with a sample stream."""
    out.mkdir(parents=True, exist_ok=True)
    n = 0

    def put(header: bytes, body: bytes) -> None:
        nonlocal n
        (out / f"seed-{n:05d}").write_bytes(header + body)
        n += 1

    for path in sorted((ROOT / "vectors" / "events").glob("*/*.input.jsonl")):
        d = DIALECT_CHOICES.index(path.parent.name)
        data = path.read_bytes()
        put(bytes([d, 0, n % 256, 0]), data)
        put(bytes([0, 0, n % 256, 0]), data)
        put(bytes([d, 200, n % 256, 0]), data)
        for line in data.splitlines(keepends=True):
            put(bytes([d, 0, 0, 0]), line)
    corpus = ROOT.parent / "shared" / "corpus" / "real"
    for path in sorted(corpus.glob("*/*.jsonl")):
        d = DIALECT_CHOICES.index(path.parent.name) if path.parent.name in DIALECT_CHOICES else 0
        put(bytes([d, 0, n % 256, 0]), path.read_bytes()[:16384])
    import gzip

    sample = (ROOT / "vectors" / "samples" / "claude-api-error.jsonl").read_bytes()
    put(bytes([0, 0, 0, COMPRESSED_MODE]), gzip.compress(sample, mtime=0)[2:])
    try:
        import zstandard

        frame = zstandard.ZstdCompressor(write_checksum=True).compress(sample)
        put(bytes([1, 0, 0, COMPRESSED_MODE]), frame[4:])
    except ImportError:
        pass
    for path in sorted((ROOT / "python" / "checkfu_fast" / "mappings").glob("*.json")):
        put(bytes([0, 0, 0, 255]), path.read_bytes())
        name = path.stem
        stream = b"".join(
            p.read_bytes()
            for p in sorted((ROOT / "vectors" / "events" / name).glob("*.input.jsonl"))
        )
        put(bytes([0, 0, 7, 255]), path.read_bytes() + b"\x00" + stream[:4096])
    return n


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--make-seeds":
        print(f"differential: {make_seeds(Path(sys.argv[2]))} seeds in {sys.argv[2]}")
        return
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
