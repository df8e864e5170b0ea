//! Target (c): arbitrary mapping documents compile or are refused without panicking, and a
//! compiled mapping evaluates any line.
#![no_main]

use _native::mapping::Mapping;
use _native::parse::parse;
use checkfu_fast_fuzz::input;

const NORTH: &str = include_str!("../../../python/checkfu_fast/mappings/north.json");

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    // the input as a mapping, evaluated on itself; and the shipped mapping on the input
    let line = parse(text).ok();
    for m in [Mapping::compile(text).ok(), Mapping::compile(NORTH).ok()]
        .into_iter()
        .flatten()
    {
        if let Some((v, _)) = &line {
            let mut out = Vec::new();
            m.map(v, &mut out);
            let _ = m.meta(v);
            let _ = m.sniffs(v);
        }
    }
    0
}
