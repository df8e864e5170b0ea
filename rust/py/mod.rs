//! The `checkfu_fast._native` module: argument extraction, the GIL policy and error mapping.
//! No normalization logic lives here.

mod arrow;
mod convert;
mod jobs;
mod journal;
mod json;
mod report_cache;
mod usage;
mod walk;

use pyo3::exceptions::{PyMemoryError, PyNotImplementedError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyList, PyTuple};

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::budget::{Budget, OutOfMemory, MAX_DEPTH_LIMIT};
use crate::dialect::{AnyDialect, NameError, DIALECTS};
use crate::fields::{Sel, FIELDS};
use crate::jsonl;
use crate::mapping::Mapping;
use crate::normalize::{Collapse, Engine, LineEvents};
use crate::sink::{self, Sink};
use crate::split;

/// Rust's allocations in the module (trees, output buffers) come from mimalloc, which keeps
/// freed pages for reuse: a large output then costs no fresh page faults on the next call.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Inputs at least this large are processed with the GIL released.
const DETACH_BYTES: usize = 64 << 10;
/// Lines are prepared and converted in groups of about this many input bytes.
const GROUP_BYTES: usize = 256 << 10;

/// A compiled mapping-defined dialect (from `checkfu_fast.load_dialect`).
#[pyclass(module = "checkfu_fast._native", name = "Mapping", frozen)]
struct PyMapping {
    inner: Arc<Mapping>,
}

#[pymethods]
impl PyMapping {
    #[new]
    fn new(text: &str) -> PyResult<Self> {
        Mapping::compile(text)
            .map(|m| PyMapping { inner: Arc::new(m) })
            .map_err(PyValueError::new_err)
    }

    #[getter]
    fn dialect(&self) -> &'static str {
        self.inner.dialect
    }
}

fn dialect_arg(d: &Bound<'_, PyAny>) -> PyResult<Option<AnyDialect>> {
    if let Ok(m) = d.cast::<PyMapping>() {
        return Ok(Some(AnyDialect::Mapped(Arc::clone(&m.get().inner))));
    }
    let name: String = d.extract()?;
    let name = name.as_str();
    if name == "auto" {
        return Ok(None);
    }
    AnyDialect::from_name(name).map(Some).map_err(|e| match e {
        NameError::Unknown(n) => PyValueError::new_err(format!(
            "unknown dialect {n:?}; expected one of: auto, {}",
            DIALECTS.join(", ")
        )),
        NameError::NotImplemented(n) => {
            PyNotImplementedError::new_err(format!("dialect {n:?} is not implemented yet"))
        }
    })
}

/// An input-sized allocation that failed in the core, as Python's `MemoryError`.
pub(crate) fn oom(e: OutOfMemory) -> PyErr {
    PyMemoryError::new_err(e.to_string())
}

pub(crate) fn budget_arg(max_line_bytes: i64, max_depth: i64, max_nodes: i64) -> PyResult<Budget> {
    let check = |name: &str, v: i64, high: i64| -> PyResult<usize> {
        if (1..=high).contains(&v) {
            usize::try_from(v).map_err(|_| PyValueError::new_err(format!("{name} out of range")))
        } else {
            Err(PyValueError::new_err(format!(
                "{name} must be between 1 and {high}, got {v}"
            )))
        }
    };
    Ok(Budget {
        max_line_bytes: check("max_line_bytes", max_line_bytes, 1 << 40)?,
        max_depth: check("max_depth", max_depth, MAX_DEPTH_LIMIT as i64)?,
        max_nodes: check("max_nodes", max_nodes, 1 << 40)?,
    })
}

