//! Customers without phone numbers, end to end: a phone-less user writes through
//! platform-sim's signed webhook, the reply by BSUID goes tool -> core -> stream ->
//! dispatcher (`recipient` = the BSUID) -> sim, and the sim's status webhook settles it.
//! A STOP from the phone-less user blocks marketing by BSUID and, once a webhook links
//! their phone, by phone. Every tool that takes a customer takes a BSUID and refuses a
//! malformed one with INVALID_ARGUMENT naming the parameter.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_sim::users::SimUser;

use common::stack::Stack;
use common::{ACCESS_TOKEN, Harness, PHONE_NUMBER_ID, phone};

fn bsuid() -> String {
    format!("ID.{}", Uuid::new_v4().simple())
}

/// The whole pipeline, as these tests need it.
async fn stack() -> Stack {
    Stack::start(|_| {}).await
}

impl Stack {
    /// A user's message through the sim's signed webhook; waits until it is stored and
    /// returns the customer key it was stored under.
    async fn inbound_key(&self, user: SimUser, text: &str) -> String {
        self.inbound_text(user, text).await.1
    }

    async fn status(&self, id: Uuid) -> String {
        use warden_store::schema::messages;
        let mut c = self.deps.pg.get().await.unwrap();
        messages::table
            .find(id)
            .select(messages::status)
            .first(&mut c)
            .await
            .unwrap()
    }
}

