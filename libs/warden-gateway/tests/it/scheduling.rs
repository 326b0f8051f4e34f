//! Scheduling and campaigns: schedule_message, schedule_campaign, cancel/pause/resume_campaign,
//! get_campaign, and the tier gate.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::{Harness, Opts, phone};
use serde_json::json;
use warden_settings::Tier;

fn future(mins: i64) -> String {
    (Utc::now() + TimeDelta::minutes(mins)).to_rfc3339()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_message_writes_a_scheduled_row_in_the_send_paths_shape() {
    let h = Harness::start().await;
    h.insert_template("order", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    let p = phone();
    let at = Utc::now() + TimeDelta::hours(2);
    let r = h
        .ok(
            "schedule_message",
            json!({"customer_id": format!("+{p}"), "message_type": "service",
                   "content": "{\"type\":\"text\",\"text\":{\"body\":\"See you\"}}",
                   "deliver_at": at.to_rfc3339()}),
        )
        .await;
    assert_eq!(r["status"], "scheduled");
    assert_eq!(r["customer_id"], p);
    let id = r["message_id"].as_str().unwrap();
    let row = h.message(id).await;
    assert_eq!(row.status, "scheduled");
    assert_eq!(row.message_type, "service");
    assert!((row.deliver_at.unwrap() - at).num_milliseconds().abs() < 2);
    assert_eq!(
        row.content,
        warden_core::SendKind::Text {
            body: "See you".into()
        }
        .to_content()
    );
    let st = h.ok("get_delivery_status", json!({"message_id": id})).await;
    assert_eq!(st["status"], "scheduled");
    assert!(st["deliver_at"].is_string());

    // Template content (language or locale, variables as array) is stored like the send path's.
    let r = h
        .ok(
            "schedule_message",
            json!({"customer_id": p, "message_type": "template",
                   "content": {"type": "template", "template": {"name": "order", "language": "en", "variables": ["#7"]}},
                   "deliver_at": future(30)}),
        )
        .await;
    let row = h.message(r["message_id"].as_str().unwrap()).await;
    assert_eq!(row.category, "utility");
    assert_eq!(
        row.content,
        warden_core::SendKind::Template(warden_core::TemplateSend {
            name: "order".into(),
            locale: "en".into(),
            variables: vec!["#7".into()],
            ..Default::default()
        })
        .to_content()
    );
    assert_eq!(h.audits("message_scheduled").await, 2);
    // Nothing was published: the scheduler does that at deliver_at.
    assert_eq!(h.stream_messages().await, 0);

    let text = "{\"type\":\"text\",\"text\":{\"body\":\"x\"}}";
    for (bad, code) in [
        (
            json!({"customer_id": p, "message_type": "service", "content": text, "deliver_at": (Utc::now() - TimeDelta::minutes(1)).to_rfc3339()}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "service", "content": text, "deliver_at": "next tuesday"}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "service", "content": "{not json", "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "service", "content": "{\"type\":\"video\"}", "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "service", "content": "{\"type\":\"text\",\"text\":{}}", "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "promo", "content": text, "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "template", "content": text, "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
        (
            json!({"customer_id": p, "message_type": "template", "content": "{\"type\":\"template\",\"template\":{\"name\":\"nope\"}}", "deliver_at": future(5)}),
            "NOT_FOUND",
        ),
        (
            json!({"customer_id": p, "message_type": "template", "content": "{\"type\":\"template\",\"template\":{\"name\":\"order\",\"variables\":[]}}", "deliver_at": future(5)}),
            "INVALID_ARGUMENT",
        ),
    ] {
        h.err(code, "schedule_message", bad).await;
    }
    // Opt-out is checked at scheduling time.
    h.opt_out(&p, true).await;
    h.err("USER_OPTED_OUT", "schedule_message", json!({"customer_id": p, "message_type": "service", "content": text, "deliver_at": future(5)}))
        .await;
    let m = phone();
    h.opt_out(&m, false).await;
    // The content decides, not the label: a marketing template is refused
    // whatever it is called; text is free-form (a marketing opt-out leaves service
    // messages alone; its window is judged at dispatch).
    h.insert_template("promo", "en", "marketing", "APPROVED", "Sale")
        .await;
    h.err("USER_OPTED_OUT", "schedule_message", json!({"customer_id": m, "message_type": "utility",
        "content": {"type": "template", "template": {"name": "promo", "language": "en"}}, "deliver_at": future(5)}))
        .await;
    let r = h
        .ok("schedule_message", json!({"customer_id": m, "message_type": "marketing", "content": text, "deliver_at": future(5)}))
        .await;
    assert_eq!(
        h.message(r["message_id"].as_str().unwrap()).await.category,
        "service"
    );
    // ...and only opt-out: a closed window does not stop scheduling free-form text.
    h.ok("schedule_message", json!({"customer_id": m, "message_type": "service", "content": text, "deliver_at": future(5)}))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaigns_schedule_pause_resume_cancel_and_read() {
    let h = Harness::start().await;
    h.insert_template(
        "promo",
        "en",
        "marketing",
        "APPROVED",
        "Hi {{1}}, {{2}} off",
    )
    .await;
    h.insert_template("draft", "en", "marketing", "PENDING", "Hi {{1}}")
        .await;
    let at = Utc::now() + TimeDelta::days(1);
    let c = h
        .ok(
            "schedule_campaign",
            json!({"name": "Weekend", "type": "Marketing", "template_name": "promo", "deliver_at": at.to_rfc3339(),
                   "variables": "{\"1\": \"friend\", \"2\": \"20%\"}",
                   "audience_filter": "{\"include_tags\": [\"vip\"], \"opt_in\": \"marketing\"}"}),
        )
        .await;
    assert_eq!(c["status"], "scheduled");
    assert_eq!(c["name"], "Weekend");
    assert_eq!(c["type"], "marketing");
    let id = c["campaign_id"].as_str().unwrap().to_string();
    assert_eq!(h.audits("campaign_scheduled").await, 1);

    let g = h.ok("get_campaign", json!({"campaign_id": id})).await;
    for k in [
        "campaign_id",
        "name",
        "type",
        "status",
        "deliver_at",
        "template_name",
        "locale",
        "variables",
        "audience_filter",
        "sent_count",
        "delivered_count",
        "failed_count",
        "paused_at",
    ] {
        assert!(g.get(k).is_some(), "get_campaign lacks {k}: {g}");
    }
    assert_eq!(g["variables"], json!({"1": "friend", "2": "20%"}));
    assert_eq!(g["audience_filter"]["include_tags"], json!(["vip"]));
    assert_eq!(g["locale"], "en");
    assert!(g["paused_at"].is_null());

    let p = h.ok("pause_campaign", json!({"campaign_id": id})).await;
    assert_eq!(p["status"], "paused");
    assert_eq!(p["from_status"], "scheduled");
    assert!(!p["note"].as_str().unwrap().is_empty());
    let g = h.ok("get_campaign", json!({"campaign_id": id})).await;
    assert_eq!(g["status"], "paused");
    assert!(g["paused_at"].is_string());
    h.err(
        "INVALID_STATE_TRANSITION",
        "pause_campaign",
        json!({"campaign_id": id}),
    )
    .await;

    let r = h.ok("resume_campaign", json!({"campaign_id": id})).await;
    assert_eq!(r["status"], "running");
    assert_eq!(r["from_status"], "paused");
    h.err(
        "INVALID_STATE_TRANSITION",
        "resume_campaign",
        json!({"campaign_id": id}),
    )
    .await;

    let x = h
        .ok(
            "cancel_campaign",
            json!({"campaign_id": id, "reason": "budget cut"}),
        )
        .await;
    assert_eq!(x["status"], "cancelled");
    assert_eq!(x["from_status"], "running");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'campaign_cancelled' AND details->>'reason' = 'budget cut'")
            .await,
        1
    );
    h.err(
        "CAMPAIGN_TERMINAL_STATE",
        "cancel_campaign",
        json!({"campaign_id": id}),
    )
    .await;
    h.err(
        "INVALID_STATE_TRANSITION",
        "pause_campaign",
        json!({"campaign_id": id}),
    )
    .await;
    h.err(
        "INVALID_STATE_TRANSITION",
        "resume_campaign",
        json!({"campaign_id": id}),
    )
    .await;
    assert_eq!(
        h.ok("get_campaign", json!({"campaign_id": id})).await["status"],
        "cancelled"
    );

    let unknown = "00000000-0000-4000-8000-000000000000";
    for tool in [
        "get_campaign",
        "pause_campaign",
        "resume_campaign",
        "cancel_campaign",
    ] {
        h.err("NOT_FOUND", tool, json!({"campaign_id": unknown}))
            .await;
        h.err(
            "INVALID_ARGUMENT",
            tool,
            json!({"campaign_id": "campaign-1"}),
        )
        .await;
    }

    let base = json!({"name": "n", "type": "marketing", "template_name": "promo", "deliver_at": future(60),
                      "variables": "{\"1\": \"a\", \"2\": \"b\"}"});
    let with = |k: &str, v: serde_json::Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    h.err(
        "TEMPLATE_NOT_APPROVED",
        "schedule_campaign",
        with("template_name", json!("draft")),
    )
    .await;
    h.err(
        "NOT_FOUND",
        "schedule_campaign",
        with("template_name", json!("missing")),
    )
    .await;
    for bad in [
        with(
            "deliver_at",
            json!((Utc::now() - TimeDelta::hours(1)).to_rfc3339()),
        ),
        with("deliver_at", json!("soon")),
        with("type", json!("promo")),
        with("variables", json!("{\"1\": \"a\"}")),
        with("variables", json!("[1,")),
        with("variables", json!("\"a\"")),
        with("audience_filter", json!("{\"tags\": [\"x\"]}")),
        with("audience_filter", json!("[1]")),
        with("audience_filter", json!("{\"opt_in\": \"sms\"}")),
    ] {
        h.err("INVALID_ARGUMENT", "schedule_campaign", bad).await;
    }
    // audience_filter omitted means everyone ({}).
    let c = h.ok("schedule_campaign", base.clone()).await;
    let g = h
        .ok("get_campaign", json!({"campaign_id": c["campaign_id"]}))
        .await;
    assert_eq!(g["audience_filter"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_tools_need_tier_pro() {
    let h = Harness::with(Opts {
        tier: Tier::Oss,
        ..Opts::default()
    })
    .await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi")
        .await;
    let id = "00000000-0000-4000-8000-000000000000";
    for (tool, args) in [
        (
            "schedule_campaign",
            json!({"name": "n", "type": "marketing", "template_name": "promo", "deliver_at": future(60)}),
        ),
        ("cancel_campaign", json!({"campaign_id": id})),
        ("pause_campaign", json!({"campaign_id": id})),
        ("resume_campaign", json!({"campaign_id": id})),
    ] {
        let e = h.err("FEATURE_NOT_AVAILABLE", tool, args).await;
        let m = e["message"].as_str().unwrap();
        assert!(
            m.starts_with(tool) && m.contains("pro") && m.contains("oss") && m.contains("upgrade"),
            "{m}"
        );
    }
    // get_campaign is not gated; schedule_message neither.
    h.err("NOT_FOUND", "get_campaign", json!({"campaign_id": id}))
        .await;
    assert_eq!(h.count("SELECT count(*) AS n FROM campaigns").await, 0);
}
