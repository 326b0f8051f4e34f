//! `fuzz-tools`: spawns `mcp-gateway`, speaks raw newline-delimited JSON-RPC to it over
//! stdio and sends thousands of `tools/call` requests with seeded, fuzzed arguments.
//!
//! ```text
//! fuzz-tools --gateway target/debug/mcp-gateway [--calls 10000] [--seed N] [--inflight 32]
//! ```
//!
//! The environment is passed through (the caller sets DB_NAME etc.). Checked: the gateway
//! never exits while its stdin is open; every stdout line is a JSON-RPC 2.0 message; every
//! request gets exactly one response; a call to a known tool always gets a `result` (never
//! a JSON-RPC error) and a failure carries the tool error envelope (docs/tools.md, Errors)
//! `{"error": {"code", "message", "suggested_action"}}` with one of its codes and a message
//! of at most 1,000 characters (a message is one sentence); a call to an
//! unknown tool gets JSON-RPC error -32602 (as the MCP specification answers) or that
//! envelope; after stdin closes the gateway exits 0 within 10 s. Exit 0 when all held, 1
//! when not, 2 on bad usage.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Semaphore, oneshot};

const USAGE: &str = "usage: fuzz-tools --gateway PATH_TO_mcp-gateway [--calls 10000] [--seed N] [--inflight 32] [--call-timeout-secs 60]";

/// The codes the error envelope may carry over stdio (docs/tools.md, Errors; FORBIDDEN and
/// RATE_LIMITED need an HTTP caller's scopes or guardrails).
const DOCUMENTED_CODES: [&str; 14] = [
    "TEMPLATE_REQUIRED",
    "USER_OPTED_OUT",
    "FREQUENCY_CAP_EXCEEDED",
    "POLICY_RESTRICTION",
    "WINDOW_CLOSED",
    "FEATURE_NOT_AVAILABLE",
    "TEMPLATE_NOT_APPROVED",
    "CAMPAIGN_TERMINAL_STATE",
    "INVALID_STATE_TRANSITION",
    "CONVERSATION_ACTIVE",
    "INVALID_ARGUMENT",
    "NOT_FOUND",
    "UPSTREAM_ERROR",
    "UNAVAILABLE",
];

/// JSON-RPC "invalid params": what the MCP spec answers for an unknown tool.
const INVALID_PARAMS: i64 = -32602;
/// An error message longer than this (in characters) is a violation: a message is one
/// sentence, so a message that echoes a huge argument back is a bug.
const LONG_MESSAGE: usize = 1000;
/// Offending request/response pairs printed, and how much of each.
const MAX_EXAMPLES: usize = 8;
const EXAMPLE_CHARS: usize = 400;

struct Opts {
    gateway: PathBuf,
    calls: usize,
    seed: u64,
    inflight: usize,
    call_timeout: Duration,
}

fn parse_opts() -> Result<Opts, String> {
    let mut gateway = None;
    let mut calls = 10_000usize;
    let mut seed = 1u64;
    let mut inflight = 32usize;
    let mut call_timeout = 60u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag} must be a whole number, got {v:?}"))
        };
        match flag.as_str() {
            "--gateway" => gateway = Some(PathBuf::from(value)),
            "--calls" => calls = number(&value)? as usize,
            "--seed" => seed = number(&value)?,
            "--inflight" => inflight = number(&value)?.max(1) as usize,
            "--call-timeout-secs" => call_timeout = number(&value)?.max(1),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Opts {
        gateway: gateway.ok_or("--gateway is required")?,
        calls,
        seed,
        inflight,
        call_timeout: Duration::from_secs(call_timeout),
    })
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

// ------------------------------------------------------------------ the connection

/// One JSON-RPC peer over the gateway's stdio. A reader task owns stdout and hands each
/// response to the request waiting for its id.
struct Conn {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    answered: Mutex<HashSet<u64>>,
    /// Problems the reader saw (bad lines, unmatched or duplicate responses).
    violations: Mutex<Vec<String>>,
    notifications: AtomicUsize,
    server_requests: AtomicUsize,
    stdout_closed: AtomicBool,
}

impl Conn {
    fn violation(&self, what: String) {
        self.violations.lock().expect("lock").push(what);
    }

    async fn send_line(&self, line: &str) -> Result<()> {
        let mut guard = self.stdin.lock().await;
        let stdin = guard
            .as_mut()
            .ok_or_else(|| anyhow!("stdin already closed"))?;
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        stdin.write_all(&bytes).await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Sends a request and waits for its response.
    async fn request(&self, id: u64, line: &str, timeout: Duration) -> Result<Value, String> {
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("lock").insert(id, tx);
        if let Err(e) = self.send_line(line).await {
            self.pending.lock().expect("lock").remove(&id);
            return Err(format!("writing the request failed: {e}"));
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err("no response: the gateway's stdout closed".into()),
            Err(_) => {
                self.pending.lock().expect("lock").remove(&id);
                Err(format!("no response within {} s", timeout.as_secs()))
            }
        }
    }
}

/// Why a stdout message is not JSON-RPC 2.0, if it is not.
fn jsonrpc_problem(v: &Value) -> Option<String> {
    let Some(obj) = v.as_object() else {
        return Some("not a JSON object (batches are never sent to it)".into());
    };
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Some("\"jsonrpc\" is not \"2.0\"".into());
    }
    if let Some(method) = obj.get("method") {
        if !method.is_string() {
            return Some("\"method\" is not a string".into());
        }
        if obj.contains_key("result") || obj.contains_key("error") {
            return Some("a request/notification carries result or error".into());
        }
        return None;
    }
    let id_ok = obj
        .get("id")
        .is_some_and(|id| id.is_string() || id.is_number());
    if !id_ok {
        return Some("a response without a string or number id".into());
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => None,
        (None, Some(e)) => {
            let ok = e.get("code").is_some_and(Value::is_i64)
                && e.get("message").is_some_and(Value::is_string);
            (!ok).then(|| "error without an integer code and a string message".into())
        }
        _ => Some("a response must carry exactly one of result and error".into()),
    }
}

