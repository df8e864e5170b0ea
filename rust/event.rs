//! The normalized event, built from borrowed line data, and the helpers every dialect shares.
//! Mirrors `reference/events.py` function for function.
//!
//! An [`Event`] is what a dialect says about a line; the pipeline adds `v`, `seq`, `position`,
//! `dialect`, `raw` and `parsed`. Nothing here allocates for text that is already in the line.

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::value::Value;

pub type Text<'v> = Cow<'v, str>;

/// A number as Python sees it: exact integer or float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    /// A usable token count or cost (`is_count` in the reference).
    pub fn count(v: Option<&Value<'_>>) -> Option<Num> {
        match v {
            Some(Value::Int(i)) if *i >= 0 => Some(Num::Int(i128::from(*i))),
            Some(Value::Float(f)) if *f >= 0.0 => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// Python's `+` (int + int stays exact; anything with a float is a float).
    pub fn plus(self, other: Num) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a
                .checked_add(b)
                .map_or(Num::Float(a as f64 + b as f64), Num::Int),
            (Num::Int(a), Num::Float(b)) => Num::Float(a as f64 + b),
            (Num::Float(a), Num::Int(b)) => Num::Float(a + b as f64),
            (Num::Float(a), Num::Float(b)) => Num::Float(a + b),
        }
    }

    /// Python's exact `<=` across int and float.
    pub fn le(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a <= b,
            (Num::Float(a), Num::Float(b)) => a <= b,
            (Num::Int(a), Num::Float(b)) => int_le_float(a, b),
            (Num::Float(a), Num::Int(b)) => float_le_int(a, b),
        }
    }
}

const I128_EDGE: f64 = 1.0e38;

fn int_le_float(a: i128, b: f64) -> bool {
    if b >= I128_EDGE {
        return true;
    }
    if b <= -I128_EDGE {
        return false;
    }
    a <= b.floor() as i128
}

fn float_le_int(a: f64, b: i128) -> bool {
    if a >= I128_EDGE {
        return false;
    }
    if a <= -I128_EDGE {
        return true;
    }
    (a.ceil() as i128) <= b
}

/// The `tool` object.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool<'v> {
    pub name: Text<'v>,
    pub arguments: Option<&'v Value<'v>>,
    pub id: Option<&'v str>,
    pub is_error: Option<bool>,
}

/// The `error` object.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorInfo<'v> {
    pub code: Text<'v>,
    pub message: Text<'v>,
    pub kind: &'static str,
}

/// The `usage` object plus the scope it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Usage<'v> {
    pub input: Option<Num>,
    pub output: Option<Num>,
    pub cached: Option<Num>,
    pub cost: Option<Num>,
    pub model: Text<'v>,
    pub unknown: bool,
}

/// One normalized event, before the pipeline adds the line-level fields.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Event<'v> {
    pub kind: &'static str,
    pub subtype: Text<'v>,
    pub role: Option<&'static str>,
    pub text: Option<Text<'v>>,
    pub tool: Option<Tool<'v>>,
    pub error: Option<ErrorInfo<'v>>,
    /// For a quota or transport error: when the message says work may resume (RFC 3339 UTC).
    pub retry_at: Option<String>,
    /// For a quota or transport error: the delay the message gives, in milliseconds.
    pub retry_after_ms: Option<u64>,
    pub usage: Option<Usage<'v>>,
    pub usage_scope: Option<&'static str>,
    /// Owned where the dialect derives it (a claude usage iteration: `<id>#compaction0`).
    pub message_id: Option<Text<'v>>,
    pub delta: bool,
    /// For `line_too_long`: the full length of the line.
    pub line_bytes: Option<u64>,
    /// For `stream_is_utf16`: the encoding found (`UTF-16LE`, ...).
    pub encoding: Option<&'static str>,
    /// For `stream_is_utf16`: the size of the whole stream.
    pub stream_bytes: Option<u64>,
    /// The oneshot extras of this event (docs/events.md); boxed: most events have none.
    pub extra: Option<Box<Extra<'v>>>,
}

