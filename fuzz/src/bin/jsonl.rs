//! Target: the JSONL writer. Bytes through `normalize_jsonl` (a dialect and budgets chosen by
//! the input) must equal the same bytes fed in a random chunking; every line must be strict
//! JSON this project's parser accepts, an object starting `{"v":"events/v1","seq":<i>,`, and
//! writing the parsed line again must give the same bytes (escapes and Python's float text
//! round-trip). What the Python dicts hold is checked by tests/test_jsonl.py and the atheris
//! differential.
#![no_main]

use _native::jsonl::{normalize_jsonl, write_value, Stream};
use checkfu_fast_fuzz::{input, pick};

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let seed = data.first().copied().unwrap_or(0);
    let (d, budget) = pick(seed);
    // an allocation failure is a typed error, never an abort; the fuzzer's inputs are small
    let Ok(whole) = normalize_jsonl(data, d.clone(), budget, _native::fields::Sel::ALL) else {
        return 0;
    };
    // any chunking, same bytes
    let step = 1 + usize::from(data.get(1).copied().unwrap_or(0)) % 61;
    let mut s = Stream::new(d, budget, None, _native::fields::Sel::ALL);
    let mut chunked = Vec::new();
    for chunk in data.chunks(step) {
        if s.feed(chunk, &mut chunked).is_err() {
            return 0;
        }
    }
    if s.finish(&mut chunked).is_err() {
        return 0;
    }
    assert_eq!(whole, chunked, "chunking changed the JSONL");
    // every line: strict JSON, numbered, and a fixed point of parse + write
    let text = std::str::from_utf8(&whole).expect("JSONL is UTF-8");
    let mut lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.pop(), Some(""), "JSONL does not end with LF");
    for (i, line) in lines.iter().enumerate() {
        let prefix = format!("{{\"v\":\"events/v1\",\"seq\":{i},");
        assert!(line.starts_with(&prefix), "line {i}: {line}");
        let Ok((v, repairs)) = _native::parse::parse(line) else {
            // json.dumps writes an overflowed usage sum as Infinity, which strict JSON rejects
            assert!(
                line.contains(":Infinity") || line.contains(":-Infinity"),
                "{line}"
            );
            continue;
        };
        assert_eq!(repairs, 0);
        let mut again = Vec::new();
        write_value(&mut again, &v);
        assert_eq!(again, line.as_bytes(), "write(parse(line)) != line");
    }
    0
}
