//! Declarative dialect mappings (`checkfu-dialect/v1`): compile a mapping document, evaluate it
//! on a line. Mirrors `reference/mapping.py`; the language is in docs/mappings.md.
//!
//! The Python layer validates a mapping with precise, pointer-named messages before it reaches
//! this module; [`Mapping::compile`] still rejects anything malformed (never panics) so the core
//! is safe on its own. Evaluation allocates only for the events it builds.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::dialect::DIALECTS;
use crate::event::{
    classify, kind_for_status, nonneg_int, usage, ErrorInfo, Event, LineMeta, Subagent, Text, Tool,
    ToolResult,
};
use crate::parse;
use crate::value::Value;

/// A literal in a test: what `==` compares against (same JSON type required).
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    BigInt(String),
    Str(String),
}

impl Lit {
    fn from_value(v: &Value<'_>) -> Option<Lit> {
        Some(match v {
            Value::Null => Lit::Null,
            Value::Bool(b) => Lit::Bool(*b),
            Value::Int(i) => Lit::Int(*i),
            Value::BigInt(s) => Lit::BigInt((*s).to_owned()),
            Value::Str(s) => Lit::Str(s.to_string()),
            _ => return None,
        })
    }

    fn eq(&self, v: Option<&Value<'_>>) -> bool {
        match (self, v) {
            (Lit::Null, Some(Value::Null)) => true,
            (Lit::Bool(a), Some(Value::Bool(b))) => a == b,
            (Lit::Int(a), Some(Value::Int(b))) => a == b,
            (Lit::BigInt(a), Some(Value::BigInt(b))) => a == b,
            (Lit::Str(a), Some(Value::Str(b))) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Test {
    Eq(Lit),
    Ne(Lit),
    In(Vec<Lit>),
    Prefix(String),
    Exists(bool),
    Type(&'static str),
}

type Pointer = Vec<String>;

#[derive(Debug, Clone, PartialEq, Default)]
struct Cond(Vec<(Pointer, Test)>);

#[derive(Debug, Clone, PartialEq)]
enum Alt {
    Ptr(Pointer),
    Const(String),
}

/// A string field: alternatives tried in order.
#[derive(Debug, Clone, PartialEq)]
struct Str(Vec<Alt>);

#[derive(Debug, Clone, PartialEq)]
enum KindRule {
    Fixed(&'static str),
    Classify,
}

#[derive(Debug, Clone, PartialEq)]
struct Emit {
    kind: &'static str,
    subtype: String,
    role: Option<&'static str>,
    when: Option<Cond>,
    text: Option<Str>,
    delta: bool,
    message_id: Option<Str>,
    tool_name: Option<Str>,
    tool_args: Option<Pointer>,
    tool_id: Option<Str>,
    tool_is_error: Option<Pointer>,
    err_code: Option<Str>,
    err_message: Option<Str>,
    err_kind: KindRule,
    err_by: Option<Pointer>,
    err_map: Vec<(String, &'static str)>,
    err_status: Option<Pointer>,
    usage_in: Vec<Pointer>,
    usage_out: Vec<Pointer>,
    usage_cached: Option<Pointer>,
    usage_cost: Option<Pointer>,
    usage_model: Option<Str>,
    x: EmitExtras,
}

/// The oneshot extras of an EMIT (docs/mappings.md).
#[derive(Debug, Clone, PartialEq, Default)]
struct EmitExtras {
    tool_result: Option<Pointer>,
    tool_class: Option<&'static str>,
    provider_name: Option<Str>,
    provider_args: Option<Pointer>,
    tokens: Option<(Pointer, Pointer)>,
    file_change: Option<(Str, Str)>,
    subagent: Option<SubagentSpec>,
    retry: bool,
    delta_only: bool,
    empty_result: bool,
    answer: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct SubagentSpec {
    id: Str,
    phase: &'static str,
    name: Option<Str>,
    kind: Option<Str>,
    description: Option<Str>,
    disposition: Option<Str>,
}

/// The line extras of `meta`.
#[derive(Debug, Clone, PartialEq, Default)]
struct LineSpec {
    timestamp: Option<Str>,
    model_call_id: Option<Str>,
    native_id: Option<Str>,
    stop_reason: Option<Str>,
    result_text: Option<Str>,
    duration_ms: Vec<Pointer>,
    structured_output: Vec<Pointer>,
    partial: Option<Cond>,
    repeats_error: Option<Cond>,
    result_joins_messages: Option<Cond>,
}

const TOOL_CLASSES: [&str; 3] = ["shell", "filesystem", "mcp"];
const PHASES: [&str; 3] = ["spawned", "started", "ended"];
const FILE_EVENTS: [&str; 3] = ["create", "modify", "delete"];
const DISPOSITIONS: [&str; 3] = ["completed", "failed", "canceled"];
const META_KEYS: [&str; 12] = [
    "sessionId",
    "timestamp",
    "nativeType",
    "modelCallId",
    "nativeId",
    "stopReason",
    "resultText",
    "durationMs",
    "structuredOutput",
    "partial",
    "repeatsError",
    "resultJoinsMessages",
];

fn one_of(v: Option<&Value<'_>>, names: &[&'static str], at: &str) -> R<&'static str> {
    let s = v.and_then(Value::as_str);
    names
        .iter()
        .find(|n| Some(**n) == s)
        .copied()
        .ok_or_else(|| format!("{at}: expected one of {}", names.join(", ")))
}

fn flag(v: &Value<'_>, key: &str, at: &str) -> R<bool> {
    match v.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("{at}/{key}: expected true or false")),
    }
}

fn emit_extras(v: &Value<'_>, at: &str) -> R<EmitExtras> {
    let mut x = EmitExtras {
        retry: flag(v, "retry", at)?,
        delta_only: flag(v, "deltaOnly", at)?,
        empty_result: flag(v, "emptyResult", at)?,
        answer: flag(v, "answer", at)?,
        ..EmitExtras::default()
    };
    x.tool_result = v
        .get("toolResult")
        .map(|p| ptr_at(Some(p), at))
        .transpose()?;
    if let Some(c) = v.get("toolClass") {
        x.tool_class = Some(one_of(Some(c), &TOOL_CLASSES, &format!("{at}/toolClass"))?);
    }
    x.provider_name = opt_str(v, "providerToolName", at)?;
    x.provider_args = v
        .get("providerArguments")
        .map(|p| ptr_at(Some(p), at))
        .transpose()?;
    if let Some(c) = v.get("compaction") {
        obj(c, at, &["before", "after"])?;
        x.tokens = Some((ptr_at(c.get("before"), at)?, ptr_at(c.get("after"), at)?));
    }
    if let Some(f) = v.get("fileChange") {
        obj(f, at, &["event", "path"])?;
        let need = |k: &str| {
            f.get(k)
                .ok_or_else(|| format!("{at}/fileChange: missing {k}"))
                .and_then(|s| string_spec(s, at))
        };
        x.file_change = Some((need("event")?, need("path")?));
    }
    if let Some(sa) = v.get("subagent") {
        let w = format!("{at}/subagent");
        obj(
            sa,
            &w,
            &["id", "phase", "name", "type", "description", "disposition"],
        )?;
        x.subagent = Some(SubagentSpec {
            id: pointer_spec(sa.get("id").ok_or_else(|| format!("{w}: missing id"))?, &w)?,
            phase: one_of(sa.get("phase"), &PHASES, &format!("{w}/phase"))?,
            name: opt_str(sa, "name", &w)?,
            kind: opt_str(sa, "type", &w)?,
            description: opt_str(sa, "description", &w)?,
            disposition: opt_str(sa, "disposition", &w)?,
        });
    }
    Ok(x)
}

fn line_spec(m: &Value<'_>) -> R<LineSpec> {
    let at = "/meta";
    let cond_at = |k: &str| m.get(k).map(|c| cond(c, &format!("{at}/{k}"))).transpose();
    Ok(LineSpec {
        timestamp: opt_ptrs(m, "timestamp", at)?,
        model_call_id: opt_ptrs(m, "modelCallId", at)?,
        native_id: opt_ptrs(m, "nativeId", at)?,
        stop_reason: opt_ptrs(m, "stopReason", at)?,
        result_text: opt_ptrs(m, "resultText", at)?,
        duration_ms: ptrs_at(m.get("durationMs"), at)?,
        structured_output: ptrs_at(m.get("structuredOutput"), at)?,
        partial: cond_at("partial")?,
        repeats_error: cond_at("repeatsError")?,
        result_joins_messages: cond_at("resultJoinsMessages")?,
    })
}

#[derive(Debug, Clone, PartialEq)]
struct Rule {
    when: Cond,
    emits: Vec<Emit>,
}

/// A compiled mapping.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// One of the nine dialect names; what the events' `dialect` says.
    pub dialect: &'static str,
    sniff: Vec<Cond>,
    rules: Vec<Rule>,
    session_id: Option<Str>,
    native_type: Option<Str>,
    line: LineSpec,
}

type R<T> = Result<T, String>;

fn obj<'a, 'v>(v: &'a Value<'v>, at: &str, allowed: &[&str]) -> R<&'a [(Cow<'v, str>, Value<'v>)]> {
    let Value::Object(pairs) = v else {
        return Err(format!("{at}: expected an object"));
    };
    if let Some((k, _)) = pairs.iter().find(|(k, _)| !allowed.contains(&k.as_ref())) {
        return Err(format!("{at}: unknown key {k:?}"));
    }
    Ok(pairs)
}

fn pointer(text: &str, at: &str) -> R<Pointer> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err(format!("{at}: JSON pointer must start with '/': {text:?}"));
    };
    rest.split('/')
        .map(|raw| {
            if raw.replace("~0", "").replace("~1", "").contains('~') {
                return Err(format!("{at}: bad '~' escape in JSON pointer {text:?}"));
            }
            Ok(raw.replace("~1", "/").replace("~0", "~"))
        })
        .collect()
}

