//! The parsed JSON value of one line, borrowing from the line where it can.
//!
//! Objects keep every pair in input order, duplicates included; lookups return the *last* value
//! for a key and iteration is in first-occurrence order, which is exactly what a Python dict
//! built from the same text holds (so the Rust dialects see what the reference sees).

use std::borrow::Cow;

/// A JSON value. Integers beyond `i64` keep their exact decimal text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    BigInt(&'a str),
    Float(f64),
    Str(Cow<'a, str>),
    Array(Vec<Value<'a>>),
    Object(Vec<(Cow<'a, str>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The value for `key` when `self` is an object (last occurrence wins, as in Python).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Object(pairs) => pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `key in obj`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// `obj.get(key)` when it is a string.
    pub fn str_at(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// `obj.get(key) is True`.
    pub fn is_true_at(&self, key: &str) -> bool {
        matches!(self.get(key), Some(Value::Bool(true)))
    }

    /// `obj.get(key) == s`.
    pub fn str_eq(&self, key: &str, s: &str) -> bool {
        self.str_at(key) == Some(s)
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Value::Object(_))
    }

    /// The first key in Python dict order.
    pub fn first_key(&self) -> Option<&str> {
        match self {
            Value::Object(pairs) => pairs.first().map(|(k, _)| k.as_ref()),
            _ => None,
        }
    }

    /// The first key (in Python dict order) matching `pred`.
    pub fn find_key(&self, pred: impl Fn(&str) -> bool) -> Option<&str> {
        match self {
            Value::Object(pairs) => pairs.iter().map(|(k, _)| k.as_ref()).find(|k| pred(k)),
            _ => None,
        }
    }

    /// `dict.items()` of the Python dict built from this object: keys in first-occurrence order,
    /// each with its last value. O(n).
    pub fn dict_items(&self) -> Vec<(&str, &Value<'a>)> {
        let Value::Object(pairs) = self else {
            return Vec::new();
        };
        let mut last: std::collections::HashMap<&str, &Value<'a>> =
            std::collections::HashMap::with_capacity(pairs.len());
        for (k, v) in pairs {
            last.insert(k.as_ref(), v);
        }
        let mut out = Vec::with_capacity(last.len());
        for (k, _) in pairs {
            if let Some(v) = last.remove(k.as_ref()) {
                out.push((k.as_ref(), v));
            }
        }
        out
    }

    /// Elements when this is an array.
    pub fn items(&self) -> &[Value<'a>] {
        match self {
            Value::Array(items) => items,
            _ => &[],
        }
    }
}

/// Objects up to this many pairs are checked for duplicate keys pairwise, larger ones by hash.
const DUP_SCAN_MAX: usize = 16;

/// An object's pairs repeat a key (the Python dict keeps fewer pairs than the text has).
pub fn has_duplicate_keys(pairs: &[(Cow<'_, str>, Value<'_>)]) -> bool {
    if pairs.len() <= DUP_SCAN_MAX {
        pairs.iter().enumerate().any(|(i, (k, _))| {
            pairs
                .get(..i)
                .unwrap_or_default()
                .iter()
                .any(|(j, _)| j == k)
        })
    } else {
        let mut seen = std::collections::HashSet::with_capacity(pairs.len());
        pairs.iter().any(|(k, _)| !seen.insert(k.as_ref()))
    }
}
