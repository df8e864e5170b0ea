//! `checkfu-fast normalize --jobs N` in the core: files, and ranges of every large plain file
//! ([`crate::split`]), normalized on `jobs` threads and written to one output in input order,
//! with `seq` numbered on across a file's ranges ([`crate::split::write_rebased`]): the bytes
//! of one stream per file, one after the other.
//!
//! - Writing: the workers write, one at a time (a writer's token in the shared state; the
//!   lock is not held while writing). A worker whose unit is the one being written writes its
//!   buffer itself when nothing of that unit waits and no one else writes (no hand-over, no
//!   wake-up, the buffer used again at once); a worker that ends the unit being written writes
//!   what waits after it, unit after unit. The calling thread only reports (files done, bytes
//!   read) and waits, waking every [`TICK`] or when a file is done.
//! - Units: a file is one unit, or (a regular file over 1.5 ranges whose plan cuts it) one
//!   unit per range; units are handed out in input order, planned lazily (a file's plan is made
//!   when its first unit is taken), at most `ahead` of them started and not yet written.
//! - Memory: a worker normalizes [`READ`] input bytes at a time into a buffer that waits in its
//!   unit's queue; the buffers waiting in all queues together (counted by their capacity, what
//!   they hold of the process's memory) stay within `window`, except that the unit being
//!   written may always hand over a buffer when none of its own waits (so the output keeps
//!   moving). Written buffers go back to a free list (or stay with the worker that wrote its
//!   own) and are used again: no fresh pages per chunk, no buffer grown again from scratch, no
//!   copy of the JSONL into Python objects.
//! - A file the core leaves to the caller (not a regular file, or compressed: the Python layer
//!   reads those, with its own decompressors and messages) ends the run before it: everything
//!   before it is written, and [`run`] returns its index.
//! - Errors: a file that cannot be opened or read is reported in its place ([`Report::Done`]
//!   with the error), after the output its units made before the failure; its later units are
//!   dropped, and the run goes on. A failed write ends the run with that error.
//! - The caller hears of progress through `report`, on the calling thread (each file done, in
//!   order; every [`TICK`] the bytes read whose output is written), and stops the run by
//!   returning false.
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
    /// A worker is opening (and planning) file `file - 1`: no unit is handed out meanwhile.
    opening: bool,
    /// The writer's token: a worker is writing (only it writes to the output and numbers on).
    writing: bool,
    /// The writer's numbering: the file being written and its events written so far.
    at: (usize, u64),
    /// Input bytes whose output is written, not yet reported.
    read: u64,
    /// Files done, in order, for the calling thread to report: (index, bytes read, error).
    done: VecDeque<(usize, u64, Option<io::Error>)>,
    /// A failed write: the run's error.
    error: Option<io::Error>,
    /// Workers waiting on `room` (no wake-up call when there is none).
    sleepers: usize,
}

impl State {
    fn exhausted(&self, files: usize) -> bool {
        let ranges_left = self
            .plan
            .as_ref()
            .is_some_and(|(_, p, k)| *k < p.ranges.len());
        !ranges_left && !self.opening && (self.left_at.is_some() || self.file >= files)
    }
}

struct Shared<'a, 'o> {
    opts: &'a Options<'a>,
    state: Mutex<State>,
    /// Only the holder of the writer's token (`State::writing`) locks it (and the calling
    /// thread, to flush it).
    out: Mutex<&'o mut (dyn Write + Send)>,
    /// Workers wait here (for room in the window, or for a unit to take).
    room: Condvar,
    /// The calling thread waits here (for a file done, the end, or the next tick).
    ready: Condvar,
    ahead: usize,
}

/// What [`Shared::put`] did with a buffer.
enum Put {
    /// Written (by this thread: its unit was the one being written); the buffer stays.
    Written,
    /// Queued; the worker needs another buffer.
    Queued,
    /// The unit is to stop (the run stops, or its file failed).
    Stop,
}

impl Shared<'_, '_> {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Workers waiting for room or a unit go on.
    fn wake(&self, st: &State) {
        if st.sleepers > 0 {
            self.room.notify_all();
        }
    }

