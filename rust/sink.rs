//! Stream assembly, once for every output: the dict list (`py/mod.rs`), JSONL ([`crate::jsonl`])
//! and Arrow (`py/arrow.rs`).
//!
//! An output is a [`Sink`]: it receives one mapped line at a time ([`LineEvents`]) and numbers
//! its events from `seq`. [`items`] runs prepare and map over the items an [`Engine`] framed,
//! in groups of at most [`Sink::group_bytes`] input bytes (so memory stays bounded on huge
//! inputs), and puts the `dialect_fallback` notice before the first held line; [`finish`]
//! adds the event of a UTF-16/UTF-32 stream after the last line. [`Sink::work`] is where an
//! output may run the pure part (framing, prepare, map) somewhere else: the dict sink releases
//! the GIL there for big groups.

use crate::budget::OutOfMemory;
use crate::event::LineMeta;
use crate::normalize::{fallback_event, map_line, prepare, Engine, Item, LineEvents, Prepared};

/// A group holds at most this many lines whatever their size: a line's prepared and mapped
/// structures are about 1 KiB, and a 256 KiB group of 2-byte lines was 128k of them.
pub const GROUP_LINES: usize = 4096;

/// [`feed`] frames a chunk this many bytes at a time: the framed spans of one window (~130
/// bytes a line) are alive at once, not those of a whole in-memory stream (64 MiB of 2-byte
/// lines: 33 million spans, 2 GB).
pub const FEED_WINDOW: usize = 64 << 10;

/// Where one stream's events go.
pub trait Sink {
    type Error: From<OutOfMemory>;

    /// One line's events, numbered from `*seq` (advanced once per event).
    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), Self::Error>;

    /// Lines are prepared and mapped in groups of about this many input bytes before
    /// [`Sink::line`] sees them (0: one line at a time).
    fn group_bytes(&self) -> usize {
        0
    }

    /// Whether to go on: [`feed`] asks before each [`FEED_WINDOW`] of input, so an output
    /// built by one long core call can be given up within a window (the Arrow sink's cancel
    /// flag). The engine is left between two windows: its stream cannot go on.
    fn check(&self) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Run `f`, pure work over `bytes` input bytes (framing, prepare, map).
    fn work<T: Send, F: FnOnce() -> T + Send>(&mut self, bytes: usize, f: F) -> T {
        let _ = bytes;
        f()
    }
}

/// Map the `items` framed from `chunk` and hand their lines to `sink`, the fallback notice
/// before the first held line.
pub fn items<S: Sink>(
    engine: &mut Engine,
    items: &[Item],
    chunk: &[u8],
    seq: &mut u64,
    sink: &mut S,
) -> Result<(), S::Error> {
    let Some(dialect) = engine.dialect().cloned() else {
        return Ok(());
    };
    let dialect = &dialect;
    let budget = &engine.budget;
    let collapse = &mut engine.collapse;
    let group_max = sink.group_bytes();
    let mut start = 0;
    while start < items.len() {
        let mut end = start;
        let mut bytes = 0usize;
        while end < items.len()
            && (end == start || (bytes < group_max && end - start < GROUP_LINES))
        {
            bytes += items.get(end).map_or(0, |it| it.span.bytes(chunk).len());
            end += 1;
        }
        let group = items.get(start..end).unwrap_or_default();
        type Ready<'c> = Vec<(Option<Prepared<'c>>, &'c Item)>;
        let prepared: Ready<'_> = sink.work(bytes, || {
            let mut ready = Vec::with_capacity(group.len());
            for it in group {
                let data = it.span.bytes(chunk);
                // collapse_junk: a run's repeated junk is left out, in stream order (the first
                // held line, which the fallback notice goes before, is never a repeat)
                if let Some(c) = collapse.as_mut() {
                    if it.fallback.is_none() && c.skip(data, it.span.total) {
                        continue;
                    }
                }
                let p = prepare(data, it.span.total, budget)?;
                if let (Some(c), Some(p)) = (collapse.as_mut(), p.as_ref()) {
                    if !c.keep(p) && it.fallback.is_none() {
                        continue;
                    }
                }
                ready.push((p, it));
            }
            Ok::<_, OutOfMemory>(ready)
        })?;
        let mapped = sink.work(bytes, || -> Vec<(LineEvents<'_>, Option<usize>)> {
            prepared
                .iter()
                .filter_map(|(p, it)| {
                    p.as_ref().map(|p| {
                        let size = it.span.bytes(chunk).len() as u64;
                        (map_line(it.span.position, size, p, dialect), it.fallback)
                    })
                })
                .collect()
        });
        for (rec, fallback) in &mapped {
            if let Some(held) = fallback {
                let head = LineEvents {
                    position: rec.position,
                    size: rec.size,
                    dialect: rec.dialect,
                    raw: rec.raw,
                    parsed: rec.parsed,
                    parsed_text: rec.parsed_text,
                    strings: rec.strings,
                    meta: LineMeta::default(),
                    repairs: 0,
                    events: vec![fallback_event(*held, dialect)],
                };
                sink.line(&head, seq)?;
            }
            sink.line(rec, seq)?;
        }
        start = end;
    }
    Ok(())
}

/// Frame `chunk` (in [`Sink::work`]) and hand the lines it completed to `sink`, a
/// [`FEED_WINDOW`] at a time, [`Sink::check`] before each.
///
/// [`OutOfMemory`] from framing leaves the engine unusable (see [`Engine::feed`]).
pub fn feed<S: Sink>(
    engine: &mut Engine,
    seq: &mut u64,
    chunk: &[u8],
    sink: &mut S,
) -> Result<(), S::Error> {
    for window in chunk.chunks(FEED_WINDOW) {
        sink.check()?;
        let framed = sink.work(window.len(), || engine.feed(window))?;
        items(engine, &framed, window, seq, sink)?;
    }
    Ok(())
}

/// End of stream: the last line, then the event of a UTF-16/UTF-32 stream if the framer found
/// one. Idempotent.
pub fn finish<S: Sink>(engine: &mut Engine, seq: &mut u64, sink: &mut S) -> Result<(), S::Error> {
    let framed = engine.finish()?;
    items(engine, &framed, &[], seq, sink)?;
    let Some(err) = engine.take_stream_error() else {
        return Ok(());
    };
    let Some(dialect) = engine.dialect() else {
        return Ok(());
    };
    sink.line(&err.record(dialect), seq)
}
