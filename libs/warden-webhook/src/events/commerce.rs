//! Commerce messages as the webhook reads them: a customer's cart (`type "order"`,
//! `order {catalog_id, text, product_items}`) and a question about a product (any message
//! whose `context.referred_product` names it). Both are customer messages like any other:
//! stored as received (the core's `conversations::order_view` shows the cart with its
//! totals, `warden_rules::order`) and opening the care window. A cart that does not fit the
//! platform's shape is never a reason to refuse or skip the event: it is stored as received
//! and shown raw with the reason.

use serde_json::Value;
use warden_rules::order::{Order, OrderError};

/// What the webhook makes of an inbound message's commerce parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Commerce {
    /// Not an order and no product named.
    None,
    /// A cart that fits the platform's shape.
    Order(Order),
    /// A cart that does not, and why (it is kept as received).
    MalformedOrder(OrderError),
    /// A question about `catalog_id`'s `product_retailer_id`.
    Enquiry,
}

/// Reads the commerce parts of an inbound message of `message_type` (`content` as it will
/// be stored). Pure; never fails.
pub fn read(message_type: &str, content: &Value) -> Commerce {
    if message_type == "order" {
        return match Order::parse(content.get("order").unwrap_or(&Value::Null)) {
            Ok(order) => Commerce::Order(order),
            Err(e) => Commerce::MalformedOrder(e),
        };
    }
    match content.pointer("/context/referred_product") {
        Some(Value::Object(p)) if !p.is_empty() => Commerce::Enquiry,
        _ => Commerce::None,
    }
}

/// Logs (at debug: no content above it) a cart the platform sent in a shape the view
/// cannot total, so an operator can see why it shows raw.
pub(super) fn note(message_type: &str, content: &Value) {
    if let Commerce::MalformedOrder(e) = read(message_type, content) {
        tracing::debug!(field = %e.field, "an order that does not fit the platform's shape is kept as received");
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::*;
    use crate::events::{EventBody, extract};

    fn body(message: Value) -> Vec<u8> {
        json!({"object": "whatsapp_business_account",
               "entry": [{"id": "1", "changes": [{"field": "messages", "value": {
                   "metadata": {"phone_number_id": "100000000000001"},
                   "contacts": [{"wa_id": "628123456789"}],
                   "messages": [message]}}]}]})
        .to_string()
        .into_bytes()
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// What the webhook keeps of one inbound message: its type, its stored content and
    /// whether it opens the care window.
    struct Kept {
        message_type: String,
        content: Value,
        opens_window: bool,
    }

    fn inbound(message: Value) -> Kept {
        let x = extract(&body(message), now()).unwrap();
        assert_eq!(x.events.len(), 1, "the event is kept");
        match &x.events[0].body {
            EventBody::Inbound(i) => Kept {
                message_type: i.message_type.clone(),
                content: i.content.clone(),
                opens_window: i.window.is_ok(),
            },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_order_is_a_customer_message_stored_as_received() {
        let order = json!({"catalog_id": "cat", "text": "gift", "product_items": [
            {"product_retailer_id": "a", "quantity": 2, "item_price": 10.5, "currency": "USD"}]});
        let i = inbound(
            json!({"from": "628123456789", "id": "wamid.O", "timestamp": "1799999990",
                               "type": "order", "order": order}),
        );
        assert_eq!(i.message_type, "order");
        assert!(i.opens_window, "an order opens the care window");
        assert_eq!(i.content["order"], order);
        match read(&i.message_type, &i.content) {
            Commerce::Order(o) => assert_eq!(o.totals()["USD"].to_string(), "21"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_malformed_order_is_kept_never_refused() {
        for order in [
            json!({"product_items": "none"}),
            json!({"catalog_id": "cat", "product_items": [{"quantity": -1}]}),
            json!("not an object"),
        ] {
            let i = inbound(json!({"from": "628123456789", "id": "wamid.M",
                                   "timestamp": "1799999990", "type": "order", "order": order}));
            assert_eq!(i.content["order"], order);
            assert!(matches!(
                read(&i.message_type, &i.content),
                Commerce::MalformedOrder(_)
            ));
        }
    }

    #[test]
    fn an_enquiry_keeps_its_product() {
        let i = inbound(
            json!({"from": "628123456789", "id": "wamid.E", "timestamp": "1799999990",
                               "type": "text", "text": {"body": "Size 42?"},
                               "context": {"from": "15550100000", "id": "wamid.P",
                                           "referred_product": {"catalog_id": "cat", "product_retailer_id": "a"}}}),
        );
        assert_eq!(
            i.content["context"]["referred_product"]["product_retailer_id"],
            "a"
        );
        assert_eq!(read(&i.message_type, &i.content), Commerce::Enquiry);
        assert_eq!(
            read("text", &json!({"text": {"body": "hi"}})),
            Commerce::None
        );
    }
}
