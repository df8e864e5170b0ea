"""Budgets and JSON parsing of one line. Mirror of ``rust/budget.rs`` and ``rust/parse.rs``.

The contract (docs/events.md §Budgets, §Parsing):

* ``scan_budget`` measures a JSON candidate lexically (strings, brackets, scalar tokens) before
  anything is parsed, so budget errors win over syntax errors and never depend on validity;
* ``parse`` accepts exactly RFC 8259 (no NaN/Infinity, no overflowing floats); big integers stay
  exact; lone surrogate escapes become U+FFFD and are counted;
* a syntax error is reported as ``(message, byte_offset)`` with this project's own messages,
  identical to the Rust parser's.

The fast path is the stdlib C decoder; the pure-Python ``_Parser`` only runs to locate an error
(or to confirm one the hooks raised), so both paths accept the same documents.
"""

from __future__ import annotations

import json
import re
from typing import Any

WS = b" \t\r\n"

_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\)?|[\[{]|[\]}]|[^\[\]{}",: \t\r\n]+', re.DOTALL
)
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def scan_budget(line: bytes, max_depth: int, max_nodes: int) -> str | None:
    """Return ``"too_deep"``/``"too_many_nodes"`` for the first limit crossed, else None.

    A node is a container, a string (object keys included) or a scalar token.
    """
    depth = 0
    nodes = 0
    for tok in _TOKEN.findall(line):
        c = tok[0]
        if c == 0x5B or c == 0x7B:  # [ {
            depth += 1
            nodes += 1
            if depth > max_depth:
                return "too_deep"
            if nodes > max_nodes:
                return "too_many_nodes"
        elif c == 0x5D or c == 0x7D:  # ] }
            if depth:
                depth -= 1
        else:
            nodes += 1
            if nodes > max_nodes:
                return "too_many_nodes"
    return None


