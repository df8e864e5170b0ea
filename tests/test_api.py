"""Public API contract: dialect names, exceptions, budgets, input types, native/reference split."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import checkfu_fast
import checkfu_fast.reference
from checkfu_fast import CheckfuError, DialectNotImplemented, InvalidOption, UnknownDialect
from conftest import IMPLS, ROOT

NINE = ("claude", "cursor", "codex", "north", "pi", "grok", "canary", "opencode", "solweb")
NOT_YET = ("north", "pi", "grok", "canary", "opencode", "solweb")
TS = b'{"type":"turn.started"}\n'


def test_dialects_has_the_nine_names():
    assert tuple(checkfu_fast.DIALECTS) == NINE
    assert tuple(checkfu_fast.reference.DIALECTS) == NINE
    assert tuple(checkfu_fast._native.DIALECTS) == NINE
    assert "auto" not in checkfu_fast.DIALECTS


def test_implementation_is_native():
    assert checkfu_fast.IMPLEMENTATION == "native"


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
@pytest.mark.parametrize("name", ["nope", "Claude", "", "auto ", "codex\x00"])
def test_unknown_dialect(impl, name: str):
    for call in (lambda: impl.normalize(b"", name), lambda: impl.Normalizer(name)):
        with pytest.raises(ValueError) as info:
            call()
        assert isinstance(info.value, UnknownDialect)
        assert isinstance(info.value, CheckfuError)
        assert info.value.code == "dialect.unknown"
        message = str(info.value)
        for d in (*NINE, "auto"):
            assert d in message


def _implemented(impl, name: str) -> bool:
    try:
        impl.Normalizer(name)
    except NotImplementedError as exc:
        assert isinstance(exc, DialectNotImplemented)
        assert exc.code == "dialect.not_implemented"
        assert name in str(exc)
        return False
    return True


@pytest.mark.parametrize("name", NOT_YET)
def test_later_dialects_are_not_implemented_or_work_on_both_paths(name: str):
    """north … solweb started as NotImplementedError; once a dialect lands, it must land on both
    paths at once (a name the reference accepts but the native core refuses is a split)."""
    native, ref = _implemented(checkfu_fast, name), _implemented(checkfu_fast.reference, name)
    assert native == ref, f"{name}: native implemented={native}, reference implemented={ref}"
    for impl in IMPLS.values():
        if native:
            assert isinstance(impl.normalize(TS, name), list)
        else:
            with pytest.raises(NotImplementedError):
                impl.normalize(TS, name)


def test_not_yet_implemented_raises_dialect_not_implemented():
    pending = [d for d in NOT_YET if not _implemented(checkfu_fast.reference, d)]
    for name in pending:
        for impl in IMPLS.values():
            with pytest.raises(NotImplementedError) as info:
                impl.normalize(TS, name)
            assert isinstance(info.value, DialectNotImplemented)
            assert isinstance(info.value, CheckfuError)


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
@pytest.mark.parametrize("name", ["claude", "cursor", "codex", "auto"])
def test_implemented_dialects_work(impl, name: str):
    assert isinstance(impl.normalize(TS, name), list)
    assert impl.normalize(b"", name) == []


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
@pytest.mark.parametrize(
    "budgets",
    [
        {"max_line_bytes": 0},
        {"max_line_bytes": -1},
        {"max_line_bytes": (1 << 40) + 1},
        {"max_depth": 0},
        {"max_depth": -5},
        {"max_depth": 513},
        {"max_depth": 10**30},
        {"max_nodes": 0},
        {"max_nodes": -1},
        {"max_nodes": (1 << 40) + 1},
    ],
)
def test_bad_budget_values_raise_value_error(impl, budgets: dict):
    with pytest.raises(ValueError) as info:
        impl.normalize(TS, "codex", **budgets)
    assert isinstance(info.value, InvalidOption)
    assert next(iter(budgets)) in str(info.value)
    with pytest.raises(ValueError):
        impl.Normalizer("codex", **budgets)


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
@pytest.mark.parametrize(
    "budgets",
    [{"max_depth": 2.0}, {"max_nodes": "10"}, {"max_line_bytes": True}, {"max_depth": None}],
)
def test_bad_budget_types_raise_type_error(impl, budgets: dict):
    with pytest.raises(TypeError):
        impl.normalize(TS, "codex", **budgets)


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_budget_bounds_are_inclusive(impl):
    ev = impl.normalize(b"[]", "codex", max_line_bytes=1 << 40, max_depth=512, max_nodes=1 << 40)
    assert ev[0]["subtype"] == "unknown"
    ev = impl.normalize(b"[]", "codex", max_line_bytes=2, max_depth=1, max_nodes=1)
    assert ev[0]["subtype"] == "unknown"


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_dialect_must_be_str(impl):
    with pytest.raises(TypeError):
        impl.normalize(TS, None)  # type: ignore[arg-type]


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_str_input_same_as_bytes(impl):
    text = (
        '\ufeff{"type":"turn.started"}\r\nbanner é 😀\n'
        '{"type":"item.completed","item":{"type":"agent_message","text":"中"}}'
    )
    assert impl.normalize(text, "codex") == impl.normalize(text.encode("utf-8"), "codex")
    assert impl.normalize(text) == impl.normalize(text.encode("utf-8"))


def test_bytes_like_inputs():
    data = TS * 3
    want = checkfu_fast.normalize(data, "codex")
    assert checkfu_fast.normalize(bytearray(data), "codex") == want
    assert checkfu_fast.normalize(memoryview(data), "codex") == want
    n = checkfu_fast.Normalizer("codex")
    assert n.feed(bytearray(data[:30])) + n.feed(memoryview(data[30:])) + n.finish() == want


def test_wrong_data_type_raises_type_error():
    with pytest.raises(TypeError):
        checkfu_fast.normalize(123, "codex")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        checkfu_fast.Normalizer("codex").feed("text")  # type: ignore[arg-type]


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_finish_is_idempotent_and_feed_after_finish_fails(impl):
    n = impl.Normalizer("codex")
    assert n.feed(b"") == []
    first = n.finish()
    assert first == []
    assert n.finish() == []
    with pytest.raises(ValueError):
        n.feed(b"x")


@pytest.mark.parametrize("impl", list(IMPLS.values()), ids=list(IMPLS))
def test_seq_continues_across_feeds(impl):
    n = impl.Normalizer("codex")
    a = n.feed(TS + TS[:5])
    b = n.feed(TS[5:] + TS)
    c = n.finish()
    assert [e["seq"] for e in a + b + c] == [0, 1, 2]
    assert [e["position"] for e in a + b + c] == [0, 24, 48]


def test_events_are_plain_dicts_with_required_keys():
    for ev in checkfu_fast.normalize(TS + b"hi\n", "codex"):
        assert type(ev) is dict
        assert list(ev)[:6] == ["v", "seq", "position", "dialect", "kind", "subtype"]
        assert list(ev)[-2:] == ["raw", "parsed"]


def test_reference_never_imports_native_in_subprocess():
    script = textwrap.dedent(
        """
        import sys
        sys.modules["checkfu_fast._native"] = None  # any import of it now raises ImportError
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import checkfu_fast
        import checkfu_fast.reference as ref
        assert checkfu_fast.IMPLEMENTATION == "reference", checkfu_fast.IMPLEMENTATION
        assert any("native core unavailable" in str(w.message) for w in caught)
        ev = ref.normalize(b'{"type":"turn.started"}\\n', "codex")
        assert ev[0]["subtype"] == "turn_started"
        # the package-level functions fall back to the reference
        assert checkfu_fast.normalize(b'{"type":"turn.started"}\\n', "codex") == ev
        assert sys.modules["checkfu_fast._native"] is None
        print("ok")
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