async fn read_stdout(conn: Arc<Conn>, stdout: ChildStdout) {
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                conn.violation(format!("reading stdout failed: {e}"));
                break;
            }
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let shown = || truncate(&String::from_utf8_lossy(line), EXAMPLE_CHARS);
        let v: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                conn.violation(format!("stdout line is not JSON ({e}): {}", shown()));
                continue;
            }
        };
        if let Some(p) = jsonrpc_problem(&v) {
            conn.violation(format!(
                "stdout line is not JSON-RPC 2.0 ({p}): {}",
                shown()
            ));
            continue;
        }
        if v.get("method").is_some() {
            if v.get("id").is_some() {
                conn.server_requests.fetch_add(1, Ordering::Relaxed);
            } else {
                conn.notifications.fetch_add(1, Ordering::Relaxed);
            }
            continue;
        }
        let Some(id) = v["id"].as_u64() else {
            conn.violation(format!("response to an id never sent: {}", shown()));
            continue;
        };
        let waiter = conn.pending.lock().expect("lock").remove(&id);
        let first = conn.answered.lock().expect("lock").insert(id);
        match waiter {
            Some(tx) => {
                let _ = tx.send(v);
            }
            None if !first => conn.violation(format!("second response to id {id}: {}", shown())),
            None => conn.violation(format!(
                "response to id {id}, which is not waiting (never sent or timed out): {}",
                shown()
            )),
        }
    }
    conn.stdout_closed.store(true, Ordering::SeqCst);
    // Dropping the senders wakes every waiter with "stdout closed".
    conn.pending.lock().expect("lock").clear();
}

/// The gateway's stderr (JSON logs): the tail is kept for diagnosis, panics are counted.
#[derive(Default)]
struct StderrLog {
    tail: Vec<String>,
    lines: usize,
    panics: Vec<String>,
    /// ERROR-level log lines: not a violation by themselves, but worth a look.
    errors: usize,
    first_errors: Vec<String>,
}

async fn read_stderr(log: Arc<Mutex<StderrLog>>, stderr: tokio::process::ChildStderr) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    while let Ok(n) = reader.read_until(b'\n', &mut buf).await {
        if n == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        buf.clear();
        let mut log = log.lock().expect("lock");
        log.lines += 1;
        if line.contains("panicked at") && log.panics.len() < MAX_EXAMPLES {
            log.panics.push(truncate(&line, EXAMPLE_CHARS));
        }
        if line.contains("\"level\":\"ERROR\"") {
            log.errors += 1;
            if log.first_errors.len() < 3 {
                log.first_errors.push(truncate(&line, EXAMPLE_CHARS));
            }
        }
        log.tail.push(truncate(&line, EXAMPLE_CHARS));
        if log.tail.len() > 30 {
            log.tail.remove(0);
        }
    }
}

// ------------------------------------------------------------------ tools and fuzzing

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Str,
    Int,
    Num,
    Bool,
    Other,
}

#[derive(Clone, Debug)]
struct Prop {
    name: String,
    kind: Kind,
    /// A string that holds JSON (its description says so).
    json_string: bool,
}

#[derive(Clone, Debug)]
struct ToolSpec {
    name: String,
    props: Vec<Prop>,
    required: Vec<String>,
}

fn tool_spec(tool: &Value) -> Option<ToolSpec> {
    let name = tool["name"].as_str()?.to_string();
    let schema = &tool["inputSchema"];
    let props = schema["properties"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(pname, p)| {
                    let ty = match &p["type"] {
                        Value::String(s) => s.clone(),
                        Value::Array(a) => a
                            .iter()
                            .filter_map(Value::as_str)
                            .find(|t| *t != "null")
                            .unwrap_or("string")
                            .to_string(),
                        _ => "string".into(),
                    };
                    let kind = match ty.as_str() {
                        "string" => Kind::Str,
                        "integer" => Kind::Int,
                        "number" => Kind::Num,
                        "boolean" => Kind::Bool,
                        _ => Kind::Other,
                    };
                    let json_string = kind == Kind::Str
                        && p["description"]
                            .as_str()
                            .is_some_and(|d| d.contains("JSON"));
                    Prop {
                        name: pname.clone(),
                        kind,
                        json_string,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let required = schema["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Some(ToolSpec {
        name,
        props,
        required,
    })
}

/// Identifiers and names seen in results, reused so some calls hit real rows.
#[derive(Default)]
struct Pool {
    message_ids: Vec<String>,
    campaign_ids: Vec<String>,
    conversation_ids: Vec<String>,
    templates: Vec<String>,
}

impl Pool {
    fn harvest(&mut self, v: &Value) {
        fn push(list: &mut Vec<String>, s: &str) {
            if list.len() < 64 && !list.iter().any(|x| x == s) {
                list.push(s.to_string());
            }
        }
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if let Some(s) = x.as_str().filter(|s| s.len() < 100) {
                        match k.as_str() {
                            "message_id" => push(&mut self.message_ids, s),
                            "campaign_id" => push(&mut self.campaign_ids, s),
                            "conversation_id" => push(&mut self.conversation_ids, s),
                            "template_name" | "name" if m.contains_key("status") => {
                                push(&mut self.templates, s)
                            }
                            _ => {}
                        }
                    } else {
                        self.harvest(x);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.harvest(x)),
            _ => {}
        }
    }
}

const PHONES: [&str; 8] = [
    "+6281234567890",
    "6281234567890",
    "+62 812-3456-7890",
    "+1 (415) 555-0100",
    "+44 20 7946 0958",
    "+91-98765-43210",
    "+55 11 91234-5678",
    "+628123456789",
];

/// Strings meant to break parsers, encoders and Postgres (NUL).
const NASTY: [&str; 24] = [
    "\u{0}",
    "+62\u{0}81234567890",
    "a\u{0}b",
    "\u{1}\u{2}\u{7f}\u{1b}[31mred",
    "\u{202e}evil\u{202c}",
    "\u{200b}\u{feff}",
    "e\u{301}\u{301}\u{301}",
    "😀👨‍👩‍👧‍👦",
    "日本語のテキスト",
    "null",
    "undefined",
    "' OR 1=1 --",
    "'; DROP TABLE customers; --",
    "%s%n%x",
    "../../etc/passwd",
    "\\",
    "\"",
    "{{1}}",
    "\r\n\r\n",
    "１２３４５６７８９０",
    "+٦٢٨١٢٣٤٥٦٧٨٩٠",
    "\t  \n",
    "<script>alert(1)</script>",
    "$(reboot)",
];

const BAD_JSON: [&str; 16] = [
    "[\"a\",",
    "{nope",
    "null",
    "true",
    "42",
    "\"just a string\"",
    "[1, 2, {}]",
    "{\"1\": {\"x\": []}}",
    "[\"\\ud800\"]",
    "[1e999]",
    "{\"1\": \"a\", \"1\": \"b\"}",
    "NaN",
    "{'single': 'quotes'}",
    "[] []",
    "\u{feff}[]",
    "{\"type\": \"text\"}",
];

const BAD_NUMBERS: [&str; 14] = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "0x10",
    " 50 ",
    "５０",
    "50abc",
    "-0",
    "+5",
    "1_000",
    "9223372036854775808",
    "-9223372036854775809",
    "4.0",
];

