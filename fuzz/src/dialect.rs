//! The per-dialect target: a JSONL stream through framing, budgets, parsing and ONE named
//! dialect, plus a structure-aware mutator that edits real lines of that dialect.
//!
//! [`check`] asserts, for the default budget and a small one derived from the input:
//! - no panic (any panic aborts: libFuzzer reports a crash);
//! - every non-blank line gives at least one event, at that line's position, and nothing else
//!   gives one (an over-long whitespace line excepted, as in the Python tests);
//! - every line carries the dialect's name; every event is schema-shaped (kind in the enum,
//!   non-empty subtype, the payload its kind requires);
//! - feeding the bytes in random chunks gives exactly the records of one feed (which also
//!   checks determinism).
//!
//! [`mutate`] is libFuzzer's custom mutator: a third of the time plain byte mutation, else it
//! parses a line of the input and edits its tree with 1-3 of: graft a subtree of a real line of
//! the dialect, splice another input line (its JSON value, or its text as a string) as a
//! node's value, swap in a string seen in real lines (types, keys), a boundary scalar, a key
//! removed / renamed / duplicated, a string byte-mutated; or it inserts a whole real line.
//! Crashers therefore stay plain JSONL that any path (and the Python differential) replays.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use _native::budget::Budget;
use _native::dialect::AnyDialect;
use _native::normalize::{map_line, prepare, Engine};
use _native::parse::parse;
use _native::value::Value;

use crate::small_budget;
use crate::tree::{count, nth, nth_mut, nth_object_mut, objects, strings, write};

/// FNV-1a, for choices that must be a pure function of the input.
pub fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// xorshift64*.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (0 when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
}

/// Real lines of one dialect, parsed once: the golden inputs `vectors/events/<name>/` and, when
/// present, the real transcripts `../shared/corpus/real/<name>/`.
pub struct Golden {
    pub lines: Vec<Value<'static>>,
    pub strings: Vec<&'static str>,
}

fn read_lines(dir: &std::path::Path, suffix: &str, out: &mut Vec<Value<'static>>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let text: &'static str = Box::leak(text.into_boxed_str());
        for line in text.lines() {
            if let Ok((v, _)) = parse(line) {
                if v.is_object() {
                    out.push(v);
                }
            }
        }
    }
}

/// The real lines of `name` (loaded on first use, kept for the process).
pub fn golden(name: &str) -> &'static Golden {
    static ALL: OnceLock<Mutex<Vec<(String, &'static Golden)>>> = OnceLock::new();
    let all = ALL.get_or_init(|| Mutex::new(Vec::new()));
    let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, g)) = all.iter().find(|(n, _)| n == name) {
        return g;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut lines = Vec::new();
    read_lines(
        &root.join("vectors/events").join(name),
        ".input.jsonl",
        &mut lines,
    );
    read_lines(
        &root.join("../shared/corpus/real").join(name),
        ".jsonl",
        &mut lines,
    );
    let mut set = BTreeSet::new();
    for v in &lines {
        let mut s = Vec::new();
        strings(v, &mut s);
        set.extend(s.into_iter().filter(|s| s.len() <= 64));
    }
    // SAFETY of 'static: the lines are leaked above and never freed
    let strings: Vec<&'static str> = set
        .into_iter()
        .map(|s| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) })
        .collect();
    let g: &'static Golden = Box::leak(Box::new(Golden { lines, strings }));
    all.push((name.to_owned(), g));
    g
}

// -- the target -------------------------------------------------------------------------------

const KINDS: [&str; 5] = ["message", "tool_call", "status", "error", "usage"];

