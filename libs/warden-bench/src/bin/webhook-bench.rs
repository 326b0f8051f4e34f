//! webhook-bench: load generator for a running webhook server.
//!
//! Sends correctly signed, platform-shaped POSTs from its own process and reports:
//! - single-event POSTs (default N = 20,000 at concurrency 32): POST/s, p50/p99/max;
//! - 100-event batches: events/s, and per-POST p50/p99.
//!
//! Every event is new (unique wamids), so each one is really applied: inbound messages
//! create customers, open windows and store message rows; statuses are looked up (and,
//! for `--kind status`, belong to no stored message: the cheap acknowledged path).
//!
//!
//! With `--raw-pg` it then measures, as the reference, raw Postgres inserts of the same
//! number of message rows into a copy of the `messages` table (same columns and indexes)
//! in the server's database (DB_* environment): one row per transaction at the single-event
//! concurrency, and `--batch-size`-row statements at the batch concurrency. With
//! `--server-pid` the server's peak RSS (VmHWM) is read before this process exits.
//!
//! ```text
//! webhook-bench --url http://127.0.0.1:8080 --secret "$PLATFORM_APP_SECRET" \
//!     [--requests 20000] [--concurrency 32] [--batches 200] [--batch-size 100]
//!     [--batch-concurrency 8] [--kind inbound|status|mixed] [--threads 1] [--json FILE]
//!     [--raw-pg] [--server-pid PID]
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde_json::{Value, json};
use warden_platform::signature::Signer;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Kind {
    /// Inbound text messages (customer + window + message row per event).
    Inbound,
    /// Delivery statuses of messages the server does not know (lookup, acknowledge).
    Status,
    /// Alternating inbound messages and statuses.
    Mixed,
}

#[derive(Parser, Debug)]
#[command(
    name = "webhook-bench",
    about = "Signed webhook POST load against a running webhook server"
)]
struct Args {
    /// Base URL of the webhook server.
    #[arg(long, env = "WEBHOOK_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The server's PLATFORM_APP_SECRET (signs every body).
    #[arg(long, env = "PLATFORM_APP_SECRET")]
    secret: String,
    /// Single-event POSTs.
    #[arg(long, default_value_t = 20_000)]
    requests: usize,
    /// Single-event POSTs in flight.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Batched POSTs.
    #[arg(long, default_value_t = 200)]
    batches: usize,
    /// Events per batched POST.
    #[arg(long, default_value_t = 100)]
    batch_size: usize,
    /// Batched POSTs in flight.
    #[arg(long, default_value_t = 8)]
    batch_concurrency: usize,
    /// What the events are.
    #[arg(long, value_enum, default_value_t = Kind::Inbound)]
    kind: Kind,
    /// Distinct customers the inbound messages come from.
    #[arg(long, default_value_t = 10_000)]
    customers: usize,
    /// Load generator threads (the machine is shared with the server under test).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Reference: raw Postgres inserts of as many rows, in the server's database (DB_*).
    #[arg(long)]
    raw_pg: bool,
    /// The server's process id: its peak RSS (VmHWM) goes into the report.
    #[arg(long)]
    server_pid: Option<u32>,
}

struct Gen {
    run: String,
    customers: usize,
    kind: Kind,
    seq: AtomicU64,
}

impl Gen {
    fn event(&self, i: u64) -> Value {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let inbound = match self.kind {
            Kind::Inbound => true,
            Kind::Status => false,
            Kind::Mixed => i.is_multiple_of(2),
        };
        let phone = format!("62899{:07}", n as usize % self.customers.max(1));
        let wamid = format!("wamid.BENCH{}{n:010}", self.run);
        let ts = chrono::Utc::now().timestamp().to_string();
        let metadata =
            json!({"display_phone_number": "15550100000", "phone_number_id": "100000000000001"});
        if inbound {
            json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata,
                "contacts": [{"profile": {"name": "Bench"}, "wa_id": phone}],
                "messages": [{"from": phone, "id": wamid, "timestamp": ts, "type": "text",
                              "text": {"body": format!("bench message {n}")}}]}})
        } else {
            json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata,
                "statuses": [{"id": wamid, "status": "delivered", "timestamp": ts, "recipient_id": phone,
                              "pricing": {"billable": true, "pricing_model": "PMP", "category": "utility"}}]}})
        }
    }

    fn body(&self, events: usize) -> Vec<u8> {
        let changes: Vec<Value> = (0..events as u64).map(|i| self.event(i)).collect();
        json!({"object": "whatsapp_business_account",
               "entry": [{"id": "200000000000001", "time": chrono::Utc::now().timestamp(), "changes": changes}]})
        .to_string()
        .into_bytes()
    }
}

