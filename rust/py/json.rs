//! `_native._json_indent2`: the text of `json.dumps(obj, indent=2, allow_nan=False)` for a
//! document of plain JSON types, byte for byte (the report's `--json`: the stdlib encoder with
//! an indent is pure Python, a third of a large report's time). Anything else (a subclass, a
//! key that is not a `str`, a string with a lone surrogate, a float that is not finite) gives
//! `None`: the caller then uses `json.dumps`, which encodes it or raises as it always did.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// Nesting deeper than this is left to `json.dumps` (it has its own recursion limit).
const MAX_DEPTH: usize = 512;

/// Python's `repr(float)` of a finite float: the shortest digits that read back to it, in
/// fixed notation for decimal exponents -5 < e < 16, else `d.ddde+XX` (`float_repr_style`
/// `short`, `Py_DTSF_ADD_DOT_0`).
pub fn float_repr(x: f64, out: &mut String) {
    // Rust's `{:e}` gives the shortest round-trip digits (`d.ddde-5`, `0e0`), a tie between
    // two of them rounded up; the exact formatting to that many digits rounds it to even, as
    // Python's repr (the nearest of the shortest, ties to even)
    let shortest = format!("{:e}", x.abs());
    let n = shortest
        .split('e')
        .next()
        .map_or(1, |m| m.bytes().filter(u8::is_ascii_digit).count());
    let sci = format!("{:.*e}", n.saturating_sub(1), x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if x.is_sign_negative() {
        out.push('-');
    }
    let decpt = exp + 1; // value = 0.DIGITS * 10^decpt
    let n = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    if decpt <= -4 || decpt > 16 {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push('0');
        }
        out.push_str(&e.to_string());
    } else if decpt <= 0 {
        out.push_str("0.");
        for _ in 0..-decpt {
            out.push('0');
        }
        out.push_str(&digits);
    } else if decpt < n {
        let (int, frac) = digits.split_at(usize::try_from(decpt).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else {
        out.push_str(&digits);
        for _ in 0..decpt - n {
            out.push('0');
        }
        out.push_str(".0");
    }
}

/// `json.encoder`'s `encode_basestring_ascii`: printable ASCII as is, the rest escaped.
fn string(s: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let unit = |u: u16, out: &mut String| {
        out.push_str("\\u");
        for shift in [12, 8, 4, 0] {
            let digit = HEX.get(usize::from((u >> shift) & 0xf)).copied();
            out.push(char::from(digit.unwrap_or(b'0')));
        }
    };
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    unit(*u, out);
                }
            }
        }
    }
    out.push('"');
}

fn newline(level: usize, out: &mut String) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// Appends `o`'s text; `false` where `json.dumps` must do it.
fn value(o: &Bound<'_, PyAny>, level: usize, out: &mut String) -> PyResult<bool> {
    if level > MAX_DEPTH {
        return Ok(false);
    }
    if o.is_none() {
        out.push_str("null");
    } else if let Ok(s) = o.cast_exact::<PyString>() {
        let Ok(s) = s.to_str() else {
            return Ok(false); // a lone surrogate
        };
        string(s, out);
    } else if let Ok(b) = o.cast_exact::<PyBool>() {
        out.push_str(if b.is_true() { "true" } else { "false" });
    } else if let Ok(i) = o.cast_exact::<PyInt>() {
        match i.extract::<i64>() {
            Ok(v) => out.push_str(&v.to_string()),
            Err(_) => match i.str() {
                Ok(t) => out.push_str(t.to_str()?),
                Err(_) => return Ok(false), // beyond int's digit limit: json.dumps says so
            },
        }
    } else if let Ok(f) = o.cast_exact::<PyFloat>() {
        let v = f.value();
        if !v.is_finite() {
            return Ok(false);
        }
        float_repr(v, out);
    } else if let Ok(d) = o.cast_exact::<PyDict>() {
        if d.is_empty() {
            out.push_str("{}");
            return Ok(true);
        }
        out.push('{');
        let mut first = true;
        for (k, v) in d.iter() {
            if !first {
                out.push(',');
            }
            first = false;
            newline(level + 1, out);
            let Ok(k) = k.cast_exact::<PyString>() else {
                return Ok(false);
            };
            let Ok(k) = k.to_str() else {
                return Ok(false);
            };
            string(k, out);
            out.push_str(": ");
            if !value(&v, level + 1, out)? {
                return Ok(false);
            }
        }
        newline(level, out);
        out.push('}');
    } else if let Ok(l) = o.cast_exact::<PyList>() {
        if !items(l.iter(), l.len(), level, out)? {
            return Ok(false);
        }
    } else if let Ok(t) = o.cast_exact::<PyTuple>() {
        if !items(t.iter(), t.len(), level, out)? {
            return Ok(false);
        }
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn items<'py>(
    it: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    level: usize,
    out: &mut String,
) -> PyResult<bool> {
    if len == 0 {
        out.push_str("[]");
        return Ok(true);
    }
    out.push('[');
    for (i, v) in it.enumerate() {
        if i > 0 {
            out.push(',');
        }
        newline(level + 1, out);
        if !value(&v, level + 1, out)? {
            return Ok(false);
        }
    }
    newline(level, out);
    out.push(']');
    Ok(true)
}

/// `json.dumps(obj, indent=2, allow_nan=False)` of plain JSON types, else None.
#[pyfunction]
pub(crate) fn _json_indent2(obj: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    let mut out = String::new();
    Ok(value(obj, 0, &mut out)?.then_some(out))
}

#[cfg(test)]
mod tests {
    use super::float_repr;

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
        assert_eq!(r(-2_472_381_562_763.906), "-2472381562763.9062");
    }
}
