//! `check_compliance` over MCP Streamable HTTP: spawns the built `mcp-gateway --http`
//! (`MCP_HTTP_AUTH=none`, loopback) and times stateless 2026-07-28 `tools/call` POSTs, first
//! from one client (to compare with stdio-bench's figure: the transport's overhead), then
//! from 32 concurrent clients (p50/p99 under load). Each client is one keep-alive HTTP/1.1
//! connection written by a minimal client ([`warden_bench::http1`]). The JSON line also
//! carries the gateway's peak RSS.
//!
//! Usage: http-bench GATEWAY_BINARY [CALLS_PER_CLIENT] [CLIENTS]. Uses the usual
//! DB_*/REDIS_*/NATS environment; creates and drops a database of its own.

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::process::Command;
use tokio::sync::Barrier;
use warden_bench::http1::Connection;
use warden_store::testing::TestDatabase;

const MCP_PATH: &str = "/mcp";

/// Untimed calls each concurrent client makes before the timed ones.
const WARM_UP_CALLS: usize = 50;

/// The headers of a stateless 2026-07-28 `check_compliance` call.
const HEADERS: &[(&str, &str)] = &[
    ("Accept", "application/json, text/event-stream"),
    ("Content-Type", "application/json"),
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "check_compliance"),
];

/// One 2026-07-28 `check_compliance` call; fails unless it answered as a tool result.
/// The client does as little as it can per call (see [`warden_bench::http1`]): it shares
/// the machine's two cores with the gateway and Postgres it measures.
async fn check(conn: &mut Connection, i: usize) -> anyhow::Result<()> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"http-bench","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"check_compliance","arguments":{{"customer_id":"6281{:09}","message_type":"marketing"}}}}}}"#,
        i % 500
    );
    let res = conn.post(MCP_PATH, HEADERS, body.as_bytes()).await?;
    anyhow::ensure!(
        res.status == 200,
        "HTTP {}: {}",
        res.status,
        String::from_utf8_lossy(&res.body)
    );
    let msg: Value = serde_json::from_slice(&res.body)?;
    anyhow::ensure!(
        msg.pointer("/result/isError") == Some(&json!(false)),
        "check_compliance failed: {msg}"
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut args = std::env::args().skip(1);
    let gateway = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: http-bench GATEWAY [CALLS_PER_CLIENT] [CLIENTS]"))?;
    let per_client: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    let clients: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let db = TestDatabase::create();
    let stream = format!("BENCH_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
    let port = warden_bench::free_port()?;
    let mut child = Command::new(&gateway)
        .arg("--http")
        .env("DB_NAME", db.name())
        .env("DELIVERY_STREAM", &stream)
        .env("MCP_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("MCP_HTTP_AUTH", "none")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let health = format!("http://127.0.0.1:{port}/health");
    let started = Instant::now();
    loop {
        if reqwest::get(&health).await.is_ok_and(|r| r.status() == 200) {
            break;
        }
        anyhow::ensure!(
            child.try_wait()?.is_none(),
            "mcp-gateway --http exited at start"
        );
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "no /health within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // One client, one connection: the figure stdio-bench's check_compliance compares with.
    let mut one = Connection::open(addr).await?;
    for i in 0..100 {
        check(&mut one, i).await?;
    }
    let mut single_us = Vec::with_capacity(per_client * 4);
    for i in 0..per_client * 4 {
        let t = Instant::now();
        check(&mut one, i).await?;
        single_us.push(t.elapsed().as_secs_f64() * 1e6);
    }

    // 32 concurrent clients, each its own connection. They warm up together first (the
    // gateway's pool opens its Postgres connections, each new connection prepares the
    // statement) and are timed only once every client is warm: the steady state, as a
    // long-running gateway serves it.
    let warm = Arc::new(Barrier::new(clients));
    let mut tasks = Vec::new();
    for c in 0..clients {
        let warm = warm.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = Connection::open(addr).await?;
            for i in 0..WARM_UP_CALLS {
                check(&mut conn, c + i).await?;
            }
            warm.wait().await;
            let started = Instant::now();
            let mut us = Vec::with_capacity(per_client);
            for i in 0..per_client {
                let t = Instant::now();
                check(&mut conn, c * per_client + i).await?;
                us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            anyhow::Ok((started, us))
        }));
    }
    let mut concurrent_us = Vec::with_capacity(clients * per_client);
    // Timed from the first client past the barrier until every client is done.
    let mut timed_from = None::<Instant>;
    for t in tasks {
        let (started, us) = t.await??;
        timed_from = Some(timed_from.map_or(started, |f| f.min(started)));
        concurrent_us.extend(us);
    }
    let seconds = timed_from.map_or(0.0, |f| f.elapsed().as_secs_f64());
    let calls = concurrent_us.len();
    let gateway_rss = pid.and_then(|pid| warden_bench::peak_rss_mib(&pid.to_string()));
    let report = json!({
        "benchmark": "check_compliance over Streamable HTTP (2026-07-28, stateless)",
        "machine_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "clients": clients,
        "results": [
            warden_bench::summarise("check_compliance over HTTP, 1 client", single_us),
            warden_bench::summarise(&format!("check_compliance over HTTP, {clients} clients"), concurrent_us),
        ],
        "throughput_per_s": calls as f64 / seconds,
        "gateway_peak_rss_mib": gateway_rss,
    });
    println!("{report}");
    let _ = child.start_kill();
    let _ = child.wait().await;
    let settings = warden_settings::Settings::load(None)?;
    if let Ok(client) = async_nats::connect(&settings.nats_url).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&stream)
            .await;
    }
    Ok(())
}
