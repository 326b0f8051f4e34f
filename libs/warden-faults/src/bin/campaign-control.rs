//! `campaign-control`: the campaign-control drill (docs/faults.md). Against a running stack (scheduler,
//! dispatchers, webhook, platform-sim), it spawns two `mcp-gateway` processes, schedules a
//! campaign to `--recipients` customers of its own, and while the campaign sends makes 50
//! pause / resume / cancel calls through the two gateways at random moments, with
//! `--cpu-burners` busy threads beside it.
//!
//! ```text
//! campaign-control --gateway PATH --database-url URL [--recipients 10000] [--calls 50] [--cpu-burners 2]
//! ```
//!
//! Checked: every call answers its proper result (success, INVALID_STATE_TRANSITION or
//! CAMPAIGN_TERMINAL_STATE as the state table says; never UNAVAILABLE or another code);
//! the successful calls form one chain in the audit trail and the final state is the last
//! one's; get_campaign's counters match the message rows (each recipient once, in its
//! latest state) and add up to the audience once it is read to its end (or counted as
//! cancelled); nobody got two messages. The environment (DB_NAME, TIER=pro, ...) is passed
//! through to the gateways. One JSON report line on stdout; exit 0 when all held, 1 when
//! not, 2 on bad usage.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use rand::Rng;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;
use warden_faults::load::TEMPLATE;

const TOOL: &str = "campaign-control";
const USAGE: &str = "usage: campaign-control --gateway PATH_TO_mcp-gateway --database-url URL [--recipients 10000] [--calls 50] [--cpu-burners 2]";
/// The tag that selects this drill's customers (and nobody else's).
const TAG: &str = "campaign_drill";
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

struct Opts {
    gateway: PathBuf,
    database_url: String,
    recipients: i64,
    calls: usize,
    cpu_burners: usize,
}

fn opts() -> std::result::Result<Opts, String> {
    let mut o = Opts {
        gateway: PathBuf::new(),
        database_url: String::new(),
        recipients: 10_000,
        calls: 50,
        cpu_burners: 2,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--gateway" => o.gateway = PathBuf::from(value()?),
            "--database-url" => o.database_url = value()?,
            "--recipients" => {
                o.recipients = value()?.parse().map_err(|e| format!("--recipients: {e}"))?
            }
            "--calls" => o.calls = value()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--cpu-burners" => {
                o.cpu_burners = value()?
                    .parse()
                    .map_err(|e| format!("--cpu-burners: {e}"))?
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if o.gateway.as_os_str().is_empty() || o.database_url.is_empty() {
        return Err("--gateway and --database-url are required".into());
    }
    if o.recipients < 100 || o.calls < 2 {
        return Err("--recipients at least 100, --calls at least 2".into());
    }
    Ok(o)
}

/// One `mcp-gateway` over stdio: newline-delimited JSON-RPC, responses matched by id.
struct Gateway {
    child: Child,
    stdin: tokio::sync::Mutex<ChildStdin>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next_id: AtomicU64,
}

impl Gateway {
    async fn spawn(path: &PathBuf) -> Result<Gateway> {
        let mut child = Command::new(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", path.display()))?;
        let stdout = child.stdout.take().context("stdout")?;
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
        let p = pending.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if let Some(id) = v.get("id").and_then(Value::as_u64)
                    && let Some(tx) = p.lock().expect("lock").remove(&id)
                {
                    let _ = tx.send(v);
                }
            }
        });
        let g = Gateway {
            stdin: tokio::sync::Mutex::new(child.stdin.take().context("stdin")?),
            child,
            pending,
            next_id: AtomicU64::new(1),
        };
        g.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": TOOL, "version": "1"}}),
        )
        .await
        .context("initialize")?;
        g.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(g)
    }

    async fn send(&self, v: &Value) -> Result<()> {
        let mut line = v.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(line.as_bytes()).await?;
        stdin.flush().await?;
        Ok(())
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("lock").insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let v = tokio::time::timeout(CALL_TIMEOUT, rx)
            .await
            .map_err(|_| anyhow!("{method}: no answer within {} s", CALL_TIMEOUT.as_secs()))?
            .map_err(|_| anyhow!("{method}: the gateway's stdout closed"))?;
        if let Some(e) = v.get("error") {
            bail!("{method}: JSON-RPC error {e}");
        }
        Ok(v["result"].clone())
    }

    /// A tool call: Ok(structuredContent) or Err(the error envelope's code, the envelope).
    async fn tool(
        &self,
        name: &str,
        args: Value,
    ) -> Result<std::result::Result<Value, (String, Value)>> {
        let r = self
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await?;
        let content = r["structuredContent"].clone();
        if r["isError"] == json!(true) {
            let code = content["error"]["code"].as_str().unwrap_or("?").to_string();
            return Ok(Err((code, content)));
        }
        Ok(Ok(content))
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    Pause,
    Resume,
    Cancel,
}

