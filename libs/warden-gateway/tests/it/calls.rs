//! Calls, contacts and locations end to end, through the real tools, the platform-sim (which
//! checks each body as the platform does and sends the signed webhooks) and the webhook
//! server: location and call permission requests, the customer's call permission (granted,
//! expiring, rejected, answers out of order) and the two guards on asking for it, contact
//! cards (sent, refused by their path, received and shown in history).

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use common::stack::Stack;
use common::{Harness, phone};

const DEADLINE: Duration = Duration::from_secs(20);

impl Stack {
    /// Waits until `id` was delivered or read; returns the body the sim received for it (the
    /// kind's own object) and its type.
    async fn platform_body(&self, id: &str) -> (Value, String) {
        let uuid: Uuid = id.parse().unwrap();
        warden_test_support::wait::until(DEADLINE, "status webhooks applied", || async {
            let st = self.message(&uuid.to_string()).await.status;
            st == "delivered" || st == "read"
        })
        .await;
        let stats = self.sim.stats();
        let m = &stats.by_message[id];
        (m.body.clone().unwrap_or_default(), m.kind.clone())
    }

    /// A `/sim/...` control call; the JSON answer.
    async fn control(&self, path: &str, body: Value) -> Value {
        let res = self
            .http
            .post(format!("{}/sim/{path}", self.sim_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{path}: {}", res.status());
        res.json().await.unwrap()
    }

    /// The customer's call permission as get_customer_context shows it, once `want` holds.
    async fn permission_until(&self, to: &str, want: &str) -> Value {
        warden_test_support::wait::until_some(DEADLINE, "call permission shown", || async {
            let v = self
                .ok("get_customer_context", json!({"customer_id": to}))
                .await;
            (v["call_permission"]["status"] == want).then(|| v["call_permission"].clone())
        })
        .await
    }

    /// The inbound message with `wamid` in the customer's history, once it is stored.
    async fn history_entry(&self, to: &str, wamid: &str) -> Value {
        warden_test_support::wait::until_some(DEADLINE, "inbound message in history", || async {
            let h = self
                .ok("get_conversation_history", json!({"customer_id": to}))
                .await;
            h["messages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["wamid"] == wamid)
                .cloned()
        })
        .await
    }
}

fn message_of(e: &Value) -> String {
    e["message"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_location_request_goes_out_and_the_answer_shows_in_history() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    s.inbound_text(to.as_str().into(), "hi").await;

    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "location_request", "body": "Where should we deliver?"}),
        )
        .await;
    assert_eq!(r["status"], "queued");
    let (body, kind) = s.platform_body(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "interactive");
    assert_eq!(
        body,
        json!({"type": "location_request_message", "body": {"text": "Where should we deliver?"},
               "action": {"name": "send_location"}})
    );

    // The platform shows only a body: a header, a footer or another kind's part is refused
    // by name, before anything is stored.
    for (extra, field) in [
        (json!({"header": "Delivery"}), "`header`"),
        (json!({"footer": "Thanks"}), "`footer`"),
        (json!({"url": "https://x.example"}), "`url`"),
        (json!({"buttons": [{"id": "a", "title": "A"}]}), "`buttons`"),
    ] {
        let mut args = json!({"to": to, "kind": "location_request", "body": "Where?"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let e = s.err("INVALID_ARGUMENT", "send_interactive", args).await;
        assert!(message_of(&e).contains(field), "{field}: {e}");
    }
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            json!({"to": to, "kind": "location_request", "body": "b".repeat(1025)}),
        )
        .await;
    assert!(message_of(&e).contains("`body`"), "{e}");

    // The customer's answer is an inbound location, shown with its coordinates.
    let sent = s
        .control(
            "inbound",
            json!({"from": to, "type": "location",
                   "location": {"latitude": -6.2, "longitude": 106.8, "name": "Home"}}),
        )
        .await;
    let m = s.history_entry(&to, sent["wamid"].as_str().unwrap()).await;
    assert_eq!(m["type"], "location");
    assert_eq!(m["direction"], "inbound");
    assert_eq!(m["location"]["latitude"], -6.2);
    assert_eq!(m["location"]["name"], "Home");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn call_permission_grant_expiry_rejection_and_the_daily_limit() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    s.inbound_text(to.as_str().into(), "hi").await;
    let ask = || json!({"to": to, "kind": "call_permission_request", "body": "May we call you about your order?"});

    // No answer yet.
    let v = s
        .ok("get_customer_context", json!({"customer_id": to}))
        .await;
    assert_eq!(
        v["call_permission"],
        json!({"status": "none", "permanent": false, "expires_at": null, "source": null, "updated_at": null})
    );

    // The first request reaches the platform in its shape.
    let r = s.ok("send_interactive", ask()).await;
    let (body, _) = s.platform_body(r["message_id"].as_str().unwrap()).await;
    assert_eq!(body["type"], "call_permission_request");
    assert_eq!(body["action"], json!({"name": "call_permission_request"}));
    assert_eq!(body["body"]["text"], "May we call you about your order?");

    // A temporary grant: shown by both tools, and a request while it holds is pointless.
    let reply = s
        .control(
            "call_permission",
            json!({"from": to, "response": "accept", "permanent": false, "expires_in_secs": 8}),
        )
        .await;
    let granted = s.permission_until(&to, "granted").await;
    assert_eq!(granted["permanent"], false);
    assert_eq!(granted["source"], "user_action");
    assert!(granted["expires_at"].is_string(), "{granted}");
    let conv = s.ok("check_conversation", json!({"customer_id": to})).await;
    assert_eq!(conv["call_permission"]["status"], "granted");
    let e = s.err("INVALID_ARGUMENT", "send_interactive", ask()).await;
    assert!(message_of(&e).contains("`call_permission`"), "{e}");
    // The answer is a customer message too.
    let m = s.history_entry(&to, reply["wamid"].as_str().unwrap()).await;
    assert_eq!(m["type"], "interactive");

    // Once it ends it reads none, and asking again is allowed: the second of the day.
    s.permission_until(&to, "none").await;
    s.ok("send_interactive", ask()).await;
    // The third within 24 hours is Warden's refusal, before the platform's.
    let e = s
        .err("FREQUENCY_CAP_EXCEEDED", "send_interactive", ask())
        .await;
    assert!(message_of(&e).contains("call_permission_request"), "{e}");
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) AS n FROM call_permission_requests WHERE customer_phone = '{to}'"
        ))
        .await,
        2
    );

    // A rejection, then a late webhook with an older permanent grant: the newer answer stays.
    let now = Utc::now().timestamp();
    s.control(
        "call_permission",
        json!({"from": to, "response": "reject", "permanent": false, "timestamp": now}),
    )
    .await;
    let rejected = s.permission_until(&to, "rejected").await;
    assert_eq!(rejected["expires_at"], Value::Null);
    let late = s
        .control(
            "call_permission",
            json!({"from": to, "response": "accept", "permanent": true, "timestamp": now - 60}),
        )
        .await;
    s.history_entry(&to, late["wamid"].as_str().unwrap()).await;
    let v = s
        .ok("get_customer_context", json!({"customer_id": to}))
        .await;
    assert_eq!(v["call_permission"]["status"], "rejected", "{v}");
    // A newer permanent grant replaces it, and refuses the request by name.
    s.control(
        "call_permission",
        json!({"from": to, "response": "accept", "permanent": true, "response_source": "automatic"}),
    )
    .await;
    let permanent = s.permission_until(&to, "granted").await;
    assert_eq!(permanent["permanent"], true);
    assert_eq!(permanent["source"], "automatic");
    assert_eq!(permanent["expires_at"], Value::Null);
    let e = s.err("INVALID_ARGUMENT", "send_interactive", ask()).await;
    assert!(message_of(&e).contains("permanently"), "{e}");
    assert!(s.audits("call_permission_changed").await >= 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_requests_never_both_pass_the_limit() {
    let h = Harness::start().await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let ask = json!({"to": to, "kind": "call_permission_request", "body": "May we call you?"});
    h.ok("send_interactive", ask.clone()).await;
    let calls = (0..6).map(|_| h.call("send_interactive", ask.clone()));
    let answers = futures::future::join_all(calls).await;
    let passed = answers.iter().filter(|(is_error, _)| !is_error).count();
    assert_eq!(passed, 1, "{answers:?}");
    for (is_error, v) in answers.iter().filter(|(e, _)| *e) {
        assert!(is_error);
        assert_eq!(v["error"]["code"], "FREQUENCY_CAP_EXCEEDED", "{v}");
    }
    // Another number's limit, or another customer's, is its own.
    let other = phone();
    h.inbound(&other, Utc::now() - TimeDelta::minutes(5)).await;
    h.ok(
        "send_interactive",
        json!({"to": other, "kind": "call_permission_request", "body": "May we call you?"}),
    )
    .await;
    // Outside the window the request is a free-form message like any other.
    let closed = phone();
    h.inbound(&closed, Utc::now() - TimeDelta::hours(25)).await;
    h.err(
        "TEMPLATE_REQUIRED",
        "send_interactive",
        json!({"to": closed, "kind": "call_permission_request", "body": "May we call you?"}),
    )
    .await;
}

fn card(name: &str) -> Value {
    json!({
        "name": {"formatted_name": name, "first_name": name},
        "phones": [{"phone": "+62 811 000 111", "type": "CELL", "wa_id": "62811000111"}],
        "emails": [{"email": "help@shop.example", "type": "WORK"}],
        "urls": [{"url": "https://shop.example", "type": "WORK"}],
        "org": {"company": "Shop", "title": "Support"},
        "addresses": [{"city": "Jakarta", "country_code": "ID", "type": "WORK"}],
        "birthday": "1990-04-23"
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contacts_go_out_are_refused_by_their_path_and_come_back_in_history() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    s.inbound_text(to.as_str().into(), "hi").await;

    let cards = json!([card("Support"), card("Sales")]);
    let r = s
        .ok(
            "send_contacts",
            json!({"to": to, "contacts": cards.to_string(), "idempotency_key": "cards-1"}),
        )
        .await;
    let (body, kind) = s.platform_body(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "contacts");
    assert_eq!(body, cards);
    // The same key answers the same message.
    let again = s
        .ok(
            "send_contacts",
            json!({"to": to, "contacts": cards.to_string(), "idempotency_key": "cards-1"}),
        )
        .await;
    assert_eq!(again["message_id"], r["message_id"]);

    // Each rule names the field's path.
    let mut bad_phone = json!([card("A"), card("B")]);
    bad_phone[1]["phones"][0]["phone"] = json!("call me");
    let mut unknown = json!([card("A")]);
    unknown[0]["phones"][0]["extension"] = json!("12");
    let mut no_name = json!([card("A")]);
    no_name[0]["name"] = json!({"first_name": "A"});
    let mut bad_day = json!([card("A")]);
    bad_day[0]["birthday"] = json!("1990-02-30");
    let mut bad_mail = json!([card("A")]);
    bad_mail[0]["emails"][0]["email"] = json!("nobody");
    let mut top = json!([card("A")]);
    top[0]["note"] = json!("x");
    for (contacts, field) in [
        (bad_phone, "`contacts[1].phones[0].phone`"),
        (unknown, "`contacts[0].phones[0].extension`"),
        (no_name, "`contacts[0].name.formatted_name`"),
        (bad_day, "`contacts[0].birthday`"),
        (bad_mail, "`contacts[0].emails[0].email`"),
        (top, "`contacts[0].note`"),
        (json!([]), "`contacts`"),
        (json!(vec![card("A"); 11]), "`contacts`"),
    ] {
        let e = s
            .err(
                "INVALID_ARGUMENT",
                "send_contacts",
                json!({"to": to, "contacts": contacts}),
            )
            .await;
        assert!(message_of(&e).contains(field), "{field}: {e}");
    }
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "send_contacts",
            json!({"to": to, "contacts": "not json"}),
        )
        .await;
    assert!(message_of(&e).contains("contacts"), "{e}");

    // A customer's contacts message is shown with its cards.
    let shared = json!([{"name": {"formatted_name": "Budi", "first_name": "Budi"},
                         "phones": [{"phone": "+62 812 000", "wa_id": "62812000", "type": "CELL"}]}]);
    let sent = s
        .control(
            "inbound",
            json!({"from": to, "type": "contacts", "contacts": shared}),
        )
        .await;
    let m = s.history_entry(&to, sent["wamid"].as_str().unwrap()).await;
    assert_eq!(m["type"], "contacts");
    assert_eq!(m["contacts"], shared);
    // Ours shows its cards too.
    let h = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    let ours = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_id"] == r["message_id"])
        .unwrap()
        .clone();
    assert_eq!(ours["type"], "contacts");
    assert_eq!(ours["contacts"], cards);

    // Outside the window, or opted out, contacts are refused like every free-form message.
    let closed = phone();
    s.inbound(&closed, Utc::now() - TimeDelta::hours(25)).await;
    s.err(
        "TEMPLATE_REQUIRED",
        "send_contacts",
        json!({"to": closed, "contacts": [card("A")]}),
    )
    .await;
}

/// What warden-scheduler does at deliver_at with a scheduled row (as the property test of
/// every path builds it).
async fn dispatch_scheduled(
    h: &Harness,
    to: &str,
    id: &str,
) -> Result<warden_core::Accepted, warden_core::SendError> {
    let row = h.message(id).await;
    warden_core::Core::new(h.deps.clone(), "test")
        .send(warden_core::SendRequest {
            sender: None,
            phone: warden_rules::phone::canonicalize(to).unwrap(),
            channel: "whatsapp".into(),
            kind: warden_core::SendKind::from_content(&row.content).unwrap(),
            message_type: row.message_type.parse().unwrap(),
            campaign_id: None,
            existing_message_id: Some(row.id),
            refusal: warden_core::RefusalMode::RecordFailed,
            actor: "scheduler",
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_scheduled_request_meets_the_same_guards_when_it_comes_due() {
    let h = Harness::start().await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let content = json!({"type": "interactive", "interactive": {"type": "call_permission_request",
        "body": {"text": "May we call you?"}, "action": {"name": "call_permission_request"}}});
    let deliver_at = (Utc::now() + TimeDelta::minutes(30)).to_rfc3339();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let v = h
            .ok(
                "schedule_message",
                json!({"customer_id": to, "message_type": "service", "content": content,
                       "deliver_at": deliver_at}),
            )
            .await;
        ids.push(v["message_id"].as_str().unwrap().to_string());
    }
    // The first two go; the third is refused and recorded as failed.
    dispatch_scheduled(&h, &to, &ids[0]).await.unwrap();
    dispatch_scheduled(&h, &to, &ids[1]).await.unwrap();
    let third = dispatch_scheduled(&h, &to, &ids[2]).await;
    assert!(
        matches!(third, Err(warden_core::SendError::RefusedRecorded { .. })),
        "{third:?}"
    );
    let row = h.message(&ids[2]).await;
    assert_eq!(row.status, "failed");
    assert!(
        row.error_explanation
            .as_deref()
            .unwrap_or_default()
            .contains("call_permission_request"),
        "{row:?}"
    );

    // With a grant on record a scheduled request is refused and recorded too.
    let other = phone();
    h.inbound(&other, Utc::now() - TimeDelta::minutes(5)).await;
    {
        let mut c = h.conn().await;
        let reply = warden_core::calls::Reply {
            response: warden_rules::call_permission::Response::Accept,
            permanent: true,
            expires_at: None,
            source: Some("user_action".into()),
        };
        let key = warden_rules::phone::canonicalize(&other).unwrap();
        let stored = warden_core::calls::permission::record(
            &mut c,
            "default",
            &key,
            &reply,
            Utc::now(),
            "wamid.T",
            "test",
        )
        .await
        .unwrap();
        assert!(stored);
    }
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": other, "message_type": "service", "content": content,
                   "deliver_at": deliver_at}),
        )
        .await;
    let id = v["message_id"].as_str().unwrap().to_string();
    let refused = dispatch_scheduled(&h, &other, &id).await;
    assert!(
        matches!(refused, Err(warden_core::SendError::RefusedRecorded { .. })),
        "{refused:?}"
    );
    let row = h.message(&id).await;
    assert_eq!(row.status, "failed");
    assert!(
        row.error_explanation
            .as_deref()
            .unwrap_or_default()
            .contains("call_permission"),
        "{row:?}"
    );
}
