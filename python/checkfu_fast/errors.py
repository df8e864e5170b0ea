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
