//! The drills: what breaks, under which load, and the verdict (correctness only: lost,
//! sent twice, stuck past the mechanism's own bound; never the speed of the machine).
//! To add a drill: a [`Fault`] variant, its name, title and load, and its arm in
//! [`run_drill`] (or a function of its own in a module beside this one).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use anyhow::Context;
use warden_faults::load::{self, Load, Tally};
use warden_faults::stack::{Services, wait_http};

use crate::stack::{Stack, claims_of, resent_unknown, sim_sends};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    KillDispatcher,
    RestartNats,
    StopRedis,
    RestartPostgres,
    RestartWebhook,
    KillAtEnd,
}

impl Fault {
    pub const ALL: [Fault; 6] = [
        Fault::KillDispatcher,
        Fault::KillAtEnd,
        Fault::RestartNats,
        Fault::StopRedis,
        Fault::RestartPostgres,
        Fault::RestartWebhook,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Fault::KillDispatcher => "kill-dispatcher",
            Fault::RestartNats => "restart-nats",
            Fault::StopRedis => "stop-redis",
            Fault::RestartPostgres => "restart-postgres",
            Fault::RestartWebhook => "restart-webhook",
            Fault::KillAtEnd => "kill-at-end",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            Fault::KillDispatcher => "kill -9 a dispatcher 5x",
            Fault::RestartNats => "restart NATS mid-run",
            Fault::StopRedis => "stop Redis for 30 s",
            Fault::RestartPostgres => "restart Postgres mid-run",
            Fault::RestartWebhook => "restart webhook, sim retrying",
            Fault::KillAtEnd => "kill -9 in the last second",
        }
    }
    /// (sends, sends per second) at scale 1.
    fn load(self) -> (usize, f64) {
        match self {
            Fault::KillDispatcher => (20_000, 500.0),
            // Long enough to span the 30 s outage with sends before and after it.
            Fault::StopRedis => (10_000, 200.0),
            // The kill lands in the last second; nothing is sent after it, so claims it cut
            // off get no webhook evidence and wait for the (drill-shortened) max wait.
            Fault::KillAtEnd => (4_000, 400.0),
            _ => (10_000, 400.0),
        }
    }
}

async fn sleep_until(t0: Instant, at: Duration) {
    tokio::time::sleep_until((t0 + at).into()).await;
}

#[derive(serde::Serialize)]
pub struct DrillResult {
    pub drill: &'static str,
    pub title: &'static str,
    pub tally: Tally,
    pub not_accepted: u64,
    pub accepted_unpublished: u64,
    pub first_error: Option<String>,
    pub load_seconds: f64,
    pub recovery_seconds: f64,
    pub notes: Vec<String>,
    pub problems: Vec<String>,
}

impl DrillResult {
    pub fn ok(&self) -> bool {
        self.tally.ok() && self.problems.is_empty()
    }
}

pub async fn run_drill(
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
        Fault::KillAtEnd => {
            // The last second by the load's own progress (a loaded machine runs it slower
            // than its nominal rate): half a second's worth of sends before the end.
            let last = sends.saturating_sub((rate / 2.0) as usize) as u64;
            while AtomicU64::load(&loaded.attempted, Relaxed) < last {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            // Aim at a moment it holds claims (so the kill cuts some off), within that window.
            let pid = stack.dispatchers[1].0.pid().unwrap_or(0);
            while claims_of(&stack.pg_url, pid).await.unwrap_or(0) == 0
                && AtomicU64::load(&loaded.attempted, Relaxed) < sends as u64
            {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let (p, _) = &mut stack.dispatchers[1];
            p.kill9();
            let at = sim_sends(&http, &stack.sim_url).await;
            let held = claims_of(&stack.pg_url, pid).await.unwrap_or(0);
            eprintln!(
                "    kill -9 at {:.1} s ({at} sends so far, {held} claims it held)",
                t0.elapsed().as_secs_f64()
            );
            tokio::time::sleep(Duration::from_millis(1500)).await;
            p.start()?;
            notes.push(format!(
                "dispatcher-2 killed in the last second of the load holding {held} claims, restarted 1.5 s later; nothing sent after it"
            ));
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
                crate::stack::STARTUP,
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
    let bounds = stack.bounds()?;
    let tally = load::wait_settled(
        &http,
        &stack.sim_url,
        &stack.pg_url,
        &accepted,
        bounds.stall,
    )
    .await?;
    let recovery_seconds = t1.elapsed().as_secs_f64();
    if let Ok((evidence, max_wait)) = resent_unknown(&stack.pg_url).await
        && evidence + max_wait > 0
    {
        notes.push(format!(
            "unknown outcomes resent: {evidence} on webhook evidence, {max_wait} after the max wait (bound {:.0} s after the claim)",
            bounds.unknown_outcome.as_secs_f64()
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
