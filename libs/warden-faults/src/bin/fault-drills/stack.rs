//! One drill's Warden processes (platform-sim, webhook, two dispatchers, scheduler) on a
//! fresh database and stream of the shared private services, with the timers the
//! drills shorten, and the bounds derived from them.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use warden_core::Core;
use warden_faults::load::TEMPLATE;
use warden_faults::stack::{Proc, Services, free_port, wait_http};

pub const SECRET: &str = "faults-app-secret";

/// How long a process may take to answer /health after its start: a hang detector for a
/// loaded machine (debug binaries, migrations), never a verdict on speed.
pub const STARTUP: Duration = Duration::from_secs(300);

/// The timers every drill's processes run with.
const TIMERS: &[(&str, &str)] = &[
    // The drills measure recovery, not the platform's pace.
    ("RATE_LIMIT_MPS", "5000"),
    ("DISPATCHER_REPLICAS", "2"),
    // Short timers so a drill recovers in seconds (defaults: 60s, 30s, 30s).
    ("DISPATCH_LEASE", "5s"),
    ("DISPATCH_UNKNOWN_SETTLE", "5s"),
    ("DISPATCH_ACK_WAIT", "5s"),
    // Drill-shortened (default 15m): an unknown outcome with no later traffic (a claim cut
    // off at the end of the load) is resent after a minute.
    ("DISPATCH_UNKNOWN_MAX_WAIT", "60s"),
    ("DISPATCH_SWEEP_INTERVAL", "2s"),
    ("SCHEDULER_POLL_INTERVAL", "1s"),
];

/// The bounds a drill waits by, all from the dispatcher configuration its processes run.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Bounds {
    /// Latest an unknown outcome is released for its resend after its claim
    /// (`warden_dispatcher::sweep::settle_bound`).
    pub unknown_outcome: Duration,
    /// Recovery fails only when nothing moved at all for this long (twice the bound above,
    /// plus a JetStream ack wait): a slow machine still moves, a stuck row does not.
    pub stall: Duration,
}

pub struct Stack {
    pub db: String,
    pub pg_url: String,
    pub env: BTreeMap<String, String>,
    pub sim: Proc,
    pub sim_url: String,
    pub webhook: Proc,
    pub webhook_port: u16,
    pub dispatchers: Vec<(Proc, u16)>,
    pub scheduler: Proc,
}

/// [`Bounds`] of dispatchers started with `env`.
fn bounds_of(env: &BTreeMap<String, String>) -> anyhow::Result<Bounds> {
    let env: std::collections::HashMap<String, String> = env.clone().into_iter().collect();
    let settings = warden_settings::Settings::from_sources(None, &env)?;
    let cfg = warden_dispatcher::DispatcherConfig::from_settings(&settings);
    let unknown_outcome = warden_dispatcher::sweep::settle_bound(&cfg);
    Ok(Bounds {
        unknown_outcome,
        stall: unknown_outcome * 2 + cfg.dispatch.ack_wait,
    })
}

impl Stack {
    pub async fn up(
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
        ] {
            env.insert(k.to_string(), v);
        }
        env.extend(TIMERS.iter().map(|(k, v)| (k.to_string(), v.to_string())));
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
        wait_http(&http, &format!("{sim_url}/health"), STARTUP).await?;
        // The webhook first: it migrates the new database, the others then find it ready.
        webhook.start()?;
        wait_http(
            &http,
            &format!("http://127.0.0.1:{webhook_port}/health"),
            STARTUP,
        )
        .await
        .with_context(|| webhook.log_tail(20))?;
        for (p, _) in &mut dispatchers {
            p.start()?;
        }
        scheduler.start()?;
        for (p, port) in &dispatchers {
            wait_http(&http, &format!("http://127.0.0.1:{port}/health"), STARTUP)
                .await
                .with_context(|| p.log_tail(20))?;
        }
        wait_http(
            &http,
            &format!("http://127.0.0.1:{scheduler_port}/health"),
            STARTUP,
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

    /// The bounds of this stack's dispatchers (they read the same environment).
    pub fn bounds(&self) -> anyhow::Result<Bounds> {
        bounds_of(&self.env)
    }

    /// The load process's own Core (as mcp-gateway builds it).
    pub async fn core(&self) -> anyhow::Result<Core> {
        let settings =
            warden_settings::Settings::from_sources(None, &self.env.clone().into_iter().collect())?;
        let needs = warden_service::Needs {
            redis: true,
            nats: true,
            pool_size: 16,
        };
        let deps = warden_service::start(Arc::new(settings), needs).await?;
        Ok(Core::new(deps, "fault-drill"))
    }

    /// SIGTERM everything; a process that does not exit 0 is reported.
    pub fn down(mut self) -> Vec<String> {
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

pub async fn sim_sends(http: &reqwest::Client, sim: &str) -> u64 {
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

/// Unknown outcomes resent, by the rule that resent them (the audit rows of the
/// dispatchers and their sweep): (on webhook evidence, on max wait).
pub async fn resent_unknown(pg_url: &str) -> anyhow::Result<(i64, i64)> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        evidence: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        max_wait: i64,
    }
    let mut c = AsyncPgConnection::establish(pg_url).await?;
    let row: N = diesel::sql_query(
        "SELECT count(*) FILTER (WHERE details->>'rule' IS DISTINCT FROM 'resent_on_max_wait') AS evidence,
                count(*) FILTER (WHERE details->>'rule' = 'resent_on_max_wait') AS max_wait
           FROM audit_logs WHERE action = 'resend_after_unknown_outcome'",
    )
    .get_result(&mut c)
    .await?;
    Ok((row.evidence, row.max_wait))
}

/// Rows a dispatcher process holds claimed (`sending`; its lease owner carries the pid).
pub async fn claims_of(pg_url: &str, pid: u32) -> anyhow::Result<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut c = AsyncPgConnection::establish(pg_url).await?;
    let row: N = diesel::sql_query(
        "SELECT count(*) AS n FROM messages WHERE status = 'sending' AND lease_owner LIKE $1",
    )
    .bind::<diesel::sql_types::Text, _>(format!("%-{pid}-%"))
    .get_result(&mut c)
    .await?;
    Ok(row.n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drill_bounds_come_from_the_drill_timers() {
        let env: BTreeMap<String, String> = TIMERS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let b = bounds_of(&env).unwrap();
        // Lease 15 s (a 10 s platform call + 5 s), max wait 60 s, sweep 2 s.
        assert_eq!(b.unknown_outcome, Duration::from_secs(77));
        assert_eq!(b.stall, Duration::from_secs(2 * 77 + 5));
    }
}
