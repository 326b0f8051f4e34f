//! Listen tools end to end: signed inbound webhooks of every type, posted to the real
//! webhook server over the gateway's database, read back through get_conversation_history,
//! list_inbox and mark_as_read (against the platform-sim).

use crate::common;

use std::net::TcpListener;

use common::{APP_SECRET, Harness, Opts, PHONE_NUMBER_ID, phone};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_core::Core;
use warden_platform::signature;

/// The real webhook server over the harness's database; returns its URL.
fn webhook(h: &Harness) -> String {
    // The harness's settings carry the test account's app secret.
    let state =
        warden_webhook::AppState::new(Core::new(h.deps.clone(), "webhook")).expect("secret set");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(warden_webhook::server(listener, state).unwrap());
    url
}

fn wamid() -> String {
    format!(
        "wamid.L{}",
        Uuid::new_v4().simple().to_string().to_uppercase()
    )
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A platform message object of `kind` from `from`.
fn message(from: &str, id: &str, kind: &str, part: Value) -> Value {
    let mut m = json!({"from": from, "id": id, "timestamp": now().to_string(), "type": kind});
    if !part.is_null() {
        m[kind] = part;
    }
    m
}

/// POST one signed messages webhook carrying `messages`; insists on 200.
async fn deliver(url: &str, messages: Vec<Value>) {
    let contacts: Vec<Value> = messages
        .iter()
        .map(|m| json!({"profile": {"name": "Ana"}, "wa_id": m["from"]}))
        .collect();
    post_messages_change(url, json!({"contacts": contacts, "messages": messages})).await;
}

/// POST one signed `messages` change whose value holds `fields` (beside the number's
/// metadata); insists on 200.
async fn post_messages_change(url: &str, fields: Value) {
    let mut value = json!({"messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550100000", "phone_number_id": PHONE_NUMBER_ID}});
    for (k, v) in fields.as_object().unwrap() {
        value[k] = v.clone();
    }
    let body = json!({"object": "whatsapp_business_account",
        "entry": [{"id": "200000000000777", "time": now(),
                   "changes": [{"field": "messages", "value": value}]}]})
    .to_string();
    let res = reqwest::Client::new()
        .post(format!("{url}/webhook"))
        .header("content-type", "application/json")
        .header(
            "x-hub-signature-256",
            signature::sign(APP_SECRET.as_bytes(), body.as_bytes()),
        )
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

async fn history(h: &Harness, customer: &str, extra: Value) -> Value {
    let mut args = json!({"customer_id": customer});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    h.ok("get_conversation_history", args).await
}

/// The message of `history` whose wamid is `w`.
fn by_wamid<'a>(history: &'a Value, w: &str) -> &'a Value {
    history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["wamid"] == w)
        .unwrap_or_else(|| panic!("{w} not in {history}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_inbound_type_reads_back_normalised() {
    let h = Harness::with(Opts {
        sim: true,
        nats: false,
        ..Opts::default()
    })
    .await;
    let url = webhook(&h);
    let p = phone();

    // Something of ours to answer and react to (inside an open window).
    h.inbound(&p, chrono::Utc::now()).await;
    let sent = h
        .ok(
            "send_message",
            json!({"to": p, "text": "Your order shipped"}),
        )
        .await;
    let ours_id = sent["message_id"].as_str().unwrap().to_string();
    let ours_wamid = wamid();
    {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        use warden_store::schema::messages;
        let mut c = h.conn().await;
        // As the dispatcher records it once the platform accepted it.
        diesel::update(messages::table.find(Uuid::parse_str(&ours_id).unwrap()))
            .set(messages::wamid.eq(&ours_wamid))
            .execute(&mut c)
            .await
            .unwrap();
    }

    let w: Vec<String> = (0..16).map(|_| wamid()).collect();
    let mut text = message(&p, &w[0], "text", json!({"body": "Where is it?"}));
    text["context"] = json!({"from": "15550100000", "id": ours_wamid});
    let mut referred = message(&p, &w[1], "text", json!({"body": "I saw the ad"}));
    referred["referral"] = json!({"source_url": "https://fb.me/ad", "source_type": "ad",
                                  "source_id": "1", "headline": "Sale"});
    let batch = vec![
        text,
        referred,
        message(
            &p,
            &w[2],
            "image",
            json!({"caption": "box", "mime_type": "image/jpeg",
                                             "sha256": "aGFzaA==", "id": "9001"}),
        ),
        message(
            &p,
            &w[3],
            "audio",
            json!({"mime_type": "audio/ogg; codecs=opus",
                                             "sha256": "h", "id": "9002", "voice": true}),
        ),
        message(
            &p,
            &w[4],
            "document",
            json!({"filename": "r.pdf", "mime_type": "application/pdf",
                                                "sha256": "h", "id": "9003"}),
        ),
        message(
            &p,
            &w[5],
            "sticker",
            json!({"mime_type": "image/webp", "sha256": "h",
                                               "id": "9004", "animated": false}),
        ),
        message(
            &p,
            &w[6],
            "video",
            json!({"mime_type": "video/mp4", "sha256": "h", "id": "9005"}),
        ),
        message(
            &p,
            &w[7],
            "reaction",
            json!({"message_id": ours_wamid, "emoji": "\u{1F44D}"}),
        ),
        message(
            &p,
            &w[8],
            "location",
            json!({"latitude": -6.2, "longitude": 106.8,
                                                "name": "Monas"}),
        ),
        message(
            &p,
            &w[9],
            "interactive",
            json!({"type": "list_reply",
            "list_reply": {"id": "tue", "title": "Tuesday", "description": "9-12"}}),
        ),
        message(
            &p,
            &w[10],
            "button",
            json!({"payload": "TRACK", "text": "Track order"}),
        ),
        message(
            &p,
            &w[11],
            "contacts",
            json!([{"name": {"formatted_name": "Bo"}}]),
        ),
        message(
            &p,
            &w[12],
            "order",
            json!({"catalog_id": "c", "text": "two",
                                              "product_items": []}),
        ),
        message(&p, &w[13], "unsupported", Value::Null),
    ];
    deliver(&url, batch).await;
    // Edit the first, revoke the image.
    deliver(
        &url,
        vec![
            message(
                &p,
                &w[14],
                "edit",
                json!({"original_message_id": w[0],
                "message": {"type": "text", "text": {"body": "Where is my parcel?"}}}),
            ),
            message(&p, &w[15], "revoke", json!({"original_message_id": w[2]})),
        ],
    )
    .await;

    let all = history(&h, &p, json!({"limit": 500})).await;
    assert_eq!(all["customer_id"], p);
    assert_eq!(all["next_before"], Value::Null);
    assert_eq!(all["messages"].as_array().unwrap().len(), 17, "{all}");

    let t = by_wamid(&all, &w[0]);
    assert_eq!(t["direction"], "inbound");
    assert_eq!(t["type"], "text");
    assert_eq!(t["text"], "Where is my parcel?", "the edit shows");
    assert_eq!(t["edited"], true);
    assert_eq!(t["reply_to"], ours_id.as_str());
    assert_eq!(t["status"], "received");
    assert!(t["platform_timestamp"].is_string());
    Uuid::parse_str(t["message_id"].as_str().unwrap()).unwrap();

    assert_eq!(by_wamid(&all, &w[1])["referral"]["headline"], "Sale");
    let img = by_wamid(&all, &w[2]);
    assert_eq!(
        (img["deleted"].clone(), img["text"].clone()),
        (json!(true), Value::Null)
    );
    assert!(
        img.get("media").is_none(),
        "a revoked message shows nothing: {img}"
    );
    assert_eq!(by_wamid(&all, &w[3])["media"]["voice"], true);
    assert_eq!(by_wamid(&all, &w[4])["media"]["filename"], "r.pdf");
    assert_eq!(by_wamid(&all, &w[5])["media"]["animated"], false);
    assert_eq!(by_wamid(&all, &w[6])["media"]["media_id"], "9005");
    let r = by_wamid(&all, &w[7]);
    assert_eq!(
        r["reaction"],
        json!({"emoji": "\u{1F44D}", "to_message_id": ours_id})
    );
    assert_eq!(by_wamid(&all, &w[8])["location"]["name"], "Monas");
    let i = by_wamid(&all, &w[9]);
    assert_eq!(
        i["interactive"],
        json!({"reply_id": "tue", "title": "Tuesday", "description": "9-12"})
    );
    assert_eq!(i["text"], "Tuesday");
    assert_eq!(by_wamid(&all, &w[10])["interactive"]["reply_id"], "TRACK");
    assert_eq!(by_wamid(&all, &w[11])["type"], "contacts");
    assert_eq!(by_wamid(&all, &w[12])["text"], "two");
    assert_eq!(by_wamid(&all, &w[13])["type"], "unsupported");
    assert_eq!(by_wamid(&all, &w[14])["type"], "edit");
    assert_eq!(by_wamid(&all, &w[15])["type"], "revoke");
    let out = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_id"] == ours_id.as_str())
        .unwrap();
    assert_eq!(out["direction"], "outbound");
    assert_eq!(out["text"], "Your order shipped");

    // Pages of 5 walk the same 17 messages, newest first, without gaps or repeats.
    let mut seen = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let mut args = json!({"limit": 5});
        if let Some(b) = &before {
            args["before"] = json!(b);
        }
        let page = history(&h, &p, args).await;
        seen.extend(
            page["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["message_id"].clone()),
        );
        match page["next_before"].as_str() {
            Some(b) => before = Some(b.to_string()),
            None => break,
        }
    }
    let expected: Vec<Value> = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message_id"].clone())
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_reply_and_mark_as_read() {
    let h = Harness::with(Opts {
        sim: true,
        nats: false,
        ..Opts::default()
    })
    .await;
    let url = webhook(&h);
    let (a, b) = (phone(), phone());
    let (a1, a2, b1) = (wamid(), wamid(), wamid());
    deliver(
        &url,
        vec![
            message(&a, &a1, "text", json!({"body": "hello?"})),
            message(
                &a,
                &a2,
                "image",
                json!({"caption": "this one", "id": "1",
                                              "mime_type": "image/png", "sha256": "h"}),
            ),
            message(&b, &b1, "text", json!({"body": "hi"})),
        ],
    )
    .await;

    let inbox = h.ok("list_inbox", json!({})).await;
    assert_eq!(inbox["total"], 2, "{inbox}");
    let item_a = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["customer_id"] == a.as_str())
        .unwrap();
    assert_eq!(item_a["unanswered_count"], 2);
    assert_eq!(item_a["last_inbound_text"], "this one");
    assert_eq!(item_a["window_open"], true);
    assert!(item_a["time_remaining_secs"].as_i64().unwrap() > 23 * 3600);
    let page = h.ok("list_inbox", json!({"limit": 1, "offset": 1})).await;
    assert_eq!(
        (
            page["items"].as_array().unwrap().len(),
            page["total"].clone()
        ),
        (1, json!(2))
    );

    // Read a's messages: the platform is told, the message is read.
    let hist = history(&h, &a, json!({})).await;
    let latest = hist["messages"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_string();
    let read = h
        .ok(
            "mark_as_read",
            json!({"message_id": latest, "typing_indicator": true}),
        )
        .await;
    assert_eq!(read["status"], "read");
    assert_eq!(read["message_id"], latest.as_str());
    let stats: Value = reqwest::get(format!("{}/sim/stats", h.sim().url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["marked_read"], 1, "{stats}");
    let hist = history(&h, &a, json!({})).await;
    assert_eq!(hist["messages"][0]["status"], "read");
    assert_eq!(hist["messages"][1]["status"], "received");

    // Answering a takes them out of the inbox; b still waits.
    h.ok(
        "reply_customer",
        json!({"customer_id": a, "message_text": "On its way"}),
    )
    .await;
    let inbox = h.ok("list_inbox", json!({})).await;
    assert_eq!(inbox["total"], 1, "{inbox}");
    assert_eq!(inbox["items"][0]["customer_id"], b.as_str());

    // Refusals name the parameter.
    let ours = hist["messages"][0]["message_id"]
        .as_str()
        .unwrap()
        .to_string();
    let after = history(&h, &a, json!({})).await;
    let outbound = after["messages"][0]["message_id"].as_str().unwrap();
    assert_ne!(outbound, ours);
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "mark_as_read",
            json!({"message_id": outbound}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("outbound"), "{e}");
    h.err(
        "NOT_FOUND",
        "mark_as_read",
        json!({"message_id": Uuid::now_v7().to_string()}),
    )
    .await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "mark_as_read",
            json!({"message_id": "nope"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("message_id"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "mark_as_read",
            json!({"message_id": ours, "typing_indicator": "maybe"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("typing_indicator"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "get_conversation_history",
            json!({"customer_id": a, "limit": 501}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("limit"), "{e}");
    h.err(
        "NOT_FOUND",
        "get_conversation_history",
        json!({"customer_id": b, "before": ours}),
    )
    .await;
    let e = h
        .err("INVALID_ARGUMENT", "list_inbox", json!({"offset": -1}))
        .await;
    assert!(e["message"].as_str().unwrap().contains("offset"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_number_inherits_opt_outs_and_continues_the_history() {
    let h = Harness::with(Opts {
        sim: true,
        nats: false,
        ..Opts::default()
    })
    .await;
    let url = webhook(&h);
    let (old, new) = (phone(), phone());
    let first = wamid();
    deliver(
        &url,
        vec![message(&old, &first, "text", json!({"body": "before"}))],
    )
    .await;
    h.opt_out(&old, false).await; // marketing only
    deliver(
        &url,
        vec![message(
            &old,
            &wamid(),
            "system",
            json!({"body": format!("User A changed from {old} to {new}"),
                   "new_wa_id": new, "type": "user_changed_number"}),
        )],
    )
    .await;
    let later = wamid();
    deliver(
        &url,
        vec![message(&new, &later, "text", json!({"body": "after"}))],
    )
    .await;

    let ctx = h
        .ok("get_customer_context", json!({"customer_id": new}))
        .await;
    assert_eq!(ctx["opt_in"]["marketing"], false, "inherited: {ctx}");
    assert_eq!(
        ctx["opt_in"]["utility"], true,
        "never stricter than the old: {ctx}"
    );
    let hist = history(&h, &new, json!({})).await;
    let kinds: Vec<&str> = hist["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "system", "text"], "{hist}");
    assert_eq!(by_wamid(&hist, &later)["text"], "after");
    assert_eq!(by_wamid(&hist, &first)["text"], "before");
    assert_eq!(h.audits("customer_number_changed").await, 1);
}

/// POST one signed statuses webhook for our message `message_id` (matched by
/// `biz_opaque_callback_data`), carrying the platform's per-message `pricing`.
async fn deliver_status(url: &str, to: &str, message_id: &str, status: &str, pricing: Value) {
    let status = json!({"id": wamid(), "status": status, "timestamp": now().to_string(),
                        "recipient_id": to, "biz_opaque_callback_data": message_id,
                        "pricing": pricing});
    post_messages_change(url, json!({"statuses": [status]})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_customer_wrote_at_the_platform_time_everywhere() {
    let h = Harness::with(Opts {
        sim: true,
        nats: false,
        ..Opts::default()
    })
    .await;
    let url = webhook(&h);
    let a = phone();
    // A webhook the platform retried: the customer wrote ten minutes before it arrived.
    let wrote = now() - 600;
    let mut m = message(&a, &wamid(), "text", json!({"body": "still there?"}));
    m["timestamp"] = json!(wrote.to_string());
    deliver(&url, vec![m]).await;
    let wrote_at = chrono::DateTime::from_timestamp(wrote, 0)
        .unwrap()
        .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);

    let inbox = h.ok("list_inbox", json!({})).await;
    assert_eq!(inbox["items"][0]["customer_id"], a.as_str(), "{inbox}");
    assert_eq!(
        inbox["items"][0]["last_inbound_at"],
        wrote_at.as_str(),
        "{inbox}"
    );
    let conv = h.ok("check_conversation", json!({"customer_id": a})).await;
    assert_eq!(conv["last_inbound_at"], wrote_at.as_str(), "{conv}");
    let hist = history(&h, &a, json!({})).await;
    assert_eq!(hist["messages"][0]["platform_timestamp"], wrote_at.as_str());

    // check_conversation says who the customer is, like every tool that takes one.
    assert_eq!(conv["phone"], a.as_str(), "{conv}");
    for k in ["bsuid", "parent_bsuid", "username"] {
        assert!(conv.get(k).is_some_and(Value::is_null), "{k}: {conv}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_shows_what_it_cost_and_spend_sums_a_period() {
    let h = Harness::with(Opts {
        sim: true,
        nats: false,
        ..Opts::default()
    })
    .await;
    let url = webhook(&h);
    h.insert_template(
        "order_update",
        "en",
        "utility",
        "APPROVED",
        "Order {{1}} shipped",
    )
    .await;
    let b = phone();
    let sent = h
        .ok(
            "send_template",
            json!({"to": b, "template_name": "order_update", "variables": ["A-1"]}),
        )
        .await;
    let id = sent["message_id"].as_str().unwrap().to_string();
    let before = h.ok("get_delivery_status", json!({"message_id": id})).await;
    assert!(before["pricing"].is_null(), "{before}");

    deliver_status(
        &url,
        &b,
        &id,
        "delivered",
        json!({"billable": true, "pricing_model": "PMP", "category": "utility", "type": "regular"}),
    )
    .await;
    let status = h.ok("get_delivery_status", json!({"message_id": id})).await;
    let p = &status["pricing"];
    assert_eq!(p["category"], "utility", "{status}");
    assert_eq!(p["billable"], true);
    assert_eq!(p["type"], "regular");
    assert_eq!(p["pricing_model"], "PMP");
    let rate = h
        .ok(
            "estimate_pricing",
            json!({"conversation_type": "utility", "recipient_country": "ID"}),
        )
        .await;
    let actual: f64 = p["actual_cost"].as_str().unwrap().parse().unwrap();
    assert!(actual > 0.0, "{status}");
    assert!(
        (actual - rate["cost_per_conversation"].as_f64().unwrap()).abs() < 1e-9,
        "{status} {rate}"
    );
    assert_eq!(p["currency"], rate["currency"]);

    // The period's spend: estimated beside actual.
    let spend = h.ok("get_spend", json!({})).await;
    assert_eq!(spend["actual"], p["actual_cost"], "{spend}");
    assert_eq!(spend["estimated"], p["actual_cost"], "{spend}");
    let line = &spend["by_category"][0];
    assert_eq!(line["category"], "utility", "{spend}");
    assert_eq!(
        (line["reported"].clone(), line["actual_billable"].clone()),
        (json!(1), json!(1))
    );
    // A period before the message: nothing.
    let old = h
        .ok(
            "get_spend",
            json!({"since": "2020-01-01T00:00:00Z", "until": "2020-02-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(old["actual"], "0.0000", "{old}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "get_spend",
            json!({"since": "2030-01-02T00:00:00Z", "until": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("since"), "{e}");
    h.err(
        "INVALID_ARGUMENT",
        "get_spend",
        json!({"until": "yesterday"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "get_spend",
        json!({"since": "2020-01-01T00:00:00Z", "until": "2022-01-01T00:00:00Z"}),
    )
    .await;
}
