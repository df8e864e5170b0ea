//! The parser's string decoding (`rust/parse.rs`: `escaped`, `decode`, `run_end`) against a
//! byte-by-byte reference written here: decoded text, error and offset, lone surrogates
//! repaired and whether the line stays canonical, on strings of escapes and runs of every
//! length around the decoder's word (8) and block (16) steps, with text after the string and
//! at the line's end.

use _native::parse::{parse_line, parse_line_in, Scratch};

/// What the reference makes of the string whose opening quote is at `q`.
#[derive(Debug, PartialEq)]
struct Want {
    text: Result<String, (&'static str, usize)>,
    repairs: usize,
    canonical: bool,
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let d = b.get(at..at + 4)?;
    let s = std::str::from_utf8(d).ok()?;
    if !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(s, 16).ok()
}

fn reference(line: &str, q: usize) -> Want {
    let b = line.as_bytes();
    let mut out = String::new();
    let mut repairs = 0;
    let mut canonical = true;
    let mut i = q + 1;
    let fail = |m: &'static str, at: usize, repairs: usize, canonical: bool| Want {
        text: Err((m, at)),
        repairs,
        canonical,
    };
    loop {
        let Some(&c) = b.get(i) else {
            return fail("unterminated string", q, repairs, canonical);
        };
        match c {
            b'"' => {
                return Want {
                    text: Ok(out),
                    repairs,
                    canonical,
                }
            }
            b'\\' => {
                let Some(&e) = b.get(i + 1) else {
                    return fail("unterminated string", q, repairs, canonical);
                };
                let short = match e {
                    b'"' => Some('"'),
                    b'\\' => Some('\\'),
                    b'/' => Some('/'),
                    b'b' => Some('\u{8}'),
                    b'f' => Some('\u{c}'),
                    b'n' => Some('\n'),
                    b'r' => Some('\r'),
                    b't' => Some('\t'),
                    _ => None,
                };
                if let Some(ch) = short {
                    canonical &= e != b'/';
                    out.push(ch);
                    i += 2;
                    continue;
                }
                if e != b'u' {
                    return fail("invalid escape", i, repairs, canonical);
                }
                let Some(c) = hex4(b, i + 2) else {
                    return fail("invalid \\u escape", i, repairs, canonical);
                };
                let written = c < 0x20
                    && !matches!(c, 8 | 9 | 10 | 12 | 13)
                    && b.get(i..i + 6) == Some(format!("\\u{c:04x}").as_bytes());
                canonical &= written;
                i += 6;
                if (0xD800..0xDC00).contains(&c) {
                    let low = (b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u'))
                        .then(|| hex4(b, i + 2))
                        .flatten()
                        .filter(|l| (0xDC00..0xE000).contains(l));
                    match low {
                        Some(l) => {
                            let cp = 0x10000 + ((c - 0xD800) << 10) + (l - 0xDC00);
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                            i += 6;
                        }
                        None => {
                            out.push('\u{FFFD}');
                            repairs += 1;
                        }
                    }
                } else {
                    match char::from_u32(c) {
                        Some(ch) => out.push(ch),
                        None => {
                            out.push('\u{FFFD}');
                            repairs += 1;
                        }
                    }
                }
            }
            0..=0x1f => return fail("control character in string", i, repairs, canonical),
            _ => {
                let ch = line.get(i..).and_then(|s| s.chars().next()).unwrap_or('?');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
}

/// A deterministic stream of numbers (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: [&str; 20] = [
    "\\n",
    "\\\"",
    "\\\\",
    "\\t",
    "\\/",
    "\\b",
    "\\f",
    "\\r",
    "\\u00e9",
    "\\u0001",
    "\\u001F",
    "\\ud83d\\ude00",
    "\\ud83d",
    "\\ude00",
    "\\ud83dx",
    "é",
    "日本",
    "😀",
    "x",
    "'",
];

/// The body of a string: plain runs of 0..40 bytes (ASCII or not) between pieces.
fn body(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(6) {
        let run = rng.below(41);
        let plain = ["a", "é", "日", "z", "😀"];
        let mut n = 0;
        while n < run {
            let p = plain.get(rng.below(plain.len())).copied().unwrap_or("a");
            s.push_str(p);
            n += p.len();
        }
        s.push_str(PIECES.get(rng.below(PIECES.len())).copied().unwrap_or("x"));
    }
    s
}

fn check(line: &str, q: usize) {
    let want = reference(line, q);
    let got = parse_line(line, 1024, usize::MAX);
    match (&want.text, got) {
        (Ok(text), Ok(l)) => {
            let s = l
                .value
                .items()
                .first()
                .and_then(|v| v.as_str().map(String::from));
            assert_eq!(s.as_deref(), Some(text.as_str()), "{line}");
            assert_eq!(l.repairs, want.repairs, "{line}");
            assert_eq!(l.canonical.is_some(), want.canonical, "{line}");
        }
        (Err((m, at)), Err(_native::parse::Failure::Syntax(e))) => {
            assert_eq!((e.message, e.offset), (*m, *at), "{line}");
        }
        (w, g) => panic!("{line}: want {w:?}, got {g:?}"),
    }
}

#[test]
fn strings_decode_as_the_reference_does() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let b = body(&mut rng);
        // a string and more after it, and the same string as the line's last bytes
        check(&format!("[\"{b}\",1,\"after\"]"), 1);
        check(&format!("[\"{b}\"]"), 1);
        // cut at every place of its last 24 bytes: unterminated, or a bad escape
        let line = format!("[\"{b}");
        for cut in line.len().saturating_sub(24).max(2)..=line.len() {
            if let Some(head) = line.get(..cut) {
                check(head, 1);
            }
        }
        // a control byte or a bad escape after the body
        check(&format!("[\"{b}\u{1}\"]"), 1);
        check(&format!("[\"{b}\\x\"]"), 1);
        check(&format!("[\"{b}\\u12\"]"), 1);
    }
}

#[test]
fn long_runs_around_the_block_steps() {
    // runs of 0..80 bytes after an escape, ending in an escape, the quote, a control byte or
    // the line's end
    for run in 0..80 {
        for plain in ["a", "é", "日本", "😀x"] {
            let text: String = plain.repeat(run).chars().take(run).collect();
            for end in ["\\n", "\"", "\u{2}", ""] {
                if end != "\"" {
                    let line = format!("[\"\\n{text}{end}\\t{text}\",2]");
                    check(&line, 1);
                }
                let close = if end == "\"" { "]" } else { "" };
                let line = format!("[\"{text}\\\"{text}{end}{close}");
                check(&line, 1);
            }
        }
    }
}

#[test]
fn one_scratch_buffer_across_lines_of_every_size() {
    // the decoding buffer is kept from line to line and grown to the longest line's rest: lines
    // that grow, shrink and grow again decode as a fresh parse of each does
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut scratch = Scratch::default();
    for k in 0..400 {
        let bump = bumpalo::Bump::new();
        let n = if k % 3 == 0 { 1 + k * 7 } else { 1 + k % 5 };
        let strings: Vec<String> = (0..n)
            .map(|_| format!("\"{}\\n\"", body(&mut rng)))
            .collect();
        let line = format!("[{}]", strings.join(","));
        let fresh = parse_line(&line, 1024, usize::MAX).map(|l| (l.value, l.repairs));
        let reused = parse_line_in(&line, &bump, &mut scratch, 1024, usize::MAX, true)
            .map(|l| (l.value, l.repairs));
        assert_eq!(reused, fresh, "{line}");
    }
}
