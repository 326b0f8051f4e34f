//! Dispatcher benchmark against the real services (Postgres, Redis, NATS) and an in-process
//! platform-sim (no status webhooks):
//!
//! 1. throughput: N pre-inserted queued messages (distinct recipients) already in the
//!    stream; one dispatcher with a high RATE_LIMIT_MPS; time until every row is `sent`.
//!    Then, as the reference, the raw Postgres rate for the same rows: one single-row
//!    UPDATE of each message row per transaction, through the dispatcher's own pool at its
//!    concurrency (the dispatcher's per-message write is one such transaction).
//!
//!    With one hot pair: the same run, plus one customer whose every call the platform
//!    answers 131056 (pair rate hit); the rate of the other messages as a ratio of the
//!    plain run (goal >= 95 %: only that pair backs off).
//! 2. rate-limit accuracy: a configured MPS over a measured window (default 60 s) after a
//!    warm-up, with the bucket drained first so only its refill paces the run.
//! 3. rate-limit accuracy per sender: two numbers at once (a senders file of a1, default,
//!    at 50 mps and b1 at 200 mps; platform-sim serving both, each with its own token),
//!    each with its own backlog, over the same kind of window; each number's rate is what
//!    platform-sim received on its phone_number_id.
//!
//! The report also carries this process's peak RSS (VmHWM): dispatcher and platform-sim.
//!
//! ```text
//! cargo run --release -p warden-bench --bin dispatch_bench -- --help
//! ```
//! Figures are printed and written to `target/bench/dispatcher.json`.

// The bench drives part of the dispatcher tests' harness; the rest is theirs.
#[allow(dead_code)]
#[path = "../../../warden-dispatcher/tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use clap::Parser;
use common::{Harness, TestSender};
use serde_json::json;
use warden_ratelimit::{Take, TokenBucket};

#[derive(Parser)]
#[command(
    name = "dispatch_bench",
    about = "Dispatcher throughput and rate-limit accuracy"
)]
struct Args {
    /// Messages for the throughput run.
    #[arg(long, default_value_t = 20_000)]
    messages: usize,
    /// RATE_LIMIT_MPS for the throughput run (high, so the bucket is not the limit).
    #[arg(long, default_value_t = 5000)]
    mps: u32,
    /// Messages processed at once (DISPATCH_CONCURRENCY).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// RATE_LIMIT_MPS for the accuracy run.
    #[arg(long, default_value_t = 100)]
    accuracy_mps: u32,
    /// Measured window of the accuracy run, seconds.
    #[arg(long, default_value_t = 60)]
    accuracy_secs: u64,
    /// Warm-up before the accuracy window, seconds.
    #[arg(long, default_value_t = 5)]
    warmup_secs: u64,
    #[arg(long)]
    skip_throughput: bool,
    /// Skip the hot-pair run (131056 for one customer beside the throughput run).
    #[arg(long)]
    skip_hot_pair: bool,
    /// Messages queued for the hot customer in the hot-pair run.
    #[arg(long, default_value_t = 20)]
    hot_messages: usize,
    #[arg(long)]
    skip_accuracy: bool,
    /// The default sender's `mps` in the per-sender accuracy run.
    #[arg(long, default_value_t = 50)]
    sender_a_mps: u32,
    /// The other sender's `mps` in the per-sender accuracy run.
    #[arg(long, default_value_t = 200)]
    sender_b_mps: u32,
    #[arg(long)]
    skip_senders: bool,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    println!(
        "dispatch_bench: {cores} cores; Postgres, Redis, NATS local; platform-sim in this process"
    );
    let mut report = json!({"cores": cores});
    if !args.skip_throughput {
        report["throughput"] = throughput(&args).await;
        if !args.skip_hot_pair {
            let normal = report["throughput"]["msg_per_s"].as_f64().unwrap_or(0.0);
            report["hot_pair"] = hot_pair(&args, normal).await;
        }
    }
    if !args.skip_accuracy {
        report["accuracy"] = accuracy(&args).await;
    }
    if !args.skip_senders {
        report["senders_accuracy"] = senders_accuracy(&args).await;
    }
    let rss = warden_bench::own_peak_rss_mib();
    println!("peak RSS (VmHWM) of this process (dispatcher + platform-sim): {rss:.1} MiB");
    report["peak_rss_mib"] = json!(rss);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
    if std::fs::create_dir_all(&dir).is_ok() {
        let path = dir.join("dispatcher.json");
        if std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).is_ok() {
            println!("written to {}", path.display());
        }
    }
}

