//! `contacts`: up to ten contact cards, in the platform's shape. Each card needs
//! `name.formatted_name`; its other parts are the platform's own (`phones`, `emails`,
//! `urls`, `org`, `addresses`, `birthday`), every key checked, so a card the platform
//! would refuse or misread is refused here naming its path (`contacts[1].phones[0].phone`).
//!
//! Read by hand from JSON rather than by serde, because serde's errors do not say where in
//! a nested array the fault is.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{MAX_LABEL_CHARS, RichError, err, shown, text, url};
use crate::text::TextKind;

/// Contact cards per message.
pub const MAX_CONTACTS: usize = 10;
/// Longest `type` label (`HOME`, `WORK`, `CELL`, ...).
pub const MAX_TYPE_CHARS: usize = 60;
/// Longest phone number as written (spaces, dashes and brackets included).
pub const MAX_PHONE_CHARS: usize = 64;
/// Longest e-mail address.
pub const MAX_EMAIL_CHARS: usize = 320;

/// One contact card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Contact {
    /// The name (its `formatted_name` is required).
    pub name: Name,
    /// Phone numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phones: Option<Vec<Phone>>,
    /// E-mail addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emails: Option<Vec<Email>>,
    /// Web addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urls: Option<Vec<Link>>,
    /// Where the contact works.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org: Option<Org>,
    /// Postal addresses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<Address>>,
    /// `YYYY-MM-DD`, a real date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub birthday: Option<String>,
}

/// A card's name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Name {
    /// The name as shown (required).
    pub formatted_name: String,
    /// Given name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_name: Option<String>,
    /// Middle name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub middle_name: Option<String>,
    /// Name suffix (`Jr.`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// Name prefix (`Dr.`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// A phone number of a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phone {
    /// The number as written (`+62 811 000 111`).
    pub phone: String,
    /// `CELL`, `HOME`, `WORK`, ... as the sender labels it.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The number's WhatsApp id (digits), which adds a "Message" button.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wa_id: Option<String>,
}

/// An e-mail address of a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Email {
    /// The address.
    pub email: String,
    /// `HOME`, `WORK`, ...
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// A web address of a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// An http(s) URL.
    pub url: String,
    /// `HOME`, `WORK`, ...
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// Where the contact works.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Org {
    /// Company name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company: Option<String>,
    /// Department.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub department: Option<String>,
    /// Job title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A postal address of a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Address {
    /// Street and number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub street: Option<String>,
    /// City.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    /// State or province.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Postal code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zip: Option<String>,
    /// Country name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// ISO 3166-1 alpha-2, e.g. `ID`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country_code: Option<String>,
    /// `HOME`, `WORK`, ...
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// Reads and checks the `contacts` array (`path` is how the caller names it, `contacts`).
pub fn parse(v: &Value, path: &str) -> Result<Vec<Contact>, RichError> {
    let items = v
        .as_array()
        .ok_or_else(|| err(path, "must be a JSON array of contact cards"))?;
    if items.is_empty() || items.len() > MAX_CONTACTS {
        return Err(err(
            path,
            format!(
                "has {} contacts; 1 to {MAX_CONTACTS} are allowed",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, c)| contact(c, &format!("{path}[{i}]")))
        .collect()
}

/// Every limit of cards already read (they are checked again as the platform reads them).
pub fn validate(contacts: &[Contact]) -> Result<(), RichError> {
    let v = serde_json::to_value(contacts).expect("plain data serialises");
    parse(&v, "contacts").map(|_| ())
}

/// The keys of an object at `path`, any other refused by its path.
fn object<'a>(
    v: &'a Value,
    path: &str,
    keys: &[&str],
) -> Result<&'a Map<String, Value>, RichError> {
    let obj = v
        .as_object()
        .ok_or_else(|| err(path, "must be a JSON object"))?;
    if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(err(
            format!("{path}.{k}"),
            format!(
                "is not a field of this object; allowed: {}",
                keys.join(", ")
            ),
        ));
    }
    Ok(obj)
}

/// An optional string of 1..=max characters.
fn string(
    obj: &Map<String, Value>,
    path: &str,
    key: &str,
    max: usize,
) -> Result<Option<String>, RichError> {
    let field = format!("{path}.{key}");
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            text(&field, s, max, TextKind::Plain)?;
            Ok(Some(s.clone()))
        }
        Some(_) => Err(err(field, "must be a string")),
    }
}

fn required(
    obj: &Map<String, Value>,
    path: &str,
    key: &str,
    max: usize,
) -> Result<String, RichError> {
    string(obj, path, key, max)?.ok_or_else(|| err(format!("{path}.{key}"), "is required"))
}

/// An optional array at `path.key`, each item read by `item` with its own path.
fn list<T>(
    obj: &Map<String, Value>,
    path: &str,
    key: &str,
    item: impl Fn(&Value, &str) -> Result<T, RichError>,
) -> Result<Option<Vec<T>>, RichError> {
    let field = format!("{path}.{key}");
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| item(v, &format!("{field}[{i}]")))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(err(field, "must be a JSON array")),
    }
}

