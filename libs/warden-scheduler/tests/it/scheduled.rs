//! Scheduled messages against real Postgres, Redis and NATS: due vs future, compliance at
//! dispatch, racing schedulers, crash recovery, shutdown.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::*;
use warden_rules::phone::canonicalize;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn due_rows_are_dispatched_and_future_rows_wait() {
    let h = harness(true).await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}} shipped")
        .await;
    let now = Utc::now();
    let mut due = Vec::new();
    for i in 0..3 {
        due.push(
            h.schedule(
                &format!("6281100000{i:03}"),
                "template",
                template_content("order_update", &["A1"]),
                now - TimeDelta::seconds(1),
            )
            .await,
        );
    }
    let mut future = Vec::new();
    for i in 0..2 {
        future.push(
            h.schedule(
                &format!("6281100001{i:03}"),
                "template",
                template_content("order_update", &["A2"]),
                now + TimeDelta::hours(1),
            )
            .await,
        );
    }
    let s = h.scheduler("s1");
    let report = s.tick().await.expect("tick");
    assert_eq!(report.messages_claimed, 3, "{report:?}");
    assert_eq!(report.messages_queued, 3, "{report:?}");
    for id in &due {
        let m = h.published_row(*id).await;
        assert_eq!(m.status, "queued");
        assert!(m.lease_owner.is_none(), "lease cleared");
        assert_eq!(m.category, "utility");
    }
    for id in &future {
        let m = h.message_row(*id).await;
        assert_eq!(m.status, "scheduled");
        assert!(m.lease_owner.is_none(), "future rows are not claimed");
    }
    assert_eq!(h.stream_messages().await, 3);

    // Nothing more to do until the future rows fall due.
    let again = s.tick().await.expect("tick");
    assert_eq!(again.messages_claimed, 0);
    h.exec(
        "UPDATE messages SET deliver_at = now() - interval '1 second' WHERE status = 'scheduled'",
    )
    .await;
    let later = s.tick().await.expect("tick");
    assert_eq!(later.messages_queued, 2, "{later:?}");
    assert_eq!(h.stream_messages().await, 5);
    let text = warden_telemetry::metrics::render();
    for name in [
        "warden_scheduler_due_rows",
        "warden_scheduler_claimed_total",
        "warden_campaign_recipients_total",
        "warden_relay_backlog",
        "warden_relay_published_total",
    ] {
        assert!(text.contains(name), "{name} missing from /metrics");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn refusals_at_dispatch_end_failed_with_a_compliance_error() {
    let h = harness(true).await;
    h.add_template("promo", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    h.add_template("old_promo", "marketing", "REJECTED", "Sale {{1}}")
        .await;
    let past = Utc::now() - TimeDelta::seconds(1);
    // Free-form with no open care window.
    let closed = h
        .schedule("628110000100", "service", text_content("hello"), past)
        .await;
    // Free-form with an open window (an inbound message an hour ago): allowed.
    let open = h
        .schedule("628110000101", "service", text_content("hello"), past)
        .await;
    let open_phone = canonicalize("628110000101").unwrap();
    {
        let mut conn = h.core.pg().get().await.unwrap();
        warden_core::conversations::record_inbound(
            &mut conn,
            &open_phone,
            "whatsapp",
            "default",
            Utc::now() - TimeDelta::hours(1),
        )
        .await
        .unwrap();
    }
    // Opted out of marketing after it was scheduled.
    let opted = h
        .schedule(
            "628110000102",
            "template",
            template_content("promo", &["50%"]),
            past,
        )
        .await;
    h.exec("UPDATE customers SET opt_in_marketing = false WHERE phone = '628110000102'")
        .await;
    // Template no longer approved.
    let rejected = h
        .schedule(
            "628110000103",
            "template",
            template_content("old_promo", &["50%"]),
            past,
        )
        .await;
    // Not a message at all.
    let invalid = h
        .schedule(
            "628110000104",
            "service",
            serde_json::json!({"type": "sticker"}),
            past,
        )
        .await;

    let s = h.scheduler("s1");
    let report = s.tick().await.expect("tick");
    assert_eq!(report.messages_claimed, 5, "{report:?}");
    assert_eq!(report.messages_queued, 1, "{report:?}");
    assert_eq!(report.messages_refused, 3, "{report:?}");
    assert_eq!(report.messages_invalid, 1, "{report:?}");

    assert_eq!(h.message_row(open).await.status, "queued");
    for (id, reason) in [
        (closed, "TEMPLATE_REQUIRED"),
        (opted, "USER_OPTED_OUT"),
        (rejected, "TEMPLATE_NOT_APPROVED"),
    ] {
        let m = h.message_row(id).await;
        assert_eq!(m.status, "failed", "{reason}");
        assert_eq!(m.error_category.as_deref(), Some("compliance"), "{reason}");
        assert_eq!(m.error_can_retry, Some(false));
        let explanation = m.error_explanation.unwrap_or_default();
        assert!(
            explanation.contains(reason),
            "{reason} not named in {explanation:?}"
        );
        assert!(m.failed_at.is_some());
    }
    let m = h.message_row(invalid).await;
    assert_eq!(m.status, "failed");
    assert_eq!(m.error_category.as_deref(), Some("invalid_request"));
    assert!(
        m.error_explanation.unwrap_or_default().contains("sticker"),
        "explains the bad content"
    );
    // Only the allowed one reached the stream.
    assert_eq!(h.stream_messages().await, 1);
    // Nothing is dispatched twice.
    let again = s.tick().await.expect("tick");
    assert_eq!(again.messages_claimed, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_schedulers_racing_dispatch_each_row_once() {
    let h = harness(true).await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}} shipped")
        .await;
    let past = Utc::now() - TimeDelta::seconds(1);
    let n = 400;
    h.exec(&format!(
        "INSERT INTO customers (phone) SELECT '62812' || lpad(i::text, 8, '0') FROM generate_series(1, {n}) i"
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, content, deliver_at)
         SELECT gen_random_uuid(), '62812' || lpad(i::text, 8, '0'), 'whatsapp', 'outbound', 'template', 'utility', 'scheduled',
                '{{\"type\": \"template\", \"template\": {{\"name\": \"order_update\", \"locale\": \"en\", \"variables\": [\"X\"]}}}}'::jsonb,
                '{}'::timestamptz
         FROM generate_series(1, {n}) i",
        past.to_rfc3339()
    ))
    .await;
    let a = h.scheduler("racer-a");
    let b = h.scheduler("racer-b");
    let mut claimed = (0, 0);
    let mut queued = (0, 0);
    for _ in 0..20 {
        let (ra, rb) = tokio::join!(a.tick(), b.tick());
        let (ra, rb) = (ra.expect("tick a"), rb.expect("tick b"));
        claimed.0 += ra.messages_claimed;
        claimed.1 += rb.messages_claimed;
        queued.0 += ra.messages_queued;
        queued.1 += rb.messages_queued;
        if h.count("SELECT count(*) AS n FROM messages WHERE status = 'scheduled'")
            .await
            == 0
        {
            break;
        }
    }
    assert_eq!(
        claimed.0 + claimed.1,
        n,
        "every row claimed exactly once: {claimed:?}"
    );
    assert_eq!(
        queued.0 + queued.1,
        n,
        "every row dispatched exactly once: {queued:?}"
    );
    warden_test_support::wait::until(Duration::from_secs(10), "every published mark", || async {
        h.count("SELECT count(*) AS n FROM messages WHERE status = 'queued' AND published_at IS NOT NULL").await
            == n as i64
    })
    .await;
    // One frequency/count row and one stream message per message, nothing more.
    h.assert_stream_once_each(n as u64).await;
    eprintln!(
        "racer a claimed {}, racer b claimed {}",
        claimed.0, claimed.1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_claim_left_by_a_crashed_scheduler_is_recovered_after_its_lease() {
    let h = harness(true).await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}} shipped")
        .await;
    let past = Utc::now() - TimeDelta::minutes(5);
    let crashed = h
        .schedule(
            "628110000200",
            "template",
            template_content("order_update", &["1"]),
            past,
        )
        .await;
    let live = h
        .schedule(
            "628110000201",
            "template",
            template_content("order_update", &["2"]),
            past,
        )
        .await;
    // The crashed scheduler's lease ran out; the other one is still being worked on.
    h.exec(&format!(
        "UPDATE messages SET lease_owner = 'dead-scheduler', lease_until = now() - interval '1 second' WHERE id = '{crashed}'"
    ))
    .await;
    h.exec(&format!(
        "UPDATE messages SET lease_owner = 'busy-scheduler', lease_until = now() + interval '60 seconds' WHERE id = '{live}'"
    ))
    .await;
    let s = h.scheduler("survivor");
    let report = s.tick().await.expect("tick");
    assert_eq!(report.messages_claimed, 1, "{report:?}");
    assert_eq!(h.message_row(crashed).await.status, "queued");
    let busy = h.message_row(live).await;
    assert_eq!(busy.status, "scheduled", "a live lease is respected");
    assert_eq!(busy.lease_owner.as_deref(), Some("busy-scheduler"));
    // Its lease expires too: then it is taken over.
    h.exec(&format!(
        "UPDATE messages SET lease_until = now() - interval '1 second' WHERE id = '{live}'"
    ))
    .await;
    let report = s.tick().await.expect("tick");
    assert_eq!(report.messages_queued, 1, "{report:?}");
    assert_eq!(h.message_row(live).await.status, "queued");
    assert_eq!(h.stream_messages().await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_background_loop_dispatches_and_stops_releasing_its_leases() {
    let h = harness(true).await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}} shipped")
        .await;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = warden_scheduler::start_with(h.core.clone(), h.config("loop"), async move {
        let _ = rx.await;
    });
    // Scheduled for a moment from now: picked up by a later poll.
    let id = h
        .schedule(
            "628110000300",
            "template",
            template_content("order_update", &["1"]),
            Utc::now() + TimeDelta::milliseconds(300),
        )
        .await;
    wait_for(Duration::from_secs(10), "the loop to dispatch", || async {
        h.message_row(id).await.status == "queued"
    })
    .await;
    // A lease it holds (as if mid-batch) is released on shutdown.
    h.exec("INSERT INTO customers (phone) VALUES ('628110000301') ON CONFLICT DO NOTHING")
        .await;
    let held = h
        .schedule(
            "628110000301",
            "template",
            template_content("order_update", &["1"]),
            Utc::now() + TimeDelta::hours(1),
        )
        .await;
    h.exec(&format!(
        "UPDATE messages SET lease_owner = 'loop', lease_until = now() + interval '60 seconds' WHERE id = '{held}'"
    ))
    .await;
    tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running.task)
        .await
        .expect("stops promptly")
        .unwrap();
    assert!(
        h.message_row(held).await.lease_owner.is_none(),
        "lease released"
    );
}