fn ptr_at(v: Option<&Value<'_>>, at: &str) -> R<Pointer> {
    match v.and_then(Value::as_str) {
        Some(s) => pointer(s, at),
        None => Err(format!("{at}: expected a JSON pointer string")),
    }
}

fn ptrs_at(v: Option<&Value<'_>>, at: &str) -> R<Vec<Pointer>> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|i| ptr_at(Some(i), at)).collect(),
        Some(one) => Ok(vec![ptr_at(Some(one), at)?]),
    }
}

fn lit(v: &Value<'_>, at: &str) -> R<Lit> {
    Lit::from_value(v).ok_or_else(|| format!("{at}: expected a string, integer, boolean or null"))
}

const TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "null", "object", "array",
];

fn test(v: &Value<'_>, at: &str) -> R<Test> {
    if let Some(l) = Lit::from_value(v) {
        return Ok(Test::Eq(l));
    }
    let pairs = obj(v, at, &["eq", "ne", "in", "prefix", "exists", "type"])?;
    let [(op, arg)] = pairs else {
        return Err(format!("{at}: a test has exactly one operator"));
    };
    Ok(match op.as_ref() {
        "eq" => Test::Eq(lit(arg, at)?),
        "ne" => Test::Ne(lit(arg, at)?),
        "in" => Test::In(
            arg.items()
                .iter()
                .map(|a| lit(a, at))
                .collect::<R<Vec<_>>>()?,
        ),
        "prefix" => Test::Prefix(
            arg.as_str()
                .ok_or_else(|| format!("{at}: prefix needs a string"))?
                .to_owned(),
        ),
        "exists" => match arg {
            Value::Bool(b) => Test::Exists(*b),
            _ => return Err(format!("{at}: exists needs true or false")),
        },
        _ => {
            let t = arg.as_str().and_then(|t| TYPES.iter().find(|x| **x == t));
            Test::Type(t.ok_or_else(|| format!("{at}: unknown type"))?)
        }
    })
}

