//! settle-bench: the whole pipeline, outside in. N `send_message` calls (care window open)
//! split over two `mcp-gateway` processes on stdio -> the delivery stream -> `dispatcher` ->
//! `platform-sim` -> three signed status webhooks per message (sent, delivered, read) ->
//! `webhook` -> Postgres, timed until every message is `delivered` or `read`.
//!
//! Every process is a built binary from `--bin-dir`, so the same harness drives today's build
//! and an older one. Each starts with its own environment on free loopback ports against a
//! fresh database (the binaries migrate it at start-up; the webhook server, started first,
//! does it before anything else connects) and a delivery stream of its own. Customers with an
//! open care window are seeded in plain SQL every schema version accepts.
//!
//! Reported (stdout and `--json`): the send phase (first call to last answer) and its rate,
//! when the platform had received every message (the sim's `sim_sends_total`) and that rate,
//! the settle time (first call to every message delivered or read in Postgres) and settle
//! rate, when every message was `read`, the webhook POSTs the sim made, the load average
//! before and after, and the webhook server's and dispatcher's peak RSS. Progress on stderr.
//!
//! ```text
//! settle-bench --bin-dir target/release [--messages 10000] [--in-flight 8]
//!     [--workdir DIR] [--deadline-s 300] [--json target/bench/settle.json]
//! ```
//! Uses the usual DB_*/REDIS_*/NATS_URL environment for where the services are.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use serde_json::{Value, json};
use tokio::process::{Child, Command};
use warden_bench::stdio::Gateway;
use warden_store::testing::TestDatabase;

const SECRET: &str = "settle-bench-secret";
const TOKEN: &str = "settle-bench-token";
const POLL: Duration = Duration::from_millis(250);

#[derive(Parser, Debug)]
#[command(
    name = "settle-bench",
    about = "send_message x N over two gateways until every message is delivered or read"
)]
struct Args {
    /// Where mcp-gateway, webhook, dispatcher and platform-sim are (a tree's target/release).
    #[arg(long)]
    bin_dir: PathBuf,
    /// The processes' working directory (their default policies file is relative to it).
    #[arg(long, default_value = ".")]
    workdir: PathBuf,
    /// send_message calls, split evenly over the two gateways.
    #[arg(long, default_value_t = 10_000)]
    messages: usize,
    /// Calls in flight on each gateway.
    #[arg(long, default_value_t = 8)]
    in_flight: usize,
    /// The dispatcher's RATE_LIMIT_MPS: high enough that the limit is not what binds.
    #[arg(long, default_value_t = 5_000)]
    rate_limit_mps: u32,
    /// Give up when the pipeline has not settled this long after the first call.
    #[arg(long, default_value_t = 300)]
    deadline_s: u64,
    /// Count what the processes publish on NATS during the run (a subscriber on the run's
    /// subjects and its stream's acknowledgements): delivery jobs, conversation hints, acks.
    /// Off by default: the extra subscriber is load of its own.
    #[arg(long)]
    count_nats: bool,
    /// Also write the report here.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(QueryableByName)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    settled: i64,
    #[diesel(sql_type = BigInt)]
    read: i64,
}

/// A started process, its stderr kept in `<log dir>/settle-<name>.log`.
struct Proc {
    name: &'static str,
    child: Child,
}

impl Proc {
    fn peak_rss_mib(&self) -> Option<f64> {
        warden_bench::peak_rss_mib(&self.child.id()?.to_string())
    }
}

struct Stack<'a> {
    args: &'a Args,
    env: Vec<(String, String)>,
    log_dir: PathBuf,
}

impl Stack<'_> {
    fn command(&self, name: &str) -> anyhow::Result<Command> {
        let bin = self.args.bin_dir.join(name);
        anyhow::ensure!(bin.is_file(), "{} not found", bin.display());
        let mut cmd = Command::new(bin);
        cmd.current_dir(&self.args.workdir)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .kill_on_drop(true);
        Ok(cmd)
    }

    fn log(&self, name: &str) -> anyhow::Result<std::fs::File> {
        Ok(std::fs::File::create(
            self.log_dir.join(format!("settle-{name}.log")),
        )?)
    }

    fn spawn(&self, name: &'static str, extra: &[(&str, String)]) -> anyhow::Result<Proc> {
        let mut cmd = self.command(name)?;
        cmd.envs(extra.iter().map(|(k, v)| (k, v)))
            .stderr(self.log(name)?);
        Ok(Proc {
            name,
            child: cmd.spawn()?,
        })
    }
}

