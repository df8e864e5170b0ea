//! `_native._usage_fold_files`: the per-stream usage fold of many files (`crate::usage`) on
//! every core, the GIL released; the summaries as the tuples `usage.py` merges.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::{intern, IntoPyObjectExt};

use crate::event::Num;
use crate::report_json::{ascii_string, costs, write_total, PARTS};
use crate::usage_merge::{Acc, Label, Merge, ModelPrice, Period, Price, ENDINGS};
use std::sync::Mutex;

use crate::usage::{
    ends_hash, fold_file, fold_file_from, fold_file_totals, Checkpoint, FoldState, Folded,
    LimitReading, Outcome, Rec, Resume, Scope, Summary,
};

fn num<'py>(py: Python<'py>, n: Option<Num>) -> PyResult<Bound<'py, PyAny>> {
    match n {
        None => Ok(py.None().into_bound(py)),
        Some(Num::Int(i)) => i.into_bound_py_any(py),
        Some(Num::Float(f)) => f.into_bound_py_any(py),
    }
}

/// `(model, input, output, cached, cost, reasoning, cacheWrite, cacheWrite1h, ts, project)`.
fn rec<'py>(py: Python<'py>, r: &Rec) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            r.model.as_str().into_bound_py_any(py)?,
            num(py, r.input)?,
            num(py, r.output)?,
            num(py, r.cached)?,
            num(py, r.cost)?,
            num(py, r.reasoning)?,
            num(py, r.cache_write)?,
            num(py, r.cache_write_1h)?,
            r.ts.into_bound_py_any(py)?,
            r.project.as_deref().into_bound_py_any(py)?,
        ],
    )
}

/// `(counters, readings, files, ending, session, dialect, had_usage)` (`StreamSummary`).
fn summary<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyTuple>> {
    let counters = PyList::empty(py);
    for (sid, dialect, r, ts, continued) in &s.counters {
        counters.append((
            sid.as_str(),
            *dialect,
            rec(py, r)?,
            ts.as_deref(),
            *continued,
        ))?;
    }
    let readings = PyList::empty(py);
    for (name, dialect, r) in &s.readings {
        readings.append((name.as_str(), *dialect, rec(py, r)?))?;
    }
    let files = PyList::empty(py);
    for (key, r, session, dialect, sidechain) in &s.files {
        files.append((
            key.as_str(),
            rec(py, r)?,
            session.as_deref(),
            *dialect,
            *sidechain,
        ))?;
    }
    PyTuple::new(
        py,
        [
            counters.into_any(),
            readings.into_any(),
            files.into_any(),
            s.ending.into_bound_py_any(py)?,
            s.session.as_str().into_bound_py_any(py)?,
            s.dialect.as_str().into_bound_py_any(py)?,
            s.had_usage.into_bound_py_any(py)?,
        ],
    )
}

/// Each file of `files` (`(path, project)`) folded on its own, on `jobs` threads (default: every
/// core), the GIL released: per file `(summary, known, unknown)`, or None where the Python
/// fold must read it (it could not be read, or it has what only that fold reads right: the
/// caller reads it again, which gives the same error or the same totals).
/// Each `(path, project)` folded by the core on `jobs` threads with the GIL released: its
/// summary, or `None` where the Python fold is needed or the file cannot be read.
fn fold_all(
    py: Python<'_>,
    files: &[(String, Option<String>)],
    dialect: &Bound<'_, PyAny>,
    (max_line_bytes, max_depth, max_nodes): (i64, i64, i64),
    jobs: Option<usize>,
) -> PyResult<Vec<Option<Summary>>> {
    let dialect = super::dialect_arg(dialect)?;
    let budget = super::budget_arg(max_line_bytes, max_depth, max_nodes)?;
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    py.detach(|| {
        crate::jsonl::par_map(files.len(), jobs, |i| {
            let (path, project) = files.get(i)?;
            let out = fold_file(
                std::path::Path::new(path),
                dialect.clone(),
                budget,
                project.clone(),
            );
            match out {
                Ok(Outcome::Summary(s)) => Some(s),
                Ok(Outcome::Python) | Err(_) => None,
            }
        })
    })
    .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))
}