#[derive(Debug)]
struct Phase {
    name: &'static str,
    posts: usize,
    events: usize,
    failures: u64,
    elapsed: Duration,
    latencies: Vec<Duration>,
}

impl Phase {
    fn pct(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let idx = ((self.latencies.len() as f64 - 1.0) * p).round() as usize;
        self.latencies[idx]
    }

    fn print(&self) {
        let secs = self.elapsed.as_secs_f64();
        println!(
            "{:<14} posts={:<6} events={:<7} failures={:<4} time={:>7.2}s  POST/s={:>8.0}  events/s={:>8.0}  p50={:>6.2}ms  p99={:>6.2}ms  max={:>7.2}ms",
            self.name,
            self.posts,
            self.events,
            self.failures,
            secs,
            self.posts as f64 / secs,
            self.events as f64 / secs,
            ms(self.pct(0.50)),
            ms(self.pct(0.99)),
            ms(self.latencies.last().copied().unwrap_or_default()),
        );
    }

    fn json(&self) -> Value {
        let secs = self.elapsed.as_secs_f64();
        json!({"posts": self.posts, "events": self.events, "failures": self.failures,
               "seconds": secs, "posts_per_sec": self.posts as f64 / secs,
               "events_per_sec": self.events as f64 / secs,
               "p50_ms": ms(self.pct(0.5)), "p99_ms": ms(self.pct(0.99)),
               "max_ms": ms(self.latencies.last().copied().unwrap_or_default())})
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Where and how to send.
#[derive(Clone)]
struct Target {
    http: reqwest::Client,
    url: String,
    signer: Signer,
    generator: Arc<Gen>,
}

async fn drive(
    name: &'static str,
    target: &Target,
    posts: usize,
    per_post: usize,
    concurrency: usize,
) -> Phase {
    let next = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency.max(1) {
        let Target {
            http,
            url,
            signer,
            generator,
        } = target.clone();
        let (next, failures) = (next.clone(), failures.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < posts {
                let body = generator.body(per_post);
                let sig = signer.sign(&body);
                let t = Instant::now();
                let ok = match http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("X-Hub-Signature-256", sig)
                    .body(body)
                    .send()
                    .await
                {
                    Ok(r) => {
                        let status = r.status();
                        let text = r.text().await.unwrap_or_default();
                        if !(status.is_success() && text == "EVENT_RECEIVED")
                            && failures.load(Ordering::Relaxed) < 3
                        {
                            eprintln!("{name}: answered {status} {text:?}");
                        }
                        status.is_success() && text == "EVENT_RECEIVED"
                    }
                    Err(e) => {
                        if failures.load(Ordering::Relaxed) < 3 {
                            eprintln!("{name}: {e}");
                        }
                        false
                    }
                };
                lat.push(t.elapsed());
                if !ok {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            lat
        }));
    }
    let mut latencies = Vec::with_capacity(posts);
    for t in tasks {
        latencies.extend(t.await.expect("load task"));
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    Phase {
        name,
        posts,
        events: posts * per_post,
        failures: failures.load(Ordering::Relaxed),
        elapsed,
        latencies,
    }
}

fn main() {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
        .expect("runtime");
    let (mut report, failures) = rt.block_on(bench(&args));
    drop(rt);
    if args.raw_pg {
        // Its own runtime (a thread per core), like the other benches' raw references.
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        match rt.block_on(raw_pg(&args, &report)) {
            Ok(raw) => report["raw_pg"] = raw,
            Err(e) => eprintln!("webhook-bench: raw Postgres reference failed: {e:#}"),
        }
    }
    if let Some(pid) = args.server_pid {
        let rss = warden_bench::peak_rss_mib(&pid.to_string());
        println!(
            "peak RSS (VmHWM): webhook server {}  load generator {}",
            rss.map_or("?".into(), |m| format!("{m:.1} MiB")),
            warden_bench::peak_rss_mib("self").map_or("?".into(), |m| format!("{m:.1} MiB"))
        );
        report["server_peak_rss_mib"] = json!(rss);
    }
    report["load_peak_rss_mib"] = json!(warden_bench::peak_rss_mib("self"));
    if let Some(path) = &args.json {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, serde_json::to_string_pretty(&report).unwrap())
            .unwrap_or_else(|e| eprintln!("webhook-bench: cannot write {}: {e}", path.display()));
    }
    if failures > 0 {
        std::process::exit(1);
    }
}

/// The reference: as many message rows as the two phases stored, inserted raw into
/// `bench_raw (LIKE messages INCLUDING ALL)` in the server's database, then dropped.
async fn raw_pg(args: &Args, report: &Value) -> anyhow::Result<Value> {
    use diesel::sql_types::{BigInt, Jsonb, Text, Uuid as SqlUuid};
    use diesel_async::RunQueryDsl;
    use futures::StreamExt;

    let settings = warden_settings::Settings::load(None)?;
    let size = args.concurrency.max(args.batch_concurrency) as u32 + 2;
    let pg = warden_store::connect(&settings.database, size, Duration::from_secs(5)).await?;
    {
        let mut conn = pg.get().await?;
        diesel::sql_query("DROP TABLE IF EXISTS bench_raw")
            .execute(&mut conn)
            .await?;
        diesel::sql_query("CREATE TABLE bench_raw (LIKE messages INCLUDING ALL)")
            .execute(&mut conn)
            .await?;
    }
    let run = format!("{:08X}", rand::random::<u32>());
    // One INSERT per row, each its own transaction: the commit pattern of one event per POST.
    let rows = args.requests;
    let t = Instant::now();
    let errors = futures::stream::iter(0..rows)
        .map(|i| {
            let (pg, run) = (pg.clone(), run.clone());
            async move {
                let mut conn = pg.get().await.ok()?;
                diesel::sql_query(
                    "INSERT INTO bench_raw (id, customer_phone, channel, direction, message_type, category, status, content, wamid)
                     VALUES ($1, $2, 'whatsapp', 'inbound', 'text', 'service', 'received', $3, $4)",
                )
                .bind::<SqlUuid, _>(uuid::Uuid::now_v7())
                .bind::<Text, _>(format!("62899{:07}", i % args.customers.max(1)))
                .bind::<Jsonb, _>(json!({"type": "text", "text": {"body": format!("bench message {i}")}}))
                .bind::<Text, _>(format!("wamid.RAW{run}{i:010}"))
                .execute(&mut conn)
                .await
                .ok()
            }
        })
        .buffer_unordered(args.concurrency.max(1))
        .filter(|r| futures::future::ready(r.is_none()))
        .count()
        .await;
    anyhow::ensure!(errors == 0, "{errors} raw single-row inserts failed");
    let single_secs = t.elapsed().as_secs_f64();
    {
        let mut conn = pg.get().await?;
        diesel::sql_query("TRUNCATE bench_raw")
            .execute(&mut conn)
            .await?;
    }
    // `batch_size` rows per INSERT..SELECT statement, `batch_concurrency` at once.
    let (batches, per) = (args.batches as i64, args.batch_size.max(1) as i64);
    let t = Instant::now();
    let errors = futures::stream::iter(0..batches)
        .map(|b| {
            let (pg, run) = (pg.clone(), run.clone());
            async move {
                let mut conn = pg.get().await.ok()?;
                diesel::sql_query(
                    "INSERT INTO bench_raw (id, customer_phone, channel, direction, message_type, category, status, content, wamid)
                     SELECT gen_random_uuid(), '62899' || lpad((i % 10000)::text, 7, '0'), 'whatsapp', 'inbound', 'text',
                            'service', 'received', jsonb_build_object('type', 'text', 'text',
                            jsonb_build_object('body', 'bench message ' || i)), 'wamid.RAWB' || $1 || lpad(i::text, 10, '0')
                     FROM generate_series($2, $3) AS i",
                )
                .bind::<Text, _>(run)
                .bind::<BigInt, _>(b * per)
                .bind::<BigInt, _>(b * per + per - 1)
                .execute(&mut conn)
                .await
                .ok()
            }
        })
        .buffer_unordered(args.batch_concurrency.max(1))
        .filter(|r| futures::future::ready(r.is_none()))
        .count()
        .await;
    anyhow::ensure!(errors == 0, "{errors} raw batched inserts failed");
    let batched_secs = t.elapsed().as_secs_f64();
    {
        let mut conn = pg.get().await?;
        diesel::sql_query("DROP TABLE bench_raw")
            .execute(&mut conn)
            .await?;
    }
    let batched_rows = batches * per;
    let single_rate = rows as f64 / single_secs;
    let batched_rate = batched_rows as f64 / batched_secs;
    let events = |phase: &str| report[phase]["events_per_sec"].as_f64().unwrap_or(0.0);
    let (single_ratio, batched_ratio) = (
        events("single_event") / single_rate,
        events("batched") / batched_rate,
    );
    println!(
        "reference: raw Postgres inserts of message rows (same database, same table shape and indexes)"
    );
    println!(
        "  {rows} rows, one per transaction, {} connections  {single_secs:.2} s  ({single_rate:.0} rows/s)   single-event/raw = {single_ratio:.2}",
        args.concurrency
    );
    println!(
        "  {batched_rows} rows, {per}-row INSERT..SELECT, {} connections  {batched_secs:.2} s  ({batched_rate:.0} rows/s)   batched/raw = {batched_ratio:.2}",
        args.batch_concurrency
    );
    Ok(json!({
        "single_rows": rows, "single_connections": args.concurrency,
        "single_seconds": single_secs, "single_rows_per_sec": single_rate,
        "batched_rows": batched_rows, "batched_rows_per_statement": per,
        "batched_connections": args.batch_concurrency,
        "batched_seconds": batched_secs, "batched_rows_per_sec": batched_rate,
        "ratio_single_event_to_raw": single_ratio,
        "ratio_batched_to_raw": batched_ratio,
    }))
}

/// The two load phases; returns the report and the number of failed POSTs.
async fn bench(args: &Args) -> (Value, u64) {
    let base = args.url.trim_end_matches('/').to_string();
    let url = format!("{base}/webhook");
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("http client");
    match http.get(format!("{base}/health")).send().await {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => {
            eprintln!("webhook-bench: {base}/health answered {}", r.status());
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("webhook-bench: cannot reach {base}: {e}");
            std::process::exit(1);
        }
    }
    let signer = Signer::new(args.secret.as_bytes());
    let run = format!("{:08X}", rand::random::<u32>());
    let generator = Arc::new(Gen {
        run,
        customers: args.customers,
        kind: args.kind,
        seq: AtomicU64::new(0),
    });
    println!(
        "webhook-bench: {url} kind={:?} load-threads={} (load generator shares the machine with the server)",
        args.kind, args.threads
    );
    let target = Target {
        http,
        url,
        signer,
        generator,
    };
    // Warm-up: connections, prepared statements, pool.
    let warm = drive("warm-up", &target, 500, 1, args.concurrency).await;
    warm.print();
    let single = drive("single-event", &target, args.requests, 1, args.concurrency).await;
    single.print();
    let batched = drive(
        "batched",
        &target,
        args.batches,
        args.batch_size,
        args.batch_concurrency,
    )
    .await;
    batched.print();
    let report = json!({
        "kind": format!("{:?}", args.kind).to_lowercase(),
        "concurrency": args.concurrency,
        "batch_size": args.batch_size,
        "batch_concurrency": args.batch_concurrency,
        "single_event": single.json(),
        "batched": batched.json(),
    });
    (report, single.failures + batched.failures)
}