fn phoneless(b: &str) -> SimUser {
    SimUser {
        phone: None,
        user_id: Some(b.to_string()),
        parent_user_id: None,
        username: Some("@ana".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_phoneless_user_is_answered_by_bsuid_and_their_stop_holds_by_phone_after_linking() {
    let s = stack().await;
    let b = bsuid();

    // A phone-less message: stored under the BSUID, window open.
    assert_eq!(s.inbound_key(phoneless(&b), "hello").await, b);
    let ctx = s
        .ok("get_customer_context", json!({"customer_id": b}))
        .await;
    assert_eq!(ctx["customer_id"], b.as_str());
    assert_eq!(ctx["phone"], Value::Null);
    assert_eq!(ctx["bsuid"], b.as_str());
    assert_eq!(ctx["username"], "@ana");
    assert_eq!(ctx["conversation"]["window_open"], true);

    // The reply by BSUID reaches the sim as `recipient` and its status webhook settles it.
    let r = s
        .ok(
            "send_message",
            json!({"to": b, "text": "Your order is ready"}),
        )
        .await;
    assert_eq!(r["status"], "queued");
    assert_eq!(r["phone"], Value::Null);
    assert_eq!(r["bsuid"], b.as_str());
    let id: Uuid = r["message_id"].as_str().unwrap().parse().unwrap();
    warden_test_support::wait::until(Duration::from_secs(20), "delivered", || async {
        matches!(s.status(id).await.as_str(), "delivered" | "read")
    })
    .await;
    let stats = s.sim.stats();
    let sent = &stats.by_message[&id.to_string()];
    assert_eq!(sent.count, 1, "sent once");
    assert_eq!(sent.recipient, b, "addressed by BSUID");

    // STOP from the phone-less user: marketing by BSUID is refused.
    s.inbound_key(phoneless(&b), "STOP").await;
    let check = |id: String| {
        let s = &s;
        async move {
            s.ok(
                "check_compliance",
                json!({"customer_id": id, "message_type": "marketing"}),
            )
            .await
        }
    };
    let c = check(b.clone()).await;
    assert_eq!(c["allowed"], false, "{c}");
    assert_eq!(c["reason_code"], "USER_OPTED_OUT");

    // The user later shows their phone with the BSUID: the phone is the same customer.
    let p = phone();
    let linked = SimUser {
        phone: Some(p.clone()),
        ..phoneless(&b)
    };
    assert_eq!(
        s.inbound_key(linked, "it's me").await,
        p,
        "stored under the phone"
    );
    let c = check(p.clone()).await;
    assert_eq!(c["allowed"], false, "opted out by phone after linking: {c}");
    assert_eq!(c["reason_code"], "USER_OPTED_OUT");
    let c = check(b.clone()).await;
    assert_eq!(c["allowed"], false, "still opted out by BSUID: {c}");
    let ctx = s
        .ok("get_customer_context", json!({"customer_id": b}))
        .await;
    assert_eq!(ctx["customer_id"], p.as_str());
    assert_eq!(ctx["phone"], p.as_str());
    assert_eq!(ctx["bsuid"], b.as_str());
    // The whole history is the phone customer's now.
    let hist = s
        .ok("get_conversation_history", json!({"customer_id": p}))
        .await;
    assert!(
        hist.to_string().contains("Your order is ready") && hist.to_string().contains("hello"),
        "{hist}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_sim_refuses_an_unknown_bsuid_and_to_wins_over_recipient() {
    let s = stack().await;
    let known = bsuid();
    s.inbound_key(phoneless(&known), "hi").await;
    let send = |body: Value| {
        let http = reqwest::Client::new();
        let url = format!(
            "{}/v25.0/{}/messages",
            s.deps.settings.platform.api_url, PHONE_NUMBER_ID
        );
        async move {
            let r = http
                .post(url)
                .bearer_auth(ACCESS_TOKEN)
                .json(&body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    let (st, v) = send(
        json!({"messaging_product": "whatsapp", "recipient": bsuid(),
                              "type": "text", "text": {"body": "x"}}),
    )
    .await;
    assert_eq!(st, 400, "{v}");
    assert_eq!(v["error"]["code"], 131026);
    let (st, v) = send(json!({"messaging_product": "whatsapp", "recipient": known,
                              "type": "text", "text": {"body": "x"}}))
    .await;
    assert_eq!(st, 200, "{v}");
    let p = phone();
    let (st, v) = send(
        json!({"messaging_product": "whatsapp", "to": p, "recipient": bsuid(),
                              "type": "text", "text": {"body": "x"}}),
    )
    .await;
    assert_eq!(st, 200, "`to` wins: {v}");
    assert_eq!(v["contacts"][0]["wa_id"], p.as_str());
}

/// Every tool parameter naming a customer, with the other arguments it needs.
fn customer_tools(id: &str) -> Vec<(&'static str, &'static str, Value)> {
    let at = (Utc::now() + TimeDelta::hours(2)).to_rfc3339();
    vec![
        (
            "check_compliance",
            "customer_id",
            json!({"customer_id": id, "message_type": "service"}),
        ),
        ("send_message", "to", json!({"to": id, "text": "hi"})),
        (
            "send_template",
            "to",
            json!({"to": id, "template_name": "order", "variables": "[\"A1\"]"}),
        ),
        (
            "check_conversation",
            "customer_id",
            json!({"customer_id": id}),
        ),
        (
            "check_frequency_cap",
            "customer_id",
            json!({"customer_id": id}),
        ),
        (
            "get_customer_context",
            "customer_id",
            json!({"customer_id": id}),
        ),
        (
            "reply_customer",
            "customer_id",
            json!({"customer_id": id, "message_text": "hi"}),
        ),
        (
            "schedule_message",
            "customer_id",
            json!({"customer_id": id, "message_type": "service",
                   "content": "{\"type\":\"text\",\"text\":{\"body\":\"later\"}}", "deliver_at": at}),
        ),
        (
            "get_conversation_history",
            "customer_id",
            json!({"customer_id": id}),
        ),
        (
            "send_media",
            "to",
            json!({"to": id, "media_type": "image", "link": "https://cdn.example/a.jpg"}),
        ),
        (
            "send_interactive",
            "to",
            json!({"to": id, "kind": "buttons", "body": "Ok?",
                   "buttons": [{"id": "y", "title": "Yes"}]}),
        ),
        (
            "send_contacts",
            "to",
            json!({"to": id, "contacts": [{"name": {"formatted_name": "Ana"}}]}),
        ),
        (
            "send_location",
            "to",
            json!({"to": id, "latitude": -6.2, "longitude": 106.8}),
        ),
        (
            "schedule_campaign",
            "customer_ids",
            json!({"name": "c", "type": "Utility", "template_name": "order", "deliver_at": at,
                   "variables": "{\"1\": \"A1\"}",
                   "audience_filter": json!({"customer_ids": [id]}).to_string()}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_customer_taking_tool_accepts_a_bsuid_and_refuses_a_malformed_one() {
    let h = Harness::start().await;
    h.insert_template("order", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    let b = bsuid();
    // A phone-less customer with an open window (as a BSUID-only webhook leaves it).
    let key = warden_rules::bsuid::customer_key(&b).unwrap();
    {
        let mut c = h.conn().await;
        warden_core::customers::ensure(&mut c, &key).await.unwrap();
        warden_core::conversations::record_inbound(&mut c, &key, "whatsapp", "default", Utc::now())
            .await
            .unwrap();
    }
    let p = phone();
    for good in [b.as_str(), p.as_str()] {
        for (tool, param, args) in customer_tools(good) {
            let (is_err, v) = h.call(tool, args).await;
            assert!(
                !is_err || v["error"]["code"] != "INVALID_ARGUMENT",
                "{tool} refused {good} as malformed: {v}"
            );
            let _ = param;
        }
    }
    for bad in ["US.12-34", "U.123", "US.", "US.ENT.", "1D.123"] {
        for (tool, param, args) in customer_tools(bad) {
            let e = h.err("INVALID_ARGUMENT", tool, args).await;
            let msg = e["message"].as_str().unwrap_or_default();
            assert!(msg.contains(param), "{tool}({bad}): {e}");
        }
    }
    // A send by BSUID is recorded under the customer's key, whatever form was used.
    let sent = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{b}' AND direction = 'outbound'"
        ))
        .await;
    assert!(sent >= 1, "sends to the BSUID were recorded under it");
}