#[pyfunction]
#[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, jobs = None, handles = false))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _usage_fold_files<'py>(
    py: Python<'py>,
    files: Vec<(String, Option<String>)>,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    jobs: Option<usize>,
    handles: bool,
) -> PyResult<Bound<'py, PyList>> {
    let results = fold_all(
        py,
        &files,
        dialect,
        (max_line_bytes, max_depth, max_nodes),
        jobs,
    )?;
    let out = PyList::empty(py);
    for r in results {
        match r {
            Some(s) if handles => {
                let (known, unknown) = (s.known, s.unknown);
                out.append((Py::new(py, StreamSummary { inner: s })?, known, unknown))?;
            }
            Some(s) => out.append((summary(py, &s)?, s.known, s.unknown))?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

fn fingerprint(path: &str, head: usize) -> std::io::Result<(u64, i128, String)> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    let mut buf = Vec::new();
    f.take(head as u64).read_to_end(&mut buf)?;
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Ok((meta.size(), mtime_ns, format!("{:016x}", ends_hash(&buf))))
}

/// Per path `(size, mtime_ns, hash of the first head bytes)`, None where the file cannot be
/// read; on `jobs` threads, the GIL released (the report's cache keys, `report_cache.py`).
#[pyfunction]
#[pyo3(signature = (paths, head, jobs = None))]
pub(crate) fn _fingerprints<'py>(
    py: Python<'py>,
    paths: Vec<String>,
    head: usize,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    let results = py
        .detach(|| {
            crate::jsonl::par_map(paths.len(), jobs, |i| {
                paths.get(i).and_then(|p| fingerprint(p, head).ok())
            })
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    let out = PyList::empty(py);
    for r in results {
        match r {
            Some(t) => out.append(t)?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// Files folded ahead of the one merged next, per thread, at most (`UsageMerge.fold_files`):
/// a large file holds the merge back while the other threads go on with the small ones.
const FOLD_WINDOW: usize = 32;

fn bad(what: &str) -> PyErr {
    PyValueError::new_err(format!("not a report cache entry: {what}"))
}

/// The items of a list or tuple (what JSON gives back for a tuple), exactly `n` of them.
fn items<'py>(o: &Bound<'py, PyAny>, n: Option<usize>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if !(o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>()) {
        return Err(bad("a list expected"));
    }
    let v: Vec<Bound<'py, PyAny>> = o.try_iter()?.collect::<PyResult<_>>()?;
    match n {
        Some(n) if v.len() != n => Err(bad("a list of another length")),
        _ => Ok(v),
    }
}

fn at<'a, 'py>(v: &'a [Bound<'py, PyAny>], i: usize) -> PyResult<&'a Bound<'py, PyAny>> {
    v.get(i).ok_or_else(|| bad("too short"))
}

fn opt_str(o: &Bound<'_, PyAny>) -> PyResult<Option<String>> {
    if o.is_none() {
        Ok(None)
    } else {
        Ok(Some(o.extract()?))
    }
}

fn num_of(o: &Bound<'_, PyAny>) -> PyResult<Option<Num>> {
    if o.is_none() {
        Ok(None)
    } else if o.is_instance_of::<pyo3::types::PyBool>() {
        Err(bad("a count"))
    } else if o.is_instance_of::<pyo3::types::PyInt>() {
        Ok(Some(Num::Int(o.extract()?)))
    } else {
        Ok(Some(Num::Float(o.cast::<pyo3::types::PyFloat>()?.value())))
    }
}

fn rec_of(o: &Bound<'_, PyAny>) -> PyResult<Rec> {
    let v = items(o, Some(10))?;
    let ts = at(&v, 8)?;
    Ok(Rec {
        model: at(&v, 0)?.extract()?,
        input: num_of(at(&v, 1)?)?,
        output: num_of(at(&v, 2)?)?,
        cached: num_of(at(&v, 3)?)?,
        cost: num_of(at(&v, 4)?)?,
        reasoning: num_of(at(&v, 5)?)?,
        cache_write: num_of(at(&v, 6)?)?,
        cache_write_1h: num_of(at(&v, 7)?)?,
        ts: if ts.is_none() {
            None
        } else {
            Some(ts.extract()?)
        },
        project: opt_str(at(&v, 9)?)?,
    })
}

fn recs_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<Rec>> {
    items(o, None)?.iter().map(rec_of).collect()
}

fn dialect_of(o: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let name: String = o.extract()?;
    crate::usage::dialect_name(&name).ok_or_else(|| bad("a dialect"))
}

fn strs_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    items(o, None)?.iter().map(|s| s.extract()).collect()
}

/// `(offset, head, tail, engine, current, first, ending, dialect, continued, model, project,
/// scopes, context_model, context_speed)` (`context_*`: the engine's dialect context), a scope `(name, dialect, [(messageId, reading)], covered, plain, counter,
/// counter_at, closed, prior)` (sorted sets), a reading as in [`rec`].
fn checkpoint<'py>(py: Python<'py>, c: &Checkpoint) -> PyResult<Bound<'py, PyTuple>> {
    let recs = |rs: &[Rec]| -> PyResult<Bound<'py, PyList>> {
        let l = PyList::empty(py);
        for r in rs {
            l.append(rec(py, r)?)?;
        }
        Ok(l)
    };
    let scopes = PyList::empty(py);
    for (name, s) in &c.state.scopes {
        let messages = PyList::empty(py);
        for (id, r) in s.messages() {
            messages.append((id, rec(py, r)?))?;
        }
        let mut covered: Vec<&String> = s.covered.iter().collect();
        covered.sort_unstable();
        scopes.append(PyTuple::new(
            py,
            [
                name.as_deref().into_bound_py_any(py)?,
                s.dialect.into_bound_py_any(py)?,
                messages.into_any(),
                covered.into_bound_py_any(py)?,
                recs(&s.plain)?.into_any(),
                recs(&s.counter)?.into_any(),
                s.counter_at.into_bound_py_any(py)?,
                recs(&s.closed)?.into_any(),
                recs(&s.prior)?.into_any(),
            ],
        )?)?;
    }
    let st = &c.state;
    PyTuple::new(
        py,
        [
            c.offset.into_bound_py_any(py)?,
            c.head.into_bound_py_any(py)?,
            c.tail.into_bound_py_any(py)?,
            c.engine.into_bound_py_any(py)?,
            st.current.as_deref().into_bound_py_any(py)?,
            st.first.as_deref().into_bound_py_any(py)?,
            st.ending.into_bound_py_any(py)?,
            st.dialect.into_bound_py_any(py)?,
            st.continued.clone().into_bound_py_any(py)?,
            st.model.as_deref().into_bound_py_any(py)?,
            st.project.as_deref().into_bound_py_any(py)?,
            scopes.into_any(),
            c.context.model.as_deref().into_bound_py_any(py)?,
            c.context.speed.into_bound_py_any(py)?,
        ],
    )
}