const BAD_TIMES: [&str; 14] = [
    "2000-01-01T00:00:00Z",
    "2030-02-30T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59-14:00",
    "2030-01-01T00:00:00",
    "2030-01-01 00:00:00Z",
    "2030-01-01T24:00:00Z",
    "2030-06-30T23:59:60Z",
    "1970-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "tomorrow",
    "1893456000",
    "2030-01-01T00:00:00.123456789123Z",
    "2030-13-01T00:00:00Z",
];

const BAD_UUIDS: [&str; 9] = [
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "0192F3C4-5D6E-7F80-9A1B-2C3D4E5F6A7B",
    "{0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b}",
    "urn:uuid:0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7b",
    "0192f3c45d6e7f809a1b2c3d4e5f6a7b",
    "0192f3c4-5d6e-7f80-9a1b-2c3d4e5f6a7bx",
    "0192f3c4-5d6e-7f80-9a1b",
    "not-a-uuid",
];

const BAD_PHONES: [&str; 14] = [
    "+",
    "+0",
    "00000000",
    "1234567",
    "1234567890123456",
    "+62 812 3456 7890 ext. 5",
    "tel:+6281234567890",
    "+62-812-3456-7890-",
    "(((+62)))8123456789",
    "6281234567890\n",
    "++6281234567890",
    "+1 415 555 0100",
    "0081234567890",
    "62812345678901234567890",
];

/// What a call was built to test (counted in the summary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Strategy {
    Valid,
    Mutated,
    ArgsShape,
    UnknownTool,
}

struct Fuzzer {
    rng: StdRng,
    tools: Vec<ToolSpec>,
    pool: Arc<Mutex<Pool>>,
}

impl Fuzzer {
    fn uuid(&mut self) -> String {
        uuid::Uuid::from_u128(self.rng.random()).to_string()
    }

