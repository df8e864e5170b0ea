//! Events as Arrow record batches: one row per event, flat typed columns (docs/arrow.md).
//!
//! [`ArrowSink`] is the Arrow [`Sink`]: the same lines the dict and JSONL paths see, written
//! into column builders, cut into record batches of at most `batch_rows` rows (and about
//! [`BATCH_BYTES`] of text). Nested values (`tool.arguments`, `parsed`, `toolResult`, ...)
//! are JSON text written by the JSONL writer ([`crate::jsonl::write_value`]), so
//! `json.loads` of a cell gives the value of the event dict (integers of any size included).
//! Feature `arrow` (on with `python`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow_array::builder::LargeStringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, TimestampMicrosecondType, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, LargeStringArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef, TimeUnit};

use crate::budget::OutOfMemory;
use crate::event::{Event, Num};
use crate::fields::{self, Field, Sel, Ty, Val, Writer, ALWAYS, FIELDS};
use crate::jsonl::write_value;
use crate::normalize::LineEvents;
use crate::sink::Sink;
use crate::text::{write_f64, write_i128, write_str};
use crate::value::Value;

/// Rows per record batch unless asked otherwise.
pub const BATCH_ROWS: usize = 64 << 10;
/// A batch is cut before an event once its text columns hold about this many bytes.
pub const BATCH_BYTES: usize = 256 << 20;

/// Why building the batches failed.
#[derive(Debug)]
pub enum Failure {
    OutOfMemory(OutOfMemory),
    Arrow(ArrowError),
    /// The sink's cancel flag was set ([`ArrowSink::cancel`]).
    Cancelled,
}

impl From<OutOfMemory> for Failure {
    fn from(e: OutOfMemory) -> Self {
        Failure::OutOfMemory(e)
    }
}

impl From<ArrowError> for Failure {
    fn from(e: ArrowError) -> Self {
        Failure::Arrow(e)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::OutOfMemory(e) => write!(f, "{e}"),
            Failure::Arrow(e) => write!(f, "{e}"),
            Failure::Cancelled => write!(f, "cancelled"),
        }
    }
}

/// A bitmap (validity, or a boolean column's values), grown with `try_reserve`.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    len: usize,
    /// bits pushed unset
    unset: usize,
}

/// Sets bits `from..to` of `bytes` (a byte at a time, not a bit).
fn set_bits(bytes: &mut [u8], from: usize, to: usize) {
    if from >= to {
        return;
    }
    let (first, last) = (from / 8, (to - 1) / 8);
    let head = 0xFFu8 << (from % 8);
    let tail = 0xFFu8 >> (7 - (to - 1) % 8);
    if first == last {
        if let Some(b) = bytes.get_mut(first) {
            *b |= head & tail;
        }
        return;
    }
    if let Some(b) = bytes.get_mut(first) {
        *b |= head;
    }
    if let Some(whole) = bytes.get_mut(first + 1..last) {
        whole.fill(0xFF);
    }
    if let Some(b) = bytes.get_mut(last) {
        *b |= tail;
    }
}

impl Bits {
    fn with_capacity(n: usize) -> Result<Bits, OutOfMemory> {
        let mut bytes = Vec::new();
        OutOfMemory::reserve(&mut bytes, n.div_ceil(8))?;
        Ok(Bits {
            bytes,
            len: 0,
            unset: 0,
        })
    }

    /// `n` more bits of value `v`.
    fn push_n(&mut self, v: bool, n: usize) -> Result<(), OutOfMemory> {
        let len = self.len.saturating_add(n);
        let need = len.div_ceil(8);
        if need > self.bytes.len() {
            let more = need - self.bytes.len();
            if self.bytes.capacity() - self.bytes.len() < more {
                OutOfMemory::reserve(&mut self.bytes, more)?;
            }
            self.bytes.resize(need, 0);
        }
        if v {
            set_bits(&mut self.bytes, self.len, len);
        } else {
            self.unset += n;
        }
        self.len = len;
        Ok(())
    }

