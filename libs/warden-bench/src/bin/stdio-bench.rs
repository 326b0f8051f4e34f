//! Tool-call latency over stdio: spawns the built `mcp-gateway` as an agent host would,
//! speaks newline-delimited JSON-RPC to it, and times `check_compliance`, an accepted
//! `send_template`, an accepted `send_message` and an accepted `send_interactive` of a Flow
//! (row committed, message handed to the stream) call by call, after 50 untimed calls of each; the JSON line also carries the
//! gateway's and this client's peak RSS (VmHWM, read before the gateway exits).
//!
//! Usage: stdio-bench GATEWAY_BINARY [CHECKS] [SENDS]. Uses the usual DB_*/REDIS_*/NATS
//! environment; creates and drops a database of its own.

use std::process::Stdio;
use std::time::{Duration, Instant};

use diesel::prelude::*;
use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use warden_store::schema::templates;
use warden_store::testing::TestDatabase;

struct Session {
    _child: Child,
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Session {
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let line =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.write_all(b"\n").await?;
        self.stdin.flush().await?;
        loop {
            let line = self
                .stdout
                .next_line()
                .await?
                .ok_or_else(|| anyhow::anyhow!("gateway closed stdout"))?;
            let msg: Value = serde_json::from_str(&line)?;
            if msg.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(msg);
            }
        }
    }
    async fn notify(&mut self, method: &str) -> anyhow::Result<()> {
        let line = json!({"jsonrpc": "2.0", "method": method}).to_string();
        self.stdin.write_all(format!("{line}\n").as_bytes()).await?;
        Ok(())
    }
    async fn call(&mut self, tool: &str, args: Value) -> anyhow::Result<Value> {
        let res = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await?;
        warden_bench::tool_result(tool, &res)
    }
}

/// Untimed calls of each send before the timed ones.
const WARM_UP: usize = 50;

