//! The contact card parser: examples of each rule, and properties over random cards (a
//! valid card reads back and stores unchanged; a key that is not the platform's is refused
//! by its exact path wherever it is put; a birthday reads only when it is a real date).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::rich::RichMessage;

fn card() -> Value {
    json!({
        "name": {"formatted_name": "Ana Lima", "first_name": "Ana", "last_name": "Lima"},
        "phones": [{"phone": "+62 811 000 111", "type": "CELL", "wa_id": "62811000111"}],
        "emails": [{"email": "ana@example.com", "type": "WORK"}],
        "urls": [{"url": "https://example.com/ana", "type": "WORK"}],
        "org": {"company": "Lima & Co", "department": "Sales", "title": "Lead"},
        "addresses": [{"street": "Jl. Sudirman 1", "city": "Jakarta", "zip": "10220",
                       "country": "Indonesia", "country_code": "ID", "type": "WORK"}],
        "birthday": "1990-04-23"
    })
}

fn field_of(v: &Value) -> String {
    parse(v, "contacts").unwrap_err().field
}

#[test]
fn a_full_card_reads_and_stores_as_written() {
    let v = json!([card()]);
    let read = parse(&v, "contacts").unwrap();
    assert_eq!(serde_json::to_value(&read).unwrap(), v);
    let body = json!({"type": "contacts", "contacts": v});
    let m = RichMessage::from_json(&body).unwrap();
    assert_eq!(m.kind(), "contacts");
    assert_eq!(m.to_json(), body);
}

#[test]
fn each_rule_names_its_path() {
    let mut v = json!([card(), card()]);
    v[1]["phones"][0]["phone"] = json!("call me");
    assert_eq!(field_of(&v), "contacts[1].phones[0].phone");
    let mut v = json!([card()]);
    v[0]["name"] = json!({"first_name": "Ana"});
    assert_eq!(field_of(&v), "contacts[0].name.formatted_name");
    let mut v = json!([card()]);
    v[0].as_object_mut().unwrap().remove("name");
    assert_eq!(field_of(&v), "contacts[0].name.formatted_name");
    let mut v = json!([card()]);
    v[0]["birthday"] = json!("1990-02-30");
    assert_eq!(field_of(&v), "contacts[0].birthday");
    let mut v = json!([card()]);
    v[0]["emails"][0]["email"] = json!("ana at example");
    assert_eq!(field_of(&v), "contacts[0].emails[0].email");
    let mut v = json!([card()]);
    v[0]["urls"][0]["url"] = json!("ftp://x");
    assert_eq!(field_of(&v), "contacts[0].urls[0].url");
    let mut v = json!([card()]);
    v[0]["phones"][0]["wa_id"] = json!("+62811");
    assert_eq!(field_of(&v), "contacts[0].phones[0].wa_id");
    let mut v = json!([card()]);
    v[0]["addresses"][0]["country_code"] = json!("I1");
    assert_eq!(field_of(&v), "contacts[0].addresses[0].country_code");
    let mut v = json!([card()]);
    v[0]["org"]["ceo"] = json!("x");
    assert_eq!(field_of(&v), "contacts[0].org.ceo");
    let mut v = json!([card()]);
    v[0]["phones"] = json!({"phone": "1"});
    assert_eq!(field_of(&v), "contacts[0].phones");
    assert_eq!(field_of(&json!([])), "contacts");
    assert_eq!(field_of(&json!(vec![card(); 11])), "contacts");
    assert_eq!(field_of(&json!({"name": {}})), "contacts");
}

#[test]
fn a_name_alone_is_a_card() {
    let v = json!([{"name": {"formatted_name": "Ana"}}]);
    assert!(parse(&v, "contacts").is_ok());
    assert!(check_date("2024-02-29").is_ok());
    assert!(check_date("2023-02-29").is_err());
    assert!(check_date("2024-2-9").is_err());
    assert!(check_date("24-02-09xx").is_err());
}

/// A short printable string the rules accept where any text is.
fn label() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9 .,'&-]{0,20}"
}

fn opt<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    proptest::option::of(s)
}

