//! `_native._walk`: `paths.walk` in the core (`crate::walk`), the GIL released.

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::walk::{walk, Found};

/// The walk of `directory` (`paths.walk`'s rule): `(path, stamp or None, None)` for each file
/// listed (a stamp with `stats`, where the file could be examined) and `(path, None, kind)` for
/// each entry skipped (not a regular file), in order; None where a name (or `directory`) is not
/// UTF-8 (the caller walks in Python).
#[pyfunction]
#[pyo3(signature = (directory, suffixes, stats))]
pub(crate) fn _walk<'py>(
    py: Python<'py>,
    directory: &Bound<'py, PyString>,
    suffixes: Option<Vec<String>>,
    stats: bool,
) -> PyResult<Option<Bound<'py, PyList>>> {
    let Ok(dir) = directory.to_str() else {
        return Ok(None);
    };
    let dir = dir.to_owned();
    let Some(found) = py.detach(|| walk(&dir, suffixes.as_deref(), stats)) else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    for f in found {
        match f {
            Found::File(p, st) => out.append((p, st, py.None()))?,
            Found::Skipped(p, kind) => out.append((p, py.None(), kind))?,
        }
    }
    Ok(Some(out))
}
