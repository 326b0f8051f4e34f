//! Live-update latency across processes: a signed inbound webhook POST to the `webhook`
//! process -> its 200 -> `notifications/resources/updated` for `warden://inbox` on the
//! stdio of an `mcp-gateway` process subscribed to it. The hint travels over NATS core.
//! Latency = notification arrival - 200 arrival (0 when the notification came first:
//! the webhook publishes the hint right after its commit, before answering).
//!
//! Usage: live-bench GATEWAY_BINARY WEBHOOK_URL APP_SECRET [POSTS]. The gateway gets this
//! process's environment (DB_NAME, DELIVERY_STREAM, ... the same as the webhook's).
//! Prints one JSON line: {posts, missed, p50_ms, p99_ms, max_ms}.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

const UPDATE_WITHIN: Duration = Duration::from_secs(5);

fn inbound(from: &str, n: usize) -> Vec<u8> {
    let now = chrono::Utc::now().timestamp();
    json!({"object": "whatsapp_business_account", "entry": [{"id": "200000000000001", "time": now,
        "changes": [{"field": "messages", "value": {"messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550100000", "phone_number_id": "100000000000001"},
            "contacts": [{"profile": {"name": "Bench"}, "wa_id": from}],
            "messages": [{"from": from, "id": format!("wamid.LIVE{}", uuid::Uuid::new_v4().simple()),
                          "timestamp": now.to_string(), "type": "text", "text": {"body": format!("live {n}")}}]}}]}]})
    .to_string()
    .into_bytes()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    anyhow::ensure!(
        args.len() >= 4,
        "usage: live-bench GATEWAY_BINARY WEBHOOK_URL APP_SECRET [POSTS]"
    );
    let (gateway, url, secret) = (&args[1], &args[2], &args[3]);
    let posts: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(300);

    let mut child = Command::new(gateway)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Every message from the gateway, with the time it arrived.
    let (tx, mut rx) = mpsc::unbounded_channel::<(Value, Instant)>();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send((v, Instant::now()));
            }
        }
    });
    let mut send = async |v: Value| -> anyhow::Result<()> {
        stdin.write_all(format!("{v}\n").as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    };
    let response = async |rx: &mut mpsc::UnboundedReceiver<(Value, Instant)>, id: u64| {
        loop {
            let (v, _) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
                .await?
                .ok_or_else(|| anyhow::anyhow!("gateway closed stdout"))?;
            if v["id"] == json!(id) {
                anyhow::ensure!(v.get("error").is_none(), "request {id} failed: {v}");
                return anyhow::Ok(v);
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "live-bench", "version": "1"}}}))
    .await?;
    response(&mut rx, 1).await?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "warden://inbox"}}))
        .await?;
    response(&mut rx, 2).await?;

    let http = reqwest::Client::new();
    let signer = warden_platform::signature::Signer::new(secret.as_bytes());
    let mut latencies = Vec::with_capacity(posts);
    let mut missed = 0usize;
    for n in 0..posts {
        let from = format!("62877{:07}", n % 1000);
        let body = inbound(&from, n);
        let resp = http
            .post(url)
            .header("content-type", "application/json")
            .header(warden_platform::signature::HEADER, signer.sign(&body))
            .body(body)
            .send()
            .await?;
        let ok_at = Instant::now();
        anyhow::ensure!(resp.status() == 200, "webhook answered {}", resp.status());
        let deadline = tokio::time::Instant::now() + UPDATE_WITHIN;
        let mut got = None;
        while let Ok(Some((v, at))) = tokio::time::timeout_at(deadline, rx.recv()).await {
            if v["method"] == "notifications/resources/updated" {
                got = Some(at);
                break;
            }
        }
        match got {
            Some(at) => latencies.push(at.saturating_duration_since(ok_at)),
            None => missed += 1,
        }
    }
    latencies.sort();
    let pct = |p: f64| -> f64 {
        if latencies.is_empty() {
            return f64::NAN;
        }
        let i = ((latencies.len() - 1) as f64 * p).round() as usize;
        latencies[i].as_secs_f64() * 1000.0
    };
    println!(
        "{}",
        json!({"posts": posts, "missed": missed, "p50_ms": pct(0.5), "p99_ms": pct(0.99),
               "max_ms": pct(1.0)})
    );
    drop(child);
    Ok(())
}
