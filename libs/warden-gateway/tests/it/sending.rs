//! Sends through the one send path: check_compliance, send_message,
//! send_template, reply_customer, retry_failed_messages, explain_error; the frequency cap
//! under concurrency; NATS absent; database down.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::{Harness, Opts, phone};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_compliance_reports_every_reason_as_a_normal_result() {
    let h = Harness::start().await;
    let p = phone();
    // No window: free-form needs a template.
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": p, "message_type": "service"}),
        )
        .await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["reason_code"], "TEMPLATE_REQUIRED");
    assert!(!r["human_explanation"].as_str().unwrap().is_empty());
    assert!(!r["suggested_action"].as_str().unwrap().is_empty());
    // Marketing is allowed: reason_code OK. Phone spellings land on one customer.
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": format!("+{} ", &p), "message_type": "MARKETING"}),
        )
        .await;
    assert_eq!(r["allowed"], true);
    assert_eq!(r["reason_code"], "OK");
    assert_eq!(r["customer_id"], p);
    // Window open: service allowed.
    h.inbound(&p, Utc::now() - TimeDelta::minutes(5)).await;
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": p, "message_type": "text"}),
        )
        .await;
    assert_eq!(r["reason_code"], "OK", "{r}");
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": p, "message_type": "template"}),
        )
        .await;
    assert_eq!(r["allowed"], true);
    // Opted out of marketing.
    h.opt_out(&p, false).await;
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": p, "message_type": "marketing"}),
        )
        .await;
    assert_eq!(r["reason_code"], "USER_OPTED_OUT");
    // A tag policy names itself.
    let vip = phone();
    h.tag(&vip, &["vip"]).await;
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": vip, "message_type": "marketing"}),
        )
        .await;
    assert_eq!(r["reason_code"], "POLICY_RESTRICTION");
    assert!(
        r["human_explanation"]
            .as_str()
            .unwrap()
            .contains("test_skip_vip"),
        "{r}"
    );
    // Country block.
    let r = h
        .ok(
            "check_compliance",
            json!({"customer_id": "+1 202 555 0123", "message_type": "marketing"}),
        )
        .await;
    assert_eq!(r["reason_code"], "POLICY_RESTRICTION");
    // Bad input is an error, not a decision.
    h.err(
        "INVALID_ARGUMENT",
        "check_compliance",
        json!({"customer_id": p, "message_type": "promo"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "check_compliance",
        json!({"customer_id": p, "message_type": "service", "channel": "sms"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "check_compliance",
        json!({"customer_id": "12", "message_type": "service"}),
    )
    .await;
    // check_compliance never writes.
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_message_and_reply_customer_need_an_open_window() {
    let h = Harness::start().await;
    let p = phone();
    let e = h
        .err(
            "TEMPLATE_REQUIRED",
            "send_message",
            json!({"to": p, "text": "hello"}),
        )
        .await;
    assert!(
        e["suggested_action"]
            .as_str()
            .unwrap()
            .contains("send_template")
    );
    let e = h
        .err(
            "WINDOW_CLOSED",
            "reply_customer",
            json!({"customer_id": p, "message_text": "hello"}),
        )
        .await;
    assert!(
        e["suggested_action"]
            .as_str()
            .unwrap()
            .contains("send_template"),
        "{e}"
    );
    assert_eq!(h.audits("send_refused").await, 2, "refusals are audited");
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);

    h.inbound(&p, Utc::now() - TimeDelta::hours(1)).await;
    let sent = h
        .ok(
            "send_message",
            json!({"to": format!("+{p}"), "text": "hello"}),
        )
        .await;
    assert_eq!(sent["status"], "queued");
    let id = sent["message_id"].as_str().unwrap().to_string();
    let row = h.published(&id).await;
    assert_eq!(row.status, "queued");
    assert_eq!(row.customer_phone, p);
    assert_eq!(
        row.content,
        json!({"type": "text", "text": {"body": "hello"}})
    );
    let reply = h
        .ok(
            "reply_customer",
            json!({"customer_id": p, "message_text": "thanks"}),
        )
        .await;
    assert_eq!(reply["status"], "queued");
    h.published(reply["message_id"].as_str().unwrap()).await;
    assert_eq!(h.stream_messages().await, 2);
    let status = h.ok("get_delivery_status", json!({"message_id": id})).await;
    assert_eq!(status["status"], "queued");
    assert_eq!(status["direction"], "outbound");
    assert_eq!(status["retry_count"], 0);
    assert!(status.get("error").is_none());

    // Policy restriction for free-form (tag on every type).
    let blocked = phone();
    h.inbound(&blocked, Utc::now()).await;
    h.tag(&blocked, &["blocked"]).await;
    let e = h
        .err(
            "POLICY_RESTRICTION",
            "send_message",
            json!({"to": blocked, "text": "x"}),
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("test_blocked_customers"),
        "{e}"
    );
    h.err(
        "POLICY_RESTRICTION",
        "reply_customer",
        json!({"customer_id": blocked, "message_text": "x"}),
    )
    .await;
    // STOP opts out of utility too, which blocks free-form.
    h.opt_out(&p, true).await;
    h.err(
        "USER_OPTED_OUT",
        "send_message",
        json!({"to": p, "text": "x"}),
    )
    .await;
    h.err(
        "USER_OPTED_OUT",
        "reply_customer",
        json!({"customer_id": p, "message_text": "x"}),
    )
    .await;
    // Text too long.
    let other = phone();
    h.inbound(&other, Utc::now()).await;
    h.err(
        "INVALID_ARGUMENT",
        "send_message",
        json!({"to": other, "text": "x".repeat(4097)}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_template_refusals_and_the_cap() {
    let h = Harness::start().await;
    h.insert_template(
        "promo",
        "en",
        "marketing",
        "APPROVED",
        "Hi {{1}}, {{2}} off",
    )
    .await;
    h.insert_template("order", "en", "utility", "APPROVED", "Order {{1}} shipped")
        .await;
    h.insert_template("waiting", "en", "utility", "PENDING", "Order {{1}}")
        .await;
    let p = phone();
    h.err(
        "NOT_FOUND",
        "send_template",
        json!({"to": p, "template_name": "nope"}),
    )
    .await;
    h.err(
        "NOT_FOUND",
        "send_template",
        json!({"to": p, "template_name": "order", "locale": "id"}),
    )
    .await;
    h.err(
        "TEMPLATE_NOT_APPROVED",
        "send_template",
        json!({"to": p, "template_name": "waiting", "variables": "[\"1\"]"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_template",
        json!({"to": p, "template_name": "order"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_template",
        json!({"to": p, "template_name": "order", "variables": "[\"a\",\"b\"]"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_template",
        json!({"to": p, "template_name": "order", "variables": "[oops"}),
    )
    .await;

    // Utility templates are not window-bound.
    let sent = h
        .ok(
            "send_template",
            json!({"to": p, "template_name": "order", "variables": "[\"#12\"]"}),
        )
        .await;
    assert_eq!(sent["status"], "queued");
    let row = h.message(sent["message_id"].as_str().unwrap()).await;
    assert_eq!(row.category, "utility");
    assert_eq!(row.template_name.as_deref(), Some("order"));

    // Marketing: two pass, the third hits the cap of the policy file.
    for _ in 0..2 {
        h.ok(
            "send_template",
            json!({"to": p, "template_name": "promo", "variables": ["Ana", "20%"]}),
        )
        .await;
    }
    let e = h
        .err(
            "FREQUENCY_CAP_EXCEEDED",
            "send_template",
            json!({"to": p, "template_name": "promo", "variables": "[\"Ana\",\"20%\"]"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("limit is 2"), "{e}");
    let cap = h.ok("check_frequency_cap", json!({"customer_id": p})).await;
    assert_eq!(cap["is_capped"], true);
    assert!(!cap["reason"].as_str().unwrap().is_empty());
    assert!(!cap["suggested_action"].as_str().unwrap().is_empty());
    assert!(
        cap["reset_hint"].as_str().is_some_and(|s| !s.is_empty()),
        "{cap}"
    );

    let fresh = phone();
    let cap = h
        .ok("check_frequency_cap", json!({"customer_id": fresh}))
        .await;
    assert_eq!(cap["is_capped"], false);
    assert_eq!(cap["reason"], "");
    assert_eq!(cap["suggested_action"], "");
    assert!(cap.get("reset_hint").is_none());

    let vip = phone();
    h.tag(&vip, &["vip"]).await;
    h.err(
        "POLICY_RESTRICTION",
        "send_template",
        json!({"to": vip, "template_name": "promo", "variables": "[\"a\",\"b\"]"}),
    )
    .await;
    let out = phone();
    h.opt_out(&out, false).await;
    h.err(
        "USER_OPTED_OUT",
        "send_template",
        json!({"to": out, "template_name": "promo", "variables": "[\"a\",\"b\"]"}),
    )
    .await;
    // A marketing opt-out leaves utility alone.
    h.ok(
        "send_template",
        json!({"to": out, "template_name": "order", "variables": "[\"1\"]"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_found_for_a_huge_template_name_is_one_short_sentence() {
    let h = Harness::start().await;
    let p = phone();
    let huge = "b".repeat(10_000);
    let short_and_named = |e: &serde_json::Value| {
        let m = e["message"].as_str().unwrap();
        assert!(m.chars().count() < 200, "{m}");
        assert!(m.starts_with("There is no template named `bbbb"), "{m}");
        assert!(m.contains("…` (10000 characters)"), "{m}");
        assert!(m.contains("at most 512 characters"), "{m}");
        assert!(!m.contains(&"b".repeat(65)), "{m}");
        assert!(
            !e["suggested_action"].as_str().unwrap().contains("bbbb"),
            "{e}"
        );
    };
    let e = h
        .err(
            "NOT_FOUND",
            "send_template",
            json!({"to": p, "template_name": huge, "locale": "id"}),
        )
        .await;
    short_and_named(&e);
    assert!(
        e["message"].as_str().unwrap().contains("locale `id`"),
        "{e}"
    );
    let deliver_at = (Utc::now() + TimeDelta::hours(1)).to_rfc3339();
    let e = h
        .err(
            "NOT_FOUND",
            "schedule_message",
            json!({"customer_id": p, "message_type": "template", "deliver_at": deliver_at,
                   "content": json!({"type": "template", "template": {"name": huge, "language": "en"}}).to_string()}),
        )
        .await;
    short_and_named(&e);
    let e = h
        .err(
            "NOT_FOUND",
            "schedule_campaign",
            json!({"name": "big", "type": "marketing", "template_name": huge, "deliver_at": deliver_at}),
        )
        .await;
    short_and_named(&e);
    // A name within the limit that does not exist: named in full up to the echo bound.
    let e = h
        .err(
            "NOT_FOUND",
            "send_template",
            json!({"to": p, "template_name": "c".repeat(100)}),
        )
        .await;
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("…` (100 characters) in locale `en`."), "{m}");
    assert!(!m.contains("512"), "{m}");
    // Nothing was written for any of them.
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);
    assert_eq!(h.count("SELECT count(*) AS n FROM campaigns").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_concurrent_marketing_sends_to_one_customer_queue_exactly_two() {
    let h = Harness::start().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;
    let p = phone();
    let calls = (0..10).map(|i| {
        let h = &h;
        let to = if i % 2 == 0 {
            format!("+{p}")
        } else {
            p.clone()
        };
        async move {
            h.call(
                "send_template",
                json!({"to": to, "template_name": "promo", "variables": "[\"Ana\"]"}),
            )
            .await
        }
    });
    let results = futures::future::join_all(calls).await;
    let queued = results.iter().filter(|(e, _)| !e).count();
    let capped = results
        .iter()
        .filter(|(e, v)| *e && v["error"]["code"] == "FREQUENCY_CAP_EXCEEDED")
        .count();
    assert_eq!(queued, 2, "{results:?}");
    assert_eq!(capped, 8, "{results:?}");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{p}' AND status = 'queued'"
        ))
        .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_error_known_unknown_and_bad() {
    let h = Harness::start().await;
    let e = h.ok("explain_error", json!({"code": "131026"})).await;
    assert_eq!(e["code"], 131026);
    assert_eq!(e["can_retry"], false);
    assert_eq!(e["known"], true);
    assert!(!e["category"].as_str().unwrap().is_empty());
    let e = h.ok("explain_error", json!({"code": "131000"})).await;
    assert_eq!(e["can_retry"], true);
    let e = h.ok("explain_error", json!({"code": "999999"})).await;
    assert_eq!(e["known"], false);
    assert_eq!(e["code"], 999999);
    assert!(!e["human_explanation"].as_str().unwrap().is_empty());
    h.err("INVALID_ARGUMENT", "explain_error", json!({"code": "abc"}))
        .await;
    h.err("INVALID_ARGUMENT", "explain_error", json!({"code": "-5"}))
        .await;
}

async fn send_order(h: &Harness, p: &str) -> String {
    h.ok(
        "send_template",
        json!({"to": p, "template_name": "order", "variables": "[\"1\"]"}),
    )
    .await["message_id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_failed_messages_requeues_retryable_and_skips_the_rest() {
    let h = Harness::start().await;
    h.insert_template("order", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    let p = phone();
    let retryable = send_order(&h, &p).await;
    let permanent = send_order(&h, &p).await;
    let still_queued = send_order(&h, &p).await;
    let refused_later = send_order(&h, &p).await;
    h.fail(&retryable, 131000).await;
    h.fail(&permanent, 131026).await;

    let st = h
        .ok("get_delivery_status", json!({"message_id": permanent}))
        .await;
    assert_eq!(st["status"], "failed");
    assert_eq!(st["error"]["code"], 131026);
    assert_eq!(st["error"]["can_retry"], false);
    assert!(
        !st["error"]["human_explanation"]
            .as_str()
            .unwrap()
            .is_empty()
    );

    let published_before = h.stream_messages().await;
    let out = h
        .ok(
            "retry_failed_messages",
            json!({"message_ids": serde_json::to_string(&[&retryable, &permanent, &still_queued, "00000000-0000-4000-8000-000000000000", "nope"]).unwrap()}),
        )
        .await;
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    assert_eq!(results[0]["status"], "retried", "{out}");
    assert!(results[0].get("reason").is_none());
    assert_eq!(results[1]["status"], "skipped");
    assert!(
        results[1]["reason"].as_str().unwrap().contains("131026"),
        "{out}"
    );
    assert_eq!(results[2]["status"], "skipped");
    assert!(results[2]["reason"].as_str().unwrap().contains("queued"));
    assert_eq!(results[3]["status"], "skipped");
    assert_eq!(results[4]["status"], "skipped");

    // Handed to the stream again. (The stream's count is not checked: JetStream de-duplicates
    // by Nats-Msg-Id = message_id inside its window, see the report on warden-core.)
    let row = h.published(&retryable).await;
    assert_eq!(row.status, "queued");
    assert_eq!(row.retry_count, 1);
    assert_eq!(row.error_code, None);
    assert_eq!(h.message(&permanent).await.status, "failed");
    assert_eq!(h.audits("message_retried").await, 1);
    let _ = published_before;
    let st = h
        .ok("get_delivery_status", json!({"message_id": retryable}))
        .await;
    assert_eq!(st["retry_count"], 1);

    // Compliance runs again at retry time: an opt-out since then skips it.
    h.fail(&refused_later, 131000).await;
    h.opt_out(&p, true).await;
    let out = h
        .ok(
            "retry_failed_messages",
            json!({"message_ids": format!("[\"{refused_later}\"]")}),
        )
        .await;
    assert_eq!(out["results"][0]["status"], "skipped");
    assert!(
        out["results"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("USER_OPTED_OUT"),
        "{out}"
    );
    assert_eq!(h.message(&refused_later).await.status, "failed");

    h.err(
        "INVALID_ARGUMENT",
        "retry_failed_messages",
        json!({"message_ids": "not json"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "retry_failed_messages",
        json!({"message_ids": "[]"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "retry_failed_messages",
        json!({"message_ids": "{\"a\":1}"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_nats_sends_are_still_accepted_and_stay_queued() {
    let h = Harness::with(Opts {
        nats: false,
        ..Opts::default()
    })
    .await;
    h.insert_template("order", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    let p = phone();
    let sent = h
        .ok(
            "send_template",
            json!({"to": p, "template_name": "order", "variables": "[\"1\"]"}),
        )
        .await;
    assert_eq!(sent["status"], "queued");
    let row = h.message(sent["message_id"].as_str().unwrap()).await;
    assert_eq!(row.status, "queued");
    assert!(row.published_at.is_none(), "left for the relay");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_down_is_unavailable() {
    use diesel_async::AsyncPgConnection;
    use diesel_async::pooled_connection::AsyncDieselConnectionManager;
    use diesel_async::pooled_connection::bb8::Pool;

    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &Opts::default()).await;
    let mut deps = common::deps_for(settings.clone(), false).await;
    // A pool pointing at a port where no Postgres listens.
    let mut dead = settings.database.clone();
    dead.port = 9;
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new(dead.url());
    deps.pg = Pool::builder()
        .connection_timeout(Duration::from_millis(500))
        .build_unchecked(manager);
    let gateway = warden_gateway::Gateway::new(deps).unwrap();
    let client = common::connect(gateway).await;
    for (tool, args) in [
        (
            "check_compliance",
            json!({"customer_id": phone(), "message_type": "marketing"}),
        ),
        (
            "send_template",
            json!({"to": phone(), "template_name": "x"}),
        ),
        ("list_templates", json!({})),
        ("explain_error", json!({"code": "131000"})),
    ] {
        let res = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new(tool)
                    .with_arguments(args.as_object().cloned().unwrap()),
            )
            .await
            .unwrap();
        common::check_envelope(tool, &res);
        assert_eq!(res.is_error, Some(true), "{tool}");
        assert_eq!(
            res.structured_content.unwrap()["error"]["code"],
            "UNAVAILABLE",
            "{tool}"
        );
    }
}
