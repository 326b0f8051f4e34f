//! Campaign control under load: pause / resume / cancel while a 10,000-recipient
//! campaign fans out and outcomes arrive, from two independent "gateway" Cores (each its
//! own connection pool, as two mcp-gateway processes have). Every call answers its proper
//! result, never UNAVAILABLE; the final state is the last successful call's; the counters
//! count each recipient once and add up to the audience; a pause or cancel stops the
//! fan-out within one batch.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use common::*;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use rand::Rng;
use serde_json::json;
use uuid::Uuid;
use warden_core::Core;
use warden_core::campaigns::CampaignError;
use warden_rules::campaign_status::CampaignStatus;
use warden_scheduler::Config;

const AUDIENCE: i64 = 10_000;
/// Every 4th customer opted out of marketing: refused (recorded failed in the send's
/// transaction, which also moves the campaign's counters: the old lock cycle's other half).
const OPT_OUT_EVERY: i64 = 4;

fn fast_config(owner: &str) -> Config {
    Config {
        page_size: 1000,
        concurrency: 32,
        ..test_config(owner)
    }
}

/// A Core with a connection pool of its own: one "gateway process".
async fn gateway_core(h: &Harness) -> Core {
    let mut deps = h.deps.clone();
    deps.pg = warden_store::connect(&h.deps.settings.database, 4, Duration::from_secs(5))
        .await
        .expect("pool");
    deps.stream = None;
    Core::new(deps, "mcp-gateway")
}

