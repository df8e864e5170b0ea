//! The bytes a JSON string's plain run ends at (`"`, `\\` and the control bytes below 0x20),
//! found 16 at a time as a bit mask: the parser's string scan (`parse.rs`) and the writer's
//! escaper (`text.rs`) both walk text with it.

/// Bit `i` set for each byte `b[i]` that is `"`, `\\` or below 0x20: three SSE2 compares and
/// one `pmovmskb` (x86-64's baseline, no CPU detection), as simd-json and sonic-rs scan strings.
///
/// The intrinsics come through `safe_arch`'s safe wrappers (its `unsafe` stays inside it, as
/// `memchr`'s and `simdutf8`'s do; this crate has none): written here they need `unsafe`
/// (calling a `#[target_feature]` function, a raw pointer for the load; rustc 1.95, E0133), and
/// portable code gets no `pmovmskb` (a shift-or of the 16 tests came out as 85-184 scalar and
/// shuffle instructions; [`portable::mask16`] is the best found without it). Measured in the
/// parser (`core_bench` task-clock, medians of 5 interleaved pairs, load 4.6), against its
/// portable search (a fold per byte class for "any", SWAR words for "where"): parse claude
/// 77.5 -> 72.3 ms (-6.7 %), mixed 77.5 -> 72.7 (-6.2 %); lean Arrow claude 146.8 -> 137.4
/// (-6.4 %), mixed 115.4 -> 106.9 (-7.4 %).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
pub fn mask16(b: &[u8; 16]) -> u16 {
    use safe_arch::{
        bitor_m128i, cmp_eq_mask_i8_m128i, load_unaligned_m128i, max_u8_m128i, move_mask_i8_m128i,
        set_splat_i8_m128i,
    };
    let v = load_unaligned_m128i(b);
    let quote = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'"' as i8));
    let backslash = cmp_eq_mask_i8_m128i(v, set_splat_i8_m128i(b'\\' as i8));
    // below 0x20: the unsigned max with 0x1f is 0x1f
    let low = set_splat_i8_m128i(0x1f);
    let control = cmp_eq_mask_i8_m128i(max_u8_m128i(v, low), low);
    // the 16 sign bits: the low 16 bits of the `i32`, the rest zero
    move_mask_i8_m128i(bitor_m128i(bitor_m128i(quote, backslash), control)) as u16
}

/// [`mask16`] on other targets.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub fn mask16(b: &[u8; 16]) -> u16 {
    portable::mask16(b)
}

/// [`mask16`] without SSE2 (and the tests' reference for it on x86-64).
#[cfg(any(test, not(all(target_arch = "x86_64", target_feature = "sse2"))))]
mod portable {
    /// 0xff in each byte of the 16 at `b` that is special, 0 in the others: written byte by
    /// byte, compiled to a few 16-byte vector compares when what is done with the flags is
    /// out of LLVM's sight ([`mask16`]): a loop's other use of the bytes, or their packing
    /// into bits, in sight made LLVM compile the compares byte by byte.
    #[inline(always)]
    fn flags16(b: &[u8; 16]) -> u128 {
        u128::from_le_bytes(
            b.map(|c| u8::from((c < 0x20) | (c == b'"') | (c == b'\\')).wrapping_neg()),
        )
    }

    /// [`super::mask16`]: [`flags16`]'s 0/0xff bytes packed into bits by one multiply a word
    /// (the bit of byte `i` of a word of 0/1 bytes lands at bit 56 + `i` of its product with
    /// 0x0102040810204080, no carries). The flags pass through [`std::hint::black_box`] (a
    /// 16-byte store and two 8-byte loads), so their compares stay vector compares.
    #[inline(always)]
    pub(super) fn mask16(b: &[u8; 16]) -> u16 {
        const LO: u64 = 0x0101_0101_0101_0101;
        const PACK: u64 = 0x0102_0408_1020_4080;
        let f = std::hint::black_box(flags16(b));
        let lo = ((f as u64) & LO).wrapping_mul(PACK) >> 56;
        let hi = (((f >> 64) as u64) & LO).wrapping_mul(PACK) >> 56;
        (lo | hi << 8) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special(c: u8) -> bool {
        c < 0x20 || c == b'"' || c == b'\\'
    }

    #[test]
    fn every_byte_at_every_place() {
        // each byte value at each place of a block, over a background of each plain byte: the
        // mask has exactly that bit when the byte is special, on both paths
        for background in (0x20u8..=0xff).filter(|&c| !special(c)) {
            assert_eq!(mask16(&[background; 16]), 0);
            for at in 0..16 {
                for c in 0..=255u8 {
                    let block: [u8; 16] =
                        std::array::from_fn(|k| if k == at { c } else { background });
                    let want = if special(c) { 1 << at } else { 0 };
                    assert_eq!(mask16(&block), want, "{background} {at} {c}");
                    assert_eq!(portable::mask16(&block), want, "{background} {at} {c}");
                }
            }
        }
        // several: every bit
        let block = *b"a\"b\\c\x1fd\x00\x7f\x80\xff\n\t \"\\";
        assert_eq!(mask16(&block), 0b1101_1000_1010_1010);
        assert_eq!(portable::mask16(&block), 0b1101_1000_1010_1010);
    }
}