    /// One more bit (a byte is added every eighth).
    #[inline]
    fn push(&mut self, v: bool) -> Result<(), OutOfMemory> {
        let i = self.len;
        if i % 8 == 0 {
            if self.bytes.len() == self.bytes.capacity() {
                OutOfMemory::reserve(&mut self.bytes, 1)?;
            }
            self.bytes.push(0);
        }
        if v {
            if let Some(b) = self.bytes.last_mut() {
                *b |= 1 << (i % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len = i + 1;
        Ok(())
    }

    fn finish(&mut self) -> BooleanBuffer {
        let bytes = std::mem::take(&mut self.bytes);
        let len = std::mem::replace(&mut self.len, 0);
        self.unset = 0;
        BooleanBuffer::new(Buffer::from_vec(bytes), 0, len)
    }

    /// As a validity bitmap: `None` when every bit is set.
    fn finish_nulls(&mut self) -> Option<NullBuffer> {
        if self.unset == 0 {
            *self = Bits::default();
            return None;
        }
        Some(NullBuffer::new(self.finish()))
    }
}

/// A column of fixed-size values (`T::default()` under a null).
#[derive(Default)]
struct Prim<T> {
    values: Vec<T>,
    valid: Bits,
}

impl<T: Copy + Default> Prim<T> {
    fn with_capacity(n: usize) -> Result<Self, OutOfMemory> {
        let mut values = Vec::new();
        OutOfMemory::reserve(&mut values, n)?;
        Ok(Prim {
            values,
            valid: Bits::with_capacity(n)?,
        })
    }

    #[inline]
    fn push(&mut self, v: Option<T>) -> Result<(), OutOfMemory> {
        if self.values.len() == self.values.capacity() {
            OutOfMemory::reserve(&mut self.values, 1)?;
        }
        self.values.push(v.unwrap_or_default());
        self.valid.push(v.is_some())
    }

    /// Room for `n` cells in all (values and validity bits), if it can be had (a guess: else
    /// the column grows as it goes).
    fn make_room(&mut self, n: usize) {
        let more = n.saturating_sub(self.values.len());
        if more > self.values.capacity() - self.values.len() {
            let _ = self.values.try_reserve(more);
            let bytes = &mut self.valid.bytes;
            let _ = bytes.try_reserve(n.div_ceil(8).saturating_sub(bytes.len()));
        }
    }

    fn nulls(&mut self, n: usize) -> Result<(), OutOfMemory> {
        OutOfMemory::reserve(&mut self.values, n)?;
        self.values
            .resize(self.values.len().saturating_add(n), T::default());
        self.valid.push_n(false, n)
    }

    /// The values and their validity, the column emptied.
    fn take(&mut self) -> (Vec<T>, Option<NullBuffer>) {
        let nulls = self.valid.finish_nulls();
        (std::mem::take(&mut self.values), nulls)
    }
}

/// A column of strings, built in arrow-array's own builder, so that its batch is not a second
/// pass over its text: `LargeStringArray::try_new` checks that all of the text is UTF-8 and
/// that every offset falls on a character's boundary (a fifth of a full batch's build), where
/// the builder's `finish` knows its cells were `&str`. The builder grows with Rust's infallible
/// allocation, so it is never let grow: its buffers are Vecs reserved with `try_reserve`,
/// handed over through an empty array's `into_builder` (an empty array has nothing to check),
/// and a cell that does not fit first moves the column into a larger builder ([`Strs::grow`]).
/// That the builder keeps those buffers is arrow-array's behaviour, which
/// `tests::strings_fill_their_room_in_place` holds it to.
struct Strs {
    b: LargeStringBuilder,
    /// the cells and text bytes the builder's buffers hold
    rows_cap: usize,
    text_cap: usize,
}

/// The least room [`Strs::grow`] makes.
const MIN_ROWS: usize = 64;
const MIN_TEXT: usize = 1024;

impl Default for Strs {
    /// No room: the first cell makes some.
    fn default() -> Strs {
        Strs {
            b: LargeStringBuilder::with_capacity(0, 0),
            rows_cap: 0,
            text_cap: 0,
        }
    }
}

impl Strs {
    /// Room for `rows` cells of `bytes` of text in all, every buffer reserved with
    /// `try_reserve`.
    fn with_capacity(rows: usize, bytes: usize) -> Result<Strs, OutOfMemory> {
        let mut offsets: Vec<i64> = Vec::new();
        OutOfMemory::reserve(&mut offsets, rows.saturating_add(1))?;
        offsets.push(0);
        let mut text: Vec<u8> = Vec::new();
        OutOfMemory::reserve(&mut text, bytes)?;
        let mut bits: Vec<u8> = Vec::new();
        OutOfMemory::reserve(&mut bits, rows.div_ceil(8))?;
        let rows_cap = (offsets.capacity() - 1).min(bits.capacity().saturating_mul(8));
        let text_cap = text.capacity();
        // an empty validity bitmap, so that the builder's is these bytes (without one, its
        // first null would allocate one)
        let nulls = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, 0));
        let empty = LargeStringArray::try_new(
            OffsetBuffer::new(offsets.into()),
            Buffer::from_vec(text),
            Some(nulls),
        );
        // neither fails: no rows, and the array is its buffers' only owner
        match empty.map(LargeStringArray::into_builder) {
            Ok(Ok(b)) => Ok(Strs {
                b,
                rows_cap,
                text_cap,
            }),
            _ => Err(OutOfMemory { requested: bytes }),
        }
    }

    fn text_len(&self) -> usize {
        self.b.values_slice().len()
    }

    /// The cells so far: the offsets but the first (the builder's own `len` asks its validity
    /// bitmap, a call LTO left out of line: 0.9% of a lean call on claude).
    #[inline]
    fn len(&self) -> usize {
        self.b.offsets_slice().len().saturating_sub(1)
    }

    /// Whether `rows` more cells of `bytes` more text fit without growing.
    #[inline]
    fn fits(&self, rows: usize, bytes: usize) -> bool {
        rows <= self.rows_cap.saturating_sub(self.len())
            && bytes <= self.text_cap.saturating_sub(self.text_len())
    }

    #[inline]
    fn push(&mut self, s: Option<&str>) -> Result<(), OutOfMemory> {
        let n = s.map_or(0, str::len);
        if !self.fits(1, n) {
            self.grow(1, n)?;
        }
        self.b.append_option(s);
        Ok(())
    }

    fn nulls(&mut self, n: usize) -> Result<(), OutOfMemory> {
        if !self.fits(n, 0) {
            self.grow(n, 0)?;
        }
        self.b.append_nulls(n);
        Ok(())
    }

    /// The cells of `a`.
    fn append(&mut self, a: &LargeStringArray) -> Result<(), Failure> {
        let bytes = a.value_data().len();
        if !self.fits(a.len(), bytes) {
            self.grow(a.len(), bytes)?;
        }
        Ok(self.b.append_array(a)?)
    }

    /// Room for `rows` more cells of `bytes` more text: what runs short at least doubled.
    #[cold]
    fn grow(&mut self, rows: usize, bytes: usize) -> Result<(), OutOfMemory> {
        let more = |len: usize, n: usize, cap: usize, least: usize| {
            let need = len.saturating_add(n);
            if need <= cap {
                cap
            } else {
                need.max(cap.saturating_mul(2)).max(least)
            }
        };
        let rows = more(self.len(), rows, self.rows_cap, MIN_ROWS);
        let bytes = more(self.text_len(), bytes, self.text_cap, MIN_TEXT);
        self.resize(rows, bytes)
    }

    /// The column moved into a builder with room for `rows` cells of `bytes` of text in all
    /// (at least what it holds).
    fn resize(&mut self, rows: usize, bytes: usize) -> Result<(), OutOfMemory> {
        let rows = rows.max(self.len());
        let mut next = Strs::with_capacity(rows, bytes.max(self.text_len()))?;
        if self.len() > 0 {
            // contiguous offsets from 0: nothing to shift, nothing to overflow
            next.b
                .append_array(&self.b.finish())
                .map_err(|_| OutOfMemory { requested: bytes })?;
        }
        *self = next;
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        // the buffers go with the array
        self.rows_cap = 0;
        self.text_cap = 0;
        Arc::new(self.b.finish())
    }
}

/// A column being built. Every growth is `try_reserve` (the builders of `arrow-array` grow
/// with Rust's infallible allocation, which aborts the process when it fails; the text
/// columns' one is never let grow, [`Strs`]): a batch that does not fit is
/// [`Failure::OutOfMemory`], Python's `MemoryError`.
enum Col {
    Str(Strs),
    U64(Prim<u64>),
    I64(Prim<i64>),
    F64(Prim<f64>),
    Bool(Bits, Bits),
    Time(Prim<i64>),
}

impl Col {
    fn new(dt: &DataType) -> Col {
        match dt {
            DataType::UInt64 => Col::U64(Prim::default()),
            DataType::Int64 => Col::I64(Prim::default()),
            DataType::Float64 => Col::F64(Prim::default()),
            DataType::Boolean => Col::Bool(Bits::default(), Bits::default()),
            DataType::Timestamp(..) => Col::Time(Prim::default()),
            _ => Col::Str(Strs::default()),
        }
    }

    /// Which of the [`KINDS`] arrays of absent cells a column without a cell is
    /// ([`Column::finish`]): its type, and for a flag column whether it is nullable.
    fn kind(&self, nullable: bool) -> usize {
        match self {
            Col::Str(_) => 0,
            Col::U64(_) => 1,
            Col::I64(_) => 2,
            Col::F64(_) => 3,
            Col::Time(_) => 4,
            Col::Bool(..) => 5 + usize::from(nullable),
        }
    }

    /// The cells so far.
    #[inline]
    fn len(&self) -> usize {
        match self {
            Col::Str(b) => b.len(),
            Col::U64(b) => b.values.len(),
            Col::I64(b) | Col::Time(b) => b.values.len(),
            Col::F64(b) => b.values.len(),
            Col::Bool(values, _) => values.len,
        }
    }

