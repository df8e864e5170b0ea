//! Instructions/speed probe for the JSONL writer: `jsonl_speed FILE [jsonl|prepare]`.
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or_default();
    let mode = args.get(2).cloned().unwrap_or_else(|| "jsonl".into());
    let data = std::fs::read(&name).unwrap_or_default();
    let budget = _native::budget::Budget::default();
    let t = Instant::now();
    let mut outlen = 0;
    for _ in 0..3 {
        if mode == "jsonl" {
            outlen = _native::jsonl::normalize_jsonl(&data, None, budget).map_or(0, |o| o.len());
        } else {
            for line in data.split(|&b| b == b'\n') {
                if let Ok(Some(p)) = _native::normalize::prepare(line, None, &budget) {
                    outlen += p.raw().len();
                }
            }
        }
    }
    let s = t.elapsed().as_secs_f64() / 3.0;
    println!(
        "{name} {mode}: {:.0} MB/s out {}",
        data.len() as f64 / s / 1e6,
        outlen
    );
}
