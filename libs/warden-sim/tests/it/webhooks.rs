//! Webhook delivery: retries while the receiver is down, the bounded queue, batching, and
//! no webhooks without a URL.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;
use warden_platform::signature;
use warden_platform::webhook::Change;

#[tokio::test]
async fn webhooks_are_retried_while_the_receiver_answers_503() {
    let rx = receiver(3).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    sim.send(&text("628123", "x", Some("m-retry"))).await;
    let changes = rx
        .wait_for("delivery after retries", |c| c.len() >= 3)
        .await;
    assert_eq!(changes.len(), 3, "delivered once, not duplicated");
    assert_eq!(rx.hits(), 4);
    let w = sim.get("/sim/webhooks").await;
    assert_eq!(w["delivered"], 3);
    assert_eq!(w["failed_posts"], 3);
    assert_eq!(w["webhooks_dropped"], 0);
}

#[tokio::test]
async fn webhooks_reach_a_receiver_that_was_down_at_first() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/webhook");
    let sim = start_sim(config(Some(url))).await;
    sim.send(&text("628123", "x", Some("m-late"))).await;
    sim.control("inbound", &json!({"from": "628123", "text": "hello"}))
        .await;
    // Attempts fail on the closed port (and nothing counts as delivered).
    let w = failed_post(&sim).await;
    assert_eq!(w["delivered"], 0);

    let rx = receiver_on(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap(), 0);
    let changes = rx.wait_for("late delivery", |c| c.len() >= 4).await;
    // Order is kept: the statuses first, then the inbound message.
    let Change::Messages(last) = &changes[3] else {
        panic!()
    };
    assert_eq!(last.messages[0].text_body(), Some("hello"));
    for r in rx.received() {
        assert!(signature::verify(
            APP_SECRET.as_bytes(),
            &r.body,
            r.signature.as_deref().unwrap()
        ));
    }
}

#[tokio::test]
async fn the_webhook_queue_is_bounded_and_counts_drops() {
    let port = free_port();
    let mut cfg = config(Some(format!("http://127.0.0.1:{port}/webhook")));
    cfg.webhook_queue = 10;
    let sim = start_sim(cfg).await;
    for i in 0..20 {
        sim.send(&text("628123", "x", Some(format!("m{i}").as_str())))
            .await;
    }
    let w = sim.get("/sim/webhooks").await;
    assert_eq!(w["enqueued"], 60);
    assert!(w["queued"].as_u64().unwrap() <= 10, "{w}");
    // 60 changes, at most 10 queued and one batch in flight: the rest were dropped.
    let dropped = w["webhooks_dropped"].as_u64().unwrap();
    let in_flight = w["in_flight"].as_u64().unwrap();
    assert_eq!(
        dropped + w["queued"].as_u64().unwrap() + in_flight,
        60,
        "{w}"
    );
    assert!(dropped >= 40, "{w}");
    let metrics = sim
        .http
        .get(format!("{}/metrics", sim.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("sim_webhooks_dropped_total {dropped}")),
        "{metrics}"
    );
}

#[tokio::test]
async fn webhooks_are_batched_when_many_are_pending() {
    // The receiver is down while 40 sends queue 120 changes; once it is up they
    // arrive in POSTs of at most 100 changes.
    let port = free_port();
    let sim = start_sim(config(Some(format!("http://127.0.0.1:{port}/webhook")))).await;
    for i in 0..40 {
        sim.send(&text("628123", "x", Some(format!("m{i}").as_str())))
            .await;
    }
    failed_post(&sim).await;
    let rx = receiver_on(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap(), 0);
    rx.wait_for("all statuses", |c| c.len() >= 120).await;
    let sizes: Vec<usize> = rx
        .received()
        .iter()
        .map(|r| r.envelope().changes().count())
        .collect();
    assert!(sizes.iter().all(|&n| n <= 100), "{sizes:?}");
    assert!(sizes.iter().any(|&n| n > 3), "{sizes:?}");
    assert_eq!(sizes.iter().sum::<usize>(), 120);
}

#[tokio::test]
async fn without_a_webhook_url_nothing_is_sent() {
    let sim = start_sim(config(Some("  ".into()))).await;
    assert_eq!(sim.send(&text("628123", "x", None)).await.0, 200);
    let (_, v) = sim
        .control("inbound", &json!({"from": "628123", "text": "x"}))
        .await;
    assert_eq!(v["webhook_queued"], false);
    let w = sim.get("/sim/webhooks").await;
    assert_eq!(w["enabled"], false);
}

/// Wait until the sim reports a failed webhook POST (its receiver is down); its stats.
async fn failed_post(sim: &TestSim) -> Value {
    warden_test_support::wait::until_some(
        Duration::from_secs(30),
        "a failed webhook POST",
        || async {
            let w = sim.get("/sim/webhooks").await;
            (w["failed_posts"].as_u64().unwrap_or(0) >= 1).then_some(w)
        },
    )
    .await
}