/// Stands in for the webhook and the dispatcher: moves queued messages of the campaign to
/// sent, some on to delivered, some from sent to failed (`apply_status`, the one outcome
/// path), until told to stop. `batched`: like a webhook POST, a batch of 64 in one
/// transaction; else one message per transaction, like the dispatcher. `half` (0 or 1)
/// splits the messages between the two, so they never lock the same message rows.
async fn outcomes(core: Core, id: Uuid, batched: bool, half: i32, stop: Arc<AtomicBool>) -> u64 {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let mut moved = 0;
    while !AtomicBool::load(&stop, Ordering::SeqCst) {
        let mut conn = core.pg().get().await.expect("conn");
        let rows: Vec<Row> = diesel::sql_query(
            "SELECT id FROM messages WHERE campaign_id = $1 AND status = 'queued'
               AND right(customer_phone, 1)::int % 2 = $2
             ORDER BY random() LIMIT 64",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<diesel::sql_types::Int4, _>(half)
        .load(&mut conn)
        .await
        .expect("queued");
        if rows.is_empty() {
            drop(conn);
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let ids: Vec<Uuid> = rows.into_iter().map(|r| r.id).collect();
        if batched {
            // Like the webhook, a batch that meets a deadlock (here with the page publisher's
            // multi-row UPDATE, which takes the rows in another order) is tried again.
            warden_store::tx::transact_on::<_, std::convert::Infallible, _>(
                &mut conn,
                "test_outcome_batch",
                |c| {
                    let ids = ids.clone();
                    async move {
                        for (i, m) in ids.iter().enumerate() {
                            outcome(c, *m, i).await?;
                        }
                        Ok(())
                    }
                    .boxed()
                },
            )
            .await
            .expect("a webhook-like batch");
        } else {
            for (i, m) in ids.iter().enumerate() {
                outcome(&mut conn, *m, i).await.expect("one outcome");
            }
        }
        moved += ids.len() as u64;
    }
    moved
}

async fn outcome(
    c: &mut diesel_async::AsyncPgConnection,
    id: Uuid,
    i: usize,
) -> diesel::QueryResult<()> {
    use warden_core::delivery::outcomes::apply_status;
    let error = warden_core::delivery::knowledge::ErrorInfo {
        code: 131026,
        category: "recipient".into(),
        can_retry: false,
        human_explanation: "Message undeliverable.".into(),
        suggested_action: "Check the number.".into(),
    };
    let now = Utc::now();
    apply_status(c, id, "sent", now, None, None).await?;
    match i % 10 {
        0 => apply_status(c, id, "failed", now, None, Some(&error)).await?,
        1..=5 => apply_status(c, id, "delivered", now, None, None).await?,
        _ => false,
    };
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Call {
    Pause,
    Resume,
    Cancel,
}

/// One call and its answer, checked against the rule of the state table.
async fn call(core: &Core, id: Uuid, what: Call) -> Option<Call> {
    let pg = core.pg();
    let r = match what {
        Call::Pause => warden_core::campaigns::pause(pg, id, "mcp-gateway").await,
        Call::Resume => warden_core::campaigns::resume(pg, id, "mcp-gateway").await,
        Call::Cancel => warden_core::campaigns::cancel(pg, id, Some("drill"), "mcp-gateway").await,
    };
    match r {
        Ok(moved) => {
            let from: CampaignStatus = moved.before.status.parse().expect("a stored status");
            let allowed = match what {
                Call::Pause => from.is_active(),
                Call::Resume => from == CampaignStatus::Paused,
                Call::Cancel => !from.is_terminal(),
            };
            assert!(allowed, "{what:?} succeeded from {from}");
            Some(what)
        }
        Err(CampaignError::InvalidTransition { status, .. }) => {
            let proper = match what {
                Call::Pause => !status.is_active(),
                Call::Resume => status != CampaignStatus::Paused,
                Call::Cancel => false,
            };
            assert!(proper, "{what:?} refused from {status}");
            None
        }
        Err(CampaignError::Terminal { status, .. }) => {
            assert!(what == Call::Cancel && status.is_terminal());
            None
        }
        Err(e) => panic!("{what:?} answered {e:?}: a control call must never be unavailable"),
    }
}

/// The counters equal what the message rows say, each recipient once.
async fn assert_counters_match_rows(h: &Harness, id: Uuid) {
    let c = h.campaign_row(id).await;
    async fn n(h: &Harness, id: Uuid, cond: &str) -> i64 {
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND {cond}"
        ))
        .await
    }
    assert_eq!(
        c.sent_count as i64,
        n(h, id, "status IN ('sent', 'delivered', 'read')").await
    );
    assert_eq!(
        c.delivered_count as i64,
        n(h, id, "status IN ('delivered', 'read')").await
    );
    assert_eq!(
        c.failed_count as i64,
        n(
            h,
            id,
            "status = 'failed' AND error_category IS DISTINCT FROM 'campaign'"
        )
        .await
    );
    assert!(
        c.cancelled_count as i64
            >= n(h, id, "status = 'failed' AND error_category = 'campaign'").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_control_calls_from_two_gateways_during_a_10k_fan_out_never_fail() {
    let h = harness(true).await;
    let id = h.spring_sale(AUDIENCE, OPT_OUT_EVERY, "scheduled").await;
    let running = h.start(fast_config("fan"));
    h.wait_under_way(id, 300, Duration::from_secs(120)).await;
    let stop = Arc::new(AtomicBool::new(false));
    let outcome_tasks = [
        tokio::spawn(outcomes(h.core.clone(), id, true, 0, stop.clone())),
        tokio::spawn(outcomes(h.core.clone(), id, false, 1, stop.clone())),
    ];

    // Two gateways, 25 calls each at random moments; cancel only among the last calls so
    // the campaign sends for a while.
    let gateways = [gateway_core(&h).await, gateway_core(&h).await];
    let mut tasks = Vec::new();
    for (g, core) in gateways.iter().enumerate() {
        let core = core.clone();
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            for i in 0..25 {
                let (pause_ms, what) = {
                    let mut rng = rand::rng();
                    let what = match rng.random_range(0..10) {
                        9 if i >= 20 => Call::Cancel,
                        n if n % 2 == 0 => Call::Pause,
                        _ => Call::Resume,
                    };
                    (rng.random_range(10..300), what)
                };
                // Random moments, not a proof of anything.
                tokio::time::sleep(Duration::from_millis(pause_ms)).await;
                answers.push((g, what, call(&core, id, what).await));
            }
            answers
        }));
    }
    let mut successes = 0;
    for t in tasks {
        for (_, _, ok) in t.await.expect("caller") {
            successes += usize::from(ok.is_some());
        }
    }
    assert!(successes > 0);
    eprintln!(
        "50 control calls: {successes} succeeded, the others refused properly; {} messages so far; {} transient conflicts retried (by any use case in this process)",
        h.campaign_messages(id).await,
        warden_store::tx::retried_total()
    );

    // The successful calls, in commit order (each held the campaign row while writing
    // its audit row): a chain from the start to the final state.
    #[derive(diesel::QueryableByName, Debug)]
    struct Audit {
        #[diesel(sql_type = Text)]
        from_status: String,
        #[diesel(sql_type = Text)]
        to_status: String,
    }
    let mut conn = h.core.pg().get().await.expect("conn");
    let chain: Vec<Audit> = diesel::sql_query(
        "SELECT details->>'from_status' AS from_status, details->>'to_status' AS to_status
         FROM audit_logs WHERE entity_id = $1 AND actor = 'mcp-gateway'
           AND action IN ('campaign_paused', 'campaign_resumed', 'campaign_cancelled')
         ORDER BY id",
    )
    .bind::<Text, _>(id.to_string())
    .load(&mut conn)
    .await
    .expect("audit");
    drop(conn);
    assert_eq!(chain.len(), successes, "one audit row per successful call");
    for w in chain.windows(2) {
        let prev = if w[0].to_status == "running" {
            ["running", "sending"].contains(&w[1].from_status.as_str())
        } else {
            w[1].from_status == w[0].to_status
        };
        assert!(prev, "transitions chain: {chain:?}");
    }
    let last = chain.last().expect("a successful call").to_status.clone();

    // Final state: the last successful call's (or, after a last resume, the end of the run).
    let expect_done = last != "paused";
    if expect_done {
        wait_for(
            Duration::from_secs(240),
            "the audience to be read to its end (or counted as cancelled)",
            || async { h.campaign_row(id).await.audience_done },
        )
        .await;
    } else {
        wait_for(
            Duration::from_secs(60),
            "the paused fan-out to stop",
            || async { h.campaign_row(id).await.lease_owner.is_none() },
        )
        .await;
    }
    stop.store(true, Ordering::SeqCst);
    for t in outcome_tasks {
        assert!(
            t.await.expect("outcomes") > 0,
            "outcomes arrived while the calls ran"
        );
    }
    let c = h.campaign_row(id).await;
    match last.as_str() {
        "paused" => assert_eq!(c.status, "paused"),
        "cancelled" => assert_eq!(c.status, "cancelled"),
        _ => assert!(
            ["running", "completed"].contains(&c.status.as_str()),
            "{}",
            c.status
        ),
    }
    assert_counters_match_rows(&h, id).await;
    let view = warden_core::campaigns::get(h.core.pg(), id)
        .await
        .expect("get");
    let messages = h.campaign_messages(id).await;
    if expect_done {
        assert_eq!(c.total_recipients as i64, AUDIENCE);
        assert_eq!(view.recipients() as i64, AUDIENCE, "counters add up: {c:?}");
    } else {
        // Paused: the recipients reached so far, each once; the rest is still to come.
        assert_eq!(
            (view.recipients() - c.cancelled_count) as i64,
            messages,
            "{c:?}"
        );
    }
    // One message per recipient at most.
    assert_eq!(
        h.count(&format!(
            "SELECT count(DISTINCT customer_phone) AS n FROM messages WHERE campaign_id = '{id}'"
        ))
        .await,
        messages
    );
    running.stop().await;
}

