//! Flows end to end, through the real tools, dispatcher, platform-sim and webhook server:
//! send_interactive kind flow (and every refusal, each naming its field), the FLOW
//! template button of create_template and send_template, list_flows, and a customer's
//! submission (`/sim/flow_response`, the signed nfm_reply webhook) read back by
//! get_flow_responses, history and the inbox, whether the flow message was known when it
//! arrived (by wamid), not yet known (found by its token), or known only later (resolved
//! when read).

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;

use common::stack::Stack;
use common::{Harness, Opts, phone};

const FLOW_ID: &str = "7001";
const DRAFT_FLOW_ID: &str = "7002";

impl Stack {
    async fn sim_call(&self, path: &str, body: Value) -> Value {
        let resp = self
            .http
            .post(format!("{}{path}", self.sim_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().await.unwrap()
    }

    /// The flows the sim knows: a published booking flow and a draft survey.
    async fn register_flows(&self) {
        self.sim_call(
            "/sim/flows",
            json!({"flow_id": FLOW_ID, "name": "booking", "status": "PUBLISHED",
                   "categories": ["APPOINTMENT_BOOKING"]}),
        )
        .await;
        self.sim_call(
            "/sim/flows",
            json!({"flow_id": DRAFT_FLOW_ID, "name": "survey", "status": "DRAFT"}),
        )
        .await;
    }

    /// A customer with an open window (a text through the webhook).
    async fn customer(&self) -> String {
        let to = phone();
        self.inbound_text(to.as_str().into(), "hi").await;
        to
    }

    /// Waits until message `id` reached the platform (delivered or read), or failed.
    async fn settled(&self, id: &str) -> warden_store::models::Message {
        warden_test_support::wait::until(
            Duration::from_secs(20),
            "the flow message settled",
            || async {
                let st = self.message(id).await.status;
                st == "delivered" || st == "read" || st == "failed"
            },
        )
        .await;
        self.message(id).await
    }

    /// The customer's submission through the sim; waits until the webhook stored it and
    /// returns its message_id.
    async fn submit(&self, from: &str, body: Value) -> Uuid {
        let mut body = body;
        body["from"] = json!(from);
        let sent = self.sim_call("/sim/flow_response", body).await;
        let wamid = sent["wamid"].as_str().unwrap().to_string();
        warden_test_support::wait::until_some(
            Duration::from_secs(15),
            "the submission stored and indexed",
            || async {
                let mut c = self.deps.pg.get().await.unwrap();
                diesel::sql_query(
                    "SELECT m.id FROM messages m JOIN flow_responses r ON r.message_id = m.id \
                     WHERE m.wamid = $1",
                )
                .bind::<diesel::sql_types::Text, _>(&wamid)
                .get_result::<IdRow>(&mut c)
                .await
                .optional()
                .unwrap()
                .map(|r| r.id)
            },
        )
        .await
    }
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: Uuid,
}

fn flow_args(to: &str) -> Value {
    json!({"to": to, "kind": "flow", "body": "Book your table for Friday",
           "flow_id": FLOW_ID, "flow_cta": "Book now", "screen": "BOOKING",
           "data": {"party_size": 2}, "header": "Dinner", "footer": "Takes a minute"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flow_goes_out_and_its_answers_come_back() {
    let s = Stack::start(|_| {}).await;
    s.register_flows().await;
    let to = s.customer().await;

    // Sent with a token of our own; the platform body is the platform's shape.
    let mut args = flow_args(&to);
    args["flow_token"] = json!("booking-42");
    let sent = s.ok("send_interactive", args).await;
    assert_eq!(sent["status"], "queued");
    assert_eq!(sent["flow_token"], "booking-42");
    let id = sent["message_id"].as_str().unwrap().to_string();
    let m = s.settled(&id).await;
    assert_ne!(m.status, "failed", "{m:?}");
    let interactive = s.sim.stats().by_message[&id].body.clone().unwrap();
    assert_eq!(
        interactive,
        json!({"type": "flow", "header": {"type": "text", "text": "Dinner"},
               "body": {"text": "Book your table for Friday"}, "footer": {"text": "Takes a minute"},
               "action": {"name": "flow", "parameters": {
                   "flow_message_version": "3", "flow_token": "booking-42", "flow_id": FLOW_ID,
                   "flow_cta": "Book now", "mode": "published", "flow_action": "navigate",
                   "flow_action_payload": {"screen": "BOOKING", "data": {"party_size": 2}}}}})
    );

    // The customer submits, answering the flow message by its wamid.
    let wamid = m.wamid.clone().unwrap();
    let reply = s
        .submit(
            &to,
            json!({"flow_token": "booking-42", "context_message_id": wamid,
                   "response": {"date": "2026-12-24", "party_size": 4}}),
        )
        .await;
    let got = s
        .ok("get_flow_responses", json!({"flow_token": "booking-42"}))
        .await;
    let r = &got["responses"][0];
    assert_eq!(got["responses"].as_array().unwrap().len(), 1, "{got}");
    assert_eq!(r["flow_token"], "booking-42");
    assert_eq!(r["customer_id"], to.trim_start_matches('+'));
    assert_eq!(r["flow_message_id"], id);
    assert_eq!(r["message_id"], reply.to_string());
    assert_eq!(
        r["response"],
        json!({"date": "2026-12-24", "party_size": 4, "flow_token": "booking-42"})
    );
    assert!(r.get("parse_error").is_none(), "{r}");
    // The same answer by customer and by the flow message.
    for filter in [json!({"customer_id": to}), json!({"message_id": id})] {
        let again = s.ok("get_flow_responses", filter.clone()).await;
        assert_eq!(&again["responses"][0], r, "{filter}");
    }

    // History and inbox carry it; it opened the window like any customer message.
    let history = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    let newest = &history["messages"][0];
    assert_eq!(newest["type"], "flow_response", "{newest}");
    assert_eq!(newest["flow_response"]["flow_token"], "booking-42");
    assert_eq!(newest["flow_response"]["flow_message_id"], id);
    assert_eq!(newest["flow_response"]["response"]["party_size"], 4);
    let inbox = s.ok("list_inbox", json!({})).await;
    let item = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["customer_id"] == to.trim_start_matches('+'))
        .unwrap();
    assert_eq!(item["last_inbound_kind"], "flow_response", "{item}");
    assert_eq!(item["window_open"], true);

    // A generated token: random, opaque, returned.
    let sent = s.ok("send_interactive", flow_args(&to)).await;
    let token = sent["flow_token"].as_str().unwrap().to_string();
    assert!(token.len() >= 16, "{token}");
    let again = s.ok("send_interactive", flow_args(&to)).await;
    assert_ne!(again["flow_token"], sent["flow_token"]);
    // An idempotent replay answers the first call's token.
    let mut keyed = flow_args(&to);
    keyed["idempotency_key"] = json!("flow-once");
    let first = s.ok("send_interactive", keyed.clone()).await;
    let replay = s.ok("send_interactive", keyed).await;
    assert_eq!(replay["replayed"], true);
    assert_eq!(replay["flow_token"], first["flow_token"]);

    // A draft flow goes out in mode draft; in mode published the platform refuses it
    // (131009, naming the field) and the message fails with that code.
    let mut draft = flow_args(&to);
    draft["flow_id"] = json!(DRAFT_FLOW_ID);
    draft["mode"] = json!("draft");
    let ok = s.ok("send_interactive", draft.clone()).await;
    assert_ne!(
        s.settled(ok["message_id"].as_str().unwrap()).await.status,
        "failed"
    );
    draft["mode"] = json!("published");
    let refused = s.ok("send_interactive", draft).await;
    let m = s.settled(refused["message_id"].as_str().unwrap()).await;
    assert_eq!(m.status, "failed");
    assert_eq!(m.error_code, Some(131009));
    // An unknown flow: 131009 from the platform too.
    let mut unknown = flow_args(&to);
    unknown["flow_id"] = json!("999999");
    let r = s.ok("send_interactive", unknown).await;
    let m = s.settled(r["message_id"].as_str().unwrap()).await;
    assert_eq!(m.error_code, Some(131009), "{m:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_submission_finds_its_flow_before_after_and_without_the_wamid() {
    let s = Stack::start(|_| {}).await;
    s.register_flows().await;
    let to = s.customer().await;

    // Before: the submission names a wamid Warden does not know yet (the dispatcher has
    // not recorded it); the token finds the flow message.
    let sent = s.ok("send_interactive", flow_args(&to)).await;
    let (id, token) = (
        sent["message_id"].as_str().unwrap().to_string(),
        sent["flow_token"].as_str().unwrap().to_string(),
    );
    s.submit(
        &to,
        json!({"flow_token": token, "context_message_id": "wamid.NOT-RECORDED-YET",
               "response": {"ok": true}}),
    )
    .await;
    let got = s
        .ok("get_flow_responses", json!({"flow_token": token}))
        .await;
    assert_eq!(got["responses"][0]["flow_message_id"], id, "{got}");

    // Without anything known: no token in the answers (broken JSON) and a context wamid
    // Warden learns only later. Stored at once, never dropped; resolved when read.
    let sent = s.ok("send_interactive", flow_args(&to)).await;
    let (late_id, late_token) = (
        sent["message_id"].as_str().unwrap().to_string(),
        sent["flow_token"].as_str().unwrap().to_string(),
    );
    s.settled(&late_id).await;
    let late_wamid = format!("wamid.LATE-{}", Uuid::new_v4().simple());
    let reply = s
        .submit(
            &to,
            json!({"context_message_id": late_wamid, "response": "{\"date\": \"2026-12-2"}),
        )
        .await;
    let got = s
        .ok(
            "get_flow_responses",
            json!({"message_id": reply.to_string()}),
        )
        .await;
    let r = &got["responses"][0];
    assert_eq!(r["parse_error"], true, "{r}");
    assert_eq!(r["response"], json!({"raw": "{\"date\": \"2026-12-2"}));
    assert_eq!(r["flow_message_id"], Value::Null);
    assert_eq!(r["flow_token"], Value::Null);
    // Warden learns the flow message's wamid now (as the dispatcher records it).
    {
        use warden_store::schema::messages;
        let mut c = s.conn().await;
        diesel::update(messages::table.find(late_id.parse::<Uuid>().unwrap()))
            .set(messages::wamid.eq(&late_wamid))
            .execute(&mut c)
            .await
            .unwrap();
    }
    let got = s
        .ok("get_flow_responses", json!({"flow_token": late_token}))
        .await;
    let r = &got["responses"][0];
    assert_eq!(r["message_id"], reply.to_string(), "{got}");
    assert_eq!(r["flow_message_id"], late_id);
    assert_eq!(r["flow_token"], late_token);
    let history = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    assert_eq!(
        history["messages"][0]["flow_response"]["flow_message_id"],
        late_id
    );

    // After: answered by wamid, with no token in the response: the token comes from the
    // flow message.
    let sent = s.ok("send_interactive", flow_args(&to)).await;
    let after_id = sent["message_id"].as_str().unwrap().to_string();
    let wamid = s.settled(&after_id).await.wamid.unwrap();
    s.submit(
        &to,
        json!({"context_message_id": wamid, "response": {"answer": 3}}),
    )
    .await;
    let got = s
        .ok("get_flow_responses", json!({"message_id": after_id}))
        .await;
    assert_eq!(
        got["responses"][0]["flow_token"], sent["flow_token"],
        "{got}"
    );

    // A flow message Warden never sent: kept, flow_message_id null.
    let stranger = s
        .submit(
            &to,
            json!({"flow_token": "not-ours", "context_message_id": "wamid.ELSEWHERE",
                   "response": {"x": 1}}),
        )
        .await;
    let got = s
        .ok("get_flow_responses", json!({"flow_token": "not-ours"}))
        .await;
    assert_eq!(got["responses"][0]["message_id"], stranger.to_string());
    assert_eq!(got["responses"][0]["flow_message_id"], Value::Null);

    // Newest first, limited.
    let all = s
        .ok("get_flow_responses", json!({"customer_id": to, "limit": 2}))
        .await;
    let list = all["responses"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["message_id"], stranger.to_string());
    assert!(list[0]["received_at"].as_str() >= list[1]["received_at"].as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flow_refusal_names_its_field() {
    let h = Harness::start().await;
    let to = phone();
    h.inbound(&to, Utc::now() - TimeDelta::minutes(5)).await;
    let base = |changes: Value| {
        let mut a = json!({"to": to, "kind": "flow", "body": "Book", "flow_id": FLOW_ID,
                           "flow_cta": "Book now", "screen": "BOOKING"});
        for (k, v) in changes.as_object().unwrap() {
            if v.is_null() {
                a.as_object_mut().unwrap().remove(k);
            } else {
                a[k] = v.clone();
            }
        }
        a
    };
    let cases = [
        (json!({"flow_id": null}), "flow_id"),
        (json!({"flow_name": "booking"}), "flow_name"),
        (json!({"flow_cta": null}), "flow_cta"),
        (json!({"flow_cta": "x".repeat(21)}), "flow_cta"),
        (json!({"flow_cta": "Book 📅"}), "flow_cta"),
        (json!({"flow_token": "t".repeat(257)}), "flow_token"),
        (json!({"flow_action": "jump"}), "flow_action"),
        (json!({"mode": "live"}), "mode"),
        (json!({"screen": null}), "screen"),
        (json!({"data": {}}), "data"),
        (json!({"data": "[1, 2]"}), "data"),
        (json!({"flow_action": "data_exchange"}), "screen"),
        (json!({"body": "b".repeat(1025)}), "body"),
        (
            json!({"header_media": {"type": "image", "link": "https://x.example/a.jpg"}}),
            "header",
        ),
        (json!({"url": "https://x.example"}), "url"),
        (json!({"buttons": [{"id": "a", "title": "A"}]}), "buttons"),
    ];
    for (changes, field) in cases {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "send_interactive",
                base(changes.clone()),
            )
            .await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("`{field}`")),
            "{changes}: expected `{field}` in {message}"
        );
    }
    // Flow parameters on another kind are refused by name.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            json!({"to": to, "kind": "buttons", "body": "Pick", "flow_cta": "Book",
                   "buttons": [{"id": "a", "title": "A"}]}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`flow_cta`"), "{e}");
    // data_exchange takes no screen, and needs none.
    let ok = h
        .ok(
            "send_interactive",
            base(json!({"flow_action": "data_exchange", "screen": null, "flow_name": "booking", "flow_id": null})),
        )
        .await;
    assert_eq!(ok["status"], "queued");
    // Outside the window: TEMPLATE_REQUIRED, nothing recorded as sent.
    let closed = phone();
    h.inbound(&closed, Utc::now() - TimeDelta::hours(25)).await;
    let mut args = base(json!({}));
    args["to"] = json!(closed);
    h.err("TEMPLATE_REQUIRED", "send_interactive", args).await;
    // Reads: a filter is required; the limit is bounded.
    let e = h
        .err("INVALID_ARGUMENT", "get_flow_responses", json!({}))
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("`flow_token`"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "get_flow_responses",
            json!({"flow_token": "t", "limit": 101}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`limit`"), "{e}");
    h.err(
        "NOT_FOUND",
        "get_flow_responses",
        json!({"message_id": Uuid::new_v4()}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flow_template_reaches_the_customer_outside_the_window() {
    let s = Stack::start(|_| {}).await;
    s.register_flows().await;
    let created = s
        .ok(
            "create_template",
            json!({"name": "book_table", "category": "UTILITY", "language": "en",
                   "body_text": "Your table for {{1}} is ready to book",
                   "buttons": json!([{"type": "FLOW", "text": "Book", "flow_id": FLOW_ID,
                                      "flow_action": "navigate", "navigate_screen": "BOOKING"}]).to_string()}),
        )
        .await;
    assert_eq!(created["status"], "PENDING");
    s.sim_call(
        "/sim/templates/book_table/en/decision",
        json!({"status": "APPROVED"}),
    )
    .await;
    let synced = s
        .ok(
            "sync_template_status",
            json!({"template_name": "book_table"}),
        )
        .await;
    assert_eq!(synced["status"], "APPROVED");
    s.ok(
        "create_template",
        json!({"name": "plain_note", "category": "UTILITY", "language": "en",
               "body_text": "Note {{1}}"}),
    )
    .await;
    s.sim_call(
        "/sim/templates/plain_note/en/decision",
        json!({"status": "APPROVED"}),
    )
    .await;
    s.ok(
        "sync_template_status",
        json!({"template_name": "plain_note"}),
    )
    .await;

    // A customer who never wrote: only a template reaches them.
    let to = phone();
    let sent = s
        .ok(
            "send_template",
            json!({"to": to, "template_name": "book_table", "variables": ["Friday"],
                   "flow_token": "tpl-1", "flow_data": {"party_size": 2}}),
        )
        .await;
    assert_eq!(sent["flow_token"], "tpl-1");
    let id = sent["message_id"].as_str().unwrap().to_string();
    let m = s.settled(&id).await;
    assert_ne!(m.status, "failed", "{m:?}");
    let template = s.sim.stats().by_message[&id].template.clone().unwrap();
    let button = template["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "button")
        .cloned()
        .unwrap();
    assert_eq!(
        button,
        json!({"type": "button", "sub_type": "flow", "index": "0", "parameters": [
            {"type": "action", "action": {"flow_token": "tpl-1", "flow_action_data": {"party_size": 2}}}]})
    );
    // Without a token one is generated; the answer comes back to it.
    let sent = s
        .ok(
            "send_template",
            json!({"to": to, "template_name": "book_table", "variables": ["Saturday"]}),
        )
        .await;
    let token = sent["flow_token"].as_str().unwrap().to_string();
    let id = sent["message_id"].as_str().unwrap().to_string();
    let wamid = s.settled(&id).await.wamid.unwrap();
    s.submit(
        &to,
        json!({"flow_token": token, "context_message_id": wamid, "response": {"time": "20:00"}}),
    )
    .await;
    let got = s
        .ok("get_flow_responses", json!({"flow_token": token}))
        .await;
    assert_eq!(got["responses"][0]["flow_message_id"], id, "{got}");

    // A template without a FLOW button refuses the flow parameters by name.
    for (key, value) in [("flow_token", json!("x")), ("flow_data", json!({"a": 1}))] {
        let mut args = json!({"to": to, "template_name": "plain_note", "variables": ["a"]});
        args[key] = value;
        let e = s.err("INVALID_ARGUMENT", "send_template", args).await;
        assert!(
            e["message"].as_str().unwrap().contains(&format!("`{key}`")),
            "{e}"
        );
    }
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            json!({"to": to, "template_name": "book_table", "variables": ["a"], "flow_data": {}}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("`flow_data`"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_template_refuses_a_broken_flow_button_by_name() {
    let h = Harness::with(Opts {
        sim: true,
        ..Opts::default()
    })
    .await;
    let create = |buttons: Value| {
        json!({"name": "bad_flow", "category": "MARKETING", "language": "en",
               "body_text": "Hello", "buttons": buttons.to_string()})
    };
    for (buttons, field) in [
        (
            json!([{"type": "FLOW", "text": "Go"}]),
            "buttons[0].flow_id",
        ),
        (
            json!([{"type": "FLOW", "text": "Go", "flow_id": "1", "flow_name": "n"}]),
            "buttons[0].flow_name",
        ),
        (
            json!([{"type": "FLOW", "text": "Go", "flow_id": "1", "flow_action": "open"}]),
            "buttons[0].flow_action",
        ),
        (
            json!([{"type": "FLOW", "text": "Go", "flow_id": "1", "flow_action": "data_exchange",
                    "navigate_screen": "A"}]),
            "buttons[0].navigate_screen",
        ),
        (
            json!([{"type": "QUICK_REPLY", "text": "Go", "flow_id": "1"}]),
            "buttons[0].flow_id",
        ),
    ] {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "create_template",
                create(buttons.clone()),
            )
            .await;
        assert!(
            e["message"].as_str().unwrap().contains(field),
            "{buttons}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_flows_reads_the_platform() {
    let s = Stack::start(|_| {}).await;
    let none = s.ok("list_flows", json!({})).await;
    assert_eq!(none["flows"], json!([]));
    s.register_flows().await;
    let listed = s.ok("list_flows", json!({})).await;
    assert!(listed["from"].is_string(), "{listed}");
    let flows = listed["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2, "{listed}");
    assert_eq!(
        flows[0],
        json!({"id": FLOW_ID, "name": "booking", "status": "PUBLISHED",
               "categories": ["APPOINTMENT_BOOKING"]})
    );
    assert_eq!(flows[1]["status"], "DRAFT");
}
