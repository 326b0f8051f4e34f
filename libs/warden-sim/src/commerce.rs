//! Commerce, as the platform has it: the `product`, `product_list` and `catalog_message`
//! interactive checks (a value out of the platform's limits 131009 naming the field, a
//! missing one 131008), and `POST /sim/order` / `POST /sim/enquiry`, a customer's cart and
//! a question about a product, sent as signed `messages` webhooks.
//!
//! Written from the platform's rules, not from Warden's validators, so each catches what
//! the other misses.

use std::collections::HashSet;

use actix_web::{HttpResponse, web};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use warden_platform::lenient;

use crate::reply::{bad_request, control_json, number_for};
use crate::state::{InboundContent, Refusal, Sim};

/// Sections of a product list.
const MAX_SECTIONS: usize = 10;
/// Products of a product list, over all its sections.
const MAX_ITEMS: usize = 30;

// The checks of `crate::bodies` repeated here in small, so the two never use each other
// (bodies calls this file's checks).
fn bad(details: impl Into<String>) -> Refusal {
    Refusal::new(400, 131009, details)
}

/// A required string of 1..=max characters at `key` of `obj`: 131008 when missing.
fn text(obj: &Value, key: &str, max: usize, what: &str) -> Result<(), Refusal> {
    match obj
        .get(key)
        .and_then(Value::as_str)
        .map(|s| s.chars().count())
    {
        Some(n) if n > 0 && n <= max => Ok(()),
        Some(n) => Err(bad(format!(
            "{what} has {n} characters; allowed 1 to {max}"
        ))),
        None => Err(Refusal::new(400, 131008, format!("{what} is required"))),
    }
}

/// A product list needs a text header; a product or catalog message takes none.
pub(crate) fn header_rule(kind: Option<&str>, i: &Value) -> Result<(), Refusal> {
    let header = i.get("header");
    match (kind, header) {
        (Some("product_list"), None) => Err(Refusal::new(
            400,
            131008,
            "interactive.header is required for a product_list",
        )),
        (Some("product_list"), Some(h))
            if h.get("type").and_then(Value::as_str) != Some("text") =>
        {
            Err(bad("header.type of a product_list must be text"))
        }
        (Some(k @ ("product" | "catalog_message")), Some(_)) => {
            Err(bad(format!("interactive.header is not allowed for {k}")))
        }
        _ => Ok(()),
    }
}

/// `action {catalog_id, product_retailer_id}`.
pub(crate) fn product_action(action: &Value) -> Result<(), Refusal> {
    text(action, "catalog_id", 100, "action.catalog_id")?;
    text(
        action,
        "product_retailer_id",
        100,
        "action.product_retailer_id",
    )
}

/// `action {catalog_id, sections [{title, product_items [{product_retailer_id}]}]}`.
pub(crate) fn product_list_action(action: &Value) -> Result<(), Refusal> {
    text(action, "catalog_id", 100, "action.catalog_id")?;
    let sections = action.get("sections").and_then(Value::as_array);
    let sections = sections.map(Vec::as_slice).unwrap_or(&[]);
    if sections.is_empty() || sections.len() > MAX_SECTIONS {
        return Err(bad(format!(
            "action.sections: {} given, 1 to {MAX_SECTIONS} allowed",
            sections.len()
        )));
    }
    let mut ids = HashSet::new();
    for (s, section) in sections.iter().enumerate() {
        text(section, "title", 24, &format!("action.sections[{s}].title"))?;
        let items = section.get("product_items").and_then(Value::as_array);
        let items = items.map(Vec::as_slice).unwrap_or(&[]);
        if items.is_empty() {
            return Err(bad(format!(
                "action.sections[{s}].product_items must not be empty"
            )));
        }
        for (i, item) in items.iter().enumerate() {
            let at = format!("action.sections[{s}].product_items[{i}].product_retailer_id");
            text(item, "product_retailer_id", 100, &at)?;
            let id = item["product_retailer_id"].as_str().unwrap_or_default();
            if !ids.insert(id.to_owned()) {
                return Err(bad(format!("{at}: product {id:?} is listed twice")));
            }
        }
    }
    if ids.len() > MAX_ITEMS {
        return Err(bad(format!(
            "action.sections: {} products given, at most {MAX_ITEMS} allowed",
            ids.len()
        )));
    }
    Ok(())
}

/// `action {name: "catalog_message", parameters? {thumbnail_product_retailer_id?}}`.
pub(crate) fn catalog_action(action: &Value) -> Result<(), Refusal> {
    if action.get("name").and_then(Value::as_str) != Some("catalog_message") {
        return Err(bad("action.name must be catalog_message"));
    }
    match action.get("parameters") {
        None => Ok(()),
        Some(p) if p.get("thumbnail_product_retailer_id").is_some() => text(
            p,
            "thumbnail_product_retailer_id",
            100,
            "action.parameters.thumbnail_product_retailer_id",
        ),
        Some(_) => Ok(()),
    }
}

#[derive(Deserialize)]
struct OrderReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    from: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    catalog_id: Option<String>,
    /// `[{product_retailer_id, quantity, item_price, currency}]`, sent as given.
    #[serde(default)]
    items: Option<Vec<Value>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

fn digits(s: &str) -> String {
    s.chars().filter(char::is_ascii_digit).collect()
}