/// The projection a `fields` argument names: `None` or `"all"` (every field), `"lean"` (all but
/// `raw` and `parsed`), or field names (`v`, `seq`, `position`, `dialect`, `kind`, `subtype`
/// always kept); an unknown name is a `ValueError` naming the valid ones.
pub(crate) fn fields_arg(fields: Option<&Bound<'_, PyAny>>) -> PyResult<Sel> {
    let Some(f) = fields.filter(|f| !f.is_none()) else {
        return Ok(Sel::ALL);
    };
    if let Ok(name) = f.extract::<String>() {
        return match name.as_str() {
            "all" => Ok(Sel::ALL),
            "lean" => Ok(Sel::lean()),
            other => Err(PyValueError::new_err(format!(
                "fields must be None, \"all\", \"lean\" or a list of field names, not the string {other:?}"
            ))),
        };
    }
    let names: Vec<String> = f
        .try_iter()?
        .map(|n| n?.extract())
        .collect::<PyResult<_>>()?;
    Sel::names(names.iter().map(String::as_str)).map_err(|bad| {
        let valid: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        PyValueError::new_err(format!(
            "unknown event field {bad:?}; valid fields: {}",
            valid.join(", ")
        ))
    })
}

/// Run `f` with Python's cyclic GC paused (restored after, error or not). Building many
/// acyclic dicts otherwise triggers collections that only scan them; the events hold no cycles.
fn gc_paused<'py, T>(py: Python<'py>, big: bool, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    if !big {
        return f();
    }
    let gc = py.import("gc")?;
    let was_enabled = gc.call_method0("isenabled")?.is_truthy()?;
    if was_enabled {
        gc.call_method0("disable")?;
    }
    let result = f();
    if was_enabled {
        gc.call_method0("enable")?;
    }
    result
}

/// `f`, which builds Python objects, with a panic taken for what it is: pyo3 panics when
/// CPython cannot allocate an object that it makes infallibly (a `str`, a `dict`, an interned
/// name: "PyObject pointer is null"), and the core has no panic of its own on input (no
/// unwrap, no indexing). Out of memory is `MemoryError`, never `PanicException`.
fn no_panic<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        // (no message: its str would be one more allocation; CPython keeps MemoryErrors ready)
        .unwrap_or_else(|_| Err(PyMemoryError::new_err(())))
}

/// The dict [`Sink`]: each line's events converted and appended to `out`; prepare and map
/// run with the GIL released for groups of at least [`DETACH_BYTES`].
struct DictSink<'py, 'l> {
    py: Python<'py>,
    keys: &'l mut convert::KeyCache,
    out: &'l Bound<'py, PyList>,
    sel: Sel,
}

impl<'py, 'l> DictSink<'py, 'l> {
    fn new(
        py: Python<'py>,
        keys: &'l mut convert::KeyCache,
        out: &'l Bound<'py, PyList>,
        sel: Sel,
    ) -> Self {
        DictSink { py, keys, out, sel }
    }
}

impl Sink for DictSink<'_, '_> {
    type Error = PyErr;

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> PyResult<()> {
        convert::line(self.py, rec, seq, self.keys, self.out, self.sel)
    }

    fn group_bytes(&self) -> usize {
        GROUP_BYTES
    }

    /// Dicts are built from the tree, never copied from the line's text.
    fn canonical(&self) -> bool {
        false
    }

    fn work<T: Send, F: FnOnce() -> T + Send>(&mut self, bytes: usize, f: F) -> T {
        if bytes >= DETACH_BYTES {
            self.py.detach(f)
        } else {
            f()
        }
    }
}

impl From<OutOfMemory> for PyErr {
    fn from(e: OutOfMemory) -> PyErr {
        oom(e)
    }
}

/// Normalize a whole stream (bytes) to a list of event dicts.
#[pyfunction]
#[pyo3(signature = (data, dialect, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, fields = None))]
fn normalize<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    fields: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let engine = Engine::new(
        dialect_arg(dialect)?,
        budget_arg(max_line_bytes, max_depth, max_nodes)?,
    );
    let sel = fields_arg(fields)?;
    no_panic(|| dicts(py, engine, &data, true, sel))
}

/// The event dicts of `bytes` fed to `engine` (a fresh one), the stream finished when `last`;
/// `seq` counts from 0.
fn dicts<'py>(
    py: Python<'py>,
    mut engine: Engine,
    bytes: &[u8],
    last: bool,
    sel: Sel,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    let mut seq = 0u64;
    let mut keys = convert::KeyCache::new();
    let mut sink = DictSink::new(py, &mut keys, &out, sel);
    gc_paused(py, bytes.len() >= DETACH_BYTES, || {
        sink::feed(&mut engine, &mut seq, bytes, &mut sink)?;
        if last {
            sink::finish(&mut engine, &mut seq, &mut sink)?;
        }
        Ok(())
    })?;
    Ok(out)
}