impl<'v> Event<'v> {
    /// The extras, created empty on first use.
    pub fn x(&mut self) -> &mut Extra<'v> {
        self.extra.get_or_insert_with(Box::default)
    }

    /// Adds an entry (an [`action`]) to `requiresAction`.
    pub fn require(&mut self, entry: Value<'v>) {
        match &mut self.x().requires_action {
            Some(Value::Array(list)) => list.to_mut().push(entry),
            slot => *slot = Some(Value::Array(vec![entry].into())),
        }
    }
}

/// A tool result exactly as the stream gives it.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolResult<'v> {
    /// A value of the line.
    Value(&'v Value<'v>),
    /// The event's own `text`.
    Text,
}

/// A sub-agent's start or end (`subagent`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Subagent<'v> {
    pub id: Text<'v>,
    /// `spawned` (the call that starts it), `started` or `ended`.
    pub phase: &'static str,
    pub name: Option<Text<'v>>,
    pub kind: Option<Text<'v>>,
    pub description: Option<Text<'v>>,
    /// The sub-agent's full prompt, when the stream gives it.
    pub prompt: Option<Text<'v>>,
    /// `completed`, `failed` or `canceled`.
    pub disposition: Option<&'static str>,
    /// Another id the stream uses for the same sub-agent (claude's `task_id`).
    pub alias: Option<&'v str>,
}

/// One rate-limit reading (`rateLimits`): how much of a quota window is used and when it
/// resets.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimit<'v> {
    /// The window's length (`5h`, `7d`, `30m`, [`window_of_minutes`]); where the CLI gives
    /// none, the limit's own name.
    pub window: Text<'v>,
    /// Percent of the window used (0-100, more in overage), as the CLI counts it.
    pub used_percent: Num,
    /// When the window resets, RFC 3339 UTC; `None` when the line cannot say.
    pub resets_at: Option<String>,
    /// Which limit: codex `primary`/`secondary` (prefixed `<limit_id>.` for a limit other than
    /// the default `codex`), claude's `rateLimitType` (`five_hour`, `seven_day_opus`, ...).
    pub limit_type: Text<'v>,
}

/// Per-event oneshot extras, in output order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Extra<'v> {
    pub tool_class: Option<&'static str>,
    pub provider_tool_name: Option<Text<'v>>,
    pub provider_arguments: Option<Value<'v>>,
    pub tool_result: Option<ToolResult<'v>>,
    /// `(event, path, diff)`: `create`, `modify` or `delete`; the change's own diff when the
    /// stream gives one.
    pub file_changes: Vec<(&'static str, Text<'v>, Option<&'v str>)>,
    pub subagent: Option<Subagent<'v>>,
    pub tokens_before: Option<&'v Value<'v>>,
    pub tokens_after: Option<&'v Value<'v>>,
    pub retry: bool,
    pub delta_only: bool,
    /// On a usage event: how many of its output tokens were reasoning (`reasoningTokens`).
    pub reasoning_tokens: Option<&'v Value<'v>>,
    /// On a usage event: its cache-creation tokens (part of `inputTokens`: `cacheWriteTokens`)
    /// and the part of them written with the 1-hour TTL (`cacheWrite1hTokens`).
    pub cache_write_tokens: Option<Num>,
    pub cache_write_1h_tokens: Option<Num>,
    /// On a usage event: the speed the request ran at where the CLI says (`speed`: claude
    /// `usage.speed`, `fast` or `standard`); fast requests are priced apart.
    pub speed: Option<&'v str>,
    /// The rate-limit readings a line reports (`rateLimits`).
    pub rate_limits: Vec<RateLimit<'v>>,
    /// On a success result: the result gives no answer (`emptyResult`).
    pub empty_result: bool,
    /// The event's text is the run's answer (`answer`: cursor's plan).
    pub answer: bool,
    /// On a tool call: the unparsed argument text of a malformed call (`partialArguments`).
    pub partial_arguments: Option<&'v str>,
    /// A codex rollout `session_meta` of a thread that starts from its parent's counter
    /// (a `thread_spawn` sub-agent or a fork): `continuation: true` on its `status/init`.
    pub continuation: bool,
    /// claude's control channel: the request id of a reply or request (`controlRequestId`).
    pub control_request_id: Option<&'v str>,
    /// claude `control_response`: the reply's own `response` object (`controlResponse`).
    pub control_response: Option<&'v Value<'v>>,
    /// claude `system/background_tasks_changed`: the live set of tasks (`backgroundTasks`).
    pub background_tasks: Option<&'v Value<'v>>,
    /// What a human must do before the turn can go on (`requiresAction`): a list of
    /// [`action`]s, a tool call that waits for (or was refused for want of) an approval, or a
    /// question put to the user.
    pub requires_action: Option<Value<'v>>,
}

