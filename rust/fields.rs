//! The event's fields, declared once: names, order and types ([`FIELDS`] and the tables of the
//! nested objects), and the one walk over an event ([`walk`]) that drives every writer through
//! [`Writer`]: the dicts (`py/convert.rs`), JSONL ([`crate::jsonl`]) and Arrow
//! ([`crate::arrow`]). A new field is one row of a [`fields!`] table; a new output format is one
//! [`Writer`].
//!
//! A [`Sel`] (projection) picks the top-level fields a caller asked for; the walk skips the
//! others, so what is not asked for is not computed (no `parsed` text, no escaped `raw`).

use crate::event::{
    ErrorInfo, Event, Extra, Num, RateLimit, Subagent, Text, Tool, ToolResult, Usage,
};
use crate::normalize::{LineEvents, V};
use crate::value::Value;

/// What a field holds, and so what each writer makes of it (docs/events.md, docs/arrow.md).
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// A string.
    Str,
    /// A string of the line that the writers may copy from `parsed` (`text`).
    Text,
    /// An unsigned integer.
    UInt,
    /// `true` or `false` (`tool.isError`).
    Bool,
    /// `true`, or absent.
    Flag,
    /// A count: an integer as the stream gives it (int64 in Arrow; any other value beside it as
    /// JSON text).
    Int,
    /// A float (`usage.costUsd`; any other number beside it as JSON text in Arrow).
    Float,
    /// A timestamp, the text the CLI wrote (Arrow: `timestamp[us, UTC]` and the text).
    Time,
    /// A string or `null` (`resultText`).
    OptStr,
    /// Any JSON value: a tree (JSON text in Arrow and in projected JSONL).
    Json,
    /// An object with its own fields.
    Obj(&'static [Field]),
    /// A list of objects (JSON text in Arrow).
    List(&'static [Field]),
    /// The line as text.
    Raw,
    /// The line's JSON value (`null` when it is not JSON).
    Parsed,
}

/// One field: its key and its type. The dict writer's interned key comes with it.
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    /// Its row in its table.
    pub idx: usize,
    /// Its first Arrow column among its table's columns (every row of the table present: the
    /// sum of the [`Ty::columns`] of the rows before it).
    pub at: usize,
    #[cfg(feature = "python")]
    pub key: pyo3::sync::Interned,
}

impl std::fmt::Debug for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Field({:?}, {:?})", self.name, self.ty)
    }
}

impl Field {
    /// The Arrow column name of a top-level field: the key in snake case (`retryAfterMs` ->
    /// `retry_after_ms`); a nested field's column is its object's column, `_`, its own
    /// (`tool.isError` -> `tool_is_error`), the object's name said once (`error.errorKind` ->
    /// `error_kind`).
    pub fn column(&self, parent: Option<&str>) -> String {
        let own = snake(self.name);
        match parent {
            None => own,
            Some(p) if own.starts_with(p) && own.as_bytes().get(p.len()) == Some(&b'_') => own,
            Some(p) => format!("{p}_{own}"),
        }
    }
}

fn snake(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 4);
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            s.push('_');
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

impl Ty {
    /// How many Arrow columns a field of this type has (docs/arrow.md): a count, a float and a
    /// timestamp have their text beside them, an optional string its `has_` flag, an object
    /// the columns of its fields.
    pub const fn columns(self) -> usize {
        match self {
            Ty::Int | Ty::Float | Ty::Time | Ty::OptStr => 2,
            Ty::Obj(sub) => {
                let (mut i, mut n) = (0, 0);
                while i < sub.len() {
                    #[allow(clippy::indexing_slicing)]
                    let f = &sub[i];
                    n += f.ty.columns();
                    i += 1;
                }
                n
            }
            _ => 1,
        }
    }
}

