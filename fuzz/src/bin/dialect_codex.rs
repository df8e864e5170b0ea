//! Per-dialect target: a JSONL stream normalized as `codex` (structure-aware mutation of its
//! real lines). See `checkfu_fast_fuzz::dialect`.
#![no_main]

checkfu_fast_fuzz::dialect_target!("codex");
