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
