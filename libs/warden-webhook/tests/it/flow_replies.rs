//! Flow submissions (`interactive.type "nfm_reply"`): whatever the customer's app sends in
//! `response_json` (an object, other JSON, broken JSON, nothing), with or without a token,
//! answering a flow message Warden knows or one it does not, the webhook answers 200, the
//! message is stored once (a replay changes nothing) and indexed once, and it opens the
//! care window like any customer message.

use crate::common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

/// What `response_json` holds.
fn response_json() -> impl Strategy<Value = Value> {
    let answers = proptest::collection::btree_map("[a-z_]{1,10}", ".{0,20}", 0..4);
    prop_oneof![
        // An object with a token.
        (answers.clone(), "[a-zA-Z0-9-]{1,40}").prop_map(|(mut m, t)| {
            m.insert("flow_token".into(), t);
            json!(json!(m).to_string())
        }),
        // An object without one.
        answers.prop_map(|m| json!(json!(m).to_string())),
        // Broken JSON, other JSON, any text.
        ".{0,60}".prop_map(Value::String),
        Just(json!("{\"date\": \"2026-12-2")),
        Just(json!("[1,2,3]")),
        Just(json!("\u{0}{}")),
        // Not a string at all, or absent.
        Just(json!({"flow_token": "inline"})),
        Just(json!(42)),
        Just(Value::Null),
    ]
}

fn submission(from: &str, wamid: &str, response: Value, context: Option<&str>) -> Value {
    let mut nfm = json!({"name": "flow", "body": "Sent"});
    if !response.is_null() {
        nfm["response_json"] = response;
    }
    let mut m = json!({"from": from, "id": wamid, "timestamp": now().to_string(),
                       "type": "interactive",
                       "interactive": {"type": "nfm_reply", "nfm_reply": nfm}});
    if let Some(c) = context {
        m["context"] = json!({"from": "15550100000", "id": c});
    }
    envelope(vec![messages_change(vec![m])])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_flow_submission_is_stored_once_and_never_fails_the_webhook() {
    let h = Harness::start().await;
    // A flow message Warden sent (its wamid known), to answer now and then.
    let known_to = phone();
    let known = wamid();
    {
        let mut c = h.conn().await;
        outbound_message(&mut c, &known_to, "delivered", Some(&known), None).await;
    }
    let cases: u32 = std::env::var("FLOW_REPLY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let handle = tokio::runtime::Handle::current();
    let strategy = (
        response_json(),
        prop_oneof![
            Just(None),
            Just(Some("known")),
            Just(Some("wamid.UNKNOWN")),
            Just(Some("")),
        ],
        any::<bool>(),
    );
    let result = tokio::task::block_in_place(|| {
        runner.run(&strategy, |(response, context, replay)| {
            handle.block_on(async {
                let from = if context == Some("known") {
                    known_to.clone()
                } else {
                    phone()
                };
                let id = wamid();
                let ctx = context.map(|c| if c == "known" { known.as_str() } else { c });
                let body = submission(&from, &id, response.clone(), ctx);
                h.deliver(&body).await;
                if replay {
                    h.deliver(&body).await;
                }
                let stored = h
                    .count(&format!(
                        "SELECT count(*) AS n FROM messages WHERE wamid = '{id}' AND direction = 'inbound'"
                    ))
                    .await;
                prop_assert_eq!(stored, 1, "stored once: {}", body);
                let indexed = h
                    .count(&format!(
                        "SELECT count(*) AS n FROM flow_responses r JOIN messages m ON m.id = r.message_id \
                         WHERE m.wamid = '{id}'"
                    ))
                    .await;
                prop_assert_eq!(indexed, 1, "indexed once: {}", body);
                let window = h
                    .count(&format!(
                        "SELECT count(*) AS n FROM conversations WHERE customer_phone = '{from}' \
                         AND window_expires_at > now()"
                    ))
                    .await;
                prop_assert_eq!(window, 1, "opened the window: {}", body);
                if context == Some("known") {
                    let linked = h
                        .count(&format!(
                            "SELECT count(*) AS n FROM flow_responses r JOIN messages m ON m.id = r.message_id \
                             JOIN messages f ON f.id = r.flow_message_id \
                             WHERE m.wamid = '{id}' AND f.wamid = '{known}'"
                        ))
                        .await;
                    prop_assert_eq!(linked, 1, "linked to the known flow message: {}", body);
                }
                Ok(())
            })
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
