//! Target: the JSONL writer's output re-parsed by serde_json equals the events' values.
//! (a) The input as one JSON document: `write_value` of our parse, read back by serde_json,
//!     is the same value (integers of any size, floats bit for bit, strings with every escape).
//! (b) The input as a stream through `normalize_jsonl` (a dialect and budgets chosen by the
//!     input): every line is one JSON object serde_json reads, `seq` counts from 0, `position`
//!     is a byte offset inside the input, `raw` is a string, and `parsed` is the value of `raw`
//!     under this project's parser (null when it is not JSON) — the dict `normalize()` gives.
#![no_main]

use _native::jsonl::{normalize_jsonl, write_value};
use _native::parse::parse;
use checkfu_fast_fuzz::oracle::{has_huge_int, same};
use checkfu_fast_fuzz::{input, pick};

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let (head, body) = data.split_at(data.len().min(1));
    let seed = head.first().copied().unwrap_or(0);
    if let Ok((v, _)) = std::str::from_utf8(body)
        .map_err(drop)
        .and_then(|t| parse(t).map_err(drop))
    {
        let mut out = Vec::new();
        write_value(&mut out, &v);
        match serde_json::from_slice::<serde_json::Value>(&out) {
            Ok(back) => assert!(same(&v, &back), "round trip changed {v:?} -> {back:?}"),
            // json.dumps's text beyond serde_json's limits: deep nesting, integers beyond f64
            Err(e) => assert!(
                e.to_string().contains("recursion limit")
                    || (e.to_string().contains("number out of range") && has_huge_int(&v)),
                "{e}: {out:?}"
            ),
        }
    }
    let (d, budget) = pick(seed);
    let Ok(jsonl) = normalize_jsonl(body, d, budget, _native::fields::Sel::ALL) else {
        return 0;
    };
    let text = std::str::from_utf8(&jsonl).expect("JSONL is UTF-8");
    let mut lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.pop(), Some(""), "JSONL does not end with LF");
    for (i, line) in lines.iter().enumerate() {
        let ev: serde_json::Value = match serde_json::from_str(line) {
            Ok(ev) => ev,
            Err(e) => {
                // json.dumps writes an overflowed usage sum as Infinity (not strict JSON);
                // `parsed` may nest deeper than serde_json's limit or hold an integer beyond
                // f64 (then our parser reads the line)
                let m = e.to_string();
                let huge = m.contains("number out of range")
                    && parse(line).is_ok_and(|(v, _)| has_huge_int(&v));
                assert!(
                    line.contains(":Infinity")
                        || line.contains(":-Infinity")
                        || m.contains("recursion limit")
                        || huge,
                    "line {i} is not JSON ({m}): {line}"
                );
                continue;
            }
        };
        assert_eq!(
            ev.get("seq").and_then(serde_json::Value::as_u64),
            Some(i as u64),
            "{line}"
        );
        let pos = ev.get("position").and_then(serde_json::Value::as_u64);
        assert!(pos.is_some_and(|p| p <= body.len() as u64), "{line}");
        let raw = ev
            .get("raw")
            .and_then(serde_json::Value::as_str)
            .expect("raw is a string");
        match ev.get("parsed") {
            Some(serde_json::Value::Null) => {}
            Some(p) => {
                let Ok((v, _)) = parse(raw) else {
                    panic!("parsed is set but raw does not parse: {line}");
                };
                assert!(same(&v, p), "parsed differs from raw's value: {line}");
            }
            None => panic!("no parsed key: {line}"),
        }
    }
    0
}