/// Frame `data` in `chunks` (sizes; the rest in one piece), map every line with `d`, check the
/// per-line invariants, and return each line's position and full record (Debug text).
fn records(
    name: &str,
    data: &[u8],
    d: &AnyDialect,
    budget: Budget,
    chunks: &[usize],
) -> Vec<(u64, String)> {
    let mut engine = Engine::new(Some(d.clone()), budget);
    let mut ctx = _native::dialect::Context::default();
    let mut out = Vec::new();
    let mut rest = data;
    let mut sizes = chunks.iter();
    loop {
        let last = rest.is_empty();
        let (chunk, tail) = if last {
            (rest, rest)
        } else {
            rest.split_at(sizes.next().copied().unwrap_or(rest.len()).min(rest.len()))
        };
        let Ok(items) = (if last {
            engine.finish()
        } else {
            engine.feed(chunk)
        }) else {
            return out; // an allocation failed (OutOfMemory): not a finding
        };
        assert_eq!(engine.dialect().map(AnyDialect::name), Some(name));
        for it in &items {
            assert!(
                it.fallback.is_none(),
                "a named dialect announced a fallback"
            );
            let bytes = it.span.bytes(chunk);
            let Ok(Some(p)) = prepare(bytes, it.span.total, &budget) else {
                continue;
            };
            let rec = map_line(it.span.position, bytes.len() as u64, &p, d, &mut ctx);
            assert!(!rec.events.is_empty(), "a non-blank line gave no event");
            assert_eq!(rec.dialect, name, "a line named another dialect");
            for e in &rec.events {
                assert!(
                    KINDS.contains(&e.kind),
                    "kind {:?} outside the enum",
                    e.kind
                );
                assert!(!e.subtype.is_empty(), "empty subtype: {e:?}");
                match e.kind {
                    "error" => assert!(e.error.is_some(), "error event without error: {e:?}"),
                    "message" => assert!(e.text.is_some(), "message event without text: {e:?}"),
                    "tool_call" => assert!(e.tool.is_some(), "tool_call event without tool: {e:?}"),
                    "usage" => assert!(e.usage.is_some(), "usage event without usage: {e:?}"),
                    _ => {}
                }
            }
            out.push((rec.position, format!("{rec:?}")));
        }
        if last {
            break;
        }
        rest = tail;
    }
    if let Some(err) = engine.take_stream_error() {
        assert!(out.is_empty(), "a UTF-16 stream also gave lines");
        assert_eq!(err.event.stream_bytes, Some(data.len() as u64));
        out.push((u64::MAX, format!("{err:?}")));
    }
    out
}

/// Start offsets of the `\n`-separated segments (after a BOM at byte 0), split into non-blank
/// and blank ones.
fn segments(data: &[u8]) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let start = if data.starts_with(b"\xef\xbb\xbf") {
        3
    } else {
        0
    };
    let (mut nonblank, mut blank) = (BTreeSet::new(), BTreeSet::new());
    let mut pos = start as u64;
    for seg in data.get(start..).unwrap_or_default().split(|&b| b == b'\n') {
        let is_blank = seg
            .iter()
            .all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c));
        if is_blank { &mut blank } else { &mut nonblank }.insert(pos);
        pos += seg.len() as u64 + 1;
    }
    (nonblank, blank)
}

/// Random chunk sizes (mostly small, sometimes up to 4 KiB), a pure function of `seed`.
fn chunk_sizes(seed: u64, total: usize) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut sizes = Vec::new();
    let mut covered = 0;
    while covered < total {
        let n = if rng.below(8) == 0 {
            1 + rng.below(4096)
        } else {
            1 + rng.below(64)
        };
        sizes.push(n);
        covered += n;
    }
    sizes
}

