"""oneshot-v1 section 2: contract + turn request -> the process exchange (a pure function)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ContractError
from . import _schema
from .contract import (
    CONTRACT_MAX_DEPTH,
    MALFORMED,
    PLACEHOLDER,
    PRIOR_STATE_MAX_NODES,
    REQUEST_MAX_DEPTH,
    check_resolved_argv,
    compact_json,
    scan_json,
)

DEFAULT_STAGING_ROOT = "/run/checkfu/oneshot"
PROMPT_FILE = "prompt.txt"
SCHEMA_FILE = "output-schema.json"


@dataclass(frozen=True)
class TurnRequest:
    """One turn: the prompt, the state the previous turn returned (or None), an answer schema."""

    prompt: str
    prior_state: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.prompt, str):
            raise ContractError(MALFORMED, "/prompt", "request.prompt", "prompt must be a string")
        # the prompt goes to the harness as UTF-8 (stdin or a staged file): no lone surrogate
        scan_json(self.prompt, "/prompt", max_depth=1, depth_rule="request.depth")
        if self.prior_state is not None:
            scan_json(
                self.prior_state,
                "/prior_state",
                max_depth=CONTRACT_MAX_DEPTH,
                depth_rule="request.depth",
                max_nodes=PRIOR_STATE_MAX_NODES,
                nodes_rule="request.prior_state",
                nodes_ptr="/prior_state",
            )
            errors = _schema.sorted_errors(_schema.state_validator(), self.prior_state)
            if errors:
                e = errors[0]
                raise ContractError(
                    MALFORMED,
                    "/prior_state" + _schema.pointer(e.instance_path),
                    "request.prior_state",
                    e.message,
                )
        if isinstance(self.output_schema, dict):
            scan_json(
                self.output_schema,
                "/output_schema",
                max_depth=REQUEST_MAX_DEPTH,
                depth_rule="request.depth",
            )
        if self.output_schema is not None and not isinstance(self.output_schema, dict):
            raise ContractError(
                MALFORMED,
                "/output_schema",
                "request.output_schema",
                "output_schema must be a JSON object or null",
            )


def check_request(request: Any) -> None:
    """A ``TurnRequest``, or ``ContractError`` in words."""
    if not isinstance(request, TurnRequest):
        what = type(request).__name__
        hint = " (wrap the prompt: TurnRequest(prompt))" if isinstance(request, str) else ""
        raise ContractError(
            MALFORMED,
            "",
            "request.type",
            f"the turn request must be a TurnRequest, not a {what}{hint}",
        )


def staged_path(root: str, name: str) -> str:
    return root.rstrip("/") + "/" + name if root != "/" else "/" + name


def plan_exchange(
    contract: dict[str, Any], request: TurnRequest, staging_root: str = DEFAULT_STAGING_ROOT
) -> dict[str, Any]:
    """The exchange of the vector schema, without ``stdout``; ``last_response`` left ``""``.

    ``contract`` must already be validated (``validate_contract``). Nothing here touches the
    file system, the clock or the environment.
    """
    check_request(request)
    staged: list[dict[str, str]] = []
    if contract["prompt_transport"] == "argv_path":
        prompt_path = staged_path(staging_root, PROMPT_FILE)
        staged.append({"path": prompt_path, "content": request.prompt})
        argv = [a.replace(PLACEHOLDER, prompt_path) for a in contract["argv"]]
        stdin: str | None = None
    else:
        argv = list(contract["argv"])
        stdin = request.prompt
    if request.prior_state is not None and contract.get("resume_flag") is not None:
        argv.append(contract["resume_flag"])
    flag = contract.get("output_schema_flag")
    if request.output_schema is not None and flag is not None:
        text = compact_json(request.output_schema)
        argv.append(flag)
        if contract.get("output_schema_transport") == "argv_path":
            schema_path = staged_path(staging_root, SCHEMA_FILE)
            staged.append({"path": schema_path, "content": text})
            argv.append(schema_path)
        else:
            argv.append(text)
    check_resolved_argv(argv)
    prior = request.prior_state
    return {
        "prompt": request.prompt,
        "argv": argv,
        "stdin": stdin,
        "staged_files": staged,
        "output_schema": request.output_schema,
        "prior_state": prior,
        "resulting_state": {
            "schema_version": 1,
            "turn": int(prior["turn"]) + 1 if prior is not None else 1,
            "last_response": "",
        },
    }
