//! product, product_list and catalog_message: each limit refused naming its field, and any
//! accepted body stored as the platform reads it and read back unchanged.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::rich::RichMessage;

fn answer(v: &Value) -> Result<Value, (String, String)> {
    RichMessage::from_json(v)
        .map(|m| m.to_json())
        .map_err(|e| (e.field, e.problem))
}

fn field(v: &Value) -> String {
    answer(v).unwrap_err().0
}

fn interactive(i: Value) -> Value {
    json!({"type": "interactive", "interactive": i})
}

fn items(ids: &[&str]) -> Value {
    ids.iter()
        .map(|id| json!({"product_retailer_id": id}))
        .collect()
}

fn product_list(sections: Value) -> Value {
    interactive(json!({
        "type": "product_list",
        "header": {"type": "text", "text": "Our picks"},
        "body": {"text": "Have a look"},
        "action": {"catalog_id": "123", "sections": sections},
    }))
}

#[test]
fn a_product_is_stored_as_the_platform_reads_it() {
    let v = interactive(json!({
        "type": "product",
        "action": {"catalog_id": "123", "product_retailer_id": "sku-1"},
    }));
    assert_eq!(answer(&v).unwrap(), v);
    let with_text = interactive(json!({
        "type": "product",
        "body": {"text": "This one"},
        "footer": {"text": "Free delivery"},
        "action": {"catalog_id": "123", "product_retailer_id": "sku-1"},
    }));
    assert_eq!(answer(&with_text).unwrap(), with_text);
}

#[test]
fn a_product_needs_its_catalog_and_id_and_takes_no_header() {
    let missing = interactive(json!({"type": "product", "action": {"catalog_id": "123"}}));
    assert_eq!(field(&missing), "product_retailer_id");
    let no_catalog =
        interactive(json!({"type": "product", "action": {"product_retailer_id": "s"}}));
    assert_eq!(field(&no_catalog), "catalog_id");
    let header = interactive(json!({
        "type": "product",
        "header": {"type": "text", "text": "h"},
        "action": {"catalog_id": "1", "product_retailer_id": "s"},
    }));
    assert_eq!(field(&header), "header");
    let long = interactive(json!({
        "type": "product",
        "action": {"catalog_id": "1", "product_retailer_id": "s".repeat(101)},
    }));
    assert_eq!(field(&long), "product_retailer_id");
    let rows = interactive(json!({
        "type": "product",
        "action": {"catalog_id": "1", "product_retailer_id": "s", "buttons": []},
    }));
    assert_eq!(field(&rows), "buttons");
}

#[test]
fn a_product_list_is_stored_as_the_platform_reads_it() {
    let v = product_list(json!([
        {"title": "Shoes", "product_items": items(&["a", "b"])},
        {"title": "Socks", "product_items": items(&["c"])},
    ]));
    assert_eq!(answer(&v).unwrap(), v);
}

#[test]
fn a_product_list_refuses_each_limit_by_name() {
    let mut no_header = product_list(json!([{"title": "S", "product_items": items(&["a"])}]));
    no_header["interactive"]
        .as_object_mut()
        .unwrap()
        .remove("header");
    assert_eq!(field(&no_header), "header");
    let mut no_body = product_list(json!([{"title": "S", "product_items": items(&["a"])}]));
    no_body["interactive"]
        .as_object_mut()
        .unwrap()
        .remove("body");
    assert_eq!(field(&no_body), "body");
    let eleven: Vec<Value> = (0..11)
        .map(|s| json!({"title": format!("S{s}"), "product_items": items(&[&format!("p{s}")])}))
        .collect();
    let (f, problem) = answer(&product_list(json!(eleven))).unwrap_err();
    assert_eq!(f, "sections");
    assert!(problem.contains("11 sections"), "{problem}");
    let ids: Vec<String> = (0..31).map(|i| format!("p{i}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let (f, problem) = answer(&product_list(
        json!([{"title": "S", "product_items": items(&ids)}]),
    ))
    .unwrap_err();
    assert_eq!(f, "sections");
    assert!(problem.contains("31 products"), "{problem}");
    let repeated = product_list(json!([
        {"title": "A", "product_items": items(&["a", "b", "c", "d"])},
        {"title": "B", "product_items": items(&["e", "f", "g", "a"])},
    ]));
    assert_eq!(
        field(&repeated),
        "sections[1].product_items[3].product_retailer_id"
    );
    let untitled = product_list(json!([{"product_items": items(&["a"])}]));
    assert_eq!(field(&untitled), "sections[0].title");
    let long_title =
        product_list(json!([{"title": "t".repeat(25), "product_items": items(&["a"])}]));
    assert_eq!(field(&long_title), "sections[0].title");
    let empty = product_list(json!([{"title": "A", "product_items": []}]));
    assert_eq!(field(&empty), "sections");
    let rows = product_list(json!([
        {"title": "A", "product_items": items(&["a"])},
        {"title": "B", "rows": [{"id": "x", "title": "y"}]},
    ]));
    assert_eq!(field(&rows), "sections[1].rows");
    let media = product_list(json!([{"title": "A", "product_items": items(&["a"])}]));
    let mut media = media;
    media["interactive"]["header"] =
        json!({"type": "image", "image": {"link": "https://x.io/a.jpg"}});
    assert_eq!(field(&media), "header");
}