    fn pick<'a>(&mut self, list: &'a [&'a str]) -> &'a str {
        list.choose(&mut self.rng).copied().unwrap_or("")
    }

    fn pooled(&mut self, which: fn(&Pool) -> &Vec<String>) -> Option<String> {
        let pool = self.pool.lock().expect("lock");
        let list = which(&pool);
        if list.is_empty() || self.rng.random_bool(0.3) {
            return None;
        }
        list.choose(&mut self.rng).cloned()
    }

    /// A plausible value for a parameter, by its name.
    fn valid_value(&mut self, tool: &str, p: &Prop) -> Value {
        let days = self.rng.random_range(1..60);
        let s: String = match p.name.as_str() {
            "customer_id" | "to" => {
                if self.rng.random_bool(0.3) {
                    format!("+62812{:07}", self.rng.random_range(0..10_000_000))
                } else {
                    self.pick(&PHONES).into()
                }
            }
            "message_type" => self
                .pick(&[
                    "marketing",
                    "utility",
                    "service",
                    "template",
                    "text",
                    "MARKETING",
                ])
                .into(),
            "conversation_type" => self
                .pick(&["marketing", "utility", "authentication", "service"])
                .into(),
            "channel" => self.pick(&["whatsapp", "WhatsApp"]).into(),
            "template_name" => self.pooled(|p| &p.templates).unwrap_or_else(|| {
                self.pick(&["order_update", "welcome", "appointment_reminder"])
                    .into()
            }),
            "locale" | "language" | "locale_filter" => self.pick(&["en", "en_US", "id"]).into(),
            "variables" if tool == "schedule_campaign" => "{\"1\": \"friend\"}".into(),
            "variables" => "[\"Ana\", \"#1234\"]".into(),
            "message_id" => self
                .pooled(|p| &p.message_ids)
                .unwrap_or_else(|| self.uuid()),
            "campaign_id" => self
                .pooled(|p| &p.campaign_ids)
                .unwrap_or_else(|| self.uuid()),
            "conversation_id" => self
                .pooled(|p| &p.conversation_ids)
                .unwrap_or_else(|| self.uuid()),
            "message_ids" => {
                let a = self
                    .pooled(|p| &p.message_ids)
                    .unwrap_or_else(|| self.uuid());
                json!([a, self.uuid()]).to_string()
            }
            "deliver_at" => (chrono::Utc::now() + chrono::Duration::days(days)).to_rfc3339(),
            "content" => {
                if self.rng.random_bool(0.5) {
                    "{\"type\":\"text\",\"text\":{\"body\":\"Hello\"}}".into()
                } else {
                    "{\"type\":\"template\",\"template\":{\"name\":\"order_update\",\"language\":\"en\",\"variables\":[\"#1234\"]}}".into()
                }
            }
            "code" => self
                .pick(&["131047", "131026", "130429", "131050", "100", "999999"])
                .into(),
            "limit" => return json!(self.rng.random_range(1..=500)),
            "offset" => return json!(self.rng.random_range(0..100)),
            "quantity" => return json!(self.rng.random_range(1..=1000)),
            "body_text" => "Hello {{1}}, your order {{2}} is on its way.".into(),
            "text" | "message_text" => "Hi, thanks for your message.".into(),
            "name" if tool == "create_template" => {
                format!("fuzz_tpl_{}", self.rng.random_range(0..1_000_000))
            }
            "name" => "fuzz campaign".into(),
            "category" => self
                .pick(&["UTILITY", "MARKETING", "AUTHENTICATION"])
                .into(),
            "type" => self.pick(&["broadcast", "marketing", "utility"]).into(),
            "recipient_country" => self.pick(&["ID", "US", "IN", "BR", "GB", "DEFAULT"]).into(),
            "status_filter" if tool == "list_conversations" => {
                self.pick(&["open", "closed", "expiring_soon"]).into()
            }
            "status_filter" => self.pick(&["APPROVED", "PENDING", "REJECTED"]).into(),
            "category_filter" => self
                .pick(&["marketing", "utility", "authentication"])
                .into(),
            "audience_filter" => self
                .pick(&[
                    "{}",
                    "{\"include_tags\": [\"vip\"]}",
                    "{\"opt_in\": \"marketing\"}",
                ])
                .into(),
            "reason" => "fuzzing".into(),
            _ => match p.kind {
                Kind::Int | Kind::Num => return json!(1),
                Kind::Bool => return json!(true),
                _ => "x".into(),
            },
        };
        Value::String(s)
    }

    fn valid_args(&mut self, t: &ToolSpec) -> Map<String, Value> {
        let mut args = Map::new();
        for p in &t.props {
            if t.required.contains(&p.name) || self.rng.random_bool(0.4) {
                args.insert(p.name.clone(), self.valid_value(&t.name, p));
            }
        }
        args
    }

    fn huge_string(&mut self) -> String {
        const N: usize = 100 * 1024;
        match self.rng.random_range(0..5) {
            0 => "A".repeat(N),
            1 => "é".repeat(N / 2),
            2 => "😀".repeat(N / 4),
            3 => "6".repeat(N),
            _ => "{".repeat(N),
        }
    }

    fn nested(&mut self) -> Value {
        let depth = self.rng.random_range(1..40);
        let mut v = json!("leaf");
        for i in 0..depth {
            v = if i % 2 == 0 {
                json!({"a": v, "b": [1, null]})
            } else {
                json!([v])
            };
        }
        if self.rng.random_bool(0.2) {
            return Value::Array((0..1000).map(|i| json!(i)).collect());
        }
        v
    }

    fn wrong_type(&mut self, p: &Prop) -> Value {
        let candidates = [
            json!(42),
            json!(-3.5),
            json!(true),
            json!(false),
            json!([]),
            json!(["a", 1]),
            json!({}),
            json!({"a": 1}),
            json!("a string"),
        ];
        loop {
            let v = candidates
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
            let same = match p.kind {
                Kind::Str => v.is_string(),
                Kind::Int | Kind::Num => v.is_number(),
                Kind::Bool => v.is_boolean(),
                Kind::Other => false,
            };
            if !same {
                return v;
            }
        }
    }

    fn number(&mut self) -> Value {
        match self.rng.random_range(0..3) {
            0 => [
                json!(-1),
                json!(0),
                json!(-2_147_483_649i64),
                json!(4_294_967_296u64),
                json!(9_007_199_254_740_993u64),
                json!(1e308),
                json!(-1e308),
                json!(1.5),
                json!(-0.0),
                json!(1e-300),
                json!(u64::MAX),
                json!(i64::MIN),
                json!(501),
            ]
            .choose(&mut self.rng)
            .cloned()
            .unwrap_or_default(),
            _ => json!(self.pick(&BAD_NUMBERS)),
        }
    }

    /// A hostile value for `p`: a general mutation, or one aimed at what the parameter
    /// holds (a phone, an id, a time, embedded JSON).
    fn hostile(&mut self, p: &Prop) -> (&'static str, Value) {
        let name = p.name.as_str();
        let mut kinds = vec![
            "wrong_type",
            "huge_string",
            "nasty_chars",
            "number",
            "null",
            "nested",
            "empty",
        ];
        match name {
            "customer_id" | "to" => kinds.extend(["bad_phone", "bad_phone"]),
            "deliver_at" => kinds.extend(["bad_time", "bad_time"]),
            _ if name.ends_with("_id") => kinds.extend(["bad_uuid", "bad_uuid"]),
            _ => {}
        }
        if p.json_string {
            kinds.extend(["bad_json", "bad_json", "deep_json_string"]);
        }
        let kind: &'static str = kinds.choose(&mut self.rng).copied().expect("non-empty");
        let v = match kind {
            "wrong_type" => self.wrong_type(p),
            "huge_string" => json!(self.huge_string()),
            "nasty_chars" => json!(self.pick(&NASTY)),
            "number" => self.number(),
            "null" => Value::Null,
            "nested" => self.nested(),
            "empty" => json!(self.pick(&["", " ", "\n\t"])),
            "bad_phone" => json!(self.pick(&BAD_PHONES)),
            "bad_time" => json!(self.pick(&BAD_TIMES)),
            "bad_uuid" => json!(self.pick(&BAD_UUIDS)),
            "bad_json" => json!(self.pick(&BAD_JSON)),
            // Far deeper than serde_json's recursion limit.
            _ if self.rng.random_bool(0.5) => {
                json!(format!("{}{}", "[".repeat(5000), "]".repeat(5000)))
            }
            _ => json!(format!("{}{}", "{\"a\":".repeat(300), "}".repeat(300))),
        };
        (kind, v)
    }

    fn unknown_name(&mut self, known: &HashSet<String>) -> String {
        let base = self
            .tools
            .choose(&mut self.rng)
            .map(|t| t.name.clone())
            .unwrap_or_default();
        let candidates = [
            String::new(),
            " ".into(),
            format!("{base}s"),
            base.to_uppercase(),
            format!("{base} "),
            format!(" {base}"),
            format!("{base}\u{0}"),
            format!("../{base}"),
            "tools/call".into(),
            "x".repeat(10_000),
            "日本語".into(),
            "__proto__".into(),
            "rpc.discover".into(),
            format!("fuzz_{}", self.rng.random_range(0..1_000_000)),
        ];
        loop {
            let name = candidates
                .choose(&mut self.rng)
                .cloned()
                .unwrap_or_default();
            if !known.contains(&name) {
                return name;
            }
        }
    }

    /// The `params` of one tools/call, what it tests, and whether the tool is known.
    fn next_call(&mut self, known: &HashSet<String>) -> (Value, Strategy, Vec<&'static str>, bool) {
        let roll: f64 = self.rng.random();
        if roll < 0.03 || self.tools.is_empty() {
            let name = self.unknown_name(known);
            let t = self.tools.choose(&mut self.rng).cloned();
            let args = t.map(|t| self.valid_args(&t)).unwrap_or_default();
            return (
                json!({"name": name, "arguments": args}),
                Strategy::UnknownTool,
                vec![],
                false,
            );
        }
        let t = self
            .tools
            .choose(&mut self.rng)
            .cloned()
            .expect("non-empty");
        if roll < 0.06 {
            let params = match self.rng.random_range(0..3) {
                0 => json!({"name": t.name}),
                1 => json!({"name": t.name, "arguments": null}),
                _ => json!({"name": t.name, "arguments": {}}),
            };
            return (params, Strategy::ArgsShape, vec!["args_shape"], true);
        }
        let mut args = self.valid_args(&t);
        if roll < 0.18 {
            return (
                json!({"name": t.name, "arguments": args}),
                Strategy::Valid,
                vec![],
                true,
            );
        }
        let mut applied = Vec::new();
        for _ in 0..self.rng.random_range(1..=3) {
            match self.rng.random_range(0..10) {
                // Drop a required parameter.
                0 if !t.required.is_empty() => {
                    let r = t
                        .required
                        .choose(&mut self.rng)
                        .cloned()
                        .expect("non-empty");
                    args.remove(&r);
                    applied.push("missing_required");
                }
                // Unknown extra parameters.
                1 => {
                    for _ in 0..self.rng.random_range(1..=5) {
                        let key = self
                            .pick(&[
                                "extra",
                                "__proto__",
                                "constructor",
                                "",
                                "CUSTOMER_ID",
                                "customer_id ",
                                "客户",
                                "$where",
                            ])
                            .to_string();
                        let key = format!("{key}{}", self.rng.random_range(0..3));
                        let p = Prop {
                            name: key.clone(),
                            kind: Kind::Other,
                            json_string: false,
                        };
                        let (_, v) = self.hostile(&p);
                        args.insert(key, v);
                    }
                    applied.push("extra_properties");
                }
                _ => {
                    if let Some(p) = t.props.choose(&mut self.rng).cloned() {
                        let (what, v) = self.hostile(&p);
                        args.insert(p.name.clone(), v);
                        applied.push(what);
                    }
                }
            }
        }
        (
            json!({"name": t.name, "arguments": args}),
            Strategy::Mutated,
            applied,
            true,
        )
    }
}

// ------------------------------------------------------------------ checking answers

/// What one tools/call came back as.
enum Outcome {
    Ok,
    /// The code and the length of the message.
    Envelope(String, usize),
    RpcError,
    Violation(String),
}

/// The tools' error envelope (docs/tools.md, "Errors"), or why it is not one. Returns (code, message length).
fn envelope_code(env: &Value) -> Result<(String, usize), String> {
    let e = env
        .get("error")
        .and_then(Value::as_object)
        .ok_or("no \"error\" object")?;
    let code = e
        .get("code")
        .and_then(Value::as_str)
        .ok_or("error.code is not a string")?;
    if !DOCUMENTED_CODES.contains(&code) {
        return Err(format!(
            "error.code {code:?} is not one of the documented error codes"
        ));
    }
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or("error.message is missing or empty")?;
    e.get("suggested_action")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or("error.suggested_action is missing or empty")?;
    Ok((code.to_string(), message.chars().count()))
}

/// The JSON of the result's first text block.
fn text_json(result: &Value) -> Option<Value> {
    result["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "text")
        .and_then(|c| c["text"].as_str())
        .and_then(|t| serde_json::from_str(t).ok())
}

fn check_response(resp: &Value, known_tool: bool) -> Outcome {
    if let Some(err) = resp.get("error") {
        let code = err["code"].as_i64().unwrap_or(0);
        if known_tool {
            return Outcome::Violation(format!("JSON-RPC error {code} for a known tool"));
        }
        return if code == INVALID_PARAMS {
            Outcome::RpcError
        } else {
            Outcome::Violation(format!(
                "unknown tool answered JSON-RPC error {code}, expected {INVALID_PARAMS}"
            ))
        };
    }
    let result = &resp["result"];
    if !result["content"].is_array() {
        return Outcome::Violation("result has no content array".into());
    }
    let is_error = match result.get("isError") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Outcome::Violation("isError is not a boolean".into()),
    };
    let structured = result.get("structuredContent").filter(|v| !v.is_null());
    let text = text_json(result);
    if let (Some(s), Some(t)) = (structured, &text)
        && s != t
    {
        return Outcome::Violation("the text block's JSON differs from structuredContent".into());
    }
    if !is_error {
        if !known_tool {
            return Outcome::Violation("an unknown tool name got a successful result".into());
        }
        return match structured {
            Some(Value::Object(_)) => Outcome::Ok,
            _ => Outcome::Violation("a success without an object structuredContent".into()),
        };
    }
    let Some(env) = structured.cloned().or(text) else {
        return Outcome::Violation("isError without structuredContent or JSON text".into());
    };
    match envelope_code(&env) {
        Ok((code, len)) => Outcome::Envelope(code, len),
        Err(why) => Outcome::Violation(format!(
            "isError result is not the tools' error envelope: {why}"
        )),
    }
}

#[derive(Default)]
struct Stats {
    answered: usize,
    results_ok: usize,
    envelope_errors: BTreeMap<String, usize>,
    unknown_calls: usize,
    unknown_rpc_errors: usize,
    unknown_envelopes: usize,
    protocol_errors: usize,
    no_response: usize,
    violations: usize,
    examples: Vec<String>,
    /// calls, ok, tool errors per tool
    per_tool: BTreeMap<String, [usize; 3]>,
    strategies: BTreeMap<String, usize>,
    mutations: BTreeMap<&'static str, usize>,
    latencies_us: Vec<u64>,
    /// Error messages longer than LONG_MESSAGE, and the longest (length, tool and code).
    long_messages: usize,
    longest_message: (usize, String),
}

impl Stats {
    fn violation(&mut self, what: String) {
        self.violations += 1;
        if self.examples.len() < MAX_EXAMPLES {
            self.examples.push(what);
        }
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

// ------------------------------------------------------------------ the drill

struct Setup {
    child: Child,
    conn: Arc<Conn>,
    reader: tokio::task::JoinHandle<()>,
    stderr_reader: tokio::task::JoinHandle<()>,
    stderr: Arc<Mutex<StderrLog>>,
}

fn spawn(gateway: &PathBuf) -> Result<Setup> {
    let mut child = Command::new(gateway)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("spawning {}", gateway.display()))?;
    let conn = Arc::new(Conn {
        stdin: tokio::sync::Mutex::new(child.stdin.take()),
        pending: Mutex::default(),
        answered: Mutex::default(),
        violations: Mutex::default(),
        notifications: AtomicUsize::new(0),
        server_requests: AtomicUsize::new(0),
        stdout_closed: AtomicBool::new(false),
    });
    let reader = tokio::spawn(read_stdout(
        conn.clone(),
        child.stdout.take().context("stdout")?,
    ));
    let stderr = Arc::new(Mutex::new(StderrLog::default()));
    let stderr_reader = tokio::spawn(read_stderr(
        stderr.clone(),
        child.stderr.take().context("stderr")?,
    ));
    Ok(Setup {
        child,
        conn,
        reader,
        stderr_reader,
        stderr,
    })
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// initialize, notifications/initialized, tools/list (all pages).
async fn handshake(conn: &Conn, next_id: &mut u64) -> Result<(String, Vec<ToolSpec>)> {
    let init = conn
        .request(
            *next_id,
            &rpc(
                *next_id,
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "fuzz-tools", "version": env!("CARGO_PKG_VERSION")}}),
            ),
            Duration::from_secs(120),
        )
        .await
        .map_err(|e| anyhow!("initialize: {e}"))?;
    *next_id += 1;
    let version = init["result"]["protocolVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("initialize answered without protocolVersion: {init}"))?
        .to_string();
    conn.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string())
        .await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = conn
            .request(
                *next_id,
                &rpc(*next_id, "tools/list", params),
                Duration::from_secs(30),
            )
            .await
            .map_err(|e| anyhow!("tools/list: {e}"))?;
        *next_id += 1;
        let list = page["result"]["tools"]
            .as_array()
            .ok_or_else(|| anyhow!("tools/list answered without tools: {page}"))?;
        tools.extend(list.iter().filter_map(tool_spec));
        match page["result"]["nextCursor"].as_str() {
            Some(c) if !c.is_empty() => cursor = Some(c.to_string()),
            _ => break,
        }
    }
    if tools.is_empty() {
        bail!("tools/list returned no tools");
    }
    Ok((version, tools))
}