async fn wait_healthy(
    http: &reqwest::Client,
    proc: &mut Proc,
    port: u16,
    within: Duration,
) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        if let Some(status) = proc.child.try_wait()? {
            anyhow::bail!("{} exited ({status}) before it was healthy", proc.name);
        }
        let url = format!("http://127.0.0.1:{port}/health");
        if let Ok(r) = http.get(&url).send().await
            && r.status().is_success()
        {
            return Ok(());
        }
        anyhow::ensure!(
            start.elapsed() < within,
            "{} not healthy on port {port} after {within:?}",
            proc.name
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The sim's Prometheus counters (`name value` lines).
async fn sim_counter(http: &reqwest::Client, port: u16, name: &str) -> anyhow::Result<u64> {
    let text = http
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse::<f64>().ok()).flatten()
        })
        .map(|v| v as u64)
        .ok_or_else(|| anyhow::anyhow!("the sim's /metrics has no {name}"))
}

async fn counts(conn: &mut AsyncPgConnection) -> anyhow::Result<Counts> {
    Ok(diesel::sql_query(
        "SELECT count(*) FILTER (WHERE status IN ('delivered', 'read')) AS settled, \
                count(*) FILTER (WHERE status = 'read') AS read \
         FROM messages WHERE direction = 'outbound'",
    )
    .get_result(conn)
    .await?)
}

fn secs(d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| {
        json!((d.as_secs_f64() * 1000.0).round() / 1000.0)
    })
}

