//! The dialect interface and the closed set of compiled-in dialects.
//!
//! A dialect maps one parsed JSON object to events; it is pure per line, but for the one slot of
//! per-stream state a stream's engine keeps for it, its [`Context`] (the model a codex rollout
//! runs, named by its `turn_context` lines and put on its later usage readings). Adding a
//! dialect is one new file under `dialects/`, one variant here and its name in [`DIALECTS`].

use std::sync::Arc;

use crate::dialects::{
    claude::Claude, codex::Codex, cursor::Cursor, grok::Grok, opencode::Opencode, pi::Pi,
};
use crate::event::{Event, LineMeta};
use crate::mapping::{builtins, Mapping};
use crate::value::Value;

/// The nine dialect names of events/v1, in schema order.
pub const DIALECTS: [&str; 9] = [
    "claude", "cursor", "codex", "north", "pi", "grok", "canary", "opencode", "solweb",
];

/// What a stream's dialect learned from its earlier lines: owned by the stream's engine (one
/// per stream, empty at its start), updated by [`Dialect::learn`] before each object line is
/// mapped and read by [`Dialect::map_in`]. A line that touches the context sets all of it, so
/// the context at any point is the one the last touching line before it set: a split range
/// starts with that ([`crate::split`]), a report checkpoint keeps it ([`crate::usage`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The model the stream runs as its lines last named it (codex `turn_context`).
    pub model: Option<String>,
}

/// One agent CLI's stream format.
pub trait Dialect {
    /// The events for one line whose JSON value is an object (`v.is_object()`); an empty result
    /// becomes `status/unknown`.
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>);

    /// Update `ctx` from an object line; true when the line touches it (default: no line does).
    fn learn(&self, v: &Value<'_>, ctx: &mut Context) -> bool {
        let _ = (v, ctx);
        false
    }

    /// [`Dialect::map`] with the stream's context (default: the context is not read).
    fn map_in<'v>(&self, v: &'v Value<'v>, ctx: &Context, out: &mut Vec<Event<'v>>) {
        let _ = ctx;
        self.map(v, out)
    }

    /// Bytes that every line touching the context holds in its text (the JSON as written, some
    /// of them perhaps spelled as `\u00XX` escapes): lines without are skipped by a split's
    /// search for the context at a cut. `None`: no line touches it.
    fn context_mark(&self) -> Option<&'static [u8]> {
        None
    }

    /// Line-level fields (session id, parent tool use, native type).
    fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        LineMeta {
            native_type: v.str_at("type"),
            ..LineMeta::default()
        }
    }
}

/// A compiled-in dialect, or one defined by a mapping file (built in or the user's).
#[derive(Debug, Clone, PartialEq)]
pub enum AnyDialect {
    Claude,
    Cursor,
    Codex,
    Pi,
    Grok,
    Opencode,
    Mapped(Arc<Mapping>),
}

/// Why a dialect name was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    Unknown(String),
    NotImplemented(String),
}

impl AnyDialect {
    pub fn from_name(name: &str) -> Result<Self, NameError> {
        match name {
            "claude" => Ok(AnyDialect::Claude),
            "cursor" => Ok(AnyDialect::Cursor),
            "codex" => Ok(AnyDialect::Codex),
            "pi" => Ok(AnyDialect::Pi),
            "grok" => Ok(AnyDialect::Grok),
            "opencode" => Ok(AnyDialect::Opencode),
            n if builtins().iter().any(|m| m.dialect == n) => {
                let m = builtins().iter().find(|m| m.dialect == n).cloned();
                m.map(AnyDialect::Mapped)
                    .ok_or_else(|| NameError::NotImplemented(n.to_owned()))
            }
            n if DIALECTS.contains(&n) => Err(NameError::NotImplemented(n.to_owned())),
            n => Err(NameError::Unknown(n.to_owned())),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            AnyDialect::Claude => "claude",
            AnyDialect::Cursor => "cursor",
            AnyDialect::Codex => "codex",
            AnyDialect::Pi => "pi",
            AnyDialect::Grok => "grok",
            AnyDialect::Opencode => "opencode",
            AnyDialect::Mapped(m) => m.dialect,
        }
    }

    pub fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        match self {
            AnyDialect::Claude => Claude.map(v, out),
            AnyDialect::Cursor => Cursor.map(v, out),
            AnyDialect::Codex => Codex.map(v, out),
            AnyDialect::Pi => Pi.map(v, out),
            AnyDialect::Grok => Grok.map(v, out),
            AnyDialect::Opencode => Opencode.map(v, out),
            AnyDialect::Mapped(m) => m.map(v, out),
        }
    }

    /// [`Dialect::learn`] (a mapping file keeps no context).
    pub fn learn(&self, v: &Value<'_>, ctx: &mut Context) -> bool {
        match self {
            AnyDialect::Claude => Claude.learn(v, ctx),
            AnyDialect::Cursor => Cursor.learn(v, ctx),
            AnyDialect::Codex => Codex.learn(v, ctx),
            AnyDialect::Pi => Pi.learn(v, ctx),
            AnyDialect::Grok => Grok.learn(v, ctx),
            AnyDialect::Opencode => Opencode.learn(v, ctx),
            AnyDialect::Mapped(_) => false,
        }
    }

    pub fn map_in<'v>(&self, v: &'v Value<'v>, ctx: &Context, out: &mut Vec<Event<'v>>) {
        match self {
            AnyDialect::Claude => Claude.map_in(v, ctx, out),
            AnyDialect::Cursor => Cursor.map_in(v, ctx, out),
            AnyDialect::Codex => Codex.map_in(v, ctx, out),
            AnyDialect::Pi => Pi.map_in(v, ctx, out),
            AnyDialect::Grok => Grok.map_in(v, ctx, out),
            AnyDialect::Opencode => Opencode.map_in(v, ctx, out),
            AnyDialect::Mapped(m) => m.map(v, out),
        }
    }

    pub fn context_mark(&self) -> Option<&'static [u8]> {
        match self {
            AnyDialect::Claude => Claude.context_mark(),
            AnyDialect::Cursor => Cursor.context_mark(),
            AnyDialect::Codex => Codex.context_mark(),
            AnyDialect::Pi => Pi.context_mark(),
            AnyDialect::Grok => Grok.context_mark(),
            AnyDialect::Opencode => Opencode.context_mark(),
            AnyDialect::Mapped(_) => None,
        }
    }

    pub fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        match self {
            AnyDialect::Claude => Claude.meta(v),
            AnyDialect::Cursor => Cursor.meta(v),
            AnyDialect::Codex => Codex.meta(v),
            AnyDialect::Pi => Pi.meta(v),
            AnyDialect::Grok => Grok.meta(v),
            AnyDialect::Opencode => Opencode.meta(v),
            AnyDialect::Mapped(m) => m.meta(v),
        }
    }
}

/// Test helper shared by the dialect modules: map one JSON line and check its events.
#[cfg(test)]
pub(crate) fn check_line(d: &impl Dialect, line: &str, check: impl FnOnce(&[Event<'_>])) {
    let Ok((v, _)) = crate::parse::parse(line) else {
        panic!("bad test json")
    };
    let mut out = Vec::new();
    d.map(&v, &mut out);
    check(&out);
}
