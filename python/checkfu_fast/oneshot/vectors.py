"""oneshot-v1 section 5: replay author-kit vector files and diff them precisely."""

from __future__ import annotations

import copy
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..errors import ContractError
from . import _schema
from .contract import load_json, validate_contract
from .observe import observe
from .plan import DEFAULT_STAGING_ROOT, TurnRequest, plan_exchange

MISSING = "<missing>"
STUB = Path(__file__).with_name("stub.py")


@dataclass
class VectorReport:
    index: int
    name: str
    diffs: list[tuple[str, Any, Any]] = field(default_factory=list)  # (pointer, expected, actual)
    problems: list[str] = field(default_factory=list)  # rejected contract, schema violations

    @property
    def ok(self) -> bool:
        return not self.diffs and not self.problems


@dataclass
class FileReport:
    path: str
    error: str | None = None  # unreadable or invalid file: no vector was replayed
    vectors: list[VectorReport] = field(default_factory=list)
    # after SHOWN_FAILURES failing vectors the rest are replayed and counted, not kept
    more: int = 0
    more_failed: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.more_failed and all(v.ok for v in self.vectors)

    def lines(self) -> list[str]:
        """The runner's output for this file (docs/oneshot.md section 5)."""
        if self.error is not None:
            return [f"ERROR {self.path}: {self.error}"]
        out = []
        for v in self.vectors:
            out.append(f"{'ok  ' if v.ok else 'FAIL'} {self.path} #{v.index} {v.name}")
            out += [f"  {p}" for p in v.problems]
            for pointer, expected, actual in v.diffs:
                out.append(f"  {pointer or '/'}: expected {_show(expected)} actual {_show(actual)}")
        if self.more:
            out.append(
                f"... and {self.more} more vector(s), {self.more_failed} failing "
                f"(details of the first {SHOWN_FAILURES} failing vectors only)"
            )
        return out


# Failing vectors whose details a file's report keeps (memory and output stay bounded on a
# file of 200,000 bad vectors); the rest are counted.
SHOWN_FAILURES = 50


