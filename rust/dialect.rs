//! The dialect interface and the closed set of compiled-in dialects.
//!
//! A dialect maps one parsed JSON object to events; it is pure and stateless per line. Adding a
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

/// One agent CLI's stream format.
pub trait Dialect {
    /// The events for one line whose JSON value is an object (`v.is_object()`); an empty result
    /// becomes `status/unknown`.
    fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>);

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