/// Normalize a whole stream to JSONL bytes, without Python objects and with the GIL released.
#[pyfunction]
#[pyo3(signature = (data, dialect, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, fields = None))]
fn normalize_jsonl<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    fields: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let dialect = dialect_arg(dialect)?;
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let sel = fields_arg(fields)?;
    let bytes: &[u8] = &data;
    let parts = py
        .detach(|| jsonl::normalize_jsonl_parts(bytes, dialect, budget, sel))
        .map_err(oom)?;
    joined(py, &parts)
}

/// Many files as JSONL, in parallel on `jobs` threads, the GIL released throughout; a large
/// file is split at newlines into ranges of about `split_bytes` (`split.rs`; default 8 MiB
/// when there are more threads than files, else no split), the same bytes as one stream. Each item of the
/// result is the file's bytes (`outputs` is None), None (written to its output path), or
/// `(errno, message)` when reading or writing failed. With `tag_source` every line ends with
/// `"source": <input path as given>` (the CLI's field for several inputs).
#[pyfunction]
#[pyo3(signature = (inputs, outputs, dialect, max_line_bytes, max_depth, max_nodes, jobs, tag_source, split_bytes = None, fields = None))]
#[allow(clippy::too_many_arguments)]
fn normalize_files<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    outputs: Option<Vec<String>>,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    jobs: Option<usize>,
    tag_source: bool,
    split_bytes: Option<u64>,
    fields: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let dialect = dialect_arg(dialect)?;
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let sel = fields_arg(fields)?;
    if let Some(o) = &outputs {
        if o.len() != inputs.len() {
            return Err(PyValueError::new_err(
                "outputs must match inputs one for one",
            ));
        }
    }
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    if split_bytes == Some(0) {
        return Err(PyValueError::new_err("split_bytes must be at least 1"));
    }
    let files: Vec<split::FileJob<'_>> = inputs
        .iter()
        .enumerate()
        .map(|(i, input)| split::FileJob {
            input: std::path::Path::new(input),
            output: outputs
                .as_ref()
                .and_then(|o| o.get(i))
                .map(std::path::Path::new),
            source: tag_source.then_some(input.as_str()),
            sel,
        })
        .collect();
    let cancel = std::sync::atomic::AtomicBool::new(false);
    let results = interruptible(py, &cancel, || {
        split::normalize_files(&files, dialect, budget, jobs, split_bytes, &cancel)
    })?
    .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    no_failed_allocation(&results)?;
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok(Some(parts)) => out.append(joined(py, &parts)?)?,
            Ok(None) => out.append(py.None())?,
            Err(e) => out.append(error_tuple(py, &e)?)?,
        }
    }
    Ok(out)
}

/// `work()` on a thread of its own while this thread, the GIL released, looks at Python's
/// signal handlers every 100 ms: Ctrl-C (or any handler that raises) sets `cancel`, which the
/// work checks on every read, waits for it to stop (its unfinished outputs removed) and
/// raises the handler's exception (`KeyboardInterrupt`), within a second or two.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    cancel: &std::sync::atomic::AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;
    let finished = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let r = work();
            let (lock, cv) = &finished;
            *lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
            cv.notify_all();
            r
        });
        loop {
            let done = py.detach(|| {
                let (lock, cv) = &finished;
                let guard = lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let (guard, _) = cv
                    .wait_timeout_while(guard, Duration::from_millis(100), |done| !*done)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *guard
            });
            if done || worker.is_finished() {
                break;
            }
            if let Err(e) = py.check_signals() {
                cancel.store(true, std::sync::atomic::Ordering::Relaxed);
                let _ = py.detach(|| worker.join());
                return Err(e);
            }
        }
        match py.detach(|| worker.join()) {
            Ok(r) => Ok(r),
            Err(_) => Err(pyo3::exceptions::PyRuntimeError::new_err(
                "a worker thread panicked",
            )),
        }
    })
}

