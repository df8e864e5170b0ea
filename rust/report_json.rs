//! The text `json.dumps(obj, indent=2, allow_nan=False)` gives, for `report --json`'s
//! documents (stdlib defaults: `ensure_ascii`, `", "`/`": "` separators), byte for byte:
//! floats as `repr(float)` ([`float_repr`]), strings escaped to ASCII ([`ascii_string`]), and a
//! usage total as `usage._Acc.as_dict` makes it ([`write_total`]), so the report writes its
//! per-session entries and rows without a Python dict or a `json.dumps` call per entry.

use crate::event::Num;
use crate::usage_merge::{Acc, ENDINGS};

/// `usage._PARTS`' keys, in `Acc::parts`' order.
pub const PARTS: [&str; 3] = ["reasoningTokens", "cacheWriteTokens", "cacheWrite1hTokens"];

/// Python's `repr(float)` of a finite float: the shortest digits that read back to it (the
/// nearest of them, ties to even: Ryu's, as David Gay's mode 0 that Python uses), in fixed
/// notation for decimal exponents -5 < e < 16, else `d.ddde+XX` (`float_repr_style`
/// `short`, `Py_DTSF_ADD_DOT_0`). No allocation: Ryu's text is read back into its digits
/// and exponent on the stack.
pub fn float_repr(x: f64, out: &mut String) {
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(x).as_bytes();
    let (neg, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // the digits without leading or trailing zeros, and `decpt`: value = 0.DIGITS * 10^decpt
    let mut digits = [0u8; 24];
    let mut n = 0usize;
    let mut decpt: i32 = 0;
    let (mantissa, exp) = match text.iter().position(|b| *b == b'e' || *b == b'E') {
        Some(e) => (text.get(..e).unwrap_or_default(), text.get(e + 1..)),
        None => (text, None),
    };
    let mut seen_point = false;
    for &b in mantissa {
        if b == b'.' {
            seen_point = true;
        } else if b.is_ascii_digit() {
            if n == 0 && b == b'0' {
                // a leading zero: before the point it says nothing, after it moves decpt
                if seen_point {
                    decpt -= 1;
                }
                continue;
            }
            if let Some(slot) = digits.get_mut(n) {
                *slot = b;
                n += 1;
            }
            if !seen_point {
                decpt += 1;
            }
        }
    }
    if let Some(exp) = exp {
        let (sign, e) = match exp.split_first() {
            Some((b'-', rest)) => (-1, rest),
            _ => (1, exp),
        };
        let e = e
            .iter()
            .fold(0i32, |a, d| a * 10 + i32::from(d.wrapping_sub(b'0')));
        decpt += sign * e;
    }
    while n > 0 && digits.get(n - 1) == Some(&b'0') {
        n -= 1;
    }
    if n == 0 {
        // zero
        if let Some(d) = digits.first_mut() {
            *d = b'0';
        }
        n = 1;
        decpt = 1;
    }
    let digits = digits.get(..n).unwrap_or_default();
    if neg {
        out.push('-');
    }
    let n = n as i32; // at most 24
    if decpt <= -4 || decpt > 16 {
        let (first, rest) = digits.split_at(1);
        out.push_str(ascii(first));
        if !rest.is_empty() {
            out.push('.');
            out.push_str(ascii(rest));
        }
        let exp = decpt - 1;
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        write_u128(u128::from(e), out);
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(ascii(digits));
    } else if decpt < n {
        let (int, frac) = digits.split_at(decpt as usize);
        out.push_str(ascii(int));
        out.push('.');
        out.push_str(ascii(frac));
    } else {
        out.push_str(ascii(digits));
        for _ in 0..decpt - n {
            out.push('0');
        }
        out.push_str(".0");
    }
}

/// Digits as text.
fn ascii(d: &[u8]) -> &str {
    std::str::from_utf8(d).unwrap_or_default()
}

/// An unsigned integer in decimal, without allocation (in `u64` arithmetic where it fits:
/// a `u128` division is a library call).
pub fn write_u128(mut v: u128, out: &mut String) {
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    if let Ok(mut small) = u64::try_from(v) {
        loop {
            i -= 1;
            if let Some(slot) = buf.get_mut(i) {
                *slot = b'0' + (small % 10) as u8;
            }
            small /= 10;
            if small == 0 {
                break;
            }
        }
        out.push_str(ascii(buf.get(i..).unwrap_or_default()));
        return;
    }
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (v % 10) as u8;
        }
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(ascii(buf.get(i..).unwrap_or_default()));
}

