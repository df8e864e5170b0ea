//! Target: this project's strict parser against serde_json on the same text. Whatever one
//! accepts the other accepts, with the same value (integers exact, floats bit for bit, strings,
//! objects as Python dicts), except where the two differ by design: a lone surrogate escape
//! (repaired and counted here, rejected there), nesting beyond serde_json's 128 levels, an
//! integer of more than 4000 digits (rejected here as out of range, as Python does), and an
//! integer beyond `f64`'s range (accepted here, as by Python; serde_json reads it as `f64`).
//! Also the writers' copy rule (`parse::Line::canonical`): the text is reported canonical
//! exactly when writing the value again gives the value's own text, byte for byte.
#![no_main]

use _native::jsonl::write_value;
use _native::parse::{parse, parse_line, HARD_DEPTH};
use checkfu_fast_fuzz::input;
use checkfu_fast_fuzz::oracle::{has_huge_int, rejects_by_design, same};

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let ours = parse(text);
    if let Ok(line) = parse_line(text, HARD_DEPTH, usize::MAX) {
        let mut again = Vec::new();
        write_value(&mut again, &line.value);
        let own = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        match line.canonical {
            Some(t) => assert_eq!(again, t.as_bytes(), "copied text is not the written form"),
            None => assert_ne!(again, own.as_bytes(), "written form not recognised: {text:?}"),
        }
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(theirs) => match &ours {
            Ok((v, repairs)) => {
                assert_eq!(
                    *repairs, 0,
                    "repaired a string serde_json took as valid: {text:?}"
                );
                assert!(
                    same(v, &theirs),
                    "values differ: {text:?}\nours {v:?}\nserde {theirs:?}"
                );
            }
            Err(e) => assert_eq!(
                e.message, "number out of range",
                "rejected valid JSON: {text:?}: {e:?}"
            ),
        },
        Err(e) => {
            if let Ok((v, repairs)) = &ours {
                let huge = e.to_string().contains("number out of range") && has_huge_int(v);
                assert!(
                    rejects_by_design(&e) || *repairs > 0 || huge,
                    "accepted what serde_json rejects ({e}): {text:?} -> {v:?}"
                );
            }
        }
    }
    0
}
