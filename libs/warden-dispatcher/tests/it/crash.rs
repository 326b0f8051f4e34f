//! kill -9 the real `dispatcher` binary in the middle of 2,000 messages, restart it, and
//! check the sim saw every message exactly once. Needs the built binary
//! (`cargo build --bins`; `make test` builds every binary before the tests).
//!
//! The sim sends no status webhooks here; the test plays the webhook's part (a message the
//! sim accepted moves `sending -> sent` by its callback data, as `webhook` would do). A
//! claim the kill cut off before its call reached the sim gets no webhook and must be
//! resent after DISPATCH_UNKNOWN_SETTLE; one the sim did take must not be.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::Harness;
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_test_support::free_port;

const MESSAGES: usize = 2000;
const REDIS_DB: &str = "15";

/// The spawned binary; killed when the test ends, also when it fails half way.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn spawn(h: &Harness, admin_port: u16, log: &Path) -> Proc {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    Command::new(warden_test_support::binary("dispatcher"))
        .env_remove("WARDEN_CONFIG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .envs(warden_test_support::procs::env_of(&h.settings))
        .env("REDIS_DB", REDIS_DB)
        .env(
            "POLICIES_PATH",
            warden_test_support::repo_path("policies/default.yaml"),
        )
        .env("RATE_LIMIT_MPS", "400")
        .env("ADMIN_HTTP_PORT", admin_port.to_string())
        .env("PAIR_RATE_INTERVAL", "0")
        .env("DISPATCH_ACK_WAIT", "3s")
        .env("DISPATCH_LEASE", "3s")
        .env("DISPATCH_UNKNOWN_SETTLE", "3s")
        .env("DISPATCH_DRAIN_TIMEOUT", "10s")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map(Proc)
        .expect("dispatcher binary starts")
}

async fn get(url: &str) -> Option<(u16, String)> {
    let r = reqwest::Client::new()
        .get(url)
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .ok()?;
    let status = r.status().as_u16();
    Some((status, r.text().await.unwrap_or_default()))
}

async fn wait_healthy(port: u16, child: &mut Proc, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some((200, body)) = get(&format!("http://127.0.0.1:{port}/health")).await {
            assert_eq!(body, "OK");
            return;
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            panic!(
                "dispatcher exited with {status} before it was healthy: {}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        assert!(Instant::now() < deadline, "dispatcher never became healthy");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn reset_bucket(h: &Harness) {
    let mut redis = h.settings.redis.clone();
    redis.db = REDIS_DB.parse().unwrap();
    let pool = warden_ratelimit::lazy_pool(&redis.url()).unwrap();
    let mut c = pool.get().await.unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg(warden_ratelimit::bucket_key("whatsapp"))
        .query_async(&mut *c)
        .await
        .unwrap();
}

#[derive(QueryableByName, Debug)]
struct Final {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<Text>)]
    wamid: Option<String>,
    #[diesel(sql_type = Bool)]
    lease_expired: bool,
}

async fn settled(h: &Harness) -> bool {
    h.stream_messages().await == 0 && h.count_where("status IN ('queued', 'sending')").await == 0
}