/// A booking Flow to customer `i` of the flow set (a generated token each).
fn flow_args(i: usize) -> Value {
    json!({"to": format!("6284{:09}", i), "kind": "flow", "body": format!("Book table {i}"),
           "flow_id": "1234567890", "flow_cta": "Book now", "screen": "BOOKING",
           "data": {"party_size": 2}})
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let gateway = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: stdio-bench GATEWAY [CHECKS] [SENDS]"))?;
    let checks: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let sends: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let db = TestDatabase::create();
    let stream = format!("BENCH_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
    let mut child = Command::new(&gateway)
        .env("DB_NAME", db.name())
        .env("DELIVERY_STREAM", &stream)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let gateway_pid = child.id();
    let mut s = Session {
        stdin: child.stdin.take().expect("piped"),
        stdout: BufReader::new(child.stdout.take().expect("piped")).lines(),
        _child: child,
        next_id: 0,
    };
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stdio-bench", "version": "1"}}),
    )
    .await?;
    s.notify("notifications/initialized").await?;

    // The gateway migrated the database at start: add an approved utility template.
    let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(5)).await?;
    let mut conn = pool.get().await?;
    diesel::insert_into(templates::table)
        .values((
            templates::name.eq("bench_receipt"),
            templates::locale.eq("en"),
            templates::category.eq("utility"),
            templates::status.eq("APPROVED"),
            templates::body_text.eq("Order {{1}} shipped"),
        ))
        .execute(&mut conn)
        .await?;
    // Customers who wrote a minute ago, so free-form replies are inside the care window. Plain
    // SQL over columns every schema version has: the same client measures older gateways too.
    // The flow sends get customers of their own (prefix 6284), in the window too.
    for prefix in ["6283", "6284"] {
        conn.batch_execute(&format!(
            "INSERT INTO customers (phone, country) \
             SELECT '{prefix}' || lpad(i::text, 9, '0'), 'ID' FROM generate_series(0, {last}) i; \
             INSERT INTO conversations (customer_phone, last_inbound_at, window_expires_at) \
             SELECT '{prefix}' || lpad(i::text, 9, '0'), now() - interval '1 minute', \
                    now() + interval '23 hours' FROM generate_series(0, {last}) i",
            last = sends + WARM_UP - 1
        ))
        .await?;
    }
    drop(conn);

    for i in 0..100 {
        s.call(
            "check_compliance",
            json!({"customer_id": format!("6281{:09}", i), "message_type": "marketing"}),
        )
        .await?;
    }
    let mut check_us = Vec::with_capacity(checks);
    for i in 0..checks {
        let t = Instant::now();
        s.call(
            "check_compliance",
            json!({"customer_id": format!("6281{:09}", i % 500), "message_type": "marketing"}),
        )
        .await?;
        check_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    // Untimed first calls of each send, as the checks above: a pooled connection prepares
    // its statements on first use, which is not the latency a steady caller sees.
    for i in sends..sends + WARM_UP {
        s.call("send_template", json!({"to": format!("6282{:09}", i), "template_name": "bench_receipt", "variables": "[\"0\"]"}))
            .await?;
        s.call(
            "send_message",
            json!({"to": format!("6283{:09}", i), "text": "warming up"}),
        )
        .await?;
        s.call("send_interactive", flow_args(i)).await?;
    }
    let mut send_us = Vec::with_capacity(sends);
    for i in 0..sends {
        let t = Instant::now();
        let r = s
            .call("send_template", json!({"to": format!("6282{:09}", i), "template_name": "bench_receipt", "variables": format!("[\"{i}\"]")}))
            .await?;
        send_us.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(
            r.pointer("/structuredContent/status") == Some(&json!("queued")),
            "{r}"
        );
    }
    let mut reply_us = Vec::with_capacity(sends);
    for i in 0..sends {
        let t = Instant::now();
        let r = s
            .call("send_message", json!({"to": format!("6283{:09}", i), "text": format!("Your order {i} is on its way")}))
            .await?;
        reply_us.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(
            r.pointer("/structuredContent/status") == Some(&json!("queued")),
            "{r}"
        );
    }
    let mut flow_us = Vec::with_capacity(sends);
    for i in 0..sends {
        let t = Instant::now();
        let r = s.call("send_interactive", flow_args(i)).await?;
        flow_us.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(
            r.pointer("/structuredContent/status") == Some(&json!("queued"))
                && r.pointer("/structuredContent/flow_token").is_some(),
            "{r}"
        );
    }
    // The reference the send goal is judged against: one INSERT committed per round trip on one
    // connection, as many as the sends, in the same database while the gateway idles.
    let mut conn = pool.get().await?;
    conn.batch_execute("CREATE TABLE bench_raw_commit (id uuid PRIMARY KEY, body jsonb NOT NULL)")
        .await?;
    let mut raw_us = Vec::with_capacity(sends);
    for i in 0..sends {
        let t = Instant::now();
        diesel::sql_query("INSERT INTO bench_raw_commit (id, body) VALUES ($1, $2)")
            .bind::<diesel::sql_types::Uuid, _>(uuid::Uuid::new_v4())
            .bind::<diesel::sql_types::Jsonb, _>(json!({"template": "bench_receipt", "vars": [i]}))
            .execute(&mut conn)
            .await?;
        raw_us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    drop(conn);
    // Read before the gateway exits: its /proc entry goes with it.
    let gateway_rss = gateway_pid.and_then(|pid| warden_bench::peak_rss_mib(&pid.to_string()));
    let report = json!({
        "benchmark": "tool latency over stdio",
        "machine_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "results": [
            warden_bench::summarise("check_compliance over stdio", check_us),
            warden_bench::summarise("send_template accepted over stdio", send_us),
            warden_bench::summarise("send_message accepted over stdio (care window open)", reply_us),
            warden_bench::summarise("send_interactive of a flow accepted over stdio (care window open)", flow_us),
            warden_bench::summarise("raw one-row commit on one connection", raw_us),
        ],
        "gateway_peak_rss_mib": gateway_rss,
        "client_peak_rss_mib": warden_bench::peak_rss_mib("self"),
    });
    println!("{report}");
    drop(s);
    // Leave NATS as we found it: remove the bench's stream.
    let settings = warden_settings::Settings::load(None)?;
    if let Ok(client) = async_nats::connect(&settings.nats_url).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&stream)
            .await;
    }
    Ok(())
}
