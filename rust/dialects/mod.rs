//! One module per dialect, each a unit struct implementing [`crate::dialect::Dialect`].

pub mod claude;
pub mod codex;
pub mod cursor;
pub mod grok;
pub mod opencode;
pub mod pi;