/// A [`Resume`] from `(summary, known, unknown, checkpoint, readings)` as
/// [`_usage_fold_resume`] gave them (tuples, or the lists JSON gives back).
fn resume_of(o: &Bound<'_, PyAny>) -> PyResult<Resume> {
    let v = items(o, Some(5))?;
    let s = items(at(&v, 0)?, Some(7))?;
    let mut counters = Vec::new();
    for c in items(at(&s, 0)?, None)? {
        let c = items(&c, Some(5))?;
        counters.push((
            at(&c, 0)?.extract()?,
            dialect_of(at(&c, 1)?)?,
            rec_of(at(&c, 2)?)?,
            opt_str(at(&c, 3)?)?,
            at(&c, 4)?.extract()?,
        ));
    }
    let mut files = Vec::new();
    for f in items(at(&s, 2)?, None)? {
        let f = items(&f, Some(5))?;
        files.push((
            at(&f, 0)?.extract()?,
            rec_of(at(&f, 1)?)?,
            opt_str(at(&f, 2)?)?,
            dialect_of(at(&f, 3)?)?,
            at(&f, 4)?.extract()?,
        ));
    }
    let c = items(at(&v, 3)?, Some(14))?;
    let mut scopes = Vec::new();
    for sc in items(at(&c, 11)?, None)? {
        let sc = items(&sc, Some(9))?;
        let mut scope = Scope::new(dialect_of(at(&sc, 1)?)?);
        for m in items(at(&sc, 2)?, None)? {
            let m = items(&m, Some(2))?;
            scope.push_message(at(&m, 0)?.extract()?, rec_of(at(&m, 1)?)?);
        }
        scope.covered = strs_of(at(&sc, 3)?)?.into_iter().collect();
        scope.plain = recs_of(at(&sc, 4)?)?;
        scope.counter = recs_of(at(&sc, 5)?)?;
        scope.counter_at = at(&sc, 6)?.extract()?;
        scope.closed = recs_of(at(&sc, 7)?)?;
        scope.prior = recs_of(at(&sc, 8)?)?;
        scopes.push((opt_str(at(&sc, 0)?)?, scope));
    }
    let ending: String = at(&c, 6)?.extract()?;
    let dialect = at(&c, 7)?;
    Ok(Resume {
        checkpoint: Checkpoint {
            offset: at(&c, 0)?.extract()?,
            head: at(&c, 1)?.extract()?,
            tail: at(&c, 2)?.extract()?,
            engine: dialect_of(at(&c, 3)?)?,
            context: crate::dialect::Context::of(
                opt_str(at(&c, 12)?)?,
                opt_str(at(&c, 13)?)?.as_deref(),
            )
            .ok_or_else(|| bad("a context speed"))?,
            state: FoldState {
                current: opt_str(at(&c, 4)?)?,
                first: opt_str(at(&c, 5)?)?,
                ending: crate::usage::ending_name(&ending).ok_or_else(|| bad("an ending"))?,
                dialect: if dialect.is_none() {
                    None
                } else {
                    Some(dialect_of(dialect)?)
                },
                continued: strs_of(at(&c, 8)?)?,
                model: opt_str(at(&c, 9)?)?,
                project: opt_str(at(&c, 10)?)?,
                scopes,
            },
        },
        counters,
        files,
        known: at(&v, 1)?.extract()?,
        unknown: at(&v, 2)?.extract()?,
        had_usage: at(&s, 6)?.extract()?,
        limits: limits_of(at(&v, 4)?)?,
    })
}