/// Sends `content` from `from` to the number `phone_number_id` (default the first) as a
/// signed `messages` webhook; the answer names its wamid.
fn send_inbound(
    sim: &Sim,
    from: Option<&str>,
    phone_number_id: Option<&str>,
    content: InboundContent,
) -> HttpResponse {
    let from = from.map(digits).unwrap_or_default();
    if from.is_empty() {
        return bad_request("from (the customer's phone number) is required");
    }
    let number = match number_for(sim, phone_number_id) {
        Ok(n) => n,
        Err(e) => return bad_request(e),
    };
    let kind = content.kind.clone();
    let user = crate::users::SimUser {
        phone: Some(from.clone()),
        user_id: None,
        parent_user_id: None,
        username: None,
    };
    let (wamid, queued) = sim.inbound_to(number, user, content, None, None, None);
    HttpResponse::Ok().json(json!({
        "wamid": wamid, "from": from, "type": kind, "webhook_queued": queued,
        "phone_number_id": number.id()
    }))
}

/// `POST /sim/order {"from", "catalog_id", "items", "text"?, "phone_number_id"?}`: the
/// customer sends a cart (`type "order"`). The items go out as given, so a test can send a
/// malformed one too.
pub async fn sim_order(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: OrderReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let Some(catalog_id) = r.catalog_id.filter(|c| !c.trim().is_empty()) else {
        return bad_request("catalog_id is required");
    };
    let Some(items) = r.items else {
        return bad_request(
            "items is required: [{\"product_retailer_id\", \"quantity\", \"item_price\", \"currency\"}]",
        );
    };
    let mut order = Map::new();
    order.insert("catalog_id".into(), json!(catalog_id));
    if let Some(t) = r.text {
        order.insert("text".into(), json!(t));
    }
    order.insert("product_items".into(), Value::Array(items));
    let mut other = Map::new();
    other.insert("order".into(), Value::Object(order));
    let content = InboundContent {
        kind: "order".into(),
        text: None,
        other,
    };
    send_inbound(
        &sim,
        r.from.as_deref(),
        r.phone_number_id.as_deref(),
        content,
    )
}

#[derive(Deserialize)]
struct EnquiryReq {
    #[serde(default, deserialize_with = "lenient::opt_string")]
    from: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    catalog_id: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    product_retailer_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, deserialize_with = "lenient::opt_string")]
    phone_number_id: Option<String>,
}

/// `POST /sim/enquiry {"from", "catalog_id", "product_retailer_id", "text", "phone_number_id"?}`:
/// the customer asks about a product from its page (a text message whose
/// `context.referred_product` names it).
pub async fn sim_enquiry(sim: web::Data<Sim>, body: web::Bytes) -> HttpResponse {
    let r: EnquiryReq = match control_json(&body) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let (Some(catalog_id), Some(product)) = (r.catalog_id, r.product_retailer_id) else {
        return bad_request("catalog_id and product_retailer_id are required");
    };
    let text = r.text.unwrap_or_else(|| "Is this available?".to_owned());
    let mut other = Map::new();
    other.insert(
        "context".into(),
        json!({"referred_product": {"catalog_id": catalog_id, "product_retailer_id": product}}),
    );
    let content = InboundContent {
        kind: "text".into(),
        text: Some(text),
        other,
    };
    send_inbound(
        &sim,
        r.from.as_deref(),
        r.phone_number_id.as_deref(),
        content,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(r: Result<(), Refusal>) -> i64 {
        r.unwrap_err().body.error.code
    }

    fn list(sections: Value) -> Value {
        json!({"catalog_id": "1", "sections": sections})
    }

    #[test]
    fn product_lists_are_checked_as_the_platform_does() {
        let one = list(json!([{"title": "A", "product_items": [{"product_retailer_id": "a"}]}]));
        assert!(product_list_action(&one).is_ok());
        let eleven: Vec<Value> = (0..11)
            .map(|s| json!({"title": "S", "product_items": [{"product_retailer_id": format!("p{s}")}]}))
            .collect();
        assert_eq!(code(product_list_action(&list(json!(eleven)))), 131009);
        let items: Vec<Value> = (0..31)
            .map(|i| json!({"product_retailer_id": format!("p{i}")}))
            .collect();
        let many = list(json!([{"title": "A", "product_items": items}]));
        let r = product_list_action(&many).unwrap_err();
        assert_eq!(r.body.error.code, 131009);
        let dup = list(json!([
            {"title": "A", "product_items": [{"product_retailer_id": "a"}]},
            {"title": "B", "product_items": [{"product_retailer_id": "a"}]},
        ]));
        let r = product_list_action(&dup).unwrap_err();
        assert!(
            r.body
                .error
                .error_data
                .as_ref()
                .and_then(|d| d.details.as_deref())
                .is_some_and(|d| d.contains("sections[1].product_items[0]")),
            "{:?}",
            r.body.error
        );
        assert_eq!(code(product_list_action(&json!({"sections": []}))), 131008);
    }

    #[test]
    fn a_product_list_needs_a_text_header() {
        let i = json!({"type": "product_list", "body": {"text": "b"}});
        assert_eq!(code(header_rule(Some("product_list"), &i)), 131008);
        let product = json!({"type": "product", "header": {"type": "text", "text": "h"}});
        assert_eq!(code(header_rule(Some("product"), &product)), 131009);
    }

    #[test]
    fn catalog_messages_name_their_action() {
        assert!(catalog_action(&json!({"name": "catalog_message"})).is_ok());
        assert_eq!(code(catalog_action(&json!({"name": "x"}))), 131009);
    }
}
