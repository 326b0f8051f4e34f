//! Property test: correctly signed random bodies, from raw bytes to platform-shaped
//! envelopes with hostile values, are answered 200 or 400; never a panic, never a 5xx.

use crate::common;

use common::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Number, Value, json};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        ".{0,40}".prop_map(Value::String),
        "[\\x00-\\x7f]{0,12}".prop_map(Value::String),
        Just(json!("\u{0}")),
        Just(json!("wamid.\u{0}")),
        Just(json!("628123456789")),
        Just(json!("+62 812-3456-7890")),
        Just(json!("1700000000")),
        Just(json!("STOP")),
        Just(json!("START")),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!("0190c3a0-0000-7000-8000-000000000001")),
        Just(json!("x".repeat(3000))),
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A value that is sometimes the right type and sometimes anything.
fn field_or_junk(good: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
    prop_oneof![8 => good, 1 => any_json()].boxed()
}

fn inbound_message() -> impl Strategy<Value = Value> {
    (
        field_or_junk(prop_oneof![
            Just(json!("628123456789")),
            "[0-9+ -]{0,20}".prop_map(Value::String)
        ]),
        field_or_junk(".{0,30}".prop_map(Value::String)),
        field_or_junk(prop_oneof![
            Just(json!("1700000000")),
            any::<i64>().prop_map(|n| json!(n.to_string()))
        ]),
        field_or_junk(prop_oneof![
            Just(json!("text")),
            Just(json!("button")),
            Just(json!("image"))
        ]),
        field_or_junk(prop_oneof![
            Just(json!("STOP")),
            Just(json!("hello")),
            ".{0,20}".prop_map(Value::String)
        ]),
    )
        .prop_map(|(from, id, ts, kind, body)| {
            json!({"from": from, "id": id, "timestamp": ts, "type": kind, "text": {"body": body},
                   "button": {"text": body}})
        })
}

fn status_item() -> impl Strategy<Value = Value> {
    (
        field_or_junk(".{0,30}".prop_map(Value::String)),
        field_or_junk(prop_oneof![
            Just(json!("sent")),
            Just(json!("delivered")),
            Just(json!("read")),
            Just(json!("failed")),
            Just(json!("deleted")),
            ".{0,8}".prop_map(Value::String)
        ]),
        field_or_junk(any::<i64>().prop_map(|n| json!(n))),
        field_or_junk(prop_oneof![
            Just(json!("0190c3a0-0000-7000-8000-000000000001")),
            ".{0,40}".prop_map(Value::String)
        ]),
        field_or_junk(prop_oneof![
            Just(json!(131050)),
            Just(json!(131049)),
            Just(json!(131026)),
            any::<i64>().prop_map(|n| json!(n))
        ]),
    )
        .prop_map(|(id, status, ts, cb, code)| {
            json!({"id": id, "status": status, "timestamp": ts, "recipient_id": "628123456789",
                   "biz_opaque_callback_data": cb,
                   "errors": [{"code": code, "title": "t", "error_data": {"details": "d"}}]})
        })
}

fn change() -> impl Strategy<Value = Value> {
    prop_oneof![
        (
            prop::collection::vec(inbound_message(), 0..4),
            prop::collection::vec(status_item(), 0..4)
        )
            .prop_map(|(m, s)| json!({"field": "messages",
                                      "value": {"messages": m, "statuses": s, "errors": [{"code": 130429}]}})),
        (
            field_or_junk(".{0,20}".prop_map(Value::String)),
            field_or_junk(".{0,10}".prop_map(Value::String)),
            field_or_junk(prop_oneof![
                Just(json!("APPROVED")),
                Just(json!("REJECTED")),
                Just(json!("UNARCHIVED")),
                ".{0,12}".prop_map(Value::String)
            ]),
            any_json()
        )
            .prop_map(|(name, lang, event, reason)| json!({"field": "message_template_status_update",
                "value": {"event": event, "message_template_id": 1, "message_template_name": name,
                          "message_template_language": lang, "reason": reason}})),
        (
            field_or_junk("[0-9]{0,16}".prop_map(Value::String)),
            field_or_junk(prop_oneof![Just(json!("stop")), Just(json!("resume"))]),
            field_or_junk(any::<i64>().prop_map(|n| json!(n)))
        )
            .prop_map(|(wa, value, ts)| json!({"field": "user_preferences", "value": {"user_preferences": [
                {"wa_id": wa, "category": "marketing_messages", "value": value, "timestamp": ts}]}})),
        any_json().prop_map(|v| json!({"field": "phone_number_quality_update", "value": v})),
        (".{0,16}", any_json()).prop_map(|(f, v)| json!({"field": f, "value": v})),
        any_json(),
    ]
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Raw bytes and arbitrary JSON.
        1 => prop::collection::vec(any::<u8>(), 0..256),
        1 => any_json().prop_map(|v| v.to_string().into_bytes()),
        // Platform-shaped envelopes with hostile values.
        6 => (
            field_or_junk(Just(json!("whatsapp_business_account"))),
            prop::collection::vec(
                (any_json(), prop::collection::vec(change(), 0..5))
                    .prop_map(|(time, changes)| json!({"id": "1", "time": time, "changes": changes})),
                0..3
            )
        )
            .prop_map(|(object, entry)| json!({"object": object, "entry": entry}).to_string().into_bytes()),
    ]
}

#[test]
fn random_signed_bodies_get_200_or_400_never_a_5xx() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let h = rt.block_on(Harness::start());
    let cases = std::env::var("WEBHOOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let answered = std::sync::Mutex::new(std::collections::BTreeMap::<u16, u32>::new());
    runner
        .run(&body(), |body| {
            let (status, text) = rt.block_on(async {
                let res = post_signed(&h.http, &h.url, &body).await;
                (res.status().as_u16(), res.text().await.unwrap_or_default())
            });
            *answered.lock().unwrap().entry(status).or_default() += 1;
            prop_assert!(
                status == 200 || status == 400,
                "answered {} {:?} to {:?}",
                status,
                text,
                String::from_utf8_lossy(&body)
            );
            if status == 200 {
                prop_assert_eq!(text, "EVENT_RECEIVED");
            }
            Ok(())
        })
        .unwrap();
    let answered = answered.into_inner().unwrap();
    eprintln!("answers: {answered:?}");
    assert!(
        answered.get(&200).copied().unwrap_or(0) > 10,
        "{answered:?}"
    );
    // Still healthy after all that.
    let health = rt.block_on(async {
        h.http
            .get(format!("{}/health", h.url))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    assert_eq!(health, 200);
    let stored = rt.block_on(h.count("SELECT count(*) AS n FROM webhook_events"));
    eprintln!("events stored: {stored}");
    assert!(
        stored > 20,
        "the generator should produce applicable events too"
    );
    rt.block_on(h.stop());
}