/// A signed integer in decimal, without allocation.
pub fn write_i128(v: i128, out: &mut String) {
    if v < 0 {
        out.push('-');
    }
    write_u128(v.unsigned_abs(), out);
}

/// Whether `json.encoder`'s `encode_basestring_ascii` copies the byte as it is.
const fn plain(b: u8) -> bool {
    b >= b' ' && b <= b'~' && b != b'"' && b != b'\\'
}

/// `json.encoder`'s `encode_basestring_ascii`: printable ASCII as is, the rest escaped.
pub fn ascii_string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push('"');
    // the common case: nothing to escape, the text copied whole
    let Some(first) = s.bytes().position(|b| !plain(b)) else {
        out.push_str(s);
        out.push('"');
        return;
    };
    let unit = |u: u16, out: &mut String| {
        out.push_str("\\u");
        for shift in [12, 8, 4, 0] {
            let digit = HEX.get(usize::from((u >> shift) & 0xf)).copied();
            out.push(char::from(digit.unwrap_or(b'0')));
        }
    };
    out.push_str(s.get(..first).unwrap_or_default());
    let rest = s.get(first..).unwrap_or_default();
    let mut plain_from = 0; // the start of the run of bytes copied as they are
    for (i, c) in rest.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            ' '..='~' => continue,
            _ => "",
        };
        out.push_str(rest.get(plain_from..i).unwrap_or_default());
        plain_from = i + c.len_utf8();
        if esc.is_empty() {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                unit(*u, out);
            }
        } else {
            out.push_str(esc);
        }
    }
    out.push_str(rest.get(plain_from..).unwrap_or_default());
    out.push('"');
}

/// A newline and `level` indents of two spaces.
pub fn newline(level: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// A number as `json.dumps` writes it; a float that is not finite as `null` (the report's
/// `_finite`).
fn number(n: Num, out: &mut String) {
    match n {
        Num::Int(i) => write_i128(i, out),
        Num::Float(f) if f.is_finite() => float_repr(f, out),
        Num::Float(_) => out.push_str("null"),
    }
}

/// A total's `costUsd`, `source` and `estimatedUsd` as `usage._Acc.as_dict` makes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    pub cost: Option<Num>,
    pub source: &'static str,
    pub estimated: Option<f64>,
}

/// [`Costs`] of `acc`, `reported` the CLIs' costs' sum (`acc.estimated`: pico-USD).
pub fn costs(acc: &Acc, reported: Num) -> Costs {
    let priced = acc.n_reported + acc.n_estimated;
    let counted = acc.readings.saturating_sub(acc.n_free);
    let source = if priced == 0 {
        "absent"
    } else if acc.n_reported == counted {
        "reported"
    } else if acc.n_estimated == counted {
        "estimated"
    } else {
        "mixed"
    };
    // Python: `est = estimated / 1e12` (the int made the nearest float, then divided)
    let est = acc.estimated as f64 / 1e12;
    let cost = if priced == 0 {
        None
    } else if acc.estimated != 0 {
        Some(reported.plus(Num::Float(est)))
    } else {
        Some(reported)
    };
    Costs {
        cost,
        source,
        estimated: (priced != 0).then_some(est),
    }
}

/// One key of an object at `level` (its first when `first`): `,` and the newline before it;
/// `k` is one of the report's own keys (nothing in it to escape).
fn key(k: &str, first: &mut bool, level: usize, out: &mut String) {
    debug_assert!(k.bytes().all(plain));
    if !*first {
        out.push(',');
    }
    *first = false;
    newline(level, out);
    out.push('"');
    out.push_str(k);
    out.push_str("\": ");
}

