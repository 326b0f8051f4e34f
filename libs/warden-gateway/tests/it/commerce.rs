//! Commerce end to end, through the real tools, webhook server and platform-sim:
//! send_interactive kinds `product`, `product_list` and `catalog` go tool -> stream ->
//! dispatcher -> sim (which checks them as the platform does) -> status webhooks, and each
//! broken limit is refused naming its field; a customer's cart (`/sim/order`) and a product
//! question (`/sim/enquiry`) arrive through the signed webhook and read back in history,
//! inbox and the conversation resource; MARKETING templates of a sender with the Marketing
//! Messages API go out at `/marketing_messages` and are reported `marketing_lite`, beside a
//! sender without it whose go to `/messages` as `marketing`.

use crate::common;

use std::time::Duration;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};
use uuid::Uuid;

use common::stack::Stack;
use common::{ACCESS_TOKEN, PHONE_NUMBER_ID, phone};

const WAIT: Duration = Duration::from_secs(30);

async fn status(s: &Stack, id: &str) -> String {
    use warden_store::schema::messages;
    let mut c = s.deps.pg.get().await.unwrap();
    messages::table
        .find(id.parse::<Uuid>().unwrap())
        .select(messages::status)
        .first(&mut c)
        .await
        .unwrap()
}

/// Waits until `id` is delivered or read; the stored content.
async fn delivered(s: &Stack, id: &str) -> Value {
    warden_test_support::wait::until(WAIT, "status webhooks applied", || async {
        matches!(status(s, id).await.as_str(), "delivered" | "read")
    })
    .await;
    let stats = s.sim.stats();
    assert_eq!(stats.by_message[id].kind, "interactive");
    assert_eq!(stats.by_message[id].endpoint, "messages");
    let message = s.message(id).await;
    message.content
}

/// The message the sim's webhook with `wamid` stored, waited for.
async fn stored(s: &Stack, wamid: &str) -> Uuid {
    use warden_store::schema::messages;
    warden_test_support::wait::until_some(WAIT, "inbound message stored", || async {
        let mut c = s.deps.pg.get().await.unwrap();
        messages::table
            .filter(messages::wamid.eq(wamid))
            .select(messages::id)
            .first::<Uuid>(&mut c)
            .await
            .optional()
            .unwrap()
    })
    .await
}

async fn sim_post(s: &Stack, path: &str, body: Value) -> Value {
    let r = s
        .http
        .post(format!("{}{path}", s.sim_url))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap()
}

