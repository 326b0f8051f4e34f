//! Campaign audience filters that would select everyone by accident,
//! and the control tools' answers and counters as an agent sees them.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::{Harness, phone};
use serde_json::json;

fn future(mins: i64) -> String {
    (Utc::now() + TimeDelta::minutes(mins)).to_rfc3339()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_list_or_null_audience_filter_is_refused_never_everyone() {
    let h = Harness::start().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    let base = json!({"name": "n", "type": "marketing", "template_name": "promo",
                      "deliver_at": future(60), "variables": "{\"1\": \"a\"}"});
    let with = |v: serde_json::Value| {
        let mut b = base.clone();
        b["audience_filter"] = v;
        b
    };
    for (filter, says) in [
        (
            json!("{\"customer_ids\": []}"),
            "an empty list selects nobody; leave the key out",
        ),
        (
            json!("{\"include_tags\": []}"),
            "an empty list selects nobody; leave the key out",
        ),
        (
            json!("{\"exclude_tags\": []}"),
            "an empty list selects nobody; leave the key out",
        ),
        (
            json!({"customer_ids": []}),
            "an empty list selects nobody; leave the key out",
        ),
        (json!("{\"include_tags\": null}"), "leave the key out"),
        (json!("null"), "selects nobody"),
        (json!(""), "selects nobody"),
        (json!("   "), "selects nobody"),
    ] {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "schedule_campaign",
                with(filter.clone()),
            )
            .await;
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{filter}: {e}");
    }
    assert_eq!(
        h.audits("campaign_scheduled").await,
        0,
        "nothing was scheduled"
    );
    // `{}` and no filter at all still mean every customer.
    for b in [with(json!("{}")), base.clone()] {
        let c = h.ok("schedule_campaign", b).await;
        let g = h
            .ok("get_campaign", json!({"campaign_id": c["campaign_id"]}))
            .await;
        assert_eq!(g["audience_filter"], json!({}));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_tools_answer_from_core_and_get_campaign_counts_each_recipient_once() {
    let h = Harness::start().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    let c = h
        .ok(
            "schedule_campaign",
            json!({"name": "n", "type": "marketing", "template_name": "promo",
                   "deliver_at": future(60), "variables": "{\"1\": \"a\"}"}),
        )
        .await;
    let id = c["campaign_id"].as_str().unwrap().to_string();
    let p = h.ok("pause_campaign", json!({"campaign_id": id})).await;
    assert_eq!(p["from_status"], "scheduled");
    assert!(
        p["note"]
            .as_str()
            .unwrap()
            .contains("nothing more is queued until resume_campaign"),
        "the note states what the pause holds: {p}"
    );
    // Three recipients reached by hand: one sent then failed, one read, one queued.
    let mut ids = Vec::new();
    {
        use diesel_async::RunQueryDsl;
        let mut conn = h.conn().await;
        for _ in 0..3 {
            let m = uuid::Uuid::now_v7();
            let to = phone();
            diesel::sql_query(format!(
                "INSERT INTO customers (phone) VALUES ('{to}') ON CONFLICT DO NOTHING;"
            ))
            .execute(&mut conn)
            .await
            .unwrap();
            diesel::sql_query(format!(
                "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, campaign_id)
                 VALUES ('{m}', '{to}', 'whatsapp', 'outbound', 'template', 'marketing', 'queued', '{id}')"
            ))
            .execute(&mut conn)
            .await
            .unwrap();
            ids.push(m);
        }
        let now = Utc::now();
        use warden_core::delivery::outcomes::apply_status;
        let error = warden_core::delivery::knowledge::ErrorInfo {
            code: 131026,
            category: "recipient".into(),
            can_retry: false,
            human_explanation: "Message undeliverable.".into(),
            suggested_action: "Check the number.".into(),
        };
        apply_status(&mut conn, ids[0], "sent", now, None, None)
            .await
            .unwrap();
        apply_status(&mut conn, ids[0], "failed", now, None, Some(&error))
            .await
            .unwrap();
        apply_status(&mut conn, ids[1], "read", now, None, None)
            .await
            .unwrap();
    }
    let g = h.ok("get_campaign", json!({"campaign_id": id})).await;
    assert_eq!(g["sent_count"], 1, "{g}");
    assert_eq!(g["delivered_count"], 1, "{g}");
    assert_eq!(
        g["failed_count"], 1,
        "sent then failed counts only as failed: {g}"
    );
    assert_eq!(g["cancelled_count"], 0, "{g}");
    assert_eq!(g["pending_count"], 1, "{g}");
    assert_eq!(g["total_recipients"], 3, "{g}");

    let r = h
        .ok(
            "cancel_campaign",
            json!({"campaign_id": id, "reason": "wrong audience"}),
        )
        .await;
    assert_eq!(r["from_status"], "paused");
    assert_eq!(r["status"], "cancelled");
    let e = h
        .err(
            "CAMPAIGN_TERMINAL_STATE",
            "cancel_campaign",
            json!({"campaign_id": id}),
        )
        .await;
    assert!(e.get("retry_after_secs").is_none());
    h.err(
        "INVALID_STATE_TRANSITION",
        "resume_campaign",
        json!({"campaign_id": id}),
    )
    .await;
    h.err(
        "INVALID_STATE_TRANSITION",
        "pause_campaign",
        json!({"campaign_id": id}),
    )
    .await;
    assert_eq!(h.audits("campaign_cancelled").await, 1);
}

/// CAMPAIGN_APPROVAL=required: the agent's campaign is pending_approval (the scheduler does
/// not start it); an operator's reject shows in get_campaign as rejection_reason, an
/// approve lets it start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_approval_required_an_agents_campaign_waits_for_an_operator() {
    let h = Harness::with(common::Opts {
        adjust: |s| s.console.campaign_approval = warden_settings::CampaignApproval::Required,
        ..Default::default()
    })
    .await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    let args = json!({"name": "n", "type": "marketing", "template_name": "promo",
                      "deliver_at": future(1), "variables": "{\"1\": \"a\"}"});
    let mut ids = Vec::new();
    for _ in 0..2 {
        let c = h.ok("schedule_campaign", args.clone()).await;
        assert_eq!(c["status"], "pending_approval", "{c}");
        ids.push(c["campaign_id"].as_str().unwrap().to_string());
    }
    // Both are due now: only their status keeps the scheduler away.
    {
        use diesel_async::RunQueryDsl;
        let mut conn = h.conn().await;
        diesel::sql_query("UPDATE campaigns SET deliver_at = now() - interval '1 minute'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let started = warden_core::campaigns::fanout::start_due(&h.deps.pg, "scheduler")
        .await
        .unwrap();
    assert!(
        started.is_empty(),
        "a pending campaign is not started: {started:?}"
    );
    let g = h.ok("get_campaign", json!({"campaign_id": ids[0]})).await;
    assert_eq!(g["status"], "pending_approval");
    assert!(g.get("rejection_reason").is_none(), "{g}");

    let id = |s: &str| s.parse::<uuid::Uuid>().unwrap();
    warden_core::campaigns::reject(&h.deps.pg, id(&ids[0]), "not on a Sunday", "operator:ana")
        .await
        .unwrap();
    let g = h.ok("get_campaign", json!({"campaign_id": ids[0]})).await;
    assert_eq!(g["status"], "rejected");
    assert_eq!(g["rejection_reason"], "not on a Sunday");

    warden_core::campaigns::approve(&h.deps.pg, id(&ids[1]), "operator:ana")
        .await
        .unwrap();
    let started = warden_core::campaigns::fanout::start_due(&h.deps.pg, "scheduler")
        .await
        .unwrap();
    assert_eq!(started, vec![id(&ids[1])]);
    let g = h.ok("get_campaign", json!({"campaign_id": ids[1]})).await;
    assert_eq!(g["status"], "running");
}
