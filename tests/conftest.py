"""Shared fixtures for the checkfu_fast test suite.

``SHARED`` is the sibling ``shared`` directory of the project root (CI checks it out there).
Tests that read it (the real corpus, the seeds, JSONTestSuite) are marked ``needs_shared`` and
skip, saying so, when it is absent; everything else runs from the package's own files (the
events schema is the package's verbatim copy, ``test_journal`` checks it against the seed).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, settings

import checkfu_fast
import checkfu_fast.reference

ROOT = Path(__file__).resolve().parents[1]
# CHECKFU_SHARED points the lookup elsewhere (e.g. a missing path, to check that the suite passes
# in a plain clone or an sdist, where ../shared does not exist)
SHARED = Path(os.environ.get("CHECKFU_SHARED") or ROOT.parent / "shared")
NO_SHARED = f"needs the shared specs and corpus at {SHARED}, which is absent"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=NO_SHARED)
SCHEMA_PATH = ROOT / "python" / "checkfu_fast" / "schemas" / "events-v1.schema.json"
CORPUS = SHARED / "corpus" / "real"
CORPUS_DIALECTS = ("claude", "cursor", "codex", "opencode", "pi", "grok")
IMPLEMENTED = ("claude", "cursor", "codex")

settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

IMPLS = {"native": checkfu_fast, "reference": checkfu_fast.reference}


def _load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


_VALIDATOR = jsonschema_rs.validator_for(_load_schema())


def assert_valid(events: list[dict]) -> None:
    """Every event validates against the events/v1 schema (all errors reported)."""
    for ev in events:
        errors = [f"{e.instance_path}: {e.message}" for e in _VALIDATOR.iter_errors(ev)]
        assert not errors, f"schema-invalid event {ev!r}: {errors}"


def shared_params(paths: list[Path]) -> list[Any]:
    """The parameters of a test over files of ``../shared``: the files, or (where it is absent)
    one skipped parameter that says why, rather than pytest's "got empty parameter set"."""
    if paths:
        return list(paths)
    return [pytest.param(None, id="no-shared", marks=pytest.mark.skip(reason=NO_SHARED))]


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip(NO_SHARED)
    return SHARED


@pytest.fixture(scope="session")
def event_schema() -> dict:
    return _load_schema()


@pytest.fixture(scope="session")
def validator():
    return _VALIDATOR


@pytest.fixture(params=list(IMPLS), ids=list(IMPLS))
def impl(request):
    """The native package and the pure-Python reference, both with normalize/Normalizer."""
    return IMPLS[request.param]


def both(data, dialect="auto", **budgets):
    """Normalize with native and reference, assert they agree, return the events."""
    native = checkfu_fast.normalize(data, dialect, **budgets)
    ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert native == ref, _diff(native, ref)
    return native


def _diff(native: list[dict], ref: list[dict]) -> str:
    lines = [f"native: {len(native)} events, reference: {len(ref)} events"]
    for i in range(max(len(native), len(ref))):
        a = native[i] if i < len(native) else None
        b = ref[i] if i < len(ref) else None
        if a != b:
            lines.append(f"first difference at #{i}:\n  native    = {a!r}\n  reference = {b!r}")
            break
    return "\n".join(lines)


def wide_encoding(data: bytes) -> tuple[str, int] | None:
    """(encoding, BOM length) when a whole stream is UTF-16/UTF-32 by docs/events.md §Framing.

    An oracle written from the docs, independent of both implementations' incremental code: a
    BOM, or the NUL pattern of the first code unit (RFC 8259 §8.1 / RFC 4627 §3) with a
    non-zero ASCII character.
    """
    h = data[:4]

    def ascii_(b: int) -> bool:
        return 0 < b < 0x80

    if h == b"\xff\xfe\x00\x00":
        return "UTF-32LE", 4
    if h[:2] == b"\xff\xfe":
        return "UTF-16LE", 2
    if h[:2] == b"\xfe\xff":
        return "UTF-16BE", 2
    if h == b"\x00\x00\xfe\xff":
        return "UTF-32BE", 4
    if len(h) == 4 and h[:3] == b"\x00\x00\x00" and ascii_(h[3]):
        return "UTF-32BE", 0
    if len(h) >= 2 and h[0] == 0 and ascii_(h[1]):
        return "UTF-16BE", 0
    if len(h) == 4 and ascii_(h[0]) and h[1:] == b"\x00\x00\x00":
        return "UTF-32LE", 0
    if len(h) >= 2 and ascii_(h[0]) and h[1] == 0:
        return "UTF-16LE", 0
    return None


def assert_wide_stream(events: list[dict], data: bytes) -> dict:
    """A UTF-16/UTF-32 stream gives exactly one error/stream_is_utf16 event covering it all."""
    found = wide_encoding(data)
    assert found is not None, data[:8]
    (ev,) = events
    assert (ev["kind"], ev["subtype"], ev["position"], ev["seq"]) == (
        "error",
        "stream_is_utf16",
        0,
        0,
    ), ev
    assert ev["error"]["code"] == "stream_is_utf16"
    assert ev["error"]["errorKind"] == "semantic"
    assert (ev["encoding"], ev["streamBytes"]) == (found[0], len(data))
    assert ev["parsed"] is None
    return ev


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path_factory, monkeypatch):
    """``checkfu-fast report`` keeps a cache under ``$XDG_CACHE_HOME``: each test (and the
    processes it starts) gets its own, never the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
