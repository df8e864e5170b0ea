"""Redaction of secrets in what a turn reports (docs/oneshot.md section 3, "Hygiene").

``redactor(env)`` builds a function that replaces, in a string:

1. every value of ``env`` (the harness's environment) that is at least ``MIN_VALUE_CHARS``
   characters long, except the values of the plain settings in ``NOT_SECRET`` (``PATH``,
   ``HOME``, ``LANG``, ``LC_*``, ...): a shorter value cannot be told from ordinary text;
2. text that looks like a credential whatever its source (``TOKEN_RULES``):
   ``sk-…`` API keys (OpenAI, Anthropic), GitHub tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``,
   ``ghr_``, ``github_pat_``), AWS access key ids (``AKIA``/``ASIA`` + 16), the credential
   after ``Bearer``, and long opaque keys: 48 or more hex digits mixing digits and letters, or 40
   or more base64/base64url characters mixing upper case, lower case and digits (no ``/``, so
   paths survive; a run of one letter such as ``aaaa…`` is no key).

by ``[redacted]``. ``redact_deep(value, redact)`` applies it to every string inside a JSON-like
value (dict values, list items; keys are left alone); the observers apply it to each
observation's ``payload`` and to ``last_response``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

MARK = "[redacted]"
MIN_VALUE_CHARS = 8
NOT_SECRET = frozenset(
    {"PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "PWD", "SHELL", "USER", "LOGNAME", "TMPDIR"}
)
TOKEN_RULES: tuple[tuple[str, str], ...] = (
    ("api_key", r"\bsk-[A-Za-z0-9_-]{16,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("bearer", r"(?<=\bBearer )[A-Za-z0-9._~+/=-]{8,}"),
    (
        "hex_key",
        r"(?<![0-9A-Za-z])(?=[0-9a-fA-F]*[0-9])(?=[0-9a-fA-F]*[a-fA-F])"
        r"[0-9a-fA-F]{48,}(?![0-9A-Za-z])",
    ),
    (
        "base64_key",
        r"(?<![A-Za-z0-9+_-])(?=[A-Za-z0-9+_-]*[A-Z])(?=[A-Za-z0-9+_-]*[a-z])"
        r"(?=[A-Za-z0-9+_-]*[0-9])[A-Za-z0-9+_-]{40,}={0,2}",
    ),
)
_TOKENS = re.compile("|".join(f"(?:{rule})" for _, rule in TOKEN_RULES))

Redactor = Callable[[str], str]


def _secret_name(name: str) -> bool:
    return name not in NOT_SECRET and not name.startswith("LC_")


def redactor(env: Mapping[str, str] | None = None) -> Redactor:
    """A function ``str -> str`` hiding the values of ``env`` and secret-looking tokens."""
    values = sorted(
        {
            v
            for k, v in (env or {}).items()
            if isinstance(v, str) and len(v) >= MIN_VALUE_CHARS and _secret_name(str(k))
        },
        key=len,
        reverse=True,  # the longest first: a value containing another is hidden whole
    )
    literal = re.compile("|".join(re.escape(v) for v in values)) if values else None

    def redact(text: str) -> str:
        if literal is not None:
            text = literal.sub(MARK, text)
        return _TOKENS.sub(MARK, text)

    return redact


def redact_deep(value: Any, redact: Redactor) -> Any:
    """``value`` with ``redact`` applied to every string in it (new containers; keys kept)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_deep(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_deep(v, redact) for v in value]
    return value


def redact_bytes(data: bytes, redact: Redactor) -> bytes:
    """``redact`` over bytes (e.g. a stderr tail): decoded with ``surrogateescape`` so that
    invalid UTF-8 survives unchanged."""
    return redact(data.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


__all__ = ["MARK", "NOT_SECRET", "TOKEN_RULES", "redact_bytes", "redact_deep", "redactor"]
