//! campaign-bench: a 100,000-recipient campaign checked and enqueued by the scheduler,
//! in process, against real Postgres, Redis and NATS.
//!
//! Prepares a fresh database (`t_<uuid>`, dropped at the end) with N customers (5 %
//! opted out of marketing, 2 % tagged vip), an approved marketing template and a campaign
//! due now; runs the scheduler until the audience is done; prints the time to check and
//! enqueue every recipient, recipients/s and peak RSS, and — as the reference — the raw
//! Postgres insert rate for N message-like rows measured in the same run.
//!
//! ```text
//! cargo run --release -p warden-bench --bin campaign-bench -- [--recipients 100000]
//!     [--concurrency 32] [--page-size 1000] [--json target/bench/campaign.json]
//! ```
//! Connection settings come from the usual environment (DB_*, REDIS_ADDR, NATS_URL).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{TimeDelta, Utc};
use diesel::sql_types::{BigInt, Jsonb, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::StreamExt;
use uuid::Uuid;
use warden_core::Core;
use warden_scheduler::{Config, Scheduler};
use warden_service::Dependencies;
use warden_store::testing::TestDatabase;

const POLICIES: &str = r#"
version: 1
policies:
  - id: marketing_cap
    type: frequency_limit
    message_types: [marketing]
    max: 2
    window: 24h
  - id: skip_vip
    type: tag_exclusion
    message_types: [marketing]
    tags: [vip]
  - id: no_marketing_to_nanp
    type: country_block
    message_types: [marketing]
    prefixes: ["1"]
"#;

struct Args {
    recipients: i64,
    concurrency: usize,
    page_size: i64,
    json: Option<String>,
    batch_publish: bool,
}

/// How often the campaign's progress is printed.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Print the campaign's progress every [`PROGRESS_EVERY`] on stderr (stdout is the
/// report): on a loaded machine the fan-out can take minutes.
async fn progress(pg: warden_store::PgPool, campaign: Uuid, n: i64) {
    #[derive(diesel::QueryableByName)]
    struct Checked {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        checked: i32,
    }
    let started = Instant::now();
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let Ok(mut conn) = pg.get().await else {
            continue;
        };
        let checked: Result<Checked, _> = diesel::sql_query(
            "SELECT enqueued_count + failed_count AS checked FROM campaigns WHERE id = $1",
        )
        .bind::<SqlUuid, _>(campaign)
        .get_result(&mut conn)
        .await;
        if let Ok(c) = checked {
            eprintln!(
                "campaign-bench: {} of {n} recipients checked in {:.0} s",
                c.checked,
                started.elapsed().as_secs_f64()
            );
        }
    }
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        recipients: 100_000,
        concurrency: 32,
        page_size: 1000,
        json: Some("target/bench/campaign.json".into()),
        batch_publish: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--recipients" => a.recipients = value()?.parse()?,
            "--concurrency" => a.concurrency = value()?.parse()?,
            "--page-size" => a.page_size = value()?.parse()?,
            "--json" => a.json = Some(value()?),
            "--no-json" => a.json = None,
            "--publish-each" => a.batch_publish = false,
            "-h" | "--help" => {
                println!(
                    "campaign-bench [--recipients N] [--concurrency N] [--page-size N] [--json PATH | --no-json]"
                );
                std::process::exit(0);
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    Ok(a)
}

fn vm_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

/// CPU seconds (user + system) used so far by process `pid` (`self` for this one).
fn cpu_secs(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start at ")".
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// CPU seconds used by the Postgres backends serving this database.
async fn backend_cpu(pg: &warden_store::PgPool) -> f64 {
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    let Ok(mut conn) = pg.get().await else {
        return 0.0;
    };
    let pids: Vec<Pid> =
        diesel::sql_query("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            .load(&mut conn)
            .await
            .unwrap_or_default();
    pids.iter()
        .filter_map(|p| cpu_secs(&p.pid.to_string()))
        .sum()
}

fn main() -> anyhow::Result<()> {
    let args = args()?;
    tracing_subscriber_init();
    // The database guard drops (and removes the database) outside the runtime.
    let db = TestDatabase::create();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(bench(&args, &db));
    drop(rt);
    drop(db);
    result
}

fn tracing_subscriber_init() {
    // Quiet by default: warnings only (RUST_LOG overrides).
    let _ = warden_telemetry::init_with_default_filter("campaign-bench", None, "warn");
}

async fn bench(args: &Args, db: &TestDatabase) -> anyhow::Result<()> {
    warden_service::install_crypto_provider();
    let n = args.recipients;
    let mut settings = db.settings.clone();
    let stream_name = format!("BENCH_{}", Uuid::new_v4().simple()).to_uppercase();
    settings.delivery_stream = stream_name.clone();
    let policies = warden_rules::policy::PolicySet::from_yaml(POLICIES)?;
    warden_store::prepare(&settings.database, vec![]).await?;
    let pool_size = (args.concurrency as u32 + 8).min(90);
    let pg = warden_store::connect(&settings.database, pool_size, Duration::from_secs(5)).await?;
    let redis = warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(2))
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let stream = warden_stream::DeliveryStream::connect(&settings).await?;
    let deps = Dependencies {
        settings: Arc::new(settings),
        pg: pg.clone(),
        redis: Some(redis),
        stream: Some(stream.clone()),
        policies: Arc::new(policies),
    };
    let core = Core::new(deps, warden_scheduler::ACTOR);
    let outcome = run(args, n, &core, &pg).await;
    let _ = tokio::time::timeout(
        Duration::from_secs(15),
        stream.jetstream.delete_stream(&stream_name),
    )
    .await;
    outcome
}

async fn run(args: &Args, n: i64, core: &Core, pg: &warden_store::PgPool) -> anyhow::Result<()> {
    let mut conn = pg.get().await?;
    // --- data set
    eprintln!("campaign-bench: inserting {n} customers");
    let t = Instant::now();
    diesel::sql_query(
        "INSERT INTO customers (phone, country, opt_in_marketing, tags, last_interaction_at)
         SELECT '6281' || lpad(i::text, 9, '0'), 'ID', i % 20 <> 0,
                CASE WHEN i % 50 = 0 THEN ARRAY['vip'] ELSE ARRAY[]::text[] END,
                now() - (i % 60) * interval '1 day'
         FROM generate_series(1, $1) AS i",
    )
    .bind::<BigInt, _>(n)
    .execute(&mut conn)
    .await?;
    diesel::sql_query("ANALYZE customers")
        .execute(&mut conn)
        .await?;
    let customers_secs = t.elapsed().as_secs_f64();
    diesel::sql_query(
        "INSERT INTO templates (name, locale, category, status, body_text)
         VALUES ('bench_promo', 'en', 'marketing', 'APPROVED', 'Hi! {{1}} off this week only')",
    )
    .execute(&mut conn)
    .await?;
    let expected_refused: i64 = {
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let r: N = diesel::sql_query(
            "SELECT count(*) AS n FROM customers WHERE NOT opt_in_marketing OR 'vip' = ANY(tags)",
        )
        .get_result(&mut conn)
        .await?;
        r.n
    };

    // --- reference: raw inserts of message-like rows
    eprintln!("campaign-bench: raw reference, {n} rows 1,000 per INSERT");
    diesel::sql_query("CREATE TABLE bench_raw (LIKE messages INCLUDING ALL)")
        .execute(&mut conn)
        .await?;
    let t = Instant::now();
    let batch = 1000;
    let mut done = 0;
    while done < n {
        let k = batch.min(n - done);
        diesel::sql_query(
            "INSERT INTO bench_raw (id, customer_phone, channel, direction, message_type, category, status, content, template_name, template_locale)
             SELECT gen_random_uuid(), '6281' || lpad(i::text, 9, '0'), 'whatsapp', 'outbound', 'template', 'marketing', 'queued',
                    '{\"type\":\"template\",\"template\":{\"name\":\"bench_promo\",\"locale\":\"en\",\"variables\":[\"20%\"]}}'::jsonb,
                    'bench_promo', 'en'
             FROM generate_series($1, $2) AS i",
        )
        .bind::<BigInt, _>(done + 1)
        .bind::<BigInt, _>(done + k)
        .execute(&mut conn)
        .await?;
        done += k;
    }
    let raw_batched_secs = t.elapsed().as_secs_f64();
    diesel::sql_query("TRUNCATE bench_raw")
        .execute(&mut conn)
        .await?;
    drop(conn);
    // One INSERT per row, each its own transaction, `concurrency` connections: the commit
    // pattern of a per-recipient send.
    eprintln!(
        "campaign-bench: raw reference, {n} rows one per transaction ({} connections)",
        args.concurrency
    );
    let t = Instant::now();
    let content = serde_json::json!({"type":"template","template":{"name":"bench_promo","locale":"en","variables":["20%"]}});
    let errors = futures::stream::iter(1..=n)
        .map(|i| {
            let content = content.clone();
            async move {
                let mut conn = pg.get().await.ok()?;
                diesel::sql_query(
                    "INSERT INTO bench_raw (id, customer_phone, channel, direction, message_type, category, status, content)
                     VALUES ($1, $2, 'whatsapp', 'outbound', 'template', 'marketing', 'queued', $3)",
                )
                .bind::<SqlUuid, _>(Uuid::now_v7())
                .bind::<Text, _>(format!("6281{i:09}"))
                .bind::<Jsonb, _>(content)
                .execute(&mut conn)
                .await
                .ok()
            }
        })
        .buffer_unordered(args.concurrency)
        .filter(|r| futures::future::ready(r.is_none()))
        .count()
        .await;
    anyhow::ensure!(errors == 0, "{errors} raw inserts failed");
    let raw_rows_secs = t.elapsed().as_secs_f64();
    let mut conn = pg.get().await?;
    diesel::sql_query("DROP TABLE bench_raw")
        .execute(&mut conn)
        .await?;
    diesel::sql_query("CHECKPOINT")
        .execute(&mut conn)
        .await
        .ok();

    // --- the campaign
    let campaign = Uuid::new_v4();
    diesel::sql_query(
        "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name, locale, variables, audience_filter)
         VALUES ($1, 'bench', 'marketing', 'scheduled', $2, 'bench_promo', 'en', '{\"1\": \"20%\"}', '{}')",
    )
    .bind::<SqlUuid, _>(campaign)
    .bind::<Timestamptz, _>(Utc::now() - TimeDelta::seconds(1))
    .execute(&mut conn)
    .await?;
    drop(conn);

    // --- preview_campaign's judgement of the same audience, nothing written
    eprintln!("campaign-bench: preview of {n} recipients");
    let plan = warden_core::campaigns::fanout::RecipientPlan {
        campaign_id: campaign,
        template_name: "bench_promo".into(),
        locale: "en".into(),
        variables: vec!["20%".into()],
        components: Vec::new(),
        senders: Vec::new(),
    };
    let t = Instant::now();
    let preview = warden_core::campaigns::preview::preview(
        core,
        &plan,
        &warden_rules::audience::AudienceFilter::default(),
    )
    .await?;
    let preview_secs = t.elapsed().as_secs_f64();
    let preview_refused: u64 = preview.refused_by.values().sum();
    let preview_ok = preview.audience as i64 == n
        && preview.would_send as i64 == n - expected_refused
        && preview_refused as i64 == expected_refused;

    let config = Config {
        page_size: args.page_size,
        concurrency: args.concurrency,
        campaign_budget: Duration::from_secs(3600),
        batch_publish: args.batch_publish,
        ..Config::default()
    };
    let scheduler = Scheduler::new(core.clone(), config);
    let rss_before = vm_kib("VmRSS:").unwrap_or(0);
    // Fill the pool first so every backend that serves the campaign is counted.
    {
        let conns = futures::future::join_all((0..args.concurrency + 4).map(|_| pg.get())).await;
        drop(conns);
    }
    let cpu_self_before = cpu_secs("self").unwrap_or(0.0);
    let cpu_pg_before = backend_cpu(pg).await;
    eprintln!("campaign-bench: campaign to {n} recipients");
    let t = Instant::now();
    let progress = tokio::spawn(progress(pg.clone(), campaign, n));
    let mut ticks = 0;
    loop {
        ticks += 1;
        scheduler.tick().await?;
        let mut conn = pg.get().await?;
        #[derive(diesel::QueryableByName)]
        struct Done {
            #[diesel(sql_type = diesel::sql_types::Bool)]
            audience_done: bool,
        }
        let d: Done = diesel::sql_query("SELECT audience_done FROM campaigns WHERE id = $1")
            .bind::<SqlUuid, _>(campaign)
            .get_result(&mut conn)
            .await?;
        if d.audience_done {
            break;
        }
        anyhow::ensure!(ticks < 1000, "audience not done after {ticks} polls");
    }
    let campaign_secs = t.elapsed().as_secs_f64();
    // Enqueued = committed `queued` and handed to NATS; the stream's acks and the published
    // marks follow the chunks, timed here apart.
    core.flush_publishes().await;
    let marked_secs = t.elapsed().as_secs_f64();
    progress.abort();
    let hwm = vm_kib("VmHWM:").unwrap_or(0);
    let cpu_self = cpu_secs("self").unwrap_or(0.0) - cpu_self_before;
    let cpu_pg = backend_cpu(pg).await - cpu_pg_before;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();

    // --- check the result
    let mut conn = pg.get().await?;
    let c: warden_store::models::Campaign = {
        use diesel::{QueryDsl, SelectableHelper};
        use warden_store::schema::campaigns;
        campaigns::table
            .find(campaign)
            .select(warden_store::models::Campaign::as_select())
            .first(&mut conn)
            .await?
    };
    let in_stream = {
        let mut st = core
            .stream()
            .expect("stream")
            .jetstream
            .get_stream(&core.stream().expect("stream").stream_name)
            .await?;
        st.info().await?.state.messages
    };
    let rate = n as f64 / campaign_secs;
    let raw_rows_rate = n as f64 / raw_rows_secs;
    let raw_batched_rate = n as f64 / raw_batched_secs;
    let ok = c.total_recipients as i64 == n
        && c.failed_count as i64 == expected_refused
        && c.enqueued_count as i64 == n - expected_refused
        && in_stream as i64 == n - expected_refused;
    println!(
        "campaign-bench ({} CPUs, shared machine; release build)",
        std::thread::available_parallelism()
            .map(|p| p.get())
            .unwrap_or(0)
    );
    println!(
        "  mode: {}",
        if args.batch_publish {
            "batched send path (Core::send_batch, one transaction per chunk) + page publish"
        } else {
            "batched send path (Core::send_batch), each chunk publishing its own"
        }
    );
    println!("  customers inserted           {n} in {customers_secs:.2} s");
    println!(
        "  recipients checked+enqueued  {} in {campaign_secs:.2} s  ({rate:.0} recipients/s, {ticks} polls)",
        c.total_recipients
    );
    println!("    every ack read and published mark written {marked_secs:.2} s after the start");
    println!(
        "    enqueued (queued+published) {}   refused (failed_count) {}   expected refused {expected_refused}   in stream {in_stream}",
        c.enqueued_count, c.failed_count
    );
    println!(
        "  CPU during the campaign: this process {cpu_self:.1} s, its Postgres backends {cpu_pg:.1} s (wall {campaign_secs:.1} s); load average {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "  peak RSS (VmHWM)             {:.1} MiB   (RSS before the campaign {:.1} MiB)",
        hwm as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    println!("  reference: raw inserts of {n} message-like rows (same table shape and indexes)");
    println!(
        "    one row per transaction, {} connections  {raw_rows_secs:.2} s  ({raw_rows_rate:.0} rows/s)   campaign/raw = {:.2}",
        args.concurrency,
        rate / raw_rows_rate
    );
    println!(
        "    1,000-row INSERT..SELECT batches          {raw_batched_secs:.2} s  ({raw_batched_rate:.0} rows/s)   campaign/raw = {:.3}",
        rate / raw_batched_rate
    );
    println!(
        "  goal: <= 20 s and <= 150 MiB  ->  {}",
        if campaign_secs <= 20.0 && hwm <= 150 * 1024 {
            "met"
        } else {
            "NOT met"
        }
    );
    println!("  counters exact: {}", if ok { "yes" } else { "NO" });
    println!(
        "  preview of the same audience   {preview_secs:.2} s  (would send {}, refused {preview_refused}; {})  goal <= 5 s -> {}",
        preview.would_send,
        if preview_ok {
            "as the run did"
        } else {
            "NOT as the run did"
        },
        if preview_secs <= 5.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "bench": "campaign_fanout",
            "recipients": n,
            "concurrency": args.concurrency,
            "page_size": args.page_size,
            "batch_publish": args.batch_publish,
            "seconds": campaign_secs,
            "marked_seconds": marked_secs,
            "recipients_per_second": rate,
            "peak_rss_mib": hwm as f64 / 1024.0,
            "enqueued": c.enqueued_count,
            "refused": c.failed_count,
            "in_stream": in_stream,
            "counters_exact": ok,
            "preview_seconds": preview_secs,
            "preview_would_send": preview.would_send,
            "preview_refused": preview_refused,
            "preview_matches_run": preview_ok,
            "raw_insert_rows_per_second_per_row_tx": raw_rows_rate,
            "raw_insert_rows_per_second_batched": raw_batched_rate,
            "ratio_to_raw_per_row_tx": rate / raw_rows_rate,
            "ratio_to_raw_batched": rate / raw_batched_rate,
            "cpu_seconds_process": cpu_self,
            "cpu_seconds_postgres": cpu_pg,
            "load_average": load.trim(),
            "cpus": std::thread::available_parallelism().map(|p| p.get()).unwrap_or(0),
        });
        if let Some(dir) = std::path::Path::new(path).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, serde_json::to_string_pretty(&json)?)?;
        println!("  written to {path}");
    }
    anyhow::ensure!(ok, "counters are not exact");
    anyhow::ensure!(preview_ok, "the preview did not count what the run did");
    Ok(())
}