/// A field's value on one event.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Str(&'a str),
    /// The event's `text` (a [`Ty::Text`] field).
    Text(&'a str),
    UInt(u64),
    Bool(bool),
    Num(Num),
    Null,
    Json(&'a Value<'a>),
    /// A value of the line's `parsed` tree (`tool.arguments`, a `toolResult` value, ...: a
    /// `&'v Value` the dialect took from the line, never a value it built), so the writers may
    /// copy its JSON text from `parsed` or from the line itself
    /// ([`crate::normalize::LineEvents::value_json`]).
    Args(&'a Value<'a>),
    /// `toolResult` that is the event's own `text`.
    SameAsText(&'a str),
    Obj(Obj<'a>),
    /// A [`Ty::List`] field's objects.
    List(List<'a>),
    Raw(&'a str),
    Parsed,
}

/// A file change: `(event, path, diff)`.
pub type Change<'a> = (&'static str, Text<'a>, Option<&'a str>);

/// The objects of a [`Ty::List`] field.
#[derive(Debug, Clone, Copy)]
pub enum List<'a> {
    Changes(&'a [Change<'a>]),
    RateLimits(&'a [RateLimit<'a>]),
}

impl<'a> List<'a> {
    /// Each object, in order.
    pub fn objs(self) -> impl Iterator<Item = Obj<'a>> {
        let (changes, limits): (&[Change<'a>], &[RateLimit<'a>]) = match self {
            List::Changes(c) => (c, &[]),
            List::RateLimits(r) => (&[], r),
        };
        changes
            .iter()
            .map(Obj::Change)
            .chain(limits.iter().map(Obj::RateLimit))
    }
}

/// A nested object of an event.
#[derive(Debug, Clone, Copy)]
pub enum Obj<'a> {
    Tool(&'a Tool<'a>),
    Error(&'a ErrorInfo<'a>),
    Usage(&'a Usage<'a>),
    Subagent(&'a Subagent<'a>),
    Change(&'a Change<'a>),
    RateLimit(&'a RateLimit<'a>),
}

impl Obj<'_> {
    /// Every field of the object, in order.
    #[inline]
    pub fn walk<W: Writer>(self, w: &mut W) -> Result<(), W::Error> {
        match self {
            Obj::Tool(t) => walk_tool(w, Sel::ALL, t),
            Obj::Error(e) => walk_error(w, Sel::ALL, e),
            Obj::Usage(u) => walk_usage(w, Sel::ALL, u),
            Obj::Subagent(s) => walk_subagent(w, Sel::ALL, s),
            Obj::Change(c) => walk_change(w, Sel::ALL, c),
            Obj::RateLimit(r) => walk_rate_limit(w, Sel::ALL, r),
        }
    }
}

/// An output format: takes each selected field of an event that the event has, in order (a
/// field the event has no key for is not given).
pub trait Writer {
    type Error;

    /// Field `f` of the event and its value.
    fn put(&mut self, f: &'static Field, v: Val<'_>) -> Result<(), Self::Error>;
}

/// A projection: the top-level fields (bit `i`: row `i` of [`FIELDS`]) a caller asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sel(u128);

/// Fields every projection keeps.
pub const ALWAYS: [&str; 6] = ["v", "seq", "position", "dialect", "kind", "subtype"];

impl Sel {
    /// Every field: the schema-valid events.
    pub const ALL: Sel = Sel(u128::MAX);

    #[inline]
    pub fn has(self, i: usize) -> bool {
        i < 128 && self.0 & (1u128 << i) != 0
    }

    /// Every field (today's events).
    #[inline]
    pub fn is_all(self) -> bool {
        self == Sel::ALL
    }

    /// Every field but `raw` and `parsed`.
    pub fn lean() -> Sel {
        Sel::names(
            FIELDS
                .iter()
                .map(|f| f.name)
                .filter(|n| !matches!(*n, "raw" | "parsed")),
        )
        .unwrap_or(Sel::ALL)
    }

