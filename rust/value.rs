//! The parsed JSON value of one line, borrowing from the line where it can.
//!
//! Objects keep every pair in input order, duplicates included; lookups return the *last* value
//! for a key and iteration is in first-occurrence order, which is exactly what a Python dict
//! built from the same text holds (so the Rust dialects see what the reference sees).
//!
//! The parser puts a line's containers and decoded strings in a per-group arena
//! ([`crate::parse::parse_line_in`]): every part of its tree is then borrowed (`Cow::Borrowed`),
//! so dropping the tree frees nothing node by node (the arena is reset as a whole). Values
//! built by code (events' extras, tests, the fuzz mutators) own theirs (`Cow::Owned`).

use std::borrow::Cow;

/// An object's pair: the key and its value.
pub type Pair<'a> = (Cow<'a, str>, Value<'a>);

/// A JSON value. Integers beyond `i64` keep their exact decimal text.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    BigInt(&'a str),
    Float(f64),
    Str(Cow<'a, str>),
    Array(Nodes<'a, Value<'a>>),
    Object(Nodes<'a, Pair<'a>>),
}

/// A container's children: borrowed (from the parser's arena) or owned (built by code). A
/// `Cow<'a, [T]>` would do but for variance: its `Owned` is a projection (`<[T] as
/// ToOwned>::Owned`), which made `Value<'a>` invariant in `'a`.
pub enum Nodes<'a, T> {
    Borrowed(&'a [T]),
    Owned(Vec<T>),
}

impl<T> Nodes<'_, T> {
    /// The children, owned from now on (borrowed ones are cloned first), to edit.
    pub fn to_mut(&mut self) -> &mut Vec<T>
    where
        T: Clone,
    {
        if let Nodes::Borrowed(s) = *self {
            *self = Nodes::Owned(s.to_vec());
        }
        match self {
            Nodes::Owned(v) => v,
            // made owned just above (as `Cow::to_mut` does it)
            Nodes::Borrowed(_) => unreachable!(),
        }
    }
}

impl<T> FromIterator<T> for Nodes<'_, T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Nodes::Owned(iter.into_iter().collect())
    }
}

impl<T> std::ops::Deref for Nodes<'_, T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Nodes::Borrowed(s) => s,
            Nodes::Owned(v) => v,
        }
    }
}

impl<T> From<Vec<T>> for Nodes<'_, T> {
    fn from(v: Vec<T>) -> Self {
        Nodes::Owned(v)
    }
}

impl<'a, T> From<&'a [T]> for Nodes<'a, T> {
    fn from(s: &'a [T]) -> Self {
        Nodes::Borrowed(s)
    }
}

impl<T: Clone> Clone for Nodes<'_, T> {
    fn clone(&self) -> Self {
        match self {
            Nodes::Borrowed(s) => Nodes::Borrowed(s),
            Nodes::Owned(v) => Nodes::Owned(v.clone()),
        }
    }
}