/// One entry of `requiresAction` (docs/events.md): `{"kind", "toolUseId"?, "toolName"?,
/// "questions"?}`; `kind` is `approval` or `question`, `questions` the list as given.
pub fn action<'v>(
    kind: &'static str,
    tool_use_id: Option<&'v str>,
    tool_name: Option<&'v str>,
    questions: Option<&'v Value<'v>>,
) -> Value<'v> {
    let mut pairs = vec![(Cow::Borrowed("kind"), Value::Str(Cow::Borrowed(kind)))];
    if let Some(id) = tool_use_id.filter(|s| !s.is_empty()) {
        pairs.push((Cow::Borrowed("toolUseId"), Value::Str(Cow::Borrowed(id))));
    }
    if let Some(name) = tool_name.filter(|s| !s.is_empty()) {
        pairs.push((Cow::Borrowed("toolName"), Value::Str(Cow::Borrowed(name))));
    }
    if let Some(q @ Value::Array(_)) = questions {
        pairs.push((Cow::Borrowed("questions"), q.clone()));
    }
    Value::Object(pairs.into())
}

/// Line-level fields a dialect reads once per line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineMeta<'v> {
    pub session_id: Option<&'v str>,
    pub timestamp: Option<&'v str>,
    pub parent_tool_use_id: Option<&'v str>,
    pub native_type: Option<&'v str>,
    /// The oneshot line extras (docs/events.md), after `nativeType`.
    pub model_call_id: Option<&'v str>,
    pub native_id: Option<&'v str>,
    pub stop_reason: Option<&'v str>,
    pub duration_ms: Option<&'v Value<'v>>,
    /// `Some(None)`: a result line that reports no text (`null`).
    pub result_text: Option<Option<&'v str>>,
    pub structured_output: Option<&'v Value<'v>>,
    pub repeats_error: bool,
    pub partial: bool,
    /// The result text joins every agent message of the turn (not only the final answer).
    pub result_joins_messages: bool,
    /// claude session files: the API request id of an assistant line (`requestId`).
    pub request_id: Option<&'v str>,
    /// claude session files: the sub-agent a line belongs to (`agentId`).
    pub agent_id: Option<&'v str>,
    /// claude session files: a sidechain (sub-agent) line (`isSidechain: true`).
    pub sidechain: bool,
    /// The session's working directory where the line gives it (`cwd`: claude session lines,
    /// codex rollout `session_meta`/`turn_context`).
    pub cwd: Option<&'v str>,
}

pub fn name_or_unknown<'v>(v: Option<&'v Value<'v>>) -> Text<'v> {
    match v.and_then(Value::as_str) {
        Some(s) if !s.is_empty() => Cow::Borrowed(s),
        _ => Cow::Borrowed("unknown"),
    }
}

/// `content_text` of the reference: a string, or a list's `text` blocks joined by LF.
pub fn content_text<'v>(content: Option<&'v Value<'v>>) -> Text<'v> {
    match content {
        Some(Value::Str(s)) => Cow::Borrowed(s.as_ref()),
        Some(Value::Array(items)) => {
            let mut texts = items
                .iter()
                .filter(|b| b.is_object() && b.str_eq("type", "text"))
                .filter_map(|b| b.str_at("text"));
            let Some(first) = texts.next() else {
                return Cow::Borrowed("");
            };
            match texts.next() {
                None => Cow::Borrowed(first),
                Some(second) => {
                    let mut s = String::with_capacity(first.len() + second.len() + 1);
                    s.push_str(first);
                    s.push('\n');
                    s.push_str(second);
                    for t in texts {
                        s.push('\n');
                        s.push_str(t);
                    }
                    Cow::Owned(s)
                }
            }
        }
        _ => Cow::Borrowed(""),
    }
}