/// A total as `usage._Acc.as_dict` makes it and `json.dumps(indent=2)` writes it, its
/// braces at `level`: `lead` (e.g. `("session", name)`) first where given, then the token
/// sums, the parts that some reading reported, `costUsd`, `source`, `estimatedUsd`,
/// `unpricedModels` (`unpriced`, sorted), `endings` where given and `dialect` where given.
/// `reported` is the CLIs' costs' sum, `acc.estimated` the estimates in pico-USD.
#[allow(clippy::too_many_arguments)]
pub fn write_total(
    out: &mut String,
    level: usize,
    lead: Option<(&str, &str)>,
    acc: &Acc,
    reported: Num,
    unpriced: &[&str],
    endings: Option<&[u64; 4]>,
    dialect: Option<&str>,
) {
    let inner = level + 1;
    let mut first = true;
    out.push('{');
    if let Some((k, v)) = lead {
        key(k, &mut first, inner, out);
        ascii_string(v, out);
    }
    for (k, v) in [
        ("inputTokens", acc.input),
        ("outputTokens", acc.output),
        ("cachedTokens", acc.cached),
    ] {
        key(k, &mut first, inner, out);
        write_i128(v, out);
    }
    for (k, v) in PARTS.iter().zip(acc.parts) {
        if let Some(v) = v {
            key(k, &mut first, inner, out);
            write_i128(v, out);
        }
    }
    let c = costs(acc, reported);
    key("costUsd", &mut first, inner, out);
    match c.cost {
        Some(n) => number(n, out),
        None => out.push_str("null"),
    }
    key("source", &mut first, inner, out);
    ascii_string(c.source, out);
    key("estimatedUsd", &mut first, inner, out);
    match c.estimated {
        Some(f) => number(Num::Float(f), out),
        None => out.push_str("null"),
    }
    key("unpricedModels", &mut first, inner, out);
    if unpriced.is_empty() {
        out.push_str("[]");
    } else {
        out.push('[');
        for (i, m) in unpriced.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            newline(inner + 1, out);
            ascii_string(m, out);
        }
        newline(inner, out);
        out.push(']');
    }
    if let Some(ends) = endings {
        key("endings", &mut first, inner, out);
        out.push('{');
        let mut f = true;
        for (k, n) in ENDINGS.iter().zip(ends) {
            key(k, &mut f, inner + 1, out);
            write_u128(u128::from(*n), out);
        }
        newline(inner, out);
        out.push('}');
    }
    if let Some(d) = dialect {
        key("dialect", &mut first, inner, out);
        ascii_string(d, out);
    }
    newline(level, out);
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: f64) -> String {
        let mut s = String::new();
        float_repr(x, &mut s);
        s
    }

    #[test]
    fn floats_as_python_repr() {
        assert_eq!(r(0.0), "0.0");
        assert_eq!(r(-0.0), "-0.0");
        assert_eq!(r(1.0), "1.0");
        assert_eq!(r(0.1), "0.1");
        assert_eq!(r(0.0001), "0.0001");
        assert_eq!(r(0.00001), "1e-05");
        assert_eq!(r(1.5e-7), "1.5e-07");
        assert_eq!(r(1e15), "1000000000000000.0");
        assert_eq!(r(1e16), "1e+16");
        assert_eq!(r(1.2345e16), "1.2345e+16");
        assert_eq!(r(123.456), "123.456");
        assert_eq!(r(0.30000000000000004), "0.30000000000000004");
        assert_eq!(r(1e100), "1e+100");
        assert_eq!(r(-2.5e-300), "-2.5e-300");
        assert_eq!(r(f64::MAX), "1.7976931348623157e+308");
        assert_eq!(r(5e-324), "5e-324");
        assert_eq!(r(-916_853_859_412_763.2), "-916853859412763.2");
        assert_eq!(r(-2_472_381_562_763.906_2), "-2472381562763.9062");
        assert_eq!(r(-2_472_381_562_763.906), "-2472381562763.906");
    }

    /// The former writer (two `format!` calls: Rust's shortest digits, then those digits
    /// rounded to even), checked against Python's repr: the new one must agree with it.
    fn formatted(x: f64) -> String {
        let shortest = format!("{:e}", x.abs());
        let n = shortest
            .split('e')
            .next()
            .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
        let sci = format!("{:.*e}", n.saturating_sub(1), x.abs());
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
        let mut out = String::new();
        if x.is_sign_negative() {
            out.push('-');
        }
        let decpt = exp + 1;
        let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
        if decpt <= -4 || decpt > 16 {
            let (first, rest) = digits.split_at(1.min(digits.len()));
            out.push_str(first);
            if !rest.is_empty() {
                out.push('.');
                out.push_str(rest);
            }
            out.push_str(&format!(
                "e{}{:02}",
                if exp < 0 { '-' } else { '+' },
                exp.abs()
            ));
        } else if decpt <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-decpt) as usize));
            out.push_str(&digits);
        } else if decpt < n {
            let (int, frac) = digits.split_at(decpt as usize);
            out.push_str(&format!("{int}.{frac}"));
        } else {
            out.push_str(&digits);
            out.push_str(&"0".repeat((decpt - n) as usize));
            out.push_str(".0");
        }
        out
    }

    #[test]
    fn floats_as_the_formatted_repr() {
        // a xorshift over bit patterns, decimals of every size and the report's own sums
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut checked = 0;
        for i in 0..400_000u64 {
            let bits = next();
            let x = match i % 4 {
                0 => f64::from_bits(bits),
                1 => (bits % 1_000_000_000) as f64 / 10f64.powi((bits >> 40) as i32 % 24),
                2 => (bits % 5_000_000) as f64 * 3.75 / 1e6 + (bits >> 50) as f64 * 0.3 / 1e6,
                _ => (bits >> 11) as f64 * 10f64.powi((bits % 40) as i32 - 20),
            };
            if !x.is_finite() {
                continue;
            }
            assert_eq!(r(x), formatted(x), "{x:e}");
            checked += 1;
        }
        assert!(checked > 390_000);
        for x in [
            1e-4,
            9.999e-5,
            1e16,
            9_999_999_999_999_998.0,
            123_456_789_012_345_680.0,
        ] {
            assert_eq!(r(x), formatted(x));
        }
    }

    #[test]
    fn integers_as_decimal() {
        let wide = i128::from(u64::MAX);
        for v in [
            0i128,
            7,
            -7,
            10,
            wide,
            wide + 1,
            -wide,
            -wide - 1,
            i128::MIN,
            i128::MAX,
        ] {
            let mut out = String::new();
            write_i128(v, &mut out);
            assert_eq!(out, v.to_string());
        }
    }

    fn s(x: &str) -> String {
        let mut out = String::new();
        ascii_string(x, &mut out);
        out
    }

    #[test]
    fn strings_as_ensure_ascii() {
        assert_eq!(s(""), r#""""#);
        assert_eq!(s("abc"), r#""abc""#);
        assert_eq!(s("a\"b\\c\n\t\r\u{8}\u{c}"), r#""a\"b\\c\n\t\r\b\f""#);
        assert_eq!(s("\u{1}\u{7f}é"), r#""\u0001\u007f\u00e9""#);
        assert_eq!(s("x😀y"), r#""x\ud83d\ude00y""#);
        assert_eq!(s("plain text"), r#""plain text""#);
        assert_eq!(s("ab\u{7f}"), r#""ab\u007f""#);
        assert_eq!(s("é at first"), r#""\u00e9 at first""#);
    }

    #[test]
    fn a_total_as_python_writes_it() {
        let mut acc = Acc {
            input: 10,
            output: 5,
            cached: 2,
            estimated: 1_500_000,
            readings: 3,
            n_reported: 1,
            n_estimated: 1,
            n_free: 0,
            ..Acc::default()
        };
        acc.parts[1] = Some(4);
        let mut out = String::new();
        write_total(
            &mut out,
            1,
            Some(("session", "s\u{e9}")),
            &acc,
            Num::Int(0),
            &["m1", "m2"],
            Some(&[1, 0, 0, 2]),
            Some("claude"),
        );
        let want = r#"{
    "session": "s\u00e9",
    "inputTokens": 10,
    "outputTokens": 5,
    "cachedTokens": 2,
    "cacheWriteTokens": 4,
    "costUsd": 1.5e-06,
    "source": "mixed",
    "estimatedUsd": 1.5e-06,
    "unpricedModels": [
      "m1",
      "m2"
    ],
    "endings": {
      "ok": 1,
      "empty": 0,
      "failed": 0,
      "none": 2
    },
    "dialect": "claude"
  }"#;
        assert_eq!(out, want);
        let mut out = String::new();
        let free = Acc::default();
        write_total(&mut out, 0, None, &free, Num::Int(0), &[], None, None);
        let want = "{\n  \"inputTokens\": 0,\n  \"outputTokens\": 0,\n  \"cachedTokens\": 0,\n  \
                    \"costUsd\": null,\n  \"source\": \"absent\",\n  \"estimatedUsd\": null,\n  \
                    \"unpricedModels\": []\n}";
        assert_eq!(out, want);
        let mut out = String::new();
        let inf = Acc {
            readings: 2,
            n_reported: 2,
            ..Acc::default()
        };
        write_total(
            &mut out,
            0,
            None,
            &inf,
            Num::Float(f64::INFINITY),
            &[],
            None,
            None,
        );
        assert!(out
            .contains("\"costUsd\": null,\n  \"source\": \"reported\",\n  \"estimatedUsd\": 0.0"));
    }
}
