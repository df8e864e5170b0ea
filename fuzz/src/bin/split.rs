//! Target: the split of a stream at newlines (`rust/split.rs`). Arbitrary bytes cut into
//! ranges of a target size chosen by the input (1 to 256 bytes, so even tiny inputs are cut
//! at many LFs), each range normalized apart (range 0 as the stream's head, the others
//! resumed with the planned dialect and dialect context at their offset) and joined with `seq` renumbered, must
//! give exactly the bytes of `normalize_jsonl` of the whole input, for every dialect and
//! `auto`, default and small budgets. Every planned range but the last ends right after an
//! LF and the ranges cover the input in order.
#![no_main]

use _native::jsonl::normalize_jsonl;
use _native::split::{normalize_split, plan};
use checkfu_fast_fuzz::{input, pick};

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let seed = data.first().copied().unwrap_or(0);
    let (d, budget) = pick(seed);
    let target = 1 + u64::from(data.get(1).copied().unwrap_or(0));
    let Ok(whole) = normalize_jsonl(data, d.clone(), budget, _native::fields::Sel::ALL) else {
        return 0;
    };
    let mut src: &[u8] = data;
    let Ok(p) = plan(&mut src, d.clone(), budget, target) else {
        return 0;
    };
    assert_eq!(p.ranges.first().map(|r| r.0), Some(0));
    assert_eq!(p.ranges.last().map(|r| r.1), Some(data.len() as u64));
    for w in p.ranges.windows(2) {
        if let [(a0, a1), (b0, b1)] = w {
            assert!(a0 < a1 && a1 == b0 && b0 < b1, "{:?}", p.ranges);
            let cut = usize::try_from(*a1).unwrap_or(0);
            assert_eq!(data.get(cut - 1), Some(&b'\n'), "cut not after an LF");
        }
    }
    assert_eq!(p.resume.is_some(), p.ranges.len() > 1);
    assert_eq!(p.contexts.len(), p.ranges.len());
    let Ok(split) = normalize_split(data, d, budget, target) else {
        return 0;
    };
    assert!(
        split == whole,
        "split != whole (target {target}, ranges {:?})\nsplit:\n{}\nwhole:\n{}",
        p.ranges,
        String::from_utf8_lossy(&split),
        String::from_utf8_lossy(&whole)
    );
    0
}
