//! `validate_journal`: the journal pass with the GIL released; dicts only for violations.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyDict, PyList};

use super::budget_arg;

/// Every violation in a runner journal (bytes), as dicts in line order.
#[pyfunction]
#[pyo3(signature = (data, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000))]
pub(super) fn validate_journal<'py>(
    py: Python<'py>,
    data: PyBackedBytes,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
) -> PyResult<Bound<'py, PyList>> {
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let bytes: &[u8] = &data;
    let found = py
        .detach(|| crate::journal::validate_journal(bytes, &budget))
        .map_err(super::oom)?;
    let out = PyList::empty(py);
    for v in &found {
        let d = PyDict::new(py);
        d.set_item(intern!(py, "line"), v.line)?;
        d.set_item(intern!(py, "position"), v.position)?;
        d.set_item(intern!(py, "kind"), v.kind.as_deref())?;
        d.set_item(intern!(py, "pointer"), v.pointer.as_str())?;
        d.set_item(intern!(py, "keyword"), v.keyword)?;
        d.set_item(intern!(py, "message"), v.message.as_str())?;
        out.append(d)?;
    }
    Ok(out)
}
