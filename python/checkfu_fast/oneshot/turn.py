"""One live turn: validate, stage, run the harness, observe (docs/oneshot.md section 3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .contract import validate_contract
from .executor import ProcessResult, StagedFile, private_staging_dir, run_process
from .observe import Observation, observe
from .plan import TurnRequest, plan_exchange

DEFAULT_DEADLINE_S = 600.0
DEFAULT_OUTPUT_CAP = 64 * 1024 * 1024


@dataclass(frozen=True)
class TurnResult:
    observations: list[Observation]
    resulting_state: dict[str, Any]
    exchange: dict[str, Any]  # as planned for the private staging dir, plus "stdout"
    staging_dir: str  # removed when run_turn returns
    process: ProcessResult


def run_turn(
    contract: Any,
    request: TurnRequest,
    *,
    env: Mapping[str, str] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    output_cap: int = DEFAULT_OUTPUT_CAP,
    dialect: Any = "auto",
    implementation: str = "native",
    entrypoint: str | None = None,
    entrypoint_prefix: tuple[str, ...] = (),
    **executor_options: Any,
) -> TurnResult:
    """Run one turn of the harness for real and return its observations and new state.

    ``entrypoint`` overrides the contract's (e.g. a host path for a container image's binary);
    ``entrypoint_prefix`` are arguments put before the planned argv (e.g. a script path when
    the entrypoint is an interpreter). Raises ``ContractError`` before anything runs.
    """
    contract = validate_contract(contract)
    with private_staging_dir() as root:
        exchange = plan_exchange(contract, request, staging_root=root)
        staged = [
            StagedFile(name=f["path"][len(root) + 1 :], content=f["content"].encode("utf-8"))
            for f in exchange["staged_files"]
        ]
        stdin = exchange["stdin"]
        process = run_process(
            entrypoint or contract["entrypoint"],
            [*entrypoint_prefix, *exchange["argv"]],
            stdin=stdin.encode("utf-8", "surrogatepass") if stdin is not None else None,
            staging_dir=root,
            staged_files=staged,
            cwd=contract.get("working_directory"),
            env=env,
            deadline_s=deadline_s,
            output_cap=output_cap,
            **executor_options,
        )
    observations, state = observe(
        contract,
        request,
        process.stdout,
        process=process,
        dialect=dialect,
        implementation=implementation,
    )
    exchange["stdout"] = process.stdout.decode("utf-8", "replace")
    exchange["resulting_state"] = state
    return TurnResult(observations, state, exchange, root, process)
