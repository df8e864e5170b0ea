//! When a rate-limited or failed request may be retried, read from the error message's text.
//!
//! Mirror of `reference/retry.py` (same table, same scan, same answers; docs/events.md "Retry
//! time"). [`parse`] gives `retry_at`, an RFC 3339 UTC time (`YYYY-MM-DDTHH:MM:SSZ`, `.mmm` when
//! the milliseconds are not 0) when the text says *when*, and `retry_after_ms` when it says
//! *how long*. A time without a date or a zone ("try again at 12:16 PM", "resets 5am") gives
//! nothing: nothing is guessed.
//!
//! The scan works on the UTF-8 bytes, ASCII-lowercased, left to right. At each position that
//! does not follow an ASCII letter or digit it tries the triggers in table order (keys, then
//! delay phrases, then time phrases); the first value of each kind wins.

/// What the value after a key is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Ms,
    Seconds,
    Header,
    Epoch,
}

const KEYS: &[(&[u8], KeyKind)] = &[
    (b"retry_after_ms", KeyKind::Ms),
    (b"retryafterms", KeyKind::Ms),
    (b"retry_delay_ms", KeyKind::Ms),
    (b"retrydelayms", KeyKind::Ms),
    (b"resets_in_seconds", KeyKind::Seconds),
    (b"resetsinseconds", KeyKind::Seconds),
    (b"retry-after", KeyKind::Header),
    (b"retry_after", KeyKind::Header),
    (b"retryafter", KeyKind::Header),
    (b"resets_at", KeyKind::Epoch),
    (b"resetsat", KeyKind::Epoch),
    (b"reset_at", KeyKind::Epoch),
    (b"resetat", KeyKind::Epoch),
];
const DELAY_PHRASES: &[&[u8]] = &[
    b"try again in",
    b"retrying in",
    b"retry in",
    b"retry after",
    b"resets in",
    b"reset in",
    b"available in",
    b"wait",
];
const TIME_PHRASES: &[&[u8]] = &[
    b"try again at",
    b"try again after",
    b"retry at",
    b"retry after",
    b"resets at",
    b"reset at",
    b"resets",
    b"available at",
    b"until",
];
const UNITS: &[(&[u8], i128)] = &[
    (b"ms", 1),
    (b"msec", 1),
    (b"msecs", 1),
    (b"millisecond", 1),
    (b"milliseconds", 1),
    (b"s", 1000),
    (b"sec", 1000),
    (b"secs", 1000),
    (b"second", 1000),
    (b"seconds", 1000),
    (b"m", 60_000),
    (b"min", 60_000),
    (b"mins", 60_000),
    (b"minute", 60_000),
    (b"minutes", 60_000),
    (b"h", 3_600_000),
    (b"hr", 3_600_000),
    (b"hrs", 3_600_000),
    (b"hour", 3_600_000),
    (b"hours", 3_600_000),
    (b"d", 86_400_000),
    (b"day", 86_400_000),
    (b"days", 86_400_000),
];
const MONTHS: [&[u8]; 12] = [
    b"jan", b"feb", b"mar", b"apr", b"may", b"jun", b"jul", b"aug", b"sep", b"oct", b"nov", b"dec",
];
/// A delay above this (about 31,700 years) is not a delay.
const MAX_MS: i128 = 1_000_000_000_000_000;
const MAX_INT_DIGITS: usize = 15;
const MAX_FRAC_DIGITS: usize = 9;

/// The retry time a message states.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Retry {
    pub at: Option<String>,
    pub after_ms: Option<u64>,
}

fn at(b: &[u8], i: usize) -> Option<u8> {
    b.get(i).copied()
}

fn is_digit(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_digit())
}

fn is_alpha(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphabetic())
}

fn is_alnum(c: Option<u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphanumeric())
}

fn spaces(b: &[u8], mut j: usize) -> usize {
    while at(b, j) == Some(b' ') {
        j += 1;
    }
    j
}

fn starts(b: &[u8], i: usize, s: &[u8]) -> bool {
    b.get(i..).is_some_and(|t| t.starts_with(s))
}

