//! Rich messages end to end: tool -> stream -> dispatcher -> platform-sim (which checks the
//! body as the platform does and records its type) -> signed status webhooks -> webhook
//! server -> the message row moves to delivered/read. Plus get_media / upload_media, and
//! every refusal: window closed, opted out, each limit at its edge.

use crate::common;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::ContentBlock;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_service::Dependencies;

use common::stack::Stack;
use common::{ACCESS_TOKEN, Harness, WABA_ID, check_envelope, phone};

const MEDIA_LIMIT: u64 = 64 * 1024;

/// The whole pipeline, as these tests need it.
async fn stack() -> Stack {
    Stack::start(|s| s.media_max_bytes = MEDIA_LIMIT).await
}

impl Stack {
    /// A customer message through the sim's signed webhook; returns its message_id.
    async fn inbound_id(&self, from: &str) -> Uuid {
        self.inbound_text(from.into(), "hello").await.0
    }

    /// Waits until `id` is delivered or read (the sim's status webhooks arrived); returns
    /// the stored content and the type the sim recorded for the send.
    async fn delivered(&self, id: &str) -> (Value, String) {
        let uuid: Uuid = id.parse().unwrap();
        warden_test_support::wait::until(
            Duration::from_secs(20),
            "status webhooks applied",
            || async {
                let st = status(&self.deps, uuid).await;
                st == "delivered" || st == "read"
            },
        )
        .await;
        let stats = self.sim.stats();
        let kind = stats.by_message[id].kind.clone();
        assert_eq!(stats.by_message[id].count, 1, "sent once");
        (content(&self.deps, uuid).await, kind)
    }

    async fn sim_media(&self, mime: &str, bytes: Vec<u8>) -> String {
        let resp: Value = self
            .http
            .post(format!("{}/sim/media", self.sim_url))
            .header("content-type", mime)
            .body(bytes)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        resp["id"].as_str().unwrap().to_string()
    }
}

async fn status(deps: &Dependencies, id: Uuid) -> String {
    use warden_store::schema::messages;
    let mut c = deps.pg.get().await.unwrap();
    messages::table
        .find(id)
        .select(messages::status)
        .first(&mut c)
        .await
        .unwrap()
}

async fn content(deps: &Dependencies, id: Uuid) -> Value {
    use warden_store::schema::messages;
    let mut c = deps.pg.get().await.unwrap();
    messages::table
        .find(id)
        .select(messages::content)
        .first(&mut c)
        .await
        .unwrap()
}

async fn wamid_of(deps: &Dependencies, id: Uuid) -> String {
    use warden_store::schema::messages;
    let mut c = deps.pg.get().await.unwrap();
    messages::table
        .find(id)
        .select(messages::wamid)
        .first::<Option<String>>(&mut c)
        .await
        .unwrap()
        .unwrap()
}

