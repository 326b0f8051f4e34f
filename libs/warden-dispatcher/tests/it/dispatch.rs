//! The dispatcher in-process against real NATS, Redis, Postgres and platform-sim: sending,
//! each handling class, retries, holds, no double sends, pacing and a graceful stop.

use crate::common;

use std::time::{Duration, Instant};

use common::{Harness, unique_phone};
use serde_json::json;
use warden_test_support::wait;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_text_and_template_and_records_the_wamid_beside_the_id() {
    let h = Harness::new(500).await;
    let (text_to, tpl_to) = (unique_phone(), unique_phone());
    // A customer who wrote earlier: the send moves the conversation's last outbound.
    h.insert_customer(&text_to).await;
    h.sql(&format!(
        "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
         VALUES ('{text_to}', 'whatsapp', now() - interval '1 hour', now() + interval '23 hours')"
    ))
    .await;
    let text = h.insert_text(&text_to).await;
    let tpl = h
        .insert_message(
            &tpl_to,
            json!({"type": "template",
                   "template": {"name": "warden_payment_reminder", "locale": "en",
                                "variables": ["Ana", "IDR 50.000", "1 Dec"]}}),
            None,
            "queued",
        )
        .await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(text, &text_to).await;
    h.publish(tpl, &tpl_to).await;

    for id in [text, tpl] {
        let row = h.wait_status(id, &["sent"], WAIT).await;
        let stat = h.sim.stats().by_message[&id.to_string()].clone();
        assert_eq!(stat.count, 1);
        assert_eq!(
            row.wamid.as_deref(),
            Some(stat.wamid.as_str()),
            "wamid stored beside the id"
        );
        assert_eq!(row.attempt, 1);
        assert!(row.lease_owner.is_none(), "lease cleared");
        assert!(row.sent_at.is_some());
    }
    assert_eq!(
        h.sim.stats().by_recipient[&tpl_to],
        1,
        "template with 3 params accepted"
    );
    assert_eq!(
        h.count_where(&format!(
            "customer_phone = '{text_to}' AND EXISTS (SELECT 1 FROM conversations c
               WHERE c.customer_phone = '{text_to}' AND c.last_outbound_at IS NOT NULL)"
        ))
        .await,
        1,
        "last outbound recorded on the conversation"
    );
    stop.send(()).unwrap();
    d.join().await.unwrap();
    assert_eq!(h.stream_messages().await, 0, "both acked");
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_class_error_is_retried_until_it_succeeds() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    h.sim.fault(&to, 130429, 429, 2);
    let id = h.insert_text(&to).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["sent"], WAIT).await;
    assert_eq!(row.attempt, 3, "two refused attempts, then the send");
    assert_eq!(row.retry_count, 2);
    assert!(
        row.error_code.is_none(),
        "the old error is cleared once sent"
    );
    assert_eq!(h.sim.count(id), 1);
    assert_eq!(d.stats().retried, 2);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spent_attempts_end_failed_with_the_last_error() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    h.sim.fault(&to, 131000, 500, 100);
    let id = h.insert_text(&to).await;
    let mut cfg = h.config();
    cfg.dispatch.max_attempts = 3;
    let (d, stop) = h.dispatcher(cfg).await;
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["failed"], WAIT).await;
    assert_eq!(row.attempt, 3);
    assert_eq!(row.error_code, Some(131000));
    assert_eq!(row.error_can_retry, Some(true));
    let why = row.error_explanation.unwrap();
    assert!(why.starts_with("Gave up after 3 attempts"), "{why}");
    assert_eq!(h.sim.count(id), 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_with_an_unknown_code_is_retried() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    // 503 with a platform code the knowledge base does not know: retried anyway.
    h.sim.fault(&to, 999_001, 503, 1);
    let id = h.insert_text(&to).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["sent"], WAIT).await;
    assert_eq!(row.attempt, 2);
    assert_eq!(h.sim.count(id), 1);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_request_error_fails_at_once_with_its_explanation() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    h.sim.fault(&to, 132000, 400, 1);
    let id = h.insert_text(&to).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["failed"], WAIT).await;
    assert_eq!(row.attempt, 1, "never resent as is");
    assert_eq!(row.error_code, Some(132000));
    assert_eq!(row.error_can_retry, Some(false));
    assert!(row.error_category.is_some_and(|c| !c.is_empty()));
    assert!(
        row.error_explanation
            .is_some_and(|e| e.contains("Platform said"))
    );
    assert!(row.error_suggested_action.is_some_and(|a| !a.is_empty()));
    assert_eq!(d.stats().failed, 1);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_state_errors_record_the_customer_state() {
    let h = Harness::new(500).await;
    let (opted_out, undeliverable, limited) = (unique_phone(), unique_phone(), unique_phone());
    h.sim.fault(&opted_out, 131050, 400, 1);
    h.sim.fault(&undeliverable, 131026, 400, 1);
    h.sim.fault(&limited, 131049, 400, 1);
    let ids = [
        h.insert_text(&opted_out).await,
        h.insert_text(&undeliverable).await,
        h.insert_text(&limited).await,
    ];
    let (d, stop) = h.dispatcher(h.config()).await;
    for (id, to) in ids.iter().zip([&opted_out, &undeliverable, &limited]) {
        h.publish(*id, to).await;
    }
    for (id, code) in ids.iter().zip([131050, 131026, 131049]) {
        let row = h.wait_status(*id, &["failed"], WAIT).await;
        assert_eq!(row.error_code, Some(code));
        assert_eq!(row.attempt, 1);
    }
    let mut c = h.deps.pg.get().await.unwrap();
    let customer = |phone: &str| {
        use diesel::prelude::*;
        warden_store::schema::customers::table
            .find(phone.to_owned())
            .select(warden_store::models::Customer::as_select())
    };
    use diesel_async::RunQueryDsl;
    let c1 = customer(&opted_out).first(&mut c).await.unwrap();
    assert!(!c1.opt_in_marketing, "131050 records a marketing opt-out");
    assert!(c1.opt_in_utility, "utility consent untouched");
    assert!(c1.opt_change_reason.unwrap().contains("platform_131050"));
    let c2 = customer(&undeliverable).first(&mut c).await.unwrap();
    assert!(c2.undeliverable_at.is_some());
    let c3 = customer(&limited).first(&mut c).await.unwrap();
    assert!(c3.marketing_limited_at.is_some());
    drop(c);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halt_error_pauses_campaigns_and_their_messages_stay_queued() {
    let h = Harness::new(500).await;
    let running = h.insert_campaign("running").await;
    let blocked = unique_phone();
    h.sim.fault(&blocked, 131031, 400, 1);
    let id = h.insert_text(&blocked).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(id, &blocked).await;
    let row = h.wait_status(id, &["failed"], WAIT).await;
    assert_eq!(row.error_code, Some(131031));
    assert_eq!(row.error_can_retry, Some(false));

    #[derive(diesel::QueryableByName)]
    struct C {
        #[diesel(sql_type = diesel::sql_types::Text)]
        status: String,
        #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
        status_reason: Option<String>,
    }
    let mut c = h.deps.pg.get().await.unwrap();
    use diesel_async::RunQueryDsl;
    let camp: C = diesel::sql_query("SELECT status, status_reason FROM campaigns WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(running)
        .get_result(&mut c)
        .await
        .unwrap();
    drop(c);
    assert_eq!(camp.status, "paused");
    assert!(camp.status_reason.unwrap().contains("131031"));
    let halts = warden_telemetry::metrics::render();
    assert!(
        halts.contains("warden_dispatcher_halts_total{code=\"131031\"} 1"),
        "halt metric raised"
    );

    // A message of the paused campaign: acknowledged, not sent, still queued.
    let to = unique_phone();
    let held = h
        .insert_message(
            &to,
            json!({"type": "template", "template": {"name": "warden_promo", "locale": "en", "variables": ["Ana"]}}),
            Some(running),
            "queued",
        )
        .await;
    h.publish(held, &to).await;
    wait::until(WAIT, "the stream to drain", || async {
        h.stream_messages().await == 0
    })
    .await;
    assert_eq!(h.row(held).await.status, "queued");
    assert_eq!(h.sim.count(held), 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_messages_move_the_campaign_counters() {
    let h = Harness::new(500).await;
    let campaign = h.insert_campaign("running").await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let to = unique_phone();
        let id = h
            .insert_message(
                &to,
                json!({"type": "template", "template": {"name": "warden_promo", "locale": "en", "variables": ["Ana"]}}),
                Some(campaign),
                "queued",
            )
            .await;
        h.publish(id, &to).await;
        ids.push(id);
    }
    let (d, stop) = h.dispatcher(h.config()).await;
    for id in &ids {
        let row = h.wait_status(*id, &["sent"], WAIT).await;
        assert!(row.wamid.is_some());
    }
    #[derive(diesel::QueryableByName)]
    struct C {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        sent_count: i32,
    }
    let mut c = h.deps.pg.get().await.unwrap();
    use diesel_async::RunQueryDsl;
    let camp: C = diesel::sql_query("SELECT sent_count FROM campaigns WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(campaign)
        .get_result(&mut c)
        .await
        .unwrap();
    drop(c);
    assert_eq!(camp.sent_count, 3);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_campaign_messages_fail_without_a_send() {
    let h = Harness::new(500).await;
    let cancelled = h.insert_campaign("cancelled").await;
    let to = unique_phone();
    let id = h
        .insert_message(
            &to,
            json!({"type": "template", "template": {"name": "warden_promo", "locale": "en", "variables": ["Ana"]}}),
            Some(cancelled),
            "queued",
        )
        .await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["failed"], WAIT).await;
    assert_eq!(row.error_category.as_deref(), Some("campaign"));
    assert!(row.error_explanation.unwrap().contains("cancelled"));
    assert_eq!(h.sim.count(id), 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

/// Wait until the dispatcher has held stream messages (looked at them and decided "not
/// now") at least `n` times in all: the later event after which a test looks for what must
/// not have happened.
async fn wait_held(d: &warden_dispatcher::Dispatcher, n: u64, what: &str) {
    wait::until(Duration::from_secs(30), what, || async {
        d.stats().held >= n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeliveries_are_never_sent_again_and_dead_claims_wait_for_their_webhook() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    cfg.dispatch.unknown_settle = Duration::from_secs(4);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(3600);
    let (d, stop) = h.dispatcher(cfg).await;

    // 1. Sent once, then the same job arrives again (another publish id): no second send.
    let to = unique_phone();
    let id = h.insert_text(&to).await;
    h.publish(id, &to).await;
    h.wait_status(id, &["sent"], WAIT).await;
    h.republish_raw(id).await;

    // A claim left by a dispatcher that died mid-call: `sending`, lease ended `ago`.
    let dead_claim = |ago: &'static str| {
        let h = &h;
        async move {
            let to = unique_phone();
            let id = h
                .insert_message(
                    &to,
                    json!({"type": "text", "text": {"body": "x"}}),
                    None,
                    "sending",
                )
                .await;
            h.sql(&format!(
                "UPDATE messages SET attempt = 1, lease_owner = 'dead', lease_until = now() - interval '{ago}',
                        updated_at = now() - interval '{ago}' - interval '5 seconds'
                 WHERE id = '{id}'"
            ))
            .await;
            h.publish(id, &to).await;
            id
        }
    };
    // 2. Settle period long over and no status webhook, but no webhook has come since the
    //    claim either (they may lag): held. Once statuses emitted after the claim arrive
    //    without its own, the platform never took it, so it goes out, once.
    let held_before = d.stats().held;
    let never_reached = dead_claim("1 minute").await;
    // 3. Lease just ended: held for the settle period; its status webhook comes meanwhile
    //    (written here as the webhook would), so it is never sent again.
    let reached = dead_claim("0 seconds").await;
    wait_held(&d, held_before + 2, "both dead claims to be held").await;
    h.sql(&format!(
        "UPDATE messages SET status = 'sent', wamid = 'wamid.{reached}', sent_at = now(),
                lease_until = NULL, lease_owner = NULL
          WHERE id = '{reached}' AND status = 'sending'"
    ))
    .await;

    // 4. Scheduled for later: the scheduler's business, not sent now.
    let later_to = unique_phone();
    let later = h
        .insert_message(
            &later_to,
            json!({"type": "text", "text": {"body": "x"}}),
            None,
            "scheduled",
        )
        .await;
    h.publish(later, &later_to).await;

    // 5. In flight elsewhere (live lease): held, not sent while the lease lives; that
    //    claimer never finishes, so after lease + settle (and webhook evidence) it is
    //    sent once.
    let busy_to = unique_phone();
    let busy = h
        .insert_message(
            &busy_to,
            json!({"type": "text", "text": {"body": "x"}}),
            None,
            "sending",
        )
        .await;
    h.sql(&format!(
        "UPDATE messages SET attempt = 1, lease_owner = 'other', lease_until = now() + interval '2 seconds'
         WHERE id = '{busy}'"
    ))
    .await;
    let held_before = d.stats().held;
    h.publish(busy, &busy_to).await;
    // The next hold is the live claim's (the dead claims come back after the 4 s settle).
    wait_held(&d, held_before + 1, "the live claim to be held").await;
    assert_eq!(h.sim.count(busy), 0, "not sent while another claim lives");

    // Five holds since then: the live claim has at most three before the dead claim's
    // second look (in flight; when its lease ends; a settle period later), so the first
    // dead claim was looked at again at least twice, past its settle period, with
    // webhooks still lagging.
    wait_held(&d, held_before + 5, "the dead claim to be held again").await;
    assert_eq!(
        h.sim.count(never_reached),
        0,
        "no resend while webhooks lag"
    );
    assert_eq!(h.row(never_reached).await.status, "sending");
    // The webhook server records how far status webhooks have got.
    h.sql(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, now() + interval '1 minute')",
    )
    .await;
    h.wait_status(never_reached, &["sent"], WAIT).await;
    h.wait_status(busy, &["sent"], WAIT).await;
    wait::until(WAIT, "the stream to drain", || async {
        h.stream_messages().await == 0
    })
    .await;
    assert_eq!(h.sim.count(id), 1, "redelivery not sent again");
    assert_eq!(h.sim.count(never_reached), 1, "dead claim resent once");
    assert_eq!(h.row(never_reached).await.attempt, 2);
    assert_eq!(
        h.sim.count(reached),
        0,
        "settled by its webhook, not resent"
    );
    assert_eq!(h.row(reached).await.status, "sent");
    assert_eq!(h.sim.count(busy), 1);
    assert_eq!(h.sim.count(later), 0);
    assert_eq!(h.row(later).await.status, "scheduled");
    assert_eq!(h.sim.stats().duplicates, 0);
    assert_eq!(
        h.count_where(
            "id::text IN (SELECT entity_id FROM audit_logs WHERE action = 'resend_after_unknown_outcome')"
        )
        .await,
        2,
        "each resend leaves an audit row"
    );
    assert!(
        d.stats().held >= 2,
        "the live lease and the settling claim were held, not acknowledged at once"
    );
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_rate_delays_a_second_message_to_the_same_recipient() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    let first = h.insert_text(&to).await;
    let second = h.insert_text(&to).await;
    let other = h.insert_text(&unique_phone()).await;
    let mut cfg = h.config();
    cfg.dispatch.pair_interval = Duration::from_millis(3000);
    let (d, stop) = h.dispatcher(cfg).await;
    h.publish(first, &to).await;
    h.publish(second, &to).await;
    h.publish(other, "x").await;
    let a = h.wait_status(first, &["sent"], WAIT).await.sent_at.unwrap();
    let b = h
        .wait_status(second, &["sent"], WAIT)
        .await
        .sent_at
        .unwrap();
    let o = h.wait_status(other, &["sent"], WAIT).await.sent_at.unwrap();
    // The pair's slots are 3 s apart; `sent_at` is stamped after each platform call, so a
    // slow first call on a loaded machine shortens the gap between stamps by its latency.
    // Unpaced, the two would go out together (a gap of a few ms).
    let gap = (b - a).num_milliseconds().abs();
    assert!(gap >= 2000, "same recipient paced: {gap} ms apart");
    // Not a timing bound (a loaded machine may be slow): the other recipient's message
    // still goes out before the held one. Either of the two may win the pair's slot (they
    // are claimed together); the held one is whichever went second.
    let held = a.max(b);
    assert!(
        o < held,
        "other recipients are not held behind the paced one: first {a}, second {b}, other {o}"
    );
    for id in [first, second] {
        assert_eq!(
            h.row(id).await.attempt,
            1,
            "waiting for the slot is not an attempt"
        );
    }
    assert_eq!(h.sim.stats().by_recipient[&to], 2);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pair_rate_error_backs_off_that_recipient_only() {
    let h = Harness::new(500).await;
    let to = unique_phone();
    h.sim.fault(&to, 131056, 400, 1);
    let id = h.insert_text(&to).await;
    let mut cfg = h.config();
    cfg.dispatch.pair_interval = Duration::from_millis(1000);
    let (d, stop) = h.dispatcher(cfg).await;
    let started = Instant::now();
    h.publish(id, &to).await;
    let row = h.wait_status(id, &["sent"], WAIT).await;
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "131056 waits at least the platform's 6 s pair window: {:?}",
        started.elapsed()
    );
    assert_eq!(row.attempt, 2);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

/// Send `n` messages to distinct recipients; returns their ids.
async fn publish_many(h: &Harness, n: usize) -> Vec<uuid::Uuid> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let to = unique_phone();
        let id = h.insert_text(&to).await;
        h.publish(id, &to).await;
        ids.push(id);
    }
    ids
}

async fn wait_all_sent(h: &Harness, n: usize, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let sent = h.count_where("status = 'sent'").await;
        if sent as usize >= n {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < within,
            "only {sent} of {n} sent within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_dispatchers_share_one_bucket() {
    let mps = 20;
    let h = Harness::new(mps).await;
    let n = 100;
    let ids = publish_many(&h, n).await;
    // Drain the shared bucket first, so only its refill paces the run.
    let drainer =
        warden_ratelimit::TokenBucket::new(h.deps.redis.clone(), &h.bucket_channel, mps, 1);
    while drainer.try_acquire().await == warden_ratelimit::Take::Granted {}
    let started = Instant::now();
    // Small in-flight windows, so neither replica pulls the whole backlog at once.
    let mut cfg = h.config();
    cfg.dispatch.concurrency = 8;
    let (a, stop_a) = h.dispatcher(cfg.clone()).await;
    let (b, stop_b) = h.dispatcher(cfg).await;
    wait_all_sent(&h, n, Duration::from_secs(30)).await;
    let elapsed = started.elapsed().as_secs_f64();
    let rate = n as f64 / elapsed;
    eprintln!(
        "two dispatchers, MPS {mps}: {n} messages in {elapsed:.2} s = {rate:.1} msg/s (a {} / b {})",
        a.stats().sent,
        b.stats().sent
    );
    assert!(
        rate <= f64::from(mps) * 1.05,
        "never above MPS together: {rate:.1}"
    );
    // Fewer is judged loosely: a loaded machine may not keep up with the rate.
    assert!(
        rate >= f64::from(mps) * 0.5,
        "the bucket kept granting: {rate:.1}"
    );
    // A replica counts a send just after recording it: wait for both counters to catch up.
    wait::until(
        Duration::from_secs(10),
        "both replicas' counters to add up to n",
        || async { a.stats().sent + b.stats().sent == n as u64 },
    )
    .await;
    assert!(
        a.stats().sent > 0 && b.stats().sent > 0,
        "both replicas worked"
    );
    for id in ids {
        assert_eq!(h.sim.count(id), 1);
    }
    stop_a.send(()).unwrap();
    stop_b.send(()).unwrap();
    a.join().await.unwrap();
    b.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_it_still_sends_at_most_mps() {
    let mps = 20;
    let h = Harness::with_redis(mps, false).await;
    let n = 60;
    publish_many(&h, n).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    let elapsed = wait_all_sent(&h, n, Duration::from_secs(30))
        .await
        .as_secs_f64();
    let rate = n as f64 / elapsed;
    eprintln!("Redis down, MPS {mps}: {n} messages in {elapsed:.2} s = {rate:.1} msg/s");
    assert!(d.bucket().is_fallback());
    assert!(
        rate <= f64::from(mps) * 1.05,
        "no flood without Redis: {rate:.1} msg/s"
    );
    assert_eq!(h.sim.stats().duplicates, 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_finishes_the_sends_in_flight() {
    let h = Harness::new(500).await;
    h.sim.state.set_latency_ms(1500);
    let ids = publish_many(&h, 5).await;
    let (d, stop) = h.dispatcher(h.config()).await;
    // Wait until the calls are in flight, then stop.
    wait::until(WAIT, "the sends to start", || async {
        h.count_where("status = 'sending'").await >= 5
    })
    .await;
    stop.send(()).unwrap();
    d.join().await.unwrap();
    for id in ids {
        assert_eq!(
            h.row(id).await.status,
            "sent",
            "in-flight send finished before the stop"
        );
    }
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_is_durable_explicit_ack_and_shared() {
    let h = Harness::new(500).await;
    let cfg = h.config();
    let mut c1 = warden_dispatcher::ensure_consumer(&h.stream, &cfg)
        .await
        .unwrap();
    let mut c2 = warden_dispatcher::ensure_consumer(&h.stream, &cfg)
        .await
        .unwrap();
    let i1 = c1.info().await.unwrap().clone();
    let i2 = c2.info().await.unwrap().clone();
    assert_eq!(i1.name, "dispatcher");
    assert_eq!(i1.name, i2.name, "replicas share one durable consumer");
    assert_eq!(i1.config.durable_name.as_deref(), Some("dispatcher"));
    assert_eq!(
        i1.config.ack_policy,
        async_nats::jetstream::consumer::AckPolicy::Explicit
    );
    assert_eq!(i1.config.filter_subject, h.stream.subjects());
    assert_eq!(i1.config.ack_wait, cfg.dispatch.ack_wait);
    assert_eq!(i1.config.max_ack_pending, 1000);
    // A changed ack wait is applied to the existing consumer.
    let mut cfg2 = cfg.clone();
    cfg2.dispatch.ack_wait = Duration::from_secs(7);
    let mut c3 = warden_dispatcher::ensure_consumer(&h.stream, &cfg2)
        .await
        .unwrap();
    assert_eq!(
        c3.info().await.unwrap().config.ack_wait,
        Duration::from_secs(7)
    );
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_waits_for_its_webhook_and_is_never_sent_twice() {
    let h = Harness::new(500).await;
    let mut cfg = h.config();
    cfg.dispatch.platform_timeout = Duration::from_millis(300);
    cfg.dispatch.unknown_settle = Duration::from_secs(1);
    cfg.dispatch.unknown_max_wait = Duration::from_secs(3600);
    h.sim.state.set_latency_ms(1200);
    let (d, stop) = h.dispatcher(cfg).await;
    let to = unique_phone();
    let id = h.insert_text(&to).await;
    h.publish(id, &to).await;

    // The dispatcher gives up after 300 ms: outcome unknown, the lease ends at once.
    wait::until(WAIT, "the call to time out", || async {
        d.stats().retried > 0
    })
    .await;
    h.sim.state.set_latency_ms(0);
    // Several settle periods with no status webhook and no sign that webhooks flow: the
    // platform may have it, so nothing is sent again. Each look at it is a hold (the only
    // message here): four more are four settle periods later.
    let held_before = d.stats().held;
    wait_held(&d, held_before + 4, "four more looks at the timed-out call").await;
    let reached = h.sim.count(id);
    assert!(reached <= 1);
    assert_eq!(h.row(id).await.status, "sending", "held, not requeued");

    if reached == 1 {
        // The sim took the late request: its status webhook settles the row.
        h.sql(&format!(
            "UPDATE messages SET status = 'sent', wamid = 'wamid.{id}', sent_at = now(),
                    lease_until = NULL, lease_owner = NULL
              WHERE id = '{id}' AND status = 'sending'"
        ))
        .await;
    }
    // Later statuses arrive (the webhook server's progress mark): a call that never reached
    // the platform is resent now; one that did was settled above and is not.
    h.sql(
        "INSERT INTO webhook_progress (id, status_through) VALUES (1, now() + interval '1 minute')",
    )
    .await;
    h.wait_status(id, &["sent"], WAIT).await;
    wait::until(WAIT, "the stream to drain", || async {
        h.stream_messages().await == 0
    })
    .await;
    assert_eq!(h.sim.count(id), 1, "exactly one send reached the platform");
    assert_eq!(h.sim.stats().duplicates, 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
