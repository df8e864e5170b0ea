//! Small helpers on the core's parsed [`Value`] for the structure-aware mutator: address nodes
//! in preorder, collect strings, and write a value back as one JSON line.

use std::borrow::Cow;
use std::fmt::Write;

use _native::value::Value;

/// Number of nodes (the value itself, every element and every member value), preorder.
pub fn count(v: &Value<'_>) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count).sum(),
        Value::Object(pairs) => pairs.iter().map(|(_, v)| count(v)).sum(),
        _ => 0,
    }
}

/// The `n`-th node in preorder (0 is `v` itself).
pub fn nth<'x, 'a>(v: &'x Value<'a>, n: usize) -> Option<&'x Value<'a>> {
    fn go<'x, 'a>(v: &'x Value<'a>, n: &mut usize) -> Option<&'x Value<'a>> {
        if *n == 0 {
            return Some(v);
        }
        *n -= 1;
        match v {
            Value::Array(items) => items.iter().find_map(|c| go(c, n)),
            Value::Object(pairs) => pairs.iter().find_map(|(_, c)| go(c, n)),
            _ => None,
        }
    }
    go(v, &mut { n })
}

/// The `n`-th node in preorder, mutably.
pub fn nth_mut<'x, 'a>(v: &'x mut Value<'a>, n: usize) -> Option<&'x mut Value<'a>> {
    fn go<'x, 'a>(v: &'x mut Value<'a>, n: &mut usize) -> Option<&'x mut Value<'a>> {
        if *n == 0 {
            return Some(v);
        }
        *n -= 1;
        match v {
            Value::Array(items) => items.to_mut().iter_mut().find_map(|c| go(c, n)),
            Value::Object(pairs) => pairs.to_mut().iter_mut().find_map(|(_, c)| go(c, n)),
            _ => None,
        }
    }
    go(v, &mut { n })
}

/// Every string value and object key in `v`.
pub fn strings<'x>(v: &'x Value<'_>, out: &mut Vec<&'x str>) {
    match v {
        Value::Str(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|c| strings(c, out)),
        Value::Object(pairs) => {
            for (k, c) in pairs {
                out.push(k);
                strings(c, out);
            }
        }
        _ => {}
    }
}

/// The `n`-th node in preorder that is an object, as its member list.
pub fn nth_object_mut<'x, 'a>(
    v: &'x mut Value<'a>,
    n: usize,
) -> Option<&'x mut Vec<(Cow<'a, str>, Value<'a>)>> {
    fn go<'x, 'a>(
        v: &'x mut Value<'a>,
        n: &mut usize,
    ) -> Option<&'x mut Vec<(Cow<'a, str>, Value<'a>)>> {
        match v {
            Value::Array(items) => items.to_mut().iter_mut().find_map(|c| go(c, n)),
            Value::Object(pairs) => {
                if *n == 0 {
                    return Some(pairs.to_mut());
                }
                *n -= 1;
                pairs.to_mut().iter_mut().find_map(|(_, c)| go(c, n))
            }
            _ => None,
        }
    }
    go(v, &mut { n })
}

/// Number of objects in `v`.
pub fn objects(v: &Value<'_>) -> usize {
    match v {
        Value::Array(items) => items.iter().map(objects).sum(),
        Value::Object(pairs) => 1 + pairs.iter().map(|(_, c)| objects(c)).sum::<usize>(),
        _ => 0,
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `v` as compact JSON text (one line: control characters are escaped).
pub fn write(v: &Value<'_>, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::BigInt(t) => out.push_str(t),
        Value::Float(f) if f.is_finite() => {
            let _ = write!(out, "{f:?}");
        }
        Value::Float(_) => out.push_str("null"),
        Value::Str(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, c) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(c, out);
            }
            out.push(']');
        }
        Value::Object(pairs) => {
            out.push('{');
            for (i, (k, c)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                write(c, out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use _native::parse::parse;

    #[test]
    fn round_trip_and_addressing() {
        let text = r#"{"a":[1,2.5,{"b":"x\n\u0001"}],"c":null,"d":123456789012345678901234567890}"#;
        let Ok((v, _)) = parse(text) else { panic!() };
        let mut out = String::new();
        write(&v, &mut out);
        let Ok((w, _)) = parse(&out) else { panic!() };
        assert_eq!(v, w);
        assert_eq!(count(&v), 8);
        assert_eq!(
            nth(&v, 4),
            Some(&Value::Object(
                vec![("b".into(), Value::Str("x\n\u{1}".into()))].into()
            ))
        );
        assert_eq!(objects(&v), 2);
        let mut v = v;
        assert_eq!(nth_object_mut(&mut v, 1).map(|o| o.len()), Some(1));
        assert!(nth_object_mut(&mut v, 2).is_none());
    }
}