fn cond(v: &Value<'_>, at: &str) -> R<Cond> {
    let Value::Object(pairs) = v else {
        return Err(format!("{at}: expected an object"));
    };
    pairs
        .iter()
        .map(|(k, t)| Ok((pointer(k, at)?, test(t, at)?)))
        .collect::<R<Vec<_>>>()
        .map(Cond)
}

fn string_spec(v: &Value<'_>, at: &str) -> R<Str> {
    string_spec_of(v, at, false)
}

/// A spec of JSON pointers only (fields whose value must come from the line).
fn pointer_spec(v: &Value<'_>, at: &str) -> R<Str> {
    string_spec_of(v, at, true)
}

fn string_spec_of(v: &Value<'_>, at: &str, pointers_only: bool) -> R<Str> {
    let one = |it: &Value<'_>| -> R<Alt> {
        if pointers_only && !it.as_str().is_some_and(|s| s.starts_with('/')) {
            return Err(format!("{at}: expected a JSON pointer"));
        }
        match it {
            Value::Str(s) if s.starts_with('/') => Ok(Alt::Ptr(pointer(s, at)?)),
            Value::Str(s) => Ok(Alt::Const(s.to_string())),
            Value::Object(_) => match it.str_at("const") {
                Some(c) if obj(it, at, &["const"]).is_ok() => Ok(Alt::Const(c.to_owned())),
                _ => Err(format!("{at}: bad string spec")),
            },
            _ => Err(format!("{at}: bad string spec")),
        }
    };
    let alts = match v {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect::<R<Vec<_>>>()?,
        Value::Array(_) => return Err(format!("{at}: empty string spec")),
        other => vec![one(other)?],
    };
    Ok(Str(alts))
}