/// The per-dialect target body: see the module doc.
pub fn check(name: &str, data: &[u8]) {
    let Ok(d) = AnyDialect::from_name(name) else {
        panic!("unknown dialect {name}")
    };
    let h = fnv(data);
    let (nonblank, blank) = segments(data);
    for budget in [Budget::default(), small_budget((h >> 56) as u8)] {
        let whole = records(name, data, &d, budget, &[]);
        let parts = records(name, data, &d, budget, &chunk_sizes(h, data.len()));
        assert!(whole == parts, "chunking changed the records ({budget:?})");
        if whole.last().is_some_and(|(p, _)| *p == u64::MAX) {
            continue; // a UTF-16/UTF-32 stream: one event, no lines
        }
        let seen: BTreeSet<u64> = whole.iter().map(|(p, _)| *p).collect();
        assert_eq!(seen.len(), whole.len(), "two records at one position");
        assert!(
            nonblank.is_subset(&seen),
            "a non-blank line was lost ({budget:?})"
        );
        for p in seen.difference(&nonblank) {
            assert!(blank.contains(p), "a record at {p}, which starts no line");
            let rec = whole.iter().find(|(q, _)| q == p).map(|(_, r)| r.as_str());
            assert!(
                rec.unwrap_or_default().contains("line_too_long"),
                "a blank line gave an event other than line_too_long"
            );
        }
    }
}

// -- the mutator ------------------------------------------------------------------------------

fn special(rng: &mut Rng) -> Value<'static> {
    match rng.below(16) {
        0 => Value::Null,
        1 => Value::Bool(true),
        2 => Value::Bool(false),
        3 => Value::Int(0),
        4 => Value::Int(-1),
        5 => Value::Int(i64::MAX),
        6 => Value::Int(i64::MIN),
        7 => Value::BigInt("123456789012345678901234567890"),
        8 => Value::Float(-0.0),
        9 => Value::Float(1.5e300),
        10 => Value::Str(Cow::Borrowed("")),
        11 => Value::Array(Vec::new().into()),
        12 => Value::Object(Vec::new().into()),
        13 => Value::Str(Cow::Borrowed("\u{2028}\u{fffd}é中😀\"\\")),
        14 => Value::Str(Cow::Owned("x".repeat(1 + rng.below(3000)))),
        _ => {
            let mut v = Value::Int(1);
            for _ in 0..rng.below(80) {
                v = Value::Array(vec![v].into());
            }
            v
        }
    }
}

/// A node index other than the root when there is one.
fn site(rng: &mut Rng, v: &Value<'_>) -> usize {
    let n = count(v);
    if n > 1 && rng.below(16) != 0 {
        1 + rng.below(n - 1)
    } else {
        0
    }
}

