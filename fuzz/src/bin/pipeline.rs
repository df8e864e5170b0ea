//! Target (a)+(d): bytes in random chunkings through framing, budgets, parsing and a dialect
//! chosen by the input (all nine and `auto`), with the default and with small budgets.
#![no_main]

use _native::budget::Budget;
use checkfu_fast_fuzz::{input, pick_dialect, pipeline, small_budget};

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let seed = data.first().copied().unwrap_or(0);
    let d = pick_dialect(seed);
    pipeline(data, d.clone(), Budget::default());
    pipeline(data, d, small_budget(seed));
    0
}