/// `text or fallback` (the empty string counts as absent, as in Python).
pub fn or_str<'v>(text: Option<&'v str>, fallback: &'static str) -> Text<'v> {
    match text {
        Some(t) if !t.is_empty() => Cow::Borrowed(t),
        _ => Cow::Borrowed(fallback),
    }
}

pub fn msg<'v>(subtype: &'static str, role: &'static str, text: impl Into<Text<'v>>) -> Event<'v> {
    Event {
        kind: "message",
        subtype: Cow::Borrowed(subtype),
        role: Some(role),
        text: Some(text.into()),
        ..Event::default()
    }
}

pub fn status<'v>(subtype: &'static str, text: Option<Text<'v>>) -> Event<'v> {
    Event {
        kind: "status",
        subtype: Cow::Borrowed(subtype),
        text,
        ..Event::default()
    }
}

pub fn tool_call<'v>(
    name: Text<'v>,
    arguments: Option<&'v Value<'v>>,
    call_id: Option<&'v Value<'v>>,
) -> Event<'v> {
    let arguments = arguments.filter(|a| !matches!(a, Value::Null));
    let tool = Tool {
        name,
        arguments,
        id: call_id.and_then(Value::as_str),
        is_error: None,
    };
    Event {
        kind: "tool_call",
        subtype: Cow::Borrowed("tool_use"),
        role: Some("assistant"),
        tool: Some(tool),
        ..Event::default()
    }
}

pub fn tool_result<'v>(
    name: Text<'v>,
    call_id: Option<&'v Value<'v>>,
    is_error: bool,
    text: Text<'v>,
) -> Event<'v> {
    let tool = Tool {
        name,
        arguments: None,
        id: call_id.and_then(Value::as_str),
        is_error: Some(is_error),
    };
    Event {
        kind: "message",
        subtype: Cow::Borrowed("tool_result"),
        role: Some("tool"),
        text: Some(text),
        tool: Some(tool),
        ..Event::default()
    }
}

pub fn error<'v>(
    subtype: impl Into<Text<'v>>,
    code: impl Into<Text<'v>>,
    message: Text<'v>,
    kind: &'static str,
) -> Event<'v> {
    let code = code.into();
    let message = if message.is_empty() {
        code.clone()
    } else {
        message
    };
    let retry = crate::retry::for_error(kind, &message);
    Event {
        kind: "error",
        subtype: subtype.into(),
        error: Some(ErrorInfo {
            code,
            message,
            kind,
        }),
        retry_at: retry.at,
        retry_after_ms: retry.after_ms,
        ..Event::default()
    }
}

/// A usage event (`usage` in the reference): `inputs` summed into inputTokens, `outputs` into
/// outputTokens; non-counts ignored; no count at all -> `unknown`; cached clamped to input.
pub fn usage<'v>(
    scope: &'static str,
    model: Option<&'v Value<'v>>,
    inputs: &[Option<&'v Value<'v>>],
    cached: Option<&'v Value<'v>>,
    outputs: &[Option<&'v Value<'v>>],
    cost: Option<&'v Value<'v>>,
) -> Event<'v> {
    let ins: Vec<Num> = inputs.iter().filter_map(|v| Num::count(*v)).collect();
    let outs: Vec<Num> = outputs.iter().filter_map(|v| Num::count(*v)).collect();
    let known = !(ins.is_empty() && outs.is_empty());
    let (mut input, mut output, mut cached_n) = (None, None, None);
    if known {
        let total_in = ins.iter().fold(Num::Int(0), |a, b| a.plus(*b));
        let total_out = outs.iter().fold(Num::Int(0), |a, b| a.plus(*b));
        let c = Num::count(cached).unwrap_or(Num::Int(0));
        cached_n = Some(if c.le(total_in) { c } else { total_in });
        input = Some(total_in);
        output = Some(total_out);
    }
    let u = Usage {
        input,
        output,
        cached: cached_n,
        cost: Num::count(cost),
        model: name_or_unknown(model),
        unknown: !known,
    };
    Event {
        kind: "usage",
        subtype: Cow::Borrowed(scope),
        usage: Some(u),
        usage_scope: Some(scope),
        ..Event::default()
    }
}

