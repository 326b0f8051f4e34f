//! `make faults`: scripted drills against the running stack (platform-sim, webhook, two
//! dispatchers, scheduler) on private Postgres, Redis and NATS instances, with
//! platform-sim counting every send. Each drill sends template messages through the one
//! send path while one thing breaks, waits for recovery, and prints accepted / sent /
//! sent twice / lost / stuck. Then 50 campaign control calls during a 10,000-recipient
//! campaign, 1,000 forged webhook POSTs and 10,000 fuzzed tool calls (the
//! `campaign-control`, `forged-webhooks` and `fuzz-tools` executables beside this one).
//!
//! `fault-drills [--bins DIR] [--scale F] [--only name,name] [--out DIR]`; exit 1 when any
//! drill fails. `--scale 0.25` is the shortened run CI uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use warden_core::Core;
use warden_faults::load::{self, Load, TEMPLATE, Tally};
use warden_faults::stack::{Proc, Services, free_port, wait_http};

const SECRET: &str = "faults-app-secret";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    KillDispatcher,
    RestartNats,
    StopRedis,
    RestartPostgres,
    RestartWebhook,
}

impl Fault {
    const ALL: [Fault; 5] = [
        Fault::KillDispatcher,
        Fault::RestartNats,
        Fault::StopRedis,
        Fault::RestartPostgres,
        Fault::RestartWebhook,
    ];
    fn name(self) -> &'static str {
        match self {
            Fault::KillDispatcher => "kill-dispatcher",
            Fault::RestartNats => "restart-nats",
            Fault::StopRedis => "stop-redis",
            Fault::RestartPostgres => "restart-postgres",
            Fault::RestartWebhook => "restart-webhook",
        }
    }
    fn title(self) -> &'static str {
        match self {
            Fault::KillDispatcher => "kill -9 a dispatcher 5x",
            Fault::RestartNats => "restart NATS mid-run",
            Fault::StopRedis => "stop Redis for 30 s",
            Fault::RestartPostgres => "restart Postgres mid-run",
            Fault::RestartWebhook => "restart webhook, sim retrying",
        }
    }
    /// (sends, sends per second) at scale 1.
    fn load(self) -> (usize, f64) {
        match self {
            Fault::KillDispatcher => (20_000, 500.0),
            // Long enough to span the 30 s outage with sends before and after it.
            Fault::StopRedis => (10_000, 200.0),
            _ => (10_000, 400.0),
        }
    }
}

struct Args {
    bins: PathBuf,
    scale: f64,
    only: Option<Vec<String>>,
    out: PathBuf,
}