fn items(ids: &[&str]) -> Value {
    ids.iter()
        .map(|id| json!({"product_retailer_id": id}))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commerce_kinds_go_tool_to_platform_and_back() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    s.inbound_text(to.as_str().into(), "show me shoes").await;

    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "product", "catalog_id": "1234567890",
                   "product_retailer_id": "sku-red-shoe"}),
        )
        .await;
    let c = delivered(&s, r["message_id"].as_str().unwrap()).await;
    assert_eq!(
        c["interactive"],
        json!({"type": "product",
               "action": {"catalog_id": "1234567890", "product_retailer_id": "sku-red-shoe"}})
    );

    let sections = json!([
        {"title": "Shoes", "product_items": items(&["sku-red-shoe", "sku-blue-shoe"])},
        {"title": "Socks", "product_items": items(&["sku-socks"])},
    ]);
    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "product_list", "catalog_id": "1234567890",
                   "header": "Our picks", "body": "Tap one", "footer": "Free delivery",
                   "sections": sections.to_string()}),
        )
        .await;
    let c = delivered(&s, r["message_id"].as_str().unwrap()).await;
    assert_eq!(c["interactive"]["type"], "product_list");
    assert_eq!(
        c["interactive"]["header"],
        json!({"type": "text", "text": "Our picks"})
    );
    assert_eq!(
        c["interactive"]["action"],
        json!({"catalog_id": "1234567890", "sections": sections})
    );

    let r = s
        .ok(
            "send_interactive",
            json!({"to": to, "kind": "catalog", "body": "Browse everything",
                   "thumbnail_product_retailer_id": "sku-red-shoe"}),
        )
        .await;
    let c = delivered(&s, r["message_id"].as_str().unwrap()).await;
    assert_eq!(
        c["interactive"],
        json!({"type": "catalog_message", "body": {"text": "Browse everything"},
               "action": {"name": "catalog_message",
                          "parameters": {"thumbnail_product_retailer_id": "sku-red-shoe"}}})
    );

    // The idempotency key and the one send path: the same call twice is one message.
    let keyed = json!({"to": to, "kind": "catalog", "body": "Again", "idempotency_key": "cat-1"});
    let first = s.ok("send_interactive", keyed.clone()).await;
    let again = s.ok("send_interactive", keyed).await;
    assert_eq!(first["message_id"], again["message_id"]);
    assert_eq!(again["replayed"], true, "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_broken_commerce_limit_is_refused_naming_its_field() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    s.inbound_text(to.as_str().into(), "hi").await;
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"title": format!("S{i}"), "product_items": items(&[&format!("p{i}")])}))
        .collect();
    let thirty_one: Vec<String> = (0..31).map(|i| format!("p{i}")).collect();
    let thirty_one: Vec<&str> = thirty_one.iter().map(String::as_str).collect();
    let list = |extra: Value| {
        let mut args = json!({"to": to, "kind": "product_list", "catalog_id": "1",
                              "header": "Picks", "body": "Tap one",
                              "sections": [{"title": "A", "product_items": items(&["a"])}]});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let mut no_header = list(json!({}));
    no_header.as_object_mut().unwrap().remove("header");
    let cases = [
        (no_header, "`header`"),
        (list(json!({"sections": eleven})), "`sections`"),
        (
            list(json!({"sections": [{"title": "A", "product_items": items(&thirty_one)}]})),
            "`sections`",
        ),
        (
            list(json!({"sections": [
                {"title": "A", "product_items": items(&["a", "b", "c", "d"])},
                {"title": "B", "product_items": items(&["e", "f", "g", "a"])}]})),
            "`sections[1].product_items[3].product_retailer_id`",
        ),
        (
            list(json!({"sections": [{"product_items": items(&["a"])}]})),
            "`sections[0].title`",
        ),
        (
            json!({"to": to, "kind": "product", "product_retailer_id": "a"}),
            "`catalog_id`",
        ),
        (
            json!({"to": to, "kind": "product", "catalog_id": "1"}),
            "`product_retailer_id`",
        ),
        (
            json!({"to": to, "kind": "product", "catalog_id": "1", "product_retailer_id": "a",
                   "header": "No"}),
            "`header`",
        ),
        (json!({"to": to, "kind": "catalog"}), "`body`"),
        (
            json!({"to": to, "kind": "catalog", "body": "b", "catalog_id": "1"}),
            "`catalog_id`",
        ),
        (
            json!({"to": to, "kind": "buttons", "body": "b", "thumbnail_product_retailer_id": "x",
                   "buttons": [{"id": "a", "title": "A"}]}),
            "`thumbnail_product_retailer_id`",
        ),
    ];
    for (args, field) in cases {
        let e = s
            .err("INVALID_ARGUMENT", "send_interactive", args.clone())
            .await;
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(field), "{args}: {message}");
    }
    assert_eq!(
        s.sim.stats().total_sends,
        0,
        "nothing refused reached the platform"
    );

    // Free-form: a closed window is TEMPLATE_REQUIRED, whatever the kind.
    let stranger = phone();
    for args in [
        json!({"to": stranger, "kind": "product", "catalog_id": "1", "product_retailer_id": "a"}),
        json!({"to": stranger, "kind": "catalog", "body": "b"}),
    ] {
        s.err("TEMPLATE_REQUIRED", "send_interactive", args).await;
    }

    // The sim refuses what the platform refuses, naming the field (131008 / 131009).
    let send = |interactive: Value| {
        let s = &s;
        let to = to.clone();
        async move {
            let r = s
                .http
                .post(format!(
                    "{}/{}/{PHONE_NUMBER_ID}/messages",
                    s.sim_url,
                    warden_settings::DEFAULT_API_VERSION
                ))
                .bearer_auth(ACCESS_TOKEN)
                .json(
                    &json!({"messaging_product": "whatsapp", "to": to, "type": "interactive",
                              "interactive": interactive}),
                )
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            (status, r.json::<Value>().await.unwrap())
        }
    };
    let body = json!({"text": "b"});
    let (code, e) = send(json!({"type": "product_list", "body": body,
        "action": {"catalog_id": "1", "sections": [{"title": "A", "product_items": items(&["a"])}]}}))
    .await;
    assert_eq!(
        (code, e["error"]["code"].as_i64()),
        (400, Some(131008)),
        "{e}"
    );
    assert!(e.to_string().contains("header"), "{e}");
    let header = json!({"type": "text", "text": "h"});
    let (_, e) = send(json!({"type": "product_list", "header": header, "body": body,
        "action": {"catalog_id": "1", "sections": [{"title": "A", "product_items": items(&thirty_one)}]}}))
    .await;
    assert_eq!(e["error"]["code"], 131009, "{e}");
    let (_, e) = send(
        json!({"type": "product_list", "header": header, "body": body,
        "action": {"catalog_id": "1", "sections": eleven}}),
    )
    .await;
    assert_eq!(e["error"]["code"], 131009, "{e}");
    assert!(e.to_string().contains("sections"), "{e}");
    let (_, e) = send(json!({"type": "product", "action": {"catalog_id": "1"}})).await;
    assert_eq!(e["error"]["code"], 131008, "{e}");
    assert!(e.to_string().contains("product_retailer_id"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_order_in_two_currencies_reads_back_with_its_totals() {
    let s = Stack::start(|_| {}).await;
    let to = phone();
    let sent = sim_post(
        &s,
        "/sim/order",
        json!({"from": to, "catalog_id": "1234567890", "text": "Please gift-wrap",
               "items": [
                   {"product_retailer_id": "sku-red-shoe", "quantity": 3, "item_price": 0.1, "currency": "USD"},
                   {"product_retailer_id": "sku-socks", "quantity": 2, "item_price": 12.25, "currency": "EUR"},
                   {"product_retailer_id": "sku-lace", "quantity": 1, "item_price": 0.2, "currency": "USD"}]}),
    )
    .await;
    stored(&s, sent["wamid"].as_str().unwrap()).await;

    let h = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    let m = &h["messages"][0];
    assert_eq!(m["type"], "order", "{m}");
    assert_eq!(m["text"], "Please gift-wrap");
    let order = &m["order"];
    assert_eq!(order["catalog_id"], "1234567890");
    assert_eq!(
        order["totals"],
        json!({"EUR": 24.5, "USD": 0.5}),
        "exact: {order}"
    );
    assert_eq!(order["items"].as_array().unwrap().len(), 3);
    assert_eq!(
        order["items"][1],
        json!({"product_retailer_id": "sku-socks", "quantity": 2, "item_price": 12.25, "currency": "EUR"})
    );
    assert!(order.get("malformed").is_none(), "{order}");

    // An order opens the care window like any customer message.
    let c = s.ok("check_conversation", json!({"customer_id": to})).await;
    assert_eq!(c["window_open"], true, "{c}");
    let inbox = s.ok("list_inbox", json!({})).await;
    let item = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["customer_id"] == to.trim_start_matches('+'))
        .unwrap_or_else(|| panic!("{inbox}"));
    assert_eq!(item["last_inbound_kind"], "order", "{item}");
    assert_eq!(item["last_inbound_text"], "Please gift-wrap");
    let resource = s
        .client
        .read_resource(ReadResourceRequestParams::new(format!(
            "warden://conversations/{}",
            to.trim_start_matches('+')
        )))
        .await
        .unwrap();
    let text = serde_json::to_value(&resource).unwrap().to_string();
    assert!(
        text.contains("totals") && text.contains("sku-socks"),
        "{text}"
    );

    // A malformed cart never fails the webhook: kept, shown raw with the reason.
    let sent = sim_post(
        &s,
        "/sim/order",
        json!({"from": to, "catalog_id": "1234567890",
               "items": [{"product_retailer_id": "sku-x", "quantity": "lots", "item_price": 1, "currency": "USD"}]}),
    )
    .await;
    stored(&s, sent["wamid"].as_str().unwrap()).await;
    let h = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    let order = &h["messages"][0]["order"];
    assert_eq!(order["malformed"], true, "{order}");
    assert_eq!(order["items"], json!([]));
    assert_eq!(order["raw"]["product_items"][0]["quantity"], "lots");
    assert!(
        order["problem"]
            .as_str()
            .unwrap()
            .contains("product_items[0].quantity"),
        "{order}"
    );

    // A question from a product's page carries the product.
    let sent = sim_post(
        &s,
        "/sim/enquiry",
        json!({"from": to, "catalog_id": "1234567890", "product_retailer_id": "sku-red-shoe",
               "text": "Size 42?"}),
    )
    .await;
    stored(&s, sent["wamid"].as_str().unwrap()).await;
    let h = s
        .ok("get_conversation_history", json!({"customer_id": to}))
        .await;
    let m = &h["messages"][0];
    assert_eq!(m["type"], "text");
    assert_eq!(m["text"], "Size 42?");
    assert_eq!(
        m["referred_product"],
        json!({"catalog_id": "1234567890", "product_retailer_id": "sku-red-shoe"})
    );
}
