//! `mcp-gateway --http` as a child process, and a small JSON-RPC-over-HTTP client for
//! driving it by hand (headers and bodies exactly as a test wants them).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use warden_settings::Settings;
use warden_test_support::procs;

pub const V_NEW: &str = "2026-07-28";
pub const V_LEGACY: &str = "2025-11-25";

/// One gateway process serving Streamable HTTP on its own port.
pub struct GatewayProc {
    child: Option<Child>,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The environment that points a binary at `settings`' services, plus the gateway's own.
pub fn env_for(settings: &Settings) -> Vec<(&'static str, String)> {
    let mut env = procs::env_of(settings);
    env.extend(
        [
            ("TIER", "pro"),
            ("SERVER_MCP_NAME", "warden-http-test"),
            ("RUST_LOG", "info"),
        ]
        .map(|(k, v)| (k, v.to_string())),
    );
    env
}

impl GatewayProc {
    /// Start with `MCP_HTTP_AUTH=none` on a free loopback port plus `extra` variables, and
    /// wait until `/health` answers 200.
    pub fn start(settings: &Settings, extra: &[(&str, &str)]) -> GatewayProc {
        let port = procs::free_port();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("gateway.log");
        let mut cmd = Command::new(procs::binary("mcp-gateway"));
        cmd.arg("--http")
            .envs(env_for(settings))
            .env("MCP_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("MCP_HTTP_AUTH", "none");
        for (k, v) in extra {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn mcp-gateway --http");
        let describe = || std::fs::read_to_string(&log).unwrap_or_default();
        procs::wait_healthy(&mut child, port, Duration::from_secs(60), describe);
        GatewayProc {
            child: Some(child),
            port,
            log,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for GatewayProc {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            procs::stop(child, Duration::from_secs(15));
        }
    }
}

/// The `_meta` a 2026-07-28 request carries.
pub fn meta_new() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V_NEW,
        "io.modelcontextprotocol/clientInfo": {"name": "http-test", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    })
}

/// One HTTP answer: status, headers, and the JSON-RPC message(s) in its body (a JSON body
/// or the `data:` lines of an SSE body).
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(v) = serde_json::from_str::<Value>(&self.text) {
            return vec![v];
        }
        self.text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect()
    }

    /// The response to request `id`.
    pub fn response(&self, id: i64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response to id {id} in ({}) {}", self.status, self.text))
    }

    pub fn session(&self) -> Option<String> {
        self.headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }
}

/// A plain HTTP client (reqwest is built without a default TLS provider).
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// POST one JSON-RPC message with `headers` (plus the Accept and Content-Type every
/// Streamable HTTP request carries).
pub async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Answer {
    let client = http_client();
    let mut req = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.expect("POST /mcp");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let text = res.text().await.unwrap_or_default();
    Answer {
        status,
        headers,
        text,
    }
}

/// A 2026-07-28 request: `_meta` in the params and the standard headers set from the body.
pub async fn post_new(url: &str, id: i64, method: &str, mut params: Value) -> Answer {
    params["_meta"] = meta_new();
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut headers = vec![("mcp-protocol-version", V_NEW), ("mcp-method", method)];
    if let Some(name) = name.as_deref() {
        headers.push(("mcp-name", name));
    }
    post(
        url,
        &headers,
        &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
    )
    .await
}

/// A legacy (2025-11-25) request or notification in session `session`.
pub async fn post_legacy(url: &str, session: &str, body: Value) -> Answer {
    post(
        url,
        &[
            ("mcp-protocol-version", V_LEGACY),
            ("mcp-session-id", session),
        ],
        &body,
    )
    .await
}

/// `initialize` + `notifications/initialized` at `url`; the session id.
pub async fn initialize_legacy(url: &str) -> String {
    let init = post(
        url,
        &[],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": V_LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "http-test", "version": "1.0"},
        }}),
    )
    .await;
    assert_eq!(init.status, 200, "{}", init.text);
    let r = init.response(1);
    assert_eq!(r["result"]["protocolVersion"], V_LEGACY, "{r}");
    let session = init.session().expect("Mcp-Session-Id on initialize");
    let ack = post_legacy(
        url,
        &session,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(ack.status, 202, "{}", ack.text);
    session
}