    fn wait_room<'g>(&self, mut g: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        g.sleepers += 1;
        let mut g = self.room.wait(g).unwrap_or_else(PoisonError::into_inner);
        g.sleepers -= 1;
        g
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
                st = self.wait_room(st);
                continue;
            }
            if let Some((i, plan, k)) = st.plan.take() {
                if k < plan.ranges.len() {
                    let last = k + 1 == plan.ranges.len();
                    st.plan = Some((i, Arc::clone(&plan), k + 1));
                    return Some(self.push(&mut st, i, k > 0, last, Work::Range(plan, k)));
                }
            }
            if st.opening {
                // the next units are the file being opened's: handed out in order
                st = self.wait_room(st);
                continue;
            }
            if st.left_at.is_some() || st.file >= self.opts.files.len() {
                self.ready.notify_all(); // the end may be here
                return None;
            }
            let i = st.file;
            st.file += 1;
            // opening and planning (a few reads and parses) without the lock: the other
            // workers go on writing and handing on their buffers meanwhile
            st.opening = true;
            drop(st);
            let opened = self.open(i);
            st = self.lock();
            st.opening = false;
            self.wake(&st);
            if st.stop {
                return None;
            }
            match opened {
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
                    st = self.pump(st);
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

    /// `out` made a buffer to normalize into, if it is none (a written one again when there
    /// is one).
    fn buffer(&self, out: &mut Vec<u8>) -> io::Result<()> {
        if out.capacity() > 0 {
            return Ok(());
        }
        if let Some(b) = self.lock().free.pop() {
            *out = b;
            return Ok(());
        }
        // about the JSONL of READ bytes with every field (4.5 bytes per byte read on real
        // streams): no copy as it grows; the capacity not written is never touched
        OutOfMemory::reserve(out, READ * 6).map_err(io_oom)
    }

    /// Hand `out` (the output of `read` input bytes) on for unit `id`: written here when the
    /// unit is the one being written, nothing of it waits and no other thread is writing
    /// (`out` is then emptied, to be used again); else queued (`out` left empty, without
    /// capacity), waiting for room in the window.
    fn put(&self, id: u64, out: &mut Vec<u8>, read: u64) -> Put {
        if out.is_empty() && read == 0 {
            return Put::Written; // nothing to hand on
        }
        let mut st = self.lock();
        loop {
            if st.stop {
                return Put::Stop;
            }
            let at = usize::try_from(id - st.head).unwrap_or(usize::MAX);
            let waiting = st.waiting;
            let failed = st.failed;
            let writing = st.writing;
            let Some(slot) = st.slots.get_mut(at) else {
                return Put::Stop;
            };
            if failed == Some(slot.file) {
                return Put::Stop;
            }
            let first = at == 0 && slot.items.is_empty();
            if first && !writing {
                let (file, rebase) = (slot.file, slot.rebase);
                st.writing = true;
                let mut numbering = st.at;
                drop(st);
                let written = self.write_out(out, file, rebase, &mut numbering);
                out.clear();
                let mut st = self.lock();
                st.writing = false; // taken again by `pump` for what waits
                st.at = numbering;
                st.read += read;
                let put = match written {
                    Ok(()) => Put::Written,
                    Err(e) => {
                        self.fail(&mut st, e);
                        Put::Stop
                    }
                };
                drop(self.pump(st));
                return put;
            }
            // a buffer counts for its capacity: what it holds of the process's memory
            if first || waiting + out.capacity() <= self.opts.window {
                let buf = std::mem::take(out);
                st.waiting += buf.capacity();
                if let Some(slot) = st.slots.get_mut(at) {
                    slot.items.push_back((buf, read));
                }
                return Put::Queued;
            }
            st = self.wait_room(st);
        }
    }

    /// `buf` written to the output, `seq` numbered on from `numbering` (the file written and
    /// its events written so far).
    fn write_out(
        &self,
        buf: &[u8],
        file: usize,
        rebase: bool,
        numbering: &mut (usize, u64),
    ) -> io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let (current, seq) = numbering;
        if file != *current {
            *current = file;
            *seq = 0;
        }
        *seq += split::write_rebased(buf, rebase.then_some(*seq), &mut **out)?;
        Ok(())
    }

    /// A failed write: the run's error; everyone stops.
    fn fail(&self, st: &mut State, e: io::Error) {
        if st.error.is_none() {
            st.error = Some(e);
        }
        st.stop = true;
        self.room.notify_all();
        self.ready.notify_all();
    }

    /// Write what can be written now, in order, unless another thread is writing (it does):
    /// the waiting buffers of the unit being written, then on past every unit done (each file
    /// done queued for the calling thread to report). The writer's token is held while
    /// writing, the lock not.
    fn pump<'g>(&'g self, mut st: MutexGuard<'g, State>) -> MutexGuard<'g, State> {
        if st.writing {
            return st;
        }
        st.writing = true;
        let mut spent: Option<Vec<u8>> = None;
        loop {
            if let Some(mut b) = spent.take() {
                b.clear();
                st.free.push(b);
            }
            if st.stop {
                break;
            }
            let failed = st.failed;
            let Some(slot) = st.slots.front_mut() else {
                break;
            };
            if let Some((buf, read)) = slot.items.pop_front() {
                let (file, rebase) = (slot.file, slot.rebase);
                st.waiting -= buf.capacity();
                st.read += read;
                self.wake(&st);
                if failed != Some(file) {
                    let mut numbering = st.at;
                    drop(st);
                    let written = self.write_out(&buf, file, rebase, &mut numbering);
                    st = self.lock();
                    st.at = numbering;
                    if let Err(e) = written {
                        self.fail(&mut st, e);
                    }
                }
                spent = Some(buf);
                continue;
            }
            if !slot.done {
                break;
            }
            let (file, last, error) = (slot.file, slot.last, slot.error.take());
            st.slots.pop_front();
            st.head += 1;
            self.wake(&st);
            if failed == Some(file) {
                continue; // reported already
            }
            if error.is_some() {
                st.failed = Some(file);
            }
            if error.is_some() || last {
                let read = std::mem::take(&mut st.read);
                st.done.push_back((file, read, error));
                self.ready.notify_all();
            }
        }
        st.writing = false;
        if st.slots.is_empty() {
            self.ready.notify_all(); // the end may be here
        }
        st
    }

    fn finish(&self, id: u64, error: Option<io::Error>) {
        let mut st = self.lock();
        let at = usize::try_from(id - st.head).unwrap_or(usize::MAX);
        if let Some(slot) = st.slots.get_mut(at) {
            slot.done = true;
            slot.error = error;
        }
        if at == 0 {
            drop(self.pump(st));
        }
    }

    fn worker(&self) {
        self.lock().started += 1;
        self.ready.notify_all();
        let mut chunk = Vec::new();
        let mut out = Vec::new();
        while let Some((id, file, work)) = self.take() {
            if chunk.len() < READ {
                if let Err(e) = OutOfMemory::reserve(&mut chunk, READ) {
                    self.finish(id, Some(io_oom(e)));
                    continue;
                }
                chunk.resize(READ, 0);
            }
            let r = self.work(id, file, work, &mut chunk, &mut out);
            self.finish(id, r.err());
        }
    }

    /// Normalize one unit, reading into `chunk`, into `out` handed on ([`Shared::put`]).
    fn work(
        &self,
        id: u64,
        file: usize,
        work: Work,
        chunk: &mut [u8],
        out: &mut Vec<u8>,
    ) -> io::Result<()> {
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
                    self.buffer(out)?;
                    s.feed(chunk.get(..n).unwrap_or_default(), out)
                        .map_err(io_oom)?;
                    if let Put::Stop = self.put(id, out, n as u64) {
                        return Ok(());
                    }
                }
                self.buffer(out)?;
                s.finish(out).map_err(io_oom)?;
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
                    self.buffer(out)?;
                    s.feed(chunk.get(..n).unwrap_or_default(), out)
                        .map_err(io_oom)?;
                    if let Put::Stop = self.put(id, out, n as u64) {
                        return Ok(());
                    }
                }
                // range 0 of several ends where the stream is split_ok: only the last finishes
                if k + 1 == plan.ranges.len() {
                    self.buffer(out)?;
                    s.finish(out).map_err(io_oom)?;
                    self.put(id, out, 0);
                }
                Ok(())
            }
        }
    }

    /// Wait until `n` workers have started, then let them take units.
    fn start(&self, n: usize) {
        let mut st = self.lock();
        while st.started < n && !st.stop {
            st = self.ready.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
        st.go = true;
        drop(st);
        self.room.notify_all();
    }

    fn flush(&self) -> io::Result<()> {
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }
}

