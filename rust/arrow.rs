//! Events as Arrow record batches: one row per event, flat typed columns (docs/arrow.md).
//!
//! [`ArrowSink`] is the Arrow [`Sink`]: the same lines the dict and JSONL paths see, written
//! into column builders, cut into record batches of at most `batch_rows` rows (and about
//! [`BATCH_BYTES`] of text). Nested values (`tool.arguments`, `parsed`, `toolResult`, ...)
//! are JSON text written by the JSONL writer ([`crate::jsonl::write_value`]), so
//! `json.loads` of a cell gives the value of the event dict (integers of any size included).
//! Feature `arrow` (on with `python`).

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, LargeStringBuilder, UInt64Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, UInt64Type};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};

use crate::budget::OutOfMemory;
use crate::event::{Event, Num, ToolResult};
use crate::jsonl::write_value;
use crate::normalize::{LineEvents, V};
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
        }
    }
}

macro_rules! columns {
    ($($name:ident : $builder:ident = $dt:expr, $nullable:expr;)*) => {
        /// One builder per column, in schema order.
        struct Cols {
            $($name: $builder,)*
        }

        impl Cols {
            fn new() -> Self {
                Cols { $($name: $builder::new(),)* }
            }

            fn finish(&mut self) -> Vec<ArrayRef> {
                vec![$(Arc::new(self.$name.finish()) as ArrayRef,)*]
            }
        }

        /// The schema of every batch (docs/arrow.md).
        pub fn schema() -> SchemaRef {
            Arc::new(Schema::new(vec![
                $(Field::new(stringify!($name), $dt, $nullable),)*
            ]))
        }
    };
}

const S: DataType = DataType::LargeUtf8;

columns! {
    v: LargeStringBuilder = S, false;
    seq: UInt64Builder = DataType::UInt64, false;
    position: UInt64Builder = DataType::UInt64, false;
    dialect: LargeStringBuilder = S, false;
    kind: LargeStringBuilder = S, false;
    subtype: LargeStringBuilder = S, false;
    role: LargeStringBuilder = S, true;
    text: LargeStringBuilder = S, true;
    tool_name: LargeStringBuilder = S, true;
    tool_arguments: LargeStringBuilder = S, true;
    tool_id: LargeStringBuilder = S, true;
    tool_is_error: BooleanBuilder = DataType::Boolean, true;
    error_code: LargeStringBuilder = S, true;
    error_message: LargeStringBuilder = S, true;
    error_kind: LargeStringBuilder = S, true;
    retry_at: LargeStringBuilder = S, true;
    retry_after_ms: UInt64Builder = DataType::UInt64, true;
    usage_input_tokens: Int64Builder = DataType::Int64, true;
    usage_output_tokens: Int64Builder = DataType::Int64, true;
    usage_cached_tokens: Int64Builder = DataType::Int64, true;
    usage_cost_usd: Float64Builder = DataType::Float64, true;
    usage_model: LargeStringBuilder = S, true;
    usage_unknown: BooleanBuilder = DataType::Boolean, false;
    usage_json: LargeStringBuilder = S, true;
    usage_scope: LargeStringBuilder = S, true;
    message_id: LargeStringBuilder = S, true;
    delta: BooleanBuilder = DataType::Boolean, false;
    line_bytes: UInt64Builder = DataType::UInt64, true;
    encoding: LargeStringBuilder = S, true;
    stream_bytes: UInt64Builder = DataType::UInt64, true;
    tool_class: LargeStringBuilder = S, true;
    provider_tool_name: LargeStringBuilder = S, true;
    provider_arguments: LargeStringBuilder = S, true;
    tool_result: LargeStringBuilder = S, true;
    file_changes: LargeStringBuilder = S, true;
    subagent_id: LargeStringBuilder = S, true;
    subagent_phase: LargeStringBuilder = S, true;
    subagent_name: LargeStringBuilder = S, true;
    subagent_type: LargeStringBuilder = S, true;
    subagent_description: LargeStringBuilder = S, true;
    subagent_prompt: LargeStringBuilder = S, true;
    subagent_disposition: LargeStringBuilder = S, true;
    subagent_alias: LargeStringBuilder = S, true;
    tokens_before: LargeStringBuilder = S, true;
    tokens_after: LargeStringBuilder = S, true;
    retry: BooleanBuilder = DataType::Boolean, false;
    delta_only: BooleanBuilder = DataType::Boolean, false;
    reasoning_tokens: Int64Builder = DataType::Int64, true;
    reasoning_tokens_json: LargeStringBuilder = S, true;
    empty_result: BooleanBuilder = DataType::Boolean, false;
    answer: BooleanBuilder = DataType::Boolean, false;
    partial_arguments: LargeStringBuilder = S, true;
    continuation: BooleanBuilder = DataType::Boolean, false;
    session_id: LargeStringBuilder = S, true;
    timestamp: LargeStringBuilder = S, true;
    parent_tool_use_id: LargeStringBuilder = S, true;
    native_type: LargeStringBuilder = S, true;
    model_call_id: LargeStringBuilder = S, true;
    native_id: LargeStringBuilder = S, true;
    stop_reason: LargeStringBuilder = S, true;
    duration_ms: LargeStringBuilder = S, true;
    has_result_text: BooleanBuilder = DataType::Boolean, false;
    result_text: LargeStringBuilder = S, true;
    structured_output: LargeStringBuilder = S, true;
    repeats_error: BooleanBuilder = DataType::Boolean, false;
    partial: BooleanBuilder = DataType::Boolean, false;
    result_joins_messages: BooleanBuilder = DataType::Boolean, false;
    request_id: LargeStringBuilder = S, true;
    agent_id: LargeStringBuilder = S, true;
    sidechain: BooleanBuilder = DataType::Boolean, false;
    repaired_surrogates: UInt64Builder = DataType::UInt64, true;
    raw: LargeStringBuilder = S, false;
    parsed: LargeStringBuilder = S, true;
}

