//! Target: the input decompressors (`rust/input.rs`, docs/errors.md). Arbitrary bytes, as
//! they are or behind a gzip or zstd magic (byte 0 picks), read through `input::decoded`
//! with read sizes drawn from byte 1: never a panic or a hang; the output is bounded (the read
//! loop stops at 64 MiB, a bomb costs time only); reading the same bytes again with another
//! read size (the loop stops at 16,384 reads, at most 64 MiB) gives the same bytes and the same outcome (an error at the same place).
#![no_main]

use std::io::Read;

use _native::input::decoded;
use checkfu_fast_fuzz::input;

const CAP: usize = 64 << 20;

/// Everything `data` decodes to (at most CAP bytes) read `step` bytes at a time, and whether
/// it ended in an error.
fn read_all(data: &[u8], step: usize) -> (Vec<u8>, bool) {
    let cap = CAP.min(step.saturating_mul(1 << 14));
    let mut r = match decoded(std::io::Cursor::new(data.to_vec())) {
        Ok(r) => r,
        Err(_) => return (Vec::new(), true),
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; step];
    while out.len() < cap {
        match r.read(&mut buf) {
            Ok(0) => return (out, false),
            Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
            Err(_) => return (out, true),
        }
    }
    (out, false)
}

#[no_mangle]
pub extern "C" fn LLVMFuzzerTestOneInput(data: *const u8, size: usize) -> i32 {
    // SAFETY: called by libFuzzer with a valid buffer.
    let data = unsafe { input(data, size) };
    let (head, body) = data.split_at(data.len().min(2));
    let mode = head.first().copied().unwrap_or(0);
    let step = 1 + usize::from(head.get(1).copied().unwrap_or(0)) * 37 % 70_000;
    let mut stream = match mode % 3 {
        0 => vec![0x1f, 0x8b],
        1 => vec![0x28, 0xb5, 0x2f, 0xfd],
        _ => Vec::new(),
    };
    stream.extend_from_slice(body);
    let (a, a_err) = read_all(&stream, step);
    let (b, b_err) = read_all(&stream, 1 << 16);
    let full = |v: &Vec<u8>, step: usize| v.len() >= CAP.min(step.saturating_mul(1 << 14));
    if !full(&a, step) && !full(&b, 1 << 16) {
        assert_eq!(a_err, b_err, "the outcome depends on the read size");
        if !a_err {
            assert!(a == b, "the bytes depend on the read size");
        }
    }
    0
}
