//! `_native._usage_fold_files`: the per-stream usage fold of many files (`crate::usage`) on
//! every core, the GIL released; the summaries as the tuples `usage.py` merges.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::event::Num;
use crate::usage::{fold_file, Outcome, Rec, Summary};

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
#[pyfunction]
#[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, jobs = None))]
pub(crate) fn _usage_fold_files<'py>(
    py: Python<'py>,
    files: Vec<(String, Option<String>)>,
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
    let results = py
        .detach(|| {
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
        .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    let out = PyList::empty(py);
    for r in &results {
        match r {
            Some(s) => out.append((summary(py, s)?, s.known, s.unknown))?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// FNV-1a (64 bits): the hash of a file's head in its cache key (a change detector, not a
/// digest: the size and modification time are in the key too).
fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn fingerprint(path: &str, head: usize) -> std::io::Result<(u64, i128, String)> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let f = std::fs::File::open(path)?;
    let meta = f.metadata()?;
    let mut buf = Vec::new();
    f.take(head as u64).read_to_end(&mut buf)?;
    let mtime_ns = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    Ok((meta.size(), mtime_ns, format!("{:016x}", fnv1a(&buf))))
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
