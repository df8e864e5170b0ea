//! checkfu_fast core: coding-agent CLI byte streams -> events/v1 events.
//!
//! The pipeline, one module per concern: [`framing`] (bytes -> lines) -> [`budget`] (lexical
//! depth/node scan) -> [`parse`] (strict JSON into a borrowed [`value::Value`]) -> [`dialect`]
//! (one file per CLI under [`dialects`], chosen by [`sniff`] for `auto`) -> [`event`]. The
//! [`normalize`] module wires them per line and per stream, [`sink`] assembles a stream's
//! output once for every output path; [`jsonl`] writes the events as JSONL without Python
//! objects; [`split`] cuts a large input at newlines into ranges normalized apart. No global
//! state; no Python here
//! except in `py` (feature `python`), which only translates.

#[cfg(feature = "arrow")]
pub mod arrow;
pub mod budget;
pub mod dialect;
pub mod dialects;
pub mod event;
pub mod fields;
pub mod framing;
pub mod input;
pub mod journal;
pub mod jsonl;
pub mod mapping;
pub mod normalize;
pub mod ordered;
pub mod parse;
pub mod report_json;
pub mod retry;
pub mod scan;
pub mod sink;
pub mod sniff;
pub mod split;
pub mod text;
pub mod usage;
pub mod usage_merge;
pub mod value;
pub mod walk;

#[cfg(feature = "python")]
mod py;