/// [`_usage_fold_files`] for the report's cache: `files` are `(path, project, resume)`, where
/// `resume` is None or `(summary, known, unknown, checkpoint, readings)` of an earlier fold of
/// the file (what this returned; an entry that is not one is ignored). Where the file still holds the
/// bytes that fold read (its size is at least the checkpoint's offset and the first and last
/// 4 KiB read then hash the same) only the rest is read, the fold going on from the
/// checkpoint's state. Per file `(summary, known, unknown, checkpoint, resumed, readings)`
/// (checkpoint: None where no later fold can go on: a compressed file, one that ends inside a
/// line; readings: as [`_usage_fold_limits`]), or None as for `_usage_fold_files`.
#[pyfunction]
#[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, jobs = None))]
pub(crate) fn _usage_fold_resume<'py>(
    py: Python<'py>,
    files: Vec<(String, Option<String>, Bound<'py, PyAny>)>,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let dialect = super::dialect_arg(dialect)?;
    let budget = super::budget_arg(max_line_bytes, max_depth, max_nodes)?;
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    let jobs_in: Vec<(String, Option<String>, Mutex<Option<Resume>>)> = files
        .into_iter()
        .map(|(path, project, r)| {
            let resume = if r.is_none() {
                None
            } else {
                resume_of(&r).ok()
            };
            (path, project, Mutex::new(resume))
        })
        .collect();
    let results = py
        .detach(|| {
            crate::jsonl::par_map(jobs_in.len(), jobs, |i| {
                let (path, project, resume) = jobs_in.get(i)?;
                let resume = resume.lock().ok().and_then(|mut r| r.take());
                let out = fold_file_from(
                    std::path::Path::new(path),
                    dialect.clone(),
                    budget,
                    project.clone(),
                    resume,
                );
                match out {
                    Ok(Folded {
                        outcome: Outcome::Summary(s),
                        checkpoint,
                        resumed,
                    }) => Some((s, checkpoint, resumed)),
                    Ok(_) | Err(_) => None,
                }
            })
        })
        .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    let out = PyList::empty(py);
    for r in &results {
        match r {
            Some((s, c, resumed)) => {
                let c = match c {
                    Some(c) => checkpoint(py, c)?.into_any(),
                    None => py.None().into_bound(py),
                };
                let row = [
                    summary(py, s)?.into_any(),
                    s.known.into_bound_py_any(py)?,
                    s.unknown.into_bound_py_any(py)?,
                    c,
                    resumed.into_bound_py_any(py)?,
                    limits(py, s)?.into_any(),
                ];
                out.append(PyTuple::new(py, row)?)?;
            }
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// A summary's `rateLimits` readings: `(dialect, window, limitType, usedPercent, resetsAt,
/// timestamp)` each.
fn limits<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyList>> {
    let readings = PyList::empty(py);
    for (d, window, limit, used, resets, ts) in &s.limits {
        readings.append((
            *d,
            window.as_str(),
            limit.as_str(),
            num(py, Some(*used))?,
            resets.as_deref(),
            ts.as_deref(),
        ))?;
    }
    Ok(readings)
}

fn limits_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<LimitReading>> {
    let mut out = Vec::new();
    for r in items(o, None)? {
        let r = items(&r, Some(6))?;
        out.push((
            dialect_of(at(&r, 0)?)?,
            at(&r, 1)?.extract()?,
            at(&r, 2)?.extract()?,
            num_of(at(&r, 3)?)?.ok_or_else(|| bad("a percent"))?,
            opt_str(at(&r, 4)?)?,
            opt_str(at(&r, 5)?)?,
        ));
    }
    Ok(out)
}

/// [`_usage_fold_files`] with each stream's `rateLimits` readings (`report --limits`): per file
/// `(summary, known, unknown, readings)`, a reading `(dialect, window, limitType, usedPercent,
/// resetsAt, timestamp)` in stream order, or None as for `_usage_fold_files`.
#[pyfunction]
#[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, jobs = None))]
pub(crate) fn _usage_fold_limits<'py>(
    py: Python<'py>,
    files: Vec<(String, Option<String>)>,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    jobs: Option<usize>,
) -> PyResult<Bound<'py, PyList>> {
    let results = fold_all(
        py,
        &files,
        dialect,
        (max_line_bytes, max_depth, max_nodes),
        jobs,
    )?;
    let out = PyList::empty(py);
    for r in &results {
        match r {
            Some(s) => out.append((summary(py, s)?, s.known, s.unknown, limits(py, s)?))?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// One stream's summary kept in the core (`_usage_fold_files(..., handles=True)`): merged
/// by [`UsageMerge`] without a Python object per reading; `as_tuple()` for the cache.
#[pyclass(module = "checkfu_fast._native", name = "_StreamSummary", frozen)]
pub(crate) struct StreamSummary {
    inner: Summary,
}

#[pymethods]
impl StreamSummary {
    /// `usage.StreamSummary.as_tuple()`'s form.
    fn as_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        summary(py, &self.inner)
    }
}

/// A dialect's name as the merge keeps it (the core's names, and `unknown`).
fn merge_dialect(o: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let name: String = o.extract()?;
    if name == "unknown" {
        return Ok("unknown");
    }
    crate::usage::dialect_name(&name).ok_or_else(|| bad("a dialect"))
}

/// A summary from its tuple form (`usage.StreamSummary.as_tuple()`, or the lists a JSON cache
/// gives back): ValueError when it is not one, OverflowError for a count beyond `i128`.
fn summary_of(o: &Bound<'_, PyAny>) -> PyResult<Summary> {
    let s = items(o, Some(7))?;
    let mut out = Summary::default();
    for c in items(at(&s, 0)?, None)? {
        let c = items(&c, Some(5))?;
        out.counters.push((
            at(&c, 0)?.extract()?,
            merge_dialect(at(&c, 1)?)?,
            rec_of(at(&c, 2)?)?,
            opt_str(at(&c, 3)?)?,
            at(&c, 4)?.extract()?,
        ));
    }
    for x in items(at(&s, 1)?, None)? {
        let x = items(&x, Some(3))?;
        out.readings.push((
            at(&x, 0)?.extract()?,
            merge_dialect(at(&x, 1)?)?,
            rec_of(at(&x, 2)?)?,
        ));
    }
    for f in items(at(&s, 2)?, None)? {
        let f = items(&f, Some(5))?;
        out.files.push((
            at(&f, 0)?.extract()?,
            rec_of(at(&f, 1)?)?,
            opt_str(at(&f, 2)?)?,
            merge_dialect(at(&f, 3)?)?,
            at(&f, 4)?.extract()?,
        ));
    }
    let ending: String = at(&s, 3)?.extract()?;
    out.ending = ENDINGS
        .iter()
        .find(|e| **e == ending)
        .copied()
        .ok_or_else(|| bad("an ending"))?;
    out.session = at(&s, 4)?.extract()?;
    out.dialect = at(&s, 5)?.extract()?;
    out.had_usage = at(&s, 6)?.extract()?;
    Ok(out)
}

/// A price (`prices._price_at`'s input): a number or `(base, [(above, price), ...])`.
fn price_of(o: &Bound<'_, PyAny>) -> PyResult<Option<Price>> {
    if o.is_none() {
        return Ok(None);
    }
    if let Ok(base) = o.extract::<f64>() {
        return Ok(Some(Price {
            base,
            tiers: Vec::new(),
        }));
    }
    let (base, tiers): (f64, Vec<(Bound<'_, PyAny>, f64)>) = o.extract()?;
    let mut out = Vec::new();
    for (above, price) in tiers {
        match num_of(&above)? {
            Some(a) => out.push((a, price)),
            None => return Err(PyValueError::new_err("a tier's 'above' is a number")),
        }
    }
    Ok(Some(Price { base, tiers: out }))
}

/// The fold across streams (`crate::usage_merge`): `UsageFold.merge` and the sums in the core.
#[pyclass(module = "checkfu_fast._native", name = "_UsageMerge")]
pub(crate) struct UsageMerge {
    merge: Merge,
    resolve: Option<Py<PyAny>>,
}

fn acc_tuple<'py>(
    py: Python<'py>,
    m: &Merge,
    (a, reported): &(Acc, Num),
) -> PyResult<Bound<'py, PyTuple>> {
    let unpriced: Vec<&str> = a.unpriced.iter().map(|i| m.model_name(*i)).collect();
    acc_tuple_of(py, a, *reported, &unpriced)
}

/// `group`'s acc tuple of `a`, its reported sum and its unpriced models' names.
fn acc_tuple_of<'py>(
    py: Python<'py>,
    a: &Acc,
    reported: Num,
    unpriced: &[&str],
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        [
            a.input.into_bound_py_any(py)?,
            a.output.into_bound_py_any(py)?,
            a.cached.into_bound_py_any(py)?,
            num(py, Some(reported))?,
            a.estimated.into_bound_py_any(py)?,
            a.readings.into_bound_py_any(py)?,
            a.n_reported.into_bound_py_any(py)?,
            a.n_estimated.into_bound_py_any(py)?,
            a.n_free.into_bound_py_any(py)?,
            a.parts.to_vec().into_bound_py_any(py)?,
            unpriced.into_bound_py_any(py)?,
        ],
    )
}

/// One session's total, as `group` gives it.
struct SessionTotal {
    name: String,
    acc: Acc,
    reported: Num,
    /// the names of `acc.unpriced`, sorted
    unpriced: Vec<String>,
    endings: [u64; 4],
    dialect: Option<String>,
}

/// Text handed to `write` at a time by [`UsageSessions::write_json`].
const TEXT_CHUNK: usize = 1 << 18;

/// `group`'s `sessions`: every session's total, sorted by name, kept in the core (no Python
/// object per session until asked: [`UsageSessions::dicts`]); `report --json` has their
/// text written by [`UsageSessions::write_json`].
#[pyclass(module = "checkfu_fast._native", name = "_UsageSessions", frozen)]
pub(crate) struct UsageSessions {
    items: Vec<SessionTotal>,
}

impl UsageSessions {
    /// The text of `items[i]` in `write_json`'s form.
    fn item_json(&self, i: usize, rows: bool, out: &mut String) {
        let Some(t) = self.items.get(i) else {
            return;
        };
        out.push_str(if i == 0 { "\n    " } else { ",\n    " });
        let unpriced: Vec<&str> = t.unpriced.iter().map(String::as_str).collect();
        if rows {
            let lead = Some(("session", t.name.as_str()));
            write_total(out, 2, lead, &t.acc, t.reported, &unpriced, None, None);
        } else {
            ascii_string(&t.name, out);
            out.push_str(": ");
            let dialect = Some(t.dialect.as_deref().unwrap_or("unknown"));
            let ends = Some(&t.endings);
            write_total(out, 2, None, &t.acc, t.reported, &unpriced, ends, dialect);
        }
    }
}

/// `t`'s total as `usage._Acc.as_dict` makes it: `"session": name` first with `session`,
/// `endings` and `dialect` last with `ends`.
fn total_dict<'py>(
    py: Python<'py>,
    t: &SessionTotal,
    session: bool,
    ends: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if session {
        d.set_item(intern!(py, "session"), t.name.as_str())?;
    }
    d.set_item(intern!(py, "inputTokens"), t.acc.input)?;
    d.set_item(intern!(py, "outputTokens"), t.acc.output)?;
    d.set_item(intern!(py, "cachedTokens"), t.acc.cached)?;
    for (k, v) in PARTS.iter().zip(t.acc.parts) {
        if let Some(v) = v {
            d.set_item(*k, v)?;
        }
    }
    let c = costs(&t.acc, t.reported);
    d.set_item(intern!(py, "costUsd"), num(py, c.cost)?)?;
    d.set_item(intern!(py, "source"), c.source)?;
    d.set_item(intern!(py, "estimatedUsd"), c.estimated)?;
    d.set_item(intern!(py, "unpricedModels"), &t.unpriced)?;
    if ends {
        let e = PyDict::new(py);
        for (k, n) in ENDINGS.iter().zip(t.endings) {
            e.set_item(*k, n)?;
        }
        d.set_item(intern!(py, "endings"), e)?;
        let dialect = t.dialect.as_deref().unwrap_or("unknown");
        d.set_item(intern!(py, "dialect"), dialect)?;
    }
    Ok(d)
}

