"""oneshot-v1 sections 1 and 2: contract validation and exchange planning (docs/oneshot.md)."""

from __future__ import annotations

import json

import pytest

from checkfu_fast.oneshot import ContractError, TurnRequest, plan_exchange, validate_contract
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