fn slice(b: &[u8], from: usize, to: usize) -> &[u8] {
    b.get(from..to.min(b.len())).unwrap_or(&[])
}

fn to_int(digits: &[u8]) -> i128 {
    digits
        .iter()
        .fold(0i128, |a, d| a * 10 + i128::from(d - b'0'))
}

/// Exactly `n` digits at `j`.
fn digits(b: &[u8], j: usize, n: usize) -> Option<i128> {
    let s = b.get(j..j + n)?;
    s.iter().all(u8::is_ascii_digit).then(|| to_int(s))
}

/// `digits[.digits]` at `j`: (integer part, fraction digits, their count, end).
fn number(b: &[u8], j: usize) -> Option<(i128, i128, u32, usize)> {
    let mut k = j;
    while is_digit(at(b, k)) {
        k += 1;
    }
    if k == j || k - j > MAX_INT_DIGITS {
        return None;
    }
    let whole = to_int(slice(b, j, k));
    if at(b, k) == Some(b'.') && is_digit(at(b, k + 1)) {
        let mut f = k + 1;
        while is_digit(at(b, f)) {
            f += 1;
        }
        let n = f - k - 1;
        if n > MAX_FRAC_DIGITS {
            return None;
        }
        return Some((whole, to_int(slice(b, k + 1, f)), n as u32, f));
    }
    Some((whole, 0, 0, k))
}

fn scaled(num: (i128, i128, u32, usize), unit: i128) -> i128 {
    let (whole, frac, n, _) = num;
    let p = 10i128.pow(n);
    (whole * p + frac) * unit / p
}

/// `<number> <unit>` groups (`1h 20m`, `2 hours and 5 minutes`, `1m30s`) in ms.
fn duration(b: &[u8], j: usize) -> Option<i128> {
    let mut j = spaces(b, j);
    if at(b, j) == Some(b'~') {
        j = spaces(b, j + 1);
    } else if starts(b, j, b"about ") {
        j = spaces(b, j + 6);
    }
    let (mut total, mut groups) = (0i128, 0u32);
    while let Some(num) = number(b, j) {
        let u = spaces(b, num.3);
        let mut e = u;
        while is_alpha(at(b, e)) {
            e += 1;
        }
        let word = slice(b, u, e);
        let Some((_, unit)) = UNITS.iter().find(|(w, _)| *w == word) else {
            break;
        };
        total += scaled(num, *unit);
        groups += 1;
        j = e;
        while matches!(at(b, j), Some(b' ' | b',')) {
            j += 1;
        }
        if starts(b, j, b"and ") {
            j = spaces(b, j + 4);
        }
    }
    (groups > 0 && total <= MAX_MS).then_some(total)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i128, m: i128, d: i128) -> i128 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 }.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i128) -> (i128, i128, i128) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 }.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = mp + if mp < 10 { 3 } else { -9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn leap(y: i128) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// The days of month `m` of year `y`; `None` for a month outside 1..=12.
pub(crate) fn days_in_month(y: i128, m: i128) -> Option<i128> {
    Some(match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        _ => return None,
    })
}

fn valid_date(y: i128, m: i128, d: i128) -> bool {
    (1..=9999).contains(&y) && d >= 1 && days_in_month(y, m).is_some_and(|days| d <= days)
}

