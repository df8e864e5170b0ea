//! `checkfu-fast normalize --jobs N` in the core: files, and ranges of every large plain file
//! ([`crate::split`]), normalized on `jobs` threads and written to one output in input order by
//! the calling thread, with `seq` numbered on across a file's ranges
//! ([`crate::split::write_rebased`]): the bytes of one stream per file, one after the other.
//!
//! - Units: a file is one unit, or (a regular file over 1.5 ranges whose plan cuts it) one
//!   unit per range; units are handed out in input order, planned lazily (a file's plan is made
//!   when its first unit is taken), at most `ahead` of them started and not yet written.
//! - Memory: a worker normalizes [`READ`] input bytes at a time into a buffer that waits in its
//!   unit's queue; the buffers waiting in all queues together (counted by their capacity, what
//!   they hold of the process's memory) stay within `window`, except that the unit being
//!   written may always hand over a buffer when none of its own waits (so the output keeps
//!   moving). Written buffers go back to a free list and are used again: no fresh pages per
//!   chunk, no buffer grown again from scratch, no copy of the JSONL into Python objects.
//! - A file the core leaves to the caller (not a regular file, or compressed: the Python layer
//!   reads those, with its own decompressors and messages) ends the run before it: everything
//!   before it is written, and [`run`] returns its index.
//! - Errors: a file that cannot be opened or read is reported in its place ([`Report::Done`]
//!   with the error), after the output its units made before the failure; its later units are
//!   dropped, and the run goes on. A failed write ends the run with that error.
//! - The caller hears of progress through `report` (each file done, in order; bytes read at
//!   most every [`TICK`] while waiting or writing), and stops the run by returning false.
//!   Every worker has stopped when [`run`] returns, whatever the way out.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::budget::{Budget, OutOfMemory};
use crate::dialect::AnyDialect;
use crate::fields::Sel;
use crate::input::{compression, Compression};
use crate::jsonl::Stream;
use crate::split::{self, io_oom, FileInput, Input, Plan};

/// Input bytes a worker reads and normalizes into one buffer.
pub const READ: usize = 128 << 10;
/// How often, at most, `report` hears of bytes read (and so how late a Ctrl-C is seen).
pub const TICK: Duration = Duration::from_millis(100);

/// What [`run`] does.
pub struct Options<'a> {
    /// The input files, in order.
    pub files: &'a [String],
    pub dialect: Option<AnyDialect>,
    pub budget: Budget,
    pub sel: Sel,
    /// Each event gets `source`: its file's name as given.
    pub tag_source: bool,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// The range size a large file is cut into (a file over 1.5 times this is planned).
    pub range_bytes: u64,
    /// Bytes of output buffers (their capacity) that may wait to be written, all units together.
    pub window: usize,
}

/// What the writer tells the caller, in order.
#[derive(Debug)]
pub enum Report {
    /// More input bytes of the file being written were read (and their output written).
    Read(u64),
    /// File `index` is done: `read` more bytes of it were read; `error` if it failed.
    Done {
        index: usize,
        read: u64,
        error: Option<io::Error>,
    },
}

/// How [`run`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every file written (or reported failed).
    All,
    /// Every file before this index written; this one is left to the caller.
    LeftAt(usize),
    /// `report` returned false: stopped (what was written stays written).
    Stopped,
}

enum Work {
    /// A whole file, opened, read from its start.
    Whole(File),
    /// Range `k` of a plan.
    Range(Arc<Plan>, usize),
    /// Nothing to do: the file could not be opened (the slot carries the error).
    Nothing,
}

/// One unit's output waiting to be written, in input order.
struct Slot {
    file: usize,
    /// Range `k > 0`: its `seq` numbered on from the file's events before it.
    rebase: bool,
    /// The file's last unit.
    last: bool,
    items: VecDeque<(Vec<u8>, u64)>,
    done: bool,
    error: Option<io::Error>,
}