impl Call {
    fn tool(self) -> &'static str {
        match self {
            Call::Pause => "pause_campaign",
            Call::Resume => "resume_campaign",
            Call::Cancel => "cancel_campaign",
        }
    }
    /// The refusal the state table gives, when the call is refused.
    fn proper_refusal(self) -> &'static str {
        match self {
            Call::Cancel => "CAMPAIGN_TERMINAL_STATE",
            _ => "INVALID_STATE_TRANSITION",
        }
    }
}

#[derive(Debug, diesel::QueryableByName)]
struct N {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

async fn count(c: &mut AsyncPgConnection, sql: &str) -> Result<i64> {
    Ok(diesel::sql_query(sql)
        .get_result::<N>(c)
        .await
        .with_context(|| sql.to_string())?
        .n)
}

/// Poll `sql` (a count) until `done` holds, failing after `within`.
async fn wait_count(
    db: &mut AsyncPgConnection,
    what: &str,
    sql: &str,
    done: impl Fn(i64) -> bool,
    within: Duration,
) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        if done(count(db, sql).await?) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("{what}: not within {} s", within.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let o = match opts() {
        Ok(o) => o,
        Err(reason) => return warden_faults::report::usage_error(TOOL, USAGE, &reason),
    };
    let outcome = run(&o).await;
    warden_faults::report::exit_code(TOOL, outcome)
}

async fn run(o: &Opts) -> Result<bool> {
    let started = Instant::now();
    let mut db = AsyncPgConnection::establish(&o.database_url).await?;
    // The drill's own customers: phones 62817xxxxxxx, tagged so only they are selected.
    diesel::sql_query(format!(
        "INSERT INTO customers (phone, country, tags)
         SELECT '62817' || lpad(i::text, 7, '0'), 'ID', ARRAY['{TAG}']
         FROM generate_series(1, {}) AS i ON CONFLICT DO NOTHING",
        o.recipients
    ))
    .execute(&mut db)
    .await?;
    let audience = count(
        &mut db,
        &format!("SELECT count(*) AS n FROM customers WHERE '{TAG}' = ANY(tags)"),
    )
    .await?;
    let gateways = Arc::new([
        Gateway::spawn(&o.gateway).await?,
        Gateway::spawn(&o.gateway).await?,
    ]);
    let deliver_at = (chrono::Utc::now() + chrono::TimeDelta::seconds(2)).to_rfc3339();
    let scheduled = gateways[0]
        .tool(
            "schedule_campaign",
            json!({"name": "campaign control drill", "type": "utility", "template_name": TEMPLATE.0,
                   "locale": TEMPLATE.1, "deliver_at": deliver_at, "variables": "{\"1\": \"#drill\"}",
                   "audience_filter": format!("{{\"include_tags\": [\"{TAG}\"]}}")}),
        )
        .await?
        .map_err(|(code, e)| anyhow!("schedule_campaign: {code}: {e}"))?;
    let id = scheduled["campaign_id"]
        .as_str()
        .context("campaign_id")?
        .to_string();
    eprintln!("[{TOOL}] campaign {id} to {audience} recipients; waiting for it to send");
    let messages_sql = format!("SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}'");
    let want = (audience / 20).max(50);
    wait_count(
        &mut db,
        "the campaign to be sending",
        &messages_sql,
        |n| n >= want,
        Duration::from_secs(120),
    )
    .await?;

    // CPU load beside the calls, as on a busy host.
    let burning = Arc::new(AtomicBool::new(true));
    let burners: Vec<_> = (0..o.cpu_burners)
        .map(|_| {
            let burning = burning.clone();
            std::thread::spawn(move || {
                let mut x: u64 = 1;
                while AtomicBool::load(&burning, Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();

    let calls_t0 = Instant::now();
    let per_gateway = o.calls / 2;
    let mut tasks = Vec::new();
    for g in 0..2 {
        let (gateways, id) = (gateways.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            let mut answers: Vec<(Call, std::result::Result<String, String>, f64)> = Vec::new();
            for i in 0..per_gateway {
                let (wait_ms, what) = {
                    let mut rng = rand::rng();
                    let what = match rng.random_range(0..10) {
                        // Cancel only among the last calls, so the campaign sends a while.
                        9 if i + 5 >= per_gateway => Call::Cancel,
                        n if n % 2 == 0 => Call::Pause,
                        _ => Call::Resume,
                    };
                    (rng.random_range(10..400), what)
                };
                tokio::time::sleep(Duration::from_millis(wait_ms)).await;
                let t = Instant::now();
                let answer = match gateways[g]
                    .tool(what.tool(), json!({"campaign_id": id}))
                    .await
                {
                    Ok(Ok(v)) => Ok(v["from_status"].as_str().unwrap_or("?").to_string()),
                    Ok(Err((code, _))) => Err(code),
                    Err(e) => Err(format!("no answer: {e:#}")),
                };
                answers.push((what, answer, t.elapsed().as_secs_f64() * 1000.0));
            }
            answers
        }));
    }
    let mut problems: Vec<String> = Vec::new();
    let (mut succeeded, mut refused, mut unavailable) = (0usize, 0usize, 0usize);
    let mut latencies = Vec::new();
    for t in tasks {
        for (what, answer, ms) in t.await? {
            latencies.push(ms);
            match answer {
                Ok(_) => succeeded += 1,
                Err(code) if code == what.proper_refusal() => refused += 1,
                Err(code) => {
                    if code == "UNAVAILABLE" {
                        unavailable += 1;
                    }
                    problems.push(format!("{} answered {code}", what.tool()));
                }
            }
        }
    }
    let calls_seconds = calls_t0.elapsed().as_secs_f64();
    burning.store(false, Ordering::Relaxed);
    for b in burners {
        let _ = b.join();
    }
    latencies.sort_by(f64::total_cmp);
    let p99 = latencies[((latencies.len() as f64 * 0.99) as usize).min(latencies.len() - 1)];

    // The successful calls, in commit order: one chain, ending in the final state.
    #[derive(Debug, diesel::QueryableByName)]
    struct Link {
        #[diesel(sql_type = diesel::sql_types::Text)]
        from_status: String,
        #[diesel(sql_type = diesel::sql_types::Text)]
        to_status: String,
    }
    let chain: Vec<Link> = diesel::sql_query(format!(
        "SELECT details->>'from_status' AS from_status, details->>'to_status' AS to_status
         FROM audit_logs WHERE entity_id = '{id}' AND actor = 'stdio'
           AND action IN ('campaign_paused', 'campaign_resumed', 'campaign_cancelled')
         ORDER BY id"
    ))
    .load(&mut db)
    .await?;
    if chain.len() != succeeded {
        problems.push(format!(
            "{succeeded} calls succeeded but {} transitions were audited",
            chain.len()
        ));
    }
    for w in chain.windows(2) {
        let sending = ["running", "sending"];
        let linked = w[1].from_status == w[0].to_status
            || (w[0].to_status == "running" && sending.contains(&w[1].from_status.as_str()));
        if !linked {
            problems.push(format!(
                "transition {} -> {} follows {} -> {}",
                w[1].from_status, w[1].to_status, w[0].from_status, w[0].to_status
            ));
        }
    }
    let last = chain
        .last()
        .map(|l| l.to_status.clone())
        .unwrap_or_else(|| "running".into());

    // Let the run end: read to its end (or the rest counted as cancelled), or the paused
    // fan-out stopped; then every queued message settled by the dispatchers and webhooks.
    let campaign_sql = format!("SELECT count(*) AS n FROM campaigns WHERE id = '{id}'");
    let done_sql = format!("{campaign_sql} AND audience_done");
    let stopped_sql = format!("{campaign_sql} AND lease_owner IS NULL AND status = 'paused'");
    let end_sql = if last == "paused" {
        &stopped_sql
    } else {
        &done_sql
    };
    wait_count(
        &mut db,
        "the fan-out to end",
        end_sql,
        |n| n == 1,
        Duration::from_secs(600),
    )
    .await?;
    if last != "paused" {
        let sql = format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status IN ('queued', 'sending')"
        );
        wait_count(
            &mut db,
            "every message to settle",
            &sql,
            |n| n == 0,
            Duration::from_secs(600),
        )
        .await?;
    }
    let c = gateways[1]
        .tool("get_campaign", json!({"campaign_id": id}))
        .await?
        .map_err(|(code, e)| anyhow!("get_campaign: {code}: {e}"))?;
    let n = |k: &str| c[k].as_i64().unwrap_or(-1);
    let (sent, delivered, failed, cancelled, pending, total) = (
        n("sent_count"),
        n("delivered_count"),
        n("failed_count"),
        n("cancelled_count"),
        n("pending_count"),
        n("total_recipients"),
    );
    let status = c["status"].as_str().unwrap_or("?").to_string();
    let expected_status: &[&str] = match last.as_str() {
        "paused" => &["paused"],
        "cancelled" => &["cancelled"],
        _ => &["running", "completed", "failed"],
    };
    if !expected_status.contains(&status.as_str()) {
        problems.push(format!(
            "final status {status}, but the last successful call left it {last}"
        ));
    }
    let rows = |cond: &str| {
        format!("SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND {cond}")
    };
    let row_sent = count(&mut db, &rows("status IN ('sent', 'delivered', 'read')")).await?;
    let row_failed = count(
        &mut db,
        &rows("status = 'failed' AND error_category IS DISTINCT FROM 'campaign'"),
    )
    .await?;
    let messages = count(&mut db, &messages_sql).await?;
    let distinct = count(
        &mut db,
        &format!(
            "SELECT count(DISTINCT customer_phone) AS n FROM messages WHERE campaign_id = '{id}'"
        ),
    )
    .await?;
    if sent != row_sent || failed != row_failed {
        problems.push(format!(
            "counters sent {sent} / failed {failed}, rows say {row_sent} / {row_failed}"
        ));
    }
    if sent + failed + cancelled + pending != total {
        problems.push(format!("sent {sent} + failed {failed} + cancelled {cancelled} + pending {pending} != total {total}"));
    }
    if last != "paused" && total != audience {
        problems.push(format!("total_recipients {total}, audience {audience}"));
    }
    if distinct != messages {
        problems.push(format!("{messages} messages for {distinct} recipients"));
    }
    for g in Arc::try_unwrap(gateways).map_err(|_| anyhow!("gateways still shared"))? {
        g.close().await;
    }
    let ok = problems.is_empty();
    eprintln!(
        "[{TOOL}] {} calls in {calls_seconds:.1} s (p99 {p99:.0} ms): {succeeded} succeeded, {refused} refused properly, {unavailable} UNAVAILABLE; last call left it {last}, final {status}; sent {sent} (delivered {delivered}), failed {failed}, cancelled {cancelled}, pending {pending} = {total} of {audience}",
        succeeded + refused + problems.len()
    );
    for p in &problems {
        eprintln!("[{TOOL}] problem: {p}");
    }
    warden_faults::report::emit(&json!({
        "recipients": audience,
        "calls": latencies.len(),
        "succeeded": succeeded,
        "refused_properly": refused,
        "unavailable": unavailable,
        "call_p99_ms": p99,
        "calls_seconds": calls_seconds,
        "cpu_burners": o.cpu_burners,
        "last_call_left": last,
        "final_status": status,
        "sent": sent,
        "delivered": delivered,
        "failed": failed,
        "cancelled": cancelled,
        "pending": pending,
        "total_recipients": total,
        "seconds": started.elapsed().as_secs_f64(),
        "problems": problems,
        "ok": ok,
    }));
    Ok(ok)
}
