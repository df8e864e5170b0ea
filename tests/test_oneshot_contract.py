"""oneshot-v1 sections 1 and 2: contract validation and exchange planning (docs/oneshot.md)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkfu_fast.oneshot import (
    ContractError,
    TurnRequest,
    _schema,
    plan_exchange,
    validate_contract,
)
from checkfu_fast.oneshot.contract import inspection_work
from conftest import SHARED, needs_shared

SEED = SHARED / "seeds" / "000_8c5f085f5044fed1.txt"
ANSWER = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
STATE = {"schema_version": 1, "turn": 4, "last_response": "previous answer"}


def claude(**over):
    c = {
        "image": "ghcr.io/acme/claude-code:2.1.0",
        "entrypoint": "/usr/local/bin/claude",
        "protocol": "oneshot-v1",
        "argv": ["-p", "--output-format", "stream-json", "--verbose"],
        "prompt_transport": "stdin",
        "output_mode": "stream_json",
        "resume_flag": "--continue",
    }
    c.update(over)
    return {k: v for k, v in c.items() if v is not ...}


def rejected(contract) -> ContractError:
    with pytest.raises(ContractError) as info:
        validate_contract(contract)
    return info.value


@needs_shared
def test_seed_copy_is_verbatim():
    from checkfu_fast.oneshot import _schema

    assert _schema.seed() == json.loads(SEED.read_text("utf-8"))


def test_valid_contracts_are_returned_unchanged():
    c = claude(working_directory="/workspace", platform={"os": "linux", "architecture": "amd64"})
    assert validate_contract(c) is c
    text = json.dumps(c).encode()
    assert validate_contract(text) == c


@pytest.mark.parametrize(
    ("contract", "code", "pointer", "rule"),
    [
        (claude(entrypoint="claude"), "validation.malformed", "/entrypoint", "schema.pattern"),
        (
            claude(entrypoint="/usr/../bin/sh"),
            "validation.malformed",
            "/entrypoint",
            "schema.pattern",
        ),
        (claude(extra=1), "validation.malformed", "", "schema.additionalProperties"),
        (claude(image=...), "validation.malformed", "", "schema.required"),
        (claude(arguments={"a": 1}), "validation.malformed", "/arguments", "schema.anyOf"),
        (claude(mcp_delivery=[]), "validation.malformed", "/mcp_delivery", "schema.anyOf"),
        (claude(argv=["a"] * 257), "validation.payload_too_large", "/argv", "schema.maxItems"),
        (claude(argv=["x" * 65537]), "validation.payload_too_large", "/argv/0", "schema.maxLength"),
        # 30,000 two-byte characters pass maxLength (characters) but not the byte rule
        (
            claude(argv=["-p", "é" * 40000]),
            "validation.payload_too_large",
            "/argv/1",
            "argv.item_bytes",
        ),
        (
            claude(argv=["é" * 30000] * 3),
            "validation.payload_too_large",
            "/argv",
            "argv.total_bytes",
        ),
        (claude(argv=["a\x00b"]), "validation.malformed", "/argv/0", "schema.pattern"),
        (
            claude(resume_flag="é" * 40000),
            "validation.payload_too_large",
            "/resume_flag",
            "argv.item_bytes",
        ),
        (claude(resume_flag=""), "validation.malformed", "/resume_flag", "schema.anyOf"),
        (
            claude(output_schema_flag="--json-schema"),
            "validation.malformed",
            "/output_schema_flag",
            "output_schema.pairing",
        ),
        (
            claude(output_schema_transport="argv_json"),
            "validation.malformed",
            "/output_schema_transport",
            "output_schema.pairing",
        ),
        (
            claude(prompt_transport="argv_path"),
            "validation.malformed",
            "/argv",
            "prompt.placeholder",
        ),
        (
            claude(argv=["-p", "{prompt_path}"]),
            "validation.malformed",
            "/argv/1",
            "prompt.placeholder",
        ),
        (claude(output_mode="json"), "validation.malformed", "/output_mode", "schema.enum"),
        (
            claude(model_wire_dialects=[]),
            "validation.malformed",
            "/model_wire_dialects",
            "schema.anyOf",
        ),
    ],
)
def test_rejections_name_code_pointer_and_rule(contract, code, pointer, rule):
    err = rejected(contract)
    assert (err.code, err.pointer, err.rule) == (code, pointer, rule)
    assert str(err).startswith(f"{code} at {pointer or '/'}: {rule}: ")


def test_argv_total_bytes_boundary():
    # 2 items of 65,535 bytes + terminators = 131,072: allowed; one more byte is not
    ok = claude(argv=["a" * 65535, "b" * 65535])
    validate_contract(ok)
    err = rejected(claude(argv=["a" * 65535, "b" * 65535, ""]))
    assert err.rule == "argv.total_bytes"


def test_json_text_is_strict():
    err = rejected(b'{"image": "a", "image": "b"}')
    assert err.code == "validation.malformed" and "duplicate key" in str(err)
    assert rejected(b"{not json").rule == "json"


def nested(depth: int) -> dict:
    """An object schema whose containers nest ``depth`` deep (the root counts 1)."""
    schema: dict = {}
    for _ in range(depth - 1):
        schema = {"not": schema}
    return schema


@pytest.mark.parametrize("schema", [True, False, None, {}, {"type": "object"}, nested(32)])
def test_configuration_schema_accepted(schema):
    validate_contract(claude(configuration_schema=schema))


def test_configuration_schema_depth_names_the_deep_container():
    err = rejected(claude(configuration_schema=nested(33)))
    assert err.rule == "configuration_schema.depth"
    assert err.pointer == "/configuration_schema" + "/not" * 32


def test_configuration_schema_nodes_boundary():
    # root object + properties object + n property schemas (each an object with 1 string)
    def schema(n):
        return {"properties": {f"p{i}": {"type": "string"} for i in range(n)}}

    validate_contract(claude(configuration_schema=schema(1999)))  # 2 + 2*1999 = 4000 nodes
    err = rejected(claude(configuration_schema=schema(2000)))  # 4002 nodes
    assert (err.code, err.rule) == ("validation.payload_too_large", "configuration_schema.nodes")


def test_configuration_schema_bytes():
    err = rejected(claude(configuration_schema={"description": "x" * 65536}))
    assert (err.pointer, err.rule) == ("/configuration_schema", "configuration_schema.bytes")


def test_inspection_work_follows_local_refs_each_time():
    # 1 root + 1 "$defs" + 1 "a" object + 1 "type" string + "$ref" string... counted below
    schema = {"$defs": {"a": {"type": "string"}}, "items": {"$ref": "#/$defs/a"}}
    # walk: root, $defs, a, a/type, items, items/$ref, then the target a, a/type again
    assert inspection_work(schema) == 8
    chain = {"$defs": {"a": {"type": "string"}}}
    chain["allOf"] = [{"$ref": "#/$defs/a"}] * 1000  # 1,000 refs -> about 4,000 work
    err = rejected(claude(configuration_schema=chain))
    assert err.rule == "configuration_schema.inspection_work"


def test_ref_cycle_exhausts_the_budget_instead_of_looping():
    cyclic = {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a",
    }
    err = rejected(claude(configuration_schema=cyclic))
    assert err.rule == "configuration_schema.inspection_work"
    self_ref = {"properties": {"next": {"$ref": "#"}}}
    assert (
        rejected(claude(configuration_schema=self_ref)).rule
        == "configuration_schema.inspection_work"
    )


def test_unresolvable_local_ref():
    err = rejected(claude(configuration_schema={"items": {"$ref": "#/$defs/missing"}}))
    assert (err.code, err.pointer, err.rule) == (
        "validation.malformed",
        "/configuration_schema/items/$ref",
        "configuration_schema.ref",
    )


def test_remote_refs_are_not_followed_or_fetched():
    validate_contract(claude(configuration_schema={"$ref": "https://example.invalid/s.json"}))


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        ({"type": "strnig"}, "/configuration_schema/type"),
        ({"properties": {"a": {"minimum": "3"}}}, "/configuration_schema/properties/a/minimum"),
        ({"required": "a"}, "/configuration_schema/required"),
        ({"$schema": "https://example.invalid/schema"}, "/configuration_schema/$schema"),
    ],
)
def test_configuration_schema_is_meta_validated(schema, pointer):
    err = rejected(claude(configuration_schema=schema))
    assert (err.code, err.pointer, err.rule) == (
        "validation.malformed",
        pointer,
        "configuration_schema.meta",
    )


def test_draft7_configuration_schema():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}
    validate_contract(claude(configuration_schema=schema))


# -- planning -------------------------------------------------------------------------------


def argv_path(**over):
    return claude(
        argv=["-p", "--prompt-file", "{prompt_path}", "--also={prompt_path}:{prompt_path}"],
        prompt_transport="argv_path",
        output_schema_flag="--json-schema",
        output_schema_transport="argv_path",
        **over,
    )


def test_stdin_prompt_is_byte_for_byte_and_argv_untouched():
    prompt = "  {prompt} $HOME \"quoted\" 'single' `tick` \\n\r\n\t trailing  \n\n"
    c = validate_contract(claude(argv=["-p", "$HOME", "{x}", "--", "a b"]))
    ex = plan_exchange(c, TurnRequest(prompt))
    assert ex == {
        "prompt": prompt,
        "argv": ["-p", "$HOME", "{x}", "--", "a b"],
        "stdin": prompt,
        "staged_files": [],
        "output_schema": None,
        "prior_state": None,
        "resulting_state": {"schema_version": 1, "turn": 1, "last_response": ""},
    }


def test_argv_path_replaces_every_placeholder_and_stages_prompt_then_schema():
    c = validate_contract(argv_path())
    ex = plan_exchange(c, TurnRequest("what?", STATE, ANSWER))
    p = "/run/checkfu/oneshot/prompt.txt"
    schema_text = (
        '{"type":"object","properties":{"answer":{"type":"string"}},'
        '"required":["answer"],"additionalProperties":false}'
    )
    assert ex["argv"] == [
        "-p",
        "--prompt-file",
        p,
        f"--also={p}:{p}",
        "--continue",
        "--json-schema",
        "/run/checkfu/oneshot/output-schema.json",
    ]
    assert ex["stdin"] is None
    assert ex["staged_files"] == [
        {"path": p, "content": "what?"},
        {"path": "/run/checkfu/oneshot/output-schema.json", "content": schema_text},
    ]
    assert ex["resulting_state"] == {"schema_version": 1, "turn": 5, "last_response": ""}


def test_argv_json_schema_inline_keeps_order_and_utf8():
    c = validate_contract(
        claude(output_schema_flag="--output-schema", output_schema_transport="argv_json")
    )
    schema = {"type": "object", "description": "réponse ✓", "properties": {"b": {}, "a": {}}}
    ex = plan_exchange(c, TurnRequest("hi", None, schema))
    assert ex["argv"][-2:] == [
        "--output-schema",
        '{"type":"object","description":"réponse ✓","properties":{"b":{},"a":{}}}',
    ]
    assert ex["staged_files"] == []


def test_resume_flag_only_with_prior_state_and_flag():
    with_flag = validate_contract(claude())
    assert plan_exchange(with_flag, TurnRequest("x"))["argv"][-1] == "--verbose"
    assert plan_exchange(with_flag, TurnRequest("x", STATE))["argv"][-1] == "--continue"
    rebuild = validate_contract(claude(resume_flag=None))
    assert plan_exchange(rebuild, TurnRequest("x", STATE))["argv"][-1] == "--verbose"


def test_output_schema_without_flag_appends_nothing():
    c = validate_contract(claude())
    ex = plan_exchange(c, TurnRequest("x", None, ANSWER))
    assert ex["argv"] == c["argv"] and ex["output_schema"] == ANSWER


def test_custom_staging_root():
    c = validate_contract(argv_path())
    ex = plan_exchange(c, TurnRequest("x"), staging_root="/tmp/abc/")
    assert ex["argv"][2] == "/tmp/abc/prompt.txt"


def test_planned_argv_over_budget_is_rejected():
    c = validate_contract(
        claude(output_schema_flag="--output-schema", output_schema_transport="argv_json")
    )
    big = {"type": "object", "description": "x" * 70000}
    with pytest.raises(ContractError) as info:
        plan_exchange(c, TurnRequest("x", None, big))
    assert info.value.code == "validation.payload_too_large"
    assert info.value.pointer == f"/argv/{len(c['argv']) + 1}"
    assert "argv_path" in str(info.value)


@pytest.mark.parametrize(
    ("state", "pointer"),
    [
        ({"schema_version": 2, "turn": 1, "last_response": ""}, "/prior_state/schema_version"),
        ({"schema_version": 1, "turn": 0, "last_response": ""}, "/prior_state/turn"),
        ({"schema_version": 1, "turn": 1}, "/prior_state"),
        ({"schema_version": 1, "turn": 1, "last_response": "", "x": 1}, "/prior_state"),
    ],
)
def test_bad_prior_state(state, pointer):
    with pytest.raises(ContractError) as info:
        TurnRequest("x", state)
    assert (info.value.code, info.value.pointer) == ("validation.malformed", pointer)


def deep_dict(depth: int) -> dict:
    d: dict = {}
    root = d
    for _ in range(depth):
        d["not"] = {}
        d = d["not"]
    return root


@pytest.mark.parametrize(
    ("contract", "pointer", "rule"),
    [
        (
            lambda: claude(configuration_schema=deep_dict(100_000)),
            "/configuration_schema",
            "configuration_schema.depth",
        ),
        (lambda: claude(arguments=[deep_dict(100_000)]), "/arguments", "contract.depth"),
        (lambda: '{"a":' * 100_000 + "1" + "}" * 100_000, "", "json.depth"),
    ],
)
def test_hostile_nesting_is_rejected_not_a_recursion_error(contract, pointer, rule):
    err = rejected(contract())
    assert (err.code, err.rule) == ("validation.payload_too_large", rule)
    assert err.pointer.startswith(pointer)


def test_hostile_output_schema_nesting():
    with pytest.raises(ContractError) as info:
        TurnRequest("x", None, deep_dict(100_000))
    assert (info.value.code, info.value.rule) == ("validation.payload_too_large", "request.depth")


def test_float_turn_in_prior_state_gives_an_integer_turn():
    ex = plan_exchange(validate_contract(claude()), TurnRequest("x", dict(STATE, turn=4.0)))
    assert ex["resulting_state"]["turn"] == 5 and type(ex["resulting_state"]["turn"]) is int


# -- hostile values: only ContractError, bounded cost ---------------------------------------


# strings that often hold lone surrogates (hypothesis' text() never makes them)
odd_text = st.lists(
    st.one_of(
        st.characters(codec="utf-8"),
        st.integers(0xD800, 0xDFFF).map(chr),
        st.sampled_from(["{prompt_path}", "\x00", "#", "#/", "~", "/", "$ref", "é"]),
    ),
    max_size=8,
).map("".join)
refs = st.one_of(
    odd_text.map(lambda t: "#/" + t),
    st.sampled_from(["#", "#/", "#/$defs", "#/$defs/a", "#/properties/0", "#/~2", "#%2F", "#a"]),
    st.sampled_from(["https://example.invalid/s.json", "urn:x", "", "\ud800", "#/$defs/\udc00"]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),
    # 4,000 to 5,001 digits (beyond 4,300, Python refuses to print one; built lazily so that
    # hypothesis never has to repr one)
    st.tuples(st.sampled_from([3999, 4000, 5000]), st.booleans()).map(
        lambda t: -(10 ** t[0]) if t[1] else 10 ** t[0]
    ),
    st.floats(),  # NaN and infinities included: not JSON numbers
    odd_text,
)
json_ish = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(odd_text, inner, max_size=4),
        st.dictionaries(st.sampled_from(["$ref", "$defs", "$id", "$schema"]), refs, max_size=2),
        st.builds(lambda r, d: {"$ref": r, "$defs": {"a": d}}, refs, inner),
    ),
    max_leaves=12,
)
not_json = st.sampled_from([object(), {1, 2}, b"bytes", {1: "int key"}, 1j])
members = st.sampled_from(
    [*sorted(_schema.seed()["$defs"]["CreateOneShotHarnessReleaseContract"]["properties"]), "extra"]
)


def _only_contract_errors(fn, *args):
    try:
        return fn(*args)
    except ContractError as exc:
        str(exc)  # the message itself must be printable text
        exc.pointer.encode("utf-8")
        return None


@given(
    edits=st.dictionaries(members, st.one_of(json_ish, not_json), max_size=3),
    as_text=st.booleans(),
    prompt=odd_text,
    state=st.one_of(st.none(), json_ish, st.just(dict(STATE, last_response="\udfff"))),
    schema=st.one_of(st.none(), json_ish, not_json),
)
def test_hostile_values_raise_only_contract_error(edits, as_text, prompt, state, schema):
    contract = claude(output_schema_flag="--schema", output_schema_transport="argv_json")
    contract.update(edits)
    if as_text:
        # ensure_ascii escapes lone surrogates as \udXXX, which decode back to them
        with contextlib.suppress(TypeError, ValueError):
            contract = json.dumps(contract)
    valid = _only_contract_errors(validate_contract, contract)
    request = _only_contract_errors(TurnRequest, prompt, state, schema)
    if valid is not None and request is not None:
        ex = _only_contract_errors(plan_exchange, valid, request)
        if ex is not None:  # everything planned can be handed to a process as UTF-8
            for a in ex["argv"]:
                a.encode("utf-8")
            (ex["stdin"] or "").encode("utf-8")


@given(config=json_ish)
def test_hostile_configuration_schemas_raise_only_contract_error(config):
    _only_contract_errors(validate_contract, claude(configuration_schema=config))
    _only_contract_errors(validate_contract, claude(configuration_schema={"properties": config}))


@pytest.mark.parametrize(
    ("where", "value", "pointer", "rule"),
    [
        ("argv", ["-p", "\ud800"], "/argv/1", "json.unicode"),
        ("image", "img\udc00", "/image", "json.unicode"),
        ("resume_flag", "--\udbff", "/resume_flag", "json.unicode"),
        ("extra\ud800", 1, "", "json.unicode"),
        (
            "configuration_schema",
            {"$ref": "#/\ud800"},
            "/configuration_schema/$ref",
            "json.unicode",
        ),
        (
            "configuration_schema",
            {"maximum": float("nan")},
            "/configuration_schema/maximum",
            "json.number",
        ),
        ("platform", {"os": object()}, "/platform/os", "json.type"),
        (
            "configuration_schema",
            {"maximum": 10**5000},
            "/configuration_schema/maximum",
            "json.number",
        ),
        ("argv", [-(10**4000)], "/argv/0", "json.number"),
        ("argv", {"a", "b"}, "/argv", "json.type"),
        ("configuration_schema", {1: {}}, "/configuration_schema", "json.type"),
    ],
)
def test_non_json_and_lone_surrogates_are_malformed(where, value, pointer, rule):
    err = rejected(claude(**{where: value}))
    assert (err.code, err.pointer, err.rule) == ("validation.malformed", pointer, rule)


def test_lone_surrogates_in_the_request_are_malformed():
    for args, pointer in [
        (("a\ud800b",), "/prompt"),
        (("x", dict(STATE, last_response="\udc00")), "/prior_state/last_response"),
        (("x", None, {"properties": {"\ud800": {}}}), "/output_schema/properties"),
        (("x", None, {"enum": [float("inf")]}), "/output_schema/enum/0"),
    ]:
        with pytest.raises(ContractError) as info:
            TurnRequest(*args)
        assert (info.value.code, info.value.pointer) == ("validation.malformed", pointer)
    # JSON text escapes decode to lone surrogates too
    err = rejected(json.dumps(claude(argv=["\udc80"])))
    assert (err.pointer, err.rule) == ("/argv/0", "json.unicode")


@pytest.mark.parametrize(
    ("field", "value", "pointer", "rule"),
    [
        ("resume_flag", "x" * 65_537, "/resume_flag", "schema.maxLength"),
        ("output_schema_flag", "x" * 65_537, "/output_schema_flag", "schema.maxLength"),
        ("working_directory", "/" + "w" * 4_096, "/working_directory", "schema.maxLength"),
        ("model_wire_dialects", ["openai_chat"] * 5, "/model_wire_dialects", "schema.maxItems"),
    ],
)
def test_oversize_nullable_fields_are_payload_too_large(field, value, pointer, rule):
    err = rejected(claude(**{field: value}, output_schema_transport="argv_json"))
    assert (err.code, err.pointer, err.rule) == ("validation.payload_too_large", pointer, rule)
    # a wrong value of the right type is still malformed
    small = {"resume_flag": "", "output_schema_flag": "", "working_directory": "rel"}
    if field in small:
        err = rejected(claude(**{field: small[field]}, output_schema_transport="argv_json"))
        assert (err.code, err.rule) == ("validation.malformed", "schema.anyOf")


def one_mb(shape):
    c = claude()
    if shape == "argv":
        c["argv"] = [[i] for i in range(125_000)]
    elif shape == "dialects":
        c["model_wire_dialects"] = [[i] for i in range(125_000)]
    elif shape == "platform":
        c["platform"] = {f"k{i}": i for i in range(65_000)}
    elif shape == "config":
        c["configuration_schema"] = {"properties": {f"p{i}": {} for i in range(100_000)}}
    else:
        c["image"] = "i" * 1_100_000  # within no schema limit but the contract's bytes
    return c


@pytest.mark.parametrize(
    ("shape", "rule", "pointer"),
    [
        ("argv", "contract.nodes", "/argv"),
        ("dialects", "contract.nodes", "/model_wire_dialects"),
        ("platform", "contract.nodes", "/platform"),
        ("config", "configuration_schema.nodes", "/configuration_schema"),
        ("image", "contract.bytes", ""),
    ],
)
def test_a_megabyte_contract_is_rejected_by_the_budget_walk(shape, rule, pointer):
    # measured in docs/oneshot.md: these took seconds and hundreds of MiB inside jsonschema-rs
    c = one_mb(shape)
    err = rejected(c)
    assert (err.code, err.rule, err.pointer) == ("validation.payload_too_large", rule, pointer)
    text = json.dumps(c, separators=(",", ":"))
    assert len(text) >= 900_000
    err = rejected(text)
    want = "contract.bytes" if shape == "image" else "json.nodes"
    assert (err.code, err.rule) == ("validation.payload_too_large", want)


def test_text_budgets():
    err = rejected(b" " * (4 << 20) + b"{}")
    assert (err.code, err.rule) == ("validation.payload_too_large", "json.bytes")
    err = rejected("[" * 65 + "]" * 65)
    assert (err.code, err.rule) == ("validation.payload_too_large", "json.depth")
    # a valid contract at the largest legitimate shape passes all budgets
    big = claude(
        argv=["a" * 500] * 256,
        configuration_schema={"properties": {f"p{i}": {"type": "string"} for i in range(1999)}},
        model_wire_dialects=["openai_chat", "anthropic_messages"],
    )
    assert validate_contract(json.dumps(big, indent=2)) == big


def test_contract_nodes_boundary():
    def count(v):  # JSON values: every container and scalar, keys not counted
        if isinstance(v, dict):
            return 1 + sum(count(x) for x in v.values())
        if isinstance(v, list):
            return 1 + sum(count(x) for x in v)
        return 1

    validate_contract(claude(argv=["x"] * 256))
    c = claude(platform=None, x=[])
    c["x"] = list(range(1024 - count(c)))
    assert count(c) == 1024  # the walk passes, the schema rejects the unknown member
    assert rejected(c).rule == "schema.additionalProperties"
    c["x"].append(0)
    err = rejected(c)
    assert (err.code, err.rule, err.pointer) == (
        "validation.payload_too_large",
        "contract.nodes",
        "/x",
    )
