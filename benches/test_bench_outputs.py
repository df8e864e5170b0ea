"""Output paths side by side: dicts, JSONL from the core, today's CLI method, the orjson floor.

One pytest-benchmark group per corpus (``outputs-claude``, ``outputs-mixed``), so every path
runs on the same bytes in the same process::

    python3 -m pytest benches/test_bench_outputs.py -q -p no:randomly --benchmark-enable \\
        --benchmark-group-by=group --benchmark-json=out.json
    python3 benches/outputs_report.py out.json       # ratios table + memory per input MB

``CHECKFU_BENCH_ROUNDS=N`` sets the rounds per path (default 5; the README's runs use 15).

Paths (``MB`` is the input size; the ``files_*`` paths process two copies of the corpus, so
their ``MB`` is twice the corpus):

* ``normalize_dicts``: ``checkfu_fast.normalize`` (event dicts);
* ``normalize_dicts_lean``, ``normalize_jsonl_lean``, ``normalize_arrow_lean``: the same three
  outputs with ``fields="lean"`` (no ``raw``/``parsed``: what analysis reads);
* ``normalize_jsonl``: ``checkfu_fast.normalize_jsonl`` (JSONL bytes, no Python objects);
* ``normalize_orjson_dumps``: ``normalize`` + ``orjson.dumps`` per event (the CLI's method
  before ``normalize_jsonl``);
* ``split_orjson_loads``: ``data.split(b"\\n")`` + ``orjson.loads`` per non-blank line, the
  floor a Python program pays just to read the lines (no events at all);
* ``normalizer_64k`` / ``normalizer_jsonl_64k``: ``Normalizer.feed`` / ``feed_jsonl`` in
  64 KiB chunks;
* ``files_jobs1`` / ``files_jobs2``: ``normalize_files`` on two files with 1 and 2 threads, the
  JSONL returned as bytes (made one after the other under the GIL: a serial tail);
* ``files_out_jobs1`` / ``files_out_jobs2``: the same written to ``out_dir`` (reprocessing's
  use; in ``/dev/shm`` when there is one, so the disk is not what is measured);
* ``normalize_arrow``: ``checkfu_fast.normalize_arrow`` (Arrow record batches built by the core);
* ``normalize_arrow_table``: the same, then ``pyarrow.table`` of it (imported zero-copy through
  ``__arrow_c_stream__``).
* ``files_arrow_jobs1`` / ``files_arrow_jobs2``: ``normalize_files(format="arrow")`` on the
  two files with 1 and 2 threads (Arrow batches built by the core, files in parallel);
* ``bigfile_jobs1`` / ``bigfile_jobs2``: ``normalize_files`` on one file of four copies of the
  corpus, with 1 thread (one stream) and 2 threads (split at newlines into 8 MiB ranges,
  rust/split.rs); ``MB`` is four times the corpus.

Each benchmark checks once, untimed, that its output agrees with ``normalize`` on the corpus.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest

import checkfu_fast
from checkfu_fast.golden import strict_key
from corpus import make_corpus, make_mixed

CORPORA = ("claude", "mixed")
BENCH_BYTES = 8 << 20
SMOKE_BYTES = 1 << 20
CHUNK = 64 << 10
# rounds per path; CHECKFU_BENCH_ROUNDS=15 for a README run on this noisy VM (±25 % per round)
ROUNDS = int(os.environ.get("CHECKFU_BENCH_ROUNDS", "5"))

_current: dict[str, Any] = {}


def _corpus(name: str, size: int, tmp: Path) -> dict[str, Any]:
    key = (name, size)
    if _current.get("key") != key:
        _current.clear()
        gc.collect()
        data = make_mixed(size) if name == "mixed" else make_corpus(name, size)
        files = [tmp / f"{name}-{i}.jsonl" for i in range(2)]
        for f in files:
            f.write_bytes(data)
        big = tmp / f"{name}-big.jsonl"
        big.write_bytes(data * 4)
        _current.update(
            key=key, data=data, files=files, big=big, jsonl=checkfu_fast.normalize_jsonl(data)
        )
    return _current


def _split_loads(data: bytes) -> list[Any]:
    return [orjson.loads(line) for line in data.split(b"\n") if line.strip()]


def _orjson_dumps(data: bytes) -> bytes:
    opt = orjson.OPT_APPEND_NEWLINE
    return b"".join([orjson.dumps(ev, option=opt) for ev in checkfu_fast.normalize(data)])


def _chunked(data: bytes) -> list[dict[str, Any]]:
    n = checkfu_fast.Normalizer()
    out: list[dict[str, Any]] = []
    mv = memoryview(data)
    for i in range(0, len(data), CHUNK):
        out += n.feed(mv[i : i + CHUNK])
    return out + n.finish()


def _chunked_jsonl(data: bytes) -> bytes:
    n = checkfu_fast.Normalizer()
    mv = memoryview(data)
    out = [n.feed_jsonl(mv[i : i + CHUNK]) for i in range(0, len(data), CHUNK)]
    out.append(n.finish_jsonl())
    return b"".join(out)


PATHS = (
    "normalize_dicts",
    "normalize_dicts_lean",
    "normalize_jsonl_lean",
    "normalize_arrow_lean",
    "normalize_jsonl",
    "normalize_orjson_dumps",
    "split_orjson_loads",
    "normalizer_64k",
    "normalizer_jsonl_64k",
    "files_jobs1",
    "files_jobs2",
    "files_out_jobs1",
    "files_out_jobs2",
    "normalize_arrow",
    "normalize_arrow_table",
    "bigfile_jobs1",
    "bigfile_jobs2",
    "files_arrow_jobs1",
    "files_arrow_jobs2",
)


def _arrow_table(data: bytes) -> Any:
    import pyarrow as pa

    return pa.table(checkfu_fast.normalize_arrow(data))


def _arrow_agrees(data: bytes, jsonl: bytes, x: Any = None) -> bool:
    import pyarrow as pa

    from checkfu_fast.arrow import rows_to_events

    table = pa.table(checkfu_fast.normalize_arrow(data) if x is None else x)
    return _decoded(jsonl) == strict_key(list(rows_to_events(table)))


def _decoded(jsonl: bytes) -> Any:
    return strict_key([json.loads(line) for line in jsonl.split(b"\n")[:-1]])


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("corpus", CORPORA)
def test_outputs(benchmark: Any, corpus: str, path: str, tmp_path_factory: Any) -> None:
    assert checkfu_fast.IMPLEMENTATION == "native"
    size = SMOKE_BYTES if benchmark.disabled else BENCH_BYTES
    c = _corpus(corpus, size, tmp_path_factory.getbasetemp())
    data, files, jsonl = c["data"], c["files"], c["jsonl"]
    mb = len(data) / 1e6
    kwargs: dict[str, Any] = {}
    if path == "normalize_dicts":
        fn, args = checkfu_fast.normalize, (data,)
        agrees = _decoded(jsonl) == strict_key(fn(data))
    elif path.endswith("_lean"):
        full = checkfu_fast.normalize(data)
        kind = path.removeprefix("normalize_").removesuffix("_lean")
        fn = {
            "dicts": checkfu_fast.normalize,
            "jsonl": checkfu_fast.normalize_jsonl,
            "arrow": checkfu_fast.normalize_arrow,
        }[kind]
        args, kwargs = (data,), {"fields": "lean"}
        lean = checkfu_fast.normalize(data, fields="lean")
        agrees = len(lean) == len(full) and all(
            {k: v for k, v in a.items() if k != "lineBytes"}
            == {k: v for k, v in b.items() if k not in ("raw", "parsed", "lineBytes")}
            for a, b in zip(lean, full, strict=True)
        )
    elif path == "normalize_jsonl":
        fn, args = checkfu_fast.normalize_jsonl, (data,)
        agrees = fn(data) == jsonl
    elif path == "normalize_orjson_dumps":
        fn, args = _orjson_dumps, (data,)
        agrees = [orjson.loads(x) for x in fn(data).split(b"\n")[:-1]] == checkfu_fast.normalize(
            data
        )
    elif path == "split_orjson_loads":
        fn, args = _split_loads, (data,)
        agrees = True  # a floor, not an equivalent
    elif path == "normalizer_64k":
        fn, args = _chunked, (data,)
        agrees = _decoded(jsonl) == strict_key(fn(data))
    elif path == "normalizer_jsonl_64k":
        fn, args = _chunked_jsonl, (data,)
        agrees = fn(data) == jsonl
    elif path == "normalize_arrow":
        fn, args = checkfu_fast.normalize_arrow, (data,)
        agrees = _arrow_agrees(data, jsonl)
    elif path == "normalize_arrow_table":
        pytest.importorskip("pyarrow")
        fn, args = _arrow_table, (data,)
        agrees = _arrow_agrees(data, jsonl)
    elif path.startswith("bigfile_"):
        jobs = 1 if path == "bigfile_jobs1" else 2
        mb *= 4

        def fn(paths: list[Path], jobs: int = jobs) -> list[bytes]:
            return checkfu_fast.normalize_files(paths, jobs=jobs)

        args = ([c["big"]],)
        (got,) = fn([c["big"]])
        agrees = got == checkfu_fast.normalize_jsonl(c["big"].read_bytes())
    elif path.startswith("files_arrow_"):
        jobs = 1 if path == "files_arrow_jobs1" else 2
        mb *= 2

        def fn(paths: list[Path], jobs: int = jobs) -> list[Any]:
            return checkfu_fast.normalize_files(paths, format="arrow", jobs=jobs)

        args = (files,)
        agrees = all(_arrow_agrees(data, jsonl, x) for x in fn(files))
    elif path.startswith("files_out_"):
        jobs = 1 if path == "files_out_jobs1" else 2
        mb *= 2
        shm = Path("/dev/shm")
        out = Path(tempfile.mkdtemp(dir=shm if shm.is_dir() else tmp_path_factory.getbasetemp()))

        def fn(paths: list[Path], jobs: int = jobs, out: Path = out) -> list[str]:
            return checkfu_fast.normalize_files(paths, out_dir=out, jobs=jobs)

        args = (files,)
        agrees = [Path(p).read_bytes() for p in fn(files)] == [jsonl, jsonl]
    else:
        jobs = 1 if path == "files_jobs1" else 2
        fn, args = checkfu_fast.normalize_files, (files,)
        mb *= 2

        def fn(paths: list[Path], jobs: int = jobs) -> list[bytes]:
            return checkfu_fast.normalize_files(paths, jobs=jobs)

        agrees = fn(files) == [jsonl, jsonl]
    gc.collect()
    benchmark.group = f"outputs-{corpus}"
    benchmark.extra_info.update(MB=mb, path=path, corpus=corpus, agrees=agrees)
    try:
        benchmark.pedantic(
            fn, args=args, kwargs=kwargs, rounds=ROUNDS, iterations=1, warmup_rounds=1
        )
    finally:
        if path.startswith("files_out_"):
            shutil.rmtree(out, ignore_errors=True)
    assert agrees, f"{path} disagrees with normalize on the {corpus} corpus"