#[test]
fn a_list_refuses_product_items() {
    let v = interactive(json!({
        "type": "list",
        "body": {"text": "b"},
        "action": {"button": "Open", "sections": [
            {"rows": [{"id": "a", "title": "A"}], "product_items": items(&["x"])}
        ]},
    }));
    assert_eq!(field(&v), "sections[0].product_items");
}

#[test]
fn a_catalog_message_is_stored_as_the_platform_reads_it() {
    let v = interactive(json!({
        "type": "catalog_message",
        "body": {"text": "Our catalog"},
        "footer": {"text": "Open to shop"},
        "action": {"name": "catalog_message",
                   "parameters": {"thumbnail_product_retailer_id": "sku-1"}},
    }));
    assert_eq!(answer(&v).unwrap(), v);
    let bare = interactive(json!({
        "type": "catalog_message",
        "body": {"text": "Our catalog"},
        "action": {"name": "catalog_message"},
    }));
    assert_eq!(answer(&bare).unwrap(), bare);
}

#[test]
fn a_catalog_message_refuses_what_is_not_its_own() {
    let no_body = interactive(json!({
        "type": "catalog_message",
        "action": {"name": "catalog_message"},
    }));
    assert_eq!(field(&no_body), "body");
    let cta = interactive(json!({
        "type": "catalog_message",
        "body": {"text": "b"},
        "action": {"name": "catalog_message",
                   "parameters": {"display_text": "Go", "url": "https://x.io"}},
    }));
    assert_eq!(field(&cta), "url");
    let thumb = interactive(json!({
        "type": "catalog_message",
        "body": {"text": "b"},
        "action": {"name": "catalog_message",
                   "parameters": {"thumbnail_product_retailer_id": ""}},
    }));
    assert_eq!(field(&thumb), "thumbnail_product_retailer_id");
    let header = interactive(json!({
        "type": "catalog_message",
        "header": {"type": "text", "text": "h"},
        "body": {"text": "b"},
        "action": {"name": "catalog_message"},
    }));
    assert_eq!(field(&header), "header");
    // A CTA's parameters keep their own reader's message.
    let broken_cta = interactive(json!({
        "type": "cta_url",
        "body": {"text": "b"},
        "action": {"name": "cta_url", "parameters": {"display_text": "Go"}},
    }));
    assert!(
        answer(&broken_cta)
            .unwrap_err()
            .1
            .contains("missing field `url`")
    );
}

/// A product id: mostly short and distinct, now and then a repeat, empty or too long.
fn product_id() -> impl Strategy<Value = String> {
    prop_oneof![
        30 => "[a-z0-9-]{1,12}",
        1 => Just("dup".to_owned()),
        1 => Just(String::new()),
        1 => Just("x".repeat(101)),
    ]
}

fn section() -> impl Strategy<Value = (String, Vec<String>)> {
    (
        prop_oneof![20 => "[A-Za-z ]{1,24}", 1 => Just(String::new()), 1 => Just("t".repeat(25))],
        prop_oneof![
            9 => proptest::collection::vec(product_id(), 1..6),
            1 => proptest::collection::vec(product_id(), 0..32),
        ],
    )
}

/// The rule, written from the platform's limits, over the sections as given.
fn allowed(sections: &[(String, Vec<String>)]) -> bool {
    let total: usize = sections.iter().map(|(_, ids)| ids.len()).sum();
    let mut seen = std::collections::HashSet::new();
    (1..=10).contains(&sections.len())
        && (1..=30).contains(&total)
        && sections.iter().all(|(title, ids)| {
            !title.trim().is_empty()
                && title.chars().count() <= 24
                && !ids.is_empty()
                && ids.iter().all(|id| {
                    !id.trim().is_empty() && id.chars().count() <= 100 && seen.insert(id.clone())
                })
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any product list: accepted exactly when the platform's limits hold; accepted ones
    /// store as given and read back the same; refused ones name a field of the list.
    #[test]
    fn any_product_list_is_judged_by_the_limits(
        sections in prop_oneof![
            9 => proptest::collection::vec(section(), 1..4),
            1 => proptest::collection::vec(section(), 0..12),
        ]
    ) {
        let given: Vec<Value> = sections
            .iter()
            .map(|(title, ids)| {
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                json!({"title": title, "product_items": items(&ids)})
            })
            .collect();
        let v = product_list(json!(given));
        match answer(&v) {
            Ok(stored) => {
                prop_assert!(allowed(&sections), "accepted {}", v);
                prop_assert_eq!(&stored, &v);
                prop_assert_eq!(answer(&stored).unwrap(), stored);
            }
            Err((f, _)) => {
                prop_assert!(!allowed(&sections), "refused {} at {}", v, f);
                prop_assert!(f.starts_with("sections"), "{}", f);
            }
        }
    }

    /// A product with any ids: accepted exactly when both fit, else refused naming one.
    #[test]
    fn any_product_is_judged_by_its_ids(catalog in product_id(), id in product_id()) {
        let v = interactive(json!({
            "type": "product",
            "action": {"catalog_id": catalog, "product_retailer_id": id},
        }));
        let fits = |s: &str| !s.trim().is_empty() && s.chars().count() <= 100;
        match answer(&v) {
            Ok(stored) => {
                prop_assert!(fits(&catalog) && fits(&id));
                prop_assert_eq!(stored, v);
            }
            Err((f, _)) => {
                let want = if fits(&catalog) { "product_retailer_id" } else { "catalog_id" };
                prop_assert_eq!(f, want);
            }
        }
    }
}