    /// Bytes of text so far (0 for a column that is not text).
    fn text_len(&self) -> usize {
        match self {
            Col::Str(b) => b.text_len(),
            _ => 0,
        }
    }

    /// Room for `rows` cells of `bytes` of text in all (a text column; the others are 8 bytes
    /// or a bit a row, and their growth by doubling copies no more than this would): the text
    /// so far moved once, where growing by doubling copies it at every doubling and leaves each
    /// old buffer behind (for the text columns of a lean batch, a fifth of the build). A guess:
    /// when the room cannot be had, the column grows as it goes.
    fn make_room(&mut self, rows: usize, bytes: usize) {
        if let Col::Str(b) = self {
            let (more_rows, more_text) = (
                rows.saturating_sub(b.len()),
                bytes.saturating_sub(b.text_len()),
            );
            if !b.fits(more_rows, more_text) {
                let _ = b.resize(rows.max(b.rows_cap), bytes.max(b.text_cap));
            }
        }
    }

    /// Room for `rows` cells in all in a column of numbers or times (8 bytes and a validity
    /// bit a row), when [`ArrowSink::regrow`] projects them, rather than grown by doubling
    /// from none: each doubling was a reallocation onto fresh memory (page faults per lean
    /// call on claude with `MIMALLOC_PURGE_DELAY=0`, which counts every fresh page: 545 ->
    /// 503). A text column's room is [`Col::make_room`]'s; a flag column's bits are few.
    fn make_rows(&mut self, rows: usize) {
        match self {
            Col::U64(b) => b.make_room(rows),
            Col::I64(b) | Col::Time(b) => b.make_room(rows),
            Col::F64(b) => b.make_room(rows),
            Col::Str(_) | Col::Bool(..) => {}
        }
    }

    /// `n` cells of an absent value: `false` in a non-null flag column, else null.
    fn absent(&mut self, nullable: bool, n: usize) -> Result<(), OutOfMemory> {
        match self {
            Col::Str(b) => b.nulls(n),
            Col::U64(b) => b.nulls(n),
            Col::I64(b) | Col::Time(b) => b.nulls(n),
            Col::F64(b) => b.nulls(n),
            Col::Bool(values, valid) => {
                values.push_n(false, n)?;
                valid.push_n(!nullable, n)
            }
        }
    }

    fn str(&mut self, s: Option<&str>) -> Result<(), OutOfMemory> {
        match self {
            Col::Str(b) => b.push(s),
            _ => Ok(()),
        }
    }

    fn bool(&mut self, v: bool) -> Result<(), OutOfMemory> {
        match self {
            Col::Bool(values, valid) => {
                values.push(v)?;
                valid.push(true)
            }
            _ => Ok(()),
        }
    }

    fn finish(&mut self) -> Result<ArrayRef, Failure> {
        Ok(match self {
            Col::Str(b) => b.finish(),
            Col::U64(b) => {
                let (v, n) = b.take();
                Arc::new(PrimitiveArray::<UInt64Type>::try_new(v.into(), n)?)
            }
            Col::I64(b) => {
                let (v, n) = b.take();
                Arc::new(PrimitiveArray::<Int64Type>::try_new(v.into(), n)?)
            }
            Col::F64(b) => {
                let (v, n) = b.take();
                Arc::new(PrimitiveArray::<Float64Type>::try_new(v.into(), n)?)
            }
            Col::Time(b) => {
                let (v, n) = b.take();
                Arc::new(
                    PrimitiveArray::<TimestampMicrosecondType>::try_new(v.into(), n)?
                        .with_timezone(UTC),
                )
            }
            Col::Bool(values, valid) => {
                let nulls = valid.finish_nulls();
                Arc::new(BooleanArray::new(values.finish(), nulls))
            }
        })
    }
}

/// A column: its builder and the rows it holds. A row the column has no value for is not
/// written when the walk passes it (most columns are absent on most rows): the run of absent
/// cells before a value is appended at once when the value comes, or when the batch is cut.
struct Column {
    b: Col,
    nullable: bool,
    /// the text bytes the builder was last given room for ([`ArrowSink::regrow`])
    room_bytes: usize,
}

impl Column {
    /// The builder, to append row `row`'s cell (the one cell of this column the row has),
    /// the absent cells before it appended first.
    #[inline]
    fn at(&mut self, row: usize) -> Result<&mut Col, OutOfMemory> {
        let len = self.b.len();
        if len < row {
            self.b.absent(self.nullable, row - len)?;
        }
        Ok(&mut self.b)
    }