/// The text of JSON the writers produced (always UTF-8; `None` would be a writer bug).
fn utf8(b: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(b).ok()
}

/// A usage count as an int64 cell: an integer in range, or an integral float in range.
fn count_cell(n: Option<Num>) -> (Option<i64>, bool) {
    match n {
        None => (None, true),
        Some(Num::Int(i)) => match i64::try_from(i) {
            Ok(i) => (Some(i), true),
            Err(_) => (None, false),
        },
        Some(Num::Float(f)) => {
            let exact = f.fract() == 0.0 && f.abs() < 9.0e18;
            (exact.then_some(f as i64), false)
        }
    }
}

fn write_num(out: &mut Vec<u8>, n: Num) {
    match n {
        Num::Int(i) => write_i128(out, i),
        Num::Float(f) => write_f64(out, f),
    }
}

/// The Arrow [`Sink`]: finished batches in `batches`.
pub struct ArrowSink {
    cols: Cols,
    schema: SchemaRef,
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
}

impl ArrowSink {
    pub fn new(batch_rows: usize) -> Self {
        ArrowSink {
            cols: Cols::new(),
            schema: schema(),
            rows: 0,
            bytes: 0,
            batch_rows: batch_rows.max(1),
            batches: Vec::new(),
            parsed: Vec::new(),
            json: Vec::new(),
            expected: 0,
            seen: 0,
        }
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// About `input` bytes are coming: size the `raw` and `parsed` columns for them now (each
    /// holds about the input, more when lines have several events; growing them instead copies
    /// the column at every doubling; capacity never written is never touched).
    pub fn expect(&mut self, input: usize) {
        self.expected = input;
        self.presize();
    }

    fn presize(&mut self) {
        let bytes = self
            .expected
            .saturating_add(self.expected / 4)
            .min(BATCH_BYTES);
        let rows = (bytes / 256).min(self.batch_rows);
        if bytes > 0 && self.rows == 0 {
            self.cols.raw = LargeStringBuilder::with_capacity(rows, bytes);
            self.cols.parsed = LargeStringBuilder::with_capacity(rows, bytes);
        }
    }

    /// Cut the rows built so far into a batch (nothing if there are none).
    pub fn flush(&mut self) -> Result<(), Failure> {
        if self.rows == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(self.schema.clone(), self.cols.finish())?;
        OutOfMemory::reserve(&mut self.batches, 1)?;
        self.batches.push(batch);
        self.rows = 0;
        self.expected = self.expected.saturating_sub(self.seen);
        self.seen = 0;
        self.bytes = 0;
        self.presize();
        Ok(())
    }

    /// All batches, the last one cut.
    pub fn finish(mut self) -> Result<Vec<RecordBatch>, Failure> {
        self.flush()?;
        Ok(self.batches)
    }

    /// A JSON text cell from `write` (into the scratch buffer).
    fn json_cell(json: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) -> Option<&str> {
        json.clear();
        write(json);
        utf8(json)
    }

    fn event(&mut self, ev: &Event<'_>, rec: &LineEvents<'_>, seq: u64, parsed: Option<&str>) {
        let c = &mut self.cols;
        let json = &mut self.json;
        c.v.append_value(V);
        c.seq.append_value(seq);
        c.position.append_value(rec.position);
        c.dialect.append_value(rec.dialect);
        c.kind.append_value(ev.kind);
        c.subtype.append_value(&ev.subtype);
        c.role.append_option(ev.role);
        c.text.append_option(ev.text.as_deref());
        let tool = ev.tool.as_ref();
        c.tool_name.append_option(tool.map(|t| t.name.as_ref()));
        let args = tool.and_then(|t| t.arguments);
        c.tool_arguments
            .append_option(args.and_then(|a| Self::json_cell(json, |o| write_value(o, a))));
        c.tool_id.append_option(tool.and_then(|t| t.id));
        c.tool_is_error.append_option(tool.and_then(|t| t.is_error));
        let err = ev.error.as_ref();
        c.error_code.append_option(err.map(|e| e.code.as_ref()));
        c.error_message
            .append_option(err.map(|e| e.message.as_ref()));
        c.error_kind.append_option(err.map(|e| e.kind));
        c.retry_at.append_option(ev.retry_at.as_deref());
        c.retry_after_ms.append_option(ev.retry_after_ms);
        match &ev.usage {
            Some(u) => {
                let (input, a) = count_cell(u.input);
                let (output, b) = count_cell(u.output);
                let (cached, d) = count_cell(u.cached);
                c.usage_input_tokens.append_option(input);
                c.usage_output_tokens.append_option(output);
                c.usage_cached_tokens.append_option(cached);
                let (cost, e) = match u.cost {
                    None => (None, true),
                    Some(Num::Float(f)) => (Some(f), true),
                    Some(Num::Int(i)) => (Some(i as f64), false),
                };
                c.usage_cost_usd.append_option(cost);
                c.usage_model.append_value(&u.model);
                c.usage_unknown.append_value(u.unknown);
                if a && b && d && e {
                    c.usage_json.append_null();
                } else {
                    // the typed cells lose an int/float distinction or a big integer: the
                    // exact object, as the JSONL writer writes it
                    let cell = Self::json_cell(json, |o| {
                        o.push(b'{');
                        let mut first = true;
                        let fields = [
                            ("inputTokens", u.input),
                            ("outputTokens", u.output),
                            ("cachedTokens", u.cached),
                            ("costUsd", u.cost),
                        ];
                        for (k, n) in fields {
                            if let Some(n) = n {
                                if !first {
                                    o.push(b',');
                                }
                                first = false;
                                write_str(o, k);
                                o.push(b':');
                                write_num(o, n);
                            }
                        }
                        if !first {
                            o.push(b',');
                        }
                        o.extend_from_slice(b"\"model\":");
                        write_str(o, &u.model);
                        if u.unknown {
                            o.extend_from_slice(b",\"unknown\":true");
                        }
                        o.push(b'}');
                    });
                    c.usage_json.append_option(cell);
                }
            }
            None => {
                c.usage_input_tokens.append_null();
                c.usage_output_tokens.append_null();
                c.usage_cached_tokens.append_null();
                c.usage_cost_usd.append_null();
                c.usage_model.append_null();
                c.usage_unknown.append_value(false);
                c.usage_json.append_null();
            }
        }
        c.usage_scope.append_option(ev.usage_scope);
        c.message_id.append_option(ev.message_id);
        c.delta.append_value(ev.delta);
        c.line_bytes.append_option(ev.line_bytes);
        c.encoding.append_option(ev.encoding);
        c.stream_bytes.append_option(ev.stream_bytes);
        let x = ev.extra.as_deref();
        c.tool_class.append_option(x.and_then(|x| x.tool_class));
        c.provider_tool_name
            .append_option(x.and_then(|x| x.provider_tool_name.as_deref()));
        c.provider_arguments.append_option(
            x.and_then(|x| x.provider_arguments.as_ref())
                .and_then(|a| Self::json_cell(json, |o| write_value(o, a))),
        );
        c.tool_result
            .append_option(match x.and_then(|x| x.tool_result.as_ref()) {
                Some(ToolResult::Value(v)) => Self::json_cell(json, |o| write_value(o, v)),
                Some(ToolResult::Text) => {
                    let t = ev.text.as_deref().unwrap_or("");
                    match rec.string_json(t) {
                        Some(copied) => Some(copied),
                        None => Self::json_cell(json, |o| write_str(o, t)),
                    }
                }
                None => None,
            });
        let changes = x.map(|x| x.file_changes.as_slice()).unwrap_or_default();
        c.file_changes.append_option(if changes.is_empty() {
            None
        } else {
            Self::json_cell(json, |o| {
                o.push(b'[');
                for (i, (event, path, diff)) in changes.iter().enumerate() {
                    if i > 0 {
                        o.push(b',');
                    }
                    o.extend_from_slice(b"{\"event\":");
                    write_str(o, event);
                    o.extend_from_slice(b",\"path\":");
                    write_str(o, path);
                    if let Some(diff) = diff {
                        o.extend_from_slice(b",\"diff\":");
                        write_str(o, diff);
                    }
                    o.push(b'}');
                }
                o.push(b']');
            })
        });
        let sub = x.and_then(|x| x.subagent.as_ref());
        c.subagent_id.append_option(sub.map(|s| s.id.as_ref()));
        c.subagent_phase.append_option(sub.map(|s| s.phase));
        c.subagent_name
            .append_option(sub.and_then(|s| s.name.as_deref()));
        c.subagent_type
            .append_option(sub.and_then(|s| s.kind.as_deref()));
        c.subagent_description
            .append_option(sub.and_then(|s| s.description.as_deref()));
        c.subagent_prompt
            .append_option(sub.and_then(|s| s.prompt.as_deref()));
        c.subagent_disposition
            .append_option(sub.and_then(|s| s.disposition));
        c.subagent_alias.append_option(sub.and_then(|s| s.alias));
        c.tokens_before.append_option(
            x.and_then(|x| x.tokens_before)
                .and_then(|v| Self::json_cell(json, |o| write_value(o, v))),
        );
        c.tokens_after.append_option(
            x.and_then(|x| x.tokens_after)
                .and_then(|v| Self::json_cell(json, |o| write_value(o, v))),
        );
        c.retry.append_value(x.is_some_and(|x| x.retry));
        c.delta_only.append_value(x.is_some_and(|x| x.delta_only));
        let reasoning = x.and_then(|x| x.reasoning_tokens);
        // an integer in the int64 cell; any other value (a float count) also as exact JSON text
        let (count, exact) = match reasoning {
            Some(Value::Int(i)) => (Some(*i), true),
            Some(Value::Float(f)) => count_cell(Some(Num::Float(*f))),
            Some(_) => (None, false),
            None => (None, true),
        };
        c.reasoning_tokens.append_option(count);
        c.reasoning_tokens_json.append_option(match reasoning {
            Some(v) if !exact => Self::json_cell(json, |o| write_value(o, v)),
            _ => None,
        });
        c.empty_result
            .append_value(x.is_some_and(|x| x.empty_result));
        c.answer.append_value(x.is_some_and(|x| x.answer));
        c.partial_arguments
            .append_option(x.and_then(|x| x.partial_arguments));
        c.continuation
            .append_value(x.is_some_and(|x| x.continuation));
        let m = &rec.meta;
        c.session_id.append_option(m.session_id);
        c.timestamp.append_option(m.timestamp);
        c.parent_tool_use_id.append_option(m.parent_tool_use_id);
        c.native_type.append_option(m.native_type);
        c.model_call_id.append_option(m.model_call_id);
        c.native_id.append_option(m.native_id);
        c.stop_reason.append_option(m.stop_reason);
        c.duration_ms.append_option(
            m.duration_ms
                .and_then(|v| Self::json_cell(json, |o| write_value(o, v))),
        );
        c.has_result_text.append_value(m.result_text.is_some());
        c.result_text.append_option(m.result_text.flatten());
        c.structured_output.append_option(
            m.structured_output
                .and_then(|v| Self::json_cell(json, |o| write_value(o, v))),
        );
        c.repeats_error.append_value(m.repeats_error);
        c.partial.append_value(m.partial);
        c.result_joins_messages
            .append_value(m.result_joins_messages);
        c.request_id.append_option(m.request_id);
        c.agent_id.append_option(m.agent_id);
        c.sidechain.append_value(m.sidechain);
        c.repaired_surrogates
            .append_option((rec.repairs > 0).then_some(rec.repairs as u64));
        c.raw.append_value(rec.raw);
        c.parsed.append_option(parsed);
    }
}

/// Text bytes an event adds to the batch, roughly (the cut of [`BATCH_BYTES`]).
fn event_bytes(ev: &Event<'_>, rec: &LineEvents<'_>, parsed: usize) -> usize {
    rec.raw.len() + parsed + ev.text.as_ref().map_or(0, |t| t.len()) + 256
}

impl Sink for ArrowSink {
    type Error = Failure;