/// The status webhook's effect for every message the sim accepted: `sending -> sent` with
/// its wamid, found by the callback data (= message id), and the progress mark the webhook
/// server keeps (statuses emitted up to a moment before the sim's stats were read).
async fn play_status_webhooks(h: &Harness) {
    let mut conn = h.deps.pg.get().await.unwrap();
    let read_at: chrono::DateTime<chrono::Utc> = chrono::Utc::now() - chrono::TimeDelta::seconds(1);
    let stats = h.sim.stats();
    for (id, m) in &stats.by_message {
        diesel::sql_query(
            "UPDATE messages SET status = 'sent', wamid = COALESCE(wamid, $2), sent_at = now(),
                    lease_until = NULL, lease_owner = NULL, updated_at = now()
              WHERE id = $1::uuid AND status = 'sending'",
        )
        .bind::<Text, _>(id)
        .bind::<Text, _>(&m.wamid)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    diesel::sql_query(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, $1)
         ON CONFLICT (id) DO UPDATE SET status_through = GREATEST(webhook_progress.status_through, $1)",
    )
    .bind::<diesel::sql_types::Timestamptz, _>(read_at)
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_run_then_restart_sends_every_message_exactly_once() {
    let h = Harness::new(400).await;
    reset_bucket(&h).await;
    // Slow calls a little, so the kill lands while calls are in flight.
    h.sim.state.set_latency_ms(10);

    // 2,000 queued messages to distinct recipients, as warden-core writes them.
    let rows = h.insert_bulk(MESSAGES).await;
    assert_eq!(rows.len(), MESSAGES);
    h.publish_all(&rows, 32).await;
    assert_eq!(h.stream_messages().await, MESSAGES as u64);

    let log =
        std::env::temp_dir().join(format!("dispatcher-crash-{}.log", Uuid::new_v4().simple()));
    let port1 = free_port();
    let mut first = spawn(&h, port1, &log);
    wait_healthy(port1, &mut first, &log).await;
    let (_, metrics) = get(&format!("http://127.0.0.1:{port1}/metrics"))
        .await
        .unwrap();
    for name in [
        "warden_dispatcher_sent_total",
        "warden_dispatcher_retries_total",
        "warden_ratelimit_wait_seconds",
        "warden_ratelimit_fallback",
        "warden_platform_request_duration_seconds",
    ] {
        assert!(metrics.contains(name), "/metrics lacks {name}");
    }

    // Kill it hard once roughly a third went out.
    let deadline = Instant::now() + Duration::from_secs(60);
    while h.sim.stats().total_sends < (MESSAGES as u64) / 3 {
        assert!(Instant::now() < deadline, "first dispatcher too slow");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.0.kill().expect("kill -9");
    first.0.wait().unwrap();
    let at_kill = h.sim.stats().total_sends;
    let sending_at_kill = h.count_where("status = 'sending'").await;

    // Restart and let it finish.
    let port2 = free_port();
    let mut second = spawn(&h, port2, &log);
    wait_healthy(port2, &mut second, &log).await;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        play_status_webhooks(&h).await;
        if settled(&h).await {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not settled: stream {} queued {} sending {}",
            h.stream_messages().await,
            h.count_where("status = 'queued'").await,
            h.count_where("status = 'sending'").await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // Graceful stop.
    // SAFETY: kill(2) with the pid of a child we spawned and have not reaped.
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(second.0.id() as libc::pid_t, libc::SIGTERM);
    }
    let stop_deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = second.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < stop_deadline,
            "no clean exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "exit after SIGTERM: {status}");

    // Exactly once in the sim.
    let stats = h.sim.stats();
    assert_eq!(stats.duplicates, 0, "no message was sent twice");
    for (id, m) in &stats.by_message {
        assert_eq!(m.count, 1, "{id} sent {} times", m.count);
    }
    let mut conn = h.deps.pg.get().await.unwrap();
    let finals: Vec<Final> = diesel::sql_query(
        "SELECT id, status, wamid, COALESCE(lease_until <= now(), true) AS lease_expired FROM messages",
    )
    .get_results(&mut conn)
    .await
    .unwrap();
    let mut by_status: HashMap<String, usize> = HashMap::new();
    for f in &finals {
        *by_status.entry(f.status.clone()).or_default() += 1;
        let sim = stats
            .by_message
            .get(&f.id.to_string())
            .unwrap_or_else(|| panic!("{} ended {} but the sim never saw it", f.id, f.status));
        assert_eq!(f.status, "sent", "{} ended {}", f.id, f.status);
        assert_eq!(f.wamid.as_deref(), Some(sim.wamid.as_str()));
        assert!(f.lease_expired, "{} still leased", f.id);
    }
    let resent = h
        .count_where(
            "id::text IN (SELECT entity_id FROM audit_logs WHERE action = 'resend_after_unknown_outcome')",
        )
        .await;
    eprintln!(
        "crash test: {MESSAGES} messages; sim had {at_kill} sends at the kill ({sending_at_kill} rows `sending`); \
         final rows {by_status:?}; sim total {} duplicates {}; claims cut off before their call and resent: {resent}",
        stats.total_sends, stats.duplicates,
    );
    assert_eq!(
        stats.by_message.len(),
        MESSAGES,
        "every message reached the sim"
    );
    assert_eq!(stats.total_sends, MESSAGES as u64, "and exactly once");
    drop(conn);
    let _ = std::fs::remove_file(&log);
    reset_bucket(&h).await;
    h.cleanup().await;
}