    /// The column of a batch of `rows` rows (the absent cells after its last value appended).
    /// A column with no cell in the batch (44 of a lean batch's 90 on claude) is an array of
    /// `zeros` ([`absent_array`]: `rows + 1` zero words at least), one for all the columns of
    /// its kind (`absent`, by [`Col::kind`]), instead of buffers of its own filled with zeros
    /// (page faults on fresh memory: 1.5 MiB a batch of 4385 rows).
    fn finish(
        &mut self,
        rows: usize,
        zeros: &Buffer,
        absent: &mut [Option<ArrayRef>; KINDS],
    ) -> Result<ArrayRef, Failure> {
        let len = self.b.len();
        if len == 0 && rows > 0 && zeros.len() / 8 > rows {
            if let Some(slot) = absent.get_mut(self.b.kind(self.nullable)) {
                if let Some(a) = slot {
                    return Ok(Arc::clone(a));
                }
                let a = absent_array(&self.b, self.nullable, rows, zeros)?;
                *slot = Some(Arc::clone(&a));
                return Ok(a);
            }
        }
        if len < rows {
            self.b.absent(self.nullable, rows - len)?;
        }
        self.b.finish()
    }
}

/// The kinds of column of [`Col::kind`].
const KINDS: usize = 7;

/// `rows` absent cells of a column like `col` (as [`Col::absent`] appends them: `false` in a
/// non-null flag column, else null), every buffer a view of `zeros` (at least `rows + 1` zero
/// words, 8-byte aligned): offsets all 0, values 0, validity and flag bits unset.
fn absent_array(
    col: &Col,
    nullable: bool,
    rows: usize,
    zeros: &Buffer,
) -> Result<ArrayRef, Failure> {
    let bits = || BooleanBuffer::new(zeros.clone(), 0, rows);
    let nulls = || Some(NullBuffer::new(bits()));
    Ok(match col {
        Col::Str(_) => Arc::new(LargeStringArray::try_new(
            OffsetBuffer::new(ScalarBuffer::new(zeros.clone(), 0, rows + 1)),
            Buffer::from_vec(Vec::<u8>::new()),
            nulls(),
        )?),
        Col::U64(_) => Arc::new(PrimitiveArray::<UInt64Type>::try_new(
            ScalarBuffer::new(zeros.clone(), 0, rows),
            nulls(),
        )?),
        Col::I64(_) => Arc::new(PrimitiveArray::<Int64Type>::try_new(
            ScalarBuffer::new(zeros.clone(), 0, rows),
            nulls(),
        )?),
        Col::F64(_) => Arc::new(PrimitiveArray::<Float64Type>::try_new(
            ScalarBuffer::new(zeros.clone(), 0, rows),
            nulls(),
        )?),
        Col::Time(_) => Arc::new(
            PrimitiveArray::<TimestampMicrosecondType>::try_new(
                ScalarBuffer::new(zeros.clone(), 0, rows),
                nulls(),
            )?
            .with_timezone(UTC),
        ),
        Col::Bool(..) => Arc::new(BooleanArray::new(
            bits(),
            nullable.then(|| NullBuffer::new(bits())),
        )),
    })
}

const S: DataType = DataType::LargeUtf8;
const UTC: &str = "UTC";

/// The columns of one field (docs/arrow.md), appended to `out`: name, type, nullable.
fn field_columns(f: &Field, parent: Option<&str>, out: &mut Vec<arrow_schema::Field>) {
    let c = f.column(parent);
    let nested = parent.is_some();
    let required = !nested && (ALWAYS.contains(&f.name) || matches!(f.ty, Ty::Raw));
    let mut col = |name: String, dt: DataType, nullable: bool| {
        out.push(arrow_schema::Field::new(name, dt, nullable));
    };
    match f.ty {
        Ty::Str | Ty::Text | Ty::Raw => col(c, S, !required),
        Ty::UInt => col(c, DataType::UInt64, !required),
        Ty::Bool => col(c, DataType::Boolean, true),
        Ty::Flag => col(c, DataType::Boolean, false),
        Ty::Int => {
            col(c.clone(), DataType::Int64, true);
            col(format!("{c}_json"), S, true);
        }
        Ty::Float => {
            col(c.clone(), DataType::Float64, true);
            col(format!("{c}_json"), S, true);
        }
        Ty::Time => {
            let ts = DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into()));
            col(c.clone(), ts, true);
            col(format!("{c}_text"), S, true);
        }
        Ty::OptStr => {
            col(format!("has_{c}"), DataType::Boolean, false);
            col(c, S, true);
        }
        Ty::Json | Ty::List(_) | Ty::Parsed => col(c, S, true),
        Ty::Obj(sub) => sub.iter().for_each(|s| field_columns(s, Some(&c), out)),
    }
}

/// The schema of the batches of projection `sel` (docs/arrow.md): the columns of each selected
/// field of [`FIELDS`], in order.
pub fn schema_for(sel: Sel) -> SchemaRef {
    let mut cols = Vec::new();
    for (i, f) in FIELDS.iter().enumerate() {
        if sel.has(i) {
            field_columns(f, None, &mut cols);
        }
    }
    Arc::new(Schema::new(cols))
}

/// The schema of every field ([`schema_for`] of [`Sel::ALL`]).
pub fn schema() -> SchemaRef {
    schema_for(Sel::ALL)
}

/// The text of JSON the writers produced (always UTF-8; `None` would be a writer bug).
fn utf8(b: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(b).ok()
}

/// A count as an int64 cell, and whether that cell is the exact value (else the value's JSON
/// text goes beside it): an integer in range, or an integral float in range (not exact).
fn count_cell(n: Num) -> (Option<i64>, bool) {
    match n {
        Num::Int(i) => match i64::try_from(i) {
            Ok(i) => (Some(i), true),
            Err(_) => (None, false),
        },
        Num::Float(f) => {
            let integral = f.fract() == 0.0 && f.abs() < 9.0e18;
            (integral.then_some(f as i64), false)
        }
    }
}