fn epoch_ms(y: i128, mo: i128, d: i128, h: i128, mi: i128, s: i128, ms: i128) -> Option<i128> {
    if !valid_date(y, mo, d) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

/// Epoch milliseconds as RFC 3339 UTC, `None` outside years 1..9999.
pub fn format_ms(t: i128) -> Option<String> {
    let min = days_from_civil(1, 1, 1) * 86_400_000;
    let max = (days_from_civil(9999, 12, 31) + 1) * 86_400_000 - 1;
    if t < min || t > max {
        return None;
    }
    let (days, rest) = (t.div_euclid(86_400_000), t.rem_euclid(86_400_000));
    let (y, m, d) = civil_from_days(days);
    let (secs, ms) = (rest / 1000, rest % 1000);
    // `{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}[.{ms:03}]Z`, written digit by digit (a
    // rate-limit reading on every codex token count line: `format!` cost more than the rest)
    let mut text = String::with_capacity(24);
    let parts = [
        (y, 4, "-"),
        (m, 2, "-"),
        (d, 2, "T"),
        (secs / 3600, 2, ":"),
        (secs / 60 % 60, 2, ":"),
        (secs % 60, 2, ""),
    ];
    for (v, width, after) in parts {
        push_digits(&mut text, v, width);
        text.push_str(after);
    }
    if ms != 0 {
        text.push('.');
        push_digits(&mut text, ms, 3);
    }
    text.push('Z');
    Some(text)
}

/// `v` (`0 <= v < 10^width`) as `width` decimal digits, zero-padded.
fn push_digits(text: &mut String, v: i128, width: u32) {
    let v = u32::try_from(v).unwrap_or(0);
    for k in (0..width).rev() {
        let digit = v / 10u32.pow(k) % 10;
        text.push(char::from(b'0' + digit as u8));
    }
}

/// A date-time (RFC 3339: `YYYY-MM-DD[T ]HH:MM[:SS[.frac]]` and a zone) as epoch
/// milliseconds; `None` when `text` does not start with one.
pub fn parse_time(text: &str) -> Option<i128> {
    rfc3339(text.as_bytes().to_ascii_lowercase().as_slice(), 0)
}

/// Epoch seconds (milliseconds from 10^11 on, as in [`parse`]'s `resetsAt`) as RFC 3339 UTC.
pub fn format_epoch(v: i128) -> Option<String> {
    format_ms(if v >= 100_000_000_000 { v } else { v * 1000 })
}

fn word_end(b: &[u8], j: usize) -> bool {
    !is_alnum(at(b, j))
}

/// `YYYY-MM-DD[T ]HH:MM[:SS[.frac]]` with a zone (`Z`, `±HH:MM`, `±HHMM`, `UTC`).
fn rfc3339(b: &[u8], j: usize) -> Option<i128> {
    let (y, mo, d) = (digits(b, j, 4)?, digits(b, j + 5, 2)?, digits(b, j + 8, 2)?);
    if at(b, j + 4) != Some(b'-') || at(b, j + 7) != Some(b'-') {
        return None;
    }
    if !matches!(at(b, j + 10), Some(b't' | b' ')) {
        return None;
    }
    let (h, mi) = (digits(b, j + 11, 2)?, digits(b, j + 14, 2)?);
    if at(b, j + 13) != Some(b':') {
        return None;
    }
    let (mut k, mut s, mut ms) = (j + 16, 0, 0);
    if at(b, k) == Some(b':') {
        s = digits(b, k + 1, 2)?;
        k += 3;
        if at(b, k) == Some(b'.') && is_digit(at(b, k + 1)) {
            let mut f = k + 1;
            while is_digit(at(b, f)) {
                f += 1;
            }
            if f - k - 1 > MAX_FRAC_DIGITS {
                return None;
            }
            let mut frac = slice(b, k + 1, f).to_vec();
            frac.extend_from_slice(b"00");
            ms = to_int(slice(&frac, 0, 3));
            k = f;
        }
    }
    if at(b, k) == Some(b' ') {
        k += 1; // one space may come before the zone
    }
    let offset = match at(b, k) {
        Some(b'z') if word_end(b, k + 1) => 0,
        Some(c @ (b'+' | b'-')) => {
            let oh = digits(b, k + 1, 2)?;
            let om_at = if at(b, k + 3) == Some(b':') {
                k + 4
            } else {
                k + 3
            };
            let om = digits(b, om_at, 2)?;
            if oh > 23 || om > 59 || is_digit(at(b, om_at + 2)) {
                return None;
            }
            (oh * 60 + om) * if c == b'+' { 1 } else { -1 }
        }
        _ if (starts(b, k, b"utc") || starts(b, k, b"gmt")) && word_end(b, k + 3) => 0,
        _ => return None,
    };
    Some(epoch_ms(y, mo, d, h, mi, s, ms)? - offset * 60_000)
}

/// HTTP `[Wed, ]21 Oct 2015 07:28:00 GMT`.
fn imf_fixdate(b: &[u8], j: usize) -> Option<i128> {
    let mut j = j;
    if (0..3).all(|n| is_alpha(at(b, j + n))) && slice(b, j + 3, j + 5) == b", " {
        j += 5;
    }
    let mut k = j;
    while is_digit(at(b, k)) && k - j < 2 {
        k += 1;
    }
    if k == j || at(b, k) != Some(b' ') {
        return None;
    }
    let d = to_int(slice(b, j, k));
    let mon = slice(b, k + 1, k + 4);
    let month = MONTHS.iter().position(|m| *m == mon)?;
    if at(b, k + 4) != Some(b' ') {
        return None;
    }
    let y = digits(b, k + 5, 4)?;
    if at(b, k + 9) != Some(b' ') {
        return None;
    }
    let t = k + 10;
    let (h, mi, s) = (digits(b, t, 2)?, digits(b, t + 3, 2)?, digits(b, t + 6, 2)?);
    if at(b, t + 2) != Some(b':') || at(b, t + 5) != Some(b':') || at(b, t + 8) != Some(b' ') {
        return None;
    }
    let zone = slice(b, t + 9, t + 12);
    if !(zone == b"gmt" || zone == b"utc") || !word_end(b, t + 12) {
        return None;
    }
    epoch_ms(y, month as i128 + 1, d, h, mi, s, 0)
}

fn time(b: &[u8], j: usize) -> Option<i128> {
    let j = spaces(b, j);
    rfc3339(b, j).or_else(|| imf_fixdate(b, j))
}

/// Past a quote, spaces, `:` or `=`, spaces and a quote after a key.
fn key_value_start(b: &[u8], mut j: usize) -> usize {
    if matches!(at(b, j), Some(b'"' | b'\'')) {
        j += 1;
    }
    j = spaces(b, j);
    if matches!(at(b, j), Some(b':' | b'=')) {
        j += 1;
    }
    j = spaces(b, j);
    if matches!(at(b, j), Some(b'"' | b'\'')) {
        j += 1;
    }
    j
}

fn bare(b: &[u8], j: usize, unit: i128) -> Option<i128> {
    let num = number(b, j)?;
    if is_alpha(at(b, num.3)) {
        return None;
    }
    let ms = scaled(num, unit);
    (ms <= MAX_MS).then_some(ms)
}

/// (epoch ms, delay ms) for the value after a key.
fn key(b: &[u8], j: usize, kind: KeyKind) -> (Option<i128>, Option<i128>) {
    let j = key_value_start(b, j);
    match kind {
        KeyKind::Ms => (None, bare(b, j, 1)),
        KeyKind::Seconds => (None, bare(b, j, 1000)),
        KeyKind::Header => {
            if let Some(t) = imf_fixdate(b, j) {
                return (Some(t), None);
            }
            (None, duration(b, j).or_else(|| bare(b, j, 1000)))
        }
        KeyKind::Epoch => {
            // an RFC 3339 string, else epoch seconds (milliseconds from 10^11 on)
            if let Some(t) = rfc3339(b, j) {
                return (Some(t), None);
            }
            match number(b, j) {
                Some((v, _, 0, end)) if !is_alpha(at(b, end)) => {
                    (Some(if v >= 100_000_000_000 { v } else { v * 1000 }), None)
                }
                _ => (None, None),
            }
        }
    }
}

/// The retry time `message` states; never panics.
pub fn parse(message: &str) -> Retry {
    let b = message.as_bytes().to_ascii_lowercase();
    let b = b.as_slice();
    let mut out = Retry::default();
    for i in 0..b.len() {
        if out.at.is_some() && out.after_ms.is_some() {
            break;
        }
        if i > 0 && is_alnum(at(b, i - 1)) {
            continue;
        }
        // every key and phrase starts with one of these: the rest of the tables cannot match
        if !matches!(at(b, i), Some(b'r' | b't' | b'a' | b'w' | b'u')) {
            continue;
        }
        for (k, kind) in KEYS {
            let end = i + k.len();
            if starts(b, i, k) && !(is_alnum(at(b, end)) || at(b, end) == Some(b'_')) {
                let (t, d) = key(b, end, *kind);
                if out.at.is_none() {
                    out.at = t.and_then(format_ms);
                }
                if out.after_ms.is_none() {
                    out.after_ms = d.and_then(|d| u64::try_from(d).ok());
                }
            }
        }
        for p in DELAY_PHRASES {
            if out.after_ms.is_none() && starts(b, i, p) && !is_alnum(at(b, i + p.len())) {
                out.after_ms = duration(b, i + p.len()).and_then(|d| u64::try_from(d).ok());
            }
        }
        for p in TIME_PHRASES {
            if out.at.is_none() && starts(b, i, p) && !is_alnum(at(b, i + p.len())) {
                out.at = time(b, i + p.len()).and_then(format_ms);
            }
        }
    }
    out
}

/// `retry_fields` of the reference: only quota and transport errors say when to retry.
pub fn for_error(kind: &str, message: &str) -> Retry {
    if kind == "quota" || kind == "transport" {
        parse(message)
    } else {
        Retry::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(m: &str) -> (Option<String>, Option<u64>) {
        let r = parse(m);
        (r.at, r.after_ms)
    }

    #[test]
    fn table() {
        let none = (None, None);
        assert_eq!(p("try again at 12:16 PM."), none);
        assert_eq!(p("Weekly limit reached ∙ resets 5am"), none);
        assert_eq!(
            p("rate limit rejected: five_hour (resetsAt 1760000000)"),
            (Some("2025-10-09T08:53:20Z".into()), None)
        );
        assert_eq!(p("resets in 3h 20m"), (None, Some(12_000_000)));
        assert_eq!(p("Please retry in 37.2s."), (None, Some(37_200)));
        assert_eq!(p("Retry-After: 120"), (None, Some(120_000)));
        assert_eq!(
            p("until 2026-07-01T00:00:00.5-05:00"),
            (Some("2026-07-01T05:00:00.500Z".into()), None)
        );
        assert_eq!(p("until 2026-02-30T00:00:00Z"), none);
        assert_eq!(p("try again in 30"), none);
    }

    #[test]
    fn every_trigger_starts_with_a_first_byte_parse_tries() {
        let firsts = KEYS
            .iter()
            .map(|(k, _)| *k)
            .chain(DELAY_PHRASES.iter().copied())
            .chain(TIME_PHRASES.iter().copied())
            .map(|k| k.first().copied());
        for c in firsts {
            assert!(matches!(c, Some(b'r' | b't' | b'a' | b'w' | b'u')), "{c:?}");
        }
    }

    #[test]
    fn format_ms_as_format() {
        let min = days_from_civil(1, 1, 1) * 86_400_000;
        let max = (days_from_civil(9999, 12, 31) + 1) * 86_400_000 - 1;
        for t in [
            min,
            min + 1,
            0,
            1,
            999,
            1000,
            1_760_000_000_000,
            1_760_000_000_123,
            -1,
            -86_400_001,
            max,
        ] {
            let (days, rest) = (t.div_euclid(86_400_000), t.rem_euclid(86_400_000));
            let (y, m, d) = civil_from_days(days);
            let (secs, ms) = (rest / 1000, rest % 1000);
            let mut want = format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
            if ms != 0 {
                want.push_str(&format!(".{ms:03}"));
            }
            want.push('Z');
            assert_eq!(format_ms(t), Some(want));
        }
        assert_eq!(format_ms(min - 1), None);
        assert_eq!(format_ms(max + 1), None);
    }

    #[test]
    fn edges_never_panic() {
        for m in [
            "",
            "r",
            "retry-after",
            "resetsat",
            "resets at 9999-12-31T23:59:59-23:59",
        ] {
            let _ = parse(m);
        }
        assert_eq!(p("resetsAt 999999999999999"), none_at());
    }

    fn none_at() -> (Option<String>, Option<u64>) {
        (None, None)
    }
}