    /// The fields named (plus [`ALWAYS`]); `Err(name)` for a name that is no field.
    pub fn names<'n>(names: impl IntoIterator<Item = &'n str>) -> Result<Sel, &'n str> {
        let mut bits = 0u128;
        for n in ALWAYS.into_iter().chain(names) {
            let i = FIELDS.iter().position(|f| f.name == n).ok_or(n)?;
            bits |= 1u128 << i;
        }
        let every = (1u128 << FIELDS.len()) - 1;
        Ok(if bits == every { Sel::ALL } else { Sel(bits) })
    }

    /// Whether `name` is selected. (The rows searched from the end: the names the writers ask
    /// for on every line, `raw` and `parsed`, are the last two; from the start each was ~500
    /// instructions a line.)
    pub fn has_name(self, name: &str) -> bool {
        FIELDS
            .iter()
            .rposition(|f| f.name == name)
            .is_some_and(|i| self.has(i))
    }
}

/// What the top-level getters read.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub ev: &'a Event<'a>,
    pub rec: &'a LineEvents<'a>,
    pub seq: u64,
    /// A projection (not every field): `lineBytes` on every event.
    pub projected: bool,
}

impl<'a> Ctx<'a> {
    #[inline]
    fn x(self) -> Option<&'a Extra<'a>> {
        self.ev.extra.as_deref()
    }
}

