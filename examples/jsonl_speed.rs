//! Speed probe for the JSONL writer (best of 7 runs): `jsonl_speed FILE [jsonl|reuse|arrow|prepare]`.
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).cloned().unwrap_or_default();
    let mode = args.get(2).cloned().unwrap_or_else(|| "jsonl".into());
    let data = std::fs::read(&name).unwrap_or_default();
    let budget = _native::budget::Budget::default();
    let mut outlen = 0;
    let mut best = f64::MAX;
    let mut kept = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        if mode == "jsonl" {
            outlen =
                _native::jsonl::normalize_jsonl(&data, None, budget, _native::fields::Sel::ALL)
                    .map_or(0, |o| o.len());
        } else if mode == "reuse" {
            // the same stream into a buffer kept across runs (no fresh pages after the first)
            kept.clear();
            let mut st = _native::jsonl::Stream::new(None, budget, None, _native::fields::Sel::ALL);
            let _ = st
                .feed(&data, &mut kept)
                .and_then(|()| st.finish(&mut kept));
            outlen = kept.len();
        } else if mode == "arrow" {
            // (build with `--features arrow`)
            #[cfg(feature = "arrow")]
            {
                let mut engine = _native::normalize::Engine::new(None, budget);
                let mut sink = _native::arrow::ArrowSink::new(
                    _native::arrow::BATCH_ROWS,
                    _native::fields::Sel::ALL,
                );
                if std::env::var_os("NO_EXPECT").is_none() {
                    sink.expect(data.len());
                }
                let mut seq = 0;
                let _ = _native::sink::feed(&mut engine, &mut seq, &data, &mut sink)
                    .and_then(|()| _native::sink::finish(&mut engine, &mut seq, &mut sink));
                outlen = sink.finish().map_or(0, |b| {
                    b.iter().map(|x| x.get_array_memory_size()).sum::<usize>()
                });
            }
        } else {
            for line in data.split(|&b| b == b'\n') {
                if let Ok(Some(p)) = _native::normalize::prepare(line, None, &budget) {
                    outlen += p.raw().len();
                }
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    let s = best;
    println!(
        "{name} {mode}: {:.0} MB/s out {}",
        data.len() as f64 / s / 1e6,
        outlen
    );
}
