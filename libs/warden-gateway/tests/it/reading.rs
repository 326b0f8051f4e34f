//! Reads (and archive_chat, which list_conversations reflects): check_conversation,
//! get_customer_context, get_delivery_status, get_rate_limit, list_conversations,
//! list_templates, estimate_cost, estimate_pricing.

use crate::common;

use chrono::{DateTime, TimeDelta, Utc};
use common::{Harness, phone};
use serde_json::{Value, json};

fn parse(ts: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(ts.as_str().unwrap())
        .unwrap()
        .with_timezone(&Utc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_conversation_unknown_and_open() {
    let h = Harness::start().await;
    let p = phone();
    let c = h.ok("check_conversation", json!({"customer_id": p})).await;
    assert_eq!(c["window_open"], false);
    assert_eq!(c["time_remaining_secs"], 0);
    assert!(c["last_inbound_at"].is_null());
    assert!(c["last_outbound_at"].is_null());
    assert!(c["window_expires_at"].is_null());
    assert!(c["conversation_id"].is_null());
    assert_eq!(c["customer_id"], p);
    assert_eq!(c["channel"], "whatsapp");
    assert_eq!(c["marketing_eligibility"], "eligible");
    assert_eq!(c["utility_eligibility"], "eligible");
    // unknown customers are not created by a read
    assert_eq!(h.count("SELECT count(*) AS n FROM customers").await, 0);

    let at = Utc::now() - TimeDelta::hours(3);
    let conv = h.inbound(&p, at).await;
    let c = h
        .ok(
            "check_conversation",
            json!({"customer_id": format!("+{p}")}),
        )
        .await;
    assert_eq!(c["window_open"], true);
    let left = c["time_remaining_secs"].as_i64().unwrap();
    assert!((20 * 3600 - 5..=21 * 3600 + 5).contains(&left), "{left}");
    assert_eq!(c["conversation_id"], conv.id.to_string());
    assert_eq!(c["conversation_type"], "service");
    assert!((parse(&c["last_inbound_at"]) - at).num_milliseconds().abs() < 2);
    assert!(
        (parse(&c["window_expires_at"]) - (at + TimeDelta::hours(24)))
            .num_milliseconds()
            .abs()
            < 2
    );
    h.opt_out(&p, false).await;
    let c = h.ok("check_conversation", json!({"customer_id": p})).await;
    assert_eq!(c["marketing_eligibility"], "user_opted_out");
    assert_eq!(c["utility_eligibility"], "eligible");
    h.err(
        "INVALID_ARGUMENT",
        "check_conversation",
        json!({"customer_id": p, "channel": "telegram"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn customer_context_is_a_dry_run() {
    let h = Harness::start().await;
    let p = phone();
    let audits = h.count("SELECT count(*) AS n FROM audit_logs").await;
    let ctx = h
        .ok("get_customer_context", json!({"customer_id": p}))
        .await;
    assert_eq!(ctx["known_customer"], false);
    assert_eq!(ctx["opt_in"], json!({"marketing": true, "utility": true}));
    assert_eq!(ctx["tags"], json!([]));
    assert!(ctx["last_interaction"].is_null());
    assert_eq!(ctx["conversation"]["window_open"], false);
    assert_eq!(ctx["eligibility"]["marketing"]["eligible"], true);
    assert!(ctx["eligibility"]["marketing"].get("reason_code").is_none());
    assert_eq!(ctx["eligibility"]["service"]["eligible"], false);
    assert_eq!(
        ctx["eligibility"]["service"]["reason_code"],
        "TEMPLATE_REQUIRED"
    );

    h.tag(&p, &["vip"]).await;
    h.inbound(&p, Utc::now()).await;
    let ctx = h
        .ok("get_customer_context", json!({"customer_id": p}))
        .await;
    assert_eq!(ctx["known_customer"], true);
    assert_eq!(ctx["tags"], json!(["vip"]));
    assert_eq!(ctx["conversation"]["window_open"], true);
    assert!(ctx["conversation"]["last_inbound"].is_string());
    assert_eq!(
        ctx["eligibility"]["marketing"]["reason_code"],
        "POLICY_RESTRICTION"
    );
    assert_eq!(ctx["eligibility"]["utility"]["eligible"], true);
    assert_eq!(ctx["eligibility"]["service"]["eligible"], true);
    // No writes: the customer count stays, no audit row.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs").await,
        audits
    );
    let other = phone();
    h.ok("get_customer_context", json!({"customer_id": other}))
        .await;
    assert_eq!(h.count("SELECT count(*) AS n FROM customers").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_status_errors_and_rate_limit() {
    let h = Harness::start().await;
    h.err(
        "NOT_FOUND",
        "get_delivery_status",
        json!({"message_id": "00000000-0000-4000-8000-000000000000"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "get_delivery_status",
        json!({"message_id": "12345"}),
    )
    .await;
    let r = h.ok("get_rate_limit", json!({})).await;
    assert_eq!(r["channel"], "whatsapp");
    assert_eq!(r["capacity_mps"], h.deps.settings.rate_limit_mps);
    assert!(r["tokens_remaining"].as_f64().unwrap() >= 0.0);
    assert!(r["tokens_used"].as_u64().is_some());
    assert!(r["last_update_ms"].as_i64().unwrap() > 1_600_000_000_000);
    parse(&r["last_update_at"]);
    h.err(
        "INVALID_ARGUMENT",
        "get_rate_limit",
        json!({"channel": "sms"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_conversations_filters_pages_and_archives() {
    let h = Harness::start().await;
    let now = Utc::now();
    let open = phone();
    let soon = phone();
    let closed = phone();
    let gone = phone();
    h.inbound(&open, now - TimeDelta::hours(1)).await;
    h.inbound(&soon, now - TimeDelta::hours(23)).await;
    let closed_conv = h.inbound(&closed, now - TimeDelta::hours(30)).await;
    let gone_conv = h.inbound(&gone, now - TimeDelta::hours(48)).await;

    // archive_chat: active window refused, closed archived (and left out of listings).
    let open_id = h
        .ok("check_conversation", json!({"customer_id": open}))
        .await["conversation_id"]
        .clone();
    let e = h
        .err(
            "CONVERSATION_ACTIVE",
            "archive_chat",
            json!({"conversation_id": open_id}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("still open"), "{e}");
    let a = h
        .ok(
            "archive_chat",
            json!({"conversation_id": gone_conv.id.to_string()}),
        )
        .await;
    assert_eq!(a["status"], "archived");
    assert_eq!(a["from_type"], "service");
    assert_eq!(a["conversation_id"], gone_conv.id.to_string());
    assert_eq!(h.audits("conversation_archived").await, 1);
    h.err(
        "NOT_FOUND",
        "archive_chat",
        json!({"conversation_id": "00000000-0000-4000-8000-000000000000"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "archive_chat",
        json!({"conversation_id": "abc"}),
    )
    .await;

    let ids = |page: &Value| -> Vec<String> {
        page["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["customer_id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = h.ok("list_conversations", json!({})).await;
    assert_eq!(all["total"], 3, "{all}");
    assert_eq!(all["limit"], 50);
    assert_eq!(all["offset"], 0);
    assert!(!ids(&all).contains(&gone));
    let page = h
        .ok("list_conversations", json!({"status_filter": "open"}))
        .await;
    let mut got = ids(&page);
    got.sort();
    let mut want = vec![open.clone(), soon.clone()];
    want.sort();
    assert_eq!(got, want);
    let page = h
        .ok(
            "list_conversations",
            json!({"status_filter": "EXPIRING_SOON"}),
        )
        .await;
    assert_eq!(ids(&page), vec![soon.clone()]);
    let item = &page["conversations"][0];
    assert_eq!(item["window_open"], true);
    assert!(item["time_remaining_secs"].as_i64().unwrap() <= 3600 + 5);
    assert!(item["id"].is_string());
    let page = h
        .ok("list_conversations", json!({"status_filter": "closed"}))
        .await;
    assert_eq!(ids(&page), vec![closed.clone()]);
    assert_eq!(page["conversations"][0]["window_open"], false);
    assert_eq!(page["conversations"][0]["time_remaining_secs"], 0);
    // pagination at the database: total stays, pages differ
    let p1 = h
        .ok("list_conversations", json!({"limit": 2, "offset": 0}))
        .await;
    let p2 = h
        .ok("list_conversations", json!({"limit": "2", "offset": "2"}))
        .await;
    assert_eq!(p1["total"], 3);
    assert_eq!(p2["total"], 3);
    assert_eq!(ids(&p1).len(), 2);
    assert_eq!(ids(&p2).len(), 1);
    assert!(!ids(&p1).contains(&ids(&p2)[0]));
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 501}),
        json!({"offset": -1}),
        json!({"status_filter": "pending"}),
        json!({"channel": "sms"}),
    ] {
        h.err("INVALID_ARGUMENT", "list_conversations", bad).await;
    }
    h.ok("list_conversations", json!({"limit": 500})).await;
    // archiving a closed conversation a second time is harmless
    h.ok(
        "archive_chat",
        json!({"conversation_id": closed_conv.id.to_string()}),
    )
    .await;
    h.ok(
        "archive_chat",
        json!({"conversation_id": closed_conv.id.to_string()}),
    )
    .await;
    assert_eq!(h.audits("conversation_archived").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_templates_filters_case_insensitively_and_pages() {
    let h = Harness::start().await;
    h.insert_template("a_promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    h.insert_template("a_promo", "id", "marketing", "APPROVED", "Halo {{1}}")
        .await;
    h.insert_template("b_order", "en", "utility", "PENDING", "Order {{1}}")
        .await;
    h.insert_template(
        "c_code",
        "en",
        "authentication",
        "REJECTED",
        "{{1}} is your code",
    )
    .await;
    let all = h.ok("list_templates", json!({})).await;
    assert_eq!(all["total"], 4);
    let t = &all["templates"][0];
    for k in ["name", "locale", "category", "status", "body_text"] {
        assert!(t[k].is_string(), "{k}: {all}");
    }
    let page = h
        .ok("list_templates", json!({"status_filter": "approved"}))
        .await;
    assert_eq!(page["total"], 2);
    let page = h
        .ok(
            "list_templates",
            json!({"category_filter": "MARKETING", "locale_filter": "ID"}),
        )
        .await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["templates"][0]["locale"], "id");
    assert_eq!(page["templates"][0]["category"], "marketing");
    let page = h
        .ok("list_templates", json!({"limit": 1, "offset": 3}))
        .await;
    assert_eq!(page["total"], 4);
    assert_eq!(page["templates"].as_array().unwrap().len(), 1);
    assert_eq!(page["templates"][0]["name"], "c_code");
    let page = h.ok("list_templates", json!({"offset": 10})).await;
    assert_eq!(page["templates"], json!([]));
    h.err("INVALID_ARGUMENT", "list_templates", json!({"limit": 1000}))
        .await;
    h.err("INVALID_ARGUMENT", "list_templates", json!({"limit": 2.5}))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_come_from_the_rate_card() {
    let h = Harness::start().await;
    let c = h
        .ok(
            "estimate_cost",
            json!({"message_type": "marketing", "recipient_country": "us", "quantity": 3}),
        )
        .await;
    assert_eq!(c["cost_per_conversation"], "0.0250");
    assert_eq!(c["total_estimated_cost"], "0.0750");
    assert_eq!(c["recipient_country"], "US");
    assert_eq!(c["currency"], "USD");
    assert_eq!(c["pricing_category"], "MARKETING");
    assert!(
        c["pricing_model_version"]
            .as_str()
            .is_some_and(|v| !v.is_empty())
    );
    let c = h
        .ok("estimate_cost", json!({"message_type": "Utility"}))
        .await;
    assert_eq!(c["quantity"], 1);
    assert_eq!(c["recipient_country"], "DEFAULT");
    assert_eq!(c["cost_per_conversation"], "0.0077");
    let c = h
        .ok(
            "estimate_cost",
            json!({"message_type": "utility", "recipient_country": "ZZ", "quantity": "2"}),
        )
        .await;
    assert_eq!(c["rate_country"], "DEFAULT");
    assert_eq!(c["total_estimated_cost"], "0.0154");
    let c = h
        .ok(
            "estimate_cost",
            json!({"message_type": "service", "recipient_country": "ID"}),
        )
        .await;
    assert_eq!(c["total_estimated_cost"], "0.0000");
    for bad in [
        json!({"message_type": "marketing", "quantity": 0}),
        json!({"message_type": "marketing", "quantity": -3}),
        json!({"message_type": "marketing", "quantity": 1.5}),
        json!({"message_type": "marketing", "quantity": "many"}),
        json!({"message_type": "promo"}),
        json!({"message_type": "template"}),
        json!({"message_type": "marketing", "recipient_country": "Indonesia"}),
    ] {
        h.err("INVALID_ARGUMENT", "estimate_cost", bad).await;
    }

    let p = h
        .ok(
            "estimate_pricing",
            json!({"conversation_type": "marketing", "recipient_country": "ID"}),
        )
        .await;
    assert_eq!(p["country"], "ID");
    assert_eq!(p["cost_per_conversation"], 0.0411);
    assert_eq!(p["effective_date"], "2025-07-01");
    assert_eq!(p["pricing_category"], "MARKETING");
    let p = h
        .ok(
            "estimate_pricing",
            json!({"conversation_type": "authentication", "recipient_country": "FR"}),
        )
        .await;
    assert_eq!(p["country"], "DEFAULT");
    assert_eq!(p["requested_country"], "FR");
    assert_eq!(p["cost_per_conversation"], 0.028);
    let p = h
        .ok("estimate_pricing", json!({"conversation_type": "service"}))
        .await;
    assert_eq!(p["cost_per_conversation"], 0.0);
    h.err(
        "INVALID_ARGUMENT",
        "estimate_pricing",
        json!({"conversation_type": "free"}),
    )
    .await;
}