struct State {
    /// Units handed out and not yet written, in order; `slots[0]` has id `head`.
    slots: VecDeque<Slot>,
    head: u64,
    /// Bytes waiting in every slot.
    waiting: usize,
    free: Vec<Vec<u8>>,
    /// The next file to open.
    file: usize,
    /// The file whose ranges are being handed out: (file, plan, next range).
    plan: Option<(usize, Arc<Plan>, usize)>,
    left_at: Option<usize>,
    /// A file that failed: its later units are dropped.
    failed: Option<usize>,
    stop: bool,
    /// Workers started (each past its thread's start), and whether they may take units: not
    /// before every worker has started (see [`run`]).
    started: usize,
    go: bool,
}

impl State {
    fn exhausted(&self, files: usize) -> bool {
        let ranges_left = self
            .plan
            .as_ref()
            .is_some_and(|(_, p, k)| *k < p.ranges.len());
        !ranges_left && (self.left_at.is_some() || self.file >= files)
    }
}

struct Shared<'a> {
    opts: &'a Options<'a>,
    state: Mutex<State>,
    /// Workers wait here (for room in the window, or for a unit to take).
    room: Condvar,
    /// The writer waits here (for output of the unit being written).
    ready: Condvar,
    ahead: usize,
}

impl Shared<'_> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'g>(&self, cv: &Condvar, g: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        cv.wait(g).unwrap_or_else(PoisonError::into_inner)
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.room.notify_all();
        self.ready.notify_all();
    }

    /// What to do with file `i`: open it and decide (whole, split, left to the caller).
    fn open(&self, i: usize) -> Result<Option<Opened>, io::Error> {
        let Some(name) = self.opts.files.get(i) else {
            return Ok(None);
        };
        let path = Path::new(name);
        // stat first: opening a FIFO would wait for a writer
        let meta = std::fs::metadata(path)?;
        if !meta.is_file() {
            return Ok(None);
        }
        let mut file = File::open(path)?;
        let mut head = [0u8; 4];
        let mut n = 0;
        while n < head.len() {
            match file.read(head.get_mut(n..).unwrap_or_default()) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if compression(head.get(..n).unwrap_or_default()) != Compression::None {
            return Ok(None);
        }
        let target = self.opts.range_bytes.max(1);
        if meta.len() > target.saturating_add(target / 2) {
            let mut src = FileInput::open(path)?;
            let plan = split::plan(
                &mut src,
                self.opts.dialect.clone(),
                self.opts.budget,
                target,
            )?;
            if plan.ranges.len() > 1 {
                return Ok(Some(Opened::Split(plan)));
            }
        }
        file.rewind()?;
        Ok(Some(Opened::Whole(file)))
    }

    /// The next unit in input order (its slot made), or None when there is none left or the
    /// run stops.
    fn take(&self) -> Option<(u64, usize, Work)> {
        let mut st = self.lock();
        loop {
            if st.stop {
                return None;
            }
            if !st.go || st.slots.len() >= self.ahead {
                st = self.wait(&self.room, st);
                continue;
            }
            if let Some((i, plan, k)) = st.plan.take() {
                if k < plan.ranges.len() {
                    let last = k + 1 == plan.ranges.len();
                    st.plan = Some((i, Arc::clone(&plan), k + 1));
                    return Some(self.push(&mut st, i, k > 0, last, Work::Range(plan, k)));
                }
            }
            if st.left_at.is_some() || st.file >= self.opts.files.len() {
                return None;
            }
            let i = st.file;
            st.file += 1;
            // opening and planning (cheap: a few reads) is done holding the lock: the units
            // are handed out in order
            match self.open(i) {
                Ok(Some(Opened::Whole(f))) => {
                    return Some(self.push(&mut st, i, false, true, Work::Whole(f)))
                }
                Ok(Some(Opened::Split(p))) => st.plan = Some((i, Arc::new(p), 0)),
                Ok(None) => {
                    st.left_at = Some(i);
                    self.ready.notify_all();
                    return None;
                }
                Err(e) => {
                    let (id, _, _) = self.push(&mut st, i, false, true, Work::Nothing);
                    let at = usize::try_from(id - st.head).unwrap_or(usize::MAX);
                    if let Some(s) = st.slots.get_mut(at) {
                        s.done = true;
                        s.error = Some(e);
                    }
                    self.ready.notify_all();
                }
            }
        }
    }

    fn push(
        &self,
        st: &mut State,
        file: usize,
        rebase: bool,
        last: bool,
        w: Work,
    ) -> (u64, usize, Work) {
        st.slots.push_back(Slot {
            file,
            rebase,
            last,
            items: VecDeque::new(),
            done: false,
            error: None,
        });
        (st.head + st.slots.len() as u64 - 1, file, w)
    }

    /// A buffer to normalize into (a written one again when there is one).
    fn buffer(&self) -> io::Result<Vec<u8>> {
        if let Some(b) = self.lock().free.pop() {
            return Ok(b);
        }
        let mut v = Vec::new();
        // about the JSONL of READ bytes with every field (4.5 bytes per byte read on real
        // streams): no copy as it grows; the capacity not written is never touched
        OutOfMemory::reserve(&mut v, READ * 6).map_err(io_oom)?;
        Ok(v)
    }

    /// Hand `buf` (the output of `read` input bytes) to unit `id`'s queue, waiting for room in
    /// the window; false when the unit is to stop (the run stops, or its file failed).
    fn put(&self, id: u64, buf: Vec<u8>, read: u64) -> bool {
        let mut st = self.lock();
        if buf.is_empty() && read == 0 {
            st.free.push(buf);
            return !st.stop;
        }
        loop {
            if st.stop {
                return false;
            }
            let at = usize::try_from(id - st.head).unwrap_or(usize::MAX);
            let waiting = st.waiting;
            let failed = st.failed;
            let Some(slot) = st.slots.get_mut(at) else {
                return false;
            };
            if failed == Some(slot.file) {
                return false;
            }
            // a buffer counts for its capacity: what it holds of the process's memory
            if (at == 0 && slot.items.is_empty()) || waiting + buf.capacity() <= self.opts.window {
                let n = buf.capacity();
                slot.items.push_back((buf, read));
                st.waiting += n;
                self.ready.notify_all();
                return true;
            }
            st = self.wait(&self.room, st);
        }
    }

    fn finish(&self, id: u64, error: Option<io::Error>) {
        let mut st = self.lock();
        let at = usize::try_from(id - st.head).unwrap_or(usize::MAX);
        if let Some(slot) = st.slots.get_mut(at) {
            slot.done = true;
            slot.error = error;
        }
        self.ready.notify_all();
    }

    fn worker(&self) {
        self.lock().started += 1;
        self.ready.notify_all();
        let mut chunk = Vec::new();
        while let Some((id, file, work)) = self.take() {
            if chunk.len() < READ {
                if let Err(e) = OutOfMemory::reserve(&mut chunk, READ) {
                    self.finish(id, Some(io_oom(e)));
                    continue;
                }
                chunk.resize(READ, 0);
            }
            let r = self.work(id, file, work, &mut chunk);
            self.finish(id, r.err());
        }
    }

    /// Normalize one unit into its queue, reading into `chunk`.
    fn work(&self, id: u64, file: usize, work: Work, chunk: &mut [u8]) -> io::Result<()> {
        let opts = self.opts;
        let source = if opts.tag_source {
            opts.files.get(file).map(String::as_str)
        } else {
            None
        };
        match work {
            Work::Nothing => Ok(()),
            Work::Whole(mut f) => {
                let mut s = Stream::new(opts.dialect.clone(), opts.budget, source, opts.sel);
                loop {
                    let n = match f.read(chunk) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(e),
                    };
                    let mut out = self.buffer()?;
                    s.feed(chunk.get(..n).unwrap_or_default(), &mut out)
                        .map_err(io_oom)?;
                    if !self.put(id, out, n as u64) {
                        return Ok(());
                    }
                }
                let mut out = self.buffer()?;
                s.finish(&mut out).map_err(io_oom)?;
                self.put(id, out, 0);
                Ok(())
            }
            Work::Range(plan, k) => {
                let Some(&(start, end)) = plan.ranges.get(k) else {
                    return Ok(());
                };
                let path = Path::new(opts.files.get(file).map_or("", String::as_str));
                let mut src = FileInput::open(path)?;
                let mut s = split::range_stream(
                    &plan,
                    k,
                    opts.dialect.clone(),
                    opts.budget,
                    source,
                    opts.sel,
                );
                let mut pos = start;
                while pos < end {
                    let want = usize::try_from(end - pos).unwrap_or(READ).min(READ);
                    let n = src.read_at(pos, chunk.get_mut(..want).unwrap_or_default())?;
                    if n == 0 {
                        break; // the file shrank: its end is here
                    }
                    pos += n as u64;
                    let mut out = self.buffer()?;
                    s.feed(chunk.get(..n).unwrap_or_default(), &mut out)
                        .map_err(io_oom)?;
                    if !self.put(id, out, n as u64) {
                        return Ok(());
                    }
                }
                // range 0 of several ends where the stream is split_ok: only the last finishes
                if k + 1 == plan.ranges.len() {
                    let mut out = self.buffer()?;
                    s.finish(&mut out).map_err(io_oom)?;
                    self.put(id, out, 0);
                }
                Ok(())
            }
        }
    }

    /// The writer's next step, waiting at most `timeout`.
    fn next(&self, timeout: Duration) -> Next {
        let deadline = Instant::now() + timeout;
        let mut st = self.lock();
        loop {
            if let Some(slot) = st.slots.front_mut() {
                if let Some((buf, read)) = slot.items.pop_front() {
                    let (file, rebase) = (slot.file, slot.rebase);
                    st.waiting -= buf.capacity();
                    self.room.notify_all();
                    return Next::Item {
                        buf,
                        read,
                        file,
                        rebase,
                    };
                }
                if slot.done {
                    let file = slot.file;
                    let last = slot.last;
                    let error = slot.error.take();
                    st.slots.pop_front();
                    st.head += 1;
                    self.room.notify_all();
                    return Next::End { file, last, error };
                }
            } else if st.exhausted(self.opts.files.len()) {
                return Next::Finished(st.left_at);
            }
            let now = Instant::now();
            if now >= deadline {
                return Next::Timeout;
            }
            st = self
                .ready
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// A written buffer back to the free list: all of them are kept (a worker makes a new one
    /// only when the list is empty, so there are never more than the window and the workers
    /// hold at once); one freed and made again would grow from scratch, fresh pages each time.
    fn recycle(&self, mut buf: Vec<u8>) {
        buf.clear();
        self.lock().free.push(buf);
    }

    /// Wait until `n` workers have started, then let them take units.
    fn start(&self, n: usize) {
        let mut st = self.lock();
        while st.started < n && !st.stop {
            st = self.wait(&self.ready, st);
        }
        st.go = true;
        drop(st);
        self.room.notify_all();
    }

    fn mark_failed(&self, file: usize) {
        self.lock().failed = Some(file);
        self.room.notify_all();
    }
}

enum Opened {
    Whole(File),
    Split(Plan),
}

enum Next {
    Item {
        buf: Vec<u8>,
        read: u64,
        file: usize,
        rebase: bool,
    },
    End {
        file: usize,
        last: bool,
        error: Option<io::Error>,
    },
    Timeout,
    Finished(Option<usize>),
}

/// Normalize `opts.files` into `out` (see the module doc). `report` is called on this thread;
/// returning false stops the run ([`End::Stopped`]). A failed write is the error.
pub fn run(
    opts: &Options<'_>,
    out: &mut dyn Write,
    report: &mut dyn FnMut(Report) -> bool,
) -> io::Result<End> {
    let jobs = opts.jobs.max(1);
    let shared = Shared {
        opts,
        state: Mutex::new(State {
            slots: VecDeque::new(),
            head: 0,
            waiting: 0,
            free: Vec::new(),
            file: 0,
            plan: None,
            left_at: None,
            failed: None,
            stop: false,
            started: 0,
            go: false,
        }),
        room: Condvar::new(),
        ready: Condvar::new(),
        ahead: 2 * jobs + 2,
    };
    std::thread::scope(|scope| {
        // a thread that cannot be made (no memory for its stack) leaves fewer workers; none is
        // the error (`spawn` would panic)
        let mut started = 0;
        for _ in 0..jobs {
            match std::thread::Builder::new().spawn_scoped(scope, || shared.worker()) {
                Ok(_) => started += 1,
                Err(e) if started == 0 => return Err(e),
                Err(_) => break,
            }
        }
        // no unit is taken before every worker's thread has started: a thread's start
        // registers a thread-local destructor with glibc, whose failure to allocate for it is
        // a fatal abort, and a worker already at work could take the memory left first
        // (under RLIMIT_AS: "failed to register TLS destructor: out of memory")
        shared.start(started);
        let end = write(&shared, out, report);
        shared.stop(); // every worker out of its waits; the scope joins them
        end
    })
}

fn write(
    shared: &Shared<'_>,
    out: &mut dyn Write,
    report: &mut dyn FnMut(Report) -> bool,
) -> io::Result<End> {
    let mut seq = 0u64; // the events of file `current` written so far
    let mut current = usize::MAX;
    let mut failed: Option<usize> = None;
    let mut read = 0u64; // bytes read since the last report
    let mut last = Instant::now();
    loop {
        match shared.next(TICK) {
            Next::Item {
                buf,
                read: n,
                file,
                rebase,
            } => {
                read += n;
                if failed != Some(file) {
                    if file != current {
                        current = file;
                        seq = 0;
                    }
                    seq += split::write_rebased(&buf, rebase.then_some(seq), out)?;
                }
                shared.recycle(buf);
            }
            Next::End {
                file,
                last: end,
                error,
            } => {
                if failed == Some(file) {
                    continue; // reported already
                }
                if let Some(e) = error {
                    failed = Some(file);
                    shared.mark_failed(file);
                    let r = std::mem::take(&mut read);
                    if !report(Report::Done {
                        index: file,
                        read: r,
                        error: Some(e),
                    }) {
                        return Ok(End::Stopped);
                    }
                    last = Instant::now();
                } else if end {
                    let r = std::mem::take(&mut read);
                    if !report(Report::Done {
                        index: file,
                        read: r,
                        error: None,
                    }) {
                        return Ok(End::Stopped);
                    }
                    last = Instant::now();
                }
                continue;
            }
            Next::Timeout => {}
            Next::Finished(left) => {
                out.flush()?;
                return Ok(left.map_or(End::All, End::LeftAt));
            }
        }
        if last.elapsed() >= TICK {
            out.flush()?;
            if !report(Report::Read(std::mem::take(&mut read))) {
                return Ok(End::Stopped);
            }
            last = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(dir: &Path, data: &[&[u8]]) -> Vec<String> {
        data.iter()
            .enumerate()
            .map(|(i, d)| {
                let p = dir.join(format!("{i}.jsonl"));
                std::fs::write(&p, d).ok();
                p.to_string_lossy().into_owned()
            })
            .collect()
    }

    fn whole(data: &[u8], source: Option<&str>) -> Vec<u8> {
        let mut s = Stream::new(None, Budget::default(), source, Sel::ALL);
        let mut out = Vec::new();
        s.feed(data, &mut out).ok();
        s.finish(&mut out).ok();
        out
    }

    #[test]
    fn in_order_with_seq_numbered_on() {
        let dir = std::env::temp_dir().join(format!("checkfu-ordered-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let line: &[u8] =
            b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n";
        let init: &[u8] =
            b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\",\"tools\":[]}\n";
        let big: Vec<u8> = [init, &line.repeat(3000), b"{bad\n"].concat();
        let small: Vec<u8> = [init, line].concat();
        let names = files(&dir, &[&big, &small, b"", &big]);
        let mut with_missing = names.clone();
        with_missing.insert(2, dir.join("missing").to_string_lossy().into_owned());
        for jobs in 1..4 {
            let opts = Options {
                files: &with_missing,
                dialect: None,
                budget: Budget::default(),
                sel: Sel::ALL,
                tag_source: true,
                jobs,
                range_bytes: 4000,
                window: 64 << 10,
            };
            let mut out = Vec::new();
            let mut done = Vec::new();
            let end = run(&opts, &mut out, &mut |r| {
                if let Report::Done { index, error, .. } = r {
                    done.push((index, error.map(|e| e.kind())));
                }
                true
            });
            assert_eq!(end.ok(), Some(End::All));
            let want: Vec<u8> = with_missing
                .iter()
                .filter_map(|n| std::fs::read(n).ok().map(|d| whole(&d, Some(n))))
                .collect::<Vec<_>>()
                .concat();
            assert!(out == want, "jobs {jobs}");
            assert_eq!(
                done,
                vec![
                    (0, None),
                    (1, None),
                    (2, Some(io::ErrorKind::NotFound)),
                    (3, None),
                    (4, None)
                ]
            );
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
