//! One trace follows one message: the gateway's `send_template` (span `warden.send` in
//! `mcp-gateway`), the stream hop (W3C `traceparent` in the NATS headers) into the
//! dispatcher's platform call (`dispatcher.deliver` / `platform.send` in `dispatcher`), and
//! the status webhooks the platform sends back (`webhook.status_update` in `webhook`, parented
//! on the trace context stored with the message).
//!
//! The real binaries run (scripts/test.sh builds them first) against a fresh database and a
//! stream of their own, exporting OTLP/HTTP to a small receiver in this test that decodes
//! just enough protobuf (`ExportTraceServiceRequest`) to read service names, span names,
//! ids and string attributes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::sql_types::Text;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use warden_store::testing::TestDatabase;

// ------------------------------------------------------------------------ OTLP receiver

#[derive(Clone, Debug)]
struct SpanRec {
    service: String,
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    attributes: HashMap<String, String>,
}

#[derive(Default)]
struct Received {
    spans: Vec<SpanRec>,
    requests: usize,
    problems: Vec<String>,
}

type Shared = Arc<Mutex<Received>>;

/// The receiver keeps working after a failed assertion elsewhere poisoned the lock.
fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Received> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// Accepts `POST /v1/traces` (protobuf) on 127.0.0.1:<any port>; answers 200 to each.
fn start_receiver(rt: &tokio::runtime::Runtime) -> (u16, Shared) {
    let shared: Shared = Arc::default();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind OTLP receiver");
    let port = listener.local_addr().unwrap().port();
    let acc = shared.clone();
    rt.spawn(async move {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            let acc = acc.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_connection(sock, &acc).await {
                    lock(&acc).problems.push(format!("connection: {e}"));
                }
            });
        }
    });
    (port, shared)
}

async fn serve_connection(sock: tokio::net::TcpStream, acc: &Shared) -> std::io::Result<()> {
    let (rd, mut wr) = sock.into_split();
    let mut rd = tokio::io::BufReader::new(rd);
    loop {
        let mut request_line = String::new();
        if rd.read_line(&mut request_line).await? == 0 {
            return Ok(()); // keep-alive connection closed
        }
        let mut length = 0usize;
        let mut chunked = false;
        let mut encoding = String::new();
        loop {
            let mut line = String::new();
            rd.read_line(&mut line).await?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                    "content-encoding" => encoding = v.trim().to_ascii_lowercase(),
                    _ => {}
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                rd.read_line(&mut size).await?;
                let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                    .unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                rd.read_exact(&mut chunk).await?;
                if n == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..n]);
            }
        } else {
            body.resize(length, 0);
            rd.read_exact(&mut body).await?;
        }
        {
            let mut acc = lock(acc);
            acc.requests += 1;
            if !request_line.starts_with("POST /v1/traces ") {
                acc.problems
                    .push(format!("unexpected request: {}", request_line.trim()));
            } else if !encoding.is_empty() && encoding != "identity" {
                acc.problems.push(format!(
                    "body with content-encoding {encoding}: not decoded"
                ));
            } else {
                match decode_export(&body) {
                    Some(spans) => acc.spans.extend(spans),
                    None => acc
                        .problems
                        .push(format!("undecodable body of {} bytes", body.len())),
                }
            }
        }
        wr.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )
        .await?;
    }
}

// ------------------------------------------------------------ protobuf, just enough of it

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

