//! One regression test per hole the send path once had, named after the behaviour
//! (docs/compliance.md, Compliance decisions on every path).

use crate::common;

use chrono::{TimeDelta, Utc};
use common::*;
use serde_json::json;
use warden_core::{Core, RefusalMode, SendRequest};
use warden_rules::kinds::MessageType;

fn later() -> String {
    (Utc::now() + TimeDelta::minutes(30)).to_rfc3339()
}

/// What warden-scheduler does at deliver_at with a scheduled row.
async fn dispatch_scheduled(h: &Harness, id: &str) -> warden_store::models::Message {
    let row = h.message(id).await;
    let _ = Core::new(h.deps.clone(), "scheduler")
        .send(SendRequest {
            sender: None,
            phone: h.phone_number(&row.customer_phone),
            channel: row.channel.clone(),
            kind: warden_core::SendKind::from_content(&row.content).unwrap(),
            message_type: row.message_type.parse::<MessageType>().unwrap(),
            campaign_id: None,
            existing_message_id: Some(row.id),
            refusal: RefusalMode::RecordFailed,
            actor: "scheduler",
        })
        .await;
    h.message(id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_form_content_needs_an_open_window_whatever_message_type_says() {
    let h = Harness::start().await;
    for label in ["utility", "marketing", "authentication"] {
        let to = phone();
        h.inbound(&to, Utc::now() - TimeDelta::hours(30)).await;
        let v = h
            .ok(
                "schedule_message",
                json!({"customer_id": to, "message_type": label, "deliver_at": later(),
                       "content": {"type": "text", "text": {"body": "Your order shipped"}}}),
            )
            .await;
        let id = v["message_id"].as_str().unwrap();
        assert_eq!(h.message(id).await.category, "service", "{label}");
        let row = dispatch_scheduled(&h, id).await;
        assert_eq!(row.status, "failed", "{label}: {row:?}");
        assert_eq!(row.error_category.as_deref(), Some("compliance"));
        assert!(
            row.error_explanation
                .as_deref()
                .unwrap_or_default()
                .starts_with("TEMPLATE_REQUIRED"),
            "{label}: {row:?}"
        );
    }
    assert_eq!(
        h.stream_messages().await,
        0,
        "nothing was queued for delivery"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marketing_template_is_judged_by_its_stored_category_not_the_callers_label() {
    let h = Harness::start().await;
    h.insert_template("promo_x", "en", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    let content = json!({"type": "template", "template": {"name": "promo_x", "language": "en", "variables": ["now"]}});
    // Opted out of marketing: refused at scheduling although the label says utility.
    let out = phone();
    h.opt_out(&out, false).await;
    let e = h
        .err(
            "USER_OPTED_OUT",
            "schedule_message",
            json!({"customer_id": out, "message_type": "utility", "content": content, "deliver_at": later()}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("marketing"), "{e}");
    // +1: the no-marketing-to-+1 policy refuses it at dispatch.
    let us = "14155550123";
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": us, "message_type": "utility", "content": content, "deliver_at": later()}),
        )
        .await;
    let id = v["message_id"].as_str().unwrap();
    assert_eq!(h.message(id).await.category, "marketing");
    let row = dispatch_scheduled(&h, id).await;
    assert_eq!(row.status, "failed");
    assert!(
        row.error_explanation
            .as_deref()
            .unwrap_or_default()
            .contains("test_no_marketing_to_plus1"),
        "{row:?}"
    );
    // The frequency cap counts it as marketing: two go, the third is refused.
    let to = phone();
    for i in 0..3 {
        let v = h
            .ok(
                "schedule_message",
                json!({"customer_id": to, "message_type": "utility", "content": content, "deliver_at": later()}),
            )
            .await;
        let row = dispatch_scheduled(&h, v["message_id"].as_str().unwrap()).await;
        let want = if i < 2 { "queued" } else { "failed" };
        assert_eq!(row.status, want, "send {i}: {row:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_numbers_given_as_json_numbers_or_with_a_fraction_are_invalid() {
    let h = Harness::start().await;
    let number = 14155550101u64;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_message",
            json!({"to": number, "text": "hi"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`to`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "check_compliance",
            json!({"customer_id": 14155550101.0, "message_type": "marketing"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("customer_id"),
        "{e}"
    );
    for spelled in ["14155550101.0", "+14155550101.00", "14155550101."] {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "send_template",
                json!({"to": spelled, "template_name": "x"}),
            )
            .await;
        assert!(e["message"].as_str().unwrap().contains("decimal"), "{e}");
    }
    // The accepted spellings still name one customer.
    for spelled in ["+1 415 555 0101", "1-415-555-0101", "(1) 415.555.0101"] {
        let v = h
            .ok(
                "check_compliance",
                json!({"customer_id": spelled, "message_type": "utility"}),
            )
            .await;
        assert_eq!(v["customer_id"], "14155550101");
    }
    assert_eq!(
        h.count("SELECT count(*) AS n FROM customers WHERE phone LIKE '%1415555010%'")
            .await,
        0,
        "nothing was written for the refused spellings"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_skips_messages_that_failed_a_compliance_check_and_says_why() {
    let h = Harness::start().await;
    let to = phone();
    // A scheduled free-form text refused at dispatch (no window).
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": to, "message_type": "service", "deliver_at": later(),
                   "content": {"type": "text", "text": {"body": "hello"}}}),
        )
        .await;
    let id = v["message_id"].as_str().unwrap().to_string();
    let row = dispatch_scheduled(&h, &id).await;
    assert_eq!(row.status, "failed");
    assert_eq!(row.error_can_retry, Some(false));
    // Even once the window is open again, the failed message stays failed: the agent
    // sends a new message instead.
    h.inbound(&to, Utc::now()).await;
    let v = h
        .ok(
            "retry_failed_messages",
            json!({"message_ids": [id.clone()]}),
        )
        .await;
    let item = &v["results"][0];
    assert_eq!(item["status"], "skipped", "{v}");
    let reason = item["reason"].as_str().unwrap();
    assert!(
        reason.contains("compliance check") && reason.contains("TEMPLATE_REQUIRED"),
        "{reason}"
    );
    assert_eq!(h.message(&id).await.status, "failed");
    assert_eq!(h.stream_messages().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_case_insensitive_in_policies() {
    let h = Harness::start().await;
    h.insert_template("promo_t", "en", "marketing", "APPROVED", "Sale")
        .await;
    // A tag stored before the lower-casing (or by hand) still matches the policy's `vip`.
    let to = phone();
    h.tag(&to, &["VIP"]).await;
    let e = h
        .err(
            "POLICY_RESTRICTION",
            "send_template",
            json!({"to": to, "template_name": "promo_t"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("test_skip_vip"),
        "{e}"
    );
    let v = h
        .ok(
            "check_compliance",
            json!({"customer_id": to, "message_type": "marketing"}),
        )
        .await;
    assert_eq!(v["reason_code"], "POLICY_RESTRICTION");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tag_migration_lower_cases_stored_tags() {
    let h = Harness::start().await;
    let to = phone();
    h.tag(&to, &["VIP", "vip", " Gold ", ""]).await;
    let mut c = h.conn().await;
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(include_str!(
            "../../../../migrations/2026-11-23-220001_lowercase_tags/up.sql"
        )),
        &mut c,
    )
    .await
    .unwrap();
    drop(c);
    let v = h
        .ok("get_customer_context", json!({"customer_id": to}))
        .await;
    assert_eq!(v["tags"], json!(["vip", "gold"]), "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_invalid_arguments_naming_the_parameter() {
    let h = Harness::start().await;
    let to = phone();
    h.inbound(&to, Utc::now()).await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_message",
            json!({"to": to, "text": "hello\u{0}world"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`text`"), "{e}");
    // Line breaks in free text are fine.
    h.ok(
        "send_message",
        json!({"to": to, "text": "line one\nline two"}),
    )
    .await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "reply_customer",
            json!({"customer_id": to, "message_text": "bell\u{7}"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("`message_text`"),
        "{e}"
    );
    h.insert_template("order_t", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    for bad in ["two\nlines", "a\ttab", "five     spaces", "nul\u{0}"] {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "send_template",
                json!({"to": to, "template_name": "order_t", "variables": [bad]}),
            )
            .await;
        assert!(
            e["message"].as_str().unwrap().contains("`variables`"),
            "{bad:?}: {e}"
        );
    }
    // Inside JSON parameters too, with where it is.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "schedule_message",
            json!({"customer_id": to, "message_type": "utility", "deliver_at": later(),
                   "content": {"type": "template", "template": {"name": "order_t", "language": "en", "variables": ["x\u{0}"]}}}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`content`"), "{e}");
    // create_template refuses before the platform is called: nothing half-written.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "create_template",
            json!({"name": "nul_body", "category": "UTILITY", "language": "en", "body_text": "Hi\u{0}{{1}}"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("`body_text`"),
        "{e}"
    );
    assert_eq!(
        h.count("SELECT count(*) AS n FROM templates WHERE name = 'nul_body'")
            .await,
        0
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{to}'"
        ))
        .await,
        1,
        "only the valid text was accepted"
    );
}