async fn run(opts: Opts) -> Result<bool> {
    let startup = Instant::now();
    let Setup {
        mut child,
        conn,
        reader,
        stderr_reader,
        stderr,
    } = spawn(&opts.gateway)?;
    let mut next_id = 1u64;
    let (version, tools) = match handshake(&conn, &mut next_id).await {
        Ok(x) => x,
        Err(e) => {
            for l in &stderr.lock().expect("lock").tail {
                eprintln!("  gateway stderr: {l}");
            }
            return Err(e);
        }
    };
    let known: Arc<HashSet<String>> = Arc::new(tools.iter().map(|t| t.name.clone()).collect());
    let pool = Arc::new(Mutex::new(Pool::default()));
    // Real template names, when the database has some.
    if known.contains("list_templates")
        && let Ok(v) = conn
            .request(
                next_id,
                &rpc(
                    next_id,
                    "tools/call",
                    json!({"name": "list_templates", "arguments": {"limit": 100}}),
                ),
                Duration::from_secs(30),
            )
            .await
    {
        pool.lock()
            .expect("lock")
            .harvest(&v["result"]["structuredContent"]);
    }
    next_id += 1;
    let startup = startup.elapsed();
    eprintln!(
        "fuzz-tools: gateway up in {:.1} s (protocol {version}), {} tools, {} template names; sending {} calls, {} in flight, seed {}",
        startup.as_secs_f64(),
        tools.len(),
        pool.lock().expect("lock").templates.len(),
        opts.calls,
        opts.inflight,
        opts.seed
    );

    let mut fuzzer = Fuzzer {
        rng: StdRng::seed_from_u64(opts.seed),
        tools,
        pool: pool.clone(),
    };
    let stats = Arc::new(Mutex::new(Stats::default()));
    let done = Arc::new(AtomicUsize::new(0));
    let sem = Arc::new(Semaphore::new(opts.inflight));
    let mut early_exit = None;
    let started = Instant::now();
    for i in 0..opts.calls {
        if i % 100 == 0
            && let Ok(Some(status)) = child.try_wait()
        {
            early_exit = Some(status);
            break;
        }
        let permit = sem.clone().acquire_owned().await.expect("semaphore open");
        let (params, strategy, applied, known_tool) = fuzzer.next_call(&known);
        let id = next_id;
        next_id += 1;
        let line = rpc(id, "tools/call", params.clone());
        let tool = params["name"].as_str().unwrap_or("").to_string();
        let (conn, stats, pool, done) = (conn.clone(), stats.clone(), pool.clone(), done.clone());
        let (total, timeout) = (opts.calls, opts.call_timeout);
        tokio::spawn(async move {
            let t0 = Instant::now();
            let answer = conn.request(id, &line, timeout).await;
            let elapsed = t0.elapsed();
            let outcome = match &answer {
                Ok(resp) => check_response(resp, known_tool),
                Err(e) => Outcome::Violation(e.clone()),
            };
            if let (Ok(resp), Outcome::Ok) = (&answer, &outcome) {
                pool.lock()
                    .expect("lock")
                    .harvest(&resp["result"]["structuredContent"]);
            }
            let mut s = stats.lock().expect("lock");
            *s.strategies.entry(format!("{strategy:?}")).or_default() += 1;
            for m in &applied {
                *s.mutations.entry(m).or_default() += 1;
            }
            if answer.is_ok() {
                s.answered += 1;
                s.latencies_us.push(elapsed.as_micros() as u64);
            } else {
                s.no_response += 1;
            }
            let key = if known_tool {
                tool.clone()
            } else {
                "(unknown tool)".to_string()
            };
            s.per_tool.entry(key.clone()).or_default()[0] += 1;
            if !known_tool {
                s.unknown_calls += 1;
            }
            match outcome {
                Outcome::Ok => {
                    s.results_ok += 1;
                    s.per_tool.entry(key).or_default()[1] += 1;
                }
                Outcome::Envelope(code, len) => {
                    if len > LONG_MESSAGE {
                        s.long_messages += 1;
                        let resp = match &answer {
                            Ok(r) => truncate(&r.to_string(), EXAMPLE_CHARS),
                            Err(_) => "(none)".into(),
                        };
                        s.violation(format!(
                            "{key} {code}: error message has {len} characters, more than {LONG_MESSAGE} (docs/tools.md: one line)\n    request:  {}\n    response: {resp}",
                            truncate(&line, EXAMPLE_CHARS)
                        ));
                    }
                    if len > s.longest_message.0 {
                        s.longest_message = (
                            len,
                            format!("{key} {code}, request {}", truncate(&line, 200)),
                        );
                    }
                    if known_tool {
                        *s.envelope_errors.entry(code).or_default() += 1;
                        s.per_tool.entry(key).or_default()[2] += 1;
                    } else {
                        s.unknown_envelopes += 1;
                    }
                }
                Outcome::RpcError => s.unknown_rpc_errors += 1,
                Outcome::Violation(why) => {
                    if known_tool && answer.as_ref().is_ok_and(|r| r.get("error").is_some()) {
                        s.protocol_errors += 1;
                    }
                    let resp = match &answer {
                        Ok(r) => truncate(&r.to_string(), EXAMPLE_CHARS),
                        Err(_) => "(none)".into(),
                    };
                    s.violation(format!(
                        "{why}\n    request:  {}\n    response: {resp}",
                        truncate(&line, EXAMPLE_CHARS)
                    ));
                }
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n % 1000 == 0 || n == total {
                eprintln!(
                    "fuzz-tools: {n}/{total} calls answered-or-failed, {} violations so far",
                    s.violations
                );
            }
            drop(s);
            drop(permit);
        });
    }
    // Wait for every call still in flight.
    let _all = sem
        .acquire_many(opts.inflight as u32)
        .await
        .expect("semaphore open");
    let elapsed = started.elapsed();
    let sent = done.load(Ordering::Relaxed);

    // The gateway must still be running, then exit 0 soon after stdin closes.
    let mut exit_problems = Vec::new();
    let exited_early = match early_exit {
        Some(status) => Some(status),
        None => child.try_wait().ok().flatten(),
    };
    if let Some(status) = exited_early {
        exit_problems.push(format!(
            "the gateway exited before stdin was closed ({status})"
        ));
    }
    drop(conn.stdin.lock().await.take());
    let close_started = Instant::now();
    let exit_status = match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
        Ok(Ok(status)) => {
            if !status.success() && exited_early.is_none() {
                exit_problems.push(format!(
                    "after stdin closed the gateway exited with {status}"
                ));
            }
            status.code()
        }
        Ok(Err(e)) => {
            exit_problems.push(format!("waiting for the gateway failed: {e}"));
            None
        }
        Err(_) => {
            exit_problems.push("the gateway did not exit within 10 s of stdin closing".into());
            let _ = child.kill().await;
            None
        }
    };
    let exit_secs = close_started.elapsed().as_secs_f64();
    let _ = tokio::time::timeout(Duration::from_secs(5), reader).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), stderr_reader).await;

    let mut stats = Arc::try_unwrap(stats)
        .map(|m| m.into_inner().expect("lock"))
        .unwrap_or_else(|arc| std::mem::take(&mut *arc.lock().expect("lock")));
    // Process-level problems go first in the examples: they explain the rest.
    let log = std::mem::take(&mut *stderr.lock().expect("lock"));
    let reader_violations = std::mem::take(&mut *conn.violations.lock().expect("lock"));
    let mut process_problems: Vec<String> = exit_problems.clone();
    process_problems.extend(
        log.panics
            .iter()
            .map(|p| format!("panic in the gateway's stderr: {p}")),
    );
    process_problems.extend(
        reader_violations
            .into_iter()
            .map(|v| format!("stdout: {v}")),
    );
    stats.violations += process_problems.len();
    process_problems.append(&mut stats.examples);
    process_problems.truncate(MAX_EXAMPLES);
    stats.examples = process_problems;
    let crashes = usize::from(exited_early.is_some()) + log.panics.len();

    stats.latencies_us.sort_unstable();
    let (p50, p99, max) = (
        percentile(&stats.latencies_us, 0.5),
        percentile(&stats.latencies_us, 0.99),
        percentile(&stats.latencies_us, 1.0),
    );
    let rate = sent as f64 / elapsed.as_secs_f64().max(1e-9);
    let envelope_total: usize = stats.envelope_errors.values().sum();

    eprintln!(
        "fuzz-tools summary (seed {}, {} in flight)",
        opts.seed, opts.inflight
    );
    eprintln!("  {:<34} {:>8}", "calls", sent);
    eprintln!("  {:<34} {:>8}", "answered", stats.answered);
    eprintln!("  {:<34} {:>8}", "results ok", stats.results_ok);
    eprintln!("  {:<34} {:>8}", "envelope errors", envelope_total);
    for (code, n) in &stats.envelope_errors {
        eprintln!("    {:<32} {:>8}", code, n);
    }
    eprintln!(
        "  {:<34} {:>8}  (JSON-RPC -32602: {}, envelope: {})",
        "unknown tool calls",
        stats.unknown_calls,
        stats.unknown_rpc_errors,
        stats.unknown_envelopes
    );
    eprintln!(
        "  {:<34} {:>8}",
        "protocol errors (known tools)", stats.protocol_errors
    );
    eprintln!("  {:<34} {:>8}", "no response", stats.no_response);
    eprintln!("  {:<34} {:>8}", "crashes", crashes);
    eprintln!("  {:<34} {:>8}", "violations", stats.violations);
    eprintln!(
        "  {:<34} {:>8}",
        format!("error messages > {LONG_MESSAGE} chars"),
        stats.long_messages
    );
    eprintln!(
        "  {:<34} {:>8}  ({})",
        "longest error message (chars)", stats.longest_message.0, stats.longest_message.1
    );
    eprintln!(
        "  {:<34} {:>8}",
        "ERROR lines in the gateway's log", log.errors
    );
    for e in &log.first_errors {
        eprintln!("    {e}");
    }
    eprintln!("  {:<34} {:>8.2} s", "elapsed", elapsed.as_secs_f64());
    eprintln!("  {:<34} {:>8.0}", "calls/s", rate);
    eprintln!(
        "  {:<34} {:>8.2} / {:.2} / {:.2} ms",
        "latency p50 / p99 / max", p50, p99, max
    );
    eprintln!("  {:<34} {:>8.2} s", "exit after stdin closed", exit_secs);
    eprintln!("  per tool (calls / ok / tool errors):");
    for (tool, [c, ok, err]) in &stats.per_tool {
        eprintln!("    {:<32} {:>6} {:>6} {:>6}", tool, c, ok, err);
    }
    eprintln!(
        "  strategies: {}",
        stats
            .strategies
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    eprintln!(
        "  mutations: {}",
        stats
            .mutations
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if stats.violations > 0 {
        eprintln!("first violations:");
        for e in &stats.examples {
            eprintln!("  - {e}");
        }
        eprintln!("gateway stderr tail:");
        for l in &log.tail {
            eprintln!("  {l}");
        }
    }
    let ok = stats.violations == 0 && sent == opts.calls;
    warden_faults::report::emit(&json!({
        "drill": "fuzz-tools",
        "ok": ok,
        "seed": opts.seed,
        "calls": sent,
        "answered": stats.answered,
        "results_ok": stats.results_ok,
        "envelope_errors": stats.envelope_errors,
        "unknown_tool": {"calls": stats.unknown_calls, "jsonrpc_invalid_params": stats.unknown_rpc_errors, "envelope": stats.unknown_envelopes},
        "protocol_errors": stats.protocol_errors,
        "no_response": stats.no_response,
        "crashes": crashes,
        "violations": stats.violations,
        "long_error_messages": stats.long_messages,
        "gateway_error_log_lines": log.errors,
        "longest_error_message": {"chars": stats.longest_message.0, "where": stats.longest_message.1},
        "exit_code": exit_status,
        "elapsed_ms": elapsed.as_millis() as u64,
        "calls_per_sec": (rate * 10.0).round() / 10.0,
        "latency_ms": {"p50": p50, "p99": p99, "max": max},
        "startup_ms": startup.as_millis() as u64,
        "notifications": conn.notifications.load(Ordering::Relaxed),
        "server_requests": conn.server_requests.load(Ordering::Relaxed),
    }));
    Ok(ok)
}

#[tokio::main]
async fn main() -> ExitCode {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => return warden_faults::report::usage_error("fuzz-tools", USAGE, &e),
    };
    warden_faults::report::exit_code("fuzz-tools", run(opts).await)
}