/// The error-kind needle table (lowercase ASCII; quota is checked before transport): one data
/// file, which the reference twin (`reference/events.py`) loads too.
const ERROR_KINDS_JSON: &str = include_str!("../python/checkfu_fast/dialects/error_kinds.json");

/// `(quota, transport)` needles of [`ERROR_KINDS_JSON`], parsed once (a test checks the file
/// parses and both lists are non-empty).
pub fn error_needles() -> &'static (Vec<String>, Vec<String>) {
    static NEEDLES: OnceLock<(Vec<String>, Vec<String>)> = OnceLock::new();
    NEEDLES.get_or_init(|| {
        let Ok((doc, _)) = crate::parse::parse(ERROR_KINDS_JSON) else {
            return (Vec::new(), Vec::new());
        };
        let list = |k: &str| -> Vec<String> {
            doc.get(k)
                .map(Value::items)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_ascii_lowercase)
                .collect()
        };
        (list("quota"), list("transport"))
    })
}

/// Error kind of a native error message: `quota`, `transport` or `semantic`.
pub fn classify(message: &str) -> &'static str {
    let low = message.to_ascii_lowercase();
    let codes = status_codes(low.as_bytes());
    let (quota, transport) = error_needles();
    let has = |needles: &[String]| {
        needles
            .iter()
            .any(|n| memchr::memmem::find(low.as_bytes(), n.as_bytes()).is_some())
    };
    if codes.contains(&429) || has(quota) {
        return "quota";
    }
    if codes.iter().any(|c| (500..=599).contains(c)) || has(transport) {
        return "transport";
    }
    "semantic"
}

/// A three-digit run counts as an HTTP status only at the start of the message or right after
/// one of these words (so ids, prices and token counts are not mistaken for statuses).
const STATUS_CONTEXT: [&[u8]; 7] = [
    b"error: ",
    b"error ",
    b"status: ",
    b"status ",
    b"code: ",
    b"code ",
    b"http ",
];

