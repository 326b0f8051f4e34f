//! What an agent reads of a customer's cart (an inbound `order`) and of a question about
//! a product (an inbound whose `context.referred_product` names it).
//!
//! The cart's rule (its shape, exact totals per currency) is `warden_rules::order`. Like
//! the rest of [`super::message_view`] this never fails: an order that does not fit the
//! platform's shape is shown as received (`raw`) with `malformed: true` and the reason,
//! never dropped.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use warden_rules::order::Order;

/// The longest id kept (catalog and product ids).
const MAX_ID_CHARS: usize = 512;
/// The longest note kept.
const MAX_TEXT_CHARS: usize = 4096;

/// One line of a customer's cart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderItem {
    /// The product's id in the catalog.
    pub product_retailer_id: String,
    /// How many.
    pub quantity: i64,
    /// The price of one.
    pub item_price: Value,
    /// ISO 4217 code (`USD`).
    pub currency: String,
}

/// A customer's cart (`type: "order"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OrderView {
    /// The catalog the products are from.
    pub catalog_id: Option<String>,
    /// The note the customer wrote with the cart.
    pub text: Option<String>,
    /// The lines of the cart, in the order sent (empty when malformed).
    pub items: Vec<OrderItem>,
    /// Σ quantity × item_price per currency, computed exactly: `{"USD": 12.5}`.
    pub totals: BTreeMap<String, Value>,
    /// The order did not fit the platform's shape: `raw` holds it as received.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub malformed: bool,
    /// Why it did not fit (the field and the problem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The `order` object as received, when malformed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
}

/// The product a customer asked about (from the product's page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReferredProduct {
    pub catalog_id: Option<String>,
    pub product_retailer_id: Option<String>,
}

fn clip(v: Option<&Value>, max: usize) -> Option<String> {
    let s = match v? {
        Value::String(s) if !s.is_empty() => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    Some(match s.char_indices().nth(max) {
        Some((cut, _)) => s[..cut].to_owned(),
        None => s,
    })
}

/// The view of an `order` object as stored. Pure; never fails.
pub fn order(part: &Value) -> OrderView {
    match Order::parse(part) {
        Ok(o) => OrderView {
            totals: o
                .totals()
                .into_iter()
                .map(|(c, a)| (c, a.to_json()))
                .collect(),
            catalog_id: clip(Some(&Value::String(o.catalog_id)), MAX_ID_CHARS),
            text: clip(o.text.map(Value::String).as_ref(), MAX_TEXT_CHARS),
            items: o
                .items
                .into_iter()
                .map(|i| OrderItem {
                    product_retailer_id: clip(
                        Some(&Value::String(i.product_retailer_id)),
                        MAX_ID_CHARS,
                    )
                    .unwrap_or_default(),
                    quantity: i.quantity,
                    item_price: i.item_price,
                    currency: i.currency,
                })
                .collect(),
            malformed: false,
            problem: None,
            raw: None,
        },
        Err(e) => {
            let obj = part.as_object();
            OrderView {
                catalog_id: clip(obj.and_then(|o| o.get("catalog_id")), MAX_ID_CHARS),
                text: clip(obj.and_then(|o| o.get("text")), MAX_TEXT_CHARS),
                items: Vec::new(),
                totals: BTreeMap::new(),
                malformed: true,
                problem: Some(e.to_string()),
                raw: Some(part.clone()),
            }
        }
    }
}

/// `context.referred_product` of a stored inbound message, when it names a product.
pub fn referred_product(message: &Map<String, Value>) -> Option<ReferredProduct> {
    let r = message
        .get("context")?
        .get("referred_product")?
        .as_object()?;
    let view = ReferredProduct {
        catalog_id: clip(r.get("catalog_id"), MAX_ID_CHARS),
        product_retailer_id: clip(r.get("product_retailer_id"), MAX_ID_CHARS),
    };
    (view.catalog_id.is_some() || view.product_retailer_id.is_some()).then_some(view)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_order_in_two_currencies_has_two_totals() {
        let v = order(
            &json!({"catalog_id": "c1", "text": "gift", "product_items": [
                {"product_retailer_id": "a", "quantity": 3, "item_price": 0.1, "currency": "USD"},
                {"product_retailer_id": "b", "quantity": 2, "item_price": 12.25, "currency": "EUR"},
                {"product_retailer_id": "c", "quantity": 1, "item_price": 0.2, "currency": "USD"},
            ]}),
        );
        assert!(!v.malformed);
        assert_eq!(v.totals["USD"], json!(0.5));
        assert_eq!(v.totals["EUR"], json!(24.5));
        assert_eq!(v.items.len(), 3);
        assert_eq!(v.text.as_deref(), Some("gift"));
    }

    #[test]
    fn a_malformed_order_is_kept_raw() {
        let raw = json!({"catalog_id": "c1", "product_items": [{"quantity": "lots"}]});
        let v = order(&raw);
        assert!(v.malformed);
        assert_eq!(v.raw, Some(raw));
        assert_eq!(v.catalog_id.as_deref(), Some("c1"));
        assert!(v.problem.unwrap().contains("product_retailer_id"));
        assert!(order(&json!("nonsense")).malformed);
    }

    #[test]
    fn an_enquiry_names_its_product() {
        let m = json!({"context": {"from": "1", "id": "wamid.A",
            "referred_product": {"catalog_id": "c1", "product_retailer_id": "sku"}}});
        let r = referred_product(m.as_object().unwrap()).unwrap();
        assert_eq!(r.product_retailer_id.as_deref(), Some("sku"));
        assert_eq!(referred_product(json!({}).as_object().unwrap()), None);
    }
}
