"""When a rate-limited or failed request may be retried, read from the error message's text.

Mirror of ``rust/retry.rs`` (same table, same scan, same answers; docs/events.md "Retry time").
:func:`parse` returns ``(retry_at, retry_after_ms)``: ``retry_at`` an RFC 3339 UTC time
(``YYYY-MM-DDTHH:MM:SSZ``, ``.mmm`` when the milliseconds are not 0) when the text says *when*,
``retry_after_ms`` an int when it says *how long*; ``None`` for what it does not say. A time
without a date or without a zone ("try again at 12:16 PM", "resets 5am") gives nothing: the
stream does not say which day or zone, and nothing is guessed.

The scan works on the UTF-8 bytes, ASCII-lowercased, left to right. At each position that does
not follow an ASCII letter or digit it tries the triggers in table order (keys, then delay
phrases, then time phrases); the first value of each kind wins.
"""

from __future__ import annotations

from typing import cast

# (trigger, what follows). Keys are checked before phrases, longer keys before their prefixes.
KEYS = (
    (b"retry_after_ms", "ms"),
    (b"retryafterms", "ms"),
    (b"retry_delay_ms", "ms"),
    (b"retrydelayms", "ms"),
    (b"resets_in_seconds", "s"),
    (b"resetsinseconds", "s"),
    (b"retry-after", "header"),
    (b"retry_after", "header"),
    (b"retryafter", "header"),
    (b"resets_at", "epoch"),
    (b"resetsat", "epoch"),
    (b"reset_at", "epoch"),
    (b"resetat", "epoch"),
)
DELAY_PHRASES = (
    b"try again in",
    b"retrying in",
    b"retry in",
    b"retry after",
    b"resets in",
    b"reset in",
    b"available in",
    b"wait",
)
TIME_PHRASES = (
    b"try again at",
    b"try again after",
    b"retry at",
    b"retry after",
    b"resets at",
    b"reset at",
    b"resets",
    b"available at",
    b"until",
)
UNITS = {
    b"ms": 1,
    b"msec": 1,
    b"msecs": 1,
    b"millisecond": 1,
    b"milliseconds": 1,
    b"s": 1000,
    b"sec": 1000,
    b"secs": 1000,
    b"second": 1000,
    b"seconds": 1000,
    b"m": 60_000,
    b"min": 60_000,
    b"mins": 60_000,
    b"minute": 60_000,
    b"minutes": 60_000,
    b"h": 3_600_000,
    b"hr": 3_600_000,
    b"hrs": 3_600_000,
    b"hour": 3_600_000,
    b"hours": 3_600_000,
    b"d": 86_400_000,
    b"day": 86_400_000,
    b"days": 86_400_000,
}
FIRST = frozenset(t[0] for t in (*(k for k, _ in KEYS), *DELAY_PHRASES, *TIME_PHRASES))
MONTHS: tuple[bytes, ...] = (b"jan", b"feb", b"mar", b"apr", b"may", b"jun")
MONTHS += (b"jul", b"aug", b"sep", b"oct", b"nov", b"dec")
MAX_MS = 10**15  # a delay above this (about 31,700 years) is not a delay
MAX_INT_DIGITS = 15
MAX_FRAC_DIGITS = 9


def _digit(c: int) -> bool:
    return 48 <= c <= 57


def _alpha(c: int) -> bool:
    return 97 <= c <= 122 or 65 <= c <= 90


def _alnum(c: int) -> bool:
    return _digit(c) or _alpha(c)


def _at(b: bytes, i: int) -> int:
    return b[i] if i < len(b) else -1


def _spaces(b: bytes, j: int) -> int:
    while _at(b, j) == 32:
        j += 1
    return j


def _digits(b: bytes, j: int, n: int) -> int | None:
    """Exactly ``n`` digits at ``j`` as an int."""
    if j + n > len(b) or not all(_digit(c) for c in b[j : j + n]):
        return None
    return int(b[j : j + n])


def _number(b: bytes, j: int) -> tuple[int, int, int, int] | None:
    """``digits[.digits]`` at ``j``: (integer part, fraction digits as int, their count, end)."""
    k = j
    while _digit(_at(b, k)):
        k += 1
    if k == j or k - j > MAX_INT_DIGITS:
        return None
    whole = int(b[j:k])
    if _at(b, k) == 46 and _digit(_at(b, k + 1)):  # '.'
        f = k + 1
        while _digit(_at(b, f)):
            f += 1
        if f - k - 1 > MAX_FRAC_DIGITS:
            return None
        return whole, int(b[k + 1 : f]), f - k - 1, f
    return whole, 0, 0, k


