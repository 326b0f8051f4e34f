//! The publish relay against real Postgres and NATS: messages accepted while NATS was
//! down are published once it is back; lost stream messages are republished; paused
//! campaigns' messages are left alone.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::*;
use serde_json::json;
use warden_scheduler::{Config, Scheduler};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sends_accepted_while_nats_was_down_are_all_published_later() {
    let h = harness(true).await;
    h.add_template("spring_sale", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}}")
        .await;
    h.add_customers(1, 700, 0, 0, 0).await;
    let campaign = h
        .campaign(
            "spring_sale",
            json!({"1": "x"}),
            json!({}),
            "scheduled",
            Utc::now(),
        )
        .await;
    let scheduled = h
        .schedule(
            "628110009999",
            "template",
            template_content("order_update", &["1"]),
            Utc::now() - TimeDelta::seconds(1),
        )
        .await;
    // NATS is down: the scheduler's Core has no stream at all.
    let offline = h.core_with_stream(false).await;
    let s = Scheduler::new(offline, test_config("offline"));
    for _ in 0..50 {
        s.tick().await.expect("tick");
        if h.campaign_row(campaign).await.audience_done {
            break;
        }
    }
    // The audience is everyone: the 700 and the scheduled message's customer.
    assert_eq!(h.campaign_row(campaign).await.enqueued_count, 701);
    assert_eq!(h.message_row(scheduled).await.status, "queued");
    // Never published: no mark, or (the campaign's) in a publish batch the stream never
    // acknowledged.
    let unpublished = "SELECT count(*) AS n FROM messages m WHERE status = 'queued'
        AND (published_at IS NULL
             OR EXISTS (SELECT 1 FROM message_handoffs h WHERE m.id = ANY (h.message_ids)))";
    assert_eq!(h.count(unpublished).await, 702, "accepted, not published");
    assert_eq!(
        h.count(
            "SELECT count(*) AS n FROM messages WHERE status = 'queued' AND published_at IS NULL"
        )
        .await,
        1,
        "the scheduled message has no mark; the campaign's are in their publish batches"
    );
    assert_eq!(h.stream_messages().await, 0);

    // NATS is back: the relay publishes every one of them, once.
    let online = Scheduler::new(h.core.clone(), test_config("online"));
    let mut published = 0;
    for _ in 0..10 {
        let r = online.tick().await.expect("tick");
        published += r.relay_published;
        if h.count(unpublished).await == 0 {
            break;
        }
    }
    assert_eq!(h.count(unpublished).await, 0);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM message_handoffs").await,
        0,
        "publish batches closed"
    );
    assert_eq!(published, 702);
    assert_eq!(h.stream_messages().await, 702);
    // Republishing again changes nothing in the stream (de-duplicated by message id).
    h.exec("UPDATE messages SET published_at = NULL").await;
    online.tick().await.expect("tick");
    assert_eq!(h.stream_messages().await, 702);
    assert_eq!(
        warden_scheduler::metrics::RELAY_BACKLOG.get(),
        702,
        "gauge read before the relay ran"
    );
    online.tick().await.expect("tick");
    assert_eq!(warden_scheduler::metrics::RELAY_BACKLOG.get(), 0);

    // A publish batch left open although the stream took its messages (the process died
    // before it read the acks): the relay publishes them again under their first ids, the
    // stream keeps one copy of each, and the batch closes.
    h.exec(&format!(
        "INSERT INTO message_handoffs (message_ids, created_at)
         SELECT array_agg(id), now() - interval '1 hour' FROM messages
          WHERE campaign_id = '{campaign}'"
    ))
    .await;
    let r = online.tick().await.expect("tick");
    assert_eq!(r.relay_published, 701);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM message_handoffs").await,
        0
    );
    assert_eq!(h.stream_messages().await, 702);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lost_stream_messages_are_republished_but_not_those_still_in_the_stream() {
    let h = harness(true).await;
    h.add_template("order_update", "utility", "APPROVED", "Order {{1}}")
        .await;
    let past = Utc::now() - TimeDelta::seconds(1);
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(
            h.schedule(
                &format!("62811000{i:04}"),
                "template",
                template_content("order_update", &["1"]),
                past,
            )
            .await,
        );
    }
    let config = Config {
        relay_stale_after: Duration::from_millis(400),
        ..test_config("s1")
    };
    let s = Scheduler::new(h.core.clone(), config);
    s.tick().await.expect("tick");
    assert_eq!(h.stream_messages().await, 20);
    // Still in the stream (no dispatcher has taken them): old, but not lost. (Older than
    // `relay_stale_after`, and the check's own interval, half of it, has passed too.)
    h.wait_published_older_than(Duration::from_millis(600))
        .await;
    let r = s.tick().await.expect("tick");
    assert_eq!(r.relay_published, 0, "{r:?}");
    // The stream loses them (acknowledged without a send, or a lost stream): republished
    // under new de-duplication ids, so JetStream takes them although it still remembers
    // the first publishes. The next poll whose lost-message check runs (at most every
    // half `relay_stale_after`) republishes all of them.
    h.purge_stream().await;
    assert_eq!(h.stream_messages().await, 0);
    let r = warden_test_support::wait::until_some(
        Duration::from_secs(10),
        "a poll that republishes the lost messages",
        || async {
            let r = s.tick().await.expect("tick");
            (r.relay_published > 0).then_some(r)
        },
    )
    .await;
    assert_eq!(r.relay_published, 20, "{r:?}");
    h.assert_stream_once_each(20).await;
    // Republished once: the next check finds them in the stream again.
    h.wait_published_older_than(Duration::from_millis(600))
        .await;
    let r = s.tick().await.expect("tick");
    assert_eq!(r.relay_published, 0, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_relay_leaves_paused_and_cancelled_campaigns_alone() {
    let h = harness(true).await;
    h.add_template("spring_sale", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    h.add_customers(1, 100, 0, 0, 0).await;
    let paused = h
        .campaign(
            "spring_sale",
            json!({"1": "x"}),
            json!({}),
            "running",
            Utc::now(),
        )
        .await;
    let offline = Scheduler::new(h.core_with_stream(false).await, test_config("offline"));
    for _ in 0..10 {
        offline.tick().await.expect("tick");
    }
    assert!(h.campaign_row(paused).await.audience_done);
    h.exec(&format!(
        "UPDATE campaigns SET status = 'paused' WHERE id = '{paused}'"
    ))
    .await;
    let online = Scheduler::new(h.core.clone(), test_config("online"));
    let r = online.tick().await.expect("tick");
    assert_eq!(r.relay_published, 0, "held while paused: {r:?}");
    assert_eq!(h.stream_messages().await, 0);
    // Resumed: published.
    h.exec(&format!(
        "UPDATE campaigns SET status = 'running' WHERE id = '{paused}'"
    ))
    .await;
    let r = online.tick().await.expect("tick");
    assert_eq!(r.relay_published + r.resumed_republished, 100, "{r:?}");
    assert_eq!(h.stream_messages().await, 100);
}
