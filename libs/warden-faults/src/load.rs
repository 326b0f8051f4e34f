//! The load of a drill (template sends through `Core::send`, the one send path the tools
//! use) and the tally of what became of every accepted message: the sim's per-message
//! send counts against the rows' final states.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use diesel::sql_types::{Array, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_core::{Core, RefusalMode, SendKind, SendRequest, TemplateSend};
use warden_rules::kinds::MessageType;

/// The template every drill sends: approved in the sim's default set, utility (no
/// marketing cap or quiet hours), one variable.
pub const TEMPLATE: (&str, &str, &str) = (
    "warden_order_update",
    "en",
    "Your order {{1}} has been shipped and should arrive soon.",
);

/// A send that has not answered after this long is counted as not accepted.
const SEND_HANG: Duration = Duration::from_secs(60);

#[derive(Default)]
pub struct Load {
    pub accepted: Mutex<Vec<Uuid>>,
    pub attempted: AtomicU64,
    /// Accepted while NATS was unreachable: recorded, left to the relay.
    pub unpublished: AtomicU64,
    /// Not accepted (a dependency was down): the caller got an error and nothing was
    /// promised, so these are neither sent nor lost.
    pub errors: AtomicU64,
    pub first_error: Mutex<Option<String>>,
}

impl Load {
    pub fn accepted_count(&self) -> usize {
        self.accepted.lock().expect("lock").len()
    }
}

/// `total` sends to distinct recipients (`prefix` + a counter, so drills never share a
/// customer), paced at `rate` per second, at most `concurrency` in flight.
pub async fn drive(core: Core, load: Arc<Load>, total: usize, rate: f64, prefix: String) {
    let gate = Arc::new(tokio::sync::Semaphore::new(32));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..total {
        tick.tick().await;
        let permit = gate.clone().acquire_owned().await.expect("open");
        let (core, load) = (core.clone(), load.clone());
        let raw = format!("{prefix}{i:07}");
        tasks.spawn(async move {
            let _permit = permit;
            load.attempted.fetch_add(1, Ordering::Relaxed);
            let phone = warden_rules::phone::canonicalize(&raw).expect("valid test number");
            let req = SendRequest {
                sender: None,
                phone,
                channel: "whatsapp".into(),
                kind: SendKind::Template(TemplateSend {
                    name: TEMPLATE.0.into(),
                    locale: TEMPLATE.1.into(),
                    variables: vec![format!("#{i}")],
                    ..Default::default()
                }),
                message_type: MessageType::Template,
                campaign_id: None,
                existing_message_id: None,
                refusal: RefusalMode::Error,
                actor: "fault-drill",
            };
            // Only a hang detector: a send slowed by a loaded machine is still a send.
            match tokio::time::timeout(SEND_HANG, core.send(req)).await {
                Ok(Ok(accepted)) => {
                    if !accepted.published {
                        load.unpublished.fetch_add(1, Ordering::Relaxed);
                    }
                    load.accepted
                        .lock()
                        .expect("lock")
                        .push(accepted.message_id);
                }
                Ok(Err(e)) => note_error(&load, format!("{e}")),
                Err(_) => note_error(&load, format!("no answer within {} s", SEND_HANG.as_secs())),
            }
        });
    }
    while tasks.join_next().await.is_some() {}
}

fn note_error(load: &Load, e: String) {
    load.errors.fetch_add(1, Ordering::Relaxed);
    load.first_error.lock().expect("lock").get_or_insert(e);
}

/// What became of the accepted messages.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Tally {
    pub accepted: usize,
    /// Reached the platform at least once.
    pub sent: usize,
    /// Reached the platform more than once.
    pub sent_twice: usize,
    /// Never reached the platform (includes rows that ended `failed`).
    pub lost: usize,
    /// Not in a final state (`read`, which the sim's status webhooks lead to, or `failed`).
    pub stuck: usize,
    /// Final row states.
    pub states: BTreeMap<String, usize>,
    /// Status webhooks the sim still holds (queued or in flight).
    pub webhooks_pending: u64,
}