#[pymethods]
impl UsageSessions {
    fn __len__(&self) -> usize {
        self.items.len()
    }

    /// The totals as `usage._Acc.as_dict` makes them, by name: `[(name, total with endings
    /// and dialect)]` (`bySession`'s items), or with `rows` `[{"session": name, **total}]`
    /// (the rows by session); those from `start` up to `stop` (a slice: the report's table
    /// and CSV take them a chunk at a time, never all sessions' dicts at once).
    #[pyo3(signature = (rows = false, start = 0, stop = None))]
    fn dicts<'py>(
        &self,
        py: Python<'py>,
        rows: bool,
        start: usize,
        stop: Option<usize>,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let stop = stop.unwrap_or(usize::MAX).min(self.items.len());
        for t in self.items.get(start.min(stop)..stop).unwrap_or_default() {
            if rows {
                out.append(total_dict(py, t, true, false)?)?;
            } else {
                out.append((t.name.as_str(), total_dict(py, t, false, true)?))?;
            }
        }
        Ok(out)
    }

    /// The text `json.dumps(value, indent=2)` gives for the value of a top-level key of
    /// `report --json` (its lines indented one level), handed to `write` a piece at a time:
    /// `bySession` (`{name: total with endings and dialect}`), or with `rows` the rows by
    /// session (`[{"session": name, **total}]`).
    #[pyo3(signature = (write, rows = false))]
    fn write_json(&self, py: Python<'_>, write: &Bound<'_, PyAny>, rows: bool) -> PyResult<()> {
        if self.items.is_empty() {
            write.call1((if rows { "[]" } else { "{}" },))?;
            return Ok(());
        }
        write.call1((if rows { "[" } else { "{" },))?;
        let mut i = 0;
        while i < self.items.len() {
            let (text, next) = py.detach(|| {
                let mut out = String::with_capacity(TEXT_CHUNK + 4096);
                let mut j = i;
                while j < self.items.len() && out.len() < TEXT_CHUNK {
                    self.item_json(j, rows, &mut out);
                    j += 1;
                }
                (out, j)
            });
            write.call1((text,))?;
            i = next;
        }
        write.call1((if rows { "\n  ]" } else { "\n  }" },))?;
        Ok(())
    }
}

