//! Agent safety through the tools: idempotency_key on the send and schedule tools (replayed
//! results, a bad key, a key reused with other arguments), check_compliance judging a
//! planned text by the content policies, and get_customer_context's last refusal.

use crate::common;

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use common::*;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};

const POLICIES: &str = r#"
version: 1
policies:
  - id: no_repeats
    type: duplicate_guard
    window: 10m
  - id: safe_content
    type: content_filter
    deny_patterns: ["(?i)wire\\s+transfer"]
    link_domains: [example.com]
"#;

/// The harness's database and stream, served by a gateway with the safety policies.
async fn safety_client(h: &Harness) -> RunningService<RoleClient, ()> {
    let mut deps = h.deps.clone();
    deps.policies = Arc::new(warden_rules::policy::PolicySet::from_yaml(POLICIES).unwrap());
    connect(warden_gateway::Gateway::new(deps).expect("gateway")).await
}

async fn call(c: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, Value) {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap());
    let res = c.call_tool(params).await.expect("tools/call");
    check_envelope(name, &res);
    (res.is_error == Some(true), res.structured_content.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_tools_replay_a_key_and_refuse_it_for_other_arguments() {
    let h = Harness::start().await;
    let c = safety_client(&h).await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let args = json!({"to": to, "text": "Your parcel left", "idempotency_key": "parcel-1"});
    let (e, first) = call(&c, "send_message", args.clone()).await;
    assert!(!e, "{first}");
    assert!(first.get("replayed").is_none(), "{first}");
    // The same call again, arguments in another order: the first answer, replayed.
    let (e, again) = call(
        &c,
        "send_message",
        json!({"idempotency_key": "parcel-1", "text": "Your parcel left", "to": to}),
    )
    .await;
    assert!(!e, "{again}");
    assert_eq!(again["message_id"], first["message_id"]);
    assert_eq!(again["replayed"], true);
    // Other text with the key.
    let (e, v) = call(
        &c,
        "send_message",
        json!({"to": to, "text": "Another text", "idempotency_key": "parcel-1"}),
    )
    .await;
    assert!(e);
    assert_eq!(v["error"]["code"], "INVALID_ARGUMENT");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`idempotency_key`"),
        "{v}"
    );
    // Keys that are not 1..128 printable ASCII.
    for bad in [
        json!(""),
        json!("has space"),
        json!("x".repeat(129)),
        json!(7),
    ] {
        let (e, v) = call(
            &c,
            "reply_customer",
            json!({"customer_id": to, "message_text": "hi there", "idempotency_key": bad}),
        )
        .await;
        assert!(e, "{bad}: {v}");
        assert_eq!(v["error"]["code"], "INVALID_ARGUMENT");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("idempotency_key"),
            "{v}"
        );
    }
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{to}'"
        ))
        .await,
        1
    );
    // schedule_message takes a key too.
    let later = (Utc::now() + TimeDelta::hours(1)).to_rfc3339();
    let s = json!({"customer_id": to, "message_type": "service", "deliver_at": later,
                   "content": {"type": "text", "text": {"body": "Reminder"}}, "idempotency_key": "rem-1"});
    let (_, a) = call(&c, "schedule_message", s.clone()).await;
    let (_, b) = call(&c, "schedule_message", s).await;
    assert_eq!(a["message_id"], b["message_id"], "{a} {b}");
    assert_eq!(b["replayed"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_compliance_and_customer_context_show_the_content_policies() {
    let h = Harness::start().await;
    let c = safety_client(&h).await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let (_, v) = call(
        &c,
        "check_compliance",
        json!({"customer_id": to, "message_type": "service", "text": "pay by wire  transfer"}),
    )
    .await;
    assert_eq!(v["allowed"], false, "{v}");
    assert_eq!(v["reason_code"], "POLICY_RESTRICTION");
    assert_eq!(v["policy_id"], "safe_content");
    let (e, v) = call(
        &c,
        "send_message",
        json!({"to": to, "text": "Pay at https://pay.evil.net/x now"}),
    )
    .await;
    assert!(e);
    assert_eq!(v["error"]["code"], "POLICY_RESTRICTION");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("safe_content") && msg.contains("pay.evil.net") && !msg.contains("Pay at"),
        "{v}"
    );
    let (_, ctx) = call(&c, "get_customer_context", json!({"customer_id": to})).await;
    assert_eq!(ctx["last_refusal"]["policy_id"], "safe_content", "{ctx}");
    assert_eq!(ctx["last_refusal"]["reason_code"], "POLICY_RESTRICTION");
    assert!(
        ctx["last_refusal"]["human_explanation"]
            .as_str()
            .unwrap()
            .contains("pay.evil.net")
    );
    // A duplicate is refused naming the earlier message.
    let (_, sent) = call(
        &c,
        "send_message",
        json!({"to": to, "text": "See https://example.com"}),
    )
    .await;
    let (e, v) = call(
        &c,
        "send_message",
        json!({"to": to, "text": "see  HTTPS://example.com"}),
    )
    .await;
    assert!(e, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains(sent["message_id"].as_str().unwrap()),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotency_key_is_taken_exactly_as_given() {
    let h = Harness::start().await;
    let c = safety_client(&h).await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let send = |key: &str| json!({"to": to, "text": "Your parcel left", "idempotency_key": key});
    let (e, first) = call(&c, "send_message", send("acc-key")).await;
    assert!(!e, "{first}");
    // The same key with a line break, a tab, a space around it or a control character inside
    // is another key, and not one a key may be: refused, never trimmed into "acc-key".
    for bad in [
        "acc-key\n",
        "acc-key\r\n",
        "\tacc-key",
        " acc-key",
        "acc\u{7}key",
        "acc-key\u{7f}",
    ] {
        let (e, v) = call(&c, "send_message", send(bad)).await;
        assert!(e, "{bad:?}: {v}");
        assert_eq!(v["error"]["code"], "INVALID_ARGUMENT", "{bad:?}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap()
                .contains("idempotency_key"),
            "{bad:?}: {v}"
        );
        assert!(v.get("replayed").is_none(), "{bad:?}: {v}");
    }
    // Only the one message was accepted.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{to}'"
        ))
        .await,
        1
    );
    // The key as given still names the first call.
    let (e, again) = call(&c, "send_message", send("acc-key")).await;
    assert!(!e, "{again}");
    assert_eq!(again["message_id"], first["message_id"], "{again}");
    assert_eq!(again["replayed"], true, "{again}");
}
