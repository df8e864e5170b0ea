"""Per-line budgets (spec §2): max_depth, max_nodes, checked before parsing, both paths agree."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import checkfu_fast
import checkfu_fast.reference
from checkfu_fast import reference
from conftest import IMPLS, assert_valid


def run(data: bytes, dialect: str = "codex", **budgets) -> list[dict]:
    native = checkfu_fast.normalize(data, dialect, **budgets)
    ref = checkfu_fast.reference.normalize(data, dialect, **budgets)
    assert native == ref, f"native={native!r}\nreference={ref!r}"
    assert_valid(native)
    return native


def assert_budget_error(ev: dict, code: str, raw: str, position: int = 0) -> None:
    assert ev["kind"] == "error"
    assert ev["subtype"] == code
    assert ev["error"]["code"] == code
    assert ev["error"]["errorKind"] == "semantic"
    assert ev["error"]["message"]
    assert ev["parsed"] is None
    assert ev["raw"] == raw
    assert ev["position"] == position


def arrays(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def objects(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


# -- depth ------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [arrays, objects], ids=["arrays", "objects"])
@pytest.mark.parametrize("max_depth", [1, 2, 5, 64, 512])
def test_depth_exactly_at_limit_passes_one_more_fails(make, max_depth: int):
    ok = make(max_depth)
    bad = make(max_depth + 1)
    budgets = {} if max_depth == 64 else {"max_depth": max_depth}
    ev = run(ok + b"\n" + bad + b"\n", **budgets)
    assert len(ev) == 2
    assert (ev[0]["kind"], ev[0]["subtype"]) == ("status", "unknown")
    assert ev[0]["parsed"] is not None
    assert_budget_error(ev[1], "too_deep", bad.decode(), position=len(ok) + 1)


def test_default_max_depth_is_64():
    ev = run(arrays(64) + b"\n" + arrays(65))
    assert [e["subtype"] for e in ev] == ["unknown", "too_deep"]


def test_mixed_nesting_depth():
    # {"a":[{"b":[1]}]} has depth 4
    line = b'{"a":[{"b":[1]}]}'
    assert run(line, max_depth=4)[0]["subtype"] == "unknown"
    assert_budget_error(run(line, max_depth=3)[0], "too_deep", line.decode())


def test_brackets_inside_strings_do_not_count():
    line = b'["[[[[[[[[", "{{{{{{{{"]'
    ev = run(line, max_depth=1)
    assert ev[0]["subtype"] == "unknown"
    assert ev[0]["parsed"] == ["[[[[[[[[", "{{{{{{{{"]


def test_escaped_quote_inside_string_does_not_end_it():
    line = b'["\\"[[[[", 1]'
    ev = run(line, max_depth=1)
    assert ev[0]["parsed"] == ['"[[[[', 1]


def test_very_deep_nesting_never_recurses():
    for line in (b"[" * 200_000, b"[" * 200_000 + b"]" * 200_000, b'{"a":' * 100_000):
        ev = run(line + b"\n")
        assert_budget_error(ev[0], "too_deep", line.decode())


def test_depth_counted_on_sibling_containers_resets():
    line = b"[" + b",".join([arrays(3)] * 50) + b"]"  # depth 4, wide
    assert run(line, max_depth=4)[0]["subtype"] == "unknown"
    assert run(line, max_depth=3)[0]["subtype"] == "too_deep"


# -- nodes ------------------------------------------------------------------------------------


def flat(n_scalars: int, item: bytes = b"0") -> bytes:
    return b"[" + b",".join([item] * n_scalars) + b"]"


@pytest.mark.parametrize("max_nodes", [1, 2, 3, 10, 1000])
def test_nodes_exactly_at_limit_pass_one_more_fails(max_nodes: int):
    ok = flat(max_nodes - 1)  # the array plus max_nodes-1 scalars = max_nodes nodes
    bad = flat(max_nodes)  # max_nodes + 1 nodes
    ev = run(ok + b"\n" + bad, max_nodes=max_nodes)
    assert ev[0]["subtype"] == "unknown"
    assert ev[0]["parsed"] == [0] * (max_nodes - 1)
    assert_budget_error(ev[1], "too_many_nodes", bad.decode(), position=len(ok) + 1)


def test_huge_array_default_budget():
    # default max_nodes = 1_000_000: the array + 999_999 scalars passes, one more scalar fails
    ok = flat(999_999)
    bad = flat(1_000_000)
    ev = run(ok + b"\n" + bad + b"\n")
    assert ev[0]["subtype"] == "unknown"
    assert len(ev[0]["parsed"]) == 999_999
    assert_budget_error(ev[1], "too_many_nodes", bad.decode(), position=len(ok) + 1)


@pytest.mark.parametrize(
    ("line", "nodes"),
    [
        (b'{"a":1,"b":2}', 5),  # object + 2 keys + 2 values
        (b'{"a":{"b":"c"}}', 5),  # keys and string values are nodes
        (b'[true,false,null,"x",1.5e3,-0]', 7),
        (b'["a\\"b","c\\\\"]', 3),  # escaped quotes stay inside one string
        (b"[[],{},[[]]]", 5),
        (b'{"":""}', 3),
    ],
)
def test_node_counting(line: bytes, nodes: int):
    assert run(line, max_nodes=nodes)[0]["subtype"] == "unknown"
    assert_budget_error(run(line, max_nodes=nodes - 1)[0], "too_many_nodes", line.decode())


def test_deep_check_before_nodes_when_both_exceeded_at_once():
    # the very first container crosses both limits (depth 2 > 1 at node 2 > 1)
    line = b"[[1]]"
    ev = run(line, max_depth=1, max_nodes=1)
    assert ev[0]["subtype"] == "too_deep"


# -- budget errors win over syntax errors -----------------------------------------------------


@pytest.mark.parametrize(
    ("line", "budgets", "code"),
    [
        (b"[" * 65 + b"x", {}, "too_deep"),
        (b"[" * 65 + b"]" * 70, {}, "too_deep"),  # unbalanced: still too deep first
        (b"[[[[[", {"max_depth": 4}, "too_deep"),
        (b"[1,2,3,4,5", {"max_nodes": 5}, "too_many_nodes"),  # unterminated
        (b"[1 2 3 4 5 6]", {"max_nodes": 5}, "too_many_nodes"),  # missing commas
        (b'{"a":1,"b":2,"c":NaN}', {"max_nodes": 5}, "too_many_nodes"),
        (b"[1,2,3,4,5,6,\xff]", {"max_nodes": 5}, "invalid_utf8"),  # bytes are decoded first
    ],
)
def test_budget_wins_over_later_syntax_error(line: bytes, budgets: dict, code: str):
    ev = run(line + b"\n", **budgets)
    assert len(ev) == 1
    assert ev[0]["subtype"] == code
    assert ev[0]["error"]["errorKind"] == "semantic"
    assert ev[0]["parsed"] is None


def test_under_budget_syntax_error_is_invalid_json():
    ev = run(b"[1,2,3", max_nodes=5)
    assert ev[0]["subtype"] == "invalid_json"


def test_budgets_only_apply_to_json_candidates():
    # a line not starting with { or [ is not scanned: a long banner is fine with max_nodes=1
    ev = run(b"a b c d e f g h", max_nodes=1, max_depth=1)
    assert ev[0]["subtype"] == "non_json"


@pytest.mark.parametrize("dialect", ["claude", "cursor", "codex", "auto"])
def test_budget_error_same_in_every_dialect(dialect: str):
    line = b'{"type":"assistant","message":{"content":[{"type":"text","text":"hi"}]}}'
    ev = run(line + b"\n", dialect, max_depth=2)
    assert [e["subtype"] for e in ev][-1] == "too_deep"
    assert ev[-1]["raw"] == line.decode()


def test_budget_error_in_chunks():
    data = flat(50) + b"\n" + arrays(10) + b"\n" + b"[1]"
    whole = run(data, max_nodes=20, max_depth=5)
    assert [e["subtype"] for e in whole] == ["too_many_nodes", "too_deep", "unknown"]
    for impl in IMPLS.values():
        n = impl.Normalizer("codex", max_nodes=20, max_depth=5)
        out = []
        for i in range(0, len(data), 3):
            out += n.feed(data[i : i + 3])
        assert out + n.finish() == whole


@given(
    body=st.text(alphabet='[]{}",: 1ab\\\t', max_size=40),
    max_depth=st.integers(1, 4),
    max_nodes=st.integers(1, 8),
)
def test_budget_vs_syntax_precedence_agrees(body: str, max_depth: int, max_nodes: int) -> None:
    """The native parser counts while parsing; the reference scans first. Same verdicts."""
    data = ("[" + body + "\n").encode()
    kw = {"max_depth": max_depth, "max_nodes": max_nodes}
    assert checkfu_fast.normalize(data, "codex", **kw) == reference.normalize(data, "codex", **kw)