struct Pb<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Pb<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Pb { buf, pos: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(out);
            }
        }
        None
    }

    /// The next (field number, value); None at the end. Err on malformed input.
    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, ()> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint().ok_or(())?;
        let value = match key & 7 {
            0 => Field::Varint(self.varint().ok_or(())?),
            1 | 5 => {
                let n = if key & 7 == 1 { 8 } else { 4 };
                if self.pos + n > self.buf.len() {
                    return Err(());
                }
                self.pos += n;
                Field::Fixed
            }
            2 => {
                let n = self.varint().ok_or(())? as usize;
                let end = self
                    .pos
                    .checked_add(n)
                    .filter(|e| *e <= self.buf.len())
                    .ok_or(())?;
                let bytes = &self.buf[self.pos..end];
                self.pos = end;
                Field::Bytes(bytes)
            }
            _ => return Err(()),
        };
        Ok(Some((key >> 3, value)))
    }

    /// Every length-delimited value of field `number`.
    fn all(buf: &'a [u8], number: u64) -> Option<Vec<&'a [u8]>> {
        let mut pb = Pb::new(buf);
        let mut out = Vec::new();
        while let Some((n, f)) = pb.next().ok()? {
            if let (true, Field::Bytes(b)) = (n == number, f) {
                out.push(b);
            }
        }
        Some(out)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// KeyValue { 1: key, 2: AnyValue { 1: string_value, 3: int_value, ... } }
fn key_values(list: &[&[u8]]) -> Option<HashMap<String, String>> {
    let mut out = HashMap::new();
    for kv in list {
        let key = Pb::all(kv, 1)?
            .first()
            .map(|b| String::from_utf8_lossy(b).into_owned());
        let Some(key) = key else { continue };
        let mut value = String::new();
        if let Some(any) = Pb::all(kv, 2)?.first() {
            let mut pb = Pb::new(any);
            while let Some((n, f)) = pb.next().ok()? {
                match (n, f) {
                    (1, Field::Bytes(b)) => value = String::from_utf8_lossy(b).into_owned(),
                    (3, Field::Varint(v)) => value = (v as i64).to_string(),
                    (2, Field::Varint(v)) => value = (v != 0).to_string(),
                    _ => {}
                }
            }
        }
        out.insert(key, value);
    }
    Some(out)
}

/// ExportTraceServiceRequest { 1: ResourceSpans { 1: Resource { 1: attributes }, 2: ScopeSpans {
///   2: Span { 1: trace_id, 2: span_id, 4: parent_span_id, 5: name, 9: attributes } } } }
fn decode_export(body: &[u8]) -> Option<Vec<SpanRec>> {
    let mut out = Vec::new();
    for rs in Pb::all(body, 1)? {
        let mut service = String::from("?");
        if let Some(resource) = Pb::all(rs, 1)?.first() {
            let attrs = key_values(&Pb::all(resource, 1)?)?;
            if let Some(name) = attrs.get("service.name") {
                service = name.clone();
            }
        }
        for ss in Pb::all(rs, 2)? {
            for span in Pb::all(ss, 2)? {
                let one = |n| Some(Pb::all(span, n)?.first().copied().unwrap_or_default());
                out.push(SpanRec {
                    service: service.clone(),
                    name: String::from_utf8_lossy(one(5)?).into_owned(),
                    trace_id: hex(one(1)?),
                    span_id: hex(one(2)?),
                    parent_span_id: hex(one(4)?),
                    attributes: key_values(&Pb::all(span, 9)?)?,
                });
            }
        }
    }
    Some(out)
}

#[test]
fn protobuf_decoder_reads_a_hand_built_export_request() {
    fn field(n: u64, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(n << 3 | 2) as u8, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }
    let kv = |k: &str, v: &str| {
        field(
            1,
            &[field(1, k.as_bytes()), field(2, &field(1, v.as_bytes()))].concat(),
        )
    };
    let span = [
        field(1, &[0xab; 16]),
        field(2, &[0x01; 8]),
        field(4, &[]),
        field(5, b"warden.send"),
        vec![0x38, 0x02], // 7: kind (varint) is skipped
        {
            let attr = kv("message_id", "m-1");
            [vec![(9 << 3 | 2) as u8], attr[1..].to_vec()].concat()
        },
    ]
    .concat();
    let body = field(
        1,
        &[
            field(1, &kv("service.name", "mcp-gateway")),
            field(2, &field(2, &span)),
        ]
        .concat(),
    );
    let spans = decode_export(&body).expect("decodes");
    assert_eq!(spans.len(), 1);
    assert_eq!(spans[0].service, "mcp-gateway");
    assert_eq!(spans[0].name, "warden.send");
    assert_eq!(spans[0].trace_id, "ab".repeat(16));
    assert_eq!(spans[0].span_id, "01".repeat(8));
    assert_eq!(spans[0].parent_span_id, "");
    assert_eq!(spans[0].attributes["message_id"], "m-1");
    assert!(
        decode_export(&[0x0a, 0x05, 0x01]).is_none(),
        "truncated input is refused"
    );
}

// ---------------------------------------------------------------------------- processes

fn bin(name: &str) -> PathBuf {
    warden_test_support::binary(name)
}

fn repo(path: &str) -> String {
    warden_test_support::repo_path(path).display().to_string()
}

/// The last 15 lines of a log file.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// A running binary: SIGTERM and reaped on drop; its stderr goes to a log file.
struct Proc {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, mut cmd: Command, logs: &Path) -> Proc {
        let log = logs.join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = cmd
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name}: {e}"));
        Proc { name, child, log }
    }

    fn log_tail(&self) -> String {
        tail(&self.log)
    }

    fn wait_healthy(&mut self, port: u16) {
        let (name, log) = (self.name, self.log.clone());
        warden_test_support::procs::wait_healthy(
            &mut self.child,
            port,
            Duration::from_secs(60),
            || format!("{name}:\n{}", tail(&log)),
        );
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Newline-delimited JSON-RPC over the gateway's stdin/stdout.
struct Mcp {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Mcp {
    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "mcp-gateway closed stdout while {method} was pending"
            );
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC on the gateway's stdout ({e}): {line}"));
            if msg["id"] == json!(id) {
                assert!(msg.get("error").is_none(), "{method} failed: {msg}");
                return msg["result"].clone();
            }
        }
    }
}

