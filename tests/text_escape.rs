//! `text::write_str` and `text::write_str_twice` against a char-by-char reference, on strings
//! long enough for every path of the block escaper: the clean prefix, whole 64-byte blocks
//! read with the 64 after them, the padded last < 128 bytes, the room windows of a long
//! string and a block whose escapes do not fit the room given (retried with a block's most);
//! clean text with one escape at every place around the block and word sizes; and the
//! integer writers against `to_string`.

use _native::text::{write_str, write_str_twice};

/// `json.dumps(x, ensure_ascii=False)`, one char at a time.
fn naive(x: &str) -> String {
    let mut o = String::from("\"");
    for c in x.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            '\u{8}' => o.push_str("\\b"),
            '\u{c}' => o.push_str("\\f"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Both writers after `prefix` (already in the buffer), checked against the reference.
fn check(prefix: &str, x: &str) {
    let mut once = prefix.as_bytes().to_vec();
    write_str(&mut once, x);
    assert_eq!(
        String::from_utf8(once).unwrap_or_default(),
        format!("{prefix}{}", naive(x)),
        "{x:?}"
    );
    let mut twice = prefix.as_bytes().to_vec();
    twice.push(b'"');
    write_str_twice(&mut twice, x);
    twice.push(b'"');
    assert_eq!(
        String::from_utf8(twice).unwrap_or_default(),
        format!("{prefix}{}", naive(&naive(x))),
        "{x:?}"
    );
}

struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }

    fn pick(&mut self, from: &[char]) -> char {
        let i = self.next(from.len() as u64) as usize;
        from.get(i).copied().unwrap_or('a')
    }
}

#[test]
fn random_strings_of_every_length_escape_like_the_reference() {
    let special = [
        '"', '\\', '\n', '\t', '\r', '\u{1}', '\u{8}', '\u{c}', '\u{1f}',
    ];
    let other = ['é', '€', '𝄞', '\u{7f}', '\u{2028}', ' ', '~', 'Z'];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for len in 0..700usize {
        // escape densities from none to every byte
        for per_mille in [0u64, 20, 60, 200, 1000] {
            let x: String = (0..len)
                .map(|_| {
                    if rng.next(1000) < per_mille {
                        rng.pick(&special)
                    } else if rng.next(8) == 0 {
                        rng.pick(&other)
                    } else {
                        char::from(b'a' + rng.next(26) as u8)
                    }
                })
                .collect();
            check("", &x);
            check("{\"k\":", &x);
        }
    }
}

#[test]
fn long_and_dense_strings_escape_like_the_reference() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for n in [1535usize, 1536, 4096, 10_000, 50_001] {
        // every byte a 6-byte escape (7 escaped twice): many windows, each block's room
        // retried at its most after a window that could not hold it
        let all: String = "\u{1}".repeat(n);
        check("", &all);
        // dense runs between clean stretches, so windows end at every kind of block
        let mixed: String = (0..n)
            .map(|i| match (i / 97) % 3 {
                0 => 'x',
                1 => '\u{1f}',
                _ => rng.pick(&['"', 'é', '\n', 'q']),
            })
            .collect();
        check("[", &mixed);
    }
}

/// `write_str` alone.
fn s(x: &str) -> String {
    let mut out = Vec::new();
    write_str(&mut out, x);
    String::from_utf8(out).unwrap_or_default()
}

/// `write_str_twice`, made the JSON string it is part of (as the JSONL writer does).
fn twice(x: &str) -> String {
    let mut out = b"\"".to_vec();
    write_str_twice(&mut out, x);
    out.push(b'"');
    String::from_utf8(out).unwrap_or_default()
}

