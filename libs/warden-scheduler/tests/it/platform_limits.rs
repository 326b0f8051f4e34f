//! Platform limits in the scheduler's two send paths: a campaign that reaches the
//! portfolio's messaging limit pauses with reason `messaging_limit` and resumes; a scheduled
//! message beyond it waits for a free slot; quiet hours with `action: hold` delay a
//! scheduled message and a campaign batch to the end of the quiet period, check them again
//! when due, and send them once it is over.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Timelike, Utc};
use common::*;
use serde_json::json;
use warden_rules::policy::QuietHours;

async fn learn(h: &Harness, limit: &str) {
    assert!(
        warden_core::account::portfolio::learn_from_platform(
            h.core.pg(),
            "default",
            limit,
            "get_account_quality",
            "test"
        )
        .await
        .expect("learn")
    );
}

fn clock(t: chrono::DateTime<Utc>) -> String {
    format!("{:02}:{:02}", t.hour(), t.minute())
}

/// A running utility campaign to `customers` imported customers under the messaging limit
/// `limit`, after one scheduler tick that paused it at the limit.
async fn campaign_paused_at_limit(
    customers: i64,
    limit: &str,
) -> (Harness, warden_scheduler::Scheduler, uuid::Uuid) {
    let h = harness(false).await;
    h.add_template("notice", "utility", "APPROVED", "Hello {{1}}")
        .await;
    h.add_customers(1, customers, 0, 0, 0).await;
    learn(&h, limit).await;
    let id = h
        .campaign(
            "notice",
            json!({"1": "Ana"}),
            json!({}),
            "running",
            Utc::now(),
        )
        .await;
    let s = h.scheduler(&format!("limits-{limit}"));
    let r = s.tick().await.expect("tick");
    assert_eq!(r.campaigns_paused_by_limit, 1, "{r:?}");
    (h, s, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_pauses_at_the_messaging_limit_and_resumes() {
    let (h, s, id) = campaign_paused_at_limit(10, "4").await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.status, "paused");
    let reason = c.status_reason.unwrap_or_default();
    assert!(reason.starts_with("messaging_limit"), "{reason}");
    assert_eq!(
        h.campaign_messages(id).await,
        4,
        "exactly the limit was reached"
    );
    h.ticks_enqueue_nothing(&s, 2).await;

    // A scheduled message to a customer not reached yet waits for a free slot (held, not
    // failed); the slot frees 24 h after the oldest reach.
    let m = h
        .schedule(
            "6281299990000",
            "template",
            template_content("notice", &["Ana"]),
            Utc::now(),
        )
        .await;
    let r = s.tick().await.expect("tick");
    assert_eq!(r.messages_held, 1, "{r:?}");
    let row = h.message_row(m).await;
    assert_eq!(row.status, "scheduled");
    assert!(
        row.deliver_at
            .is_some_and(|t| t > Utc::now() + TimeDelta::hours(23)),
        "{:?}",
        row.deliver_at
    );
    assert_eq!(
        h.text(&format!(
            "SELECT reason AS t FROM message_holds WHERE message_id = '{m}'"
        ))
        .await
        .as_deref(),
        Some("messaging_limit")
    );

    // A higher limit and resume_campaign: the rest of the audience goes out (ten, and the
    // customer the scheduled message added).
    learn(&h, "TIER_2K").await;
    warden_core::campaigns::resume(h.core.pg(), id, "test")
        .await
        .expect("resume");
    warden_test_support::wait::until(Duration::from_secs(60), "the whole audience", || async {
        s.tick().await.expect("tick");
        h.campaign_messages(id).await == 11
    })
    .await;
    assert_ne!(h.campaign_row(id).await.status, "paused");
}

/// Message ids of campaign `id`.
async fn campaign_message_ids(h: &Harness, id: uuid::Uuid) -> Vec<uuid::Uuid> {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use warden_store::schema::messages;
    let mut c = h.core.pg().get().await.expect("conn");
    messages::table
        .filter(messages::campaign_id.eq(id))
        .select(messages::id)
        .load(&mut c)
        .await
        .expect("ids")
}

/// How many of `ids` the dispatcher may claim now (claimed for a test dispatcher).
async fn claimable(h: &Harness, ids: &[uuid::Uuid]) -> usize {
    warden_core::delivery::claim::claim_many(
        h.core.pg(),
        ids,
        "test-dispatcher",
        Duration::from_secs(60),
    )
    .await
    .expect("claim")
    .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_at_the_limit_sends_up_to_it_then_pauses() {
    // The platform's tier event says 50; 53 customers; nobody reached yet.
    let (h, s, id) = campaign_paused_at_limit(53, "TIER_50").await;
    assert_eq!(h.campaign_row(id).await.status, "paused");
    let accepted = campaign_message_ids(&h, id).await;
    assert_eq!(accepted.len(), 50, "exactly the limit was accepted");

    // What was accepted within the limit goes out although the campaign is paused: the
    // dispatcher may claim every one of them.
    let claimed = claimable(&h, &accepted).await;
    assert_eq!(
        claimed, 50,
        "accepted messages of a campaign the limit paused are sent"
    );

    // A pause by hand holds what is still queued.
    let id2 = h
        .campaign(
            "notice",
            json!({"1": "Ana"}),
            json!({}),
            "running",
            Utc::now(),
        )
        .await;
    learn(&h, "TIER_UNLIMITED").await;
    s.tick().await.expect("tick");
    warden_core::campaigns::pause(h.core.pg(), id2, "test")
        .await
        .expect("pause");
    let queued = campaign_message_ids(&h, id2).await;
    assert!(!queued.is_empty());
    let claimed = claimable(&h, &queued).await;
    assert!(
        claimed == 0,
        "a campaign paused by hand holds its queued messages"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quiet_hours_hold_delays_scheduled_and_campaign_messages_to_their_end() {
    // Quiet from an hour ago until two minutes from now (UTC), action hold.
    let now = Utc::now();
    let (start, end) = (
        clock(now - TimeDelta::hours(1)),
        clock(now + TimeDelta::minutes(2)),
    );
    let policies = format!(
        "version: 1\npolicies:\n  - id: quiet_now\n    type: quiet_hours\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: UTC\n    action: hold\n"
    );
    let h = harness_with(false, &policies).await;
    h.add_template("notice", "utility", "APPROVED", "Hello {{1}}")
        .await;
    let phone = "6281299990001";
    let ends = QuietHours::new(&start, &end, "UTC")
        .unwrap()
        .ends_after(
            &warden_rules::phone::canonicalize(phone).unwrap(),
            Utc::now(),
        )
        .expect("quiet now");
    let m = h
        .schedule(
            phone,
            "template",
            template_content("notice", &["Ana"]),
            Utc::now(),
        )
        .await;
    h.add_customers(1, 3, 0, 0, 0).await;
    let id = h
        .campaign(
            "notice",
            json!({"1": "Ana"}),
            json!({}),
            "running",
            Utc::now(),
        )
        .await;
    let s = h.scheduler("quiet-1");
    let r = s.tick().await.expect("tick");
    // The campaign's audience: three customers and the scheduled message's.
    assert_eq!((r.messages_held, r.recipients_held), (1, 4), "{r:?}");
    assert_eq!(r.messages_refused + r.recipients_refused, 0, "{r:?}");
    // Every one waits `scheduled` until the end of the quiet period.
    let held = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages m JOIN message_holds h ON h.message_id = m.id
             WHERE m.status = 'scheduled' AND h.reason = 'quiet_now'
               AND m.deliver_at = '{}'::timestamptz AND (m.id = '{m}' OR m.campaign_id = '{id}')",
            ends.to_rfc3339()
        ))
        .await;
    assert_eq!(held, 5);
    assert_eq!(h.campaign_messages(id).await, 4);
    assert_ne!(
        h.campaign_row(id).await.status,
        "completed",
        "held recipients keep the campaign open"
    );

    // Due again while still quiet: checked again and held again.
    h.exec("UPDATE messages SET deliver_at = now() WHERE status = 'scheduled'")
        .await;
    let r = s.tick().await.expect("tick");
    assert_eq!(r.messages_held, 5, "{r:?}");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM message_holds WHERE holds = 2")
            .await,
        5
    );

    // Once the quiet period is over they go out.
    warden_test_support::wait::until(
        Duration::from_secs(240),
        "the quiet period to end",
        || async { Utc::now() > ends },
    )
    .await;
    let r = s.tick().await.expect("tick");
    assert_eq!(r.messages_queued, 5, "{r:?}");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE status = 'queued' AND (id = '{m}' OR campaign_id = '{id}')"
        ))
        .await,
        5
    );
}