def _show(value: Any) -> str:
    if value is MISSING:
        return cast(str, MISSING)  # `value is MISSING` makes mypy see Any
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def diff(expected: Any, actual: Any, pointer: str = "") -> list[tuple[str, Any, Any]]:
    """Every differing JSON pointer. ``1`` and ``1.0`` differ; so do ``true`` and ``1``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for key in list(expected) + [k for k in actual if k not in expected]:
            p = f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"
            out += diff(expected.get(key, MISSING), actual.get(key, MISSING), p)
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        out = []
        for i in range(max(len(expected), len(actual))):
            e = expected[i] if i < len(expected) else MISSING
            a = actual[i] if i < len(actual) else MISSING
            out += diff(e, a, f"{pointer}/{i}")
        return out
    if type(expected) is type(actual) and expected == actual:
        return []
    return [(pointer, expected, actual)]


def check_vector_file(path: str | os.PathLike[str], *, live: bool = False) -> FileReport:
    """Validate a vector file against the seed schema and replay every vector in it."""
    report = FileReport(str(path))
    try:
        doc = load_json(Path(path).read_bytes(), "vector file")
    except OSError as exc:
        report.error = f"cannot read: {exc.strerror or exc}"
        return report
    except ContractError as exc:
        report.error = exc.detail
        return report
    found = _first_file_error(doc)
    if found is not None:
        where, message = found
        report.error = f"not a valid oneshot-v1 vector file at {where or '/'}: {message}"
        return report
    failed = 0
    for i, vector in enumerate(doc["vectors"]):
        v = check_vector(i, vector, live=live)
        if failed < SHOWN_FAILURES:
            report.vectors.append(v)
            failed += not v.ok
        else:
            report.more += 1
            report.more_failed += not v.ok
    return report


def _first_file_error(doc: Any) -> tuple[str, str] | None:
    """The file's first schema error in document order, as ``(pointer, message)``. The vectors
    are checked one at a time and the check stops at the first bad one: a file of 200,000 bad
    vectors costs one vector's errors, not 200,000 (the schema puts no constraint on the
    ``vectors`` array itself, only on its items)."""
    vectors = doc.get("vectors") if isinstance(doc, dict) else None
    if not isinstance(vectors, list):
        errors = _schema.sorted_errors(_schema.file_validator(), doc)
        return (_schema.pointer(errors[0].instance_path), errors[0].message) if errors else None
    keys = list(doc)
    errors = _schema.sorted_errors(_schema.file_validator(), {**doc, "vectors": []})
    outside = (_schema.pointer(errors[0].instance_path), errors[0].message) if errors else None
    path = list(errors[0].instance_path) if errors else []
    if errors and (not path or keys.index(path[0]) < keys.index("vectors")):
        return outside  # the document as a whole (a missing key ...) or a key before vectors
    validator = _schema.vector_validator()
    for i, vector in enumerate(vectors):
        found = _schema.sorted_errors(validator, vector)
        if found:
            return f"/vectors/{i}" + _schema.pointer(found[0].instance_path), found[0].message
    return outside


def check_vector(index: int, vector: dict[str, Any], *, live: bool = False) -> VectorReport:
    report = VectorReport(index, vector["name"])
    want = vector["exchange"]
    try:
        contract = validate_contract(vector["authoring"])
        request = TurnRequest(want["prompt"], want["prior_state"], want["output_schema"])
        if live:
            exchange, observations = _live(contract, request, want["stdout"])
        else:
            exchange = plan_exchange(contract, request)
            observations, state = observe(contract, request, want["stdout"])
            exchange["resulting_state"] = state
            exchange["stdout"] = want["stdout"]
    except ContractError as exc:
        report.problems.append(f"rejected: {exc}")
        return report
    validator = _schema.observation_validator()
    for j, obs in enumerate(observations):
        for err in _schema.sorted_errors(validator, obs)[:1]:
            where = f"/normalized_observations/{j}" + _schema.pointer(err.instance_path)
            report.problems.append(f"{where}: not a valid observation: {err.message}")
    expected_obs = vector["normalized_observations"]
    if live:
        expected_obs, observations = _comparable_turns(expected_obs, observations)
    report.diffs += diff(want, exchange, "/exchange")
    report.diffs += diff(expected_obs, observations, "/normalized_observations")
    return report


def _comparable_turns(expected: list[Any], actual: list[Any]) -> tuple[list[Any], list[Any]]:
    """Live runs always measure ``turn``: compare it only where the vector has one, and never
    its ``wall_time_ms``."""
    expected, actual = copy.deepcopy(expected), copy.deepcopy(actual)
    if expected and actual and actual[-1].get("type") == "observation.finished":
        want = expected[-1].get("payload", {}) if isinstance(expected[-1], dict) else {}
        got = actual[-1]["payload"]
        if "turn" not in want or not isinstance(want.get("turn"), dict):
            got.pop("turn", None)
        elif isinstance(got.get("turn"), dict):
            want["turn"].pop("wall_time_ms", None)
            got["turn"].pop("wall_time_ms", None)
    return expected, actual


def _live(
    contract: dict[str, Any], request: TurnRequest, stdout: str
) -> tuple[dict[str, Any], list[Any]]:
    """Run the stub harness for real and map what it saw back to the default staging root."""
    from .executor import minimal_environment
    from .turn import run_turn

    with tempfile.TemporaryDirectory(prefix="checkfu-live-") as tmp:
        out_file, record_file = os.path.join(tmp, "stdout"), os.path.join(tmp, "record.json")
        Path(out_file).write_bytes(stdout.encode("utf-8", "surrogatepass"))
        env = minimal_environment(
            {"CHECKFU_STUB_STDOUT": out_file, "CHECKFU_STUB_RECORD": record_file}
        )
        live_contract = dict(contract, working_directory=None)
        result = run_turn(
            live_contract,
            request,
            env=env,
            entrypoint=sys.executable,
            entrypoint_prefix=(str(STUB),),
            deadline_s=60.0,
        )
        try:
            record = json.loads(Path(record_file).read_text("utf-8"))
        except (OSError, ValueError):
            record = {"argv": None, "stdin": None, "staged_files": None}
    root = result.staging_dir

    def unmap(s: Any) -> Any:
        return s.replace(root, DEFAULT_STAGING_ROOT) if isinstance(s, str) else s

    exchange = {
        "prompt": request.prompt,
        "argv": [unmap(a) for a in record["argv"] or []],
        "stdin": record["stdin"],
        "staged_files": [
            {"path": unmap(f["path"]), "content": f["content"]}
            for f in record["staged_files"] or []
        ],
        "output_schema": request.output_schema,
        "prior_state": request.prior_state,
        "resulting_state": result.resulting_state,
        "stdout": result.process.stdout.decode("utf-8", "surrogateescape"),
    }
    return exchange, result.observations