/// Declares a table of fields and its walk: `"key": type => |ctx| value`, one row per field in
/// output order; `value` is an `Option<Val>` (`None`: the event has no such key; `?` allowed).
macro_rules! fields {
    ($(#[$doc:meta])* $table:ident, $walk:ident, $lt:lifetime, $ctx:ty;
     $($name:literal : $ty:expr => |$c:ident| $get:expr;)*) => {
        $(#[$doc])*
        #[allow(clippy::indexing_slicing)]
        pub static $table: [Field; [$($name),*].len()] = {
            let mut t = [$(Field {
                name: $name,
                ty: $ty,
                idx: 0,
                at: 0,
                #[cfg(feature = "python")]
                key: pyo3::sync::Interned::new($name),
            },)*];
            // (indexing in a const block: an out-of-range index is a compile error)
            let (mut i, mut at) = (0, 0);
            while i < t.len() {
                t[i].idx = i;
                t[i].at = at;
                at += t[i].ty.columns();
                i += 1;
            }
            t
        };

        /// The walk of this table's fields over one value, in order (selected rows only).
        #[inline(always)]
        #[allow(unused_assignments)]
        pub fn $walk<$lt, W: Writer>(w: &mut W, sel: Sel, ctx: $ctx) -> Result<(), W::Error> {
            let mut i = 0usize;
            let mut rows = $table.iter();
            $(
                let f = rows.next();
                if let Some(f) = f.filter(|_| sel.has(i)) {
                    #[allow(clippy::redundant_closure_call)]
                    let v = (|$c: $ctx| -> Option<Val<$lt>> { $get })(ctx);
                    if let Some(v) = v {
                        w.put(f, v)?;
                    }
                }
                i += 1;
            )*
            Ok(())
        }
    };
}

fields! {
    /// The event's fields, in output order (`checkfu_fast.EVENT_FIELDS`).
    FIELDS, walk, 'a, Ctx<'a>;
    "v": Ty::Str => |_c| Some(Val::Str(V));
    "seq": Ty::UInt => |c| Some(Val::UInt(c.seq));
    "position": Ty::UInt => |c| Some(Val::UInt(c.rec.position));
    "dialect": Ty::Str => |c| Some(Val::Str(c.rec.dialect));
    "kind": Ty::Str => |c| Some(Val::Str(c.ev.kind));
    "subtype": Ty::Str => |c| Some(Val::Str(&c.ev.subtype));
    "role": Ty::Str => |c| c.ev.role.map(Val::Str);
    "text": Ty::Text => |c| c.ev.text.as_deref().map(Val::Text);
    "tool": Ty::Obj(&TOOL) => |c| c.ev.tool.as_ref().map(|t| Val::Obj(Obj::Tool(t)));
    "error": Ty::Obj(&ERROR) => |c| c.ev.error.as_ref().map(|e| Val::Obj(Obj::Error(e)));
    "retryAt": Ty::Str => |c| c.ev.retry_at.as_deref().map(Val::Str);
    "retryAfterMs": Ty::UInt => |c| c.ev.retry_after_ms.map(Val::UInt);
    "usage": Ty::Obj(&USAGE) => |c| c.ev.usage.as_ref().map(|u| Val::Obj(Obj::Usage(u)));
    "usageScope": Ty::Str => |c| c.ev.usage_scope.map(Val::Str);
    "messageId": Ty::Str => |c| c.ev.message_id.as_deref().map(Val::Str);
    "delta": Ty::Flag => |c| c.ev.delta.then_some(Val::Bool(true));
    "truncated": Ty::Flag => |c| c.ev.line_bytes.map(|_| Val::Bool(true));
    "lineBytes": Ty::UInt => |c| {
        c.ev.line_bytes.or(c.projected.then_some(c.rec.size)).map(Val::UInt)
    };
    "encoding": Ty::Str => |c| c.ev.encoding.map(Val::Str);
    "streamBytes": Ty::UInt => |c| c.ev.stream_bytes.map(Val::UInt);
    "toolClass": Ty::Str => |c| c.x()?.tool_class.map(Val::Str);
    "providerToolName": Ty::Str => |c| c.x()?.provider_tool_name.as_deref().map(Val::Str);
    "providerArguments": Ty::Json => |c| c.x()?.provider_arguments.as_ref().map(Val::Json);
    "toolResult": Ty::Json => |c| match c.x()?.tool_result.as_ref()? {
        ToolResult::Value(v) => Some(Val::Args(v)),
        ToolResult::Text => Some(Val::SameAsText(c.ev.text.as_deref().unwrap_or(""))),
    };
    "fileChanges": Ty::List(&CHANGE) => |c| {
        let changes = &c.x()?.file_changes;
        (!changes.is_empty()).then_some(Val::List(List::Changes(changes)))
    };
    "subagent": Ty::Obj(&SUBAGENT) => |c| c.x()?.subagent.as_ref().map(|s| Val::Obj(Obj::Subagent(s)));
    "tokensBefore": Ty::Int => |c| c.x()?.tokens_before.map(Val::Json);
    "tokensAfter": Ty::Int => |c| c.x()?.tokens_after.map(Val::Json);
    "retry": Ty::Flag => |c| c.x()?.retry.then_some(Val::Bool(true));
    "deltaOnly": Ty::Flag => |c| c.x()?.delta_only.then_some(Val::Bool(true));
    "reasoningTokens": Ty::Int => |c| c.x()?.reasoning_tokens.map(Val::Json);
    "cacheWriteTokens": Ty::Int => |c| c.x()?.cache_write_tokens.map(Val::Num);
    "cacheWrite1hTokens": Ty::Int => |c| c.x()?.cache_write_1h_tokens.map(Val::Num);
    "speed": Ty::Str => |c| c.x()?.speed.map(Val::Str);
    "rateLimits": Ty::List(&RATE_LIMIT) => |c| {
        let limits = &c.x()?.rate_limits;
        (!limits.is_empty()).then_some(Val::List(List::RateLimits(limits)))
    };
    "emptyResult": Ty::Flag => |c| c.x()?.empty_result.then_some(Val::Bool(true));
    "answer": Ty::Flag => |c| c.x()?.answer.then_some(Val::Bool(true));
    "partialArguments": Ty::Str => |c| c.x()?.partial_arguments.map(Val::Str);
    "continuation": Ty::Flag => |c| c.x()?.continuation.then_some(Val::Bool(true));
    "controlRequestId": Ty::Str => |c| c.x()?.control_request_id.map(Val::Str);
    "controlResponse": Ty::Json => |c| c.x()?.control_response.map(Val::Args);
    "backgroundTasks": Ty::Json => |c| c.x()?.background_tasks.map(Val::Args);
    "requiresAction": Ty::Json => |c| c.x()?.requires_action.as_ref().map(Val::Json);
    "sessionId": Ty::Str => |c| c.rec.meta.session_id.map(Val::Str);
    "timestamp": Ty::Time => |c| c.rec.meta.timestamp.map(Val::Str);
    "parentToolUseId": Ty::Str => |c| c.rec.meta.parent_tool_use_id.map(Val::Str);
    "nativeType": Ty::Str => |c| c.rec.meta.native_type.map(Val::Str);
    "modelCallId": Ty::Str => |c| c.rec.meta.model_call_id.map(Val::Str);
    "nativeId": Ty::Str => |c| c.rec.meta.native_id.map(Val::Str);
    "stopReason": Ty::Str => |c| c.rec.meta.stop_reason.map(Val::Str);
    "durationMs": Ty::Int => |c| c.rec.meta.duration_ms.map(Val::Json);
    "resultText": Ty::OptStr => |c| c.rec.meta.result_text.map(|t| t.map_or(Val::Null, Val::Str));
    "structuredOutput": Ty::Json => |c| c.rec.meta.structured_output.map(Val::Args);
    "repeatsError": Ty::Flag => |c| c.rec.meta.repeats_error.then_some(Val::Bool(true));
    "partial": Ty::Flag => |c| c.rec.meta.partial.then_some(Val::Bool(true));
    "resultJoinsMessages": Ty::Flag => |c| c.rec.meta.result_joins_messages.then_some(Val::Bool(true));
    "requestId": Ty::Str => |c| c.rec.meta.request_id.map(Val::Str);
    "agentId": Ty::Str => |c| c.rec.meta.agent_id.map(Val::Str);
    "sidechain": Ty::Flag => |c| c.rec.meta.sidechain.then_some(Val::Bool(true));
    "cwd": Ty::Str => |c| c.rec.meta.cwd.map(Val::Str);
    "repairedSurrogates": Ty::UInt => |c| (c.rec.repairs > 0).then_some(Val::UInt(c.rec.repairs as u64));
    "raw": Ty::Raw => |c| Some(Val::Raw(c.rec.raw));
    "parsed": Ty::Parsed => |_c| Some(Val::Parsed);
}

fields! {
    /// `tool`.
    TOOL, walk_tool, 'a, &'a Tool<'a>;
    "name": Ty::Str => |t| Some(Val::Str(&t.name));
    "arguments": Ty::Json => |t| t.arguments.map(Val::Args);
    "id": Ty::Str => |t| t.id.map(Val::Str);
    "isError": Ty::Bool => |t| t.is_error.map(Val::Bool);
}

fields! {
    /// `error`.
    ERROR, walk_error, 'a, &'a ErrorInfo<'a>;
    "code": Ty::Str => |e| Some(Val::Str(&e.code));
    "message": Ty::Str => |e| Some(Val::Str(&e.message));
    "errorKind": Ty::Str => |e| Some(Val::Str(e.kind));
}

fields! {
    /// `usage`.
    USAGE, walk_usage, 'a, &'a Usage<'a>;
    "inputTokens": Ty::Int => |u| u.input.map(Val::Num);
    "outputTokens": Ty::Int => |u| u.output.map(Val::Num);
    "cachedTokens": Ty::Int => |u| u.cached.map(Val::Num);
    "costUsd": Ty::Float => |u| u.cost.map(Val::Num);
    "model": Ty::Str => |u| Some(Val::Str(&u.model));
    "unknown": Ty::Flag => |u| u.unknown.then_some(Val::Bool(true));
}

fields! {
    /// `subagent`.
    SUBAGENT, walk_subagent, 'a, &'a Subagent<'a>;
    "id": Ty::Str => |s| Some(Val::Str(&s.id));
    "phase": Ty::Str => |s| Some(Val::Str(s.phase));
    "name": Ty::Str => |s| s.name.as_deref().map(Val::Str);
    "type": Ty::Str => |s| s.kind.as_deref().map(Val::Str);
    "description": Ty::Str => |s| s.description.as_deref().map(Val::Str);
    "prompt": Ty::Str => |s| s.prompt.as_deref().map(Val::Str);
    "disposition": Ty::Str => |s| s.disposition.map(Val::Str);
    "alias": Ty::Str => |s| s.alias.map(Val::Str);
}

fields! {
    /// One of `fileChanges`.
    CHANGE, walk_change, 'a, &'a Change<'a>;
    "event": Ty::Str => |c| Some(Val::Str(c.0));
    "path": Ty::Str => |c| Some(Val::Str(&c.1));
    "diff": Ty::Str => |c| c.2.map(Val::Str);
}

fields! {
    /// One of `rateLimits`.
    RATE_LIMIT, walk_rate_limit, 'a, &'a RateLimit<'a>;
    "window": Ty::Str => |r| Some(Val::Str(&r.window));
    "usedPercent": Ty::Float => |r| Some(Val::Num(r.used_percent));
    "resetsAt": Ty::Str => |r| r.resets_at.as_deref().map(Val::Str);
    "limitType": Ty::Str => |r| Some(Val::Str(&r.limit_type));
}

/// The walk of one event's selected fields into `w`.
#[inline]
pub fn event<W: Writer>(
    w: &mut W,
    sel: Sel,
    ev: &Event<'_>,
    rec: &LineEvents<'_>,
    seq: u64,
) -> Result<(), W::Error> {
    let ctx = Ctx {
        ev,
        rec,
        seq,
        projected: !sel.is_all(),
    };
    walk(w, sel, ctx)
}

/// The type names of [`Ty`] as `checkfu_fast` documents them (`_native.FIELD_TABLE`).
pub fn ty_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Str | Ty::Text => "str",
        Ty::UInt => "uint",
        Ty::Bool => "bool",
        Ty::Flag => "flag",
        Ty::Int => "int",
        Ty::Float => "float",
        Ty::Time => "time",
        Ty::OptStr => "optstr",
        Ty::Json => "json",
        Ty::Obj(_) => "object",
        Ty::List(_) => "list",
        Ty::Raw => "raw",
        Ty::Parsed => "parsed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_fit_a_selection() {
        assert!(FIELDS.len() <= 128);
        for (i, f) in FIELDS.iter().enumerate() {
            assert!(
                FIELDS.iter().skip(i + 1).all(|g| g.name != f.name),
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn selections() {
        assert_eq!(Sel::names(["raw", "parsed", "x"]), Err("x"));
        let every: Vec<&str> = FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(Sel::names(every), Ok(Sel::ALL));
        let lean = Sel::lean();
        assert!(!lean.is_all() && !lean.has_name("raw") && !lean.has_name("parsed"));
        assert!(lean.has_name("text") && lean.has_name("lineBytes"));
        let few = Sel::names(["text"]).unwrap_or(Sel::ALL);
        assert!(few.has_name("kind") && few.has_name("text") && !few.has_name("tool"));
        // the fields every projection keeps lead the table, in its order (the dict writer's
        // template starts every event dict with them)
        let lead: Vec<&str> = FIELDS.iter().take(ALWAYS.len()).map(|f| f.name).collect();
        assert_eq!(lead, ALWAYS);
    }

    #[test]
    fn columns() {
        let col = |t: &[Field], name: &str, parent: Option<&str>| {
            t.iter().find(|f| f.name == name).map(|f| f.column(parent))
        };
        assert_eq!(
            col(&FIELDS, "retryAfterMs", None).as_deref(),
            Some("retry_after_ms")
        );
        assert_eq!(
            col(&TOOL, "isError", Some("tool")).as_deref(),
            Some("tool_is_error")
        );
        assert_eq!(
            col(&ERROR, "errorKind", Some("error")).as_deref(),
            Some("error_kind")
        );
        assert_eq!(
            col(&ERROR, "code", Some("error")).as_deref(),
            Some("error_code")
        );
    }
}