fn value_num(v: &Value<'_>) -> Option<Num> {
    match v {
        Value::Int(i) => Some(Num::Int(i128::from(*i))),
        Value::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

fn write_num(out: &mut Vec<u8>, n: Num) {
    match n {
        Num::Int(i) => write_i128(out, i),
        Num::Float(f) => write_f64(out, f),
    }
}

/// An RFC 3339 / ISO 8601 date-time (`YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM|±HHMM]`, `T`
/// or a space; no zone: UTC) as microseconds since the epoch; `None` when it is not one.
pub fn timestamp_micros(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let d = b.get(from..from + len)?;
        d.iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let month_days = *days_in.get(usize::try_from(mo - 1).ok()?)?;
    if !(1..=12).contains(&mo) || !(1..=month_days).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut at = 19;
    let mut micros = 0i64;
    if sep(at, b".,") {
        at += 1;
        let digits = b
            .get(at..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        let frac = num(at, digits.min(6))?;
        micros = frac * 10i64.pow(6 - digits.min(6) as u32);
        at += digits;
    }
    let offset_s = match b.get(at..) {
        None | Some([]) => 0,
        Some([b'Z' | b'z']) => 0,
        Some([sign @ (b'+' | b'-'), rest @ ..]) => {
            let (oh, om) = match rest {
                [_, _, b':', _, _] => (num(at + 1, 2)?, num(at + 4, 2)?),
                [_, _, _, _] => (num(at + 1, 2)?, num(at + 3, 2)?),
                [_, _] => (num(at + 1, 2)?, 0),
                _ => return None,
            };
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    // days from the civil date (Howard Hinnant's algorithm)
    let yy = if mo <= 2 { y - 1 } else { y };
    let era = yy.div_euclid(400);
    let yoe = yy - era * 400;
    let doy = (153 * (if mo > 2 { mo - 3 } else { mo + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_s;
    secs.checked_mul(1_000_000)?.checked_add(micros)
}

/// The Arrow [`Sink`]: finished batches in `batches`.
pub struct ArrowSink {
    cols: Vec<Column>,
    /// the first column of each field of [`FIELDS`] (`usize::MAX`: not selected)
    top: Vec<usize>,
    schema: SchemaRef,
    sel: Sel,
    rows: usize,
    bytes: usize,
    batch_rows: usize,
    pub batches: Vec<RecordBatch>,
    /// scratch: the line's `parsed` JSON, and one cell's JSON
    parsed: Vec<u8>,
    json: Vec<u8>,
    /// input bytes still expected ([`ArrowSink::expect`]), and seen since the last cut
    expected: usize,
    seen: usize,
    /// the input seen (since the last cut) at which the columns' room is next looked at
    /// ([`ArrowSink::regrow`])
    look_at: usize,
    /// the `parsed` column, when selected
    parsed_col: Option<usize>,
    /// the columns sized for the input ahead ([`ArrowSink::presize`]): `raw` and `parsed`,
    /// or without them (a lean batch) `text` and `tool_result`
    big: [Option<usize>; 2],
    /// Once set (by another thread), [`crate::sink::feed`] stops at its next window of input
    /// with [`Failure::Cancelled`]: a long feed (a 16 MiB chunk of junk lines is millions of
    /// rows) is given up within about 64 KiB of input.
    pub cancel: Option<Arc<AtomicBool>>,
    /// zero words shared by the batches' columns without a cell ([`ArrowSink::zeros`])
    zeros: Option<Buffer>,
}

/// The text room a builder of [`Col::new`] starts with (arrow-rs's default: 1 KiB).
const DEFAULT_ROOM: usize = 1024;

/// The least rows [`ArrowSink::presize`] gives a presized column (8 KiB of offsets).
const PRESIZE_ROWS: usize = 1024;

/// The columns' room is first looked at after this share of the expected input...
const FIRST_LOOK_SHARE: usize = 32;
/// ...but not before this many bytes (the densities of a few lines say little), nor after
/// this many.
const FIRST_LOOK_MIN: usize = 32 << 10;
const FIRST_LOOK_MAX: usize = 4 << 20;

/// `n` (what `seen` input bytes gave) scaled to `input` bytes, with a quarter to spare.
fn project(n: usize, input: usize, seen: usize) -> usize {
    let scaled = (n as u128 * input as u128 * 5) / (seen.max(1) as u128 * 4);
    usize::try_from(scaled).unwrap_or(usize::MAX)
}

impl ArrowSink {
    pub fn new(batch_rows: usize, sel: Sel) -> Self {
        let schema = schema_for(sel);
        let cols = schema
            .fields()
            .iter()
            .map(|f| Column {
                b: Col::new(f.data_type()),
                nullable: f.is_nullable(),
                room_bytes: DEFAULT_ROOM,
            })
            .collect();
        // the first column of each selected field
        let mut top = vec![usize::MAX; FIELDS.len()];
        let mut k = 0;
        for (i, f) in FIELDS.iter().enumerate() {
            if sel.has(i) {
                if let Some(t) = top.get_mut(i) {
                    *t = k;
                }
                k += f.ty.columns();
            }
        }
        let find = |name: &str| schema.fields().iter().position(|f| f.name() == name);
        let (raw_col, parsed_col) = (find("raw"), find("parsed"));
        let big = if raw_col.is_some() || parsed_col.is_some() {
            [raw_col, parsed_col]
        } else {
            [find("text"), find("tool_result")]
        };
        ArrowSink {
            cols,
            top,
            sel,
            big,
            parsed_col,
            schema,
            rows: 0,
            bytes: 0,
            batch_rows: batch_rows.max(1),
            batches: Vec::new(),
            parsed: Vec::new(),
            json: Vec::new(),
            expected: 0,
            seen: 0,
            cancel: None,
            look_at: usize::MAX,
            zeros: None,
        }
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// About `input` bytes are coming: size the `raw` and `parsed` columns for them now (each
    /// holds about the input, more when lines have several events; growing them instead copies
    /// the column at every doubling; capacity never written is never touched), or in a lean
    /// batch `text` and `tool_result` (at most about the input, and most of it in a stream of
    /// long texts and tool results), and the other text columns once a share of the input
    /// says how much each holds ([`ArrowSink::regrow`]).
    pub fn expect(&mut self, input: usize) {
        self.expected = input;
        self.look_at = Self::first_look(input);
        self.presize();
    }

    fn first_look(input: usize) -> usize {
        if input == 0 {
            return usize::MAX;
        }
        (input / FIRST_LOOK_SHARE).clamp(FIRST_LOOK_MIN, FIRST_LOOK_MAX)
    }

    fn presize(&mut self) {
        let bytes = self
            .expected
            .saturating_add(self.expected / 4)
            .min(BATCH_BYTES);
        // a row per KiB (lean claude 1.9, mixed 2.4), at least twice what the input before
        // the first look holds at a row a line of 64 bytes (`{"type":"x"}` and an event's
        // worth of keys): that look gives the rest ([`ArrowSink::regrow`]). Not a row per 64
        // bytes up front: that reserve (1.3 MiB of offsets for 8 MiB) was untouched but for
        // its first pages, fresh memory faulted in (under THP, 2 MiB zeroed at a time)
        let rows = (bytes / 1024)
            .max(PRESIZE_ROWS)
            .min(bytes / 64)
            .min(self.batch_rows);
        if bytes > 0 && self.rows == 0 {
            for i in self.big.into_iter().flatten() {
                if let Some(c) = self.cols.get_mut(i) {
                    // a guess: when it does not fit, the column grows as it goes
                    if let Ok(b) = Strs::with_capacity(rows, bytes) {
                        c.b = Col::Str(b);
                        c.room_bytes = bytes;
                    }
                }
            }
        }
    }

    /// The input bytes the batch being built will have seen when it is cut, projected: the
    /// rest of the expected input, at most what fills `batch_rows` rows or [`BATCH_BYTES`] at
    /// the density so far.
    fn batch_input(&self) -> usize {
        let seen = self.seen.max(1);
        let by_rows = project(seen, self.batch_rows, self.rows.max(1));
        let by_bytes = project(seen, BATCH_BYTES, self.bytes.max(1));
        self.expected.min(by_rows).min(by_bytes)
    }

    /// Room in each text column for the rest of the batch, projected from what its input so
    /// far put there ([`Col::make_room`]; only a column whose projected text is well above its
    /// room, or that has cells and room for fewer rows than the batch projects), and in each
    /// column of numbers with cells for the rows projected ([`Col::make_rows`]); the next look
    /// at four times the input.
    fn regrow(&mut self) {
        self.look_at = self.seen.saturating_mul(4);
        let input = self.batch_input();
        let rows = project(self.rows, input, self.seen).min(self.batch_rows);
        for c in &mut self.cols {
            let bytes = project(c.b.text_len(), input, self.seen);
            let few_rows = match &c.b {
                Col::Str(b) => b.len() > 0 && b.rows_cap < rows,
                _ => false,
            };
            if few_rows || bytes > c.room_bytes.saturating_add(c.room_bytes / 2) {
                c.b.make_room(rows, bytes);
                c.room_bytes = c.room_bytes.max(bytes);
            }
            if c.b.len() > 0 {
                c.b.make_rows(rows);
            }
        }
    }

    /// Cut the rows built so far into a batch (nothing if there are none). The next batch's
    /// columns get the room this one's density projects for the rest of the input.
    pub fn flush(&mut self) -> Result<(), Failure> {
        if self.rows == 0 {
            return Ok(());
        }
        // both vectors reserved fallibly (a `collect` of `Result`s grows by doubling, and a
        // failed growth aborts the process: seen under RLIMIT_AS in tests/test_files.py)
        let mut texts: Vec<usize> = Vec::new();
        OutOfMemory::reserve(&mut texts, self.cols.len())?;
        texts.extend(self.cols.iter().map(|c| c.b.text_len()));
        let mut arrays: Vec<ArrayRef> = Vec::new();
        OutOfMemory::reserve(&mut arrays, self.cols.len())?;
        let zeros = self.zeros(self.rows)?;
        let mut absent: [Option<ArrayRef>; KINDS] = Default::default();
        for c in &mut self.cols {
            arrays.push(c.finish(self.rows, &zeros, &mut absent)?);
        }
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)?;
        OutOfMemory::reserve(&mut self.batches, 1)?;
        self.batches.push(batch);
        self.expected = self.expected.saturating_sub(self.seen);
        // the next batch: the rest of the input, at most what this one took
        let input = self.expected.min(self.seen);
        let rows = project(self.rows, input, self.seen).min(self.batch_rows);
        for (c, text) in self.cols.iter_mut().zip(texts) {
            let bytes = project(text, input, self.seen);
            if input > 0 {
                c.b.make_room(rows, bytes);
            }
            c.room_bytes = bytes;
        }
        self.rows = 0;
        self.seen = 0;
        self.bytes = 0;
        self.look_at = Self::first_look(self.expected);
        self.presize();
        Ok(())
    }

    /// At least `rows + 1` zero words, for the columns a batch of `rows` rows has no cell in
    /// ([`Column::finish`]): the last batch's when it is long enough (the buffer is never
    /// written: every array made of it only reads it).
    fn zeros(&mut self, rows: usize) -> Result<Buffer, OutOfMemory> {
        let words = rows.saturating_add(1);
        if let Some(z) = &self.zeros {
            if z.len() / 8 >= words {
                return Ok(z.clone());
            }
        }
        let mut v: Vec<i64> = Vec::new();
        OutOfMemory::reserve(&mut v, words)?;
        v.resize(words, 0);
        let z = Buffer::from_vec(v);
        self.zeros = Some(z.clone());
        Ok(z)
    }

    /// All batches, the last one cut.
    pub fn finish(mut self) -> Result<Vec<RecordBatch>, Failure> {
        self.flush()?;
        Ok(self.batches)
    }
}

/// The Arrow [`Writer`]: the cells of one row (`row`) of the fields the event has; a field's
/// columns are found from the table ([`Field::at`]), the columns of a field it has not left
/// alone ([`Column::at`]).
struct RowWriter<'w, 'r> {
    cols: &'w mut [Column],
    /// the first column of each top-level field ([`ArrowSink::top`])
    top: &'w [usize],
    /// inside an object: its first column
    base: Option<usize>,
    row: usize,
    json: &'w mut Vec<u8>,
    rec: &'w LineEvents<'r>,
    parsed: Option<&'w str>,
}

impl RowWriter<'_, '_> {
    /// The first column of field `f`.
    #[inline]
    fn first(&self, f: &Field) -> usize {
        match self.base {
            Some(b) => b + f.at,
            None => self.top.get(f.idx).copied().unwrap_or(usize::MAX),
        }
    }

    /// Column `k`, to append this row's cell.
    #[inline]
    fn col(&mut self, k: usize) -> Result<Option<&mut Col>, OutOfMemory> {
        let row = self.row;
        self.cols.get_mut(k).map(|c| c.at(row)).transpose()
    }

    /// A string cell of column `k`.
    #[inline]
    fn str(&mut self, k: usize, s: &str) -> Result<(), OutOfMemory> {
        match self.col(k)? {
            Some(c) => c.str(Some(s)),
            None => Ok(()),
        }
    }

    /// A JSON text cell of column `k` from `write` (into the scratch buffer).
    fn json_cell(&mut self, k: usize, write: impl FnOnce(&mut Vec<u8>)) -> Result<(), OutOfMemory> {
        self.json.clear();
        write(self.json);
        let row = self.row;
        match self.cols.get_mut(k) {
            Some(c) => c.at(row)?.str(utf8(self.json)),
            None => Ok(()),
        }
    }

    /// A count or float from column `k`: the typed cell and, when it is not the exact value,
    /// the JSON text in the next column.
    fn number(&mut self, k: usize, v: Val<'_>, float: bool) -> Result<(), OutOfMemory> {
        let n = match v {
            Val::Num(n) => Some(n),
            Val::Json(v) => value_num(v),
            _ => None,
        };
        let exact = match (n, float) {
            (Some(Num::Float(_)), true) => true,
            (Some(n), false) => count_cell(n).1,
            _ => false,
        };
        match (n, float) {
            (Some(n), false) => {
                if let Some(i) = count_cell(n).0 {
                    if let Some(Col::I64(b)) = self.col(k)? {
                        b.push(Some(i))?;
                    }
                }
            }
            (Some(n), true) => {
                let f = match n {
                    Num::Float(f) => f,
                    Num::Int(i) => i as f64,
                };
                if let Some(Col::F64(b)) = self.col(k)? {
                    b.push(Some(f))?;
                }
            }
            (None, _) => {}
        }
        match v {
            _ if exact => Ok(()),
            Val::Num(n) => self.json_cell(k + 1, |o| write_num(o, n)),
            Val::Json(v) => self.json_cell(k + 1, |o| write_value(o, v)),
            _ => Ok(()),
        }
    }
}

impl Writer for RowWriter<'_, '_> {
    type Error = OutOfMemory;

    fn put(&mut self, f: &'static Field, v: Val<'_>) -> Result<(), OutOfMemory> {
        let k = self.first(f);
        match (f.ty, v) {
            (Ty::Int, v) => self.number(k, v, false),
            (Ty::Float, v) => self.number(k, v, true),
            (Ty::Time, Val::Str(s)) => {
                if let Some(t) = timestamp_micros(s) {
                    if let Some(Col::Time(b)) = self.col(k)? {
                        b.push(Some(t))?;
                    }
                }
                self.str(k + 1, s)
            }
            (Ty::OptStr, v) => {
                if let Some(c) = self.col(k)? {
                    c.bool(true)?;
                }
                match v {
                    Val::Str(s) => self.str(k + 1, s),
                    _ => Ok(()),
                }
            }
            (_, Val::Obj(o)) => {
                let outer = self.base.replace(k);
                let walked = o.walk(self);
                self.base = outer;
                walked
            }
            (_, Val::Args(v)) => match self.rec.value_json(v) {
                Some(copied) => self.str(k, copied),
                None => self.json_cell(k, |o| write_value(o, v)),
            },
            (_, Val::Json(v)) => self.json_cell(k, |o| write_value(o, v)),
            (_, Val::SameAsText(t)) => match self.rec.string_json(t) {
                Some(copied) => self.str(k, copied),
                None => self.json_cell(k, |o| write_str(o, t)),
            },
            (_, Val::List(list)) => self.json_cell(k, |o| {
                o.push(b'[');
                for (i, obj) in list.objs().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    crate::jsonl::write_object(o, obj);
                }
                o.push(b']');
            }),
            (_, Val::Parsed) => match self.parsed {
                Some(parsed) => self.str(k, parsed),
                None => Ok(()),
            },
            (_, Val::Null) => Ok(()),
            (_, Val::Str(s) | Val::Text(s) | Val::Raw(s)) => self.str(k, s),
            (_, Val::UInt(n)) => match self.col(k)? {
                Some(Col::U64(b)) => b.push(Some(n)),
                _ => Ok(()),
            },
            (_, Val::Bool(x)) => match self.col(k)? {
                Some(c) => c.bool(x),
                None => Ok(()),
            },
            (_, Val::Num(n)) => self.json_cell(k, |o| write_num(o, n)),
        }
    }
}

/// Text bytes an event adds to the batch, roughly (the cut of [`BATCH_BYTES`]).
fn event_bytes(ev: &Event<'_>, rec: &LineEvents<'_>, parsed: usize, sel: Sel) -> usize {
    let raw = if sel.is_all() { rec.raw.len() } else { 0 };
    raw + parsed + ev.text.as_ref().map_or(0, |t| t.len()) + 256
}

impl Sink for ArrowSink {
    type Error = Failure;

    fn check(&self) -> Result<(), Failure> {
        match &self.cancel {
            Some(c) if c.load(Ordering::Relaxed) => Err(Failure::Cancelled),
            _ => Ok(()),
        }
    }

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), Failure> {
        self.seen += rec.raw.len() + 1;
        let mut parsed = std::mem::take(&mut self.parsed);
        parsed.clear();
        // a canonical line is its own `parsed` JSON
        let text = match (rec.parsed_text, rec.parsed) {
            _ if self.parsed_col.is_none() => None,
            (Some(t), _) => Some(t),
            (None, Some(v)) => {
                // about the line's size (growing it further is not fallible)
                OutOfMemory::reserve(&mut parsed, rec.raw.len().saturating_mul(2) + 64)?;
                write_value(&mut parsed, v);
                utf8(&parsed)
            }
            (None, None) => None,
        };
        for ev in &rec.events {
            let add = event_bytes(ev, rec, text.map_or(0, str::len), self.sel);
            if self.rows >= self.batch_rows || (self.rows > 0 && self.bytes + add > BATCH_BYTES) {
                self.flush()?;
            }
            let mut w = RowWriter {
                cols: &mut self.cols,
                top: &self.top,
                base: None,
                row: self.rows,
                json: &mut self.json,
                rec,
                parsed: text,
            };
            fields::event(&mut w, self.sel, ev, rec, *seq)?;
            self.rows += 1;
            self.bytes += add;
            *seq += 1;
        }
        self.parsed = parsed;
        if self.seen >= self.look_at {
            self.regrow();
        }
        Ok(())
    }
}

/// The rows of `batches` as one batch of `schema` (the columns' types are the five of
/// [`schema`]). Done here rather than with `arrow-select`'s `concat_batches`, which costs a
/// fifth of the build for this one call, and with the columns' fallible growth: a table that
/// does not fit twice is [`Failure::OutOfMemory`].
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch, Failure> {
    if let [one] = batches {
        return Ok(one.clone());
    }
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    let mut columns: Vec<ArrayRef> = Vec::new();
    OutOfMemory::reserve(&mut columns, schema.fields().len())?;
    for (i, field) in schema.fields().iter().enumerate() {
        let parts = batches.iter().map(|b| b.column(i));
        let mut col = match field.data_type() {
            DataType::LargeUtf8 => {
                let bytes = parts
                    .clone()
                    .map(|a| a.as_string::<i64>().values().len())
                    .sum();
                let mut b = Strs::with_capacity(rows, bytes)?;
                for a in parts {
                    b.append(a.as_string::<i64>())?;
                }
                Col::Str(b)
            }
            DataType::UInt64 => {
                let mut b = Prim::with_capacity(rows)?;
                for a in parts {
                    for v in a.as_primitive::<UInt64Type>() {
                        b.push(v)?;
                    }
                }
                Col::U64(b)
            }
            DataType::Int64 => {
                let mut b = Prim::with_capacity(rows)?;
                for a in parts {
                    for v in a.as_primitive::<Int64Type>() {
                        b.push(v)?;
                    }
                }
                Col::I64(b)
            }
            DataType::Float64 => {
                let mut b = Prim::with_capacity(rows)?;
                for a in parts {
                    for v in a.as_primitive::<Float64Type>() {
                        b.push(v)?;
                    }
                }
                Col::F64(b)
            }
            DataType::Boolean => {
                let (mut values, mut valid) =
                    (Bits::with_capacity(rows)?, Bits::with_capacity(rows)?);
                for a in parts {
                    for v in a.as_boolean() {
                        values.push(v.unwrap_or(false))?;
                        valid.push(v.is_some())?;
                    }
                }
                Col::Bool(values, valid)
            }
            DataType::Timestamp(..) => {
                let mut b = Prim::with_capacity(rows)?;
                for a in parts {
                    for v in a.as_primitive::<TimestampMicrosecondType>() {
                        b.push(v)?;
                    }
                }
                Col::Time(b)
            }
            other => {
                return Err(Failure::Arrow(ArrowError::NotYetImplemented(format!(
                    "concatenating {other} columns"
                ))))
            }
        };
        columns.push(col.finish()?);
    }
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(a: &ArrayRef) -> Vec<Option<String>> {
        a.as_string::<i64>()
            .iter()
            .map(|s| s.map(str::to_owned))
            .collect()
    }

    /// The builder keeps the buffers reserved for it with `try_reserve`: filled to its room,
    /// none of them has moved (a move would be the builder's own, infallible, growth); the
    /// next cell moves the column into a larger builder, cells kept.
    #[test]
    fn strings_fill_their_room_in_place() -> Result<(), Failure> {
        let mut s = Strs::with_capacity(100, 1000)?;
        assert!(s.rows_cap >= 100 && s.text_cap >= 1000);
        let at = |s: &Strs| {
            (
                s.b.values_slice().as_ptr(),
                s.b.offsets_slice().as_ptr(),
                s.b.validity_slice().map(<[u8]>::as_ptr),
            )
        };
        let before = at(&s);
        let big = "é".repeat(s.text_cap / 2) + &"x".repeat(s.text_cap % 2);
        let mut want = vec![Some(big.clone()), None];
        s.push(Some(&big))?;
        s.push(None)?;
        s.nulls(3)?;
        want.extend([None, None, None]);
        while s.len() < s.rows_cap {
            s.push(Some(""))?;
            want.push(Some(String::new()));
        }
        assert_eq!(at(&s), before);
        assert!(s.fits(0, 0) && !s.fits(1, 0) && !s.fits(0, 1));
        s.push(Some("more"))?;
        want.push(Some("more".into()));
        assert_ne!(at(&s).0, before.0);
        let a = s.finish();
        assert_eq!(cells(&a), want);
        assert_eq!(a.null_count(), 4);
        assert_eq!((s.rows_cap, s.text_cap), (0, 0));
        // no nulls, no validity bitmap (as arrow's builders give)
        let mut s = Strs::default();
        s.push(Some("a"))?;
        s.push(Some("b"))?;
        assert!(s.finish().nulls().is_none());
        Ok(())
    }

    /// A field's columns are where the table says ([`Field::at`], [`Ty::columns`]): in the
    /// schema of every field, and (top-level fields) in a projection's, from `ArrowSink::top`.
    #[test]
    fn columns_follow_the_table() {
        let all = schema();
        let mut k = 0;
        for f in &FIELDS {
            let mut cols = Vec::new();
            field_columns(f, None, &mut cols);
            assert_eq!(cols.len(), f.ty.columns(), "{}", f.name);
            assert_eq!(f.at, k, "{}", f.name);
            if let Ty::Obj(sub) = f.ty {
                let mut at = 0;
                for (i, s) in sub.iter().enumerate() {
                    assert_eq!((s.idx, s.at), (i, at), "{}.{}", f.name, s.name);
                    at += s.ty.columns();
                }
            }
            for c in &cols {
                assert_eq!(all.field(k).name(), c.name());
                k += 1;
            }
        }
        assert_eq!(k, all.fields().len());
        for sel in [
            Sel::lean(),
            Sel::names(["tool", "usage", "timestamp"]).unwrap_or(Sel::ALL),
        ] {
            let sink = ArrowSink::new(8, sel);
            let schema = sink.schema();
            for (i, f) in FIELDS.iter().enumerate() {
                let at = sink.top.get(i).copied().unwrap_or(usize::MAX);
                if !sel.has(i) {
                    assert_eq!(at, usize::MAX);
                    continue;
                }
                let mut cols = Vec::new();
                field_columns(f, None, &mut cols);
                for (j, c) in cols.iter().enumerate() {
                    assert_eq!(schema.field(at + j).name(), c.name());
                }
            }
        }
    }

    /// Room made for a batch keeps the cells so far.
    #[test]
    fn making_room_keeps_the_cells() -> Result<(), Failure> {
        let mut c = Col::Str(Strs::default());
        c.str(Some("a"))?;
        c.absent(true, 2)?;
        c.make_room(1000, 1 << 16);
        let Col::Str(s) = &c else {
            return Err(Failure::Cancelled);
        };
        assert!(s.rows_cap >= 1000 && s.text_cap >= 1 << 16);
        c.str(Some("b"))?;
        assert_eq!(
            cells(&c.finish()?),
            [Some("a".into()), None, None, Some("b".into())]
        );
        Ok(())
    }

    /// A column without a cell in its batch, made of the shared zeros, is the column of absent
    /// cells its builder makes: every type, nullable or not, any length.
    #[test]
    fn absent_columns_are_the_builders() -> Result<(), Failure> {
        let types = [
            S,
            DataType::UInt64,
            DataType::Int64,
            DataType::Float64,
            DataType::Boolean,
            DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
        ];
        let mut sink = ArrowSink::new(8, Sel::ALL);
        for rows in [1, 7, 8, 9, 64, 1000] {
            let zeros = sink.zeros(rows)?;
            for dt in &types {
                for nullable in [true, false] {
                    let mut built = Column {
                        b: Col::new(dt),
                        nullable,
                        room_bytes: 0,
                    };
                    built.b.absent(nullable, rows)?;
                    let want = built.b.finish()?;
                    let mut empty = Column {
                        b: Col::new(dt),
                        nullable,
                        room_bytes: 0,
                    };
                    let got = empty.finish(rows, &zeros, &mut Default::default())?;
                    assert_eq!(got.to_data(), want.to_data(), "{dt} {nullable} {rows}");
                    assert_eq!(got.null_count(), want.null_count());
                    assert_eq!(got.data_type(), want.data_type());
                    // built from the shared words, not a buffer of its own
                    assert!(got
                        .to_data()
                        .buffers()
                        .iter()
                        .all(|b| b.is_empty() || b.as_ptr() == zeros.as_ptr()));
                }
            }
        }
        // the columns of a kind share one array
        let zeros = sink.zeros(100)?;
        let mut absent = Default::default();
        let mut two = [S, S, DataType::Boolean].map(|dt| Column {
            b: Col::new(&dt),
            nullable: true,
            room_bytes: 0,
        });
        let [a, b, c] = &mut two;
        let (a, b, c) = (
            a.finish(100, &zeros, &mut absent)?,
            b.finish(100, &zeros, &mut absent)?,
            c.finish(100, &zeros, &mut absent)?,
        );
        assert!(Arc::ptr_eq(&a, &b) && !Arc::ptr_eq(&a, &c));
        // a shorter batch reuses the words; a longer one makes more
        let z = sink.zeros(10)?;
        assert_eq!(sink.zeros(5)?.as_ptr(), z.as_ptr());
        assert!(sink.zeros(2000)?.len() >= 2001 * 8);
        Ok(())
    }

    /// A column of numbers given room keeps its cells, and takes the rest without growing.
    #[test]
    fn numbers_given_room_keep_their_cells() -> Result<(), Failure> {
        let mut c = Col::new(&DataType::Int64);
        let cells = [Some(1i64), None, Some(-3)];
        for v in cells {
            if let Col::I64(b) = &mut c {
                b.push(v)?;
            }
        }
        c.make_rows(1000);
        let Col::I64(b) = &mut c else {
            panic!("not an int64 column")
        };
        assert!(b.values.capacity() >= 1000 && b.valid.bytes.capacity() >= 125);
        let (values, valid) = (b.values.as_ptr(), b.valid.bytes.as_ptr());
        for i in 3..1000 {
            b.push((i % 2 == 0).then_some(i))?;
        }
        assert_eq!((b.values.as_ptr(), b.valid.bytes.as_ptr()), (values, valid));
        let a = c.finish()?;
        let got: Vec<Option<i64>> = a.as_primitive::<Int64Type>().iter().collect();
        let want: Vec<Option<i64>> = cells
            .into_iter()
            .chain((3..1000).map(|i| (i % 2 == 0).then_some(i)))
            .collect();
        assert_eq!(got, want);
        Ok(())
    }

    /// Bits set a byte at a time are the bits set one by one.
    #[test]
    fn bits_by_bytes_are_bits_one_by_one() -> Result<(), OutOfMemory> {
        let runs = [1, 7, 0, 8, 3, 17, 1, 64, 5, 2, 9, 1, 30];
        for start in [false, true] {
            let (mut fast, mut slow) = (Bits::default(), Vec::new());
            let mut v = start;
            for (i, &n) in runs.iter().enumerate() {
                if i % 3 == 2 {
                    for _ in 0..n {
                        fast.push(v)?;
                    }
                } else {
                    fast.push_n(v, n)?;
                }
                slow.extend(std::iter::repeat_n(v, n));
                v = !v;
            }
            let mut want = vec![0u8; slow.len().div_ceil(8)];
            for (i, _) in slow.iter().enumerate().filter(|(_, b)| **b) {
                if let Some(b) = want.get_mut(i / 8) {
                    *b |= 1 << (i % 8);
                }
            }
            assert_eq!(fast.bytes, want);
            assert_eq!(fast.unset, slow.iter().filter(|b| !**b).count());
            assert_eq!(fast.finish().iter().collect::<Vec<_>>(), slow);
        }
        Ok(())
    }
}