// --------------------------------------------------------------------------------- test

const TEMPLATE: &str = "warden_order_update"; // shipped APPROVED by platform-sim
const TEMPLATE_BODY: &str = "Your order {{1}} has been shipped and should arrive soon.";

/// platform-sim, webhook and dispatcher on a fresh database and stream, one mcp-gateway
/// session on stdio, all exporting to the receiver. Fields drop in order: the gateway
/// first (stdin closed), the services next, the database last.
struct Stack {
    mcp: Mcp,
    next_id: u64,
    gateway: Proc,
    services: Vec<Proc>,
    received: Shared,
    rt: tokio::runtime::Runtime,
    db: TestDatabase,
    logs: PathBuf,
}

impl Stack {
    fn start() -> Stack {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (otlp_port, received) = start_receiver(&rt);
        let db = TestDatabase::create();
        let stream = format!("TRACE_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
        let logs =
            std::env::temp_dir().join(format!("warden-trace-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&logs).unwrap();
        let (sim_port, webhook_port, dispatcher_port) = (
            warden_test_support::free_port(),
            warden_test_support::free_port(),
            warden_test_support::free_port(),
        );

        let command = |name: &str| {
            let mut cmd = Command::new(bin(name));
            cmd.env("DB_NAME", db.name())
                .env("DELIVERY_STREAM", &stream)
                .env("POLICIES_PATH", repo("policies/default.yaml"))
                .env(
                    "PLATFORM_APP_SECRET",
                    warden_test_support::platform::APP_SECRET,
                )
                .env("PLATFORM_API_URL", format!("http://127.0.0.1:{sim_port}"))
                .env(
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    format!("http://127.0.0.1:{otlp_port}"),
                )
                // Export batches every 200 ms instead of 5 s.
                .env("OTEL_BSP_SCHEDULE_DELAY", "200")
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            cmd
        };

        let mut sim_cmd = command("platform-sim");
        sim_cmd
            .env("SIM_HTTP_HOST", "127.0.0.1")
            .env("SIM_HTTP_PORT", sim_port.to_string())
            .env(
                "SIM_WEBHOOK_URL",
                format!("http://127.0.0.1:{webhook_port}/webhook"),
            )
            .env("SIM_TEMPLATES", repo("templates/sim-templates.json"));
        let mut webhook_cmd = command("webhook");
        webhook_cmd.env("SERVER_HTTP_PORT", webhook_port.to_string());
        let mut dispatcher_cmd = command("dispatcher");
        dispatcher_cmd.env("ADMIN_HTTP_PORT", dispatcher_port.to_string());
        let mut services = vec![
            Proc::spawn("platform-sim", sim_cmd, &logs),
            Proc::spawn("webhook", webhook_cmd, &logs),
            Proc::spawn("dispatcher", dispatcher_cmd, &logs),
        ];
        for (p, port) in services
            .iter_mut()
            .zip([sim_port, webhook_port, dispatcher_port])
        {
            p.wait_healthy(port);
        }

        // The webhook migrated the fresh database; Warden needs the template as APPROVED.
        rt.block_on(async {
            use diesel_async::RunQueryDsl;
            let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(10))
                .await
                .expect("pool");
            let mut conn = pool.get().await.expect("conn");
            diesel::sql_query(
                "INSERT INTO templates (name, locale, category, status, body_text) VALUES ($1, 'en', 'utility', 'APPROVED', $2)",
            )
            .bind::<Text, _>(TEMPLATE)
            .bind::<Text, _>(TEMPLATE_BODY)
            .execute(&mut conn)
            .await
            .expect("insert template");
        });

        // The agent's side: spawn mcp-gateway and speak MCP over its stdin/stdout.
        let mut gw_cmd = command("mcp-gateway");
        gw_cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut gateway = Proc::spawn("mcp-gateway", gw_cmd, &logs);
        let mut mcp = Mcp {
            stdin: gateway.child.stdin.take().unwrap(),
            stdout: BufReader::new(gateway.child.stdout.take().unwrap()),
        };
        mcp.call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "warden-trace-test", "version": "0"}}),
        );
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Stack {
            mcp,
            next_id: 2,
            gateway,
            services,
            received,
            rt,
            db,
            logs,
        }
    }

    /// `send_template` through the gateway; the accepted message's id.
    fn send(&mut self, to: &str, order: &str) -> String {
        self.next_id += 1;
        let result = self.mcp.call(
            self.next_id,
            "tools/call",
            json!({"name": "send_template", "arguments": {
                "to": to, "template_name": TEMPLATE, "locale": "en", "variables": [order]}}),
        );
        assert_ne!(
            result["isError"],
            json!(true),
            "send_template refused: {result}"
        );
        result["structuredContent"]["message_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no message_id in {result}"))
            .to_string()
    }

    /// Wait until the message's three hops are exported (or 45 s passed); panic with
    /// the hop that is missing, every span received and the processes' log tails.
    fn wait_for_trace(&self, message_id: &str) -> Verdict {
        let deadline = Instant::now() + Duration::from_secs(45);
        let verdict = loop {
            let spans = lock(&self.received).spans.clone();
            let v = judge(&spans, message_id);
            if v.complete() || Instant::now() > deadline {
                break v;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        if !verdict.complete() {
            let status = self.rt.block_on(message_status(&self.db, message_id));
            let mut report = format!(
                "message {message_id} (row status {status:?}): {}\n{}",
                verdict.missing(),
                self.spans_report()
            );
            for p in self.services.iter().chain([&self.gateway]) {
                let _ = writeln!(report, "--- {} log tail:\n{}", p.name, p.log_tail());
            }
            panic!("{report}");
        }
        verdict
    }

    fn spans_report(&self) -> String {
        let r = lock(&self.received);
        let mut report = format!(
            "OTLP requests received: {}, problems: {:?}\nspans by trace:\n",
            r.requests, r.problems
        );
        let mut by_trace: BTreeMap<&str, Vec<&SpanRec>> = BTreeMap::new();
        for s in &r.spans {
            by_trace.entry(&s.trace_id).or_default().push(s);
        }
        for (t, spans) in by_trace {
            let _ = writeln!(report, "  {t}");
            for s in spans {
                let attrs: Vec<String> = ["message_id", "status", "outcome"]
                    .iter()
                    .filter_map(|k| s.attributes.get(*k).map(|v| format!("{k}={v}")))
                    .collect();
                let _ = writeln!(
                    report,
                    "    {:<12} {:<24} span {} parent {} {}",
                    s.service,
                    s.name,
                    s.span_id,
                    s.parent_span_id,
                    attrs.join(" ")
                );
            }
        }
        report
    }

    fn spans_of(&self, trace: &str) -> Vec<SpanRec> {
        lock(&self.received)
            .spans
            .iter()
            .filter(|s| s.trace_id == trace)
            .cloned()
            .collect()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.logs);
        }
    }
}