fn phone_s() -> impl Strategy<Value = Value> {
    ("\\+?[0-9][0-9 -]{0,15}", opt(label()), opt("[0-9]{1,15}")).prop_map(|(p, t, w)| {
        let mut o = json!({"phone": p});
        if let Some(t) = t {
            o["type"] = json!(t);
        }
        if let Some(w) = w {
            o["wa_id"] = json!(w);
        }
        o
    })
}

fn card_s() -> impl Strategy<Value = Value> {
    (
        label(),
        opt(label()),
        opt(prop::collection::vec(phone_s(), 0..3)),
        opt(("[a-z]{1,8}", "[a-z]{1,8}")
            .prop_map(|(u, h)| json!({"email": format!("{u}@{h}.com")}))),
        opt(label().prop_map(|c| json!({"company": c}))),
        opt((label(), opt("[A-Z]{2}")).prop_map(|(city, cc)| {
            let mut a = json!({"city": city});
            if let Some(cc) = cc {
                a["country_code"] = json!(cc);
            }
            a
        })),
        opt((1900i32..2030, 1u32..13, 1u32..29)),
    )
        .prop_map(
            |(formatted, first, phones, email, org, address, birthday)| {
                let mut c = json!({"name": {"formatted_name": formatted}});
                if let Some(f) = first {
                    c["name"]["first_name"] = json!(f);
                }
                if let Some(p) = phones {
                    c["phones"] = json!(p);
                }
                if let Some(e) = email {
                    c["emails"] = json!([e]);
                }
                if let Some(o) = org {
                    c["org"] = o;
                }
                if let Some(a) = address {
                    c["addresses"] = json!([a]);
                }
                if let Some((y, m, d)) = birthday {
                    c["birthday"] = json!(format!("{y:04}-{m:02}-{d:02}"));
                }
                c
            },
        )
}

/// Every object path inside `v` (`contacts[0].phones[1]`, ...), with the object's keys.
fn object_paths(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            out.push(path.clone());
            for (k, x) in o {
                object_paths(x, format!("{path}.{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                object_paths(x, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The value at a path `object_paths` wrote.
fn at<'a>(v: &'a mut Value, path: &str) -> &'a mut Value {
    let mut cur = v;
    let rest = path.strip_prefix("contacts").unwrap();
    let mut chars = rest;
    while !chars.is_empty() {
        if let Some(r) = chars.strip_prefix('[') {
            let end = r.find(']').unwrap();
            let i: usize = r[..end].parse().unwrap();
            cur = &mut cur[i];
            chars = &r[end + 1..];
        } else {
            let r = chars.strip_prefix('.').unwrap();
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = &mut cur[&r[..end]];
            chars = &r[end..];
        }
    }
    cur
}

proptest! {
    #[test]
    fn valid_cards_read_back_unchanged(cards in prop::collection::vec(card_s(), 1..=MAX_CONTACTS)) {
        let v = json!(cards);
        let read = parse(&v, "contacts").unwrap();
        prop_assert_eq!(serde_json::to_value(&read).unwrap(), v.clone());
        prop_assert!(validate(&read).is_ok());
    }

    #[test]
    fn an_unknown_key_anywhere_is_refused_by_its_path(
        cards in prop::collection::vec(card_s(), 1..=3),
        pick in any::<prop::sample::Index>(),
        key in "zz_[a-z]{1,6}",
    ) {
        let mut v = json!(cards);
        let mut paths = Vec::new();
        object_paths(&v, "contacts".into(), &mut paths);
        let path = paths[pick.index(paths.len())].clone();
        at(&mut v, &path)[&key] = json!("x");
        let e = parse(&v, "contacts").unwrap_err();
        prop_assert_eq!(e.field, format!("{path}.{key}"));
    }

    #[test]
    fn a_birthday_reads_only_when_it_is_a_date(s in "[0-9]{4}-[0-9]{2}-[0-9]{2}|.{0,12}") {
        let v = json!([{"name": {"formatted_name": "Ana"}, "birthday": s.clone()}]);
        let real = chrono::NaiveDate::parse_from_str(&s, "%Y-%m-%d").is_ok()
            && s.len() == 10 && s.as_bytes()[4] == b'-' && s.as_bytes()[7] == b'-'
            && s.bytes().enumerate().all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
        prop_assert_eq!(parse(&v, "contacts").is_ok(), real, "{}", s);
    }
}
