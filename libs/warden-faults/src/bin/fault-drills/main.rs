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
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use warden_faults::load::{self, Load};
use warden_faults::stack::Services;

mod drills;
mod stack;

use drills::{DrillResult, Fault, run_drill};
use stack::{SECRET, Stack};

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
    // Campaign control under load: its own stack, its own executable.
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
            stack.bounds()?.stall,
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
            Some("campaign-control") => format!(
                "{} control calls during a {}-recipient campaign: {} UNAVAILABLE, final {} (last call: {})",
                n("calls"),
                n("recipients"),
                n("unavailable"),
                r["final_status"].as_str().unwrap_or("?"),
                r["last_call_left"].as_str().unwrap_or("?")
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
