"""oneshot-v1: the reference one-shot harness wrapper (docs/oneshot.md).

validate_contract(contract)                    section 1, raises ContractError
plan_exchange(contract, TurnRequest(...))      section 2, pure
run_turn(contract, TurnRequest(...))           section 3, runs the harness
stream_turn / astream_turn(...)                section 3, the same, observations live
observe(contract, request, stdout, process)    section 4, deterministic
Observer(contract, request).feed(b).finish()  section 4, the same fold, incremental
check_vector_file(path, live=False)            section 5, the vector runner
contracts.get(name, **options)                 shipped contracts for real CLIs (docs/contracts.md)
"""

from __future__ import annotations

from ..errors import ContractError
from . import contracts
from .contract import validate_contract
from .executor import (
    ProcessResult,
    StagedFile,
    minimal_environment,
    pid_namespace_available,
    run_process,
)
from .observe import Observer, capability_set, observe
from .plan import DEFAULT_STAGING_ROOT, TurnRequest, plan_exchange
from .redact import redactor
from .turn import (
    AsyncTurnStream,
    TurnBudget,
    TurnResult,
    TurnStream,
    astream_turn,
    run_turn,
    stream_turn,
)
from .vectors import FileReport, VectorReport, check_vector_file

__all__ = [
    "DEFAULT_STAGING_ROOT",
    "AsyncTurnStream",
    "ContractError",
    "FileReport",
    "Observer",
    "ProcessResult",
    "StagedFile",
    "TurnBudget",
    "TurnRequest",
    "TurnResult",
    "TurnStream",
    "VectorReport",
    "astream_turn",
    "capability_set",
    "check_vector_file",
    "contracts",
    "minimal_environment",
    "observe",
    "pid_namespace_available",
    "plan_exchange",
    "redactor",
    "run_process",
    "run_turn",
    "stream_turn",
    "validate_contract",
]