/// The first file of `results` whose failure is an allocation that failed, as `MemoryError`
/// (as on every other path; the other failures stay the file's own, [`error_tuple`]).
pub(crate) fn no_failed_allocation<T>(results: &[std::io::Result<T>]) -> PyResult<()> {
    let oom = |r: &std::io::Result<T>| {
        r.as_ref()
            .err()
            .filter(|e| e.kind() == std::io::ErrorKind::OutOfMemory)
            .map(memory_error)
    };
    results.iter().find_map(oom).map_or(Ok(()), Err)
}

/// An `io::Error` of kind `OutOfMemory` as `MemoryError`: "out of memory" without formatting
/// one where the core made it without a message (`split::io_oom`: the other files' outputs
/// may still hold the memory), else its message.
pub(crate) fn memory_error(e: &std::io::Error) -> PyErr {
    match e.get_ref() {
        None => PyMemoryError::new_err("out of memory"),
        Some(_) => PyMemoryError::new_err(e.to_string()),
    }
}

/// A file's failure as the Python layer takes it: `(errno or None, message)`.
pub(crate) fn error_tuple<'py>(
    py: Python<'py>,
    e: &std::io::Error,
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            e.raw_os_error().into_pyobject(py)?.into_any(),
            e.to_string().into_pyobject(py)?.into_any(),
        ],
    )
}

/// `data` as a Python `bytes`; `MemoryError` when CPython cannot allocate it (`PyBytes::new`
/// panics then). `new_with` zeroes the buffer before `init`, but the compiler drops that
/// pass here, where one copy covers the whole buffer (no `memset` before the `memcpy` in any
/// caller, in the fat-LTO build and in the fast dev build), so this is the one copy.
fn to_bytes<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, data.len(), |buf| {
        buf.copy_from_slice(data);
        Ok(())
    })
}

/// One `bytes` of `parts` in order (the one copy of a file's JSONL into Python). With
/// several parts `new_with`'s zero pass stays (a `memset` of the whole output before the
/// copies); one part has none ([`to_bytes`]): `normalize_jsonl` writes one part while the
/// output fits in 3.5 times the input ([`jsonl::out_capacity`]; the bench corpora's lean
/// JSONL and mixed's full JSONL; claude's full JSONL, 4.2 times its input, is three parts).
fn joined<'py>(py: Python<'py>, parts: &[Vec<u8>]) -> PyResult<Bound<'py, PyBytes>> {
    if let [one] = parts {
        return to_bytes(py, one);
    }
    let len = parts.iter().map(Vec::len).sum();
    PyBytes::new_with(py, len, |buf| {
        let mut at = 0;
        for p in parts {
            if let Some(dst) = buf.get_mut(at..at + p.len()) {
                dst.copy_from_slice(p);
            }
            at += p.len();
        }
        Ok(())
    })
}

fn io_err(e: std::io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(errno) => pyo3::exceptions::PyOSError::new_err((errno, e.to_string())),
        None => pyo3::exceptions::PyOSError::new_err(e.to_string()),
    }
}

