//! `checkfu-fast normalize --jobs N` ([`crate::ordered`]): the run with the GIL released, the
//! CLI's progress and per-file errors through a callback on the calling thread.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::ordered::{self, End, Options, Report};

/// Private (`checkfu-fast normalize --jobs`): `files` normalized on `jobs` threads, their JSONL
/// written in input order to standard output (`path` None) or appended to the file `path`,
/// each file one stream (`seq` numbered on across the ranges of a large plain file cut into
/// ranges of about `range_bytes`), at most `window` bytes of output waiting. The GIL is
/// released for the run; `report(read, index, error)` is called on this thread: each file
/// done in order (`index`, with `(errno or None, message)` when it could not be read) and
/// every 0.1 s (`index` None) with the input bytes read since the last call; an exception it
/// raises (or a signal handler's, KeyboardInterrupt) stops the run and is raised here. Returns
/// None when every file was done, or the index of the first file left to the caller (not a
/// regular file, or compressed), everything before it written. A failed write is `OSError`
/// (`BrokenPipeError` for EPIPE).
#[pyfunction]
#[pyo3(signature = (files, dialect, max_line_bytes, max_depth, max_nodes, fields, tag_source, jobs, range_bytes, window, path, report))]
#[allow(clippy::too_many_arguments)]
pub(super) fn _normalize_ordered(
    py: Python<'_>,
    files: Vec<String>,
    dialect: &Bound<'_, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    fields: Option<&Bound<'_, PyAny>>,
    tag_source: bool,
    jobs: usize,
    range_bytes: u64,
    window: usize,
    path: Option<PathBuf>,
    report: Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    let dialect = super::dialect_arg(dialect)?;
    let budget = super::budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let sel = super::fields_arg(fields)?;
    if jobs == 0 {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    let mut out = match path {
        None => {
            use std::os::fd::AsFd;
            // a descriptor of its own on the same open file (its offset shared)
            std::io::stdout()
                .as_fd()
                .try_clone_to_owned()
                .map(std::fs::File::from)
        }
        Some(p) => std::fs::OpenOptions::new().append(true).open(p),
    }
    .map_err(super::io_err)?;
    let opts = Options {
        files: &files,
        dialect,
        budget,
        sel,
        tag_source,
        jobs,
        range_bytes,
        window,
    };
    let report = report.unbind();
    let mut failure: Option<PyErr> = None;
    let mut out_of_memory: Option<std::io::Error> = None;
    let end = py.detach(|| {
        ordered::run(&opts, &mut out, &mut |r| match r {
            Report::Done { error: Some(e), .. } if e.kind() == std::io::ErrorKind::OutOfMemory => {
                // the run stops; its MemoryError is made once it is over, its workers and their
                // buffers gone (they hold the memory that ran out)
                out_of_memory = Some(e);
                false
            }
            r => Python::attach(|py| {
                let called = py.check_signals().and_then(|()| match r {
                    Report::Read(n) => report.call1(py, (n, py.None(), py.None())),
                    Report::Done {
                        index,
                        read,
                        error: None,
                    } => report.call1(py, (read, index, py.None())),
                    Report::Done {
                        index,
                        read,
                        error: Some(e),
                    } => report.call1(py, (read, index, super::error_tuple(py, &e)?)),
                });
                match called {
                    Ok(_) => true,
                    Err(e) => {
                        failure = Some(e);
                        false
                    }
                }
            }),
        })
    });
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(e) = out_of_memory {
        return Err(super::memory_error(&e));
    }
    match end.map_err(super::io_err)? {
        End::LeftAt(i) => Ok(Some(i)),
        End::All | End::Stopped => Ok(None),
    }
}