#[test]
fn one_trace_follows_a_message_from_the_tool_call_to_the_status_webhook() {
    let mut stack = Stack::start();
    let message_id = stack.send("+62 812-3456-7890", "ORD-77");
    let trace = stack.wait_for_trace(&message_id).trace.unwrap();

    // Print the trace (visible with --nocapture) and check who is whose parent.
    let status = stack.rt.block_on(message_status(&stack.db, &message_id));
    let spans = stack.spans_of(&trace);
    eprintln!("trace {trace} (message {message_id}, row status {status:?}):");
    for s in &spans {
        eprintln!(
            "  {:<12} {:<24} span {} parent {}",
            s.service, s.name, s.span_id, s.parent_span_id
        );
    }
    let send = spans
        .iter()
        .find(|s| s.service == "mcp-gateway" && s.name == "warden.send")
        .unwrap();
    let deliver: Vec<&SpanRec> = spans
        .iter()
        .filter(|s| s.name == "dispatcher.deliver")
        .collect();
    assert!(
        deliver.iter().all(|d| d.parent_span_id == send.span_id),
        "dispatcher.deliver is not a child of the gateway's warden.send: {deliver:?}"
    );
    let ids: Vec<&str> = deliver.iter().map(|d| d.span_id.as_str()).collect();
    assert!(
        spans
            .iter()
            .filter(|s| s.name == "platform.send")
            .all(|p| ids.contains(&p.parent_span_id.as_str())),
        "platform.send is not a child of dispatcher.deliver"
    );
    assert!(
        spans
            .iter()
            .filter(|s| s.name == "webhook.status_update")
            .all(|w| w.parent_span_id == send.span_id),
        "webhook.status_update is not a child of the send's context"
    );
}