/// A dialect context as Python sees it: `(model, speed)`.
pub(crate) type PyContext = (Option<String>, Option<&'static str>);

/// `(ranges, resume, contexts)` of [`_split_plan`].
type SplitPlan = (Vec<(u64, u64)>, Option<&'static str>, Vec<PyContext>);

/// The [`crate::dialect::Context`] of a `(model, speed)` given back (None: the empty one).
pub(crate) fn context_arg(
    c: Option<(Option<String>, Option<String>)>,
) -> PyResult<crate::dialect::Context> {
    let Some((model, speed)) = c else {
        return Ok(crate::dialect::Context::default());
    };
    crate::dialect::Context::of(model, speed.as_deref()).ok_or_else(|| {
        PyValueError::new_err(format!(
            "a context's speed is one of {:?} or None",
            crate::dialect::Context::SPEEDS
        ))
    })
}

/// Private (`checkfu_fast.dask`): the split plan of one file, `(ranges, resume, contexts)`:
/// byte ranges `(start, end)` in order, cut right after LFs where nothing but the dialect and
/// its context crosses the cut (`split.rs`), the name of the dialect of every range after the
/// first (None for one range), and per range the dialect context at its start as `(model,
/// speed)` (each None: none). The GIL is released.
#[pyfunction]
#[pyo3(signature = (path, dialect, split_bytes, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000))]
fn _split_plan<'py>(
    py: Python<'py>,
    path: &str,
    dialect: &Bound<'py, PyAny>,
    split_bytes: u64,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
) -> PyResult<SplitPlan> {
    let dialect = dialect_arg(dialect)?;
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    if split_bytes == 0 {
        return Err(PyValueError::new_err("split_bytes must be at least 1"));
    }
    let plan = py
        .detach(|| {
            let mut src = split::FileInput::open(std::path::Path::new(path))?;
            split::plan(&mut src, dialect, budget, split_bytes)
        })
        .map_err(io_err)?;
    let contexts = plan
        .contexts
        .into_iter()
        .map(|c| (c.model, c.speed))
        .collect();
    Ok((
        plan.ranges,
        plan.resume.as_ref().map(AnyDialect::name),
        contexts,
    ))
}

/// Private (`checkfu-fast normalize --jobs`, an output that is not a file): `(jsonl, lines)`:
/// a range's JSONL (`seq` from 0) with `seq` numbered from `base` ([`split::rebase`]; `data`
/// itself when `base` is 0), and its number of lines (events). The GIL is released.
#[pyfunction]
fn _rebase_jsonl<'py>(
    py: Python<'py>,
    data: Bound<'py, PyBytes>,
    base: u64,
) -> PyResult<(Bound<'py, PyBytes>, u64)> {
    let backed: PyBackedBytes = data.clone().into_any().extract()?;
    let bytes: &[u8] = &backed;
    if base == 0 {
        let n = py.detach(|| memchr::memchr_iter(b'\n', bytes).count() as u64);
        return Ok((data, n));
    }
    let (out, n) = py
        .detach(|| {
            let mut out = Vec::new();
            split::rebase(bytes, base, &mut out).map(|n| (out, n))
        })
        .map_err(oom)?;
    Ok((to_bytes(py, &out)?, n))
}

/// Private (`checkfu-fast normalize --jobs`): `data` (a range's JSONL, `seq` from 0) written
/// with `seq` numbered from `base` (None: as it is) to standard output (`path` None, flushed)
/// or appended to the file `path`, its lines not copied ([`split::write_rebased`]); returns
/// its number of lines. The GIL is released. A failed write is `OSError` (`BrokenPipeError`
/// for EPIPE).
#[pyfunction]
#[pyo3(signature = (data, base, path = None))]
fn _write_jsonl(
    py: Python<'_>,
    data: PyBackedBytes,
    base: Option<u64>,
    path: Option<std::path::PathBuf>,
) -> PyResult<u64> {
    let bytes: &[u8] = &data;
    py.detach(|| -> std::io::Result<u64> {
        use std::io::Write;
        match path {
            None => {
                let mut out = std::io::stdout().lock();
                let n = split::write_rebased(bytes, base, &mut out)?;
                out.flush()?;
                Ok(n)
            }
            Some(p) => {
                let mut file = std::fs::OpenOptions::new().append(true).open(p)?;
                split::write_rebased(bytes, base, &mut file)
            }
        }
    })
    .map_err(io_err)
}

/// The engine for bytes `data` = range `[offset, ..)` of a stream split by `_split_plan`: range
/// 0 (`offset == 0`) is the stream's head with `dialect`; a later range is resumed at `offset`
/// with `dialect` (the plan's `resume`) and the dialect context (the plan's `(model, speed)`).
pub(crate) fn range_engine(
    dialect: Option<AnyDialect>,
    budget: Budget,
    offset: u64,
    context: Option<(Option<String>, Option<String>)>,
) -> PyResult<Engine> {
    match (offset, dialect) {
        (0, d) => Ok(Engine::new(d, budget)),
        (_, Some(d)) => Ok(Engine::resume(d, budget, offset, context_arg(context)?)),
        (_, None) => Err(PyValueError::new_err(
            "a range after the first needs its plan's dialect, not auto",
        )),
    }
}

