//! Escape throughput of the JSONL writer on a file's lines beside a per-escape-branch loop and memcpy: `escape_speed FILE`.
#![allow(clippy::indexing_slicing)] // a probe on a file of our own, not input-facing code
use std::time::Instant;

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

fn serde_style(out: &mut Vec<u8>, s: &str) {
    let b = s.as_bytes();
    out.reserve(b.len() + 2);
    out.push(b'"');
    let mut run = 0;
    for (i, &c) in b.iter().enumerate() {
        let e = ESC[c as usize];
        if e == 0 {
            continue;
        }
        out.extend_from_slice(&b[run..i]);
        if e == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(b"0123456789abcdef"[(c >> 4) as usize]);
            out.push(b"0123456789abcdef"[(c & 15) as usize]);
        } else {
            out.push(b'\\');
            out.push(e);
        }
        run = i + 1;
    }
    out.extend_from_slice(&b[run..]);
    out.push(b'"');
}

fn bench(name: &str, data_len: usize, lines: &[&str], f: impl Fn(&mut Vec<u8>, &str)) {
    let mut out = Vec::with_capacity(data_len * 2);
    let t = Instant::now();
    for _ in 0..5 {
        out.clear();
        for l in lines {
            f(&mut out, l);
        }
    }
    let s = t.elapsed().as_secs_f64() / 5.0;
    println!(
        "{name}: {:.0} MB/s in, {:.2}x out",
        data_len as f64 / s / 1e6,
        out.len() as f64 / data_len as f64
    );
}

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let data = std::fs::read(&name).unwrap_or_default();
    let text = String::from_utf8_lossy(&data);
    let lines: Vec<&str> = text.split('\n').collect();
    for _ in 0..2 {
        bench("write_str", data.len(), &lines, _native::jsonl::write_str);
        bench("serde_style", data.len(), &lines, serde_style);
        bench("memcpy", data.len(), &lines, |o, s| {
            o.extend_from_slice(s.as_bytes())
        });
    }
}
