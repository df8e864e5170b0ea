//! Per-line budgets and the lexical scan that enforces them before anything is parsed.
//!
//! Mirrored by `scan_budget` in `reference/parse.py`. A *node* is a container, a string (object
//! keys included) or a scalar token; depth counts open containers. The scan is lexical, so a
//! budget error never depends on whether the line is valid JSON, and it runs before the parser,
//! so no allocation is ever proportional to an over-budget line.

/// The three per-line limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_line_bytes: usize,
    pub max_depth: usize,
    pub max_nodes: usize,
}

/// An allocation whose size came from the input failed (`try_reserve`); the Python layer raises
/// `MemoryError`. Nothing is half-applied: the state that was being grown is left as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Bytes (or elements, for vectors of records) that could not be reserved.
    pub requested: usize,
}

impl OutOfMemory {
    /// `try_reserve` of `additional` more elements on `v`, as a typed error.
    pub fn reserve<T>(v: &mut Vec<T>, additional: usize) -> Result<(), OutOfMemory> {
        v.try_reserve(additional).map_err(|_| OutOfMemory {
            requested: additional.saturating_mul(std::mem::size_of::<T>()),
        })
    }

    /// `try_reserve` of `additional` more bytes on `s`.
    pub fn reserve_str(s: &mut String, additional: usize) -> Result<(), OutOfMemory> {
        s.try_reserve(additional).map_err(|_| OutOfMemory {
            requested: additional,
        })
    }
}

impl std::fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "out of memory: could not allocate {} more bytes",
            self.requested
        )
    }
}

/// Upper bound accepted for `max_depth` (both implementations recurse once per level).
pub const MAX_DEPTH_LIMIT: usize = 512;

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_line_bytes: 64 << 20,
            max_depth: 64,
            max_nodes: 1_000_000,
        }
    }
}

/// Which limit a line crossed first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    Depth,
    Nodes,
}

impl Over {
    /// The stable error code.
    pub fn code(self) -> &'static str {
        match self {
            Over::Depth => "too_deep",
            Over::Nodes => "too_many_nodes",
        }
    }
}

#[inline]
fn is_delim(c: u8) -> bool {
    matches!(
        c,
        b'[' | b']' | b'{' | b'}' | b'"' | b',' | b':' | b' ' | b'\t' | b'\r' | b'\n'
    )
}

/// Scan a JSON candidate line; `Some` names the first limit crossed in byte order.
pub fn scan(line: &[u8], max_depth: usize, max_nodes: usize) -> Option<Over> {
    let mut depth = 0usize;
    let mut nodes = 0usize;
    let n = line.len();
    let mut i = 0usize;
    while let Some(&c) = line.get(i) {
        match c {
            b'"' => {
                nodes += 1;
                if nodes > max_nodes {
                    return Some(Over::Nodes);
                }
                i += 1;
                loop {
                    match memchr::memchr2(b'"', b'\\', line.get(i..).unwrap_or_default()) {
                        None => return None,
                        Some(k) if line.get(i + k) == Some(&b'\\') => i += k + 2,
                        Some(k) => {
                            i += k + 1;
                            break;
                        }
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                nodes += 1;
                if depth > max_depth {
                    return Some(Over::Depth);
                }
                if nodes > max_nodes {
                    return Some(Over::Nodes);
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b',' | b':' | b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            _ => {
                nodes += 1;
                if nodes > max_nodes {
                    return Some(Over::Nodes);
                }
                i += 1;
                while i < n && !line.get(i).is_some_and(|&c| is_delim(c)) {
                    i += 1;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nodes_and_depth() {
        assert_eq!(scan(br#"{"a":[1,2,{"b":null}]}"#, 3, 8), None);
        assert_eq!(scan(br#"{"a":[1,2,{"b":null}]}"#, 2, 8), Some(Over::Depth));
        assert_eq!(scan(br#"{"a":[1,2,{"b":null}]}"#, 3, 7), Some(Over::Nodes));
        assert_eq!(scan(br#"["[[[[", "\"[[["]"#, 1, 10), None);
        assert_eq!(scan(b"[[[", 2, 10), Some(Over::Depth));
        assert_eq!(scan(b"[\"abc\\", 2, 2), None);
    }
}