/// A tiny valid PNG header (the sim does not decode images).
fn png(n: usize) -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.resize(n, 7);
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_kind_goes_tool_to_platform_and_back() {
    let s = stack().await;
    let to = phone();
    let inbound = s.inbound_id(&to).await;
    let inbound_wamid = wamid_of(&s.deps, inbound).await;

    // Media by link, quoting the customer's message.
    let r = s
        .ok(
            "send_media",
            json!({"to": to, "media_type": "image", "link": "https://cdn.example/order.jpg",
                   "caption": "Your order", "reply_to": inbound.to_string()}),
        )
        .await;
    assert_eq!(r["status"], "queued");
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "image");
    assert_eq!(
        c,
        json!({"type": "image", "image": {"link": "https://cdn.example/order.jpg", "caption": "Your order"},
               "context": {"message_id": inbound_wamid}})
    );

    // Upload, then send by media id (the sim refuses ids it does not hold: 131052).
    let bytes = png(300);
    let up = s
        .ok(
            "upload_media",
            json!({"data": STANDARD.encode(&bytes), "mime_type": "image/png", "filename": "receipt.png"}),
        )
        .await;
    assert_eq!(up["size"], 300);
    assert_eq!(up["mime_type"], "image/png");
    let media_id = up["media_id"].as_str().unwrap().to_string();
    let r = s
        .ok(
            "send_media",
            json!({"to": to, "media_type": "document", "media_id": media_id, "filename": "receipt.png"}),
        )
        .await;
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "document");
    assert_eq!(
        c["document"],
        json!({"id": media_id, "filename": "receipt.png"})
    );

    // get_media returns the uploaded bytes as an image block, checksum verified.
    let res = s.raw("get_media", json!({"media_id": media_id})).await;
    check_envelope("get_media", &res);
    let out = res.structured_content.clone().unwrap();
    assert_eq!(out["file_size"], 300);
    assert_eq!(out["mime_type"], "image/png");
    let image = res
        .content
        .iter()
        .find_map(|c| match c {
            ContentBlock::Image(i) => Some(i.clone()),
            _ => None,
        })
        .expect("an image content block");
    assert_eq!(STANDARD.decode(&image.data).unwrap(), bytes);

    // Interactive: buttons, list, cta_url.
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "buttons", "body": "Confirm the delivery slot?",
                   "buttons": [{"id": "yes", "title": "Yes"}, {"id": "no", "title": "No"}, {"id": "later", "title": "t".repeat(20)}],
                   "header": "Delivery", "footer": "Reply with a button"}),
        )
        .await;
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "interactive");
    assert_eq!(c["interactive"]["type"], "button");
    assert_eq!(
        c["interactive"]["action"]["buttons"][2]["reply"]["title"],
        "t".repeat(20)
    );
    let rows: Vec<Value> = (0..10)
        .map(|i| json!({"id": format!("slot{i}"), "title": format!("{}:00", 8 + i), "description": "d".repeat(72)}))
        .collect();
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "list", "body": "Pick a time", "button_label": "Times",
                   "sections": json!([{"title": "Today", "rows": rows}]).to_string()}),
        )
        .await;
    let (c, _) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(
        c["interactive"]["action"]["sections"][0]["rows"]
            .as_array()
            .unwrap()
            .len(),
        10
    );
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "cta_url", "body": "Track it here", "display_text": "Track order",
                   "url": "https://shop.example/track/1"}),
        )
        .await;
    let (c, _) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(
        c["interactive"]["action"],
        json!({"name": "cta_url", "parameters": {"display_text": "Track order", "url": "https://shop.example/track/1"}})
    );

    // Location (numbers as strings work too) and a reaction to the customer's message.
    let r = s
        .ok(
            "send_location",
            json!({"to": to, "latitude": "-6.2", "longitude": 106.8166, "name": "Store", "address": "Jl. Sudirman 1"}),
        )
        .await;
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "location");
    assert_eq!(c["location"]["latitude"], -6.2);
    let r = s
        .ok(
            "react_to_message",
            json!({"message_id": inbound.to_string(), "emoji": "👍"}),
        )
        .await;
    assert_eq!(r["customer_id"], to);
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "reaction");
    assert_eq!(
        c,
        json!({"type": "reaction", "reaction": {"message_id": inbound_wamid, "emoji": "👍"}})
    );
    let r = s
        .ok(
            "react_to_message",
            json!({"message_id": inbound.to_string(), "emoji": ""}),
        )
        .await;
    s.delivered(r["message_id"].as_str().unwrap()).await;
    // Rich kinds are free-form service messages, never counted as marketing.
    let mut c = s.deps.pg.get().await.unwrap();
    let categories: Vec<String> = warden_store::schema::messages::table
        .filter(warden_store::schema::messages::customer_phone.eq(&to))
        .filter(warden_store::schema::messages::direction.eq("outbound"))
        .select(warden_store::schema::messages::category)
        .load(&mut c)
        .await
        .unwrap();
    assert_eq!(categories.len(), 8);
    assert!(categories.iter().all(|c| c == "service"), "{categories:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_media_content_blocks_and_limits() {
    let s = stack().await;
    let audio = s.sim_media("audio/ogg", vec![1; 2000]).await;
    let res = s.raw("get_media", json!({"media_id": audio})).await;
    check_envelope("get_media", &res);
    assert!(
        res.content
            .iter()
            .any(|c| matches!(c, ContentBlock::Audio(a) if a.mime_type == "audio/ogg"))
    );
    let pdf = s
        .sim_media("application/pdf", b"%PDF-1.4 test".to_vec())
        .await;
    let res = s.raw("get_media", json!({"media_id": pdf})).await;
    let blob = res
        .content
        .iter()
        .find_map(|c| match c {
            ContentBlock::Resource(r) => Some(serde_json::to_value(&r.resource).unwrap()),
            _ => None,
        })
        .expect("an embedded resource");
    assert_eq!(
        STANDARD.decode(blob["blob"].as_str().unwrap()).unwrap(),
        b"%PDF-1.4 test"
    );
    assert_eq!(blob["mimeType"], "application/pdf");
    assert_eq!(
        res.structured_content.unwrap()["sha256"],
        warden_platform::media::sha256_hex(b"%PDF-1.4 test")
    );

    // Over MEDIA_MAX_BYTES: refused naming the size; at the limit: fine.
    let big = s
        .sim_media("image/jpeg", vec![0; MEDIA_LIMIT as usize + 1])
        .await;
    let e = s
        .err("INVALID_ARGUMENT", "get_media", json!({"media_id": big}))
        .await;
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains(&(MEDIA_LIMIT + 1).to_string()) && msg.contains("MEDIA_MAX_BYTES"),
        "{msg}"
    );
    let exact = s
        .sim_media("image/jpeg", vec![0; MEDIA_LIMIT as usize])
        .await;
    s.ok("get_media", json!({"media_id": exact})).await;
    s.err("NOT_FOUND", "get_media", json!({"media_id": "123456789"}))
        .await;
    s.err(
        "INVALID_ARGUMENT",
        "get_media",
        json!({"media_id": "../etc"}),
    )
    .await;

    // Upload limits are checked before the platform is called.
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "upload_media",
            json!({"data": STANDARD.encode([1u8; 10]), "mime_type": "image/gif"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("mime_type"), "{e}");
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "upload_media",
            json!({"data": STANDARD.encode(vec![0u8; 100 * 1024 + 1]), "mime_type": "image/webp"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("100 KB"), "{e}");
    s.err(
        "INVALID_ARGUMENT",
        "upload_media",
        json!({"data": "not base64!", "mime_type": "image/png"}),
    )
    .await;
}

/// An inbound message row for `to` at `at` (window open when recent), as the webhook stores it.
async fn inbound_row(h: &Harness, to: &str, at: chrono::DateTime<Utc>) -> Uuid {
    use warden_store::schema::messages;
    h.inbound(to, at).await;
    let id = Uuid::now_v7();
    let mut c = h.conn().await;
    diesel::insert_into(messages::table)
        .values((
            messages::id.eq(id),
            messages::customer_phone.eq(to),
            messages::channel.eq("whatsapp"),
            messages::direction.eq("inbound"),
            messages::message_type.eq("text"),
            messages::category.eq("service"),
            messages::status.eq("received"),
            messages::content.eq(json!({"type": "text", "text": {"body": "hi"}})),
            messages::wamid.eq(format!("wamid.{}", id.simple())),
        ))
        .execute(&mut c)
        .await
        .unwrap();
    id
}

fn kinds(to: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "send_media",
            json!({"to": to, "media_type": "video", "link": "https://cdn.example/v.mp4"}),
        ),
        (
            "send_interactive",
            json!({"to": to, "kind": "buttons", "body": "b", "buttons": [{"id": "a", "title": "A"}]}),
        ),
        (
            "send_location",
            json!({"to": to, "latitude": 1, "longitude": 2}),
        ),
    ]
}

