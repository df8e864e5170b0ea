//! `_native._stamps`: the report cache's and memo's view of its inputs (`report_cache.py`),
//! one `stat` per file in the core, the GIL released, packed: no Python object per file.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// Fields of a stamp: size, mtime (ns), ctime (ns), inode, device.
const FIELDS: usize = 5;

/// `(size, mtime_ns, ctime_ns, inode, device)` of `path` (links followed, as `os.stat`),
/// each as a 64-bit signed integer (inode and device: their bits, as `report_cache.stamps`
/// keeps them); None where it cannot be examined or a time is beyond 64 bits of ns.
fn stamp(path: &std::path::Path) -> Option<[i64; FIELDS]> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let ns = |s: i64, n: i64| i64::try_from(i128::from(s) * 1_000_000_000 + i128::from(n)).ok();
    Some([
        i64::try_from(m.size()).ok()?,
        ns(m.mtime(), m.mtime_nsec())?,
        ns(m.ctime(), m.ctime_nsec())?,
        i64::from_ne_bytes(m.ino().to_ne_bytes()),
        i64::from_ne_bytes(m.dev().to_ne_bytes()),
    ])
}

/// Per path its stamp as five native-endian 64-bit signed integers (`array("q")`'s bytes:
/// size, mtime and ctime in ns, inode, device; the last two as their bits), one after the
/// other; a path that cannot be examined gets `-1` in every field (a size is never
/// negative). The GIL is released.
#[pyfunction]
pub(crate) fn _stamps<'py>(
    py: Python<'py>,
    paths: Vec<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyBytes>> {
    let buf = py.detach(|| {
        let mut buf = Vec::with_capacity(paths.len() * FIELDS * 8);
        for p in &paths {
            for x in stamp(p).unwrap_or([-1; FIELDS]) {
                buf.extend_from_slice(&x.to_ne_bytes());
            }
        }
        buf
    });
    Ok(PyBytes::new(py, &buf))
}
