//! JSON text exactly as Python's `json.dumps(..., ensure_ascii=False)` writes it: strings
//! (escaping only `"`, `\\` and U+0000..U+001F, with `\n \r \t \b \f` short forms and lowercase
//! `\u00XX` for the rest), integers in decimal and floats as `repr(float)` (shortest round
//! trip, `1e+16`, `1e-07`, `-0.0`, `Infinity`). The JSONL and Arrow writers build on these, and
//! the parser uses [`float_is_repr`] to tell a line already in this form (`parse::canonical`).

use crate::scan::mask16;

/// The escape of each byte in a JSON string: 0 = as is, `u` = `\u00XX`, else `\<c>`.
/// (Indexing in a const block: an out-of-range index is a compile error, not a panic.)
#[allow(clippy::indexing_slicing)]
const ESC: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = b'u';
        i += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The escape of each byte, once (`[0]`) and twice (`[1]`, the escape's own JSON string
/// escape: `\\n`, `\\\"`, `\\u001f`), as the 8 little-endian bytes of a `u64`: the escape
/// (at most 7 bytes) and its length in the top byte; 0 for a byte that needs none. One load
/// and one 8-byte store an escape, the same code for every byte that needs one.
#[allow(clippy::indexing_slicing)]
const SEQ: [[u64; 256]; 2] = {
    let mut t = [[0u64; 256]; 2];
    let mut c = 0;
    while c < 256 {
        let e = ESC[c];
        let mut twice = 0;
        while e != 0 && twice < 2 {
            let mut seq = [0u8; 8];
            let mut n = 0;
            seq[n] = b'\\';
            n += 1;
            if twice == 1 {
                seq[n] = b'\\';
                n += 1;
                if e == b'"' || e == b'\\' {
                    // the escaped `"` or `\\` escaped again
                    seq[n] = b'\\';
                    n += 1;
                }
            }
            if e == b'u' {
                let tail = [b'u', b'0', b'0', HEX[c >> 4], HEX[c & 0xf]];
                let mut i = 0;
                while i < 5 {
                    seq[n] = tail[i];
                    n += 1;
                    i += 1;
                }
            } else {
                seq[n] = e;
                n += 1;
            }
            seq[7] = n as u8;
            t[twice][c] = u64::from_le_bytes(seq);
            twice += 1;
        }
        c += 1;
    }
    t
};

/// The bytes [`escape_into`] takes at a time: one block, read with as many after it.
const BLOCK: usize = 64;

/// Output room a block of [`escape_into`] with `n` escapes may use: its [`BLOCK`] bytes, 6
/// more an escape (7 bytes, `\\u001f`, for one), and the [`BLOCK`]-byte store of a run;
/// [`BLOCK_ROOM`] is its most (every byte escaped).
const fn block_room(n: usize) -> usize {
    2 * BLOCK + 6 * n
}

const BLOCK_ROOM: usize = block_room(BLOCK);

/// The most the output of [`write_str`] or [`write_str_twice`] is grown (zeroed ahead of the
/// writes) past 7 bytes a byte of the string and the quotes: a reservation of that much more
/// keeps the escaper from reallocating.
pub const ESCAPE_AHEAD: usize = BLOCK_ROOM;

/// A JSON string as `json.dumps(s, ensure_ascii=False)` writes it.
///
/// The output grows by the text plus a quarter for its escapes (JSON text in `raw` has a `"`
/// or `\\` every ten bytes or so) and [`escape_into`] stops where that room ends, so the bytes
/// zeroed ahead of the writes are about the bytes written, not the six times as many a
/// worst-case room would zero (on the bench corpora the two measure the same within noise).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    escape::<false>(out, s.as_bytes());
    out.push(b'"');
}

/// The JSON string of the JSON string of `s` (`json.dumps(json.dumps(s))`, both with
/// `ensure_ascii=False`), in one pass: what the JSON-text rule of projected JSONL writes for a
/// string inside a tree (`\n` -> `\\n`, `"` -> `\\\"`, `\\` -> `\\\\`), without
/// writing the inner JSON first.
pub fn write_str_twice(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(b"\\\"");
    escape::<true>(out, s.as_bytes());
    out.extend_from_slice(b"\\\"");
}

/// The most room [`escape`] zeroes ahead at once: the rest of a long string is escaped a
/// window at a time, each window's room zeroed while it is in the first-level cache (a long
/// string's whole room zeroed at once is a pass over memory before the pass that writes it).
const WINDOW: usize = 1536;

