//! Shared helpers for the fuzz targets: turning libFuzzer's raw input into a slice, and the
//! invariants every target checks (a panic anywhere aborts, which libFuzzer reports as a crash).

pub mod dialect;
pub mod oracle;
pub mod tree;

use _native::budget::Budget;
use _native::dialect::{AnyDialect, DIALECTS};
use _native::normalize::{map_line, prepare, Engine};

/// Convert libFuzzer's input to a slice.
///
/// # Safety
/// `data` must point to `size` readable bytes (libFuzzer guarantees it) or be null with size 0.
pub unsafe fn input<'a>(data: *const u8, size: usize) -> &'a [u8] {
    if data.is_null() || size == 0 {
        &[]
    } else {
        // SAFETY: libFuzzer passes a valid buffer of `size` bytes for the call's duration.
        unsafe { std::slice::from_raw_parts(data, size) }
    }
}

/// Frame `data` (split at chunk sizes taken from its first bytes), prepare and map every line
/// with `dialect`; check that every non-blank line gives at least one event.
pub fn pipeline(data: &[u8], dialect: Option<AnyDialect>, budget: Budget) {
    let (sizes, body) = data.split_at(data.len().min(2));
    let step = 1 + sizes.iter().fold(0usize, |a, b| a * 7 + usize::from(*b)) % 97;
    let mut engine = Engine::new(dialect, budget);
    let mut ctx = _native::dialect::Context::default();
    let mut lines = 0usize;
    let mut emitted = 0usize;
    let mut chunks: Vec<&[u8]> = body.chunks(step).collect();
    chunks.push(&[]);
    for (i, chunk) in chunks.iter().enumerate() {
        let Ok(items) = (if i + 1 == chunks.len() {
            engine.finish()
        } else {
            engine.feed(chunk)
        }) else {
            return; // an allocation failed (OutOfMemory): not a finding
        };
        let Some(d) = engine.dialect().cloned() else {
            continue;
        };
        for it in &items {
            let bytes = it.span.bytes(chunk);
            if let Ok(Some(p)) = prepare(bytes, it.span.total, &budget) {
                lines += 1;
                let rec = map_line(it.span.position, bytes.len() as u64, &p, &d, &mut ctx);
                assert!(!rec.events.is_empty(), "a non-blank line gave no event");
                emitted += rec.events.len();
            }
        }
    }
    assert!(emitted >= lines);
    // a UTF-16/UTF-32 stream gives no lines, only its one event, which accounts for every byte
    if let Some(err) = engine.take_stream_error() {
        assert_eq!(lines, 0, "a UTF-16 stream also gave lines");
        assert_eq!(err.event.stream_bytes, Some(body.len() as u64));
        assert!(engine.take_stream_error().is_none(), "reported twice");
    }
}

/// Every dialect name, plus `auto` (None).
pub fn dialects() -> Vec<Option<AnyDialect>> {
    let mut out = vec![None];
    out.extend(
        DIALECTS
            .iter()
            .filter_map(|n| AnyDialect::from_name(n).ok())
            .map(Some),
    );
    out
}

/// The dialect an input's first byte `seed` picks (`auto` is None).
pub fn pick_dialect(seed: u8) -> Option<AnyDialect> {
    let all = dialects();
    all.get(usize::from(seed) % all.len()).cloned().flatten()
}

/// The dialect and budgets an input's first byte `seed` picks: the default budgets, or small
/// ones when the high bit is set.
pub fn pick(seed: u8) -> (Option<AnyDialect>, Budget) {
    let budget = if seed & 0x80 == 0 {
        Budget::default()
    } else {
        small_budget(seed)
    };
    (pick_dialect(seed), budget)
}

/// Small budgets so the fuzzer reaches the limits quickly.
pub fn small_budget(seed: u8) -> Budget {
    Budget {
        max_line_bytes: 16 + usize::from(seed) * 8,
        max_depth: 1 + usize::from(seed % 16),
        max_nodes: 1 + usize::from(seed) * 4,
    }
}

/// One libFuzzer binary for dialect `$name`: [`dialect::check`] as the target and
/// [`dialect::mutate`] as the custom mutator (with `LLVMFuzzerMutate` as its byte mutation).
#[macro_export]
macro_rules! dialect_target {
    ($name:literal) => {
        extern "C" {
            fn LLVMFuzzerMutate(data: *mut u8, size: usize, max_size: usize) -> usize;
        }

        #[no_mangle]
        pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
            // SAFETY: called by libFuzzer with a valid buffer.
            let data = unsafe { $crate::input(data, size) };
            $crate::dialect::check($name, data);
            0
        }

        #[no_mangle]
        pub extern "C" fn LLVMFuzzerCustomMutator(
            data: *mut u8,
            size: usize,
            max_size: usize,
            seed: u32,
        ) -> usize {
            // SAFETY: libFuzzer passes a buffer of `max_size` writable bytes holding `size`.
            let input = unsafe { $crate::input(data, size) }.to_vec();
            let mut raw = |buf: &mut Vec<u8>, max: usize| {
                let len = buf.len();
                buf.resize(max.max(len).max(1), 0);
                // SAFETY: `buf` holds `buf.len()` bytes, the first `len` of them the input.
                let n = unsafe { LLVMFuzzerMutate(buf.as_mut_ptr(), len, buf.len()) };
                buf.truncate(n);
            };
            let out = $crate::dialect::mutate($name, &input, max_size, seed, &mut raw);
            let n = out.len().min(max_size);
            // SAFETY: `n <= max_size`, the capacity libFuzzer gave us.
            unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), data, n) };
            n
        }
    };
}