    fn line(&mut self, rec: &LineEvents<'_>, seq: &mut u64) -> Result<(), Failure> {
        self.seen += rec.raw.len() + 1;
        let mut parsed = std::mem::take(&mut self.parsed);
        parsed.clear();
        // a canonical line is its own `parsed` JSON
        let text = match (rec.parsed_text, rec.parsed) {
            (Some(t), _) => Some(t),
            (None, Some(v)) => {
                write_value(&mut parsed, v);
                utf8(&parsed)
            }
            (None, None) => None,
        };
        for ev in &rec.events {
            let add = event_bytes(ev, rec, text.map_or(0, str::len));
            if self.rows >= self.batch_rows || (self.rows > 0 && self.bytes + add > BATCH_BYTES) {
                self.flush()?;
            }
            self.event(ev, rec, *seq, text);
            self.rows += 1;
            self.bytes += add;
            *seq += 1;
        }
        self.parsed = parsed;
        Ok(())
    }
}

/// The rows of `batches` as one batch of `schema` (the columns' types are the five of
/// [`schema`]). Done here rather than with `arrow-select`'s `concat_batches`, which costs a
/// fifth of the build for this one call.
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch, Failure> {
    if let [one] = batches {
        return Ok(one.clone());
    }
    let rows = batches.iter().map(RecordBatch::num_rows).sum();
    let mut columns: Vec<ArrayRef> = Vec::new();
    OutOfMemory::reserve(&mut columns, schema.fields().len())?;
    for (i, field) in schema.fields().iter().enumerate() {
        let parts = batches.iter().map(|b| b.column(i));
        let column: ArrayRef = match field.data_type() {
            DataType::LargeUtf8 => {
                let bytes = parts
                    .clone()
                    .map(|a| a.as_string::<i64>().values().len())
                    .sum();
                let mut b = LargeStringBuilder::with_capacity(rows, bytes);
                parts.for_each(|a| b.extend(a.as_string::<i64>()));
                Arc::new(b.finish())
            }
            DataType::UInt64 => {
                let mut b = UInt64Builder::with_capacity(rows);
                parts.for_each(|a| b.extend(a.as_primitive::<UInt64Type>()));
                Arc::new(b.finish())
            }
            DataType::Int64 => {
                let mut b = Int64Builder::with_capacity(rows);
                parts.for_each(|a| b.extend(a.as_primitive::<Int64Type>()));
                Arc::new(b.finish())
            }
            DataType::Float64 => {
                let mut b = Float64Builder::with_capacity(rows);
                parts.for_each(|a| b.extend(a.as_primitive::<Float64Type>()));
                Arc::new(b.finish())
            }
            DataType::Boolean => {
                let mut b = BooleanBuilder::with_capacity(rows);
                parts.for_each(|a| b.extend(a.as_boolean()));
                Arc::new(b.finish())
            }
            other => {
                return Err(Failure::Arrow(ArrowError::NotYetImplemented(format!(
                    "concatenating {other} columns"
                ))))
            }
        };
        columns.push(column);
    }
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}