/// The escape of `src` appended to `out` (escaped twice when `TWICE`): the bytes before the
/// first that needs an escape copied as they are ([`clean_prefix`]; all of most strings), the
/// rest escaped into room zeroed ahead ([`escape_into`]), a [`WINDOW`] at most at a time (or
/// a block's most room, [`BLOCK_ROOM`], when the room a quarter over the text gave did not
/// hold the next block's escapes).
#[inline]
fn escape<const TWICE: bool>(out: &mut Vec<u8>, src: &[u8]) {
    let (clean, mut src) = src.split_at(clean_prefix(src));
    out.extend_from_slice(clean);
    let mut least = 0;
    while !src.is_empty() {
        let start = out.len();
        let room = (src.len() + src.len() / 4 + block_room(0))
            .min(WINDOW)
            .max(least);
        out.resize(start + room, 0);
        let (read, written) = out
            .get_mut(start..)
            .map_or((src.len(), 0), |dst| escape_into::<TWICE>(src, dst));
        out.truncate(start + written);
        src = src.get(read..).unwrap_or_default();
        least = if read == 0 { BLOCK_ROOM } else { 0 };
    }
}

/// How many bytes of `src` come before the first that needs an escape: 16 at a time
/// ([`mask16`]), then one at a time.
#[inline]
fn clean_prefix(src: &[u8]) -> usize {
    let mut i = 0;
    while let Some(w) = src.get(i..i + 16).and_then(|w| w.first_chunk::<16>()) {
        let m = mask16(w);
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 16;
    }
    while let Some(&c) = src.get(i) {
        if ESC.get(usize::from(c)).copied().unwrap_or(0) != 0 {
            break;
        }
        i += 1;
    }
    i
}

/// The [`BLOCK`] bytes of `b` from `pos` (at most [`BLOCK`]) stored at `dst[j..]`.
#[inline(always)]
fn put_run(dst: &mut [u8], j: usize, b: &[u8; 2 * BLOCK], pos: usize) {
    if let (Some(d), Some(s)) = (dst.get_mut(j..j + BLOCK), b.get(pos..pos + BLOCK)) {
        d.copy_from_slice(s);
    }
}

/// The escape of the first [`BLOCK`] bytes of `b` at `dst[j..]`, if `dst` has the room
/// ([`block_room`] of its escapes): the end of what was written.
///
/// Each escape is two stores: the clean run before it, as [`BLOCK`] bytes (read from `b`,
/// whose [`BLOCK`] bytes after the block make that a plain load; the bytes past the run are
/// overwritten next), and its [`SEQ`] entry; the run after the last escape is one more
/// store. No branch depends on which byte is escaped, and the loop's exit is one branch for
/// 64 bytes: text with an escape every 10 to 30 bytes has 0, 1, 2 or more in 16 bytes at
/// random, and a loop a 16-byte block mispredicted its exit about once a block (the tool
/// results of the claude bench corpus: 1.6 GB/s escaped a 16-byte block at a time, 2.5 GB/s
/// 64 bytes at a time).
///
/// Measured and dropped (the same tool results, decoded, escaped twice; best of 40 rounds,
/// 2.5 GB/s here): no bounds check on the stores (room of a block's most plus a run, the
/// places masked below it; 5 instructions fewer an escape, 1.2% fewer for all of lean JSONL)
/// 2.45 GB/s; that with 32-byte runs (a second store only for a longer run) 2.45; the places
/// of a window's escapes listed first, then one loop over them (one mispredicted exit a
/// 1 KiB window, not a block) 2.34; JSON text escaped again with only `"` and `\` looked
/// for (a `\` put before each) 2.3 GB/s of its longer text. Where every block's escapes
/// stand alike (the exits predicted) the loop runs 2.75 GB/s.
#[inline(always)]
fn escape_block<const TWICE: bool>(
    b: &[u8; 2 * BLOCK],
    dst: &mut [u8],
    mut j: usize,
) -> Option<usize> {
    let q = |o: usize| {
        u64::from(
            b.get(o..o + 16)
                .and_then(|w| w.first_chunk::<16>())
                .map_or(0, mask16),
        )
    };
    let mut m = q(0) | q(16) << 16 | q(32) << 32 | q(48) << 48;
    // the most room first (no count of the escapes, which x86-64's baseline has no one
    // instruction for), then the room of the block's escapes
    if j + BLOCK_ROOM > dst.len() && j + block_room(m.count_ones() as usize) > dst.len() {
        return None;
    }
    let table = SEQ.get(usize::from(TWICE)).unwrap_or(&[0; 256]);
    let mut pos = 0usize;
    while m != 0 {
        let k = m.trailing_zeros() as usize;
        put_run(dst, j, b, pos);
        j += k - pos;
        let c = b.get(k).copied().unwrap_or(0);
        let e = table.get(usize::from(c)).copied().unwrap_or(0);
        if let Some(d) = dst.get_mut(j..j + 8) {
            d.copy_from_slice(&e.to_le_bytes());
        }
        j += (e >> 56) as usize;
        pos = k + 1;
        m &= m - 1;
    }
    put_run(dst, j, b, pos);
    Some(j + BLOCK - pos)
}

