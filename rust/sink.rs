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
use crate::dialect::AnyDialect;
use crate::event::LineMeta;
use crate::normalize::{fallback_event, map_line, prepare_in, Engine, Item, LineEvents, Prepared};

/// A group holds at most this many lines whatever their size: a line's prepared and mapped
/// structures are about 1 KiB, and a 256 KiB group of 2-byte lines was 128k of them.
pub const GROUP_LINES: usize = 4096;

/// After a group, the engine's arena keeps its chunks (reset, not freed) up to this size: the
/// tree of an ordinary group (a group holds about [`Sink::group_bytes`] of input, or a single
/// line) fits; a huge line's tree is given back.
pub const ARENA_KEEP: usize = 8 << 20;

/// The arena emptied for the next line or group, whose trees are gone: reused, or dropped when
/// it grew past [`ARENA_KEEP`] (one long line must not keep its memory for the rest).
#[inline]
pub fn recycle(arena: &mut bumpalo::Bump) {
    if arena.allocated_bytes() > ARENA_KEEP {
        *arena = bumpalo::Bump::new();
    } else {
        arena.reset();
    }
}

/// [`feed`] frames a chunk about this many bytes at a time: the framed spans of one window
/// (~130 bytes a line) are alive at once, not those of a whole in-memory stream (64 MiB of
/// 2-byte lines: 33 million spans, 2 GB).
pub const FEED_WINDOW: usize = 64 << 10;

/// The length of the next window of `rest` ([`feed`]): [`FEED_WINDOW`] bytes cut just after
/// their last LF, so no line is cut between two windows (the framer would copy such a line
/// whole into its pending line, growing it by doubling: on the bench corpora 58-66 % of the
/// bytes are in lines of 64 KiB or more); a line longer than the window is a window of its own
/// (up to its LF, or the rest of the chunk).
fn window_len(rest: &[u8]) -> usize {
    let Some(head) = rest.get(..FEED_WINDOW).filter(|_| rest.len() > FEED_WINDOW) else {
        return rest.len();
    };
    match memchr::memrchr(b'\n', head) {
        Some(i) => i + 1,
        None => rest
            .get(FEED_WINDOW..)
            .and_then(|tail| memchr::memchr(b'\n', tail))
            .map_or(rest.len(), |i| FEED_WINDOW + i + 1),
    }
}

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

    /// Whether the lines' canonical text is looked for ([`crate::parse::Line::canonical`]):
    /// only outputs that copy `parsed` or its values' JSON text from the line use it
    /// ([`LineEvents::parsed_text`]); without, the parse skips its checks (an object's repeated
    /// keys, the places of long strings).
    fn canonical(&self) -> bool {
        true
    }

    /// Whether to go on: [`feed`] asks before each window of input ([`FEED_WINDOW`]), so an
    /// output built by one long core call can be given up within a window (the Arrow sink's
    /// cancel flag). The engine is left between two windows: its stream cannot go on.
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
    let context = &mut engine.context;
    let arena = &mut engine.arena;
    let scratch = &mut engine.scratch;
    let group_max = sink.group_bytes();
    let canonical = sink.canonical();
    if group_max == 0 {
        // one line a group: prepared, mapped and handed over in turn, with no vector of
        // prepared lines and none of mapped ones (two allocations and a copy of each line's
        // records per line: 2-3 % of a report)
        for it in items {
            let data = it.span.bytes(chunk);
            recycle(arena);
            let bump: &mut bumpalo::Bump = arena;
            let scratch = &mut *scratch;
            let collapse = &mut *collapse;
            let bytes = data.len();
            let prepared = sink.work(bytes, move || {
                let bump: &bumpalo::Bump = bump;
                if let Some(c) = collapse.as_mut() {
                    if it.fallback.is_none() && c.skip(data, it.span.total) {
                        return Ok(None);
                    }
                }
                let p = prepare_in(data, it.span.total, budget, canonical, bump, scratch)?;
                if let (Some(c), Some(p)) = (collapse.as_mut(), p.as_ref()) {
                    if !c.keep(p) && it.fallback.is_none() {
                        return Ok(None);
                    }
                }
                Ok::<_, OutOfMemory>(p)
            })?;
            let Some(p) = prepared.as_ref() else {
                continue;
            };
            let context = &mut *context;
            let rec = sink.work(bytes, || {
                map_line(it.span.position, bytes as u64, p, dialect, context)
            });
            line_out(sink, &rec, it.fallback, dialect, seq)?;
        }
        return Ok(());
    }
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
        recycle(arena);
        // moved into the closure as `&mut` (a `Bump` is `Send`, not `Sync`), shared inside
        let bump: &mut bumpalo::Bump = arena;
        let scratch = &mut *scratch;
        let collapse = &mut *collapse;
        type Ready<'c> = Vec<(Option<Prepared<'c>>, &'c Item)>;
        let prepared: Ready<'_> = sink.work(bytes, move || {
            let bump: &bumpalo::Bump = bump;
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
                let p = prepare_in(data, it.span.total, budget, canonical, bump, scratch)?;
                if let (Some(c), Some(p)) = (collapse.as_mut(), p.as_ref()) {
                    if !c.keep(p) && it.fallback.is_none() {
                        continue;
                    }
                }
                ready.push((p, it));
            }
            Ok::<_, OutOfMemory>(ready)
        })?;
        // in stream order: each line's dialect context is the one its earlier lines left
        let mapped = sink.work(bytes, || -> Vec<(LineEvents<'_>, Option<usize>)> {
            prepared
                .iter()
                .filter_map(|(p, it)| {
                    p.as_ref().map(|p| {
                        let size = it.span.bytes(chunk).len() as u64;
                        let rec = map_line(it.span.position, size, p, dialect, &mut *context);
                        (rec, it.fallback)
                    })
                })
                .collect()
        });
        for (rec, fallback) in &mapped {
            line_out(sink, rec, *fallback, dialect, seq)?;
        }
        start = end;
    }
    Ok(())
}

