"""Shipped oneshot-v1 contracts for real coding-agent CLIs (docs/contracts.md).

``get(name, **options)`` returns a validated contract (a ``dict``) for ``claude``, ``codex``,
``cursor``, ``opencode``, ``pi`` or ``grok``, built from the CLI's documented non-interactive
flags (package data: ``<name>.json`` beside this file; every flag's source is cited in
docs/contracts.md). The returned dict is a :class:`ShippedContract`: ``.name`` and ``.dialect``
say which CLI it drives, and ``stream_turn``/``run_turn``/``observe`` take the dialect from it
when none is passed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from importlib import resources
from typing import Any

from ...errors import ContractError
from ..contract import MALFORMED, validate_contract

NAMES = ("claude", "codex", "cursor", "opencode", "pi", "grok")
_PART = r"(?!\.{1,2}(?:/|$))[A-Za-z0-9._-]+"  # the schema's entrypoint pattern
_ABSOLUTE = re.compile(rf"^/{_PART}(?:/{_PART})*$")


class ShippedContract(dict[str, Any]):
    """A contract from :func:`get`: a plain ``dict`` (JSON-serializable as is) that also says
    which CLI it drives (``name``) and which events/v1 dialect reads its stdout (``dialect``)."""

    name: str
    dialect: str

    def __init__(self, contract: dict[str, Any], name: str, dialect: str) -> None:
        super().__init__(contract)
        self.name = name
        self.dialect = dialect


_LOADED: dict[str, dict[str, Any]] = {}


def _data(name: str) -> dict[str, Any]:
    """The package data of a shipped contract (read once)."""
    data = _LOADED.get(name)
    if data is None:
        text = resources.files(__name__).joinpath(f"{name}.json").read_text(encoding="utf-8")
        data = _LOADED[name] = json.loads(text)
    return data


def names() -> tuple[str, ...]:
    """The CLIs a contract ships for."""
    return NAMES


def options(name: str) -> dict[str, list[str]]:
    """The CLI-specific options of :func:`get` for ``name`` and the arguments each adds
    (``{}`` stands for the option's value)."""
    return {k: list(v) for k, v in _data(_check_name(name))["options"].items()}


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or name not in NAMES:
        raise ContractError(
            MALFORMED,
            "",
            "contracts.name",
            f"no shipped contract is named {name!r}; the names are {', '.join(NAMES)}",
        )
    return name


def get(
    name: str,
    *,
    entrypoint: str | None = None,
    image: str | None = None,
    working_directory: str | None = None,
    resume: bool = True,
    extra_args: Iterable[str] = (),
    **cli_options: Any,
) -> dict[str, Any]:
    """A valid oneshot-v1 contract for the CLI ``name`` (a :class:`ShippedContract`).

    - ``entrypoint``: the CLI's absolute path; by default the one found on ``PATH``, else the
      usual install path (``/usr/local/bin/<binary>``).
    - ``image``: recorded in the result, never run (default ``local/<name>``).
    - ``working_directory``: the directory the CLI runs in. Every CLI here except codex finds
      the session to continue by its working directory, so ``resume_flag`` is set only when a
      fixed ``working_directory`` is given (without one each turn runs in a fresh private
      directory and the continuation is ``rebuild_only``); ``resume=False`` never sets it.
    - ``extra_args``: more arguments, put after the shipped ones.
    - CLI-specific options (``options(name)``): e.g. ``model="sonnet"`` for claude adds
      ``--model sonnet``; a flag option (``force=True`` for cursor) adds its flag.

    Raises ``ContractError`` (in words) for an unknown name or option, a bad value, or an
    entrypoint that is not an absolute path.
    """
    data = _data(_check_name(name))
    contract: dict[str, Any] = dict(data["contract"])
    argv: list[str] = list(contract["argv"])
    known = data["options"]
    for key, value in cli_options.items():
        if key not in known:
            choices = ", ".join(sorted(known)) or "none"
            raise ContractError(
                MALFORMED,
                "",
                "contracts.option",
                f"{name} has no option {key!r}; its options are {choices} (plus entrypoint, "
                "image, working_directory, resume, extra_args)",
            )
        template: list[str] = known[key]
        takes_value = any("{}" in t for t in template)
        if value is None or value is False:
            continue
        if takes_value:
            if isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            if not isinstance(value, (str, int)) or isinstance(value, bool) or value == "":
                raise ContractError(
                    MALFORMED,
                    "",
                    "contracts.option",
                    f"option {key!r} of {name} takes a non-empty string, not {value!r}",
                )
            argv += [t.replace("{}", str(value)) for t in template]
        elif value is True:
            argv += template
        else:
            raise ContractError(
                MALFORMED,
                "",
                "contracts.option",
                f"option {key!r} of {name} is a flag: pass True or False, not {value!r}",
            )
    if isinstance(extra_args, (str, bytes)):
        raise ContractError(
            MALFORMED,
            "/argv",
            "contracts.extra_args",
            "extra_args must be a list of arguments, not one string",
        )
    for arg in extra_args:
        if not isinstance(arg, str):
            raise ContractError(
                MALFORMED,
                "/argv",
                "contracts.extra_args",
                f"every extra argument must be a string, not {arg!r}",
            )
        argv.append(arg)
    contract["argv"] = argv
    if entrypoint is None:
        found = shutil.which(data["binary"])
        if found is not None:
            found = os.path.realpath(found)
        entrypoint = found if found is not None and _ABSOLUTE.match(found) else None
    if entrypoint is not None:
        contract["entrypoint"] = entrypoint
    if image is not None:
        contract["image"] = image
    if working_directory is not None:
        contract["working_directory"] = working_directory
    if not resume or (data["resume_needs_working_directory"] and working_directory is None):
        contract["resume_flag"] = None
    validated = validate_contract(contract)
    return ShippedContract(validated, name, data["dialect"])


def dialect_of(contract: Any) -> str | None:
    """The dialect of a shipped contract (from :func:`get`), else ``None``."""
    dialect = getattr(contract, "dialect", None)
    return dialect if isinstance(dialect, str) else None
