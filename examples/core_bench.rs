//! The Rust core's own speed beside serde_json and simd-json on the same lines, no Python:
//!
//! ```sh
//! cargo run --release --example core_bench [--features arrow] -- FILE... [--rounds N] [--only NAME]
//! ```
//!
//! FILE is a JSONL stream (the benches' generated corpora: `benches/corpus.py`, or
//! `../shared/corpus/real/*/*.jsonl` concatenated). For each file it prints MB/s of input (best
//! of N rounds, default 7) for:
//!
//! * `parse`: split at LF, UTF-8 check, this project's strict parser (`parse_line_in`, default
//!   budgets, canonical text looked for) on every non-blank line; the tree is built in an arena
//!   (borrowed strings), which is reset after each line;
//! * `normalize`: the whole core stream path without output: framing, budgets, parse, `auto`
//!   sniffing, dialect mapping (events built and dropped);
//! * `jsonl`: `normalize_jsonl`, the events written as JSONL (framing + parse + dialect + writer);
//! * `jsonl_lean`: the same with `fields="lean"` (no `raw`, no `parsed`);
//! * `arrow_lean`, `arrow` (with `--features arrow`): the events as Arrow record batches, lean
//!   and full (the columns of docs/arrow.md);
//! * `serde_json`: `serde_json::from_slice::<serde_json::Value>` per line (owned tree);
//! * `serde_json_ignored`: `serde_json::from_slice::<IgnoredAny>` (validation only, no tree);
//! * `simd_json`: `simd_json::to_owned_value` per line, on a copy of the line (simd-json parses
//!   in place; the copy is counted, it is a memcpy at ~10 GB/s).
//!
//! Dev-dependencies only: the library build never sees serde_json or simd-json.
use std::time::Instant;

use _native::budget::Budget;

type Bench = fn(&[u8]) -> usize;

/// Non-blank lines, split with memchr (as the core's framer does).
fn lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', data)
        .chain(std::iter::once(data.len()))
        .filter_map(move |end| {
            let line = data.get(start..end).unwrap_or_default();
            start = end + 1;
            line.iter()
                .any(|c| !c.is_ascii_whitespace())
                .then_some(line)
        })
}

fn ours_parse(data: &[u8]) -> usize {
    let b = Budget::default();
    let mut n = 0;
    // as the streams parse: into an arena reset after each line, the parser's stacks kept
    let mut bump = bumpalo::Bump::new();
    let mut scratch = _native::parse::Scratch::default();
    for line in lines(data) {
        let Ok(text) = simdutf8::basic::from_utf8(line) else {
            continue;
        };
        bump.reset();
        if let Ok(l) =
            _native::parse::parse_line_in(text, &bump, &mut scratch, b.max_depth, b.max_nodes, true)
        {
            n += usize::from(l.value.is_object());
        }
    }
    n
}

fn ours_normalize(data: &[u8]) -> usize {
    let b = Budget::default();
    let mut engine = _native::normalize::Engine::new(None, b);
    let mut n = 0;
    let mut ctx = _native::dialect::Context::default();
    // as the streams parse: into an arena reset after each line, the parser's stacks kept
    let mut bump = bumpalo::Bump::new();
    let mut scratch = _native::parse::Scratch::default();
    let mut run =
        |engine: &_native::normalize::Engine, items: &[_native::normalize::Item], chunk: &[u8]| {
            let Some(d) = engine.dialect() else {
                return;
            };
            for it in items {
                bump.reset();
                if let Ok(Some(p)) = _native::normalize::prepare_in(
                    it.span.bytes(chunk),
                    it.span.total,
                    &b,
                    true,
                    &bump,
                    &mut scratch,
                ) {
                    n += _native::normalize::map_line(it.span.position, 0, &p, d, &mut ctx)
                        .events
                        .len();
                }
            }
        };
    if let Ok(items) = engine.feed(data) {
        run(&engine, &items, data);
    }
    if let Ok(items) = engine.finish() {
        run(&engine, &items, &[]);
    }
    n
}

fn ours_jsonl(data: &[u8]) -> usize {
    _native::jsonl::normalize_jsonl(data, None, Budget::default(), _native::fields::Sel::ALL)
        .map_or(0, |o| o.len())
}

