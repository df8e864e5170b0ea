"""Redaction of secrets in what a turn reports (docs/oneshot.md section 3, "Hygiene").

``redactor(env)`` builds a :class:`Redactor`. Called on a string it replaces, by ``[redacted]``:

1. every value of ``env`` (the harness's environment) that is at least ``MIN_VALUE_CHARS``
   characters long, except the values of the plain settings in ``NOT_SECRET`` (``PATH``,
   ``HOME``, ``LANG``, ``LC_*``, ...): a shorter value cannot be told from ordinary text;
2. credentials of known formats whatever their source (``CREDENTIAL_RULES``): ``sk-…`` API
   keys (OpenAI, Anthropic), GitHub tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``,
   ``github_pat_``), AWS access key ids (``AKIA``/``ASIA`` + 16) and the credential after
   ``Bearer``;
3. long opaque keys (``OPAQUE_RULES``): 48 or more hex digits mixing digits and letters, or 40
   or more base64/base64url characters mixing upper case, lower case and digits (no ``/``, so
   paths survive; a run of one letter such as ``aaaa…`` is no key).

Rule 3 is a guess that also matches ids (a Codex call id ``call_…|fc_0d54…`` holds 48 hex
digits): it applies to free text only, the stderr tail and error messages (the redactor called
as a function). Everything else a turn reports, ids included, gets ``Redactor.exact``: rules 1
and 2 only, so ids still join tool calls to their results.

``redact_deep(value, redact)`` applies a rule set to every string inside a JSON-like value:
values, dict keys (a secret used as a key; keys that become equal stay apart with ``#2``,
``#3``…) and numbers whose decimal text holds a secret (they become the redacted string).
``redact_payload`` is what the observers apply to each observation's payload: ``exact``
everywhere, the free-text rules on its ``error.message``. ``redact_bytes(data, redact,
cut=True)`` is for a ring buffer's content (the stderr tail): it also hides the end of a secret
value that the buffer's cut left at its start.
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
CREDENTIAL_RULES: tuple[tuple[str, str], ...] = (
    ("api_key", r"\bsk-[A-Za-z0-9_-]{16,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("aws_access_key_id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("bearer", r"(?<=\bBearer )[A-Za-z0-9._~+/=-]{8,}"),
)
OPAQUE_RULES: tuple[tuple[str, str], ...] = (
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
TOKEN_RULES = CREDENTIAL_RULES + OPAQUE_RULES
_CREDENTIALS = re.compile("|".join(f"(?:{rule})" for _, rule in CREDENTIAL_RULES))
_OPAQUE = re.compile("|".join(f"(?:{rule})" for _, rule in OPAQUE_RULES))


def _secret_name(name: str) -> bool:
    return name not in NOT_SECRET and not name.startswith("LC_")


class Redactor:
    """``redactor(env)``: called as ``str -> str`` it applies every rule (free text);
    :meth:`exact` applies the environment values and the known credential formats only."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.values = sorted(
            {
                v
                for k, v in (env or {}).items()
                if isinstance(v, str) and len(v) >= MIN_VALUE_CHARS and _secret_name(str(k))
            },
            key=len,
            reverse=True,  # the longest first: a value containing another is hidden whole
        )
        self._literal = re.compile("|".join(map(re.escape, self.values))) if self.values else None

    def exact(self, text: str) -> str:
        """The environment's secret values and credentials of known formats (never an id)."""
        if self._literal is not None:
            text = self._literal.sub(MARK, text)
        return _CREDENTIALS.sub(MARK, text)

    def __call__(self, text: str) -> str:
        """Every rule, opaque keys included: for free text (stderr, error messages)."""
        return _OPAQUE.sub(MARK, self.exact(text))

    def cut_start(self, text: str) -> str:
        """``text`` whose start was cut off (a ring buffer): a secret value's end standing at
        its start (any length) is redacted too."""
        lead = 0  # a character the cut split: its last bytes (surrogate escapes) come first
        while lead < 3 and lead < len(text) and "\udc80" <= text[lead] <= "\udcff":
            lead += 1
        for value in self.values:
            for size in range(len(value) - 1, 0, -1):
                if text.startswith(value[-size:], lead):
                    return MARK + text[lead + size :]
        return text


def redactor(env: Mapping[str, str] | None = None) -> Redactor:
    """A :class:`Redactor` hiding the values of ``env`` and secret-looking tokens."""
    return Redactor(env)


def redact_deep(value: Any, redact: Callable[[str], str]) -> Any:
    """``value`` with ``redact`` applied to every string in it, dict keys included, and to the
    decimal text of its numbers (new containers)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = first = redact(k) if isinstance(k, str) else k
            n = 1
            while key in out:  # two keys redacted alike: both kept
                n += 1
                key = f"{first}#{n}"
            out[key] = redact_deep(v, redact)
        return out
    if isinstance(value, list):
        return [redact_deep(v, redact) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = repr(value)
        hidden = redact(text)
        return value if hidden == text else hidden
    return value


def redact_payload(payload: Any, redact: Callable[[str], str]) -> Any:
    """An observation's payload: ``redact.exact`` (when it has one) everywhere, ids included;
    ``redact`` itself (free text) on the error message."""
    exact = getattr(redact, "exact", redact)
    out = redact_deep(payload, exact)
    error = out.get("error") if isinstance(out, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        error["message"] = redact(error["message"])
    return out


def redact_bytes(data: bytes, redact: Callable[[str], str], *, cut: bool = False) -> bytes:
    """``redact`` over bytes (e.g. a stderr tail): decoded with ``surrogateescape`` so that
    invalid UTF-8 survives unchanged. ``cut``: the bytes are the end of a longer stream (a ring
    buffer that dropped its start), so a secret's end at the start is hidden as well."""
    text = data.decode("utf-8", "surrogateescape")
    if cut and isinstance(redact, Redactor):
        text = redact.cut_start(text)
    return redact(text).encode("utf-8", "surrogateescape")


__all__ = [
    "CREDENTIAL_RULES",
    "MARK",
    "NOT_SECRET",
    "OPAQUE_RULES",
    "TOKEN_RULES",
    "Redactor",
    "redact_bytes",
    "redact_deep",
    "redact_payload",
    "redactor",
]