fn opt_str(v: &Value<'_>, key: &str, at: &str) -> R<Option<Str>> {
    v.get(key)
        .map(|s| string_spec(s, &format!("{at}/{key}")))
        .transpose()
}

fn opt_ptrs(v: &Value<'_>, key: &str, at: &str) -> R<Option<Str>> {
    v.get(key)
        .map(|s| pointer_spec(s, &format!("{at}/{key}")))
        .transpose()
}

const ROLES: [&str; 4] = ["assistant", "user", "system", "tool"];

fn error_kind(name: &str) -> Option<&'static str> {
    ["quota", "transport", "semantic"]
        .into_iter()
        .find(|k| *k == name)
}

fn kind_rule(name: Option<&str>, at: &str) -> R<KindRule> {
    match name {
        None | Some("classify") => Ok(KindRule::Classify),
        Some(k) => error_kind(k)
            .map(KindRule::Fixed)
            .ok_or_else(|| format!("{at}: bad errorKind")),
    }
}

fn emit(v: &Value<'_>, at: &str) -> R<Emit> {
    obj(
        v,
        at,
        &[
            "kind",
            "subtype",
            "role",
            "when",
            "text",
            "delta",
            "messageId",
            "tool",
            "error",
            "usage",
            "toolResult",
            "toolClass",
            "providerToolName",
            "providerArguments",
            "compaction",
            "fileChange",
            "subagent",
            "retry",
            "deltaOnly",
            "emptyResult",
            "answer",
        ],
    )?;
    let kind = ["message", "tool_call", "status", "error", "usage"]
        .into_iter()
        .find(|k| v.str_eq("kind", k))
        .ok_or_else(|| format!("{at}/kind: bad kind"))?;
    let subtype = v
        .str_at("subtype")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{at}/subtype: missing"))?;
    let mut e = Emit {
        kind,
        subtype: subtype.to_owned(),
        role: match v.get("role") {
            None => None,
            Some(r) => Some(
                ROLES
                    .into_iter()
                    .find(|x| r.as_str() == Some(x))
                    .ok_or_else(|| format!("{at}/role: bad role"))?,
            ),
        },
        when: v.get("when").map(|w| cond(w, at)).transpose()?,
        text: opt_str(v, "text", at)?,
        delta: v.is_true_at("delta"),
        message_id: opt_ptrs(v, "messageId", at)?,
        tool_name: None,
        tool_args: None,
        tool_id: None,
        tool_is_error: None,
        err_code: None,
        err_message: None,
        err_kind: KindRule::Classify,
        err_by: None,
        err_map: Vec::new(),
        err_status: None,
        usage_in: Vec::new(),
        usage_out: Vec::new(),
        usage_cached: None,
        usage_cost: None,
        usage_model: None,
        x: emit_extras(v, at)?,
    };
    if kind == "message" && e.text.is_none() {
        return Err(format!("{at}: a message needs text"));
    }
    if let Some(t) = v.get("tool") {
        obj(t, at, &["name", "arguments", "id", "isError"])?;
        let name = t
            .get("name")
            .ok_or_else(|| format!("{at}/tool: missing name"))?;
        e.tool_name = Some(string_spec(name, at)?);
        e.tool_args = t
            .get("arguments")
            .map(|p| ptr_at(Some(p), at))
            .transpose()?;
        e.tool_id = opt_ptrs(t, "id", at)?;
        e.tool_is_error = t.get("isError").map(|p| ptr_at(Some(p), at)).transpose()?;
    } else if kind == "tool_call" {
        return Err(format!("{at}: a tool_call needs tool"));
    }
    if let Some(er) = v.get("error") {
        obj(er, at, &["code", "message", "errorKind", "status"])?;
        e.err_code = Some(string_spec(
            er.get("code")
                .ok_or_else(|| format!("{at}/error: missing code"))?,
            at,
        )?);
        e.err_message = Some(string_spec(
            er.get("message")
                .ok_or_else(|| format!("{at}/error: missing message"))?,
            at,
        )?);
        e.err_status = er.get("status").map(|p| ptr_at(Some(p), at)).transpose()?;
        match er.get("errorKind") {
            Some(k @ Value::Object(_)) => {
                obj(k, at, &["by", "map", "else"])?;
                e.err_by = Some(ptr_at(k.get("by"), at)?);
                let Some(Value::Object(m)) = k.get("map") else {
                    return Err(format!("{at}: errorKind map"));
                };
                for (key, kind) in m {
                    let kind = kind
                        .as_str()
                        .and_then(error_kind)
                        .ok_or_else(|| format!("{at}: errorKind map"))?;
                    e.err_map.push((key.to_string(), kind));
                }
                e.err_kind = kind_rule(k.str_at("else"), at)?;
            }
            Some(Value::Str(s)) => e.err_kind = kind_rule(Some(s), at)?,
            None => {}
            Some(_) => return Err(format!("{at}: bad errorKind")),
        }
    } else if kind == "error" {
        return Err(format!("{at}: an error needs error"));
    }
    if let Some(u) = v.get("usage") {
        obj(u, at, &["input", "output", "cached", "cost", "model"])?;
        if kind != "usage" || !matches!(subtype, "message" | "turn" | "cumulative") {
            return Err(format!(
                "{at}: usage only on a usage event whose subtype is its scope"
            ));
        }
        e.usage_in = ptrs_at(u.get("input"), at)?;
        e.usage_out = ptrs_at(u.get("output"), at)?;
        e.usage_cached = u.get("cached").map(|p| ptr_at(Some(p), at)).transpose()?;
        e.usage_cost = u.get("cost").map(|p| ptr_at(Some(p), at)).transpose()?;
        e.usage_model = opt_str(u, "model", at)?;
    } else if kind == "usage" {
        return Err(format!("{at}: a usage event needs usage"));
    }
    Ok(e)
}