fn args() -> anyhow::Result<Args> {
    let exe_dir = std::env::current_exe()?
        .parent()
        .context("executable directory")?
        .to_path_buf();
    let mut a = Args {
        bins: exe_dir,
        scale: 1.0,
        only: None,
        out: PathBuf::from("target/faults"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bins" => a.bins = PathBuf::from(value()?),
            "--scale" => {
                a.scale = value()?.parse().context("--scale: a number such as 0.25")?;
                if !(a.scale > 0.0 && a.scale <= 10.0) {
                    bail!("--scale: between 0 and 10");
                }
            }
            "--only" => a.only = Some(value()?.split(',').map(str::to_string).collect()),
            "--out" => a.out = PathBuf::from(value()?),
            "-h" | "--help" => {
                eprintln!(
                    "fault-drills [--bins DIR] [--scale F] [--only {}] [--out DIR]",
                    Fault::ALL.map(Fault::name).join(",")
                        + ",campaign-control,forged-webhooks,fuzz-tools"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (see --help)"),
        }
    }
    Ok(a)
}

/// One drill's Warden processes on a fresh database and stream.
struct Stack {
    db: String,
    pg_url: String,
    env: BTreeMap<String, String>,
    sim: Proc,
    sim_url: String,
    webhook: Proc,
    webhook_port: u16,
    dispatchers: Vec<(Proc, u16)>,
    scheduler: Proc,
}

impl Stack {
    async fn up(
        services: &Services,
        bins: &Path,
        logs: &Path,
        name: &str,
        redis_db: u8,
    ) -> anyhow::Result<Stack> {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
        let db = format!("faults_{}_{suffix}", name.replace('-', "_"));
        services.create_database(&db).await?;
        let root = std::env::current_dir()?;
        let (sim_port, webhook_port) = (free_port(), free_port());
        let sim_url = format!("http://127.0.0.1:{sim_port}");
        let mut env = services.env(&db, redis_db);
        for (k, v) in [
            (
                "DELIVERY_STREAM",
                format!("FAULTS_{}", suffix.to_uppercase()),
            ),
            ("PLATFORM_API_URL", sim_url.clone()),
            ("PLATFORM_APP_SECRET", SECRET.into()),
            (
                "POLICIES_PATH",
                root.join("policies/default.yaml").to_string_lossy().into(),
            ),
            ("TIER", "pro".into()),
            ("RUST_LOG", "warn".into()),
            // The drills measure recovery, not the platform's pace.
            ("RATE_LIMIT_MPS", "5000".into()),
            ("DISPATCHER_REPLICAS", "2".into()),
            // Short timers so a drill recovers in seconds (defaults: 60s, 30s, 30s).
            ("DISPATCH_LEASE", "5s".into()),
            ("DISPATCH_UNKNOWN_SETTLE", "5s".into()),
            ("DISPATCH_ACK_WAIT", "5s".into()),
            ("SCHEDULER_POLL_INTERVAL", "1s".into()),
        ] {
            env.insert(k.to_string(), v);
        }
        let mut sim = Proc::new(
            &format!("{name}-platform-sim"),
            bins.join("platform-sim"),
            &[],
            logs,
        )
        .envs(&env)
        .env("SIM_HTTP_PORT", sim_port)
        .env("SIM_HTTP_HOST", "127.0.0.1")
        .env(
            "SIM_WEBHOOK_URL",
            format!("http://127.0.0.1:{webhook_port}/webhook"),
        )
        .env(
            "SIM_TEMPLATES",
            root.join("templates/sim-templates.json").display(),
        );
        let mut webhook = Proc::new(&format!("{name}-webhook"), bins.join("webhook"), &[], logs)
            .envs(&env)
            .env("SERVER_HTTP_PORT", webhook_port);
        let mut dispatchers = Vec::new();
        for i in 1..=2 {
            let port = free_port();
            let p = Proc::new(
                &format!("{name}-dispatcher-{i}"),
                bins.join("dispatcher"),
                &[],
                logs,
            )
            .envs(&env)
            .env("ADMIN_HTTP_PORT", port);
            dispatchers.push((p, port));
        }
        let scheduler_port = free_port();
        let mut scheduler = Proc::new(
            &format!("{name}-scheduler"),
            bins.join("scheduler"),
            &[],
            logs,
        )
        .envs(&env)
        .env("ADMIN_HTTP_PORT", scheduler_port);
        let http = reqwest::Client::new();
        sim.start()?;
        wait_http(&http, &format!("{sim_url}/health"), Duration::from_secs(30)).await?;
        // The webhook first: it migrates the new database, the others then find it ready.
        webhook.start()?;
        wait_http(
            &http,
            &format!("http://127.0.0.1:{webhook_port}/health"),
            Duration::from_secs(60),
        )
        .await
        .with_context(|| webhook.log_tail(20))?;
        for (p, _) in &mut dispatchers {
            p.start()?;
        }
        scheduler.start()?;
        for (p, port) in &dispatchers {
            wait_http(
                &http,
                &format!("http://127.0.0.1:{port}/health"),
                Duration::from_secs(60),
            )
            .await
            .with_context(|| p.log_tail(20))?;
        }
        wait_http(
            &http,
            &format!("http://127.0.0.1:{scheduler_port}/health"),
            Duration::from_secs(60),
        )
        .await
        .with_context(|| scheduler.log_tail(20))?;
        let pg_url = services.pg_url(&db);
        let mut c = AsyncPgConnection::establish(&pg_url).await?;
        diesel::sql_query(format!(
            "INSERT INTO templates (name, locale, category, status, body_text)
             VALUES ('{}', '{}', 'utility', 'APPROVED', '{}')",
            TEMPLATE.0, TEMPLATE.1, TEMPLATE.2
        ))
        .execute(&mut c)
        .await?;
        Ok(Stack {
            db,
            pg_url,
            env,
            sim,
            sim_url,
            webhook,
            webhook_port,
            dispatchers,
            scheduler,
        })
    }

    /// The load process's own Core (as mcp-gateway builds it).
    async fn core(&self) -> anyhow::Result<Core> {
        let settings =
            warden_settings::Settings::from_sources(None, &self.env.clone().into_iter().collect())?;
        let needs = warden_service::Needs {
            redis: true,
            nats: true,
            pool_size: 16,
        };
        let deps = warden_service::start("fault-drills", Arc::new(settings), needs).await;
        Ok(Core::new(deps, "fault-drill"))
    }

    /// SIGTERM everything; a process that does not exit 0 is reported.
    fn down(mut self) -> Vec<String> {
        let mut bad = Vec::new();
        let mut stop = |p: &mut Proc| {
            if !p.is_running() {
                bad.push(format!("{} was not running at the end", p.name));
                return;
            }
            match p.stop() {
                Some(s) if s.success() => {}
                other => bad.push(format!("{} stopped with {other:?}", p.name)),
            }
        };
        stop(&mut self.scheduler);
        for (p, _) in &mut self.dispatchers {
            stop(p);
        }
        stop(&mut self.webhook);
        stop(&mut self.sim);
        bad
    }
}

async fn sim_sends(http: &reqwest::Client, sim: &str) -> u64 {
    let stats: Option<serde_json::Value> = async {
        http.get(format!("{sim}/sim/stats"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()
    }
    .await;
    stats.and_then(|s| s["total_sends"].as_u64()).unwrap_or(0)
}

/// Audit rows the dispatcher writes when it resends a dead claim.
async fn resent_dead_claims(pg_url: &str) -> anyhow::Result<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut c = AsyncPgConnection::establish(pg_url).await?;
    let row: N = diesel::sql_query(
        "SELECT count(*) AS n FROM audit_logs WHERE action = 'resend_after_unknown_outcome'",
    )
    .get_result(&mut c)
    .await?;
    Ok(row.n)
}

async fn sleep_until(t0: Instant, at: Duration) {
    tokio::time::sleep_until((t0 + at).into()).await;
}

#[derive(serde::Serialize)]
struct DrillResult {
    drill: &'static str,
    title: &'static str,
    tally: Tally,
    not_accepted: u64,
    accepted_unpublished: u64,
    first_error: Option<String>,
    load_seconds: f64,
    recovery_seconds: f64,
    notes: Vec<String>,
    problems: Vec<String>,
}

impl DrillResult {
    fn ok(&self) -> bool {
        self.tally.ok() && self.problems.is_empty()
    }
}

async fn run_drill(
    services: &mut Services,
    bins: &Path,
    logs: &Path,
    fault: Fault,
    index: u8,
    scale: f64,
) -> anyhow::Result<DrillResult> {
    let http = reqwest::Client::new();
    let mut stack = Stack::up(services, bins, logs, fault.name(), index).await?;
    let core = stack.core().await?;
    let (base_sends, mut rate) = fault.load();
    let sends = ((base_sends as f64) * scale).round().max(100.0) as usize;
    if fault == Fault::StopRedis {
        // Whatever the scale, sends go on before, during and after the 30 s outage.
        rate = sends as f64 / 45.0;
    }
    let duration = Duration::from_secs_f64(sends as f64 / rate);
    let loaded = Arc::new(Load::default());
    eprintln!(
        "[faults] {}: {sends} sends at {rate:.0}/s (~{:.0} s), database {}",
        fault.title(),
        duration.as_secs_f64(),
        stack.db
    );
    let t0 = Instant::now();
    let prefix = format!("62819{index}");
    let load_task = {
        let (core, loaded) = (core.clone(), loaded.clone());
        tokio::spawn(async move {
            load::drive(core, loaded, sends, rate, prefix).await;
            t0.elapsed()
        })
    };
    let progress = {
        let (loaded, http, sim) = (loaded.clone(), http.clone(), stack.sim_url.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                eprintln!(
                    "    {:>5.1} s: {} sends tried, {} accepted, {} refused; platform-sim has {} sends",
                    t0.elapsed().as_secs_f64(),
                    AtomicU64::load(&loaded.attempted, Relaxed),
                    loaded.accepted_count(),
                    AtomicU64::load(&loaded.errors, Relaxed),
                    sim_sends(&http, &sim).await
                );
            }
        })
    };
    let mut notes = Vec::new();
    let mut problems = Vec::new();
    match fault {
        Fault::KillDispatcher => {
            for k in 1..=5u32 {
                sleep_until(t0, duration.mul_f64(0.12 * k as f64)).await;
                let (p, _) = &mut stack.dispatchers[1];
                p.kill9();
                let at = sim_sends(&http, &stack.sim_url).await;
                eprintln!(
                    "    kill -9 #{k} at {:.1} s ({at} sends so far)",
                    t0.elapsed().as_secs_f64()
                );
                tokio::time::sleep(Duration::from_millis(1500)).await;
                p.start()?;
            }
            notes.push("dispatcher-2 killed 5 times, restarted 1.5 s later each time".into());
        }
        Fault::RestartNats => {
            sleep_until(t0, duration / 3).await;
            services.nats.stop();
            eprintln!("    NATS stopped at {:.1} s", t0.elapsed().as_secs_f64());
            tokio::time::sleep(Duration::from_secs(3)).await;
            services.start_nats().await?;
            eprintln!("    NATS back at {:.1} s", t0.elapsed().as_secs_f64());
            notes.push("NATS down 3 s (SIGTERM, same JetStream store)".into());
        }
        Fault::StopRedis => {
            sleep_until(t0, Duration::from_secs(5)).await;
            services.redis.stop();
            let before = loaded.accepted_count();
            eprintln!("    Redis stopped at {:.1} s", t0.elapsed().as_secs_f64());
            tokio::time::sleep(Duration::from_secs(30)).await;
            let during = loaded.accepted_count() - before;
            services.start_redis().await?;
            eprintln!("    Redis back at {:.1} s", t0.elapsed().as_secs_f64());
            notes.push(format!(
                "Redis down 30 s (no persistence: it comes back empty); {during} sends accepted while it was down"
            ));
            if during == 0 {
                problems.push("no send was accepted while Redis was down".into());
            }
        }
        Fault::RestartPostgres => {
            sleep_until(t0, duration / 3).await;
            services.stop_postgres();
            eprintln!(
                "    Postgres stopped (fast) at {:.1} s",
                t0.elapsed().as_secs_f64()
            );
            tokio::time::sleep(Duration::from_secs(2)).await;
            services.start_postgres().await?;
            eprintln!("    Postgres back at {:.1} s", t0.elapsed().as_secs_f64());
            notes.push("Postgres down about 2 s (fast shutdown, every session cut)".into());
        }
        Fault::RestartWebhook => {
            sleep_until(t0, duration / 3).await;
            stack.webhook.stop();
            eprintln!("    webhook stopped at {:.1} s", t0.elapsed().as_secs_f64());
            tokio::time::sleep(Duration::from_secs(8)).await;
            stack.webhook.start()?;
            wait_http(
                &http,
                &format!("http://127.0.0.1:{}/health", stack.webhook_port),
                Duration::from_secs(60),
            )
            .await?;
            eprintln!("    webhook back at {:.1} s", t0.elapsed().as_secs_f64());
            let hooks: serde_json::Value = http
                .get(format!("{}/sim/webhooks", stack.sim_url))
                .send()
                .await?
                .json()
                .await?;
            let failed = hooks["failed_posts"].as_u64().unwrap_or(0);
            notes.push(format!(
                "webhook down 8 s; the sim's webhook POSTs that failed and were retried: {failed}"
            ));
            if failed == 0 {
                problems
                    .push("the sim never had to retry a webhook: the drill did not bite".into());
            }
        }
    }
    let load_seconds = load_task.await.context("load task")?.as_secs_f64();
    progress.abort();
    let accepted = loaded.accepted.lock().expect("lock").clone();
    eprintln!(
        "    load took {load_seconds:.1} s: {} accepted; waiting for recovery",
        accepted.len()
    );
    let t1 = Instant::now();
    let tally = load::wait_settled(
        &http,
        &stack.sim_url,
        &stack.pg_url,
        &accepted,
        Duration::from_secs(180),
    )
    .await?;
    let recovery_seconds = t1.elapsed().as_secs_f64();
    if let Ok(n) = resent_dead_claims(&stack.pg_url).await
        && n > 0
    {
        notes.push(format!(
            "{n} claims cut off before their platform call were resent once webhooks showed they never arrived"
        ));
    }
    if accepted.len() < sends / 2 {
        problems.push(format!(
            "only {} of {sends} sends were accepted",
            accepted.len()
        ));
    }
    drop(core);
    problems.extend(stack.down());
    let r = DrillResult {
        drill: fault.name(),
        title: fault.title(),
        tally,
        not_accepted: std::sync::atomic::AtomicU64::load(
            &loaded.errors,
            std::sync::atomic::Ordering::Relaxed,
        ),
        accepted_unpublished: std::sync::atomic::AtomicU64::load(
            &loaded.unpublished,
            std::sync::atomic::Ordering::Relaxed,
        ),
        first_error: loaded.first_error.lock().expect("lock").clone(),
        load_seconds,
        recovery_seconds,
        notes,
        problems,
    };
    eprintln!(
        "    {}: accepted {} sent {} sent twice {} lost {} stuck {} (states {:?})",
        if r.ok() { "ok" } else { "FAILED" },
        r.tally.accepted,
        r.tally.sent,
        r.tally.sent_twice,
        r.tally.lost,
        r.tally.stuck,
        r.tally.states
    );
    Ok(r)
}

/// Run one of the sibling executables: its summary goes to our stderr, its stdout is the
/// one JSON report line (`warden_faults::report`).
async fn sibling(
    exe: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
) -> anyhow::Result<(bool, serde_json::Value)> {
    let me = std::env::current_exe()?;
    let path = me.parent().context("exe dir")?.join(exe);
    let out = tokio::process::Command::new(&path)
        .args(args)
        .envs(env)
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .with_context(|| format!("running {}", path.display()))?;
    let report = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    Ok((out.status.success(), report))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if let Err(e) = main_inner().await {
        eprintln!("[faults] error: {e:#}");
        std::process::exit(2);
    }
}

async fn main_inner() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let a = args()?;
    let wanted = |name: &str| a.only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    for exe in [
        "platform-sim",
        "webhook",
        "dispatcher",
        "scheduler",
        "mcp-gateway",
    ] {
        if !a.bins.join(exe).exists() {
            bail!(
                "{} is missing: build the binaries first (`cargo build --release --bins`)",
                a.bins.join(exe).display()
            );
        }
    }
    std::fs::create_dir_all(&a.out)?;
    let run_dir = std::env::temp_dir().join(format!("warden-faults-{}", std::process::id()));
    let logs = a.out.join("logs");
    let _ = std::fs::remove_dir_all(&logs);
    std::fs::create_dir_all(&logs)?;
    let logs = std::fs::canonicalize(&logs)?;
    eprintln!(
        "[faults] private Postgres, Redis and NATS under {}",
        run_dir.display()
    );
    // Declared before `services`, so dropped after it: the processes are gone first.
    let run_dir_guard = RemoveOnDrop(run_dir.clone());
    let mut services = Services::start(&run_dir).await?;
    let started = Instant::now();
    let mut results = Vec::new();
    let mut failed = false;
    for (i, fault) in Fault::ALL.into_iter().enumerate() {
        if !wanted(fault.name()) {
            continue;
        }
        let r = run_drill(&mut services, &a.bins, &logs, fault, i as u8 + 1, a.scale).await?;
        failed |= !r.ok();
        results.push(r);
    }

    let mut extra = Vec::new();
    // Campaign control under load (issue 28): its own stack, its own executable.
    if wanted("campaign-control") {
        let stack = Stack::up(&services, &a.bins, &logs, "campaign-control", 10).await?;
        let recipients = ((10_000.0 * a.scale).round() as usize).max(500).to_string();
        eprintln!(
            "[faults] campaign control: 50 calls from two gateways while {recipients} recipients are sent"
        );
        let gateway = a.bins.join("mcp-gateway").to_string_lossy().to_string();
        let (ok, report) = sibling(
            "campaign-control",
            &[
                "--gateway".into(),
                gateway,
                "--database-url".into(),
                stack.pg_url.clone(),
                "--recipients".into(),
                recipients,
            ],
            &stack.env,
        )
        .await?;
        failed |= !ok;
        extra.push(serde_json::json!({"check": "campaign-control", "ok": ok, "report": report}));
        for p in stack.down() {
            eprintln!("[faults] {p}");
            failed = true;
        }
    }

    // Forged webhooks and fuzzed tool calls against a quiet stack.
    if wanted("forged-webhooks") || wanted("fuzz-tools") {
        let stack = Stack::up(&services, &a.bins, &logs, "edge", 9).await?;
        // Real customers and messages for the forged events to aim at; then wait until
        // they are final, so nothing legitimate changes a row while the forgeries land.
        let seed = Arc::new(Load::default());
        load::drive(stack.core().await?, seed.clone(), 50, 100.0, "62818".into()).await;
        let seeded = seed.accepted.lock().expect("lock").clone();
        let http = reqwest::Client::new();
        let t = load::wait_settled(
            &http,
            &stack.sim_url,
            &stack.pg_url,
            &seeded,
            Duration::from_secs(60),
        )
        .await?;
        if !t.ok() {
            bail!("the edge stack's 50 seed messages did not settle: {t:?}");
        }
        if wanted("forged-webhooks") {
            let posts = ((1000.0 * a.scale).round() as usize).max(100).to_string();
            eprintln!("[faults] forged webhook POSTs ({posts})");
            let (ok, report) = sibling(
                "forged-webhooks",
                &[
                    "--url".into(),
                    format!("http://127.0.0.1:{}", stack.webhook_port),
                    "--secret".into(),
                    SECRET.into(),
                    "--database-url".into(),
                    stack.pg_url.clone(),
                    "--posts".into(),
                    posts,
                ],
                &stack.env,
            )
            .await?;
            failed |= !ok;
            extra.push(serde_json::json!({"check": "forged-webhooks", "ok": ok, "report": report}));
        }
        if wanted("fuzz-tools") {
            let calls = ((10_000.0 * a.scale).round() as usize).max(500).to_string();
            eprintln!("[faults] fuzzed tool calls through stdio ({calls})");
            let gateway = a.bins.join("mcp-gateway").to_string_lossy().to_string();
            let (ok, report) = sibling(
                "fuzz-tools",
                &["--gateway".into(), gateway, "--calls".into(), calls],
                &stack.env,
            )
            .await?;
            failed |= !ok;
            extra.push(serde_json::json!({"check": "fuzz-tools", "ok": ok, "report": report}));
        }
        for p in stack.down() {
            eprintln!("[faults] {p}");
            failed = true;
        }
    }
    services.pg.stop_with(libc::SIGINT, Duration::from_secs(30));
    services.redis.stop();
    services.nats.stop();
    drop(services);
    drop(run_dir_guard);

    print_table(&results, &extra);
    let machine = format!(
        "{} cores, load {} at the end",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
    let json = serde_json::json!({
        "machine": machine,
        "scale": a.scale,
        "seconds": started.elapsed().as_secs_f64(),
        "drills": results,
        "checks": extra,
        "ok": !failed,
    });
    let path = a.out.join("faults.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json)?)?;
    eprintln!(
        "[faults] {} in {:.0} s; JSON in {}; logs in {}",
        if failed {
            "FAILED"
        } else {
            "all drills passed"
        },
        started.elapsed().as_secs_f64(),
        path.display(),
        logs.display()
    );
    if failed {
        std::process::exit(1);
    }
    Ok(())
}

/// The drills' data directories go also when a drill ends in an error.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn print_table(results: &[DrillResult], extra: &[serde_json::Value]) {
    eprintln!();
    eprintln!(
        "{:<32} {:>8} {:>8} {:>10} {:>6} {:>6} {:>12} {:>10}  result",
        "drill", "accepted", "sent", "sent twice", "lost", "stuck", "not accepted", "recovery"
    );
    for r in results {
        eprintln!(
            "{:<32} {:>8} {:>8} {:>10} {:>6} {:>6} {:>12} {:>9.1}s  {}",
            r.title,
            r.tally.accepted,
            r.tally.sent,
            r.tally.sent_twice,
            r.tally.lost,
            r.tally.stuck,
            r.not_accepted,
            r.recovery_seconds,
            if r.ok() { "ok" } else { "FAILED" }
        );
        for n in &r.notes {
            eprintln!("    {n}");
        }
        if let Some(e) = &r.first_error {
            eprintln!("    first refused call while it was down: {e}");
        }
        for p in &r.problems {
            eprintln!("    problem: {p}");
        }
    }
    for x in extra {
        let r = &x["report"];
        let n = |k: &str| r[k].as_u64().map_or("?".to_string(), |v| v.to_string());
        let summary = match x["check"].as_str() {
            Some("forged-webhooks") => format!(
                "{} forged POSTs: {} rejected, {} accepted, rows written {}",
                n("sent"),
                n("rejected"),
                n("accepted"),
                n("rows_written")
            ),
            Some("fuzz-tools") => format!(
                "{} fuzzed tool calls: {} answered, {} crashes, {} protocol errors, {} violations, {} calls/s",
                n("calls"),
                n("answered"),
                n("crashes"),
                n("protocol_errors"),
                n("violations"),
                r["calls_per_sec"]
                    .as_f64()
                    .map_or("?".into(), |v| format!("{v:.0}"))
            ),
            Some("campaign-control") => format!(
                "{} control calls during a {}-recipient campaign: {} UNAVAILABLE, final {} (last call: {})",
                n("calls"),
                n("recipients"),
                n("unavailable"),
                r["final_status"].as_str().unwrap_or("?"),
                r["last_call_left"].as_str().unwrap_or("?")
            ),
            _ => r.to_string(),
        };
        eprintln!(
            "{:<32} {summary}  {}",
            x["check"].as_str().unwrap_or("?"),
            if x["ok"].as_bool() == Some(true) {
                "ok"
            } else {
                "FAILED"
            },
        );
    }
}