/// How many messages a campaign has once its fan-out has stopped (lease released).
async fn settled_count(h: &Harness, id: Uuid) -> i64 {
    wait_for(Duration::from_secs(60), "the fan-out to stop", || async {
        h.campaign_row(id).await.lease_owner.is_none()
    })
    .await;
    h.campaign_messages(id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pause_and_cancel_answer_when_nothing_more_of_the_campaign_is_queued() {
    let h = harness(true).await;
    let id = h.spring_sale(3000, 0, "running").await;
    let running = h.start(fast_config("fan"));
    let gateway = gateway_core(&h).await;
    wait_for(Duration::from_secs(60), "sends under way", || async {
        h.campaign_messages(id).await >= 200
    })
    .await;
    warden_core::campaigns::pause(gateway.pg(), id, "mcp-gateway")
        .await
        .expect("pause");
    let at_answer = h.campaign_messages(id).await;
    let after = settled_count(&h, id).await;
    assert_eq!(after, at_answer, "queued after the pause answered");
    assert!(after < 3000, "paused mid-run");

    warden_core::campaigns::resume(gateway.pg(), id, "mcp-gateway")
        .await
        .expect("resume");
    wait_for(Duration::from_secs(60), "sends to continue", || async {
        h.campaign_messages(id).await >= after + 200
    })
    .await;
    warden_core::campaigns::cancel(gateway.pg(), id, None, "mcp-gateway")
        .await
        .expect("cancel");
    let at_answer = h.campaign_messages(id).await;
    wait_for(
        Duration::from_secs(60),
        "the rest counted as cancelled",
        || async { h.campaign_row(id).await.audience_done },
    )
    .await;
    let after = h.campaign_messages(id).await;
    assert_eq!(after, at_answer, "queued after the cancel answered");
    let c = h.campaign_row(id).await;
    assert_eq!(c.status, "cancelled");
    assert_eq!(c.total_recipients, 3000);
    assert_eq!(
        c.cancelled_count as i64,
        3000 - after
            + h.count(&format!(
                "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND error_category = 'campaign'"
            ))
            .await
    );
    let view = warden_core::campaigns::get(h.core.pg(), id)
        .await
        .expect("get");
    assert_eq!(view.recipients(), 3000, "counters add up to the audience");
    // Answers after the cancel: terminal, nothing changes.
    assert!(matches!(
        warden_core::campaigns::cancel(gateway.pg(), id, None, "mcp-gateway").await,
        Err(CampaignError::Terminal { .. })
    ));
    assert!(matches!(
        warden_core::campaigns::pause(gateway.pg(), id, "mcp-gateway").await,
        Err(CampaignError::InvalidTransition { .. })
    ));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recipient_sent_then_failed_is_counted_once() {
    let h = harness(false).await;
    let id = h
        .campaign("spring_sale", json!({}), json!({}), "running", Utc::now())
        .await;
    let mut conn = h.core.pg().get().await.expect("conn");
    let mut ids = Vec::new();
    for i in 0..3 {
        let m = Uuid::now_v7();
        diesel::sql_query("INSERT INTO customers (phone) VALUES ($1)")
            .bind::<Text, _>(format!("6281100000{i:03}"))
            .execute(&mut conn)
            .await
            .expect("customer");
        diesel::sql_query(
            "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, campaign_id)
             VALUES ($1, $2, 'whatsapp', 'outbound', 'template', 'marketing', 'queued', $3)",
        )
        .bind::<SqlUuid, _>(m)
        .bind::<Text, _>(format!("6281100000{i:03}"))
        .bind::<SqlUuid, _>(id)
        .execute(&mut conn)
        .await
        .expect("message");
        ids.push(m);
    }
    let error = warden_core::delivery::knowledge::ErrorInfo {
        code: 131026,
        category: "recipient".into(),
        can_retry: false,
        human_explanation: "Message undeliverable.".into(),
        suggested_action: "Check the number.".into(),
    };
    let now = Utc::now();
    use warden_core::delivery::outcomes::apply_status;
    apply_status(&mut conn, ids[0], "sent", now, None, None)
        .await
        .unwrap();
    apply_status(&mut conn, ids[0], "failed", now, None, Some(&error))
        .await
        .unwrap();
    apply_status(&mut conn, ids[1], "read", now, None, None)
        .await
        .unwrap();
    apply_status(&mut conn, ids[1], "delivered", now, None, None)
        .await
        .unwrap();
    drop(conn);
    let c = h.campaign_row(id).await;
    assert_eq!(
        (
            c.sent_count,
            c.delivered_count,
            c.failed_count,
            c.cancelled_count
        ),
        (1, 1, 1, 0),
        "sent-then-failed only in failed; read stays read"
    );
    let view = warden_core::campaigns::get(h.core.pg(), id).await.unwrap();
    assert_eq!(view.pending_count, 1);
    assert_eq!(view.recipients(), 3, "each recipient once");
}