/// How deep a mapping document may nest (the reference has the same bound).
pub const MAX_DEPTH: usize = 64;

/// A mapping document's objects have no repeated key (a repeated key would be read
/// differently by a reader that keeps the first and one that keeps the last).
fn unique_keys(v: &Value<'_>, at: &str) -> R<()> {
    match v {
        Value::Object(pairs) => {
            let mut seen = std::collections::HashSet::with_capacity(pairs.len());
            for (k, child) in pairs {
                let here = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                if !seen.insert(k.as_ref()) {
                    return Err(format!("{here}: a duplicate key"));
                }
                unique_keys(child, &here)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                unique_keys(child, &format!("{at}/{i}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

impl Mapping {
    /// Compile a mapping document (JSON text).
    pub fn compile(text: &str) -> R<Mapping> {
        let (doc, repairs) = match parse::parse_within(text, MAX_DEPTH, usize::MAX) {
            Ok(p) => p,
            Err(parse::Failure::Syntax(e)) => {
                return Err(format!(
                    "not valid JSON: {} at column {}",
                    e.message,
                    e.offset + 1
                ))
            }
            Err(parse::Failure::Over(_)) => {
                return Err(format!("nested deeper than {MAX_DEPTH} levels"))
            }
            Err(parse::Failure::OutOfMemory(e)) => return Err(e.to_string()),
        };
        if repairs > 0 {
            return Err("a string with a lone surrogate escape (\\ud800-\\udfff unpaired)".into());
        }
        unique_keys(&doc, "")?;
        obj(
            &doc,
            "",
            &[
                "checkfu_dialect",
                "dialect",
                "description",
                "sniff",
                "meta",
                "rules",
            ],
        )?;
        if doc.get("checkfu_dialect") != Some(&Value::Int(1)) {
            return Err("/checkfu_dialect: expected 1".into());
        }
        let name = doc.str_at("dialect").unwrap_or("");
        let dialect = DIALECTS
            .into_iter()
            .find(|d| *d == name)
            .ok_or("/dialect: expected one of the nine names")?;
        let sniff = doc.get("sniff").map(Value::items).unwrap_or_default();
        let sniff = sniff
            .iter()
            .enumerate()
            .map(|(i, c)| cond(c, &format!("/sniff/{i}")))
            .collect::<R<Vec<_>>>()?;
        let meta = doc.get("meta");
        if let Some(m) = meta {
            obj(m, "/meta", &META_KEYS)?;
        }
        let Some(Value::Array(rules)) = doc.get("rules") else {
            return Err("/rules: expected a list".into());
        };
        let mut compiled = Vec::with_capacity(rules.len());
        for (i, r) in rules.iter().enumerate() {
            let at = format!("/rules/{i}");
            obj(r, &at, &["match", "emit"])?;
            let when = cond(
                r.get("match")
                    .ok_or_else(|| format!("{at}: missing match"))?,
                &at,
            )?;
            let Some(Value::Array(emits)) = r.get("emit") else {
                return Err(format!("{at}/emit: expected a list"));
            };
            let emits = emits
                .iter()
                .enumerate()
                .map(|(j, e)| emit(e, &format!("{at}/emit/{j}")))
                .collect::<R<_>>()?;
            compiled.push(Rule { when, emits });
        }
        Ok(Mapping {
            dialect,
            sniff,
            rules: compiled,
            session_id: meta
                .map(|m| opt_ptrs(m, "sessionId", "/meta"))
                .transpose()?
                .flatten(),
            native_type: meta
                .map(|m| opt_ptrs(m, "nativeType", "/meta"))
                .transpose()?
                .flatten(),
            line: meta.map(line_spec).transpose()?.unwrap_or_default(),
        })
    }

    /// The events of a line (first rule whose `match` holds).
    pub fn map<'v>(&self, v: &'v Value<'v>, out: &mut Vec<Event<'v>>) {
        if let Some(rule) = self.rules.iter().find(|r| holds(&r.when, v)) {
            for e in &rule.emits {
                if e.when.as_ref().is_none_or(|w| holds(w, v)) {
                    out.push(event(e, v));
                }
            }
        }
    }

    pub fn meta<'v>(&self, v: &'v Value<'v>) -> LineMeta<'v> {
        let native_type = match &self.native_type {
            None => v.str_at("type"),
            Some(s) => string_ref(Some(s), v),
        };
        let l = &self.line;
        let first = |ptrs: &[Pointer]| ptrs.iter().find_map(|p| resolve(v, p));
        LineMeta {
            session_id: string_ref(self.session_id.as_ref(), v),
            timestamp: string_ref(l.timestamp.as_ref(), v),
            native_type,
            model_call_id: string_ref(l.model_call_id.as_ref(), v),
            native_id: string_ref(l.native_id.as_ref(), v),
            stop_reason: string_ref(l.stop_reason.as_ref(), v),
            duration_ms: l.duration_ms.iter().find_map(|p| nonneg_int(resolve(v, p))),
            result_text: string_ref(l.result_text.as_ref(), v).map(Some),
            structured_output: first(&l.structured_output),
            repeats_error: l.repeats_error.as_ref().is_some_and(|c| holds(c, v)),
            partial: l.partial.as_ref().is_some_and(|c| holds(c, v)),
            result_joins_messages: l
                .result_joins_messages
                .as_ref()
                .is_some_and(|c| holds(c, v)),
            ..LineMeta::default()
        }
    }

    /// Whether a line proves this dialect (`auto`).
    pub fn sniffs(&self, v: &Value<'_>) -> bool {
        self.sniff.iter().any(|c| holds(c, v))
    }
}

/// The built-in mapping-defined dialects, compiled once (immutable data).
pub fn builtins() -> &'static [Arc<Mapping>] {
    static BUILTINS: OnceLock<Vec<Arc<Mapping>>> = OnceLock::new();
    BUILTINS.get_or_init(|| {
        [
            include_str!("../python/checkfu_fast/mappings/north.json"),
            include_str!("../python/checkfu_fast/mappings/canary.json"),
            include_str!("../python/checkfu_fast/mappings/solweb.json"),
        ]
        .into_iter()
        .filter_map(|t| Mapping::compile(t).ok().map(Arc::new))
        .collect()
    })
}

fn resolve<'a, 'v>(mut v: &'a Value<'v>, ptr: &Pointer) -> Option<&'a Value<'v>> {
    for tok in ptr {
        v = match v {
            Value::Object(_) => v.get(tok)?,
            Value::Array(items) => {
                let ok = !tok.is_empty()
                    && tok.bytes().all(|b| b.is_ascii_digit())
                    && (tok.len() == 1 || !tok.starts_with('0'));
                if !ok {
                    return None;
                }
                items.get(tok.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(v)
}

fn type_of(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Int(_) | Value::BigInt(_) => "integer",
        Value::Float(_) => "number",
        Value::Str(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn holds(c: &Cond, v: &Value<'_>) -> bool {
    c.0.iter().all(|(ptr, t)| {
        let x = resolve(v, ptr);
        match t {
            Test::Eq(l) => l.eq(x),
            Test::Ne(l) => !l.eq(x),
            Test::In(ls) => ls.iter().any(|l| l.eq(x)),
            Test::Prefix(p) => x
                .and_then(Value::as_str)
                .is_some_and(|s| s.starts_with(p.as_str())),
            Test::Exists(b) => x.is_some() == *b,
            Test::Type(ty) => x
                .map(type_of)
                .is_some_and(|got| got == *ty || (*ty == "number" && got == "integer")),
        }
    })
}

fn string<'v>(s: Option<&Str>, v: &'v Value<'v>) -> Option<Text<'v>> {
    for alt in &s?.0 {
        match alt {
            Alt::Const(c) => return Some(Cow::Owned(c.clone())),
            Alt::Ptr(p) => {
                if let Some(t) = resolve(v, p)
                    .and_then(Value::as_str)
                    .filter(|t| !t.is_empty())
                {
                    return Some(Cow::Borrowed(t));
                }
            }
        }
    }
    None
}

/// A pointer-only spec's value (no constants are allowed in such specs).
fn string_ref<'v>(s: Option<&Str>, v: &'v Value<'v>) -> Option<&'v str> {
    s?.0.iter().find_map(|alt| match alt {
        Alt::Ptr(p) => resolve(v, p)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty()),
        Alt::Const(_) => None,
    })
}

fn opt<'v>(v: &'v Value<'v>, p: Option<&Pointer>) -> Option<&'v Value<'v>> {
    resolve(v, p?).filter(|x| !matches!(x, Value::Null))
}

fn event<'v>(e: &Emit, v: &'v Value<'v>) -> Event<'v> {
    let message_id = string_ref(e.message_id.as_ref(), v).map(Cow::Borrowed);
    if e.kind == "usage" {
        let ins: Vec<_> = e.usage_in.iter().map(|p| resolve(v, p)).collect();
        let outs: Vec<_> = e.usage_out.iter().map(|p| resolve(v, p)).collect();
        let scope = match e.subtype.as_str() {
            "message" => "message",
            "turn" => "turn",
            _ => "cumulative",
        };
        let model = string(e.usage_model.as_ref(), v);
        let mut ev = usage(
            scope,
            None,
            &ins,
            e.usage_cached.as_ref().and_then(|p| resolve(v, p)),
            &outs,
            e.usage_cost.as_ref().and_then(|p| resolve(v, p)),
        );
        if let (Some(m), Some(u)) = (model.filter(|m| !m.is_empty()), ev.usage.as_mut()) {
            u.model = m;
        }
        ev.message_id = message_id;
        return ev;
    }
    let mut ev = Event {
        kind: e.kind,
        subtype: Cow::Owned(e.subtype.clone()),
        ..Event::default()
    };
    ev.role = e.role;
    if e.text.is_some() {
        let t = string(e.text.as_ref(), v);
        if t.is_some() || e.kind == "message" {
            ev.text = Some(t.unwrap_or(Cow::Borrowed("")));
        }
    }
    if let Some(name) = &e.tool_name {
        let is_error = (e.tool_is_error.is_some() || e.kind == "message").then(|| {
            matches!(
                e.tool_is_error.as_ref().and_then(|p| resolve(v, p)),
                Some(Value::Bool(true))
            )
        });
        ev.tool = Some(Tool {
            name: string(Some(name), v).unwrap_or(Cow::Borrowed("unknown")),
            arguments: opt(v, e.tool_args.as_ref()),
            id: string_ref(e.tool_id.as_ref(), v),
            is_error,
        });
    }
    if let Some(code) = &e.err_code {
        let code = string(Some(code), v).unwrap_or(Cow::Borrowed("error"));
        let message = string(e.err_message.as_ref(), v).unwrap_or_else(|| code.clone());
        let kind = error_kind_of(e, v, &message);
        let retry = crate::retry::for_error(kind, &message);
        ev.retry_at = retry.at;
        ev.retry_after_ms = retry.after_ms;
        ev.error = Some(ErrorInfo {
            code,
            message,
            kind,
        });
    }
    ev.message_id = message_id;
    ev.delta = e.delta;
    event_extras(&e.x, e, v, &mut ev);
    ev
}

fn event_extras<'v>(x: &EmitExtras, e: &Emit, v: &'v Value<'v>, ev: &mut Event<'v>) {
    if let Some(c) = x.tool_class {
        ev.x().tool_class = Some(c); // a hint: the generic pass classifies tool calls
    }
    if let Some(n) = string(x.provider_name.as_ref(), v) {
        ev.x().provider_tool_name = Some(n);
    }
    if let Some(a) = x.provider_args.as_ref().and_then(|p| resolve(v, p)) {
        ev.x().provider_arguments = Some(a.clone());
    }
    match x.tool_result.as_ref().and_then(|p| resolve(v, p)) {
        Some(r) => ev.x().tool_result = Some(ToolResult::Value(r)),
        // the result exactly as the line gives it: its text
        None if e.kind == "message" && e.subtype == "tool_result" => {
            ev.x().tool_result = Some(ToolResult::Text);
        }
        None => {}
    }
    if let Some((event, path)) = &x.file_change {
        let event = string(Some(event), v);
        let event = FILE_EVENTS
            .iter()
            .find(|f| event.as_deref() == Some(**f))
            .copied();
        if let (Some(event), Some(path)) = (event, string(Some(path), v)) {
            ev.x().file_changes = vec![(event, path, None)];
        }
    }
    if let Some(sa) = &x.subagent {
        if let Some(id) = string_ref(Some(&sa.id), v) {
            let disposition = string(sa.disposition.as_ref(), v);
            let disposition = DISPOSITIONS
                .iter()
                .find(|d| disposition.as_deref() == Some(**d))
                .copied();
            ev.x().subagent = Some(Subagent {
                id: Cow::Borrowed(id),
                phase: sa.phase,
                name: string(sa.name.as_ref(), v),
                kind: string(sa.kind.as_ref(), v),
                description: string(sa.description.as_ref(), v),
                disposition,
                ..Subagent::default()
            });
        }
    }
    if let Some((b, a)) = &x.tokens {
        let before = nonneg_int(resolve(v, b));
        let after = nonneg_int(resolve(v, a));
        if let (Some(before), Some(after)) = (before, after) {
            let xx = ev.x();
            xx.tokens_before = Some(before);
            xx.tokens_after = Some(after);
        }
    }
    if x.retry {
        ev.x().retry = true;
    }
    if x.delta_only {
        ev.x().delta_only = true;
    }
    if x.empty_result {
        ev.x().empty_result = true;
    }
    if x.answer {
        ev.x().answer = true;
    }
}

fn error_kind_of(e: &Emit, v: &Value<'_>, message: &str) -> &'static str {
    if let Some(k) = kind_for_status(e.err_status.as_ref().and_then(|p| resolve(v, p))) {
        return k;
    }
    if let Some(x) = e
        .err_by
        .as_ref()
        .and_then(|p| resolve(v, p))
        .and_then(Value::as_str)
    {
        if let Some((_, k)) = e.err_map.iter().find(|(key, _)| key == x) {
            return k;
        }
    }
    match e.err_kind {
        KindRule::Fixed(k) => k,
        KindRule::Classify => classify(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_compile() {
        assert_eq!(
            builtins().iter().map(|m| m.dialect).collect::<Vec<_>>(),
            ["north", "canary", "solweb"]
        );
    }

    #[test]
    fn rejects_malformed() {
        assert!(Mapping::compile("{}").is_err());
        assert!(Mapping::compile(r#"{"checkfu_dialect":1,"dialect":"nope","rules":[]}"#).is_err());
        let bad_ptr =
            r#"{"checkfu_dialect":1,"dialect":"north","rules":[{"match":{"a":1},"emit":[]}]}"#;
        assert!(Mapping::compile(bad_ptr).is_err());
    }
}