/// Two messages sent in one gateway session are two traces. Today they are one: rmcp 3.9
/// runs every request handler inside its session span (`serve_inner`, `#[instrument]` at
/// INFO), so each `warden.send` is a child of that one long-lived span and every message
/// of a session joins its trace (whose root is exported only when the session ends).
/// Fix in the gateway (a root span per tool call, `info_span!(parent: None, ..)`) or in
/// warden-telemetry (keep `rmcp` spans out of the OTLP layer's filter), then drop the ignore.
#[test]
fn each_message_of_one_gateway_session_gets_its_own_trace() {
    let mut stack = Stack::start();
    let first = stack.send("+62 812-3456-7890", "ORD-1");
    let second = stack.send("+62 812-3456-7891", "ORD-2");
    let a = stack.wait_for_trace(&first).trace.unwrap();
    let b = stack.wait_for_trace(&second).trace.unwrap();
    assert_ne!(
        a,
        b,
        "two messages of one session share trace {a}:\n{}",
        stack.spans_report()
    );
}

/// What the exported spans show for one message.
struct Verdict {
    /// The trace of the gateway's `warden.send` span for the message.
    trace: Option<String>,
    dispatcher_in_trace: bool,
    platform_call_in_trace: bool,
    dispatcher_elsewhere: bool,
    webhook_in_trace: bool,
    webhook_elsewhere: bool,
}

impl Verdict {
    fn complete(&self) -> bool {
        self.trace.is_some()
            && self.dispatcher_in_trace
            && self.platform_call_in_trace
            && self.webhook_in_trace
    }

    fn missing(&self) -> String {
        let mut out = Vec::new();
        if self.trace.is_none() {
            out.push("no `warden.send` span from mcp-gateway for this message (gateway exports no send span)".to_string());
        }
        if !self.dispatcher_in_trace {
            out.push(if self.dispatcher_elsewhere {
                "dispatcher spans exist but in another trace: the NATS-header hop (traceparent publish/extract) is broken".into()
            } else {
                "no `dispatcher.deliver` span exported by the dispatcher".into()
            });
        } else if !self.platform_call_in_trace {
            out.push(
                "no `platform.send` span in the trace (the dispatcher's platform call)".into(),
            );
        }
        if !self.webhook_in_trace {
            out.push(if self.webhook_elsewhere {
                "webhook `webhook.status_update` spans exist but in another trace: the stored trace_context hop is broken".into()
            } else {
                "no `webhook.status_update` span exported by the webhook".into()
            });
        }
        out.join("; ")
    }
}

fn judge(spans: &[SpanRec], message_id: &str) -> Verdict {
    let trace = spans
        .iter()
        .find(|s| {
            s.service == "mcp-gateway"
                && s.name == "warden.send"
                && s.attributes.get("message_id").map(String::as_str) == Some(message_id)
        })
        .map(|s| s.trace_id.clone());
    let in_trace = |service: &str, name: &str| {
        spans
            .iter()
            .any(|s| s.service == service && s.name == name && Some(&s.trace_id) == trace.as_ref())
    };
    let elsewhere = |service: &str, name: &str| {
        spans
            .iter()
            .any(|s| s.service == service && s.name == name && Some(&s.trace_id) != trace.as_ref())
    };
    Verdict {
        dispatcher_in_trace: in_trace("dispatcher", "dispatcher.deliver"),
        platform_call_in_trace: in_trace("dispatcher", "platform.send"),
        dispatcher_elsewhere: elsewhere("dispatcher", "dispatcher.deliver"),
        webhook_in_trace: in_trace("webhook", "webhook.status_update"),
        webhook_elsewhere: elsewhere("webhook", "webhook.status_update"),
        trace,
    }
}

async fn message_status(db: &TestDatabase, message_id: &str) -> Option<String> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        status: String,
    }
    let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(10))
        .await
        .ok()?;
    let mut conn = pool.get().await.ok()?;
    diesel::sql_query("SELECT status FROM messages WHERE id::text = $1")
        .bind::<Text, _>(message_id)
        .get_result::<Row>(&mut conn)
        .await
        .ok()
        .map(|r| r.status)
}