fn ours_jsonl_lean(data: &[u8]) -> usize {
    _native::jsonl::normalize_jsonl(data, None, Budget::default(), _native::fields::Sel::lean())
        .map_or(0, |o| o.len())
}

#[cfg(feature = "arrow")]
fn arrow_with(data: &[u8], sel: _native::fields::Sel) -> usize {
    let mut engine = _native::normalize::Engine::new(None, Budget::default());
    let mut sink = _native::arrow::ArrowSink::new(_native::arrow::BATCH_ROWS, sel);
    sink.expect(data.len());
    let mut seq = 0u64;
    if _native::sink::feed(&mut engine, &mut seq, data, &mut sink).is_err()
        || _native::sink::finish(&mut engine, &mut seq, &mut sink).is_err()
    {
        return 0;
    }
    sink.finish()
        .map_or(0, |b| b.iter().map(|b| b.num_rows()).sum())
}

#[cfg(feature = "arrow")]
fn ours_arrow_lean(data: &[u8]) -> usize {
    arrow_with(data, _native::fields::Sel::lean())
}

#[cfg(feature = "arrow")]
fn ours_arrow(data: &[u8]) -> usize {
    arrow_with(data, _native::fields::Sel::ALL)
}

fn ours_fold(data: &[u8]) -> usize {
    _native::usage::fold_bytes(data, None, Budget::default(), None).map_or(0, |o| {
        std::hint::black_box(&o);
        1
    })
}

fn serde(data: &[u8]) -> usize {
    lines(data)
        .filter_map(|l| serde_json::from_slice::<serde_json::Value>(l).ok())
        .filter(serde_json::Value::is_object)
        .count()
}

fn serde_ignored(data: &[u8]) -> usize {
    lines(data)
        .filter(|l| serde_json::from_slice::<serde::de::IgnoredAny>(l).is_ok())
        .count()
}

fn simd(data: &[u8]) -> usize {
    let mut buf = Vec::new();
    let mut n = 0;
    for line in lines(data) {
        buf.clear();
        buf.extend_from_slice(line);
        if let Ok(v) = simd_json::to_owned_value(&mut buf) {
            n += usize::from(matches!(v, simd_json::OwnedValue::Object(_)));
        }
    }
    n
}

const BENCHES: &[(&str, Bench)] = &[
    ("parse", ours_parse),
    ("normalize", ours_normalize),
    ("fold", ours_fold),
    ("jsonl", ours_jsonl),
    ("jsonl_lean", ours_jsonl_lean),
    #[cfg(feature = "arrow")]
    ("arrow_lean", ours_arrow_lean),
    #[cfg(feature = "arrow")]
    ("arrow", ours_arrow),
    ("serde_json", serde),
    ("serde_json_ignored", serde_ignored),
    ("simd_json", simd),
];

fn main() {
    let mut files = Vec::new();
    let mut rounds = 7usize;
    let mut only: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => rounds = args.next().and_then(|r| r.parse().ok()).unwrap_or(rounds),
            "--only" => only = args.next(),
            _ => files.push(a),
        }
    }
    if files.is_empty() {
        eprintln!("usage: core_bench FILE... [--rounds N] [--only NAME]");
        std::process::exit(2);
    }
    println!(
        "| file | MB | {} |",
        BENCHES.iter().map(|b| b.0).collect::<Vec<_>>().join(" | ")
    );
    for name in &files {
        let Ok(data) = std::fs::read(name) else {
            eprintln!("cannot read {name}");
            std::process::exit(1);
        };
        let mut cells = Vec::new();
        for (bench, f) in BENCHES {
            if only.as_deref().is_some_and(|o| o != *bench) {
                cells.push("-".to_string());
                continue;
            }
            let mut best = f64::INFINITY;
            let mut check = 0;
            for _ in 0..rounds.max(1) {
                let t = Instant::now();
                check = std::hint::black_box(f(std::hint::black_box(&data)));
                best = best.min(t.elapsed().as_secs_f64());
            }
            eprintln!("{name} {bench}: {check}");
            cells.push(format!("{:.0}", data.len() as f64 / best / 1e6));
        }
        println!(
            "| {name} | {:.1} | {} |",
            data.len() as f64 / 1e6,
            cells.join(" | ")
        );
    }
}