#[pymethods]
impl UsageMerge {
    /// `resolve(model)`: the model's price periods, `[(since, input, output, cacheRead,
    /// cacheWrite, cacheWrite1h)]` (each price None, a number or `(base, [(above, price)])`),
    /// or None when it has none; None for `resolve`: no estimates.
    #[new]
    #[pyo3(signature = (resolve = None))]
    fn new(resolve: Option<Py<PyAny>>) -> Self {
        UsageMerge {
            merge: Merge::new(resolve.is_some()),
            resolve,
        }
    }

    /// One stream's summary: a `_StreamSummary`, or the tuple form (ValueError when it is not
    /// one, OverflowError for a count beyond 128 bits; nothing is merged then).
    fn merge(&mut self, py: Python<'_>, summary: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(h) = summary.cast::<StreamSummary>() {
            let h = h.get();
            self.resolve_models(py, &h.inner)?;
            self.merge.merge(&h.inner);
            return Ok(());
        }
        let s = summary_of(summary)?;
        self.resolve_models(py, &s)?;
        self.merge.merge(&s);
        Ok(())
    }

    /// Each file of `files` folded by the core on `jobs` threads (default: every core, the
    /// GIL released; each file's project from its path, `report.claude_project`) and merged
    /// in file order as soon as those before it are (no summary handed to Python). Stops
    /// before the first file the core leaves to Python (it cannot be read, or has what only
    /// the Python fold reads right): that one and those after it are not merged; the caller
    /// folds it and calls again with the rest. Returns `(merged, quiet)`: how many files
    /// were merged, and `(index, unknown)` of each merged file whose every event was
    /// `status/unknown` (none recognised).
    #[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, jobs = None))]
    #[allow(clippy::too_many_arguments)]
    fn fold_files(
        &mut self,
        py: Python<'_>,
        files: Vec<String>,
        dialect: &Bound<'_, PyAny>,
        max_line_bytes: i64,
        max_depth: i64,
        max_nodes: i64,
        jobs: Option<usize>,
    ) -> PyResult<(usize, Vec<(usize, u64)>)> {
        let dialect = super::dialect_arg(dialect)?;
        let budget = super::budget_arg(max_line_bytes, max_depth, max_nodes)?;
        if jobs == Some(0) {
            return Err(PyValueError::new_err("jobs must be at least 1"));
        }
        let threads = jobs.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        let (merge, resolve) = (&mut self.merge, self.resolve.as_ref());
        let mut quiet = Vec::new();
        let mut failed: Option<PyErr> = None;
        let mut at = 0usize;
        let merged = py.detach(|| {
            crate::usage::fold_in_order(
                files.len(),
                threads,
                FOLD_WINDOW * threads,
                |i| {
                    let path = files.get(i).map_or("", String::as_str);
                    let project = crate::usage::claude_project(path);
                    // the totals only: no `rateLimits` readings
                    fold_file_totals(std::path::Path::new(path), dialect.clone(), budget, project)
                },
                |folded| {
                    let Ok(Outcome::Summary(s)) = folded else {
                        return false; // the caller folds it in Python
                    };
                    if let Some(resolve) = resolve {
                        if !merge.unresolved(&s).is_empty() {
                            let got = Python::attach(|py| resolve_models(py, resolve, merge, &s));
                            if let Err(e) = got {
                                failed = Some(e);
                                return false;
                            }
                        }
                    }
                    merge.merge(&s);
                    if s.known == 0 && s.unknown > 0 {
                        quiet.push((at, s.unknown));
                    }
                    at += 1;
                    true
                },
            )
        });
        match failed {
            Some(e) => Err(e),
            None => Ok((merged, quiet)),
        }
    }

    /// Why the sums would differ from the Python fold's, else None.
    #[getter]
    fn inexact(&self) -> Option<&'static str> {
        self.merge.inexact
    }

    /// The time buckets, after the session-file messages are counted: `(first second, last
    /// second)` each, the order `group`'s labels follow.
    fn times(&mut self) -> Vec<(i64, i64)> {
        self.merge.finish();
        self.merge.times.iter().map(|t| (t.1, t.2)).collect()
    }

    /// The totals: `labels[i]` (`(day, week, month, inside, block, active)`) of `times()[i]`,
    /// `none` for readings without a local time. A dict: `total`, `endings`, `models`,
    /// `sessions` (a `_UsageSessions`, by name), `days`, `rows` (`(key, acc)`), `active`;
    /// an acc is `(inputTokens, outputTokens, cachedTokens, reported, estimated (pico-USD),
    /// readings, n_reported, n_estimated, n_free, [reasoning, cacheWrite, cacheWrite1h],
    /// unpriced models)`.
    #[allow(clippy::type_complexity)]
    fn group<'py>(
        &mut self,
        py: Python<'py>,
        labels: Vec<(String, String, String, bool, Option<String>, bool)>,
        none: (String, String, String, bool, Option<String>, bool),
        by: Vec<String>,
        by_day: bool,
        active: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let label = |l: (String, String, String, bool, Option<String>, bool)| Label {
            day: l.0,
            week: l.1,
            month: l.2,
            inside: l.3,
            block: l.4,
            active: l.5,
        };
        let labels: Vec<Label> = labels.into_iter().map(label).collect();
        let none = label(none);
        let g = self.merge.group(&labels, &none, &by, by_day, active);
        let m = &self.merge;
        let out = PyDict::new(py);
        out.set_item("total", acc_tuple(py, m, &g.total)?)?;
        out.set_item("endings", m.endings().to_vec())?;
        let models = PyList::empty(py);
        for (id, a) in &g.models {
            models.append((m.model_name(*id), acc_tuple(py, m, a)?))?;
        }
        out.set_item("models", models)?;
        let mut items: Vec<SessionTotal> = g
            .sessions
            .iter()
            .map(|(id, (acc, reported))| {
                let name = m.session_name(*id);
                let mut unpriced: Vec<String> = acc
                    .unpriced
                    .iter()
                    .map(|i| m.model_name(*i).to_owned())
                    .collect();
                unpriced.sort_unstable();
                SessionTotal {
                    name: name.to_owned(),
                    acc: acc.clone(),
                    reported: *reported,
                    unpriced,
                    endings: m.session_endings(*id),
                    dialect: m.dialect_of(*id).map(str::to_owned),
                }
            })
            .collect();
        items.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        out.set_item("sessions", UsageSessions { items })?;
        let days = PyList::empty(py);
        for (d, a) in &g.days {
            days.append((d.as_str(), acc_tuple(py, m, a)?))?;
        }
        out.set_item("days", days)?;
        let rows = PyList::empty(py);
        for (k, a) in &g.rows {
            rows.append((PyTuple::new(py, k)?, acc_tuple(py, m, a)?))?;
        }
        out.set_item("rows", rows)?;
        match &g.active {
            Some(a) => out.set_item("active", acc_tuple(py, m, a)?)?,
            None => out.set_item("active", py.None())?,
        }
        Ok(out)
    }
}