/// Hand one mapped line to `sink`, the fallback notice before it when it is the first held
/// line (`fallback`: how many were held).
#[inline]
fn line_out<S: Sink>(
    sink: &mut S,
    rec: &LineEvents<'_>,
    fallback: Option<usize>,
    dialect: &AnyDialect,
    seq: &mut u64,
) -> Result<(), S::Error> {
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
            events: vec![fallback_event(held, dialect)],
        };
        sink.line(&head, seq)?;
    }
    sink.line(rec, seq)
}

/// Frame `chunk` (in [`Sink::work`]) and hand the lines it completed to `sink`, about a
/// [`FEED_WINDOW`] at a time (cut at a line's end: [`window_len`]), [`Sink::check`] before
/// each.
///
/// [`OutOfMemory`] from framing leaves the engine unusable (see [`Engine::feed`]).
pub fn feed<S: Sink>(
    engine: &mut Engine,
    seq: &mut u64,
    chunk: &[u8],
    sink: &mut S,
) -> Result<(), S::Error> {
    let mut rest = chunk;
    while !rest.is_empty() {
        sink.check()?;
        let (window, tail) = rest.split_at(window_len(rest));
        let framed = sink.work(window.len(), || engine.feed(window))?;
        items(engine, &framed, window, seq, sink)?;
        rest = tail;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The windows of `data`, as [`feed`] cuts them.
    fn windows(data: &[u8]) -> Vec<&[u8]> {
        let mut out = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let (w, tail) = rest.split_at(window_len(rest));
            out.push(w);
            rest = tail;
        }
        out
    }

    #[test]
    fn windows_end_at_a_line_end() {
        let line = |n: usize| {
            let mut l = vec![b'x'; n];
            l.push(b'\n');
            l
        };
        // short lines, one long line, short lines, and a last line without LF
        let mut data: Vec<u8> = (0..2000).flat_map(|i| line(10 + i % 90)).collect();
        data.extend(line(3 * FEED_WINDOW));
        data.extend((0..2000).flat_map(|i| line(10 + i % 90)));
        data.extend(vec![b'y'; 2 * FEED_WINDOW]);
        let ws = windows(&data);
        assert_eq!(ws.concat(), data);
        let Some((last, whole)) = ws.split_last() else {
            panic!("no windows");
        };
        assert!(whole.iter().all(|w| w.last() == Some(&b'\n')));
        // a window is at most FEED_WINDOW bytes unless it is one line
        assert!(ws
            .iter()
            .all(|w| w.len() <= FEED_WINDOW || memchr::memchr_iter(b'\n', w).count() <= 1));
        assert!(ws.iter().any(|w| w.len() == 3 * FEED_WINDOW + 1));
        assert_eq!(
            last.len(),
            2 * FEED_WINDOW,
            "the tail without LF is one window"
        );
        // a chunk of at most one window is not cut
        assert_eq!(
            windows(data.get(..FEED_WINDOW).unwrap_or_default()).len(),
            1
        );
    }
}
