//! serde_json as an independent oracle for this project's parser and JSONL writer.

use _native::value::Value;

/// `ours` and serde_json's value are the same JSON value: integers exact (beyond `u64`,
/// serde_json holds the nearest `f64`, which the digits must round to), floats bit for bit,
/// strings equal, objects as the Python dict built from them (keys in first-occurrence order,
/// the last duplicate's value: serde_json's `preserve_order` map does the same).
pub fn same(ours: &Value<'_>, theirs: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match (ours, theirs) {
        (Value::Null, J::Null) => true,
        (Value::Bool(a), J::Bool(b)) => a == b,
        // serde_json reads the integer `-0` as the float -0.0 (Python: the int 0)
        (Value::Int(0), J::Number(n)) if n.is_f64() => n
            .as_f64()
            .is_some_and(|f| f.to_bits() == (-0.0f64).to_bits()),
        (Value::Int(a), J::Number(n)) => n.as_i64() == Some(*a),
        (Value::BigInt(t), J::Number(n)) => match (n.as_u64(), n.as_f64()) {
            (Some(u), _) => *t == u.to_string(),
            (None, Some(f)) if !n.is_i64() => {
                t.parse::<f64>().is_ok_and(|g| g.to_bits() == f.to_bits())
            }
            _ => false,
        },
        (Value::Float(a), J::Number(n)) => {
            n.is_f64() && n.as_f64().is_some_and(|f| f.to_bits() == a.to_bits())
        }
        (Value::Str(a), J::String(b)) => a.as_ref() == b.as_str(),
        (Value::Array(a), J::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Value::Object(_), J::Object(m)) => {
            let items = ours.dict_items();
            items.len() == m.len()
                && items
                    .iter()
                    .zip(m.iter())
                    .all(|((k, v), (k2, v2))| k == k2 && same(v, v2))
        }
        _ => false,
    }
}

/// `v` holds an integer beyond `f64`'s range: serde_json (without `arbitrary_precision`) reads
/// big integers as `f64` and rejects these as "number out of range"; Python (and this parser)
/// take integers of up to 4000 digits.
pub fn has_huge_int(v: &Value<'_>) -> bool {
    match v {
        Value::BigInt(t) => t.parse::<f64>().map_or(true, f64::is_infinite),
        Value::Array(items) => items.iter().any(has_huge_int),
        Value::Object(pairs) => pairs.iter().any(|(_, v)| has_huge_int(v)),
        _ => false,
    }
}

/// serde_json's reason for rejecting a document this project's parser may accept by design:
/// nesting beyond serde_json's 128 levels, or a lone surrogate escape (repaired to U+FFFD here).
pub fn rejects_by_design(e: &serde_json::Error) -> bool {
    let m = e.to_string();
    m.contains("recursion limit") || m.contains("surrogate") || m.contains("unicode code point")
}