async fn throughput(args: &Args) -> serde_json::Value {
    let n = args.messages;
    let h = Harness::new(args.mps).await;
    let t = Instant::now();
    let jobs = h.insert_bulk(n).await;
    let insert_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    h.publish_all(&jobs, 64).await;
    let publish_s = t.elapsed().as_secs_f64();
    println!(
        "throughput: {n} queued messages inserted in {insert_s:.1} s, published in {publish_s:.1} s"
    );
    let mut cfg = h.config();
    cfg.dispatch.concurrency = args.concurrency;
    // The production default: every message takes its recipient's pair slot in Redis.
    cfg.dispatch.pair_interval = Duration::from_secs(6);
    let started = Instant::now();
    let (d, stop) = h.dispatcher(cfg).await;
    let mut at_platform = None;
    let mut last_print = Instant::now();
    let mut progress = Progress::new(started);
    let (recorded, unknown) = loop {
        let accepted = h.sim.state.stats_counts().0 as usize;
        if accepted >= n && at_platform.is_none() {
            at_platform = Some(started.elapsed());
        }
        // The dispatcher's own count (after the row was written): polling the table
        // would cost Postgres more than the dispatcher does.
        let sent = d.stats().sent as usize;
        if sent >= n {
            break (started.elapsed(), 0);
        }
        if let Some(done) = progress.stalled_on_unknown(&h, sent, n).await {
            break done;
        }
        if last_print.elapsed() > Duration::from_secs(5) {
            println!(
                "  ... {sent} sent after {:.1} s",
                started.elapsed().as_secs_f64()
            );
            last_print = Instant::now();
        }
        assert!(
            started.elapsed() < Duration::from_secs(1200),
            "throughput run did not finish"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let at_platform = at_platform.unwrap_or(recorded);
    assert_eq!(
        h.count_where("status = 'sent'").await as usize,
        n - unknown,
        "every row ended `sent` but those of an unknown outcome"
    );
    let (total, duplicates) = h.sim.state.stats_counts();
    let lat = platform_latency();
    let rate = (n - unknown) as f64 / recorded.as_secs_f64();
    let platform_rate = n as f64 / at_platform.as_secs_f64();
    println!(
        "throughput: {n} messages stream -> platform-sim -> `sent` in {:.2} s = {rate:.0} msg/s \
         (platform accepted all after {:.2} s = {platform_rate:.0} msg/s); sim sends {total}, duplicates {duplicates}; \
         unknown outcomes {unknown}; concurrency {}, RATE_LIMIT_MPS {}, pair interval 6 s; platform call mean {:.2} ms",
        recorded.as_secs_f64(),
        at_platform.as_secs_f64(),
        args.concurrency,
        args.mps,
        lat * 1000.0
    );
    stop.send(()).ok();
    d.join().await.unwrap();
    let (raw_secs, raw_rate) = raw_updates(&h, &jobs, args.concurrency).await;
    println!(
        "reference: raw Postgres, {n} single-row UPDATEs of the same message rows, one per transaction, \
         same pool at concurrency {}: {raw_secs:.2} s = {raw_rate:.0} rows/s; dispatcher/raw = {:.2}",
        args.concurrency,
        rate / raw_rate
    );
    h.cleanup().await;
    json!({
        "messages": n, "mps_limit": args.mps, "concurrency": args.concurrency,
        "raw_update_seconds": raw_secs, "raw_update_rows_per_s": raw_rate,
        "ratio_to_raw_update": rate / raw_rate,
        "seconds_to_all_sent": recorded.as_secs_f64(), "msg_per_s": rate,
        "seconds_to_platform": at_platform.as_secs_f64(), "platform_msg_per_s": platform_rate,
        "sim_total_sends": total, "duplicates": duplicates, "unknown_outcomes": unknown,
        "platform_call_mean_ms": lat * 1000.0,
    })
}

/// The throughput run again with one hot pair: `hot_messages` messages to one customer
/// whose every call is answered 131056. The others' rate, as a ratio of `normal`.
async fn hot_pair(args: &Args, normal: f64) -> serde_json::Value {
    let n = args.messages;
    let h = Harness::new(args.mps).await;
    let hot = common::unique_phone();
    h.sim.fault(&hot, 131056, 400, u64::from(u32::MAX));
    let mut hot_jobs = Vec::new();
    for _ in 0..args.hot_messages {
        hot_jobs.push((h.insert_text(&hot).await, hot.clone()));
    }
    let jobs = h.insert_bulk(n).await;
    // The hot pair goes in first, among the others' first messages.
    h.publish_all(&hot_jobs, 8).await;
    h.publish_all(&jobs, 64).await;
    let mut cfg = h.config();
    cfg.dispatch.concurrency = args.concurrency;
    cfg.dispatch.pair_interval = Duration::from_secs(6);
    cfg.dispatch.max_attempts = 1000;
    let started = Instant::now();
    let (d, stop) = h.dispatcher(cfg).await;
    let mut progress = Progress::new(started);
    let (recorded, unknown) = loop {
        // The hot customer's messages never end `sent`: `sent` counts the others.
        let sent = d.stats().sent as usize;
        if sent >= n {
            break (started.elapsed(), 0);
        }
        if let Some(done) = progress.stalled_on_unknown(&h, sent, n).await {
            break done;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1200),
            "hot-pair run did not finish"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let stats = d.stats();
    let rate = (n - unknown) as f64 / recorded.as_secs_f64();
    let ratio = if normal > 0.0 { rate / normal } else { 0.0 };
    let hot_calls = h
        .count_where(&format!("customer_phone = '{hot}' AND retry_count > 0"))
        .await;
    println!(
        "hot pair: {n} messages to other customers -> `sent` in {:.2} s = {rate:.0} msg/s beside one customer \
         answered 131056 ({} messages, {hot_calls} of them backing off; {} retries, {} holds in all; unknown outcomes {unknown}) \
         = {:.1} % of the normal run (goal >= 95 %)",
        recorded.as_secs_f64(),
        args.hot_messages,
        stats.retried,
        stats.held,
        ratio * 100.0
    );
    stop.send(()).ok();
    d.join().await.unwrap();
    h.cleanup().await;
    json!({
        "messages": n, "hot_messages": args.hot_messages,
        "seconds_to_all_sent": recorded.as_secs_f64(), "msg_per_s": rate,
        "normal_msg_per_s": normal, "ratio_to_normal": ratio,
        "retries": stats.retried, "holds": stats.held, "unknown_outcomes": unknown,
    })
}

/// Ends a run whose last messages have unknown outcomes. A platform call cut off by
/// PLATFORM_TIMEOUT (a badly overloaded machine) leaves its row `sending` for its status
/// webhook, and the bench plays none: without this the run would wait for
/// DISPATCH_UNKNOWN_MAX_WAIT (15 min). They are counted and reported, not hidden.
struct Progress {
    started: Instant,
    sent: usize,
    at: Instant,
}

impl Progress {
    fn new(started: Instant) -> Self {
        Self {
            started,
            sent: 0,
            at: started,
        }
    }

    /// `Some((time of the last send, unknown outcomes))` once nothing was sent for 5 s and
    /// the rows of unknown outcome make up the rest.
    async fn stalled_on_unknown(
        &mut self,
        h: &Harness,
        sent: usize,
        n: usize,
    ) -> Option<(Duration, usize)> {
        if sent != self.sent {
            (self.sent, self.at) = (sent, Instant::now());
            return None;
        }
        if self.at.elapsed() < Duration::from_secs(5) {
            return None;
        }
        let unknown = h
            .count_where("status = 'sending' AND unknown_since IS NOT NULL")
            .await as usize;
        (sent + unknown >= n).then(|| (self.at - self.started, unknown))
    }
}

/// One `UPDATE messages ... WHERE id = $1` per row, each its own transaction, through the
/// harness pool: (seconds, rows/s).
async fn raw_updates(h: &Harness, jobs: &[(uuid::Uuid, String)], concurrency: usize) -> (f64, f64) {
    use diesel::sql_types::Uuid as SqlUuid;
    use diesel_async::RunQueryDsl;
    use futures::StreamExt;
    let t = Instant::now();
    let failed = futures::stream::iter(jobs)
        .map(|(id, _)| async move {
            let mut conn = h.deps.pg.get().await.ok()?;
            diesel::sql_query(
                "UPDATE messages SET status = 'delivered', updated_at = now() WHERE id = $1",
            )
            .bind::<SqlUuid, _>(*id)
            .execute(&mut conn)
            .await
            .ok()
        })
        .buffer_unordered(concurrency.max(1))
        .filter(|r| futures::future::ready(r != &Some(1)))
        .count()
        .await;
    assert_eq!(failed, 0, "every raw update touched its row");
    let secs = t.elapsed().as_secs_f64();
    (secs, jobs.len() as f64 / secs)
}

/// Mean platform call latency so far (seconds), from the dispatcher's histogram.
fn platform_latency() -> f64 {
    prometheus::gather()
        .iter()
        .find(|f| f.name() == "warden_platform_request_duration_seconds")
        .and_then(|f| {
            let (sum, count) = f.get_metric().iter().fold((0.0, 0u64), |(s, c), m| {
                let h = m.get_histogram();
                (s + h.get_sample_sum(), c + h.get_sample_count())
            });
            (count > 0).then(|| sum / count as f64)
        })
        .unwrap_or(0.0)
}

async fn accuracy(args: &Args) -> serde_json::Value {
    let mps = args.accuracy_mps;
    let secs = args.accuracy_secs;
    let h = Harness::new(mps).await;
    // Enough for warm-up + window + slack; the rest stays in the stream.
    let n = (u64::from(mps) * (secs + args.warmup_secs + 10)) as usize;
    let jobs = h.insert_bulk(n).await;
    h.publish_all(&jobs, 64).await;
    let drainer = TokenBucket::new(h.deps.redis.clone(), &h.bucket_channel, mps, 1);
    while drainer.try_acquire().await == Take::Granted {}
    let mut cfg = h.config();
    cfg.dispatch.concurrency = args.concurrency;
    cfg.dispatch.pair_interval = Duration::from_secs(6);
    let (d, stop) = h.dispatcher(cfg).await;
    tokio::time::sleep(Duration::from_secs(args.warmup_secs)).await;
    let redis = h.deps.redis.clone().unwrap();
    let used = |s: warden_ratelimit::BucketState| s.tokens_used;
    let (c0, g0, t0) = (
        h.sim.state.stats_counts().0,
        used(
            warden_ratelimit::state(&redis, &h.bucket_channel, mps)
                .await
                .unwrap(),
        ),
        Instant::now(),
    );
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (c1, g1, t1) = (
        h.sim.state.stats_counts().0,
        used(
            warden_ratelimit::state(&redis, &h.bucket_channel, mps)
                .await
                .unwrap(),
        ),
        Instant::now(),
    );
    let window = (t1 - t0).as_secs_f64();
    let sim_rate = (c1 - c0) as f64 / window;
    let grant_rate = (g1 - g0) as f64 / window;
    let err = |r: f64| (r / f64::from(mps) - 1.0) * 100.0;
    println!(
        "accuracy: RATE_LIMIT_MPS {mps} over {window:.1} s (after {} s warm-up): platform received {} = {sim_rate:.2} msg/s \
         ({:+.2} %); bucket granted {} = {grant_rate:.2}/s ({:+.2} %)",
        args.warmup_secs,
        c1 - c0,
        err(sim_rate),
        g1 - g0,
        err(grant_rate)
    );
    stop.send(()).ok();
    d.join().await.unwrap();
    h.cleanup().await;
    json!({
        "mps": mps, "window_s": window, "warmup_s": args.warmup_secs,
        "platform_sends": c1 - c0, "platform_msg_per_s": sim_rate, "platform_error_pct": err(sim_rate),
        "bucket_grants": g1 - g0, "grant_per_s": grant_rate, "grant_error_pct": err(grant_rate),
    })
}

/// Two numbers at once, each paced by its own bucket at its own `mps`: what platform-sim
/// received on each number over the window.
async fn senders_accuracy(args: &Args) -> serde_json::Value {
    let secs = args.accuracy_secs;
    let [mut a, _, mut b] = TestSender::three();
    a.mps = Some(args.sender_a_mps);
    b.mps = Some(args.sender_b_mps);
    let senders = [a, b];
    let h = Harness::with_senders(args.accuracy_mps, &senders).await;
    // Enough of each for warm-up + window + slack; the rest stays in the stream.
    let backlog = |mps: u32| (u64::from(mps) * (secs + args.warmup_secs + 10)) as usize;
    let mut queues = Vec::new();
    for s in &senders {
        let keys = h.keys_of(s.id);
        queues.push(h.insert_bulk_as(backlog(s.mps.unwrap()), Some(&keys)).await);
    }
    // Interleaved in proportion to the rates, as traffic of both would arrive: the stream
    // is one queue for every number.
    let jobs = interleave(&queues);
    h.publish_all(&jobs, 64).await;
    let redis = h.deps.redis.clone().unwrap();
    let key_of = |s: &TestSender| {
        let key = h.keys_of(s.id).sender;
        (!warden_settings::is_stored_default(&key)).then_some(key)
    };
    let default = TokenBucket::new(Some(redis.clone()), &h.bucket_channel, 1, 1);
    for s in &senders {
        let drainer = default.sibling(key_of(s).as_deref(), s.mps.unwrap());
        while drainer.try_acquire().await == Take::Granted {}
    }
    let mut cfg = h.config();
    cfg.dispatch.concurrency = args.concurrency;
    cfg.dispatch.pair_interval = Duration::from_secs(6);
    let (d, stop) = h.dispatcher(cfg).await;
    tokio::time::sleep(Duration::from_secs(args.warmup_secs)).await;
    // What the sim received on each number, and when: the middle of the read (it copies
    // every message's record, which takes a moment with thousands of them).
    let by_number = || {
        let before = Instant::now();
        let stats = h.sim.stats();
        let at = before + before.elapsed() / 2;
        let counts = senders
            .iter()
            .map(|s| {
                stats
                    .by_message
                    .values()
                    .filter(|m| m.phone_number_id == s.phone_number_id)
                    .map(|m| m.count)
                    .sum::<u64>()
            })
            .collect::<Vec<u64>>();
        (counts, at)
    };
    let (c0, t0) = by_number();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (c1, t1) = by_number();
    let window = (t1 - t0).as_secs_f64();
    let mut out = Vec::new();
    for (i, s) in senders.iter().enumerate() {
        let mps = s.mps.unwrap();
        let sent = c1[i] - c0[i];
        let rate = sent as f64 / window;
        let err = (rate / f64::from(mps) - 1.0) * 100.0;
        println!(
            "accuracy per sender: {} (mps {mps}) over {window:.1} s beside the other (after {} s warm-up): \
             platform received {sent} on its number = {rate:.2} msg/s ({err:+.2} %)",
            s.id, args.warmup_secs
        );
        out.push(json!({
            "sender": s.id, "mps": mps, "platform_sends": sent,
            "platform_msg_per_s": rate, "platform_error_pct": err,
        }));
    }
    let held = d.stats().held;
    println!("accuracy per sender: {held} stream messages put back while waiting their turn");
    stop.send(()).ok();
    d.join().await.unwrap();
    h.cleanup().await;
    json!({
        "window_s": window, "warmup_s": args.warmup_secs, "concurrency": args.concurrency,
        "held": held, "senders": out,
    })
}

/// The jobs of every queue, each spread evenly over the whole sequence (by its length).
fn interleave(queues: &[Vec<(uuid::Uuid, String)>]) -> Vec<(uuid::Uuid, String)> {
    let mut all: Vec<(f64, &(uuid::Uuid, String))> = queues
        .iter()
        .flat_map(|q| {
            let n = q.len() as f64;
            q.iter()
                .enumerate()
                .map(move |(i, job)| ((i as f64 + 0.5) / n, job))
        })
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    all.into_iter().map(|(_, job)| job.clone()).collect()
}