#[tokio::test]
async fn closed_window_and_opt_out_refuse_every_kind() {
    let h = Harness::start().await;
    let closed = phone();
    let old = inbound_row(&h, &closed, Utc::now() - TimeDelta::hours(25)).await;
    for (tool, args) in kinds(&closed) {
        h.err("TEMPLATE_REQUIRED", tool, args).await;
    }
    h.err(
        "TEMPLATE_REQUIRED",
        "react_to_message",
        json!({"message_id": old.to_string(), "emoji": "👍"}),
    )
    .await;

    let out = phone();
    let recent = inbound_row(&h, &out, Utc::now() - TimeDelta::minutes(5)).await;
    h.opt_out(&out, true).await;
    for (tool, args) in kinds(&out) {
        h.err("USER_OPTED_OUT", tool, args).await;
    }
    h.err(
        "USER_OPTED_OUT",
        "react_to_message",
        json!({"message_id": recent.to_string(), "emoji": "👍"}),
    )
    .await;
    assert_eq!(h.stream_messages().await, 0, "nothing was queued");
}

#[tokio::test]
async fn every_limit_at_its_edge() {
    let h = Harness::start().await;
    let to = phone();
    let inbound = inbound_row(&h, &to, Utc::now() - TimeDelta::minutes(1)).await;
    let buttons = |n: usize, len: usize| -> Value {
        (0..n)
            .map(|i| json!({"id": format!("b{i}"), "title": "t".repeat(len)}))
            .collect()
    };
    let send = |extra: Value| {
        let mut args = json!({"to": to, "kind": "buttons", "body": "Pick"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let field_of = |e: &Value| e["message"].as_str().unwrap().to_string();
    h.ok("send_interactive", send(json!({"buttons": buttons(3, 20)})))
        .await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": buttons(3, 21)})),
        )
        .await;
    assert!(
        field_of(&e).contains("`buttons[0].title`") && field_of(&e).contains("at most 20"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": buttons(4, 5)})),
        )
        .await;
    assert!(
        field_of(&e).contains("`buttons`") && field_of(&e).contains("between 1 and 3"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": [{"id": "x", "title": "A"}, {"id": "x", "title": "B"}]})),
        )
        .await;
    assert!(field_of(&e).contains("`buttons[1].id`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": buttons(1, 5), "body": "b".repeat(1025)})),
        )
        .await;
    assert!(
        field_of(&e).contains("`body`") && field_of(&e).contains("1024"),
        "{e}"
    );
    h.ok("send_interactive", send(json!({"buttons": buttons(1, 5), "body": "b".repeat(1024), "header": "h".repeat(60), "footer": "f".repeat(60)}))).await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": buttons(1, 5), "header": "h".repeat(61)})),
        )
        .await;
    assert!(field_of(&e).contains("`header`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            send(json!({"buttons": buttons(1, 5), "footer": "f".repeat(61)})),
        )
        .await;
    assert!(field_of(&e).contains("`footer`"), "{e}");

    let rows = |n: usize, title: usize, desc: usize| -> Value {
        json!([{"rows": (0..n).map(|i| json!({"id": format!("r{i}"), "title": "x".repeat(title), "description": "d".repeat(desc)})).collect::<Vec<_>>()}])
    };
    let list = |sections: Value, label: usize| json!({"to": to, "kind": "list", "body": "Slots", "button_label": "l".repeat(label), "sections": sections});
    h.ok("send_interactive", list(rows(10, 24, 72), 20)).await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            list(rows(11, 5, 5), 5),
        )
        .await;
    assert!(
        field_of(&e).contains("`sections`") && field_of(&e).contains("11 rows"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            list(rows(1, 25, 5), 5),
        )
        .await;
    assert!(field_of(&e).contains("`sections[0].rows[0].title`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            list(rows(1, 5, 73), 5),
        )
        .await;
    assert!(
        field_of(&e).contains("`sections[0].rows[0].description`"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            list(rows(1, 5, 5), 21),
        )
        .await;
    assert!(field_of(&e).contains("`button_label`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            json!({"to": to, "kind": "cta_url", "body": "b", "url": "https://x.io"}),
        )
        .await;
    assert!(field_of(&e).contains("`display_text`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            json!({"to": to, "kind": "carousel", "body": "b"}),
        )
        .await;
    assert!(field_of(&e).contains("`kind`"), "{e}");

    let media = |extra: Value| {
        let mut args = json!({"to": to});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_media",
            media(json!({"media_type": "audio", "media_id": "1", "caption": "no"})),
        )
        .await;
    assert!(field_of(&e).contains("`caption`"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_media",
            media(json!({"media_type": "image", "media_id": "1", "link": "https://x.io/a.jpg"})),
        )
        .await;
    assert!(field_of(&e).contains("`link`"), "{e}");
    h.err(
        "INVALID_ARGUMENT",
        "send_media",
        media(json!({"media_type": "image"})),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_media",
        media(json!({"media_type": "gif", "media_id": "1"})),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_location",
        json!({"to": to, "latitude": 91, "longitude": 0}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_location",
        json!({"to": to, "latitude": "north", "longitude": 0}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "react_to_message",
        json!({"message_id": inbound.to_string(), "emoji": "yes"}),
    )
    .await;
    h.err(
        "NOT_FOUND",
        "react_to_message",
        json!({"message_id": Uuid::now_v7().to_string(), "emoji": "👍"}),
    )
    .await;
    // Quoting: unknown -> NOT_FOUND; a message not yet sent has no wamid -> INVALID_ARGUMENT.
    h.err(
        "NOT_FOUND",
        "send_location",
        json!({"to": to, "latitude": 1, "longitude": 2, "reply_to": Uuid::now_v7().to_string()}),
    )
    .await;
    let queued = h
        .ok(
            "send_location",
            json!({"to": to, "latitude": 1, "longitude": 2}),
        )
        .await;
    h.err(
        "INVALID_ARGUMENT",
        "send_location",
        json!({"to": to, "latitude": 1, "longitude": 2, "reply_to": queued["message_id"]}),
    )
    .await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "react_to_message",
            json!({"message_id": queued["message_id"], "emoji": "👍"}),
        )
        .await;
    assert!(field_of(&e).contains("inbound"), "{e}");
    h.ok(
        "send_location",
        json!({"to": to, "latitude": 1, "longitude": 2, "reply_to": inbound.to_string()}),
    )
    .await;
}

#[tokio::test]
async fn schedule_message_takes_the_platform_body_of_every_rich_kind() {
    let h = Harness::start().await;
    let to = phone();
    let at = (Utc::now() + TimeDelta::hours(1)).to_rfc3339();
    for body in [
        json!({"type": "image", "image": {"link": "https://cdn.example/a.png", "caption": "A"}}),
        json!({"type": "video", "video": {"id": "123"}}),
        json!({"type": "audio", "audio": {"id": "124"}}),
        json!({"type": "document", "document": {"link": "https://cdn.example/i.pdf", "filename": "invoice.pdf"}}),
        json!({"type": "sticker", "sticker": {"id": "125"}}),
        json!({"type": "interactive", "interactive": {"type": "button", "body": {"text": "Ok?"},
               "action": {"buttons": [{"type": "reply", "reply": {"id": "y", "title": "Yes"}}]}}}),
        json!({"type": "location", "location": {"latitude": -6.2, "longitude": 106.8, "name": "Shop"}}),
        json!({"type": "reaction", "reaction": {"message_id": "wamid.ABC", "emoji": "❤️"}}),
        json!({"type": "text", "text": {"body": "plain text still works"}}),
    ] {
        let r = h
            .ok("schedule_message", json!({"customer_id": to, "message_type": "service", "content": body.to_string(), "deliver_at": at}))
            .await;
        let m = h.message(r["message_id"].as_str().unwrap()).await;
        assert_eq!(m.category, "service");
        if body["type"] != "text" {
            assert_eq!(m.content, body, "stored as given");
        }
    }
    let e = h
        .err("INVALID_ARGUMENT", "schedule_message", json!({"customer_id": to, "message_type": "service", "deliver_at": at,
             "content": {"type": "interactive", "interactive": {"type": "button", "body": {"text": "b"},
                         "action": {"buttons": [{"type": "reply", "reply": {"id": "y", "title": "t".repeat(21)}}]}}}}))
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("buttons[0].title"),
        "{e}"
    );
    h.err(
        "INVALID_ARGUMENT",
        "schedule_message",
        json!({"customer_id": to, "message_type": "service", "deliver_at": at,
          "content": {"type": "contacts", "contacts": []}}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "schedule_message",
        json!({"customer_id": to, "message_type": "template", "deliver_at": at,
          "content": {"type": "location", "location": {"latitude": 1, "longitude": 2}}}),
    )
    .await;
}

/// Waits until the template's stored status is `status` (its webhook was applied).
async fn template_status_is(deps: &Dependencies, name: &str, status: &str) {
    use warden_store::schema::templates;
    warden_test_support::wait::until(
        Duration::from_secs(20),
        "template status webhook applied",
        || async {
            let mut c = deps.pg.get().await.unwrap();
            let st: Option<String> = templates::table
                .filter(templates::name.eq(name))
                .select(templates::status)
                .first(&mut c)
                .await
                .optional()
                .unwrap();
            st.as_deref() == Some(status)
        },
    )
    .await;
}

fn image_header(link: &str) -> Value {
    json!({"type": "header", "parameters": [{"type": "image", "image": {"link": link}}]})
}

fn url_suffix(text: &str) -> Value {
    json!({"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": text}]})
}

/// The whole life of a template with components: create_template -> the platform's
/// approval webhook -> send_template outside any care window -> stream -> dispatcher ->
/// platform-sim (which checks header, body and button parameters as the platform does)
/// -> status webhooks -> delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_template_with_components_is_created_approved_and_delivered() {
    let s = stack().await;
    let created = s
        .ok(
            "create_template",
            json!({"name": "parcel_ready", "category": "UTILITY", "language": "en",
                   "body_text": "Parcel {{1}} is ready for pickup",
                   "header": {"format": "IMAGE"},
                   "buttons": [{"type": "URL", "text": "Track", "url": "https://shop.example/t/{{1}}"},
                               {"type": "QUICK_REPLY", "text": "Thanks"}]}),
        )
        .await;
    assert_eq!(created["status"], "PENDING");
    assert!(
        s.sim
            .decide("parcel_ready", "en", "APPROVED", None)
            .is_some()
    );
    template_status_is(&s.deps, "parcel_ready", "APPROVED").await;

    // No inbound message: the care window is closed, which a utility template may cross.
    let to = phone();
    let sent = s
        .ok(
            "send_template",
            json!({"to": to, "template_name": "parcel_ready", "variables": ["P-77"],
                   "components": [url_suffix("P-77"), image_header("https://shop.example/p77.jpg")]}),
        )
        .await;
    assert_eq!(sent["status"], "queued");
    let (content, kind) = s.delivered(sent["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "template");
    assert_eq!(
        content["template"]["components"],
        json!([
            image_header("https://shop.example/p77.jpg"),
            {"type": "body", "parameters": [{"type": "text", "text": "P-77"}]},
            url_suffix("P-77"),
        ])
    );
}

/// A template made outside Warden learns its components from the platform when synced,
/// so its sends are checked against them (and reach the customer).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_synced_template_carries_the_platforms_components() {
    let s = stack().await;
    let resp = s
        .http
        .post(format!(
            "{}/{}/{WABA_ID}/message_templates",
            s.sim_url,
            warden_platform::API_VERSION
        ))
        .bearer_auth(ACCESS_TOKEN)
        .json(&json!({"name": "made_elsewhere", "language": "en", "category": "UTILITY",
                      "components": [
                          {"type": "HEADER", "format": "IMAGE"},
                          {"type": "BODY", "text": "Invoice {{1}} is due"},
                          {"type": "FOOTER", "text": "Thank you"},
                          {"type": "BUTTONS", "buttons": [{"type": "URL", "text": "Pay", "url": "https://pay.example/{{1}}"}]}]}))
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert!(
        s.sim
            .decide("made_elsewhere", "en", "APPROVED", None)
            .is_some()
    );
    let synced = s
        .ok(
            "sync_template_status",
            json!({"template_name": "made_elsewhere", "locale": "en"}),
        )
        .await;
    assert_eq!(synced["status"], "APPROVED");
    let listed = s
        .ok("list_templates", json!({"status_filter": "APPROVED"}))
        .await;
    let t = listed["templates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "made_elsewhere")
        .cloned()
        .expect("listed");
    let kinds: Vec<&str> = t["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["HEADER", "BODY", "FOOTER", "BUTTONS"], "{t}");

    let to = phone();
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            json!({"to": to, "template_name": "made_elsewhere", "variables": ["INV-9"]}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("header is IMAGE"),
        "{e}"
    );
    let sent = s
        .ok(
            "send_template",
            json!({"to": to, "template_name": "made_elsewhere", "variables": ["INV-9"],
                   "components": [image_header("https://pay.example/i.png"), url_suffix("INV-9")]}),
        )
        .await;
    let (_, kind) = s.delivered(sent["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "template");
}

/// send_interactive's media header: to the platform as its media object; refused when
/// it is combined with a text header, names another type, or is put on a list.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_interactive_message_takes_a_media_header() {
    let s = stack().await;
    let to = phone();
    s.inbound_id(&to).await;
    let buttons = json!([{"id": "yes", "title": "Yes"}, {"id": "no", "title": "No"}]);
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "buttons", "body": "Is this your parcel?", "buttons": buttons,
                   "header_media": {"type": "image", "link": "https://shop.example/parcels/77.jpg"}}),
        )
        .await;
    let (c, kind) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(kind, "interactive");
    assert_eq!(
        c["interactive"]["header"],
        json!({"type": "image", "image": {"link": "https://shop.example/parcels/77.jpg"}})
    );
    let media_id = s
        .sim_media("application/pdf", b"%PDF-1.4 label".to_vec())
        .await;
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "cta_url", "body": "Your label", "display_text": "Track",
                   "url": "https://shop.example/t/77",
                   "header_media": json!({"type": "document", "media_id": media_id, "filename": "label.pdf"}).to_string()}),
        )
        .await;
    let (c, _) = s.delivered(r["message_id"].as_str().unwrap()).await;
    assert_eq!(
        c["interactive"]["header"],
        json!({"type": "document", "document": {"id": media_id, "filename": "label.pdf"}})
    );

    for (args, field) in [
        (
            json!({"header": "Parcel", "header_media": {"type": "image", "link": "https://x.example/a.jpg"}}),
            "header_media",
        ),
        (
            json!({"header_media": {"type": "audio", "link": "https://x.example/a.mp3"}}),
            "header_media",
        ),
        (
            json!({"header_media": {"type": "image", "url": "https://x.example/a.jpg"}}),
            "header_media",
        ),
    ] {
        let mut a = json!({"to": to, "kind": "buttons", "body": "b", "buttons": buttons});
        a.as_object_mut()
            .unwrap()
            .extend(args.as_object().unwrap().clone());
        let e = s.err("INVALID_ARGUMENT", "send_interactive", a).await;
        assert!(e["message"].as_str().unwrap().contains(field), "{e}");
    }
    let e = s
        .err(
            "INVALID_ARGUMENT",
            "send_interactive",
            json!({"to": to, "kind": "list", "body": "b", "button_label": "Pick",
                   "sections": [{"rows": [{"id": "a", "title": "A"}]}],
                   "header_media": {"type": "image", "link": "https://x.example/a.jpg"}}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("header"), "{e}");
}