/// Escape a prefix of `src` into `dst`, as much as fits: returns the bytes read and written.
/// At least one byte is read when `dst` holds [`BLOCK_ROOM`] bytes.
///
/// A [`BLOCK`] at a time ([`escape_block`]), each block read with the [`BLOCK`] bytes after
/// it; the last < 2 [`BLOCK`] bytes from a copy padded with spaces to whole blocks (a space is
/// written as it is, so the padding's output is the same count of bytes at the end, dropped).
#[inline]
fn escape_into<const TWICE: bool>(src: &[u8], dst: &mut [u8]) -> (usize, usize) {
    let (mut i, mut j) = (0, 0);
    while let Some(b) = src.get(i..i + 2 * BLOCK).and_then(|w| w.first_chunk()) {
        match escape_block::<TWICE>(b, dst, j) {
            Some(end) => j = end,
            None => return (i, j),
        }
        i += BLOCK;
    }
    let rest = src.get(i..).unwrap_or_default();
    let mut pad = [b' '; 3 * BLOCK];
    if let Some(p) = pad.get_mut(..rest.len()) {
        p.copy_from_slice(rest);
    }
    let mut t = 0;
    while t < rest.len() {
        let Some(b) = pad.get(t..t + 2 * BLOCK).and_then(|w| w.first_chunk()) else {
            break;
        };
        match escape_block::<TWICE>(b, dst, j) {
            Some(end) => j = end,
            None => return (i + t, j),
        }
        t += BLOCK;
    }
    (i + rest.len(), j - (t - rest.len()))
}

/// An unsigned integer in decimal: in 64-bit arithmetic when it fits (a 128-bit division by
/// 10 a digit is a multi-word multiply; the writers' integers, sequence numbers, offsets and
/// token counts, all fit).
pub fn write_u128(out: &mut Vec<u8>, n: u128) {
    const TEN_19: u128 = 10_000_000_000_000_000_000;
    match u64::try_from(n) {
        Ok(small) => write_u64(out, small),
        // beyond 64 bits (a line's big integers only): the digits above the last 19, then
        // those 19 (below 10^19, so 64-bit), zero-padded
        Err(_) => {
            write_u128(out, n / TEN_19);
            let start = out.len();
            write_u64(out, u64::try_from(n % TEN_19).unwrap_or_default());
            let pad = 19usize.saturating_sub(out.len() - start);
            out.splice(start..start, std::iter::repeat_n(b'0', pad));
        }
    }
}

pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        if let Some(slot) = buf.get_mut(i) {
            *slot = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or_default());
}

pub fn write_i128(out: &mut Vec<u8>, n: i128) {
    if n < 0 {
        out.push(b'-');
    }
    write_u128(out, n.unsigned_abs());
}