enum Opened {
    Whole(File),
    Split(Plan),
}

/// Normalize `opts.files` into `out` (see the module doc). `report` is called on this thread;
/// returning false stops the run ([`End::Stopped`]). A failed write is the error.
pub fn run(
    opts: &Options<'_>,
    out: &mut (dyn Write + Send),
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
            opening: false,
            writing: false,
            at: (usize::MAX, 0),
            read: 0,
            done: VecDeque::new(),
            error: None,
            sleepers: 0,
        }),
        out: Mutex::new(out),
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
        let end = report_until_end(&shared, report);
        shared.stop(); // every worker out of its waits; the scope joins them
        end
    })
}

/// The calling thread's part: each file done reported in order, the bytes read every
/// [`TICK`], until the end (every unit written), a failed write, or `report` says stop.
fn report_until_end(
    shared: &Shared<'_, '_>,
    report: &mut dyn FnMut(Report) -> bool,
) -> io::Result<End> {
    let files = shared.opts.files.len();
    let mut last = Instant::now();
    let mut st = shared.lock();
    loop {
        if let Some(e) = st.error.take() {
            return Err(e);
        }
        if let Some((index, read, error)) = st.done.pop_front() {
            drop(st);
            if !report(Report::Done { index, read, error }) {
                return Ok(End::Stopped);
            }
            last = Instant::now();
            st = shared.lock();
            continue;
        }
        if st.slots.is_empty() && !st.writing && st.exhausted(files) {
            let left = st.left_at;
            drop(st);
            shared.flush()?;
            return Ok(left.map_or(End::All, End::LeftAt));
        }
        let now = Instant::now();
        let due = last + TICK;
        if now >= due {
            let read = std::mem::take(&mut st.read);
            drop(st);
            shared.flush()?;
            if !report(Report::Read(read)) {
                return Ok(End::Stopped);
            }
            last = Instant::now();
            st = shared.lock();
            continue;
        }
        st = shared
            .ready
            .wait_timeout(st, due - now)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
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

    /// A writer that takes `left` bytes, then fails.
    struct Failing {
        left: usize,
        got: Vec<u8>,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            self.got.extend_from_slice(buf.get(..n).unwrap_or_default());
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_ends_the_run_and_a_false_report_stops_it() {
        let dir = std::env::temp_dir().join(format!("checkfu-ordered-w-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let line: &[u8] =
            b"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n";
        let big = line.repeat(5000);
        let names = files(&dir, &[&big, &big, &big]);
        let want: Vec<u8> = names
            .iter()
            .map(|n| whole(&big, Some(n)))
            .collect::<Vec<_>>()
            .concat();
        for jobs in 1..4 {
            let opts = Options {
                files: &names,
                dialect: None,
                budget: Budget::default(),
                sel: Sel::ALL,
                tag_source: true,
                jobs,
                range_bytes: 20_000,
                window: 1 << 20,
            };
            // the write fails half way: the run's error, whoever was writing; a prefix written
            let mut out = Failing {
                left: want.len() / 2,
                got: Vec::new(),
            };
            let end = run(&opts, &mut out, &mut |_| true);
            assert_eq!(
                end.err().map(|e| e.kind()),
                Some(io::ErrorKind::BrokenPipe),
                "jobs {jobs}"
            );
            assert!(want.starts_with(&out.got), "jobs {jobs}");
            // stopped at the first file done: what was written is a prefix, the first file whole
            let mut out = Vec::new();
            let mut reports = 0;
            let end = run(&opts, &mut out, &mut |r| {
                reports += 1;
                !matches!(r, Report::Done { .. })
            });
            assert_eq!(end.ok(), Some(End::Stopped), "jobs {jobs}");
            assert!(want.starts_with(&out), "jobs {jobs}");
            assert!(out.len() >= whole(&big, names.first().map(String::as_str)).len());
            assert!(reports >= 1);
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
