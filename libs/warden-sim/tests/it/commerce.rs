//! Commerce and the Marketing Messages API against platform-sim: the commerce interactive
//! kinds checked as the platform checks them, `/sim/order` and `/sim/enquiry` as signed
//! inbound webhooks, and `/marketing_messages` answered like `/messages` with its endpoint
//! in the stats and `marketing_lite` in its status webhooks.

use crate::common;

use common::*;
use serde_json::{Value, json};
use warden_platform::webhook::Change;

fn interactive(to: &str, i: Value, callback: &str) -> Value {
    json!({"messaging_product": "whatsapp", "to": to, "type": "interactive",
           "interactive": i, "biz_opaque_callback_data": callback})
}

fn items(ids: &[&str]) -> Value {
    ids.iter()
        .map(|id| json!({"product_retailer_id": id}))
        .collect()
}

fn details(e: &Value) -> String {
    e["error"]["error_data"]["details"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn commerce_kinds_are_checked_as_the_platform_checks_them() {
    let sim = start_sim(config(None)).await;
    let header = json!({"type": "text", "text": "Picks"});
    let ok = [
        json!({"type": "product", "action": {"catalog_id": "1", "product_retailer_id": "a"}}),
        json!({"type": "product_list", "header": header, "body": {"text": "b"},
               "action": {"catalog_id": "1", "sections": [{"title": "A", "product_items": items(&["a", "b"])}]}}),
        json!({"type": "catalog_message", "body": {"text": "b"},
               "action": {"name": "catalog_message", "parameters": {"thumbnail_product_retailer_id": "a"}}}),
    ];
    for (n, i) in ok.into_iter().enumerate() {
        let (status, v) = sim
            .send(&interactive("628123", i, &format!("ok-{n}")))
            .await;
        assert_eq!(status, 200, "{v}");
    }
    let ids: Vec<String> = (0..31).map(|i| format!("p{i}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let eleven: Vec<Value> = (0..11)
        .map(|i| json!({"title": "S", "product_items": items(&[&format!("q{i}")])}))
        .collect();
    let refused = [
        (
            json!({"type": "product_list", "body": {"text": "b"},
                   "action": {"catalog_id": "1", "sections": [{"title": "A", "product_items": items(&["a"])}]}}),
            131008,
            "header",
        ),
        (
            json!({"type": "product_list", "header": header, "body": {"text": "b"},
                   "action": {"catalog_id": "1", "sections": [{"title": "A", "product_items": items(&ids)}]}}),
            131009,
            "31 products",
        ),
        (
            json!({"type": "product_list", "header": header, "body": {"text": "b"},
                   "action": {"catalog_id": "1", "sections": eleven}}),
            131009,
            "sections",
        ),
        (
            json!({"type": "product_list", "header": header, "body": {"text": "b"},
                   "action": {"catalog_id": "1", "sections": [
                       {"title": "A", "product_items": items(&["a"])},
                       {"title": "B", "product_items": items(&["b", "a"])}]}}),
            131009,
            "sections[1].product_items[1].product_retailer_id",
        ),
        (
            json!({"type": "product", "action": {"catalog_id": "1"}}),
            131008,
            "product_retailer_id",
        ),
        (
            json!({"type": "product", "header": header,
                   "action": {"catalog_id": "1", "product_retailer_id": "a"}}),
            131009,
            "header",
        ),
        (
            json!({"type": "catalog_message", "action": {"name": "catalog_message"}}),
            131008,
            "body",
        ),
    ];
    for (i, code, named) in refused {
        let (status, e) = sim.send(&interactive("628123", i.clone(), "no")).await;
        assert_eq!(status, 400, "{i}");
        assert_eq!(e["error"]["code"], code, "{i}: {e}");
        assert!(details(&e).contains(named), "{i}: {e}");
    }
    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 3, "refused sends are not counted");
    assert_eq!(stats["by_message"]["ok-0"]["endpoint"], "messages");
}

#[tokio::test]
async fn the_marketing_messages_api_answers_like_messages_and_prices_lite() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let url = format!("{PHONE_NUMBER_ID}/marketing_messages");
    let mut promo = template("628123", "warden_promo", "en", &["Ana"], Some("m-lite"));
    promo["product_policy"] = json!("STRICT");
    let (status, v) = sim.post_api(&url, &promo).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["messages"][0]["id"].as_str().is_some(), "{v}");
    let plain = template("628124", "warden_promo", "en", &["Ana"], Some("m-plain"));
    let (status, _) = sim.send(&plain).await;
    assert_eq!(status, 200);
    let stats = sim.stats().await;
    assert_eq!(
        stats["by_message"]["m-lite"]["endpoint"],
        "marketing_messages"
    );
    assert_eq!(stats["by_message"]["m-plain"]["endpoint"], "messages");

    // Its statuses are priced marketing_lite; the other's marketing.
    let changes = rx
        .wait_for("both messages' statuses", |c| {
            c.iter()
                .filter(|c| matches!(c, Change::Messages(v) if !v.statuses.is_empty()))
                .count()
                >= 2
        })
        .await;
    let _ = changes;
    let statuses = rx.statuses();
    let category = |cb: &str| {
        statuses
            .iter()
            .find(|s| s.biz_opaque_callback_data.as_deref() == Some(cb))
            .and_then(|s| s.pricing.as_ref())
            .and_then(|p| p.category.clone())
    };
    assert_eq!(category("m-lite").as_deref(), Some("marketing_lite"));
    assert_eq!(category("m-plain").as_deref(), Some("marketing"));

    // Only marketing templates, only the two product policies.
    let utility = template("628125", "warden_order_update", "en", &["A1"], None);
    let (status, e) = sim.post_api(&url, &utility).await;
    assert_eq!(
        (status, e["error"]["code"].as_i64()),
        (400, Some(100)),
        "{e}"
    );
    let (status, e) = sim.post_api(&url, &text("628125", "hi", None)).await;
    assert_eq!(
        (status, e["error"]["code"].as_i64()),
        (400, Some(100)),
        "{e}"
    );
    promo["product_policy"] = json!("LOOSE");
    let (status, e) = sim.post_api(&url, &promo).await;
    assert_eq!(status, 400, "{e}");
    assert!(details(&e).contains("product_policy"), "{e}");
}

#[tokio::test]
async fn orders_and_enquiries_arrive_as_signed_inbound_webhooks() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let items = json!([
        {"product_retailer_id": "a", "quantity": 2, "item_price": 10.5, "currency": "USD"},
        {"product_retailer_id": "b", "quantity": 1, "item_price": 3, "currency": "EUR"}]);
    let (status, v) = sim
        .control(
            "order",
            &json!({"from": "628123", "catalog_id": "cat", "text": "gift", "items": items}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["type"], "order");
    let (status, _) = sim
        .control(
            "enquiry",
            &json!({"from": "628123", "catalog_id": "cat", "product_retailer_id": "a",
                    "text": "Size 42?"}),
        )
        .await;
    assert_eq!(status, 200);
    rx.wait_for("the order and the enquiry", |c| {
        c.iter()
            .filter(|c| matches!(c, Change::Messages(v) if !v.messages.is_empty()))
            .count()
            >= 2
    })
    .await;
    let messages: Vec<_> = rx
        .changes()
        .into_iter()
        .filter_map(|c| match c {
            Change::Messages(v) => Some(v.messages),
            _ => None,
        })
        .flatten()
        .collect();
    let order = messages.iter().find(|m| m.kind == "order").unwrap();
    assert_eq!(
        order.other["order"],
        json!({"catalog_id": "cat", "text": "gift", "product_items": items})
    );
    let enquiry = messages.iter().find(|m| m.kind == "text").unwrap();
    assert_eq!(
        enquiry.other["context"]["referred_product"],
        json!({"catalog_id": "cat", "product_retailer_id": "a"})
    );
    assert_eq!(enquiry.text_body(), Some("Size 42?"));
    // Refused without what makes an order.
    let (status, _) = sim
        .control("order", &json!({"from": "628123", "items": []}))
        .await;
    assert_eq!(status, 400);
    let (status, _) = sim
        .control("order", &json!({"from": "628123", "catalog_id": "cat"}))
        .await;
    assert_eq!(status, 400);
}