def _scaled(num: tuple[int, int, int, int], unit: int) -> int:
    whole, frac, n, _ = num
    return cast(int, (whole * 10**n + frac) * unit // 10**n)


def _duration(b: bytes, j: int) -> int | None:
    """``<number> <unit>`` groups (``1h 20m``, ``2 hours and 5 minutes``, ``1m30s``) in ms."""
    j = _spaces(b, j)
    if _at(b, j) == 126:  # '~'
        j = _spaces(b, j + 1)
    elif b.startswith(b"about ", j):
        j = _spaces(b, j + 6)
    total = groups = 0
    while True:
        num = _number(b, j)
        if num is None:
            break
        u = _spaces(b, num[3])
        e = u
        while _alpha(_at(b, e)):
            e += 1
        unit = UNITS.get(b[u:e])
        if unit is None:
            break
        total += _scaled(num, unit)
        groups += 1
        j = e
        while _at(b, j) in (32, 44):  # spaces and commas
            j += 1
        if b.startswith(b"and ", j):
            j = _spaces(b, j + 4)
    if groups == 0 or total > MAX_MS:
        return None
    return total


def _days_from_civil(y: int, m: int, d: int) -> int:
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = (z if z >= 0 else z - 146096) // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


MIN_MS = _days_from_civil(1, 1, 1) * 86_400_000
MAX_EPOCH_MS = (_days_from_civil(9999, 12, 31) + 1) * 86_400_000 - 1


def _leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _valid_date(y: int, m: int, d: int) -> bool:
    if not (1 <= y <= 9999 and 1 <= m <= 12 and d >= 1):
        return False
    days = (31, 29 if _leap(y) else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)[m - 1]
    return d <= days


def _epoch_ms(y: int, mo: int, d: int, h: int, mi: int, s: int, ms: int) -> int | None:
    if not _valid_date(y, mo, d) or h > 23 or mi > 59 or s > 59:
        return None
    return ((_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms


def format_ms(t: int) -> str | None:
    """Epoch milliseconds as RFC 3339 UTC, ``None`` outside years 1..9999."""
    if not MIN_MS <= t <= MAX_EPOCH_MS:
        return None
    days, rest = divmod(t, 86_400_000)
    y, m, d = _civil_from_days(days)
    secs, ms = divmod(rest, 1000)
    text = f"{y:04d}-{m:02d}-{d:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + (f".{ms:03d}Z" if ms else "Z")


def _word_end(b: bytes, j: int) -> bool:
    return not _alnum(_at(b, j))


def _rfc3339(b: bytes, j: int) -> int | None:
    """``YYYY-MM-DD[T ]HH:MM[:SS[.frac]]`` with a zone (``Z``, ``±HH:MM``, ``±HHMM``, ``UTC``)."""
    y, mo, d = _digits(b, j, 4), _digits(b, j + 5, 2), _digits(b, j + 8, 2)
    if y is None or mo is None or d is None or _at(b, j + 4) != 45 or _at(b, j + 7) != 45:
        return None
    if _at(b, j + 10) not in (116, 32):  # 't' or ' '
        return None
    h, mi = _digits(b, j + 11, 2), _digits(b, j + 14, 2)
    if h is None or mi is None or _at(b, j + 13) != 58:
        return None
    k, s, ms = j + 16, 0, 0
    if _at(b, k) == 58:
        sec = _digits(b, k + 1, 2)
        if sec is None:
            return None
        s, k = sec, k + 3
        if _at(b, k) == 46 and _digit(_at(b, k + 1)):
            f = k + 1
            while _digit(_at(b, f)):
                f += 1
            if f - k - 1 > MAX_FRAC_DIGITS:
                return None
            ms = int((b[k + 1 : f] + b"00")[:3])
            k = f
    if _at(b, k) == 32:  # one space may come before the zone
        k += 1
    c = _at(b, k)
    if c == 122 and _word_end(b, k + 1):  # 'z'
        offset = 0
    elif c in (43, 45):  # '+' / '-'
        oh = _digits(b, k + 1, 2)
        om_at = k + 4 if _at(b, k + 3) == 58 else k + 3
        om = _digits(b, om_at, 2)
        if oh is None or om is None or oh > 23 or om > 59 or _digit(_at(b, om_at + 2)):
            return None
        offset = (oh * 60 + om) * (1 if c == 43 else -1)
    elif b[k : k + 3] in (b"utc", b"gmt") and _word_end(b, k + 3):
        offset = 0
    else:
        return None
    t = _epoch_ms(y, mo, d, h, mi, s, ms)
    return None if t is None else t - offset * 60_000


def parse_time(text: str) -> int | None:
    """A date-time (RFC 3339: ``YYYY-MM-DD[T ]HH:MM[:SS[.frac]]`` and a zone) as epoch
    milliseconds; ``None`` when ``text`` does not start with one."""
    return _rfc3339(text.encode("utf-8", "surrogatepass").lower(), 0)


def format_epoch(v: int) -> str | None:
    """Epoch seconds (milliseconds from 10^11 on, as in :func:`parse`'s ``resetsAt``) as
    RFC 3339 UTC."""
    return format_ms(v if v >= 100_000_000_000 else v * 1000)


def _imf_fixdate(b: bytes, j: int) -> int | None:
    """HTTP ``[Wed, ]21 Oct 2015 07:28:00 GMT``."""
    if all(_alpha(c) for c in b[j : j + 3]) and b[j + 3 : j + 5] == b", ":
        j += 5
    k = j
    while _digit(_at(b, k)) and k - j < 2:
        k += 1
    if k == j or _at(b, k) != 32:
        return None
    d = int(b[j:k])
    mon = b[k + 1 : k + 4]
    if mon not in MONTHS or _at(b, k + 4) != 32:
        return None
    y = _digits(b, k + 5, 4)
    if y is None or _at(b, k + 9) != 32:
        return None
    t = k + 10
    h, mi, s = _digits(b, t, 2), _digits(b, t + 3, 2), _digits(b, t + 6, 2)
    if h is None or mi is None or s is None or _at(b, t + 2) != 58 or _at(b, t + 5) != 58:
        return None
    if _at(b, t + 8) != 32 or b[t + 9 : t + 12] not in (b"gmt", b"utc"):
        return None
    if not _word_end(b, t + 12):
        return None
    return _epoch_ms(y, MONTHS.index(mon) + 1, d, h, mi, s, 0)


def _time(b: bytes, j: int) -> int | None:
    j = _spaces(b, j)
    t = _rfc3339(b, j)
    return t if t is not None else _imf_fixdate(b, j)


def _key_value_start(b: bytes, j: int) -> int:
    """Past ``"``, spaces, ``:`` or ``=``, spaces and a quote after a key."""
    if _at(b, j) in (34, 39):
        j += 1
    j = _spaces(b, j)
    if _at(b, j) in (58, 61):
        j += 1
    j = _spaces(b, j)
    if _at(b, j) in (34, 39):
        j += 1
    return j


def _bare(b: bytes, j: int, unit: int) -> int | None:
    num = _number(b, j)
    if num is None or _alpha(_at(b, num[3])):
        return None
    ms = _scaled(num, unit)
    return ms if ms <= MAX_MS else None


def _key(b: bytes, j: int, what: str) -> tuple[int | None, int | None]:
    """(epoch ms, delay ms) for the value after a key."""
    j = _key_value_start(b, j)
    if what == "ms":
        return None, _bare(b, j, 1)
    if what == "s":
        return None, _bare(b, j, 1000)
    if what == "header":
        t = _imf_fixdate(b, j)
        if t is not None:
            return t, None
        d = _duration(b, j)
        return None, d if d is not None else _bare(b, j, 1000)
    # an RFC 3339 string, else epoch seconds (milliseconds from 10^11 on)
    t = _rfc3339(b, j)
    if t is not None:
        return t, None
    num = _number(b, j)
    if num is not None and num[2] == 0 and not _alpha(_at(b, num[3])):
        v = num[0]
        return (v if v >= 10**11 else v * 1000), None
    return None, None


def parse(message: str) -> tuple[str | None, int | None]:
    """``(retry_at, retry_after_ms)`` said by ``message``; never raises."""
    b = message.encode("utf-8", "surrogatepass").lower()
    at: str | None = None
    after: int | None = None
    n = len(b)
    for i in range(n):
        if at is not None and after is not None:
            break
        if b[i] not in FIRST or (i and _alnum(b[i - 1])):
            continue
        for key, what in KEYS:
            if b.startswith(key, i) and not (
                _alnum(_at(b, i + len(key))) or _at(b, i + len(key)) == 95
            ):
                t, d = _key(b, i + len(key), what)
                if at is None and t is not None:
                    at = format_ms(t)
                if after is None and d is not None:
                    after = d
        for phrase in DELAY_PHRASES:
            if after is None and b.startswith(phrase, i) and not _alnum(_at(b, i + len(phrase))):
                after = _duration(b, i + len(phrase))
        for phrase in TIME_PHRASES:
            if at is None and b.startswith(phrase, i) and not _alnum(_at(b, i + len(phrase))):
                t = _time(b, i + len(phrase))
                if t is not None:
                    at = format_ms(t)
    return at, after


def retry_fields(kind: str, message: str) -> dict[str, str | int]:
    """The event extras ``retryAt`` / ``retryAfterMs`` of a quota or transport error."""
    if kind not in ("quota", "transport"):
        return {}
    at, after = parse(message)
    out: dict[str, str | int] = {}
    if at is not None:
        out["retryAt"] = at
    if after is not None:
        out["retryAfterMs"] = after
    return out
