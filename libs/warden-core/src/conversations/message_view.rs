//! The normalised view of a stored message (docs/tools.md, The conversation loop).
//!
//! Messages are stored as the platform sent them (inbound: the webhook's message object;
//! outbound: the platform-shaped body we send). [`normalise`] turns one stored content into
//! what agents read: a type from a closed set, the text a person would see, and the typed
//! parts (media, reaction, location, interactive reply, referral). It is pure and never
//! fails: anything it does not understand becomes `unsupported` with no text, so a new or
//! malformed platform payload can never break a history page.
//!
//! References to other messages (`context.id`, a reaction's `message_id`, an edit's or a
//! revoke's `original_message_id`) are platform wamids here; `conversations::view` resolves
//! them to our message ids.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::conversations::order_view::{self, OrderView, ReferredProduct};

/// The longest text kept from a payload (the platform's own text limit is 4096; captions
/// and titles are shorter). Longer input is cut, never refused.
pub const MAX_TEXT_CHARS: usize = 4096;
/// The longest id or short field kept (wamids, media ids, mime types, hashes, names).
const MAX_SHORT_CHARS: usize = 512;

/// The types a message is reported as; anything else is `unsupported`.
pub const TYPES: &[&str] = &[
    "text",
    "image",
    "video",
    "audio",
    "document",
    "sticker",
    "location",
    "contacts",
    "interactive",
    "button",
    "reaction",
    "order",
    "system",
    "unsupported",
    "edit",
    "revoke",
    // A customer's flow submission (an interactive `nfm_reply`).
    "flow_response",
    // Outbound only: what we send besides the customer's types.
    "template",
];

/// A media attachment (image, video, audio, document, sticker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Media {
    /// The platform's media id (get_media fetches the bytes).
    pub media_id: Option<String>,
    pub mime_type: Option<String>,
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// An audio message recorded as a voice note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voice: Option<bool>,
    /// An animated sticker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub animated: Option<bool>,
}

/// A shared location.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Location {
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

/// The reply a customer chose (a reply button, a list row, or a template's quick-reply button).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InteractiveReply {
    /// The id (or quick-reply payload) we gave the option.
    pub reply_id: Option<String>,
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What a customer's flow submission says (its flow message is resolved by
/// `conversations::view`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSubmission {
    /// The token in the answers, when they carry one.
    pub flow_token: Option<String>,
    /// The answers: `response_json` parsed, else `{"raw": text}`.
    pub response: Map<String, Value>,
    /// `response_json` was not a JSON object.
    pub parse_error: bool,
}

/// What an edit or a revoke does to an earlier message.
#[derive(Debug, Clone, PartialEq)]
pub enum Amend {
    /// The original's shown text becomes this.
    Edit { text: Option<String> },
    /// The original is deleted.
    Revoke,
}

/// One stored message, normalised. References are still wamids.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalised {
    /// One of [`TYPES`].
    pub kind: &'static str,
    pub text: Option<String>,
    pub media: Option<Media>,
    /// `context.id`: the wamid of the message this one answers.
    pub context_wamid: Option<String>,
    /// The emoji (empty: the reaction was removed) and the wamid reacted to.
    pub reaction: Option<(String, Option<String>)>,
    pub location: Option<Location>,
    pub interactive: Option<InteractiveReply>,
    /// The ad or post the customer came from (the platform's object, as sent).
    pub referral: Option<Value>,
    /// For `edit` and `revoke`: the wamid of the message changed, and how.
    pub amends: Option<(String, Amend)>,
    /// The platform's unix timestamp of the message (inbound), when it carries one.
    pub timestamp: Option<i64>,
    /// A "user changed number" system message: the customer's new number (as sent).
    pub new_number: Option<String>,
    /// A flow submission (kind `flow_response`).
    pub flow: Option<FlowSubmission>,
    /// A `contacts` message: its cards in the platform's shape (at most [`MAX_CONTACTS`]).
    pub contacts: Option<Value>,
    /// A customer's cart (`order`), with its totals.
    pub order: Option<OrderView>,
    /// The product a customer asked about (`context.referred_product`).
    pub referred_product: Option<ReferredProduct>,
}