/// A float as `json.dumps` writes it: `repr(float)`, and `Infinity`/`-Infinity`/`NaN`.
pub fn write_f64(out: &mut Vec<u8>, f: f64) {
    if f.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if f.is_infinite() {
        out.extend_from_slice(if f > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    if f.is_sign_negative() {
        out.push(b'-');
    }
    if f == 0.0 {
        out.extend_from_slice(b"0.0");
        return;
    }
    // shortest round-trip digits d1 d2 ... and exponent e (value = d1.d2... * 10^e)
    let sci = format!("{:e}", f.abs());
    let (mant, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    let n = digits.len() as i32;
    // CPython's float_repr_style 'short': exponent form when decpt <= -4 or decpt > 16,
    // with decpt = exp + 1
    if !(-4..16).contains(&exp) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.extend_from_slice(first);
        if !rest.is_empty() {
            out.push(b'.');
            out.extend_from_slice(rest);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let a = exp.unsigned_abs();
        if a < 10 {
            out.push(b'0');
        }
        write_u64(out, u64::from(a));
    } else if exp < 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(&digits);
    } else if exp + 1 < n {
        let (int, frac) = digits.split_at((exp + 1) as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (exp + 1 - n) as usize));
        out.extend_from_slice(b".0");
    }
}

/// `text` (a JSON number) is exactly what [`write_f64`] writes for `f`.
pub fn float_is_repr(text: &str, f: f64) -> bool {
    let mut b = Vec::with_capacity(32);
    write_f64(&mut b, f);
    b == text.as_bytes()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn f(x: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    fn s(x: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, x);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn floats_are_python_repr() {
        // expected values are Python's repr() (checked in CPython 3.12)
        let cases = [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e16, "1.5e+16"),
            (9007199254740993.0, "9007199254740992.0"),
            (1e-7, "1e-07"),
            (1e-4, "0.0001"),
            (1.5e-5, "1.5e-05"),
            (0.1, "0.1"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1.0, "1.0"),
            (123.456, "123.456"),
            (-2.5, "-2.5"),
            (1e100, "1e+100"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
        ];
        for (x, want) in cases {
            assert_eq!(f(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_escape_like_json_dumps() {
        assert_eq!(s("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(s("\n\r\t\u{8}\u{c}"), r#""\n\r\t\b\f""#);
        assert_eq!(
            s("\u{0}\u{1f}\u{7f}é\u{2028}"),
            "\"\\u0000\\u001f\u{7f}é\u{2028}\""
        );
    }

    /// Numbers below `n`, the same from run to run (xorshift64 from `seed`): the tests' random
    /// inputs (also `jsonl.rs`'s).
    pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    /// A JSON string's escape byte by byte, once or twice (the reference of [`escape`]).
    fn slow_escape(s: &[u8], twice: bool) -> Vec<u8> {
        let mut out = Vec::new();
        let table = SEQ.get(usize::from(twice)).unwrap_or(&[0; 256]);
        for &c in s {
            let e = table.get(usize::from(c)).copied().unwrap_or(0);
            let seq = e.to_le_bytes();
            match seq.get(..(e >> 56) as usize) {
                Some(esc) if e != 0 => out.extend_from_slice(esc),
                _ => out.push(c),
            }
        }
        out
    }

    /// [`escape`] is the byte-by-byte escape, once and twice, for strings of every density of
    /// escapes (none to all), runs of every length up to past [`BLOCK`], and lengths around
    /// the blocks, the padded tail (< 2 [`BLOCK`]s) and the windows ([`WINDOW`], and the
    /// smaller room a quarter over the text gives dense text): the guard for work on the
    /// escaper.
    #[test]
    fn escape_is_the_byte_by_byte_escape() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let specials = [b'"', b'\\', b'\n', b'\t', 0, 0x1f, 0x08];
        let lens = [
            0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257,
        ];
        for &len in lens
            .iter()
            .chain(&[1023, 1024, 1228, 1229, 1535, 1536, 1537, 3072, 5000])
        {
            for density in [0, 1, 3, 8, 20, 64, 200, 1000] {
                for _ in 0..3 {
                    let s: Vec<u8> = (0..len)
                        .map(|_| {
                            if density > 0 && next(1000) < density {
                                let k = next(specials.len() as u64) as usize;
                                specials.get(k).copied().unwrap_or(b'"')
                            } else {
                                b'a' + next(26) as u8
                            }
                        })
                        .collect();
                    for twice in [false, true] {
                        let mut out = b"x".to_vec();
                        if twice {
                            escape::<true>(&mut out, &s);
                        } else {
                            escape::<false>(&mut out, &s);
                        }
                        let mut want = b"x".to_vec();
                        want.extend(slow_escape(&s, twice));
                        assert_eq!(out, want, "len {len} density {density} twice {twice}");
                    }
                }
            }
        }
    }

    #[test]
    fn float_text_in_repr_form() {
        assert!(float_is_repr("0.1", 0.1));
        assert!(float_is_repr("1e+16", 1e16));
        assert!(!float_is_repr("1e16", 1e16));
        assert!(!float_is_repr("1E+16", 1e16));
        assert!(!float_is_repr("0.10", 0.1));
        assert!(!float_is_repr("1e-7", 1e-7));
        assert!(float_is_repr("-0.0", -0.0));
    }
}