impl UsageMerge {
    fn resolve_models(&mut self, py: Python<'_>, s: &Summary) -> PyResult<()> {
        match &self.resolve {
            Some(resolve) => resolve_models(py, resolve, &mut self.merge, s),
            None => Ok(()),
        }
    }
}

/// The prices of `s`'s models not known yet to `merge`, from `resolve(model)`.
fn resolve_models(
    py: Python<'_>,
    resolve: &Py<PyAny>,
    merge: &mut Merge,
    s: &Summary,
) -> PyResult<()> {
    let models: Vec<String> = merge.unresolved(s).into_iter().map(str::to_owned).collect();
    for model in models {
        let got = resolve.bind(py).call1((model.as_str(),))?;
        let price = if got.is_none() {
            None
        } else {
            let mut periods = Vec::new();
            for p in got.try_iter()? {
                let p: Vec<Bound<'_, PyAny>> = p?.extract()?;
                let [since, a, b, c, d, e] = <[Bound<'_, PyAny>; 6]>::try_from(p)
                    .map_err(|_| PyValueError::new_err("a price period has 6 items"))?;
                periods.push(Period {
                    since: since.extract()?,
                    prices: [
                        price_of(&a)?,
                        price_of(&b)?,
                        price_of(&c)?,
                        price_of(&d)?,
                        price_of(&e)?,
                    ],
                });
            }
            Some(ModelPrice { periods })
        };
        merge.set_price(&model, price);
    }
    Ok(())
}