class JsonError(Exception):
    """A syntax error: ``message`` and the 0-based byte ``offset`` in the line."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message, offset)
        self.message = message
        self.offset = offset


class _Reject(Exception):
    """Raised by decoder hooks for values the stdlib accepts but RFC 8259 does not."""


def _parse_constant(name: str) -> Any:
    raise _Reject(name)


def _parse_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _Reject(text)
    return value


_decoder = json.JSONDecoder(parse_constant=_parse_constant, parse_float=_parse_float)


def parse(line: bytes, text: str) -> tuple[Any, int]:
    """Parse one line (``text`` is ``line`` decoded). Returns ``(value, repaired_surrogates)``.

    Raises :class:`JsonError` on invalid JSON.
    """
    try:
        value = _decoder.decode(text)
    except (ValueError, _Reject, RecursionError):
        _Parser(line).run()  # raises JsonError with our message and offset
        raise AssertionError(f"decoders disagree on {line[:80]!r}") from None
    if len(line) > MAX_INT_DIGITS and _LONG_DIGITS.search(line):
        _Parser(line).run()  # raises on an over-long integer literal, else returns
    if _MAYBE_SURROGATE.search(line) is None:
        return value, 0
    counter = [0]
    return _repair(value, counter), counter[0]


def _repair(value: Any, counter: list[int]) -> Any:
    if isinstance(value, str):
        fixed, n = _SURROGATE.subn("\ufffd", value)
        counter[0] += n
        return fixed
    if isinstance(value, list):
        return [_repair(v, counter) for v in value]
    if isinstance(value, dict):
        return {_repair(k, counter): _repair(v, counter) for k, v in value.items()}
    return value


_ESCAPES = b'"\\/bfnrtu'
_HEX = b"0123456789abcdefABCDEF"
_DIGITS = b"0123456789"
# Integers longer than this are rejected ("number out of range"): CPython refuses to build
# ints of more than 4300 digits, and a token count or id never needs more.
MAX_INT_DIGITS = 4000
# a run is only tried from its first digit (the lookbehind), so the search is linear
_LONG_DIGITS = re.compile(rb"(?<![0-9])[0-9]{%d}" % (MAX_INT_DIGITS + 1))


class _Parser:
    """Validating parser that mirrors ``rust/parse.rs`` step for step, to find the first error.

    It builds nothing; it only walks the bytes and raises :class:`JsonError`.
    """

    def __init__(self, data: bytes) -> None:
        self.s = data
        self.i = 0

    def run(self) -> None:
        self.ws()
        self.value()
        self.ws()
        if self.i < len(self.s):
            raise JsonError("trailing characters", self.i)

    def ws(self) -> None:
        s, i, n = self.s, self.i, len(self.s)
        while i < n and s[i] in WS:
            i += 1
        self.i = i

    def value(self) -> None:
        s = self.s
        if self.i >= len(s):
            raise JsonError("unexpected end of input", self.i)
        c = s[self.i]
        if c == 0x7B:
            self.obj()
        elif c == 0x5B:
            self.arr()
        elif c == 0x22:
            self.string()
        elif c == 0x2D or c in _DIGITS:
            self.number()
        elif c in b"tfn":
            self.literal()
        else:
            raise JsonError("expected value", self.i)

    def literal(self) -> None:
        for word in (b"true", b"false", b"null"):
            if self.s.startswith(word, self.i):
                self.i += len(word)
                return
        raise JsonError("invalid literal", self.i)

    def number(self) -> None:
        s, start, n = self.s, self.i, len(self.s)
        i = start
        if s[i] == 0x2D:
            i += 1
        if i >= n or s[i] not in _DIGITS:
            raise JsonError("invalid number", start)
        if s[i] == 0x30:
            i += 1
        else:
            while i < n and s[i] in _DIGITS:
                i += 1
        is_float = False
        if i < n and s[i] == 0x2E:
            i += 1
            if i >= n or s[i] not in _DIGITS:
                raise JsonError("invalid number", start)
            while i < n and s[i] in _DIGITS:
                i += 1
            is_float = True
        if i < n and s[i] in b"eE":
            i += 1
            if i < n and s[i] in b"+-":
                i += 1
            if i >= n or s[i] not in _DIGITS:
                raise JsonError("invalid number", start)
            while i < n and s[i] in _DIGITS:
                i += 1
            is_float = True
        if not is_float and i - start - (s[start] == 0x2D) > MAX_INT_DIGITS:
            raise JsonError("number out of range", start)
        if is_float and float(s[start:i]) in (float("inf"), float("-inf")):
            raise JsonError("number out of range", start)
        self.i = i

    def string(self) -> None:
        s, n = self.s, len(self.s)
        start = self.i
        i = start + 1
        while True:
            if i >= n:
                raise JsonError("unterminated string", start)
            c = s[i]
            if c == 0x22:
                self.i = i + 1
                return
            if c < 0x20:
                raise JsonError("control character in string", i)
            if c == 0x5C:
                if i + 1 >= n:
                    raise JsonError("unterminated string", start)
                e = s[i + 1]
                if e not in _ESCAPES:
                    raise JsonError("invalid escape", i)
                if e == 0x75:
                    hexes = s[i + 2 : i + 6]
                    if len(hexes) < 4 or any(h not in _HEX for h in hexes):
                        raise JsonError("invalid \\u escape", i)
                    i += 6
                else:
                    i += 2
                continue
            i += 1

    def arr(self) -> None:
        self.i += 1
        self.ws()
        if self.i < len(self.s) and self.s[self.i] == 0x5D:
            self.i += 1
            return
        while True:
            self.ws()
            self.value()
            self.ws()
            if self.i >= len(self.s):
                raise JsonError("unexpected end of input", self.i)
            c = self.s[self.i]
            self.i += 1
            if c == 0x5D:
                return
            if c != 0x2C:
                raise JsonError("expected ',' or ']'", self.i - 1)

    def obj(self) -> None:
        self.i += 1
        self.ws()
        if self.i < len(self.s) and self.s[self.i] == 0x7D:
            self.i += 1
            return
        while True:
            self.ws()
            if self.i >= len(self.s):
                raise JsonError("unexpected end of input", self.i)
            if self.s[self.i] != 0x22:
                raise JsonError("expected string key", self.i)
            self.string()
            self.ws()
            if self.i >= len(self.s):
                raise JsonError("unexpected end of input", self.i)
            if self.s[self.i] != 0x3A:
                raise JsonError("expected ':'", self.i)
            self.i += 1
            self.ws()
            self.value()
            self.ws()
            if self.i >= len(self.s):
                raise JsonError("unexpected end of input", self.i)
            c = self.s[self.i]
            self.i += 1
            if c == 0x7D:
                return
            if c != 0x2C:
                raise JsonError("expected ',' or '}'", self.i - 1)
