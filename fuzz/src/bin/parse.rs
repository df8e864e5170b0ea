//! Target (b): the parser and the lexical budget scan agree. A budget error reported while
//! parsing is the one the scan reports; a clean parse means the scan finds nothing.
#![no_main]

use _native::budget::scan;
use _native::parse::{parse, parse_within, Failure};
use checkfu_fast_fuzz::input;

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let (limits, body) = data.split_at(data.len().min(2));
    let max_depth = 1 + usize::from(limits.first().copied().unwrap_or(63));
    let max_nodes = 1 + usize::from(limits.get(1).copied().unwrap_or(255)) * 16;
    let Ok(text) = std::str::from_utf8(body) else {
        return 0;
    };
    let scanned = scan(body, max_depth, max_nodes);
    match parse_within(text, max_depth, max_nodes) {
        Ok(_) => assert_eq!(scanned, None, "parsed but the scan is over budget"),
        Err(Failure::Over(o)) => assert_eq!(scanned, Some(o), "parser and scan disagree"),
        Err(Failure::Syntax(e)) => assert!(e.offset <= body.len()),
        Err(Failure::OutOfMemory(_)) => {}
    }
    let _ = parse(text);
    0
}
