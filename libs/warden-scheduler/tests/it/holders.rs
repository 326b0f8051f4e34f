//! Shared numbers (docs/compliance.md, "Shared numbers"): a campaign skips the recipients
//! a person or another app holds, and counts them; a scheduled message is checked against
//! the holder again when it comes due.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::*;
use serde_json::json;
use warden_core::conversations::holder::{self, Change};
use warden_rules::holder::HolderKind;
use warden_rules::phone::canonicalize;

/// A person holds the conversation of `phone` with the default sender (a hand-off).
async fn hold(h: &Harness, phone: &str) {
    let p = canonicalize(phone).unwrap();
    let mut c = h.core.pg().get().await.unwrap();
    holder::set(
        &mut c,
        &p,
        "whatsapp",
        "default",
        &Change {
            to: HolderKind::Human,
            until: None,
            by: "test",
            reason: "a test hand-off",
            actor: "test",
        },
        Utc::now(),
    )
    .await
    .unwrap();
}

/// The customer wrote an hour ago: the care window is open.
async fn wrote(h: &Harness, phone: &str) {
    h.exec(&format!(
        "INSERT INTO customers (phone) VALUES ('{phone}') ON CONFLICT DO NOTHING"
    ))
    .await;
    h.exec(&format!(
        "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
         VALUES ('{phone}', 'whatsapp', now() - interval '1 hour', now() + interval '23 hours')"
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_skips_the_held_recipient_only_and_counts_it() {
    let h = harness(true).await;
    h.add_template("spring_sale", "marketing", "APPROVED", SALE_BODY)
        .await;
    h.add_customers(1, 3, 0, 0, 0).await;
    let held = "6281100000002";
    hold(&h, held).await;
    let id = h
        .campaign(
            "spring_sale",
            json!({"1": "20%"}),
            json!({}),
            "scheduled",
            Utc::now() - TimeDelta::seconds(1),
        )
        .await;
    let s = h.scheduler("s1");
    for _ in 0..100 {
        s.tick().await.expect("tick");
        if h.campaign_row(id).await.audience_done {
            break;
        }
    }
    let c = h.campaign_row(id).await;
    assert!(c.audience_done, "{c:?}");
    assert_eq!(c.total_recipients, 3, "{c:?}");
    assert_eq!(c.failed_count, 1, "the held recipient is counted: {c:?}");
    assert_eq!(c.enqueued_count, 2, "{c:?}");
    let refused = h
        .text(&format!(
            "SELECT customer_phone AS t FROM messages WHERE campaign_id = '{id}'
               AND status = 'failed' AND error_category = 'compliance'
               AND error_explanation LIKE 'CONVERSATION_HELD%'"
        ))
        .await;
    assert_eq!(refused.as_deref(), Some(held), "only the held recipient");
    let queued = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status = 'queued'
               AND customer_phone <> '{held}'"
        ))
        .await;
    assert_eq!(queued, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scheduled_reply_is_checked_against_the_holder_when_it_comes_due() {
    let h = harness(true).await;
    let (free, held) = ("6281200000001", "6281200000002");
    for p in [free, held] {
        wrote(&h, p).await;
    }
    let text = json!({"type": "text", "text": {"body": "Your order shipped"}});
    let due = Utc::now() - TimeDelta::seconds(1);
    let to_free = h.schedule(free, "service", text.clone(), due).await;
    let to_held = h.schedule(held, "service", text, due).await;
    // A person took the conversation over after the message was scheduled.
    hold(&h, held).await;
    let s = h.scheduler("s1");
    let mut ticks = 0;
    while h.message_row(to_held).await.status == "scheduled"
        || h.message_row(to_free).await.status == "scheduled"
    {
        s.tick().await.expect("tick");
        ticks += 1;
        assert!(ticks < 100, "scheduled messages never came due");
    }
    assert_eq!(h.message_row(to_free).await.status, "queued");
    let m = h.message_row(to_held).await;
    assert_eq!(m.status, "failed", "{m:?}");
    assert_eq!(m.error_category.as_deref(), Some("compliance"));
    assert!(
        m.error_explanation
            .as_deref()
            .is_some_and(|e| e.starts_with("CONVERSATION_HELD")),
        "{m:?}"
    );
    let audits = h
        .count("SELECT count(*) AS n FROM audit_logs WHERE action = 'holder_changed'")
        .await;
    assert_eq!(audits, 1, "the hand-off is audited once");
}