/// HTTP statuses mentioned in a lowercased message (see [`STATUS_CONTEXT`]).
fn status_codes(b: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b.get(i).is_some_and(u8::is_ascii_digit) {
            let start = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            let before = b.get(..start).unwrap_or_default();
            let in_context = start == 0 || STATUS_CONTEXT.iter().any(|c| before.ends_with(c));
            if i - start == 3 && in_context {
                let n = b
                    .get(start..i)
                    .unwrap_or_default()
                    .iter()
                    .fold(0u32, |a, d| a * 10 + u32::from(d - b'0'));
                out.push(n);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Error kind implied by an HTTP status given as a number.
pub fn kind_for_status(v: Option<&Value<'_>>) -> Option<&'static str> {
    match v {
        Some(Value::Int(429)) => Some("quota"),
        Some(Value::Int(c)) if (500..=599).contains(c) => Some("transport"),
        _ => None,
    }
}

/// Error kind implied by a structured HTTP status (it decides before the wording does):
/// 401/403 semantic (a retry does not help), 429 quota, 5xx transport; `None` for others.
pub fn http_kind(v: Option<&Value<'_>>) -> Option<&'static str> {
    match v {
        Some(Value::Int(401 | 403)) => Some("semantic"),
        _ => kind_for_status(v),
    }
}

// -- oneshot extras (docs/events.md) -----------------------------------------------------------
// Tool classes by the provider's own tool name, lowercased. Python twin: `SHELL_TOOLS` /
// `FILESYSTEM_TOOLS` in reference/events.py (tests/test_extras.py compares the two).
pub const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "command_execution",
    "exec_command",
    "run_terminal_cmd",
    "run_shell_command",
    "execute_command",
    "terminal",
    "local_shell",
];
pub const FILESYSTEM_TOOLS: &[&str] = &[
    "read",
    "write",
    "edit",
    "multiedit",
    "glob",
    "grep",
    "ls",
    "list",
    "notebookedit",
    "notebookread",
    "view",
    "read_file",
    "write_file",
    "edit_file",
    "list_dir",
    "search_files",
    "delete",
    "delete_file",
    "str_replace_based_edit_tool",
    "apply_patch",
    "file_change",
];

/// `shell`, `filesystem` or `mcp` for a provider tool name; `hint` (the dialect's own class)
/// when the name is in no table.
pub fn tool_class(name: &str, hint: Option<&'static str>) -> Option<&'static str> {
    // Python's `str.lower()`; ASCII names (nearly all) without allocating
    let lowered;
    let low = if name.is_ascii() {
        name
    } else {
        lowered = name.to_lowercase();
        lowered.as_str()
    };
    let is = |table: &[&str]| table.iter().any(|t| t.eq_ignore_ascii_case(low));
    if is(SHELL_TOOLS) {
        return Some("shell");
    }
    if is(FILESYSTEM_TOOLS) {
        return Some("filesystem");
    }
    if low.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("mcp_")) {
        return Some("mcp");
    }
    hint
}

/// Set `toolClass` on every `tool_call` event (the pipeline's one generic pass).
pub fn classify_tools(events: &mut [Event<'_>]) {
    for ev in events.iter_mut().filter(|e| e.kind == "tool_call") {
        let class = {
            let x = ev.extra.as_deref();
            let name = x
                .and_then(|x| x.provider_tool_name.as_deref())
                .or_else(|| ev.tool.as_ref().map(|t| t.name.as_ref()));
            name.and_then(|n| tool_class(n, x.and_then(|x| x.tool_class)))
        };
        if class.is_some() || ev.extra.is_some() {
            ev.x().tool_class = class;
        }
    }
}

/// A JSON integer >= 0, any size (`nonneg_int`).
pub fn nonneg_int<'v>(v: Option<&'v Value<'v>>) -> Option<&'v Value<'v>> {
    match v {
        Some(x @ Value::Int(i)) if *i >= 0 => Some(x),
        Some(x @ Value::BigInt(t)) if !t.starts_with('-') => Some(x),
        _ => None,
    }
}

/// A non-empty string.
pub fn nonempty<'v>(v: Option<&'v Value<'v>>) -> Option<&'v str> {
    v.and_then(Value::as_str).filter(|s| !s.is_empty())
}

/// The native stop reason of an outcome or assistant line (`stop_reason` in the reference).
pub fn stop_reason<'v>(v: &'v Value<'v>) -> Option<&'v str> {
    const TOP: [&str; 3] = ["stop_reason", "stopReason", "reason"];
    if let Some(s) = TOP.iter().find_map(|k| v.str_at(k)) {
        return Some(s);
    }
    if let Some(p) = v.get("part").filter(|p| p.is_object()) {
        if let Some(s) = TOP.iter().find_map(|k| p.str_at(k)) {
            return Some(s);
        }
    }
    let m = v.get("message").filter(|m| m.is_object())?;
    ["stop_reason", "stopReason"]
        .iter()
        .find_map(|k| m.str_at(k))
}

/// `durationMs` on any line, `stopReason` on outcome or assistant lines (`line_extras`).
pub fn line_extras<'v>(v: &'v Value<'v>, outcome: bool, meta: &mut LineMeta<'v>) {
    if outcome {
        meta.stop_reason = stop_reason(v);
    }
    meta.duration_ms = nonneg_int(v.get("duration_ms")).or_else(|| nonneg_int(v.get("durationMs")));
}

/// `reasoningTokens` on a usage event with counts (`reasoning_tokens` of the reference): how
/// many of its output tokens were reasoning, where the CLI reports them apart.
pub fn reasoning_tokens<'v>(mut ev: Event<'v>, v: Option<&'v Value<'v>>) -> Event<'v> {
    let known = ev.usage.as_ref().is_some_and(|u| !u.unknown);
    if let (true, Some(r)) = (known, v.filter(|r| Num::count(Some(r)).is_some())) {
        ev.x().reasoning_tokens = Some(r);
    }
    ev
}

/// `cacheWriteTokens` (and `cacheWrite1hTokens`, the part written with the 1-hour TTL) on a
/// usage event with counts: the cache-creation tokens of its `inputTokens`, where the CLI
/// reports them (`cache_writes` of the reference).
pub fn cache_writes<'v>(
    mut ev: Event<'v>,
    write: Option<Num>,
    write_1h: Option<&'v Value<'v>>,
) -> Event<'v> {
    let known = ev.usage.as_ref().is_some_and(|u| !u.unknown);
    if let (true, Some(w)) = (known, write) {
        ev.x().cache_write_tokens = Some(w);
        if let Some(h) = Num::count(write_1h) {
            ev.x().cache_write_1h_tokens = Some(h);
        }
    }
    ev
}