fn rate(n: usize, d: Option<Duration>) -> Value {
    d.map_or(Value::Null, |d| json!((n as f64 / d.as_secs_f64()).round()))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    anyhow::ensure!(
        args.messages >= 2 && args.in_flight >= 1,
        "--messages >= 2, --in-flight >= 1"
    );
    let n = args.messages;
    let load_before = warden_bench::load_average();
    let log_dir = args
        .json
        .as_deref()
        .and_then(Path::parent)
        .map_or_else(|| PathBuf::from("target/bench"), Path::to_path_buf);
    std::fs::create_dir_all(&log_dir)?;

    let db = TestDatabase::create();
    let stream = format!("SETTLE_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
    let (sim_port, wh_port, disp_port) = (
        warden_bench::free_port()?,
        warden_bench::free_port()?,
        warden_bench::free_port()?,
    );
    // The same names in every tree so far (README / docs/configuration.md of each).
    let env: Vec<(String, String)> = [
        ("DB_NAME", db.name().to_string()),
        ("DELIVERY_STREAM", stream.clone()),
        ("PLATFORM_APP_SECRET", SECRET.into()),
        ("PLATFORM_ACCESS_TOKEN", TOKEN.into()),
        ("PLATFORM_API_URL", format!("http://127.0.0.1:{sim_port}")),
        ("RATE_LIMIT_MPS", args.rate_limit_mps.to_string()),
        ("RUST_LOG", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let stack = Stack {
        args: &args,
        env,
        log_dir: log_dir.clone(),
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;

    eprintln!(
        "[settle] {} messages over 2 gateways, {} in flight each; binaries from {}; database {}",
        n,
        args.in_flight,
        args.bin_dir.display(),
        db.name()
    );
    let mut sim = stack.spawn(
        "platform-sim",
        &[
            ("SIM_HTTP_HOST", "127.0.0.1".into()),
            ("SIM_HTTP_PORT", sim_port.to_string()),
            (
                "SIM_WEBHOOK_URL",
                format!("http://127.0.0.1:{wh_port}/webhook"),
            ),
        ],
    )?;
    // The webhook server migrates the fresh database before the others start.
    let mut webhook = stack.spawn("webhook", &[("SERVER_HTTP_PORT", wh_port.to_string())])?;
    wait_healthy(&http, &mut sim, sim_port, Duration::from_secs(20)).await?;
    wait_healthy(&http, &mut webhook, wh_port, Duration::from_secs(60)).await?;
    let mut dispatcher =
        stack.spawn("dispatcher", &[("ADMIN_HTTP_PORT", disp_port.to_string())])?;
    wait_healthy(&http, &mut dispatcher, disp_port, Duration::from_secs(60)).await?;

    // Customers who wrote a minute ago: free-form text is inside their care window. Phones
    // of this run only (a random block), so no cache of an earlier run answers for them.
    let block = 10 + rand::random::<u32>() % 90;
    let phone = move |i: usize| format!("628{block}{i:07}");
    let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(5)).await?;
    let mut conn = pool.get().await?;
    conn.batch_execute(&format!(
        "INSERT INTO customers (phone, country) \
         SELECT '628{block}' || lpad(i::text, 7, '0'), 'ID' FROM generate_series(0, {last}) i; \
         INSERT INTO conversations (customer_phone, last_inbound_at, window_expires_at) \
         SELECT '628{block}' || lpad(i::text, 7, '0'), now() - interval '1 minute', \
                now() + interval '23 hours' FROM generate_series(0, {last}) i; \
         ANALYZE customers; ANALYZE conversations",
        last = n - 1
    ))
    .await?;
    eprintln!("[settle] stack up, {n} customers seeded; starting two gateways");

    let mut gateways = Vec::new();
    for g in 1..=2 {
        let mut cmd = stack.command("mcp-gateway")?;
        cmd.stderr(stack.log(&format!("mcp-gateway-{g}"))?);
        gateways.push(Arc::new(Gateway::spawn(cmd).await?));
    }

    let nats_counts: Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>> =
        Arc::default();
    if args.count_nats {
        let client = async_nats::connect(&db.settings.nats_url).await?;
        let lower = stream.to_lowercase();
        for subject in [format!("{lower}.>"), format!("$JS.ACK.{stream}.>")] {
            let mut sub = client.subscribe(subject).await?;
            let counts = nats_counts.clone();
            tokio::spawn(async move {
                use futures::StreamExt;
                while let Some(m) = sub.next().await {
                    // `<stream>.outbound.whatsapp`, `<stream>.hints.conversations.<customer>`,
                    // `$JS.ACK.<stream>.<consumer>...`: counted by what they are, not by customer.
                    let subject = m.subject.as_str();
                    let what = if subject.starts_with("$JS.ACK.") {
                        let body = std::str::from_utf8(&m.payload).unwrap_or("");
                        format!(
                            "stream ack: {}",
                            body.split_whitespace().next().unwrap_or("+ACK")
                        )
                    } else {
                        subject
                            .split('.')
                            .skip(1)
                            .take(2)
                            .collect::<Vec<_>>()
                            .join(".")
                    };
                    *counts.lock().expect("counts").entry(what).or_default() += 1;
                }
            });
        }
        client.flush().await?;
    }

    // Send phase: gateway g sends to customers g, g + 2, g + 4, ... with `in_flight` callers.
    let t0 = Instant::now();
    let mut callers = tokio::task::JoinSet::new();
    for (g, gateway) in gateways.iter().enumerate() {
        let next = Arc::new(AtomicUsize::new(g));
        for _ in 0..args.in_flight {
            let (gateway, next) = (gateway.clone(), next.clone());
            callers.spawn(async move {
                loop {
                    let i = next.fetch_add(2, Ordering::Relaxed);
                    if i >= n {
                        return anyhow::Ok(Instant::now());
                    }
                    let r = gateway
                        .call(
                            "send_message",
                            json!({"to": phone(i), "text": format!("Your order {i} is on its way")}),
                        )
                        .await?;
                    anyhow::ensure!(r.to_string().contains("queued"), "not queued: {r}");
                }
            });
        }
    }
    // Poll while the calls run: the platform's count and the rows' statuses.
    let deadline = Duration::from_secs(args.deadline_s);
    let (mut sent_phase, mut platform_at, mut settled_at, mut read_at) = (None, None, None, None);
    let mut last_answer = t0;
    let mut last_report = Instant::now();
    let (mut platform, mut c);
    loop {
        while let Some(done) = callers.try_join_next() {
            last_answer = last_answer.max(done??);
        }
        if sent_phase.is_none() && callers.is_empty() {
            sent_phase = Some(last_answer - t0);
            eprintln!(
                "[settle] send phase done: {n} calls in {:.2} s",
                (last_answer - t0).as_secs_f64()
            );
        }
        platform = sim_counter(&http, sim_port, "sim_sends_total").await?;
        if platform_at.is_none() && platform as usize >= n {
            platform_at = Some(t0.elapsed());
        }
        c = counts(&mut conn).await?;
        if settled_at.is_none() && c.settled as usize >= n {
            settled_at = Some(t0.elapsed());
        }
        if read_at.is_none() && c.read as usize >= n {
            read_at = Some(t0.elapsed());
        }
        if read_at.is_some() || t0.elapsed() > deadline {
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(5) {
            last_report = Instant::now();
            eprintln!(
                "[settle] {:>5.1} s: platform received {platform}, delivered or read {}, read {}",
                t0.elapsed().as_secs_f64(),
                c.settled,
                c.read
            );
        }
        tokio::time::sleep(POLL).await;
    }
    let load_after = warden_bench::load_average();
    let posts = sim_counter(&http, sim_port, "sim_webhook_posts_total").await?;
    let changes = sim_counter(&http, sim_port, "sim_webhook_changes_delivered_total").await?;
    let duplicates = sim_counter(&http, sim_port, "sim_duplicates_total").await?;
    let report = json!({
        "benchmark": "pipeline settle: send_message over two stdio gateways -> stream -> dispatcher -> platform-sim -> status webhooks -> Postgres",
        "bin_dir": args.bin_dir.canonicalize().unwrap_or(args.bin_dir.clone()),
        "messages": n,
        "gateways": 2,
        "in_flight_per_gateway": args.in_flight,
        "rate_limit_mps": args.rate_limit_mps,
        "send_phase_s": secs(sent_phase),
        "send_rate_per_s": rate(n, sent_phase),
        "platform_received": platform,
        "platform_all_received_s": secs(platform_at),
        "platform_rate_per_s": rate(n, platform_at),
        "settle_s": secs(settled_at),
        "settle_rate_per_s": rate(n, settled_at),
        "settled": c.settled,
        "all_read_s": secs(read_at),
        "read": c.read,
        "platform_duplicates": duplicates,
        "webhook_posts": posts,
        "webhook_changes_delivered": changes,
        "nats_published": if args.count_nats { json!(*nats_counts.lock().expect("counts")) } else { Value::Null },
        "webhook_peak_rss_mib": webhook.peak_rss_mib(),
        "dispatcher_peak_rss_mib": dispatcher.peak_rss_mib(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "machine_cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    });
    eprintln!(
        "[settle] send phase {} s ({} calls/s); platform had all at {} s ({}/s); settled at {} s ({}/s); all read at {} s; load {load_before} -> {load_after}",
        report["send_phase_s"],
        report["send_rate_per_s"],
        report["platform_all_received_s"],
        report["platform_rate_per_s"],
        report["settle_s"],
        report["settle_rate_per_s"],
        report["all_read_s"]
    );
    println!("{report}");
    if let Some(path) = &args.json {
        std::fs::write(path, format!("{report}\n"))?;
    }

    // Stop the processes before the database goes (TestDatabase's drop forces it anyway).
    drop(gateways);
    for p in [&mut dispatcher, &mut webhook, &mut sim] {
        let _ = p.child.kill().await;
    }
    drop(conn);
    drop(pool);
    if let Ok(client) = async_nats::connect(&db.settings.nats_url).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&stream)
            .await;
    }
    anyhow::ensure!(
        settled_at.is_some(),
        "not settled within {deadline:?}: {} of {n} delivered or read",
        c.settled
    );
    Ok(())
}