#[test]
fn fast_escape_equals_the_byte_table() {
    // the worst cases of the 8-byte stores: runs of controls (6 bytes out each) before
    // a clean byte, at every offset
    for n in 0..40 {
        for tail in ["", "a", "ab", "\"", "é"] {
            let x = "\u{1}".repeat(n) + tail;
            assert_eq!(s(&x), naive(&x), "{x:?}");
            let y = "a".repeat(n % 9) + &x;
            assert_eq!(s(&y), naive(&y), "{y:?}");
        }
    }
    // escapes denser than the room grown for them (a quarter of the text): many rounds,
    // each stopping at a word or byte boundary wherever the room ends
    for n in [6151, 6152, 6153, 6160] {
        let big = "\u{1}".repeat(n) + "xyz\"";
        assert_eq!(s(&big), naive(&big));
        let mixed = "ab\"".repeat(n / 3) + &"\u{1f}".repeat(n % 97) + "é";
        assert_eq!(s(&mixed), naive(&mixed));
    }
    let alphabet: Vec<char> = (0u32..0x80)
        .filter_map(char::from_u32)
        .chain(['é', '€', '𝄞', '\u{2028}'])
        .collect();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..64 {
        for _ in 0..40 {
            let x: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let k = (seed % 8) as usize;
                    // mostly plain letters, so runs of clean words occur
                    if k < 5 {
                        'a'
                    } else {
                        alphabet
                            .get((seed >> 8) as usize % alphabet.len())
                            .copied()
                            .unwrap_or('a')
                    }
                })
                .collect();
            assert_eq!(s(&x), naive(&x), "{x:?}");
            assert_eq!(twice(&x), s(&s(&x)), "{x:?}");
        }
    }
    for n in 0..40 {
        for tail in ["", "a", "\"", "\\", "é"] {
            let x = "\u{1}".repeat(n) + tail;
            assert_eq!(twice(&x), s(&s(&x)), "{x:?}");
            let y = "\"".repeat(n) + &"\n".repeat(n % 9) + tail;
            assert_eq!(twice(&y), s(&s(&y)), "{y:?}");
        }
    }
    for n in [6151, 6152, 6160] {
        let big = "\u{1}\"".repeat(n) + "xyz";
        assert_eq!(twice(&big), s(&s(&big)));
    }
    // clean 16-byte blocks copied whole: one escape (or a byte >= 0x80 next to one) at
    // every place of clean text of every length around the block and word sizes
    let clean = "abcdefgh\u{7f}é~ ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for len in 0..48 {
        let base: String = clean.chars().cycle().take(len).collect();
        for at in 0..=base.chars().count() {
            for c in [
                '"', '\\', '\n', '\u{1}', '\u{1f}', ' ', '#', '[', ']', '\u{80}',
            ] {
                let mut x: String = base.chars().take(at).collect();
                x.push(c);
                x.extend(base.chars().skip(at));
                assert_eq!(s(&x), naive(&x), "{x:?}");
                assert_eq!(twice(&x), s(&s(&x)), "{x:?}");
            }
        }
    }
}

#[test]
fn integers_are_decimal() {
    use _native::text::{write_i128, write_u128, write_u64};
    let mut cases: Vec<u128> = vec![0, 1, 9, 10, 99, 100, u128::from(u64::MAX), u128::MAX];
    let mut p = 1u128;
    while let Some(q) = p.checked_mul(10) {
        cases.extend([p - 1, p, p + 1, q - 1]);
        p = q;
    }
    cases.extend([u128::from(u64::MAX) + 1, u128::from(u64::MAX) - 1]);
    for n in cases {
        let mut out = Vec::new();
        write_u128(&mut out, n);
        assert_eq!(out, n.to_string().as_bytes());
        if let Ok(small) = u64::try_from(n) {
            out.clear();
            write_u64(&mut out, small);
            assert_eq!(out, n.to_string().as_bytes());
        }
        for signed in [i128::try_from(n).ok(), i128::try_from(n).ok().map(|x| -x)]
            .into_iter()
            .flatten()
        {
            out.clear();
            write_i128(&mut out, signed);
            assert_eq!(out, signed.to_string().as_bytes());
        }
    }
    let mut out = Vec::new();
    write_i128(&mut out, i128::MIN);
    assert_eq!(out, i128::MIN.to_string().as_bytes());
}
