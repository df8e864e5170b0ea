//! The dialect interface and the closed set of compiled-in dialects.
//!
//! A dialect maps one parsed JSON object to events; it is pure per line, but for the one slot of
//! per-stream state a stream's engine keeps for it, its [`Context`] (the model and service tier
//! a codex rollout runs, named by its `turn_context` / `thread_settings_applied` lines and put
//! on its later usage readings). Adding a
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
/// mapped and read by [`Dialect::map_in`]. Each part is set by the last line before a point that
/// touches that part ([`Dialect::learn`] says which parts a line touched): a split range starts
/// with the parts found searching back from its cut, the rest from the previous range's start
/// ([`crate::split`]), a report checkpoint keeps it ([`crate::usage`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// The model the stream runs as its lines last named it (codex `turn_context`,
    /// `thread_settings_applied`).
    pub model: Option<String>,
    /// The speed its requests run at where a line set it (codex's service tier: `fast`), `None`
    /// for the standard one.
    pub speed: Option<&'static str>,
    /// Set by a reader that never reads `rateLimits` (the usage report's fold without the
    /// cache or `--limits`): a dialect may leave them out (what is not asked for is not
    /// computed). Not learned from lines; kept as the reader set it.
    pub skip_limits: bool,
}

/// The parts of a [`Context`] a line touched ([`Dialect::learn`]): bits of [`Context::MODEL`]
/// and [`Context::SPEED`].
pub type Parts = u8;

impl Context {
    pub const MODEL: Parts = 1;
    pub const SPEED: Parts = 2;
    /// Every part.
    pub const ALL: Parts = Context::MODEL | Context::SPEED;

    /// The speeds a context may hold (what [`Context::speed`] names), for a context given back
    /// from outside (a split plan's, a report checkpoint's).
    pub const SPEEDS: [&'static str; 3] = ["fast", "flex", "ultrafast"];

    /// The context of a `model` and a `speed` name given back from outside; `None` when the
    /// speed is not one of [`Context::SPEEDS`].
    pub fn of(model: Option<String>, speed: Option<&str>) -> Option<Context> {
        let speed = match speed {
            None => None,
            Some(s) => Some(*Context::SPEEDS.iter().find(|k| **k == s)?),
        };
        Some(Context {
            model,
            speed,
            ..Context::default()
        })
    }

    /// `self` with the `parts` of `other` over it.
    pub fn take(&mut self, other: &Context, parts: Parts) {
        if parts & Context::MODEL != 0 {
            self.model.clone_from(&other.model);
        }
        if parts & Context::SPEED != 0 {
            self.speed = other.speed;
        }
    }
}

/// One agent CLI's stream format.
pub trait Dialect {
    /// The events for one line whose JSON value is an object (`v.is_object()`); an empty result
    /// becomes `status/unknown`.
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>);

    /// Update `ctx` from an object line; the parts of it the line touched (default: no line
    /// touches any).
    fn learn(&self, v: &Value<'_>, ctx: &mut Context) -> Parts {
        let _ = (v, ctx);
        0
    }

    /// [`Dialect::map`] with the stream's context (default: the context is not read).
    fn map_in<'v>(&self, v: &'v Value<'v>, ctx: &Context, out: &mut Vec<Event<'v>>) {
        let _ = ctx;
        self.map(v, out)
    }

    /// Byte strings one of which every line touching the context holds in its text (the JSON
    /// as written, some of its bytes perhaps spelled as `\u00XX` escapes): lines without are
    /// skipped by a split's search for the context at a cut. Empty: no line touches it.
    fn context_marks(&self) -> &'static [&'static [u8]] {
        &[]
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
    pub fn learn(&self, v: &Value<'_>, ctx: &mut Context) -> Parts {
        match self {
            AnyDialect::Claude => Claude.learn(v, ctx),
            AnyDialect::Cursor => Cursor.learn(v, ctx),
            AnyDialect::Codex => Codex.learn(v, ctx),
            AnyDialect::Pi => Pi.learn(v, ctx),
            AnyDialect::Grok => Grok.learn(v, ctx),
            AnyDialect::Opencode => Opencode.learn(v, ctx),
            AnyDialect::Mapped(_) => 0,
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

    pub fn context_marks(&self) -> &'static [&'static [u8]] {
        match self {
            AnyDialect::Claude => Claude.context_marks(),
            AnyDialect::Cursor => Cursor.context_marks(),
            AnyDialect::Codex => Codex.context_marks(),
            AnyDialect::Pi => Pi.context_marks(),
            AnyDialect::Grok => Grok.context_marks(),
            AnyDialect::Opencode => Opencode.context_marks(),
            AnyDialect::Mapped(_) => &[],
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