/// Equal children, borrowed or owned alike.
impl<T: PartialEq> PartialEq for Nodes<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// The children's list, borrowed or owned alike (the fuzz targets compare trees' Debug text).
impl<T: std::fmt::Debug> std::fmt::Debug for Nodes<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<'s, T> IntoIterator for &'s Nodes<'_, T> {
    type Item = &'s T;
    type IntoIter = std::slice::Iter<'s, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
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
        for (k, v) in pairs.iter() {
            last.insert(k.as_ref(), v);
        }
        let mut out = Vec::with_capacity(last.len());
        for (k, _) in pairs.iter() {
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

/// Objects up to this many pairs are checked for duplicate keys pairwise (few comparisons, most
/// of them settled by the lengths).
const DUP_PAIRWISE_MAX: usize = 4;
/// Objects up to this many pairs are checked through [`KeyFilter`], larger ones by hash set.
const DUP_FILTER_MAX: usize = 64;

/// An object's pairs repeat a key (the Python dict keeps fewer pairs than the text has).
pub fn has_duplicate_keys(pairs: &[Pair<'_>]) -> bool {
    let earlier = |i: usize, k: &Cow<'_, str>| {
        pairs
            .get(..i)
            .unwrap_or_default()
            .iter()
            .any(|(j, _)| j == k)
    };
    if pairs.len() <= DUP_PAIRWISE_MAX {
        pairs.iter().enumerate().any(|(i, (k, _))| earlier(i, k))
    } else if pairs.len() <= DUP_FILTER_MAX {
        // a key is compared with the earlier ones only when its bit is already set
        let mut seen = KeyFilter::default();
        pairs
            .iter()
            .enumerate()
            .any(|(i, (k, _))| seen.insert(k.as_bytes()) && earlier(i, k))
    } else {
        let mut seen = std::collections::HashSet::with_capacity(pairs.len());
        pairs.iter().any(|(k, _)| !seen.insert(k.as_ref()))
    }
}

/// A 1024-bit Bloom filter of keys, two bits a key (two 10-bit slices of [`key_hash`]): a key
/// that finds either of its bits unset is new for sure. On the corpora's objects (up to 18 keys)
/// no key is compared with the others; one bit a key made a few repeated pairs of keys collide
/// on most lines.
#[derive(Default)]
struct KeyFilter([u64; 16]);

impl KeyFilter {
    /// Set the key's bits; whether both were set already (an equal key, or a collision).
    #[inline]
    fn insert(&mut self, key: &[u8]) -> bool {
        let h = key_hash(key);
        self.set(h >> 54) & self.set((h >> 44) & 1023)
    }

    /// Set bit `at` (below 1024); whether it was set.
    #[inline]
    fn set(&mut self, at: u64) -> bool {
        let bit = 1u64 << (at & 63);
        let Some(word) = self.0.get_mut((at >> 6) as usize) else {
            return true;
        };
        let was = *word & bit != 0;
        *word |= bit;
        was
    }
}

/// A 64-bit hash of a key from at most three of its 8-byte words (first, middle, last, which
/// overlap on short keys) and its length, mixed by one 128-bit multiply (as foldhash does). Keys
/// of one object differ early, late or in length; equal keys hash equal.
#[inline]
fn key_hash(k: &[u8]) -> u64 {
    let n = k.len();
    let le64 = |at: usize| {
        k.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let le32 = |at: usize| {
        k.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map_or(0, u32::from_le_bytes)
    };
    let byte = |at: usize| u64::from(k.get(at).copied().unwrap_or(0));
    let x = if n >= 8 {
        le64(0) ^ le64(n - 8).rotate_left(21) ^ le64(n / 2 - 4).rotate_left(42)
    } else if n >= 4 {
        u64::from(le32(0)) | u64::from(le32(n - 4)) << 32
    } else if n > 0 {
        byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16
    } else {
        0
    };
    let p = u128::from(x ^ (n as u64) << 56) * 0x9E37_79B9_7F4A_7C15;
    (p as u64) ^ (p >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(keys: &[String]) -> Vec<(Cow<'_, str>, Value<'_>)> {
        keys.iter()
            .map(|k| (Cow::Borrowed(k.as_str()), Value::Null))
            .collect()
    }

    /// Whatever the number of keys (the pairwise, filter and hash-set ranges and their edges),
    /// a repeat is found wherever its two keys stand, and distinct keys are never one.
    #[test]
    fn duplicate_keys_at_every_size_and_place() {
        // keys of every length class of `key_hash` (empty, 1-3, 4-7, 8+ bytes), some differing
        // only in the middle (the long ones) or only in length
        let key = |i: usize| match i % 5 {
            0 => format!("k{i}"),
            1 => format!("key_{i:03}_tokens"),
            2 => format!("ephemeral_{i}_input_tokens"),
            3 => "x".repeat(i / 5),
            _ => format!("{i}"),
        };
        for n in [0, 1, 2, 3, 4, 5, 6, 16, 17, 63, 64, 65, 100] {
            let keys: Vec<String> = (0..n).map(key).collect();
            assert!(!has_duplicate_keys(&object(&keys)), "{n}: {keys:?}");
            for a in 0..n {
                for b in [0, a / 2, n.saturating_sub(1)] {
                    if b <= a {
                        continue;
                    }
                    let mut dup = keys.clone();
                    if let Some(k) = keys.get(a) {
                        if let Some(slot) = dup.get_mut(b) {
                            slot.clone_from(k);
                        }
                    }
                    assert!(has_duplicate_keys(&object(&dup)), "{n} {a} {b}");
                }
            }
        }
        // owned and borrowed keys of the same text are the same key
        let pairs = vec![
            (Cow::Owned("a\"b".to_string()), Value::Null),
            (Cow::Borrowed("x"), Value::Null),
            (Cow::Borrowed("y"), Value::Null),
            (Cow::Borrowed("z"), Value::Null),
            (Cow::Borrowed("a\"b"), Value::Null),
        ];
        assert!(has_duplicate_keys(&pairs));
    }

    /// Keys whose filter bits are all set by others (collisions) are compared, not taken as
    /// repeats: 1024 distinct keys fill the filter, and an object of 64 of them is still free
    /// of repeats.
    #[test]
    fn filter_collisions_are_not_repeats() {
        let keys: Vec<String> = (0..64).map(|i| format!("key{i}")).collect();
        let mut f = KeyFilter::default();
        for i in 0..4096 {
            f.insert(format!("other{i}").as_bytes());
        }
        assert!(keys.iter().all(|k| f.insert(k.as_bytes())));
        assert!(!has_duplicate_keys(&object(&keys)));
        // equal keys hash equal, from borrowed or owned text alike
        assert_eq!(key_hash(b"uuid"), key_hash("uuid".to_string().as_bytes()));
        assert_ne!(
            key_hash(b"ephemeral_5m_input_tokens"),
            key_hash(b"ephemeral_1h_input_tokens")
        );
    }
}