fn golden_node(rng: &mut Rng, g: &'static Golden) -> Value<'static> {
    match g.lines.get(rng.below(g.lines.len())) {
        Some(line) => nth(line, rng.below(count(line)))
            .cloned()
            .unwrap_or(Value::Null),
        None => Value::Null,
    }
}

/// One tree edit of `v`; `others` are the input's lines (for splicing).
fn edit<'s>(
    rng: &mut Rng,
    g: &'static Golden,
    v: &mut Value<'s>,
    others: &[&'s [u8]],
    raw: &mut dyn FnMut(&mut Vec<u8>, usize),
) {
    match rng.below(7) {
        0 => {
            let node = golden_node(rng, g);
            let at = site(rng, v);
            if let Some(slot) = nth_mut(v, at) {
                *slot = node;
            }
        }
        1 => {
            let Some(&other) = others.get(rng.below(others.len())) else {
                return;
            };
            let text = String::from_utf8_lossy(other);
            let node = match &text {
                Cow::Borrowed(t) => match parse(t) {
                    Ok((p, _)) if rng.below(4) != 0 => p,
                    _ => Value::Str(Cow::Borrowed(t)),
                },
                Cow::Owned(t) => Value::Str(Cow::Owned(t.clone())),
            };
            let at = site(rng, v);
            if let Some(slot) = nth_mut(v, at) {
                *slot = node;
            }
        }
        2 => {
            let Some(&s) = g.strings.get(rng.below(g.strings.len())) else {
                return;
            };
            let at = site(rng, v);
            if let Some(slot) = nth_mut(v, at) {
                *slot = Value::Str(Cow::Borrowed(s));
            }
        }
        3 => {
            let node = special(rng);
            let at = site(rng, v);
            if let Some(slot) = nth_mut(v, at) {
                *slot = node;
            }
        }
        4 | 5 => {
            let n = objects(v);
            let op = rng.below(4);
            let key = g.strings.get(rng.below(g.strings.len())).copied();
            let node = golden_node(rng, g);
            let pick = rng.next_u64() as usize;
            let Some(pairs) = nth_object_mut(v, rng.below(n)) else {
                return;
            };
            let len = pairs.len();
            match op {
                0 if len > 0 => {
                    pairs.remove(pick % len);
                }
                1 if len > 0 => {
                    if let (Some(pair), Some(k)) = (pairs.get_mut(pick % len), key) {
                        pair.0 = Cow::Borrowed(k);
                    }
                }
                2 if len > 0 => {
                    // a duplicate key: the last occurrence wins on every path
                    if let Some((k, _)) = pairs.get(pick % len) {
                        let k = k.clone();
                        pairs.push((k, node));
                    }
                }
                _ => {
                    if let Some(k) = key {
                        pairs.push((Cow::Borrowed(k), node));
                    }
                }
            }
        }
        _ => {
            // byte-mutate a string found at a few random sites
            for _ in 0..4 {
                let at = site(rng, v);
                if let Some(Value::Str(s)) = nth_mut(v, at) {
                    let mut bytes = s.as_bytes().to_vec();
                    let max = bytes.len() + 16;
                    raw(&mut bytes, max);
                    *s = Cow::Owned(String::from_utf8_lossy(&bytes).into_owned());
                    return;
                }
            }
        }
    }
}

/// libFuzzer's custom mutator for dialect `name` (see the module doc). `raw(buf, max)` is the
/// default byte mutation (`LLVMFuzzerMutate`) applied to `buf` in place, up to `max` bytes.
pub fn mutate(
    name: &str,
    input: &[u8],
    max_size: usize,
    seed: u32,
    raw: &mut dyn FnMut(&mut Vec<u8>, usize),
) -> Vec<u8> {
    let mut rng = Rng::new(u64::from(seed));
    let g = golden(name);
    if rng.below(3) == 0 || g.lines.is_empty() {
        let mut out = input.to_vec();
        raw(&mut out, max_size);
        return out;
    }
    let lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    let objs: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            std::str::from_utf8(l)
                .ok()
                .and_then(|t| parse(t).ok())
                .is_some_and(|(v, _)| v.is_object())
        })
        .map(|(i, _)| i)
        .collect();
    let mut out_lines: Vec<Cow<'_, [u8]>> = lines.iter().map(|l| Cow::Borrowed(*l)).collect();
    if objs.is_empty() || rng.below(8) == 0 {
        // insert a whole real line
        let mut text = String::new();
        if let Some(line) = g.lines.get(rng.below(g.lines.len())) {
            write(line, &mut text);
        }
        let at = rng.below(out_lines.len() + 1);
        out_lines.insert(at, Cow::Owned(text.into_bytes()));
    } else {
        let li = objs.get(rng.below(objs.len())).copied().unwrap_or(0);
        let Some(text) = lines.get(li).and_then(|l| std::str::from_utf8(l).ok()) else {
            return input.to_vec();
        };
        let Ok((mut v, _)) = parse(text) else {
            return input.to_vec();
        };
        for _ in 0..1 + rng.below(3) {
            edit(&mut rng, g, &mut v, &lines, raw);
        }
        let mut text = String::new();
        write(&v, &mut text);
        if let Some(slot) = out_lines.get_mut(li) {
            *slot = Cow::Owned(text.into_bytes());
        }
    }
    let out = out_lines.join(&b'\n');
    if out.len() > max_size {
        let mut out = input.to_vec();
        raw(&mut out, max_size);
        return out;
    }
    out
}
