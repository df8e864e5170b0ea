"""Exceptions raised by checkfu_fast, shared by the native and the reference paths.

Bad *input bytes* never raise: they become error/status events. Exceptions are for misuse
(unknown dialect, bad budget values, wrong argument types). Every class has a stable ``code``.
"""

from __future__ import annotations


class CheckfuError(Exception):
    """Base class; ``code`` is stable across releases."""

    code = "checkfu"


class UnknownDialect(CheckfuError, ValueError):
    code = "dialect.unknown"


class DialectNotImplemented(CheckfuError, NotImplementedError):
    code = "dialect.not_implemented"


class InvalidOption(CheckfuError, ValueError):
    code = "option.invalid"


class MappingError(CheckfuError, ValueError):
    """A dialect mapping file is malformed; the message names the file and JSON pointer."""

    code = "mapping.invalid"


class ContractError(CheckfuError, ValueError):
    """A oneshot-v1 contract or turn request is rejected before anything runs.

    ``code`` is the seed schema's error type (``validation.malformed`` or
    ``validation.payload_too_large``), ``pointer`` the RFC 6901 JSON pointer of the offending
    value, ``rule`` a stable short name of the rule (docs/oneshot.md section 1).
    """

    code = "validation.malformed"

    def __init__(self, code: str, pointer: str, rule: str, detail: str) -> None:
        self.code = code
        self.pointer = pointer
        self.rule = rule
        self.detail = detail
        super().__init__(f"{code} at {pointer or '/'}: {rule}: {detail}")


class OutputIsInput(CheckfuError, ValueError):
    """An output path (or stdout) is the same file as an input: nothing is written
    (docs/errors.md)."""

    code = "output.is_input"


class DamagedInput(CheckfuError, OSError):
    """A compressed input (gzip or zstd) is damaged or truncated; the message names the file.
    An ``OSError``, so every command reports it per file and goes on with the next one."""

    code = "input.damaged"