/// Private (`checkfu_fast.dask`, tests): the event dicts of one range of a `_split_plan`
/// ([`range_engine`], `context` the plan's for the range; the stream is finished only when
/// `last`). `seq` counts from 0 within the range.
#[pyfunction]
#[pyo3(signature = (data, dialect, offset, last, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, fields = None, context = None))]
#[allow(clippy::too_many_arguments)]
fn _normalize_range<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    dialect: &Bound<'py, PyAny>,
    offset: u64,
    last: bool,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    fields: Option<&Bound<'py, PyAny>>,
    context: Option<(Option<String>, Option<String>)>,
) -> PyResult<Bound<'py, PyList>> {
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let engine = range_engine(dialect_arg(dialect)?, budget, offset, context)?;
    let sel = fields_arg(fields)?;
    no_panic(|| dicts(py, engine, &data, last, sel))
}

/// Incremental normalizer: `feed(chunk)` then `finish()`.
///
/// Safe to share between threads: calls are serialized by a lock (waited for with the GIL
/// released, since the holder needs the GIL to build its events), so each chunk is framed whole
/// and in the order the calls got the lock. After a `MemoryError` the stream state is lost and
/// every later call raises `ValueError`.
#[pyclass(module = "checkfu_fast._native", frozen)]
struct Normalizer {
    state: Mutex<State>,
}

struct State {
    engine: Engine,
    seq: u64,
    /// Why the stream cannot go on (a `MemoryError`, a cancelled `feed_arrow`), once so.
    failed: Option<&'static str>,
    /// For `feed_jsonl`/`finish_jsonl` (which number events with the same `seq`).
    writer: jsonl::LineWriter,
    /// Object keys as Python strings, kept from one `feed` to the next.
    keys: convert::KeyCache,
    /// The fields of every output of this stream.
    sel: Sel,
}

const FAILED: &str = "the Normalizer ran out of memory earlier; its stream state is lost";
const CANCELLED: &str = "a feed_arrow of the Normalizer was cancelled; its stream state is lost";

impl Normalizer {
    /// A fresh stream on `engine` (`seq` from 0), its outputs of the fields `sel`.
    fn of(engine: Engine, source: Option<&str>, sel: Sel) -> Self {
        Normalizer {
            state: Mutex::new(State {
                engine,
                seq: 0,
                failed: None,
                writer: jsonl::LineWriter::new(source, sel),
                keys: convert::KeyCache::new(),
                sel,
            }),
        }
    }

    fn arrow_step(
        &self,
        py: Python<'_>,
        chunk: Option<PyBackedBytes>,
        batch_rows: usize,
        cancel: Option<&Bound<'_, arrow::CancelFlag>>,
    ) -> PyResult<arrow::ArrowEvents> {
        if batch_rows == 0 {
            return Err(PyValueError::new_err("batch_rows must be at least 1"));
        }
        let mut guard = self.lock(py);
        let state = &mut *guard;
        if let Some(why) = state.failed {
            return Err(PyValueError::new_err(why));
        }
        if chunk.is_some() && state.engine.is_finished() {
            return Err(PyValueError::new_err("feed() after finish()"));
        }
        let bytes: Option<&[u8]> = chunk.as_deref();
        let (engine, seq, sel) = (&mut state.engine, &mut state.seq, state.sel);
        let cancel = cancel.map(|c| std::sync::Arc::clone(&c.get().flag));
        let out = py.detach(|| arrow::step(engine, seq, bytes, batch_rows, sel, cancel));
        out.map_err(|e| {
            if arrow::is_oom(&e) {
                state.failed = Some(FAILED);
            } else if arrow::is_cancelled(&e) {
                state.failed = Some(CANCELLED);
            }
            arrow::failed(e)
        })
    }

    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        loop {
            match self.state.try_lock() {
                Ok(guard) => return guard,
                // a panic never happens on input, but a poisoned lock must not wedge the stream
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(|| drop(self.state.lock())),
            }
        }
    }
}

