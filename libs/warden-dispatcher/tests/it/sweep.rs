//! Unknown outcomes that no stream message drives any more, against real Postgres, NATS
//! and the sim: the sweep settles them by the dispatcher's own rule, once across
//! replicas; and a delivery that lost its row to another replica never acknowledges the
//! stream message away.

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, unique_phone};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_dispatcher::sweep::{Sweep, SweepReport};

const WAIT: Duration = Duration::from_secs(60);

/// A queued text row turned into a claim whose dispatcher died: `sending`, owned by a
/// process that is gone, lease ended `ended_secs_ago`, claimed 2 s before that; no
/// stream message.
async fn dead_claim(h: &Harness, ended_secs_ago: u32) -> Uuid {
    let to = unique_phone();
    let id = h.insert_text(&to).await;
    h.sql(&format!(
        "UPDATE messages SET status = 'sending', attempt = 1, lease_owner = 'dead-replica',
                lease_until = now() - interval '{ended_secs_ago} seconds',
                updated_at = now() - interval '{} seconds'
          WHERE id = '{id}'",
        ended_secs_ago + 2
    ))
    .await;
    id
}

#[derive(QueryableByName)]
struct N {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn audit_rules(h: &Harness, id: Uuid) -> Vec<String> {
    #[derive(QueryableByName)]
    struct Rule {
        #[diesel(sql_type = Text)]
        rule: String,
    }
    let mut c = h.deps.pg.get().await.unwrap();
    diesel::sql_query(
        "SELECT COALESCE(details->>'rule', '') AS rule FROM audit_logs
          WHERE action = 'resend_after_unknown_outcome' AND entity_id = $1",
    )
    .bind::<Text, _>(id.to_string())
    .load::<Rule>(&mut c)
    .await
    .unwrap()
    .into_iter()
    .map(|r| r.rule)
    .collect()
}

fn unknown_events(event: &str) -> u64 {
    prometheus::gather()
        .iter()
        .filter(|f| f.name() == "warden_dispatcher_unknown_outcomes_total")
        .flat_map(|f| f.get_metric())
        .filter(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "event" && l.value() == event)
        })
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_settles_sending_rows_no_stream_message_drives() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    cfg.dispatch.unknown_settle = Duration::from_secs(1);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(4);
    cfg.dispatch.ack_wait = Duration::from_secs(2);
    cfg.dispatch.sweep_interval = Duration::from_millis(300);

    // Quiet: nothing was sent after it, so no webhook evidence will ever come.
    let quiet = dead_claim(&h, 1).await;
    // The platform took it: its status webhook arrives while it is held.
    let reached = dead_claim(&h, 0).await;
    // Another replica's live claim: not touched.
    let to_live = unique_phone();
    let live = h.insert_text(&to_live).await;
    h.sql(&format!(
        "UPDATE messages SET status = 'sending', attempt = 1, lease_owner = 'live-replica',
                lease_until = now() + interval '1 hour' WHERE id = '{live}'"
    ))
    .await;
    let started = Instant::now();
    let (d, stop) = h.dispatcher(cfg.clone()).await;

    // Both dead claims become held unknown outcomes (the sweep marks them).
    let deadline = Instant::now() + WAIT;
    while h
        .count_where(&format!(
            "id IN ('{quiet}', '{reached}') AND unknown_since IS NOT NULL"
        ))
        .await
        < 2
        || unknown_events("held") < 2
    {
        assert!(Instant::now() < deadline, "dead claims never marked");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The webhook's effect for the one the platform took.
    h.sql(&format!(
        "UPDATE messages SET status = 'sent', wamid = 'wamid.{reached}', sent_at = now(),
                lease_until = NULL, lease_owner = NULL
          WHERE id = '{reached}' AND status = 'sending'"
    ))
    .await;

    // The quiet one is resent within the rule's bound (max wait after its lease ended),
    // exactly once, and ends sent.
    h.wait_status(quiet, &["sent"], WAIT).await;
    let bound = warden_dispatcher::sweep::settle_bound(&cfg);
    eprintln!(
        "quiet dead claim sent {:.1} s after the dispatcher started (bound from its claim: {:?})",
        started.elapsed().as_secs_f64(),
        bound
    );
    assert_eq!(h.sim.count(quiet), 1);
    assert_eq!(audit_rules(&h, quiet).await, vec!["resent_on_max_wait"]);
    assert!(unknown_events("resent_on_max_wait") >= 1);

    // The settled one is counted as resolved and never sent.
    let deadline = Instant::now() + WAIT;
    while h
        .count_where(&format!("id = '{reached}' AND unknown_since IS NOT NULL"))
        .await
        > 0
        || unknown_events("resolved_by_webhook") < 1
    {
        assert!(Instant::now() < deadline, "resolution never counted");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        h.sim.count(reached),
        0,
        "settled by its webhook, not resent"
    );
    assert!(audit_rules(&h, reached).await.is_empty());

    // Evidence: statuses emitted well after its claim arrived without its own.
    let evidence = dead_claim(&h, 30).await;
    h.sql(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, now())
           ON CONFLICT (id) DO UPDATE SET status_through = now()",
    )
    .await;
    h.wait_status(evidence, &["sent"], WAIT).await;
    assert_eq!(h.sim.count(evidence), 1);
    assert_eq!(audit_rules(&h, evidence).await, vec!["resent_on_evidence"]);

    let row = h.row(live).await;
    assert_eq!(row.status, "sending");
    assert_eq!(row.lease_owner.as_deref(), Some("live-replica"));
    assert_eq!(h.sim.count(live), 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_sweeping_at_once_resend_each_row_once() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    cfg.dispatch.unknown_settle = Duration::from_secs(1);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(2);
    let mut ids = Vec::new();
    for _ in 0..40 {
        ids.push(dead_claim(&h, 10).await);
    }
    // Four replicas' sweeps at the same moment, twice each.
    let sweep = Sweep::new(&cfg);
    let mut total = SweepReport::default();
    for _ in 0..2 {
        let runs =
            futures::future::join_all((0..4).map(|_| sweep.run_once(&h.deps.pg, &h.stream))).await;
        for r in runs {
            let r = r.expect("sweep runs");
            total.held += r.held;
            total.resent_on_max_wait += r.resent_on_max_wait;
            total.resent_on_evidence += r.resent_on_evidence;
            total.published += r.published;
        }
    }
    // One more run finds nothing left to do.
    let again = sweep.run_once(&h.deps.pg, &h.stream).await.unwrap();
    assert_eq!(again, SweepReport::default());
    assert_eq!(total.held, 40, "{total:?}");
    assert_eq!(total.resent_on_max_wait, 40, "{total:?}");
    assert_eq!(total.resent_on_evidence, 0);
    assert_eq!(total.published, 40);
    assert_eq!(h.stream_messages().await, 40, "one stream message per row");
    assert_eq!(
        h.count_where("status = 'queued' AND unknown_since IS NULL")
            .await,
        40
    );
    let mut c = h.deps.pg.get().await.unwrap();
    let audits: N = diesel::sql_query(
        "SELECT count(DISTINCT entity_id) AS n FROM audit_logs WHERE action = 'resend_after_unknown_outcome'",
    )
    .get_result(&mut c)
    .await
    .unwrap();
    assert_eq!(audits.n, 40);
    drop(c);
    // A dispatcher sends each of them once.
    let (d, stop) = h.dispatcher(cfg).await;
    for id in &ids {
        h.wait_status(*id, &["sent"], WAIT).await;
    }
    for id in &ids {
        assert_eq!(h.sim.count(*id), 1);
    }
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

/// The race behind rows left `sending` for good: this delivery's call timed out after
/// another replica had taken the claim over (it runs the same stream message). Ending the
/// lease fails; acknowledging then would take the message from under the replica now
/// driving the row. It must be put back instead, and the row settle once that replica dies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_that_lost_its_claim_puts_the_message_back() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    // The dispatcher's own path only: no sweep to rescue the row.
    cfg.dispatch.sweep_interval = Duration::ZERO;
    cfg.dispatch.platform_timeout = Duration::from_millis(800);
    cfg.dispatch.unknown_settle = Duration::from_secs(1);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(3600);
    h.sim.state.set_latency_ms(4000);
    let (d, stop) = h.dispatcher(cfg.clone()).await;
    let to = unique_phone();
    let id = h.insert_text(&to).await;
    h.publish(id, &to).await;

    // Claimed by this dispatcher, call under way...
    let deadline = Instant::now() + WAIT;
    while h
        .count_where(&format!(
            "id = '{id}' AND status = 'sending' AND lease_owner = '{}'",
            cfg.owner
        ))
        .await
        == 0
    {
        assert!(Instant::now() < deadline, "never claimed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...when another replica takes the claim over (its lease lasts 3 s).
    h.sql(&format!(
        "UPDATE messages SET lease_owner = 'other-replica', lease_until = now() + interval '3 seconds'
          WHERE id = '{id}'"
    ))
    .await;
    // The call times out; the delivery finds the row is not its own any more.
    let deadline = Instant::now() + WAIT;
    while d.stats().held == 0 && d.stats().skipped == 0 {
        assert!(Instant::now() < deadline, "the call never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        d.stats().skipped,
        0,
        "acknowledged while the row is `sending`"
    );
    assert_eq!(
        h.stream_messages().await,
        1,
        "the stream message is still there"
    );
    h.sim.state.set_latency_ms(0);

    // The other replica dies; webhooks show later statuses without this one's: the held
    // stream message brings the row to its resend, and it ends sent.
    h.sql(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, now() + interval '1 minute')
           ON CONFLICT (id) DO UPDATE SET status_through = now() + interval '1 minute'",
    )
    .await;
    h.wait_status(id, &["sent"], WAIT).await;
    let deadline = Instant::now() + WAIT;
    while h.stream_messages().await > 0 {
        assert!(
            Instant::now() < deadline,
            "stream message never acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(h.sim.count(id) >= 1);
    assert_eq!(audit_rules(&h, id).await, vec!["resent_on_evidence"]);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

/// A status-webhook backlog still draining (progress moving forward, not yet past the
/// claim) keeps an unknown outcome waiting past the max wait: its own status may be in the
/// backlog. Once webhooks are quiet (`WEBHOOKS_QUIET`), the max wait resends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_max_wait_waits_for_a_draining_webhook_backlog() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    cfg.dispatch.unknown_settle = Duration::from_secs(1);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(2);
    let id = dead_claim(&h, 10).await;
    // Webhooks arriving, still a minute behind the claim: the trigger stamps advanced_at.
    h.sql(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, now() - interval '2 minutes')
         ON CONFLICT (id) DO UPDATE SET status_through = now() - interval '2 minutes'",
    )
    .await;
    h.sql("UPDATE webhook_progress SET advanced_at = now() - interval '1 hour'")
        .await;
    h.sql("UPDATE webhook_progress SET status_through = now() - interval '1 minute'")
        .await;
    assert_eq!(
        h.count_where(&format!(
            "id = '{id}' AND EXISTS (SELECT 1 FROM webhook_progress
                                    WHERE advanced_at > now() - interval '30 seconds')"
        ))
        .await,
        1,
        "moving progress forward stamps advanced_at"
    );
    let sweep = Sweep::new(&cfg);
    let r = sweep.run_once(&h.deps.pg, &h.stream).await.unwrap();
    assert_eq!(r.held, 1);
    assert_eq!(r.resent_on_max_wait, 0, "backlog draining: wait for it");
    assert_eq!(h.row(id).await.status, "sending");
    // A write that does not move it forward leaves the stamp alone.
    h.sql("UPDATE webhook_progress SET advanced_at = now() - interval '40 seconds'")
        .await;
    h.sql("UPDATE webhook_progress SET status_through = status_through - interval '1 second'")
        .await;
    // Quiet for longer than WEBHOOKS_QUIET now: the max wait applies.
    let r = sweep.run_once(&h.deps.pg, &h.stream).await.unwrap();
    assert_eq!(r.resent_on_max_wait, 1, "{r:?}");
    assert_eq!(h.row(id).await.status, "queued");
    assert_eq!(audit_rules(&h, id).await, vec!["resent_on_max_wait"]);
    h.cleanup().await;
}