fn contact(v: &Value, path: &str) -> Result<Contact, RichError> {
    let obj = object(
        v,
        path,
        &[
            "name",
            "phones",
            "emails",
            "urls",
            "org",
            "addresses",
            "birthday",
        ],
    )?;
    let name = obj
        .get("name")
        .ok_or_else(|| err(format!("{path}.name.formatted_name"), "is required"))?;
    let birthday = string(obj, path, "birthday", 10)?;
    if let Some(b) = &birthday {
        check_date(b).map_err(|problem| err(format!("{path}.birthday"), problem))?;
    }
    Ok(Contact {
        name: self::name(name, &format!("{path}.name"))?,
        phones: list(obj, path, "phones", phone)?,
        emails: list(obj, path, "emails", email)?,
        urls: list(obj, path, "urls", link)?,
        org: match obj.get("org") {
            None | Some(Value::Null) => None,
            Some(o) => Some(org(o, &format!("{path}.org"))?),
        },
        addresses: list(obj, path, "addresses", address)?,
        birthday,
    })
}

fn name(v: &Value, path: &str) -> Result<Name, RichError> {
    let keys = [
        "formatted_name",
        "first_name",
        "last_name",
        "middle_name",
        "suffix",
        "prefix",
    ];
    let obj = object(v, path, &keys)?;
    let part = |key| string(obj, path, key, MAX_LABEL_CHARS);
    Ok(Name {
        formatted_name: required(obj, path, "formatted_name", MAX_LABEL_CHARS)?,
        first_name: part("first_name")?,
        last_name: part("last_name")?,
        middle_name: part("middle_name")?,
        suffix: part("suffix")?,
        prefix: part("prefix")?,
    })
}

fn phone(v: &Value, path: &str) -> Result<Phone, RichError> {
    let obj = object(v, path, &["phone", "type", "wa_id"])?;
    let number = required(obj, path, "phone", MAX_PHONE_CHARS)?;
    let written = number
        .chars()
        .all(|c| c.is_ascii_digit() || " +-().".contains(c));
    if !written || !number.chars().any(|c| c.is_ascii_digit()) {
        return Err(err(
            format!("{path}.phone"),
            format!(
                "is {}; write a phone number with digits and + - ( ) . or spaces, e.g. \"+1 555 0100\"",
                shown(&number)
            ),
        ));
    }
    let wa_id = string(obj, path, "wa_id", 20)?;
    if let Some(w) = &wa_id
        && !w.chars().all(|c| c.is_ascii_digit())
    {
        return Err(err(
            format!("{path}.wa_id"),
            format!("is {}; a WhatsApp id is digits only", shown(w)),
        ));
    }
    Ok(Phone {
        phone: number,
        kind: string(obj, path, "type", MAX_TYPE_CHARS)?,
        wa_id,
    })
}

fn email(v: &Value, path: &str) -> Result<Email, RichError> {
    let obj = object(v, path, &["email", "type"])?;
    let address = required(obj, path, "email", MAX_EMAIL_CHARS)?;
    let fits = match address.split_once('@') {
        Some((user, host)) => {
            !user.is_empty() && host.contains('.') && !address.contains(char::is_whitespace)
        }
        None => false,
    };
    if !fits {
        return Err(err(
            format!("{path}.email"),
            format!(
                "is {}; write an e-mail address such as ana@example.com",
                shown(&address)
            ),
        ));
    }
    Ok(Email {
        email: address,
        kind: string(obj, path, "type", MAX_TYPE_CHARS)?,
    })
}

fn link(v: &Value, path: &str) -> Result<Link, RichError> {
    let obj = object(v, path, &["url", "type"])?;
    let address = required(obj, path, "url", super::MAX_URL_CHARS)?;
    url(&format!("{path}.url"), &address)?;
    Ok(Link {
        url: address,
        kind: string(obj, path, "type", MAX_TYPE_CHARS)?,
    })
}

fn org(v: &Value, path: &str) -> Result<Org, RichError> {
    let obj = object(v, path, &["company", "department", "title"])?;
    let part = |key| string(obj, path, key, MAX_LABEL_CHARS);
    Ok(Org {
        company: part("company")?,
        department: part("department")?,
        title: part("title")?,
    })
}

fn address(v: &Value, path: &str) -> Result<Address, RichError> {
    let keys = [
        "street",
        "city",
        "state",
        "zip",
        "country",
        "country_code",
        "type",
    ];
    let obj = object(v, path, &keys)?;
    let part = |key| string(obj, path, key, MAX_LABEL_CHARS);
    let country_code = string(obj, path, "country_code", 2)?;
    if let Some(cc) = &country_code
        && !(cc.len() == 2 && cc.chars().all(|c| c.is_ascii_alphabetic()))
    {
        return Err(err(
            format!("{path}.country_code"),
            format!("is {}; use two letters (ISO 3166-1), e.g. ID", shown(cc)),
        ));
    }
    Ok(Address {
        street: part("street")?,
        city: part("city")?,
        state: part("state")?,
        zip: part("zip")?,
        country: part("country")?,
        country_code,
        kind: string(obj, path, "type", MAX_TYPE_CHARS)?,
    })
}

/// `YYYY-MM-DD`, a date that exists.
fn check_date(s: &str) -> Result<(), String> {
    let shape = s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    if shape && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() {
        Ok(())
    } else {
        Err(format!(
            "is {}; write a real date as YYYY-MM-DD, e.g. 1990-04-23",
            shown(s)
        ))
    }
}

#[cfg(test)]
#[path = "contacts_tests.rs"]
mod tests;