#[pymethods]
impl Normalizer {
    #[new]
    #[pyo3(signature = (dialect, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, source = None, fields = None, collapse_junk = false))]
    fn new(
        dialect: &Bound<'_, PyAny>,
        max_line_bytes: i64,
        max_depth: i64,
        max_nodes: i64,
        source: Option<&str>,
        fields: Option<&Bound<'_, PyAny>>,
        collapse_junk: bool,
    ) -> PyResult<Self> {
        let sel = fields_arg(fields)?;
        let mut engine = Engine::new(
            dialect_arg(dialect)?,
            budget_arg(max_line_bytes, max_depth, max_nodes)?,
        );
        if collapse_junk {
            engine.collapse = Some(Collapse::default());
        }
        Ok(Normalizer::of(engine, source, sel))
    }

    /// Private (`checkfu-fast normalize --jobs`): a Normalizer of range `[offset, ..)` of a
    /// stream split by `_split_plan` ([`range_engine`]: range 0 is the stream's head with
    /// `dialect`, a later range resumed with the plan's `resume` dialect and `context`); `seq`
    /// from 0 within the range, positions from the stream's start. Only the last range is
    /// finished.
    #[staticmethod]
    #[pyo3(signature = (dialect, offset, context = None, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, source = None, fields = None))]
    #[allow(clippy::too_many_arguments)]
    fn _range(
        dialect: &Bound<'_, PyAny>,
        offset: u64,
        context: Option<(Option<String>, Option<String>)>,
        max_line_bytes: i64,
        max_depth: i64,
        max_nodes: i64,
        source: Option<&str>,
        fields: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let sel = fields_arg(fields)?;
        let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
        let engine = range_engine(dialect_arg(dialect)?, budget, offset, context)?;
        Ok(Normalizer::of(engine, source, sel))
    }

    /// With `collapse_junk`: the lines whose events were left out so far (rust/normalize.rs
    /// `Collapse`); 0 without it.
    #[getter]
    fn collapsed(&self, py: Python<'_>) -> u64 {
        self.lock(py).engine.collapse.map_or(0, |c| c.collapsed)
    }

    /// `feed`, but the events as JSONL bytes written by the core (GIL released).
    fn feed_jsonl<'py>(
        &self,
        py: Python<'py>,
        chunk: PyBackedBytes,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut guard = self.lock(py);
        let state = &mut *guard;
        if let Some(why) = state.failed {
            return Err(PyValueError::new_err(why));
        }
        if state.engine.is_finished() {
            return Err(PyValueError::new_err("feed() after finish()"));
        }
        let bytes: &[u8] = &chunk;
        let (engine, writer, seq) = (&mut state.engine, &mut state.writer, &mut state.seq);
        let out = py.detach(|| {
            let mut out = Vec::new();
            OutOfMemory::reserve(&mut out, jsonl::out_capacity(bytes.len()))?;
            let mut sink = jsonl::JsonlSink {
                writer,
                out: &mut out,
            };
            sink::feed(engine, seq, bytes, &mut sink)?;
            Ok(out)
        });
        let out = out.map_err(|e| {
            state.failed = Some(FAILED);
            oom(e)
        })?;
        to_bytes(py, &out)
    }

    /// `finish`, but as JSONL bytes.
    fn finish_jsonl<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut guard = self.lock(py);
        let state = &mut *guard;
        if let Some(why) = state.failed {
            return Err(PyValueError::new_err(why));
        }
        let (engine, writer, seq) = (&mut state.engine, &mut state.writer, &mut state.seq);
        let out = py.detach(|| {
            let mut out = Vec::new();
            let mut sink = jsonl::JsonlSink {
                writer,
                out: &mut out,
            };
            sink::finish(engine, seq, &mut sink)?;
            Ok(out)
        });
        let out = out.map_err(|e| {
            state.failed = Some(FAILED);
            oom(e)
        })?;
        to_bytes(py, &out)
    }

    /// `feed`, but the events as Arrow record batches (GIL released); same `seq`. With
    /// `cancel` set meanwhile (by another thread): `InterruptedError` within about 64 KiB of
    /// input, and the stream state is lost.
    #[pyo3(signature = (chunk, batch_rows = crate::arrow::BATCH_ROWS, cancel = None))]
    fn feed_arrow(
        &self,
        py: Python<'_>,
        chunk: PyBackedBytes,
        batch_rows: usize,
        cancel: Option<&Bound<'_, arrow::CancelFlag>>,
    ) -> PyResult<arrow::ArrowEvents> {
        self.arrow_step(py, Some(chunk), batch_rows, cancel)
    }

    /// `finish`, but as Arrow record batches.
    #[pyo3(signature = (batch_rows = crate::arrow::BATCH_ROWS))]
    fn finish_arrow(&self, py: Python<'_>, batch_rows: usize) -> PyResult<arrow::ArrowEvents> {
        self.arrow_step(py, None, batch_rows, None)
    }

    fn feed<'py>(&self, py: Python<'py>, chunk: PyBackedBytes) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.lock(py);
        let state = &mut *guard;
        if let Some(why) = state.failed {
            return Err(PyValueError::new_err(why));
        }
        if state.engine.is_finished() {
            return Err(PyValueError::new_err("feed() after finish()"));
        }
        let bytes: &[u8] = &chunk;
        let out = PyList::empty(py);
        let (engine, seq, keys) = (&mut state.engine, &mut state.seq, &mut state.keys);
        let mut sink = DictSink::new(py, keys, &out, state.sel);
        let done = no_panic(|| {
            gc_paused(py, bytes.len() >= DETACH_BYTES, || {
                sink::feed(engine, seq, bytes, &mut sink)
            })
        });
        if done
            .as_ref()
            .is_err_and(|e| e.is_instance_of::<PyMemoryError>(py))
        {
            state.failed = Some(FAILED);
        }
        done.map(|()| out)
    }

    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let mut guard = self.lock(py);
        let state = &mut *guard;
        if let Some(why) = state.failed {
            return Err(PyValueError::new_err(why));
        }
        let out = PyList::empty(py);
        let mut sink = DictSink::new(py, &mut state.keys, &out, state.sel);
        let done = no_panic(|| sink::finish(&mut state.engine, &mut state.seq, &mut sink));
        if done
            .as_ref()
            .is_err_and(|e| e.is_instance_of::<PyMemoryError>(py))
        {
            state.failed = Some(FAILED);
        }
        done.map(|()| out)
    }
}

