//! `_native._json_indent2`: the text of `json.dumps(obj, indent=2, allow_nan=False)` for a
//! document of plain JSON types, byte for byte (the report's `--json`: the stdlib encoder with
//! an indent is pure Python, a third of a large report's time). Anything else (a subclass, a
//! key that is not a `str`, a string with a lone surrogate, a float that is not finite) gives
//! `None`: the caller then uses `json.dumps`, which encodes it or raises as it always did.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::report_json::{ascii_string as string, float_repr, newline};

/// Nesting deeper than this is left to `json.dumps` (it has its own recursion limit).
const MAX_DEPTH: usize = 512;

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