/// A window length in minutes as `rateLimits` names it (`window_of_minutes` of the
/// reference): under an hour `<m>m`; else rounded to the nearest hour, `<d>d` for whole days
/// (`10079` -> `7d`), `<h>h` otherwise (`299` -> `5h`); `None` for no length (`< 1`).
pub fn window_of_minutes(m: i64) -> Option<String> {
    if m < 1 {
        return None;
    }
    if m < 60 {
        return Some(format!("{m}m"));
    }
    let h = (i128::from(m) + 30) / 60;
    Some(if h % 24 == 0 {
        format!("{}d", h / 24)
    } else {
        format!("{h}h")
    })
}

/// A utilization fraction (claude's `0.41`) as a percent (`41.0`): the decimal point of the
/// number's shortest text moved two places, so `0.57` is `57.0`, not `56.99999999999999`
/// (`percent_of_fraction` of the reference). `None` for anything but a count.
pub fn percent_of_fraction(v: Option<&Value<'_>>) -> Option<Num> {
    match Num::count(v)? {
        Num::Int(i) => Some(Num::Int(i * 100)),
        Num::Float(f) => {
            let text = format!("{f:e}");
            let (mantissa, exp) = text.split_once('e')?;
            let exp: i32 = exp.parse().ok()?;
            let shifted: f64 = format!("{mantissa}e{}", exp + 2).parse().ok()?;
            shifted.is_finite().then_some(Num::Float(shifted))
        }
    }
}

/// `rateLimits` on an event, when the line gave any reading.
pub fn with_rate_limits<'v>(mut ev: Event<'v>, readings: Vec<RateLimit<'v>>) -> Event<'v> {
    if !readings.is_empty() {
        ev.x().rate_limits = readings;
    }
    ev
}

/// `tokensBefore`/`tokensAfter` on a compaction event (`compaction_tokens`).
pub fn compaction_tokens<'v>(mut ev: Event<'v>, v: &'v Value<'v>) -> Event<'v> {
    const PAIRS: [(&str, &str); 3] = [
        ("pre_tokens", "post_tokens"),
        ("tokens_before", "tokens_after"),
        ("tokensBefore", "tokensAfter"),
    ];
    let holders = [
        Some(v),
        v.get("compact_metadata"),
        v.get("compactMetadata"),
        v.get("result"),
    ];
    for h in holders.into_iter().flatten().filter(|h| h.is_object()) {
        for (b, a) in PAIRS {
            if let (Some(before), Some(after)) = (nonneg_int(h.get(b)), nonneg_int(h.get(a))) {
                let x = ev.x();
                x.tokens_before = Some(before);
                x.tokens_after = Some(after);
                return ev;
            }
        }
    }
    ev
}

/// A result object's `content` when it has one, else the result (`content_blocks`).
pub fn content_blocks<'v>(result: &'v Value<'v>) -> &'v Value<'v> {
    match result.get("content") {
        Some(c) if result.is_object() => c,
        _ => result,
    }
}