/// The normalised view of a stored message content. Pure; never fails.
pub fn normalise(content: &Value) -> Normalised {
    let empty = Map::new();
    let obj = content.as_object().unwrap_or(&empty);
    let raw_type = str_of(obj.get("type"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    let kind = TYPES
        .iter()
        .copied()
        .find(|t| *t == raw_type)
        .unwrap_or("unsupported");
    let part = obj.get(kind).and_then(Value::as_object).unwrap_or(&empty);
    let mut n = Normalised {
        kind,
        text: None,
        media: None,
        context_wamid: obj
            .get("context")
            .and_then(Value::as_object)
            .and_then(|c| short(c.get("id"))),
        reaction: None,
        location: None,
        interactive: None,
        referral: obj
            .get("referral")
            .filter(|r| r.as_object().is_some_and(|o| !o.is_empty()))
            .cloned(),
        amends: None,
        timestamp: timestamp_of(obj.get("timestamp")),
        new_number: None,
        flow: None,
        contacts: None,
        order: None,
        referred_product: order_view::referred_product(obj),
    };
    match kind {
        "text" => n.text = long(part.get("body")),
        "image" | "video" | "document" | "audio" | "sticker" => {
            n.text = long(part.get("caption"));
            n.media = Some(media_of(kind, part));
        }
        "button" => {
            n.text = long(part.get("text"));
            n.interactive = Some(InteractiveReply {
                reply_id: short(part.get("payload")),
                title: n.text.clone(),
                description: None,
            });
        }
        "interactive" => {
            let reply = ["button_reply", "list_reply"]
                .iter()
                .find_map(|k| part.get(*k).and_then(Value::as_object));
            if let Some(r) = reply {
                n.text = long(r.get("title"));
                n.interactive = Some(InteractiveReply {
                    reply_id: short(r.get("id")),
                    title: n.text.clone(),
                    description: long(r.get("description")),
                });
            } else if let Some(flow) = part.get("nfm_reply").and_then(Value::as_object) {
                // A flow's answer: the platform's summary text, and the answers themselves.
                n.kind = "flow_response";
                n.text = long(flow.get("body"));
                let s = warden_rules::rich::flow::read_submission(flow.get("response_json"));
                n.flow = Some(FlowSubmission {
                    flow_token: s.flow_token,
                    response: s.response,
                    parse_error: s.parse_error,
                });
            }
        }
        "reaction" => {
            n.reaction = Some((
                long(part.get("emoji")).unwrap_or_default(),
                short(part.get("message_id")),
            ));
        }
        "location" => {
            let lat = number_of(part.get("latitude"));
            let lon = number_of(part.get("longitude"));
            if let (Some(latitude), Some(longitude)) = (lat, lon) {
                n.location = Some(Location {
                    latitude,
                    longitude,
                    name: long(part.get("name")),
                    address: long(part.get("address")),
                });
            }
        }
        "contacts" => n.contacts = contacts_of(obj.get("contacts")),
        "order" => {
            n.text = long(part.get("text"));
            n.order = Some(order_view::order(obj.get("order").unwrap_or(&Value::Null)));
        }
        "system" => {
            n.text = long(part.get("body"));
            let sys_type = str_of(part.get("type")).unwrap_or_default();
            if sys_type.eq_ignore_ascii_case("user_changed_number")
                || sys_type.eq_ignore_ascii_case("customer_changed_number")
            {
                n.new_number = short(part.get("new_wa_id")).or_else(|| short(part.get("wa_id")));
            }
        }
        "edit" => {
            // The new version of the message, in the platform's message shape.
            let inner = part.get("message").and_then(Value::as_object);
            let text = inner.and_then(|m| {
                let t = str_of(m.get("type")).unwrap_or_else(|| "text".into());
                let body = m.get(&t).and_then(Value::as_object)?;
                long(body.get("body")).or_else(|| long(body.get("caption")))
            });
            n.text = text.clone();
            if let Some(target) = short(part.get("original_message_id")) {
                n.amends = Some((target, Amend::Edit { text }));
            }
        }
        "revoke" => {
            if let Some(target) = short(part.get("original_message_id")) {
                n.amends = Some((target, Amend::Revoke));
            }
        }
        // template, unsupported: no text of their own.
        _ => {}
    }
    n
}

/// The most cards a `contacts` message shows (the platform sends at most this many).
pub const MAX_CONTACTS: usize = 10;

/// A `contacts` message's cards as sent: the objects of its array, at most
/// [`MAX_CONTACTS`]; nothing when it holds none.
fn contacts_of(v: Option<&Value>) -> Option<Value> {
    let cards: Vec<Value> = v?
        .as_array()?
        .iter()
        .filter(|c| c.is_object())
        .take(MAX_CONTACTS)
        .cloned()
        .collect();
    (!cards.is_empty()).then_some(Value::Array(cards))
}

fn media_of(kind: &str, part: &Map<String, Value>) -> Media {
    Media {
        media_id: short(part.get("id")),
        mime_type: short(part.get("mime_type")),
        sha256: short(part.get("sha256")),
        filename: if kind == "document" {
            short(part.get("filename"))
        } else {
            None
        },
        voice: (kind == "audio").then(|| part.get("voice").and_then(Value::as_bool) == Some(true)),
        animated: (kind == "sticker")
            .then(|| part.get("animated").and_then(Value::as_bool) == Some(true)),
    }
}

/// A string (or a number written as one); None when absent or empty.
fn str_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn clipped(v: Option<&Value>, max: usize) -> Option<String> {
    str_of(v).map(|s| match s.char_indices().nth(max) {
        Some((cut, _)) => s[..cut].to_string(),
        None => s,
    })
}

fn long(v: Option<&Value>) -> Option<String> {
    clipped(v, MAX_TEXT_CHARS)
}

fn short(v: Option<&Value>) -> Option<String> {
    clipped(v, MAX_SHORT_CHARS)
}

/// A coordinate: a JSON number or a numeric string, finite.
fn number_of(v: Option<&Value>) -> Option<f64> {
    let x = match v? {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    x.is_finite().then_some(x)
}

fn timestamp_of(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
#[path = "message_view_tests.rs"]
mod tests;
