//! A `contacts` send as the platform takes it: 1 to 10 cards, each with
//! `name.formatted_name`; the keys of each part are the platform's own; a birthday is a
//! real `YYYY-MM-DD` date. A fault is 131009 naming the field (131008 when it is missing).
//! Written from the platform's rules, apart from Warden's own parser.

use serde_json::Value;

use crate::state::Refusal;

fn bad(details: impl Into<String>) -> Refusal {
    Refusal::new(400, 131009, details)
}

/// The keys each part of a card may have.
const CARD: &[&str] = &[
    "name",
    "phones",
    "emails",
    "urls",
    "org",
    "addresses",
    "birthday",
];
const NAME: &[&str] = &[
    "formatted_name",
    "first_name",
    "last_name",
    "middle_name",
    "suffix",
    "prefix",
];
const PHONE: &[&str] = &["phone", "type", "wa_id"];
const EMAIL: &[&str] = &["email", "type"];
const URL: &[&str] = &["url", "type"];
const ORG: &[&str] = &["company", "department", "title"];
const ADDRESS: &[&str] = &[
    "street",
    "city",
    "state",
    "zip",
    "country",
    "country_code",
    "type",
];

/// Only `keys`, each a non-empty string unless it is one of the card's nested parts.
fn keys(v: &Value, path: &str, allowed: &[&str]) -> Result<(), Refusal> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad(format!("{path} must be an object")))?;
    for (k, x) in obj {
        if !allowed.contains(&k.as_str()) {
            return Err(bad(format!("{path}.{k} is not a valid parameter")));
        }
        let nested = matches!(
            k.as_str(),
            "name" | "phones" | "emails" | "urls" | "org" | "addresses"
        ) && allowed == CARD;
        if !nested && x.as_str().is_none_or(|s| s.trim().is_empty()) {
            return Err(bad(format!("{path}.{k} must be a non-empty string")));
        }
    }
    Ok(())
}

fn each(card: &Value, path: &str, key: &str, allowed: &[&str]) -> Result<(), Refusal> {
    match card.get(key) {
        None => Ok(()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| keys(x, &format!("{path}.{key}[{i}]"), allowed)),
        Some(_) => Err(bad(format!("{path}.{key} must be an array"))),
    }
}

fn date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().ok();
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// Checks the `contacts` array of a send.
pub fn check(contacts: &Value) -> Result<(), Refusal> {
    let cards = contacts
        .as_array()
        .ok_or_else(|| bad("contacts must be an array"))?;
    if cards.is_empty() || cards.len() > 10 {
        return Err(bad(format!(
            "contacts: {} given, 1 to 10 allowed",
            cards.len()
        )));
    }
    for (i, card) in cards.iter().enumerate() {
        let path = format!("contacts[{i}]");
        keys(card, &path, CARD)?;
        let name = card.get("name").ok_or_else(|| {
            Refusal::new(
                400,
                131008,
                format!("{path}.name.formatted_name is required"),
            )
        })?;
        keys(name, &format!("{path}.name"), NAME)?;
        if name.get("formatted_name").is_none() {
            return Err(Refusal::new(
                400,
                131008,
                format!("{path}.name.formatted_name is required"),
            ));
        }
        each(card, &path, "phones", PHONE)?;
        each(card, &path, "emails", EMAIL)?;
        each(card, &path, "urls", URL)?;
        each(card, &path, "addresses", ADDRESS)?;
        if let Some(org) = card.get("org") {
            keys(org, &format!("{path}.org"), ORG)?;
        }
        if let Some(b) = card.get("birthday")
            && !b.as_str().is_some_and(date)
        {
            return Err(bad(format!("{path}.birthday must be a date as YYYY-MM-DD")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cards_as_the_platform_takes_them() {
        let ok = json!([{"name": {"formatted_name": "Ana"}, "phones": [{"phone": "+1 555", "type": "CELL"}],
                         "birthday": "2000-02-29"}]);
        assert!(check(&ok).is_ok());
        let code = |v: Value| check(&v).unwrap_err().body.error.code;
        assert_eq!(code(json!([])), 131009);
        assert_eq!(code(json!([{"name": {"first_name": "A"}}])), 131008);
        assert_eq!(
            code(json!([{"name": {"formatted_name": "A"}, "phones": [{"phone": "1", "x": "y"}]}])),
            131009
        );
        assert_eq!(
            code(json!([{"name": {"formatted_name": "A"}, "birthday": "1999-02-29"}])),
            131009
        );
        let e = check(&json!([{"name": {"formatted_name": "A"}}, {"name": {"formatted_name": "B"}, "phones": [{"phone": ""}]}]))
            .unwrap_err();
        let details = e
            .body
            .error
            .error_data
            .and_then(|d| d.details)
            .unwrap_or_default();
        assert!(details.contains("contacts[1].phones[0].phone"), "{details}");
    }
}