pub static NULL: Value<'static> = Value::Null;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needle_table_parses() {
        let (quota, transport) = error_needles();
        assert!(quota.iter().any(|n| n == "quota"));
        assert!(transport.iter().any(|n| n == "high demand"));
    }

    #[test]
    fn classifies_2026_messages() {
        let high = "We're currently experiencing high demand, which may cause temporary errors.";
        assert_eq!(classify(high), "transport");
        assert_eq!(
            classify("Selected model is at capacity. Please try a different model."),
            "transport"
        );
        assert_eq!(
            classify("stream disconnected before completion: Concurrency limit exceeded for user, please retry later"),
            "quota"
        );
    }

    #[test]
    fn classifies_real_messages() {
        assert_eq!(classify("Weekly limit reached ∙ resets 5am"), "quota");
        assert_eq!(classify("Reconnecting... 2/5"), "transport");
        assert_eq!(
            classify("exceeded retry limit, last status: 401 Unauthorized, request id: x"),
            "semantic"
        );
        assert_eq!(classify("API Error: 529 {\"type\":\"error\"}"), "transport");
        assert_eq!(classify("API Error: 429"), "quota");
        assert_eq!(classify("used 1500 tokens"), "semantic");
        assert_eq!(
            classify("401 Unauthorized, request id: req_500abc"),
            "semantic"
        );
        assert_eq!(classify("Reached maximum budget ($500)"), "semantic");
        assert_eq!(
            classify("last status: 503 Service Unavailable"),
            "transport"
        );
        assert_eq!(classify("429 {\"type\":\"error\"}"), "quota");
    }

    #[test]
    fn tool_classes_follow_the_tables() {
        assert_eq!(tool_class("Bash", None), Some("shell"));
        assert_eq!(tool_class("MultiEdit", Some("mcp")), Some("filesystem"));
        assert_eq!(tool_class("mcp_github", None), Some("mcp"));
        assert_eq!(tool_class("list_issues", Some("mcp")), Some("mcp"));
        assert_eq!(tool_class("WebFetch", None), None);
        // U+212A KELVIN SIGN lowercases to an ASCII 'k', as in Python
        assert_eq!(tool_class("NOTEBOO\u{212A}EDIT", None), Some("filesystem"));
    }

    #[test]
    fn windows_and_percents() {
        let w = |m| window_of_minutes(m);
        assert_eq!(w(300).as_deref(), Some("5h"));
        assert_eq!(w(299).as_deref(), Some("5h"));
        assert_eq!(w(10_080).as_deref(), Some("7d"));
        assert_eq!(w(10_079).as_deref(), Some("7d"));
        assert_eq!(w(1_440).as_deref(), Some("1d"));
        assert_eq!(w(90).as_deref(), Some("2h"));
        assert_eq!(w(15).as_deref(), Some("15m"));
        assert_eq!(w(0), None);
        assert!(w(i64::MAX).is_some());
        let p = |v: Value<'static>| percent_of_fraction(Some(&v));
        assert_eq!(p(Value::Float(0.57)), Some(Num::Float(57.0)));
        assert_eq!(p(Value::Float(0.41)), Some(Num::Float(41.0)));
        assert_eq!(p(Value::Float(1e-5)), Some(Num::Float(0.001)));
        assert_eq!(p(Value::Float(1.0)), Some(Num::Float(100.0)));
        assert_eq!(p(Value::Int(1)), Some(Num::Int(100)));
        assert_eq!(p(Value::Float(-0.5)), None);
        assert_eq!(p(Value::Float(f64::MAX)), None);
    }

    #[test]
    fn num_arithmetic_matches_python() {
        assert_eq!(Num::Int(1).plus(Num::Float(0.5)), Num::Float(1.5));
        assert!(Num::Int(3).le(Num::Float(3.0)));
        assert!(!Num::Float(3.5).le(Num::Int(3)));
        assert!(Num::Int(9_007_199_254_740_993).le(Num::Float(9_007_199_254_740_994.0)));
    }
}