impl Tally {
    pub fn settled(&self) -> bool {
        self.stuck == 0 && self.webhooks_pending == 0
    }
    pub fn ok(&self) -> bool {
        self.settled() && self.lost == 0 && self.sent_twice == 0
    }
}

#[derive(diesel::QueryableByName)]
struct State {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    status: String,
}

pub async fn tally(
    http: &reqwest::Client,
    sim: &str,
    pg_url: &str,
    accepted: &[Uuid],
) -> anyhow::Result<Tally> {
    // Rows first, then the sim: a row already final must show in the (newer) counts.
    let mut conn = AsyncPgConnection::establish(pg_url).await?;
    let rows: Vec<State> = diesel::sql_query("SELECT id, status FROM messages WHERE id = ANY($1)")
        .bind::<Array<SqlUuid>, _>(accepted)
        .load(&mut conn)
        .await?;
    let stats: serde_json::Value = http
        .get(format!("{sim}/sim/stats"))
        .send()
        .await?
        .json()
        .await?;
    let hooks: serde_json::Value = http
        .get(format!("{sim}/sim/webhooks"))
        .send()
        .await?
        .json()
        .await?;
    let counts: HashMap<String, u64> = stats["by_message"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v["count"].as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let status: HashMap<Uuid, String> = rows.into_iter().map(|r| (r.id, r.status)).collect();
    let mut t = Tally {
        accepted: accepted.len(),
        webhooks_pending: hooks["queued"].as_u64().unwrap_or(0)
            + hooks["in_flight"].as_u64().unwrap_or(0),
        ..Tally::default()
    };
    for id in accepted {
        let n = counts.get(&id.to_string()).copied().unwrap_or(0);
        match n {
            0 => t.lost += 1,
            1 => t.sent += 1,
            _ => {
                t.sent += 1;
                t.sent_twice += 1;
            }
        }
        let s = status.get(id).map_or("missing", String::as_str);
        if !matches!(s, "read" | "failed") {
            t.stuck += 1;
        }
        *t.states.entry(s.to_string()).or_default() += 1;
    }
    Ok(t)
}

/// Tally every second until everything settled, or until nothing at all moved for `stall`
/// (no row changed state, no send reached the sim, no webhook left the sim's queue): then
/// what is not final is stuck. A loaded machine is slow but keeps moving, so this judges
/// correctness, not speed; `stall` comes from the mechanism's own bounds. `hard_cap` only
/// stops a run that moves forever.
pub async fn wait_settled(
    http: &reqwest::Client,
    sim: &str,
    pg_url: &str,
    accepted: &[Uuid],
    stall: Duration,
) -> anyhow::Result<Tally> {
    let hard_cap = Instant::now() + (stall * 20).max(Duration::from_secs(3600));
    let mut last_move = Instant::now();
    let mut last_seen: Option<(BTreeMap<String, usize>, usize, u64)> = None;
    let mut last_print = Instant::now();
    loop {
        let t = match tally(http, sim, pg_url, accepted).await {
            Ok(t) => t,
            Err(e) if last_move.elapsed() < stall => {
                eprintln!("    tally failed ({e:#}); trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let seen = (t.states.clone(), t.sent + t.sent_twice, t.webhooks_pending);
        if last_seen.as_ref() != Some(&seen) {
            last_seen = Some(seen);
            last_move = Instant::now();
        }
        if t.settled() {
            return Ok(t);
        }
        if last_move.elapsed() > stall || Instant::now() > hard_cap {
            eprintln!(
                "    nothing moved for {:.0} s (bound {:.0} s): {} of {} stuck",
                last_move.elapsed().as_secs_f64(),
                stall.as_secs_f64(),
                t.stuck,
                t.accepted
            );
            return Ok(t);
        }
        if last_print.elapsed() > Duration::from_secs(5) {
            eprintln!(
                "    recovering: {} of {} not final yet, {} webhooks pending, states {:?}",
                t.stuck, t.accepted, t.webhooks_pending, t.states
            );
            last_print = Instant::now();
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