def test_reference_source_never_mentions_native():
    ref_dir = ROOT / "python" / "checkfu_fast" / "reference"
    files = sorted(ref_dir.rglob("*.py"))
    assert files
    for path in files:
        assert "_native" not in path.read_text(encoding="utf-8"), path


def test_library_calls_do_not_import_the_twin():
    """A runner's first call checks its options in ``checkfu_fast.options`` (the twin's own
    table and checks): the pure-Python twin, about half the package's import time, is never
    imported by the native path, good options or bad."""
    script = textwrap.dedent(
        """
        import sys
        import checkfu_fast as c
        line = b'{"type":"turn.started"}\\n'
        assert c.normalize(line, "codex", fields="lean")[0]["subtype"] == "turn_started"
        assert c.normalize_jsonl(line, "codex").startswith(b'{"v":')
        n = c.Normalizer("auto", fields=["text"])
        assert [e["dialect"] for e in n.feed(line) + n.finish()] == ["codex"]
        assert c.validate_journal(b"") == []
        for bad in ({"dialect": "bogus"}, {"max_depth": 0}, {"fields": ["nope"]}):
            try:
                c.normalize(line, **bad)
            except ValueError as e:
                print(type(e).__name__, e)
        print("checkfu_fast.reference" in sys.modules)
        """
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    *errors, imported = res.stdout.splitlines()
    assert imported == "False"
    expected = []
    for bad in ({"dialect": "bogus"}, {"max_depth": 0}, {"fields": ["nope"]}):
        with pytest.raises(ValueError) as info:
            checkfu_fast.reference.normalize(b"", **bad)
        expected.append(f"{type(info.value).__name__} {info.value}")
    assert errors == expected
