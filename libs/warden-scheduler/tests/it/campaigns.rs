//! Campaigns against real Postgres, Redis and NATS: exact counters, filters, completion,
//! pause/resume/cancel mid-run, crash-safe resumption, a bad campaign.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::*;
use serde_json::json;
use uuid::Uuid;
use warden_scheduler::Config;

async fn run_until_audience_done(h: &Harness, s: &warden_scheduler::Scheduler, id: Uuid) {
    for _ in 0..500 {
        s.tick().await.expect("tick");
        if h.campaign_row(id).await.audience_done {
            return;
        }
    }
    panic!("audience not done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_of_thousands_counts_exactly_and_completes() {
    let h = harness(true).await;
    h.add_template("spring_sale", "marketing", "APPROVED", SALE_BODY)
        .await;
    // 3,000 customers: every 10th opted out of marketing, every 25th tagged churned
    // (excluded by the filter), every 40th tagged vip (refused by the skip_vip policy).
    h.add_customers(1, 3000, 10, 25, 40).await;
    // Someone outside the 62811 range who is not in the audience.
    h.exec("INSERT INTO customers (phone, tags) VALUES ('14155550100', '{churned}')")
        .await;
    let id = h
        .campaign(
            "spring_sale",
            json!({"1": "20%"}),
            json!({"exclude_tags": ["churned"]}),
            "scheduled",
            Utc::now() - TimeDelta::seconds(1),
        )
        .await;
    let audience = h
        .count("SELECT count(*) AS n FROM customers WHERE NOT ('churned' = ANY(tags))")
        .await;
    let refused_expected = h
        .count(
            "SELECT count(*) AS n FROM customers WHERE NOT ('churned' = ANY(tags))
             AND (NOT opt_in_marketing OR 'vip' = ANY(tags))",
        )
        .await;
    assert_eq!(audience, 3000 - 120);
    let s = h.scheduler("s1");
    let first = s.tick().await.expect("tick");
    assert_eq!(first.campaigns_started, 1);
    assert_eq!(h.campaign_row(id).await.status, "running");
    run_until_audience_done(&h, &s, id).await;

    let c = h.campaign_row(id).await;
    let enqueued_expected = audience - refused_expected;
    assert_eq!(c.total_recipients as i64, audience, "{c:?}");
    assert_eq!(
        c.failed_count as i64, refused_expected,
        "refused recipients count as failed"
    );
    assert_eq!(c.enqueued_count as i64, enqueued_expected);
    assert_eq!(c.enqueued_count + c.failed_count, c.total_recipients);
    assert!(c.lease_owner.is_none());
    assert_eq!(c.status, "running", "still waiting for delivery outcomes");
    // Exactly one message per recipient, none for the excluded.
    let q = format!("SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}'");
    assert_eq!(h.count(&q).await, audience);
    let q = format!(
        "SELECT count(DISTINCT customer_phone) AS n FROM messages WHERE campaign_id = '{id}'"
    );
    assert_eq!(h.count(&q).await, audience);
    let q = format!(
        "SELECT count(*) AS n FROM messages m JOIN customers c ON c.phone = m.customer_phone
         WHERE m.campaign_id = '{id}' AND 'churned' = ANY(c.tags)"
    );
    assert_eq!(h.count(&q).await, 0);
    // Refusals carry the reason.
    let q = format!(
        "SELECT count(*) AS n FROM messages m JOIN customers c ON c.phone = m.customer_phone
         WHERE m.campaign_id = '{id}' AND m.status = 'failed' AND m.error_category = 'compliance'
           AND NOT c.opt_in_marketing AND m.error_explanation LIKE 'USER_OPTED_OUT%'"
    );
    let opted_out = h
        .count("SELECT count(*) AS n FROM customers WHERE NOT ('churned' = ANY(tags)) AND NOT opt_in_marketing")
        .await;
    assert_eq!(h.count(&q).await, opted_out);
    // The chunks' published marks follow their publish batches.
    h.core.flush_publishes().await;
    let q = format!(
        "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status = 'queued'
         AND published_at IS NOT NULL AND template_name = 'spring_sale'
         AND content->'template'->'variables' = '[\"20%\"]'::jsonb"
    );
    assert_eq!(h.count(&q).await, enqueued_expected);
    // Every chunk's publish batch closed with its acks.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM message_handoffs").await,
        0
    );
    assert_eq!(h.stream_messages().await as i64, enqueued_expected);

    // Delivery outcomes arrive (the dispatcher and webhook record them; here in bulk):
    // the campaign completes once every recipient has a final outcome.
    // (The counters follow the rows by themselves: the counter triggers.)
    let sent_all_but_one = format!(
        "UPDATE messages SET status = 'sent', sent_at = now()
         WHERE id IN (SELECT id FROM messages WHERE campaign_id = '{id}' AND status = 'queued'
                      ORDER BY id OFFSET 1)"
    );
    h.exec(&sent_all_but_one).await;
    s.tick().await.expect("tick");
    assert_eq!(
        h.campaign_row(id).await.status,
        "running",
        "one still in flight"
    );
    let last: Uuid = h
        .text(&format!(
            "SELECT id::text AS t FROM messages WHERE campaign_id = '{id}' AND status = 'queued'"
        ))
        .await
        .unwrap()
        .parse()
        .unwrap();
    let mut conn = h.core.pg().get().await.unwrap();
    warden_core::delivery::outcomes::apply_status(&mut conn, last, "sent", Utc::now(), None, None)
        .await
        .unwrap();
    drop(conn);
    s.tick().await.expect("tick");
    let c = h.campaign_row(id).await;
    assert_eq!(c.status, "completed");
    assert_eq!(c.sent_count as i64, enqueued_expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audience_filters_select_in_sql() {
    let h = harness(true).await;
    h.add_template("note", "utility", "APPROVED", "Note {{1}} {{2}}")
        .await;
    h.add_customers(1, 400, 7, 5, 0).await;
    h.exec("UPDATE customers SET opt_in_utility = false WHERE right(phone, 1) = '3'")
        .await;
    h.exec("UPDATE customers SET last_interaction_at = NULL WHERE right(phone, 1) = '9'")
        .await;
    let s = h.scheduler("s1");
    // include any-of + opt_in utility + active within 10 days.
    let filter =
        json!({"include_tags": ["churned", "nope"], "opt_in": "utility", "active_within_days": 10});
    let id = h
        .campaign(
            "note",
            json!({"1": "a", "2": "b"}),
            filter,
            "running",
            Utc::now(),
        )
        .await;
    let expected = h
        .count(
            "SELECT count(*) AS n FROM customers WHERE 'churned' = ANY(tags) AND opt_in_utility
             AND last_interaction_at >= now() - interval '10 days'",
        )
        .await;
    assert!(expected > 10);
    run_until_audience_done(&h, &s, id).await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.total_recipients as i64, expected);
    assert_eq!(
        c.failed_count, 0,
        "utility is not refused for marketing opt-outs"
    );
    // customer_ids: exactly those.
    let id2 = h
        .campaign(
            "note",
            json!({"1": "a", "2": "b"}),
            json!({"customer_ids": ["+62 811 0000 0001", "6281100000002", "999999999"]}),
            "running",
            Utc::now(),
        )
        .await;
    run_until_audience_done(&h, &s, id2).await;
    assert_eq!(h.campaign_row(id2).await.total_recipients, 2);
    // A bad filter fails the campaign with the reason, nothing is sent.
    let bad = h
        .campaign(
            "note",
            json!({"1": "a", "2": "b"}),
            json!({"segment": "x"}),
            "running",
            Utc::now(),
        )
        .await;
    s.tick().await.expect("tick");
    let c = h.campaign_row(bad).await;
    assert_eq!(c.status, "failed");
    assert!(c.status_reason.unwrap_or_default().contains("segment"));
}

fn slow_config(owner: &str) -> Config {
    Config {
        page_size: 100,
        concurrency: 2,
        ..test_config(owner)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pause_stops_sends_at_once_and_resume_continues_where_it_left() {
    let h = harness(true).await;
    let id = h.spring_sale(1500, 0, "scheduled").await;
    let running = h.start(slow_config("p1"));
    h.wait_under_way(id, 200, Duration::from_secs(30)).await;
    h.exec(&format!(
        "UPDATE campaigns SET status = 'paused', paused_at = now() WHERE id = '{id}'"
    ))
    .await;
    // At most the sends in flight finish after the pause: the fan-out releases the lease
    // once they have.
    wait_for(
        Duration::from_secs(10),
        "the lease to be released on pause",
        || async { h.campaign_row(id).await.lease_owner.is_none() },
    )
    .await;
    let at_pause = h.campaign_messages(id).await;
    // Later polls of the same scheduler (besides its own loop) send nothing.
    h.ticks_enqueue_nothing(running.scheduler(), 3).await;
    assert_eq!(
        h.campaign_messages(id).await,
        at_pause,
        "nothing sent while paused"
    );
    assert!(at_pause < 1500, "paused mid-run ({at_pause})");
    let c = h.campaign_row(id).await;
    assert!(!c.audience_done);
    assert!(c.lease_owner.is_none(), "lease released on pause");
    // The dispatcher acknowledges a paused campaign's messages without sending them:
    // they leave the stream.
    h.purge_stream().await;

    // Resume (what resume_campaign does).
    let resumed_at = Utc::now();
    h.exec(&format!(
        "UPDATE campaigns SET status = 'running' WHERE id = '{id}'"
    ))
    .await;
    wait_for(
        Duration::from_secs(60),
        "the audience to be done",
        || async { h.campaign_row(id).await.audience_done },
    )
    .await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.total_recipients, 1500);
    assert_eq!(c.enqueued_count, 1500);
    assert_eq!(
        h.count(&format!(
            "SELECT count(DISTINCT customer_phone) AS n FROM messages WHERE campaign_id = '{id}'"
        ))
        .await,
        1500,
        "one message per recipient, no duplicates"
    );
    assert_eq!(h.campaign_messages(id).await, 1500);
    // The messages held while paused were republished after the resume: every message is
    // in the stream exactly once (held ones under a new de-duplication id).
    wait_for(
        Duration::from_secs(10),
        "held messages to be republished",
        || async {
            h.count(&format!(
                "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}'
             AND published_at < '{}'::timestamptz",
                resumed_at.to_rfc3339()
            ))
            .await
                == 0
        },
    )
    .await;
    h.assert_stream_once_each(1500).await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_stops_the_rest_and_fails_what_was_not_sent() {
    let h = harness(true).await;
    let id = h.spring_sale(1500, 10, "running").await;
    let running = h.start(slow_config("c1"));
    h.wait_under_way(id, 200, Duration::from_secs(30)).await;
    // One message already at the platform (sending) is not recalled.
    let sending: Option<String> = h
        .text(&format!(
            "UPDATE messages SET status = 'sending' WHERE id = (SELECT id FROM messages
             WHERE campaign_id = '{id}' AND status = 'queued' LIMIT 1) RETURNING id::text AS t"
        ))
        .await;
    h.exec(&format!(
        "UPDATE campaigns SET status = 'cancelled' WHERE id = '{id}'"
    ))
    .await;
    wait_for(
        Duration::from_secs(10),
        "queued messages to be failed",
        || async {
            h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status = 'queued'"
        ))
        .await
            == 0
        },
    )
    .await;
    // The fan-out counts the never-queued recipients as cancelled once the sends in
    // flight have finished.
    wait_for(
        Duration::from_secs(10),
        "the never-queued recipients to be counted as cancelled",
        || async { h.campaign_row(id).await.audience_done },
    )
    .await;
    let total = h.campaign_messages(id).await;
    // Later polls of the same scheduler (besides its own loop) send nothing.
    h.ticks_enqueue_nothing(running.scheduler(), 3).await;
    assert_eq!(
        h.campaign_messages(id).await,
        total,
        "nothing sent after cancel"
    );
    assert!(total < 1500, "cancelled mid-run ({total})");
    let c = h.campaign_row(id).await;
    assert_eq!(c.status, "cancelled");
    let cancelled = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status = 'failed'
             AND error_category = 'campaign' AND error_explanation LIKE 'campaign cancelled%'"
        ))
        .await;
    let refused = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}' AND status = 'failed'
             AND error_category = 'compliance'"
        ))
        .await;
    assert!(cancelled > 0);
    assert!(refused > 0);
    assert_eq!(
        cancelled + refused + 1,
        total,
        "everything but the one at the platform failed"
    );
    // Each recipient once, in its latest state: refused ones failed, the queued and the
    // never-queued ones cancelled, the one at the platform pending.
    assert_eq!(c.failed_count as i64, refused, "refusals in failed_count");
    assert_eq!(
        c.cancelled_count as i64,
        cancelled + (1500 - total),
        "queued and never-queued recipients in cancelled_count"
    );
    assert_eq!(c.sent_count, 0);
    assert_eq!(c.total_recipients, 1500);
    assert_eq!(
        c.sent_count + c.failed_count + c.cancelled_count + 1,
        c.total_recipients,
        "counters add up to the audience"
    );
    let still = h
        .text(&format!(
            "SELECT status AS t FROM messages WHERE id = '{}'",
            sending.unwrap()
        ))
        .await;
    assert_eq!(still.as_deref(), Some("sending"));
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_fan_out_cut_short_resumes_without_second_messages() {
    let h = harness(true).await;
    let id = h.spring_sale(600, 0, "running").await;
    // A scheduler "crashed" mid-page: some recipients of the page after its cursor got a
    // message, its lease expired, the cursor was never advanced.
    let crashed = h.scheduler("crashed");
    for i in [1, 2, 3, 50, 51, 120] {
        let phone = warden_rules::phone::canonicalize(&format!("62811{i:08}")).unwrap();
        crashed
            .core()
            .send(warden_core::SendRequest {
                sender: None,
                phone,
                channel: "whatsapp".into(),
                kind: warden_core::SendKind::Template(warden_core::TemplateSend {
                    name: "spring_sale".into(),
                    locale: "en".into(),
                    variables: vec!["20%".into()],
                    ..Default::default()
                }),
                message_type: warden_rules::kinds::MessageType::Template,
                campaign_id: Some(id),
                existing_message_id: None,
                refusal: warden_core::RefusalMode::RecordFailed,
                actor: "scheduler",
            })
            .await
            .unwrap();
    }
    h.exec(&format!(
        "UPDATE campaigns SET lease_owner = 'crashed', lease_until = now() - interval '1 second' WHERE id = '{id}'"
    ))
    .await;
    let s = h.scheduler("survivor");
    run_until_audience_done(&h, &s, id).await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.total_recipients, 600);
    assert_eq!(
        c.enqueued_count, 600,
        "exact even though a page was cut short"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(DISTINCT customer_phone) AS n FROM messages WHERE campaign_id = '{id}'"
        ))
        .await,
        600
    );
    assert_eq!(h.campaign_messages(id).await, 600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_campaign_nobody_can_receive_fails() {
    let h = harness(true).await;
    // Everyone opted out.
    let id = h.spring_sale(50, 1, "scheduled").await;
    let s = h.scheduler("s1");
    run_until_audience_done(&h, &s, id).await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.status, "failed");
    assert_eq!(c.failed_count, 50);
    assert_eq!(c.enqueued_count, 0);
    assert_eq!(h.stream_messages().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_schedulers_share_campaigns_without_double_sends() {
    let h = harness(true).await;
    let a_id = h.spring_sale(1200, 0, "scheduled").await;
    let b_id = h
        .campaign(
            "spring_sale",
            json!({"1": "30%"}),
            json!({"include_tags": ["nobody"]}),
            "scheduled",
            Utc::now(),
        )
        .await;
    // One publishes page by page, the other lets Core::send publish each message.
    let a = h.scheduler("a");
    let b = warden_scheduler::Scheduler::new(
        h.core.clone(),
        Config {
            batch_publish: false,
            ..test_config("b")
        },
    );
    for _ in 0..100 {
        let (ra, rb) = tokio::join!(a.tick(), b.tick());
        ra.expect("a");
        rb.expect("b");
        if h.campaign_row(a_id).await.audience_done && h.campaign_row(b_id).await.audience_done {
            break;
        }
    }
    // The frequency cap (2 a day) would refuse a third; here each customer got one per campaign.
    assert_eq!(h.campaign_row(a_id).await.total_recipients, 1200);
    assert_eq!(h.campaign_row(b_id).await.total_recipients, 0);
    assert_eq!(h.campaign_messages(a_id).await, 1200);
    h.assert_stream_once_each(1200).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_mid_campaign_stops_promptly_and_another_scheduler_finishes() {
    let h = harness(true).await;
    let id = h.spring_sale(1500, 0, "running").await;
    let running = h.start(slow_config("first"));
    h.wait_under_way(id, 200, Duration::from_secs(30)).await;
    running.stop_within(Duration::from_secs(5)).await;
    let at_stop = h.campaign_messages(id).await;
    let c = h.campaign_row(id).await;
    assert!(c.lease_owner.is_none(), "lease released at shutdown");
    assert!(
        !c.audience_done && at_stop < 1500,
        "stopped mid-run ({at_stop})"
    );
    // The loop has ended; no write of it is still on its way to the database.
    h.wait_database_quiet().await;
    assert_eq!(h.campaign_messages(id).await, at_stop);
    // Every accepted message was published before the stop.
    assert_eq!(h.stream_messages().await as i64, at_stop);
    // Another scheduler takes over at once (no lease to wait for) and finishes exactly.
    let s = h.scheduler("second");
    run_until_audience_done(&h, &s, id).await;
    let c = h.campaign_row(id).await;
    assert_eq!(c.total_recipients, 1500);
    assert_eq!(c.enqueued_count, 1500);
    assert_eq!(h.campaign_messages(id).await, 1500);
    h.assert_stream_once_each(1500).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customer_ids_never_seen_are_customers_like_a_first_send_makes_them() {
    let h = harness(false).await;
    h.add_template("notice", "utility", "APPROVED", "Hello {{1}}")
        .await;
    // Numbers that never wrote and were never imported.
    let ids = ["6281290000001", "+62 812-9000-0002", "6281290000003"];
    let new = warden_core::campaigns::create::NewCampaign {
        name: "first contact".into(),
        campaign_type: warden_core::campaigns::create::CampaignType::Utility,
        template_name: "notice".into(),
        locale: "en".into(),
        variables: vec!["Ana".into()],
        named_variables: vec![],
        components: vec![],
        audience_filter: serde_json::json!({"customer_ids": ids}),
        deliver_at: chrono::Utc::now(),
    };
    let id = warden_core::campaigns::create::schedule_campaign(h.core.pg(), new, "test")
        .await
        .expect("scheduled");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM customers WHERE phone LIKE '62812900000%'")
            .await,
        3,
        "the named customers exist from scheduling on"
    );
    let s = h.scheduler("first-contact");
    warden_test_support::wait::until(
        std::time::Duration::from_secs(60),
        "every recipient",
        || async {
            s.tick().await.expect("tick");
            h.campaign_messages(id).await == 3
        },
    )
    .await;
    let c = h.campaign_row(id).await;
    assert_ne!(c.status, "failed", "{:?}", c.status_reason);
    assert_eq!(c.failed_count, 0);
}
