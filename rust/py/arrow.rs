//! `normalize_arrow`: the Arrow batches of `crate::arrow` handed to Python through the Arrow
//! PyCapsule interface (no pyarrow at build time). Each capsule owns its FFI struct: a consumer
//! that imports it moves the content out (its `release` becomes null); a capsule dropped
//! unconsumed releases the data when pyo3 drops the boxed struct.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::exceptions::{PyInterruptedError, PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyCapsule, PyList, PyTuple};

use arrow_array::ffi::{to_ffi, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{Array, RecordBatch, RecordBatchIterator, StructArray};
use arrow_schema::SchemaRef;

use super::{budget_arg, dialect_arg, fields_arg};
use crate::arrow::{ArrowSink, Failure, BATCH_ROWS};
use crate::budget::Budget;
use crate::dialect::AnyDialect;
use crate::fields::{ty_name, Field, Sel, Ty, FIELDS};
use crate::jsonl::{open_input, par_map, read_chunks};
use crate::normalize::Engine;
use crate::sink;

fn failure(e: Failure) -> PyErr {
    match e {
        Failure::OutOfMemory(e) => PyMemoryError::new_err(e.to_string()),
        Failure::Arrow(e) => PyValueError::new_err(e.to_string()),
        Failure::Cancelled => {
            PyInterruptedError::new_err("feed_arrow cancelled: its CancelFlag was set")
        }
    }
}

/// A flag another thread sets to stop a `Normalizer.feed_arrow` given it within about 64 KiB
/// of input (`normalize_files` to an `out_dir` in Arrow/Parquet: Ctrl-C sets it, and a file
/// being converted stops mid-chunk rather than at the end of its 16 MiB read). Has the
/// `threading.Event` methods the Python side uses, `set()` and `is_set()`.
#[pyclass(module = "checkfu_fast._native", name = "CancelFlag", frozen)]
#[derive(Default)]
pub struct CancelFlag {
    pub flag: Arc<AtomicBool>,
}

#[pymethods]
impl CancelFlag {
    #[new]
    fn new() -> Self {
        CancelFlag::default()
    }

    /// Set the flag: a `feed_arrow` given it raises `InterruptedError` at its next window.
    fn set(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

fn arrow_err(e: arrow_schema::ArrowError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// The events of one stream as Arrow record batches (docs/arrow.md).
#[pyclass(module = "checkfu_fast._native", name = "ArrowEvents", frozen)]
pub struct ArrowEvents {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

#[pymethods]
impl ArrowEvents {
    /// The schema, as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.schema.as_ref()).map_err(arrow_err)?;
        PyCapsule::new_with_value(py, schema, c"arrow_schema")
    }

    /// All rows as one struct array: `(arrow_schema, arrow_array)` capsules. The batches are
    /// concatenated when there are several.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let batch = crate::arrow::concat(&self.schema, &self.batches).map_err(failure)?;
        let data = StructArray::from(batch).to_data();
        let (array, schema) = to_ffi(&data).map_err(arrow_err)?;
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        PyTuple::new(py, [schema, array])
    }

    /// The batches as an `arrow_array_stream` capsule.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            self.schema.clone(),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The number of rows (events).
    fn __len__(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// The number of record batches the stream yields.
    #[getter]
    fn num_batches(&self) -> usize {
        self.batches.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "<checkfu_fast ArrowEvents: {} rows, {} columns, {} batches>",
            self.__len__(),
            self.schema.fields().len(),
            self.batches.len()
        )
    }
}

/// Normalize a whole stream to Arrow record batches, with the GIL released.
#[pyfunction]
#[pyo3(signature = (data, dialect, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, batch_rows = BATCH_ROWS, fields = None))]
#[allow(clippy::too_many_arguments)]
pub fn normalize_arrow(
    py: Python<'_>,
    data: PyBackedBytes,
    dialect: &Bound<'_, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    batch_rows: usize,
    fields: Option<&Bound<'_, PyAny>>,
) -> PyResult<ArrowEvents> {
    let sel = fields_arg(fields)?;
    if batch_rows == 0 {
        return Err(PyValueError::new_err("batch_rows must be at least 1"));
    }
    let engine = Engine::new(
        dialect_arg(dialect)?,
        budget_arg(max_line_bytes, max_depth, max_nodes)?,
    );
    batches(py, engine, &data, true, batch_rows, sel)
}

/// The Arrow batches of `bytes` fed to `engine` (a fresh one) with the GIL released, the
/// stream finished when `last`; `seq` counts from 0.
fn batches(
    py: Python<'_>,
    mut engine: Engine,
    bytes: &[u8],
    last: bool,
    batch_rows: usize,
    sel: Sel,
) -> PyResult<ArrowEvents> {
    let (schema, batches) = py
        .detach(|| {
            let mut sink = ArrowSink::new(batch_rows, sel);
            sink.expect(bytes.len());
            let mut seq = 0u64;
            sink::feed(&mut engine, &mut seq, bytes, &mut sink)?;
            if last {
                sink::finish(&mut engine, &mut seq, &mut sink)?;
            }
            let schema = sink.schema();
            Ok((schema, sink.finish()?))
        })
        .map_err(failure)?;
    Ok(ArrowEvents { schema, batches })
}

/// One step of an incremental stream as Arrow: `chunk` fed (or, with `None`, the end of
/// stream), the events it completed as batches; `seq` continues; [`Failure::Cancelled`] once
/// `cancel` is set. (`Normalizer.feed_arrow`.)
pub fn step(
    engine: &mut Engine,
    seq: &mut u64,
    chunk: Option<&[u8]>,
    batch_rows: usize,
    sel: Sel,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<ArrowEvents, Failure> {
    let mut sink = ArrowSink::new(batch_rows, sel);
    sink.cancel = cancel;
    match chunk {
        Some(c) => {
            // `raw` and `parsed` sized for the chunk at once: grown by doubling instead, each
            // call left a trail of freed buffers of every size behind it (peak RSS)
            sink.expect(c.len());
            sink::feed(engine, seq, c, &mut sink)?
        }
        None => sink::finish(engine, seq, &mut sink)?,
    }
    let schema = sink.schema();
    Ok(ArrowEvents {
        schema,
        batches: sink.finish()?,
    })
}

pub fn failed(e: Failure) -> PyErr {
    failure(e)
}

pub fn is_oom(e: &Failure) -> bool {
    matches!(e, Failure::OutOfMemory(_))
}

pub fn is_cancelled(e: &Failure) -> bool {
    matches!(e, Failure::Cancelled)
}

/// Private (`checkfu_fast.dask`): the Arrow batches of one range of a `_split_plan` (bytes
/// `data` at stream offset `offset`; `super::range_engine`, `context` the plan's for the range),
/// the stream finished only when `last`. `seq` counts from 0 within the range; positions are
/// the stream's.
#[pyfunction]
#[pyo3(signature = (data, dialect, offset, last, max_line_bytes = 64 << 20, max_depth = 64, max_nodes = 1_000_000, batch_rows = BATCH_ROWS, fields = None, context = None))]
#[allow(clippy::too_many_arguments)]
pub fn _normalize_range_arrow(
    py: Python<'_>,
    data: PyBackedBytes,
    dialect: &Bound<'_, PyAny>,
    offset: u64,
    last: bool,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    batch_rows: usize,
    fields: Option<&Bound<'_, PyAny>>,
    context: Option<(Option<String>, Option<String>)>,
) -> PyResult<ArrowEvents> {
    if batch_rows == 0 {
        return Err(PyValueError::new_err("batch_rows must be at least 1"));
    }
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    let engine = super::range_engine(dialect_arg(dialect)?, budget, offset, context)?;
    batches(py, engine, &data, last, batch_rows, fields_arg(fields)?)
}

/// One file's events as Arrow batches: read [`crate::jsonl::READ_CHUNK`] bytes at a time
/// (gzip and zstd decompressed as read, `jsonl::open_input`), the same rows as
/// `normalize_arrow` of its contents.
/// Why [`file_batches`] stopped. A failure is made an `io::Error` only once the file's engine
/// and columns are dropped: its message is a String, and allocating it while they still held
/// the memory that ran out aborted the process (tests/test_files.py's files_arrow-96, 1 run in
/// 30).
enum Stop {
    Io(std::io::Error),
    Failed(Failure),
}

impl From<Stop> for std::io::Error {
    fn from(e: Stop) -> Self {
        match e {
            Stop::Io(e) => e,
            Stop::Failed(Failure::OutOfMemory(e)) => {
                std::io::Error::new(std::io::ErrorKind::OutOfMemory, e.to_string())
            }
            Stop::Failed(Failure::Arrow(e)) => std::io::Error::other(e.to_string()),
            Stop::Failed(Failure::Cancelled) => crate::split::cancelled(),
        }
    }
}

fn file_batches(
    path: &std::path::Path,
    dialect: Option<AnyDialect>,
    budget: Budget,
    batch_rows: usize,
    sel: Sel,
    cancel: &Arc<AtomicBool>,
) -> Result<ArrowEvents, Stop> {
    let mut engine = Engine::new(dialect, budget);
    let mut sink = ArrowSink::new(batch_rows, sel);
    sink.cancel = Some(Arc::clone(cancel));
    // the columns sized for the file (a compressed file's size is a low guess)
    if let Ok(meta) = std::fs::metadata(path) {
        sink.expect(usize::try_from(meta.len()).unwrap_or(usize::MAX));
    }
    let mut seq = 0u64;
    let mut failed = None;
    let mut input = open_input(path).map_err(Stop::Io)?;
    let read = read_chunks(&mut input, |chunk| {
        sink::feed(&mut engine, &mut seq, chunk, &mut sink).map_err(|e| {
            failed = Some(e);
            std::io::Error::from(std::io::ErrorKind::Other) // no allocation: replaced below
        })
    });
    if let Some(e) = failed {
        return Err(Stop::Failed(e));
    }
    read.map_err(Stop::Io)?;
    sink::finish(&mut engine, &mut seq, &mut sink).map_err(Stop::Failed)?;
    let schema = sink.schema();
    let batches = sink.finish().map_err(Stop::Failed)?;
    Ok(ArrowEvents { schema, batches })
}

/// Private (`normalize_files(format="arrow")`): each file's events as Arrow batches, the files
/// in parallel on `jobs` threads (default the CPU count) with the GIL released; per input, in
/// order, an `ArrowEvents` or `(errno, message)`.
#[pyfunction]
#[pyo3(signature = (inputs, dialect, max_line_bytes, max_depth, max_nodes, jobs, batch_rows = BATCH_ROWS, fields = None))]
#[allow(clippy::too_many_arguments)]
pub fn _normalize_files_arrow<'py>(
    py: Python<'py>,
    inputs: Vec<String>,
    dialect: &Bound<'py, PyAny>,
    max_line_bytes: i64,
    max_depth: i64,
    max_nodes: i64,
    jobs: Option<usize>,
    batch_rows: usize,
    fields: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    let sel = fields_arg(fields)?;
    if batch_rows == 0 {
        return Err(PyValueError::new_err("batch_rows must be at least 1"));
    }
    if jobs == Some(0) {
        return Err(PyValueError::new_err("jobs must be at least 1"));
    }
    let dialect = dialect_arg(dialect)?;
    let budget = budget_arg(max_line_bytes, max_depth, max_nodes)?;
    // Ctrl-C: the files being converted stop within a window of input (KeyboardInterrupt)
    let cancel = Arc::new(AtomicBool::new(false));
    let results = super::interruptible(py, &cancel, || {
        par_map(inputs.len(), jobs, |i| {
            let path = std::path::Path::new(inputs.get(i).map_or("", String::as_str));
            file_batches(path, dialect.clone(), budget, batch_rows, sel, &cancel)
                .map_err(std::io::Error::from)
        })
    })?
    .map_err(|e| PyValueError::new_err(format!("cannot start the worker threads: {e}")))?;
    super::no_failed_allocation(&results)?;
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok(events) => out.append(Bound::new(py, events)?)?,
            Err(e) => out.append(super::error_tuple(py, &e)?)?,
        }
    }
    Ok(out)
}

/// The column names of a projection (`fields` as in `normalize_arrow`), in order.
#[pyfunction]
#[pyo3(signature = (fields = None))]
pub fn arrow_columns(fields: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    Ok(crate::arrow::schema_for(fields_arg(fields)?)
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect())
}

/// `_native.FIELD_TABLE`: each field as `(name, type, column, nested table or None)`, in order
/// (`arrow.py` walks it to turn rows back into events).
pub fn field_table<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
    fn table<'py>(
        py: Python<'py>,
        t: &[Field],
        parent: Option<&str>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let rows = t
            .iter()
            .map(|f| {
                let col = f.column(parent);
                let sub = match f.ty {
                    Ty::Obj(s) => Some(table(py, s, Some(&col))?),
                    _ => None,
                };
                (f.name, ty_name(f.ty), col, sub).into_pyobject(py)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, rows)
    }
    table(py, &FIELDS, None)
}