/// The retry time an error message states: `(retry_at, retry_after_ms)` (rust/retry.rs).
#[pyfunction]
fn parse_retry(message: &str) -> (Option<String>, Option<u64>) {
    let r = crate::retry::parse(message);
    (r.at, r.after_ms)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_files, m)?)?;
    m.add_function(wrap_pyfunction!(_split_plan, m)?)?;
    m.add_function(wrap_pyfunction!(_normalize_range, m)?)?;
    m.add_function(wrap_pyfunction!(_rebase_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(_write_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::_normalize_ordered, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::_normalize_range_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::normalize_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::_normalize_files_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::arrow_columns, m)?)?;
    m.add_class::<arrow::ArrowEvents>()?;
    m.add_class::<arrow::CancelFlag>()?;
    m.add_function(wrap_pyfunction!(journal::validate_journal, m)?)?;
    m.add_function(wrap_pyfunction!(parse_retry, m)?)?;
    m.add_function(wrap_pyfunction!(usage::_usage_fold_files, m)?)?;
    m.add_function(wrap_pyfunction!(usage::_fingerprints, m)?)?;
    m.add_class::<usage::StreamSummary>()?;
    m.add_class::<usage::UsageMerge>()?;
    m.add_class::<usage::UsageSessions>()?;
    m.add_function(wrap_pyfunction!(usage::_usage_fold_resume, m)?)?;
    m.add_function(wrap_pyfunction!(usage::_usage_fold_limits, m)?)?;
    m.add_function(wrap_pyfunction!(json::_json_indent2, m)?)?;
    m.add_function(wrap_pyfunction!(walk::_walk, m)?)?;
    m.add_function(wrap_pyfunction!(report_cache::_stamps, m)?)?;
    m.add_class::<Normalizer>()?;
    m.add_class::<PyMapping>()?;
    m.add("DIALECTS", DIALECTS.to_vec())?;
    m.add(
        "EVENT_FIELDS",
        PyTuple::new(m.py(), FIELDS.iter().map(|f| f.name))?,
    )?;
    m.add("FIELD_TABLE", arrow::field_table(m.py())?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
