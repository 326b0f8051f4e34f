//! Every event kind end to end into Postgres, replays, out-of-order statuses, batches,
//! and several replicas on one database.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};
use uuid::Uuid;

async fn flags(c: &mut AsyncPgConnection, phone: &str) -> String {
    text(
        c,
        &format!(
            "SELECT opt_in_marketing::text || '|' || opt_in_utility::text AS v FROM customers WHERE phone = '{phone}'"
        ),
    )
    .await
}

async fn status_of(c: &mut AsyncPgConnection, id: Uuid) -> String {
    text(
        c,
        &format!(
            "SELECT status || '|' || coalesce(wamid, '-') AS v FROM messages WHERE id = '{id}'"
        ),
    )
    .await
}

async fn template_row(c: &mut AsyncPgConnection, name: &str) -> String {
    text(
        c,
        &format!(
            "SELECT status || '|' || coalesce(rejection_reason, '-') || '|' || coalesce(platform_id, '-') AS v
             FROM templates WHERE name = '{name}'"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_message_creates_customer_opens_window_and_stores_the_message() {
    let h = Harness::start().await;
    let from = phone();
    let ts = now() - 3600;
    let id = wamid();
    // The platform sends the number without '+'; any accepted spelling finds one customer.
    h.deliver(&inbound(&format!("+{from}"), "Hi there", ts, &id))
        .await;

    let mut c = h.conn().await;
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM customers WHERE phone = '{from}' AND opt_in_marketing AND opt_in_utility")).await,
        1
    );
    assert_eq!(
        count(&mut c, &format!(
            "SELECT count(*) AS n FROM conversations WHERE customer_phone = '{from}' AND channel = 'whatsapp'
             AND extract(epoch FROM last_inbound_at)::bigint = {ts}
             AND extract(epoch FROM window_expires_at)::bigint = {}", ts + 86_400)).await,
        1,
        "window opened from the message's own timestamp"
    );
    assert_eq!(
        count(
            &mut c,
            &format!(
                "SELECT count(*) AS n FROM customers WHERE phone = '{from}'
             AND extract(epoch FROM last_interaction_at)::bigint = {ts}"
            )
        )
        .await,
        1
    );
    let row = text(
        &mut c,
        &format!(
            "SELECT direction || '|' || status || '|' || message_type || '|' || (content->'text'->>'body') AS v
             FROM messages WHERE wamid = '{id}'"
        ),
    )
    .await;
    assert_eq!(row, "inbound|received|text|Hi there");

    // The window is visible through the core (cache written through after commit).
    let p = warden_rules::phone::canonicalize(&from).unwrap();
    let view = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    assert!(view.window_open);
    assert_eq!(view.last_inbound_at.unwrap().timestamp(), ts);

    // An older message arriving late never shortens the window.
    h.deliver(&inbound(&from, "earlier", ts - 7200, &wamid()))
        .await;
    let view = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    assert_eq!(view.last_inbound_at.unwrap().timestamp(), ts);
    assert_eq!(
        count(
            &mut c,
            &format!("SELECT count(*) AS n FROM messages WHERE customer_phone = '{from}'")
        )
        .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_and_start_keywords_change_consent() {
    let h = Harness::start().await;
    let from = phone();
    h.deliver(&inbound(&from, "  stop ", now(), &wamid())).await;
    let mut c = h.conn().await;
    assert_eq!(flags(&mut c, &from).await, "false|false");
    assert_eq!(
        count(&mut c, &format!(
            "SELECT count(*) AS n FROM audit_logs WHERE entity_id = '{from}' AND action = 'customer_opted_out'
             AND details->>'source' = 'stop_keyword' AND actor = 'webhook'")).await,
        1
    );
    // Not a keyword: a sentence containing one.
    h.deliver(&inbound(&from, "please start sending", now(), &wamid()))
        .await;
    assert_eq!(flags(&mut c, &from).await, "false|false");
    h.deliver(&inbound(&from, "START", now(), &wamid())).await;
    assert_eq!(flags(&mut c, &from).await, "true|true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_move_forward_only_and_record_the_wamid() {
    let h = Harness::start().await;
    let to = phone();
    let mut c = h.conn().await;
    let id = outbound_message(&mut c, &to, "sending", None, None).await;
    let w = wamid();

    // Matched by biz_opaque_callback_data = message_id; the wamid is stored beside it.
    h.deliver(&status(&w, "sent", &to, Some(&id.to_string()), None))
        .await;
    assert_eq!(status_of(&mut c, id).await, format!("sent|{w}"));
    // How far status webhooks have got (the dispatcher's evidence for unknown outcomes).
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM webhook_progress WHERE status_through > now() - interval '1 minute'").await,
        1
    );
    // Then by wamid alone.
    h.deliver(&status(&w, "read", &to, None, None)).await;
    assert_eq!(status_of(&mut c, id).await, format!("read|{w}"));
    // A late delivered never moves read back; delivered_at is still learnt.
    h.deliver(&status(&w, "delivered", &to, None, None)).await;
    assert_eq!(status_of(&mut c, id).await, format!("read|{w}"));
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM messages WHERE id = '{id}' AND read_at IS NOT NULL AND sent_at IS NOT NULL")).await,
        1
    );

    // failed after sent is accepted, with the explained error.
    let id2 = outbound_message(&mut c, &to, "sent", Some(&wamid()), None).await;
    let w2 = text(
        &mut c,
        &format!("SELECT wamid AS v FROM messages WHERE id = '{id2}'"),
    )
    .await;
    h.deliver(&status(
        &w2,
        "failed",
        &to,
        None,
        Some(platform_error(131026)),
    ))
    .await;
    let row = text(
        &mut c,
        &format!(
            "SELECT status || '|' || error_code::text || '|' || error_category || '|' || error_can_retry::text
                    || '|' || (length(error_explanation) > 10)::text AS v
             FROM messages WHERE id = '{id2}'"
        ),
    )
    .await;
    assert!(row.starts_with("failed|131026|"), "{row}");
    assert!(row.ends_with("|true"), "explanation stored: {row}");
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM customers WHERE phone = '{to}' AND undeliverable_at IS NOT NULL")).await,
        1,
        "131026 marks the contact undeliverable"
    );
    // failed after read is not accepted.
    h.deliver(&status(
        &w,
        "failed",
        &to,
        None,
        Some(platform_error(131000)),
    ))
    .await;
    assert_eq!(status_of(&mut c, id).await, format!("read|{w}"));

    // Statuses of unknown messages are acknowledged and ignored.
    h.deliver(&status(&wamid(), "delivered", &to, None, None))
        .await;
    h.deliver(&status(
        &wamid(),
        "delivered",
        &to,
        Some(&Uuid::new_v4().to_string()),
        None,
    ))
    .await;
    h.deliver(&status(&wamid(), "sent", &to, Some("not-a-uuid"), None))
        .await;
}

/// What a status leaves on a message row (times as whether they are set).
async fn row_state(c: &mut AsyncPgConnection, id: Uuid) -> String {
    text(
        c,
        &format!(
            "SELECT status || '|' || coalesce(wamid, '-') || '|' || (sent_at IS NOT NULL)::text
                    || '|' || (delivered_at IS NOT NULL)::text || '|' || (read_at IS NOT NULL)::text
                    || '|' || (failed_at IS NOT NULL)::text || '|' || coalesce(error_code::text, '-')
                    || '|' || (next_attempt_at IS NOT NULL)::text || '|' || (lease_owner IS NOT NULL)::text AS v
             FROM messages WHERE id = '{id}'"
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posts_statuses_applied_together_leave_the_rows_one_post_per_status_would() {
    // The webhook applies a POST's sent/delivered/read statuses together (each row locked
    // and written once); a failed status and every other status of its message in place.
    // The same statuses, one POST each on one set of messages and all in one POST on a
    // copy of them, must leave the same rows.
    let h = Harness::start().await;
    let mut c = h.conn().await;
    // (initial status, initial wamid?, earlier attempt's error?, statuses in platform order)
    let cases: &[(&str, bool, bool, &[&str])] = &[
        ("sending", false, false, &["sent", "delivered", "read"]),
        ("sending", false, false, &["read", "sent", "delivered"]),
        (
            "sent",
            true,
            false,
            &["delivered", "sent", "read", "delivered"],
        ),
        ("queued", false, true, &["sent", "delivered"]),
        ("sending", false, false, &["sent", "failed"]),
        ("sending", false, false, &["delivered", "failed", "read"]),
        ("read", true, false, &["delivered", "sent"]),
        ("sending", false, false, &["deleted", "delivered"]),
    ];
    let mut pairs = Vec::new();
    let mut one_post = Vec::new();
    for (initial, with_wamid, errored, statuses) in cases {
        let to = phone();
        let (mut ids, mut initial_wamids) = (Vec::new(), Vec::new());
        for _ in 0..2 {
            let w = with_wamid.then(wamid);
            let id = outbound_message(&mut c, &to, initial, w.as_deref(), None).await;
            initial_wamids.push(w.unwrap_or_default());
            if *errored {
                diesel::sql_query(
                    "UPDATE messages SET error_code = 131000, error_category = 'platform',
                            next_attempt_at = now() - interval '1 second', lease_owner = 'd1'
                      WHERE id = $1",
                )
                .bind::<SqlUuid, _>(id)
                .execute(&mut c)
                .await
                .unwrap();
            }
            ids.push(id);
        }
        let (single, batched) = (ids[0], ids[1]);
        let (ws, wb) = (wamid(), wamid());
        let item = |w: &str, id: Uuid, st: &str| {
            let error = (st == "failed").then(|| platform_error(131026));
            status_item(w, st, &to, Some(&id.to_string()), error)
        };
        for st in *statuses {
            h.deliver(&envelope(vec![statuses_change(vec![item(
                &ws, single, st,
            )])]))
            .await;
        }
        one_post.extend(statuses.iter().map(|st| item(&wb, batched, st)));
        pairs.push((single, batched, ws, wb, initial_wamids));
    }
    h.deliver(&envelope(vec![statuses_change(one_post)])).await;
    for (single, batched, ws, wb, initial) in pairs {
        let (mut a, mut b) = (
            row_state(&mut c, single).await,
            row_state(&mut c, batched).await,
        );
        // The wamids differ between the two copies: compared by which one each row kept.
        for (row, (w, first)) in [(&mut a, (&ws, &initial[0])), (&mut b, (&wb, &initial[1]))] {
            *row = row.replace(w.as_str(), "W");
            if !first.is_empty() {
                *row = row.replace(first.as_str(), "W0");
            }
        }
        assert_eq!(a, b, "one POST per status vs one POST");
    }
    // Every status carried pricing: one row per message, as the last report said.
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM message_pricing").await,
        count(
            &mut c,
            "SELECT count(DISTINCT message_id) AS n FROM message_pricing WHERE billable AND category = 'marketing'"
        )
        .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_errors_record_opt_out_and_marketing_limit() {
    let h = Harness::start().await;
    let to = phone();
    let mut c = h.conn().await;
    let a = outbound_message(&mut c, &to, "sent", None, None).await;
    h.deliver(&status(
        &wamid(),
        "failed",
        &to,
        Some(&a.to_string()),
        Some(platform_error(131050)),
    ))
    .await;
    let flags = text(&mut c, &format!(
        "SELECT opt_in_marketing::text || '|' || opt_in_utility::text || '|' || opt_change_reason AS v FROM customers WHERE phone = '{to}'"
    ))
    .await;
    assert!(flags.starts_with("false|true|"), "{flags}");
    assert!(flags.contains("platform_131050"), "{flags}");
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM messages WHERE id = '{a}' AND status = 'failed' AND error_code = 131050")).await,
        1
    );

    let b = outbound_message(&mut c, &to, "sent", None, None).await;
    h.deliver(&status(
        &wamid(),
        "failed",
        &to,
        Some(&b.to_string()),
        Some(platform_error(131049)),
    ))
    .await;
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM customers WHERE phone = '{to}' AND marketing_limited_at IS NOT NULL")).await,
        1
    );

    // An unknown code is stored with the fallback explanation.
    let d = outbound_message(&mut c, &to, "sent", None, None).await;
    h.deliver(&status(
        &wamid(),
        "failed",
        &to,
        Some(&d.to_string()),
        Some(platform_error(999_999)),
    ))
    .await;
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM messages WHERE id = '{d}' AND error_code = 999999 AND error_category = 'unknown'")).await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_counters_follow_statuses() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    let campaign = Uuid::new_v4();
    diesel::sql_query(
        "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name, audience_done, total_recipients)
         VALUES ($1, 'c', 'marketing', 'running', now(), 't', true, 2)",
    )
    .bind::<SqlUuid, _>(campaign)
    .execute(&mut c)
    .await
    .unwrap();
    let (p1, p2) = (phone(), phone());
    let m1 = outbound_message(&mut c, &p1, "sending", None, Some(campaign)).await;
    let m2 = outbound_message(&mut c, &p2, "sending", None, Some(campaign)).await;
    let (w1, w2) = (wamid(), wamid());
    // One batch: out of order, with duplicates.
    h.deliver(&envelope(vec![statuses_change(vec![
        status_item(&w1, "read", &p1, Some(&m1.to_string()), None),
        status_item(&w1, "sent", &p1, Some(&m1.to_string()), None),
        status_item(&w1, "delivered", &p1, Some(&m1.to_string()), None),
        status_item(&w2, "sent", &p2, Some(&m2.to_string()), None),
        status_item(
            &w2,
            "failed",
            &p2,
            Some(&m2.to_string()),
            Some(platform_error(131026)),
        ),
    ])]))
    .await;
    let counters = text(
        &mut c,
        &format!(
            "SELECT sent_count || '|' || delivered_count || '|' || failed_count || '|' || status AS v
             FROM campaigns WHERE id = '{campaign}'"
        ),
    )
    .await;
    // Each recipient once, in its latest state: m2 (sent, then failed) only in failed.
    assert_eq!(counters, "1|1|1|completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halt_class_error_in_a_status_pauses_active_campaigns() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    let campaign = Uuid::new_v4();
    diesel::sql_query(
        "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name)
         VALUES ($1, 'c', 'marketing', 'running', now(), 't')",
    )
    .bind::<SqlUuid, _>(campaign)
    .execute(&mut c)
    .await
    .unwrap();
    let to = phone();
    let m = outbound_message(&mut c, &to, "sent", None, None).await;
    h.deliver(&status(
        &wamid(),
        "failed",
        &to,
        Some(&m.to_string()),
        Some(platform_error(131048)),
    ))
    .await;
    let state = text(
        &mut c,
        &format!("SELECT status || '|' || coalesce(status_reason, '') AS v FROM campaigns WHERE id = '{campaign}'"),
    )
    .await;
    // 131048 protects the number the message came from: its campaigns pause.
    assert!(
        state.starts_with("paused|sender_protection: platform error 131048"),
        "{state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_status_updates() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    for (name, locale) in [("order_update", "en_US"), ("promo", "id")] {
        diesel::sql_query(
            "INSERT INTO templates (name, locale, category, status, body_text) VALUES ($1, $2, 'utility', 'PENDING', 'Hi {{1}}')",
        )
        .bind::<Text, _>(name)
        .bind::<Text, _>(locale)
        .execute(&mut c)
        .await
        .unwrap();
    }
    h.deliver(&template_update(
        "order_update",
        "en_US",
        "APPROVED",
        "NONE",
    ))
    .await;
    assert_eq!(
        template_row(&mut c, "order_update").await,
        "APPROVED|-|1689556908129832"
    );
    h.deliver(&template_update("promo", "id", "REJECTED", "PROMOTIONAL"))
        .await;
    assert_eq!(
        template_row(&mut c, "promo").await,
        "REJECTED|PROMOTIONAL|1689556908129832"
    );
    // Language written another way is the same template.
    h.deliver(&template_update("order_update", "en-us", "PAUSED", "NONE"))
        .await;
    assert!(
        template_row(&mut c, "order_update")
            .await
            .starts_with("PAUSED|")
    );
    // FLAGGED leaves the status alone; REINSTATED approves again.
    h.deliver(&template_update("order_update", "en_US", "FLAGGED", "NONE"))
        .await;
    assert!(
        template_row(&mut c, "order_update")
            .await
            .starts_with("PAUSED|")
    );
    h.deliver(&template_update(
        "order_update",
        "en_US",
        "REINSTATED",
        "NONE",
    ))
    .await;
    assert!(
        template_row(&mut c, "order_update")
            .await
            .starts_with("APPROVED|")
    );
    h.deliver(&template_update(
        "order_update",
        "en_US",
        "DISABLED",
        "NONE",
    ))
    .await;
    assert!(
        template_row(&mut c, "order_update")
            .await
            .starts_with("DISABLED|")
    );
    // Unknown template: acknowledged, nothing inserted.
    h.deliver(&template_update("not_ours", "en", "APPROVED", "NONE"))
        .await;
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM templates").await,
        2
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'template_status_updated'"
        )
        .await,
        6
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_preferences_stop_and_resume_marketing_only() {
    let h = Harness::start().await;
    let who = phone();
    let mut c = h.conn().await;
    h.deliver(&preference(&who, "stop", now() - 10)).await;
    assert_eq!(flags(&mut c, &who).await, "false|true");
    assert_eq!(
        count(&mut c, &format!("SELECT count(*) AS n FROM audit_logs WHERE entity_id = '{who}' AND details->>'source' = 'user_preferences'")).await,
        1
    );
    h.deliver(&preference(&who, "resume", now())).await;
    assert_eq!(flags(&mut c, &who).await, "true|true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quality_updates_are_stored() {
    let h = Harness::start().await;
    h.deliver(&quality("FLAGGED", "TIER_1K")).await;
    h.deliver(&quality("UPGRADE", "TIER_10K")).await;
    let mut c = h.conn().await;
    let v = text(
        &mut c,
        "SELECT string_agg(event || ':' || current_limit || ':' || display_phone_number || ':' || (payload->>'event'), ',' ORDER BY id) AS v
         FROM account_quality_events",
    )
    .await;
    assert_eq!(
        v,
        "FLAGGED:TIER_1K:15550100000:FLAGGED,UPGRADE:TIER_10K:15550100000:UPGRADE"
    );
}

/// Everything the database holds that an event could change, as one comparable value.
async fn snapshot(h: &Harness) -> Value {
    let mut c = h.conn().await;
    let v = text(
        &mut c,
        "SELECT json_build_object(
            'customers', (SELECT json_agg(c ORDER BY phone) FROM customers c),
            'conversations', (SELECT json_agg(c ORDER BY id) FROM conversations c),
            'messages', (SELECT json_agg(m ORDER BY id) FROM messages m),
            'templates', (SELECT json_agg(t ORDER BY id) FROM templates t),
            'campaigns', (SELECT json_agg(t ORDER BY id) FROM campaigns t),
            'audit', (SELECT count(*) FROM audit_logs),
            'quality', (SELECT count(*) FROM account_quality_events),
            'events', (SELECT count(*) FROM webhook_events))::text AS v",
    )
    .await;
    serde_json::from_str(&v).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_post_changes_nothing() {
    let h = Harness::start().await;
    let (a, b) = (phone(), phone());
    let mut c = h.conn().await;
    let m = outbound_message(&mut c, &b, "sending", None, None).await;
    diesel::sql_query(
        "INSERT INTO templates (name, locale, category, status, body_text) VALUES ('t1', 'en', 'marketing', 'PENDING', 'x')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let w = wamid();
    let payload = envelope(vec![
        messages_change(vec![
            text_message(&a, "hello", now() - 60, &wamid()),
            text_message(&a, "STOP", now() - 30, &wamid()),
        ]),
        statuses_change(vec![
            status_item(&w, "sent", &b, Some(&m.to_string()), None),
            status_item(
                &w,
                "failed",
                &b,
                Some(&m.to_string()),
                Some(platform_error(131050)),
            ),
        ]),
        json!({"field": "message_template_status_update", "value": {"event": "APPROVED",
               "message_template_id": 7, "message_template_name": "t1", "message_template_language": "en",
               "reason": null}}),
        json!({"field": "user_preferences", "value": {"user_preferences": [
               {"wa_id": b, "category": "marketing_messages", "value": "resume", "timestamp": now()}]}}),
        json!({"field": "phone_number_quality_update", "value": {"display_phone_number": "15550100000",
               "event": "DOWNGRADE", "current_limit": "TIER_250"}}),
    ]);
    h.deliver(&payload).await;
    let first = snapshot(&h).await;
    assert_eq!(first["events"], 7);
    assert_eq!(first["quality"], 1);
    h.deliver(&payload).await;
    h.deliver(&payload).await;
    let again = snapshot(&h).await;
    assert_eq!(first, again, "a replay changed the database");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_1000_changes_is_one_transaction() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    // 700 inbound messages from 350 customers, 300 statuses of 100 known messages.
    let phones: Vec<String> = (0..350).map(|_| phone()).collect();
    let mut known = Vec::new();
    for p in phones.iter().take(100) {
        known.push((
            outbound_message(&mut c, p, "sending", None, None).await,
            p.clone(),
            wamid(),
        ));
    }
    let mut changes = Vec::new();
    for (n, p) in phones.iter().cycle().take(700).enumerate() {
        changes.push(messages_change(vec![text_message(
            p,
            if n == 5 { "STOP" } else { "hi" },
            now() - 100 + (n as i64 % 50),
            &wamid(),
        )]));
    }
    for (id, p, w) in &known {
        for st in ["read", "sent", "delivered"] {
            changes.push(statuses_change(vec![status_item(
                w,
                st,
                p,
                Some(&id.to_string()),
                None,
            )]));
        }
    }
    let payload = envelope(changes);
    assert!(payload.to_string().len() < warden_webhook::MAX_BODY_BYTES);
    let started = Instant::now();
    h.deliver(&payload).await;
    let took = started.elapsed();
    eprintln!("1000-change batch stored in {took:?}");

    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM webhook_events").await,
        1000
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM messages WHERE direction = 'inbound'"
        )
        .await,
        700
    );
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM conversations").await,
        350
    );
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM messages WHERE direction = 'outbound' AND status = 'read' AND wamid IS NOT NULL").await,
        100
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM customers WHERE NOT opt_in_marketing"
        )
        .await,
        1
    );
    // And again: nothing new.
    h.deliver(&payload).await;
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM webhook_events").await,
        1000
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM messages WHERE direction = 'inbound'"
        )
        .await,
        700
    );
    assert!(took < Duration::from_secs(30));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_apply_a_concurrently_delivered_event_once() {
    let h = Harness::start().await;
    let (url2, _replica) = h.replica();
    let from = phone();
    // The platform retries the same POST at both replicas at once, several times.
    let payload = envelope(vec![messages_change(vec![
        text_message(&from, "STOP", now(), &wamid()),
        text_message(&from, "hello", now(), &wamid()),
    ])]);
    let body = payload.to_string();
    let mut tasks = Vec::new();
    for n in 0..8 {
        let http = h.http.clone();
        let url = if n % 2 == 0 {
            h.url.clone()
        } else {
            url2.clone()
        };
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let res = post_signed(&http, &url, body.as_bytes()).await;
            (res.status().as_u16(), res.text().await.unwrap())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), (200, "EVENT_RECEIVED".to_string()));
    }
    let mut c = h.conn().await;
    assert_eq!(count(&mut c, "SELECT count(*) AS n FROM messages").await, 2);
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'customer_opted_out'"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_strings_are_stored_or_skipped_never_a_500() {
    let h = Harness::start().await;
    let from = phone();
    let payload = envelope(vec![messages_change(vec![
        json!({"from": from, "id": "wamid.NUL\u{0}X", "timestamp": "99999999999999", "type": "te\u{0}xt",
               "text": {"body": "a\u{0}b"}, "extra\u{0}key": "\u{0}"}),
        json!({"from": from, "id": "w".repeat(5000), "timestamp": "-5", "type": "text", "text": {"body": "x"}}),
    ])]);
    h.deliver(&payload).await;
    let mut c = h.conn().await;
    assert_eq!(
        text(&mut c, "SELECT wamid || '|' || message_type || '|' || (content->'text'->>'body') AS v FROM messages").await,
        "wamid.NULX|text|ab"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_event_is_set_aside_and_the_rest_of_the_batch_applied() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    // A database that refuses one particular message, whatever the webhook does.
    diesel::sql_query(
        "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.wamid = 'wamid.POISON' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$",
    )
    .execute(&mut c)
    .await
    .unwrap();
    diesel::sql_query(
        "CREATE TRIGGER refuse_poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION refuse_poison()",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let (a, b) = (phone(), phone());
    let payload = envelope(vec![messages_change(vec![
        text_message(&a, "one", now(), &wamid()),
        text_message(&b, "poison", now(), "wamid.POISON"),
        text_message(&a, "STOP", now(), &wamid()),
    ])]);
    h.deliver(&payload).await;
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM messages").await,
        2,
        "the two good messages are stored"
    );
    assert_eq!(flags(&mut c, &a).await, "false|false");
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM webhook_events WHERE event_key = 'msg:wamid.POISON' AND kind = 'failed:inbound'"
        )
        .await,
        1,
        "the poisoned event is recorded as set aside"
    );
    // A replay neither retries it nor repeats the others.
    h.deliver(&payload).await;
    assert_eq!(count(&mut c, "SELECT count(*) AS n FROM messages").await, 2);
    let metrics = h.metrics().await;
    assert!(
        metrics.contains("warden_webhook_events_total{kind=\"failed\"} 1"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_posts_are_each_stored_once_before_their_answer() {
    let h = Harness::start().await;
    // 150 single-event POSTs, each sent twice, all at once: queued POSTs share
    // transactions, and an event in two of them is applied once.
    let posts: Vec<(String, Value)> = (0..150)
        .map(|n| {
            let from = phone();
            let text = if n % 10 == 0 { "STOP" } else { "hello" };
            (from.clone(), inbound(&from, text, now(), &wamid()))
        })
        .collect();
    let mut tasks = Vec::new();
    for (_, payload) in posts.iter().chain(posts.iter()) {
        let http = h.http.clone();
        let url = h.url.clone();
        let body = payload.to_string();
        tasks.push(tokio::spawn(async move {
            let res = post_signed(&http, &url, body.as_bytes()).await;
            (res.status().as_u16(), res.text().await.unwrap())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), (200, "EVENT_RECEIVED".to_string()));
    }
    let mut c = h.conn().await;
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM messages").await,
        150
    );
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM conversations").await,
        150
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'customer_opted_out'"
        )
        .await,
        15
    );
    let metrics = h.metrics().await;
    let transactions = metrics
        .lines()
        .find(|l| {
            l.starts_with("warden_webhook_ingest_duration_seconds_count{outcome=\"committed\"}")
        })
        .unwrap_or_default()
        .to_string();
    eprintln!("300 POSTs stored in: {transactions}");
    assert!(
        metrics.contains("warden_webhook_replays_total 150"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_costs_the_cache_not_the_answer() {
    let addr = format!("127.0.0.1:{}", warden_test_support::free_port());
    let h = Harness::start_with(|s| s.redis.addr = addr).await;
    let phones: Vec<String> = (0..50).map(|_| phone()).collect();
    let payload = envelope(
        phones
            .iter()
            .map(|p| messages_change(vec![text_message(p, "hi", now(), &wamid())]))
            .collect(),
    );
    let started = Instant::now();
    h.deliver(&payload).await;
    eprintln!("answered after {:?} with Redis down", started.elapsed());
    // 50 writes waiting out a 250 ms timeout 4 at a time would take over 3 s.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "answer held {:?} by a dead cache",
        started.elapsed()
    );
    let mut c = h.conn().await;
    assert_eq!(
        count(&mut c, "SELECT count(*) AS n FROM conversations").await,
        50
    );
}
