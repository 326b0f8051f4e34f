//! Rich (non-template) message kinds: media, interactive, location, reaction, contacts.
//!
//! The types are the platform's own `/messages` objects (`image`, `interactive`, ...), so
//! a body an agent writes in the platform's shape is parsed, checked against the
//! platform's limits and written back unchanged. Every limit is checked here, purely,
//! before anything is stored or sent; a failure names the field (as the tools call it)
//! and the limit. All of these kinds are free-form: they need an open care window.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::text::{TextKind, check};

pub mod contacts;
mod interactive;
mod media;
mod upload;
pub use contacts::Contact;
pub use interactive::{
    Action, ActionFields, ButtonsAction, CallPermissionAction, CtaParameters, CtaUrlAction, Header,
    Interactive, InteractiveFields, InteractiveType, ListAction, LocationRequestAction, Reply,
    ReplyButton, Row, Section, TextObject,
};
/// The `flow` kind's parts and a customer's flow submission.
pub mod flow {
    pub use super::interactive::{
        FLOW_ACTIONS, FLOW_MESSAGE_VERSION, FLOW_MODES, FlowAction, FlowActionPayload,
        FlowParameters, MAX_FLOW_CTA_CHARS, MAX_FLOW_TOKEN_CHARS, Parameters, Submission,
        check_data, check_token, is_emoji, read_submission,
    };
}
pub use interactive::{
    CatalogAction, CatalogParameters, MAX_PRODUCT_ID_CHARS, MAX_PRODUCT_ITEMS, Parameters,
    ProductAction, ProductItem, ProductListAction, ProductSection,
};
pub use media::{MediaObject, MediaType};
pub use upload::{KB, MB, check_upload, webp_is_animated};

/// Longest interactive body text.
pub const MAX_BODY_CHARS: usize = 1024;
/// Longest interactive header or footer text.
pub const MAX_HEADER_CHARS: usize = 60;
/// Longest footer text.
pub const MAX_FOOTER_CHARS: usize = 60;
/// Reply buttons per message.
pub const MAX_BUTTONS: usize = 3;
/// Longest reply button title (also the list's button label and a CTA's display text).
pub const MAX_BUTTON_TITLE_CHARS: usize = 20;
/// Longest reply button id.
pub const MAX_BUTTON_ID_CHARS: usize = 256;
/// Rows of a list message, over all its sections.
pub const MAX_LIST_ROWS: usize = 10;
/// Sections of a list message.
pub const MAX_SECTIONS: usize = 10;
/// Longest row (and section) title.
pub const MAX_ROW_TITLE_CHARS: usize = 24;
/// Longest row description.
pub const MAX_ROW_DESCRIPTION_CHARS: usize = 72;
/// Longest row id.
pub const MAX_ROW_ID_CHARS: usize = 200;
/// Longest media caption.
pub const MAX_CAPTION_CHARS: usize = 1024;
/// Longest URL (links, CTA urls).
pub const MAX_URL_CHARS: usize = 2000;
/// Longest location name or address, and a document's filename.
pub const MAX_LABEL_CHARS: usize = 1000;
/// Longest reaction emoji (one emoji may be several code points: flags, skin tones, ZWJ).
pub const MAX_EMOJI_CHARS: usize = 16;

/// A rich message that breaks a rule; `field` is the parameter as the tools name it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct RichError {
    /// The offending field (`buttons[3].title`, `caption`, ...).
    pub field: String,
    /// What is wrong and the limit.
    pub problem: String,
}

/// A caller's value quoted in a message: at most 40 characters, so a message stays short
/// whatever was sent.
fn shown(value: &str) -> String {
    let mut out: String = value.chars().take(40).collect();
    if value.chars().count() > 40 {
        out.push('…');
    }
    format!("{out:?}")
}

fn err(field: impl Into<String>, problem: impl Into<String>) -> RichError {
    RichError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// `value` is not empty (after trimming), has at most `max` characters and no control
/// character `kind` refuses.
fn text(field: &str, value: &str, max: usize, kind: TextKind) -> Result<(), RichError> {
    if value.trim().is_empty() {
        return Err(err(field, "must not be empty"));
    }
    let n = value.chars().count();
    if n > max {
        return Err(err(
            field,
            format!("has {n} characters; at most {max} are allowed"),
        ));
    }
    check(value, kind).map_err(|e| err(field, e.to_string()))
}

fn url(field: &str, value: &str) -> Result<(), RichError> {
    text(field, value, MAX_URL_CHARS, TextKind::Plain)?;
    let lower = value.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') && !value.contains(' ') => Ok(()),
        _ => Err(err(
            field,
            "must be an http(s) URL such as https://example.com/file.jpg",
        )),
    }
}

// ------------------------------------------------------------------ location, reaction

/// The platform's `location` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Location {
    /// -90..=90.
    pub latitude: f64,
    /// -180..=180.
    pub longitude: f64,
    /// Place name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Street address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

impl Location {
    fn validate(&self) -> Result<(), RichError> {
        if !self.latitude.is_finite() || !(-90.0..=90.0).contains(&self.latitude) {
            return Err(err("latitude", "must be a number from -90 to 90"));
        }
        if !self.longitude.is_finite() || !(-180.0..=180.0).contains(&self.longitude) {
            return Err(err("longitude", "must be a number from -180 to 180"));
        }
        if let Some(n) = &self.name {
            text("name", n, MAX_LABEL_CHARS, TextKind::Plain)?;
        }
        if let Some(a) = &self.address {
            text("address", a, MAX_LABEL_CHARS, TextKind::Plain)?;
        }
        Ok(())
    }
}

/// The platform's `reaction` object: `message_id` is the wamid reacted to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reaction {
    /// The wamid of the message reacted to.
    pub message_id: String,
    /// One emoji, or empty to remove the reaction.
    pub emoji: String,
}

impl Reaction {
    fn validate(&self) -> Result<(), RichError> {
        text(
            "message_id",
            &self.message_id,
            MAX_URL_CHARS,
            TextKind::Plain,
        )?;
        check_emoji(&self.emoji)
    }
}

/// One emoji or empty (removes the reaction): at most 16 code points, no letters, digits,
/// spaces or control characters.
pub fn check_emoji(emoji: &str) -> Result<(), RichError> {
    let n = emoji.chars().count();
    if n > MAX_EMOJI_CHARS {
        return Err(err(
            "emoji",
            format!(
                "has {n} characters; one emoji (at most {MAX_EMOJI_CHARS} code points) is allowed"
            ),
        ));
    }
    if emoji
        .chars()
        .any(|c| c.is_ascii_alphanumeric() || c.is_whitespace() || c.is_control())
    {
        return Err(err(
            "emoji",
            "must be a single emoji such as 👍 (or empty to remove the reaction)",
        ));
    }
    Ok(())
}

// --------------------------------------------------------------------------- messages

/// What a rich message carries.
#[derive(Debug, Clone, PartialEq)]
pub enum RichBody {
    /// image, video, audio, document, sticker.
    Media(MediaType, MediaObject),
    /// Buttons, list or CTA URL (boxed: by far the largest).
    Interactive(Box<Interactive>),
    /// A pin on the map.
    Location(Location),
    /// An emoji on an earlier message.
    Reaction(Reaction),
    /// Contact cards (`contacts`).
    Contacts(Vec<Contact>),
}

/// A rich message: its body and, optionally, the wamid it quotes (`context.message_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct RichMessage {
    /// What it carries.
    pub body: RichBody,
    /// The wamid of the quoted message.
    pub context: Option<String>,
}

/// The `type`s [`RichMessage`] covers.
pub const RICH_TYPES: [&str; 9] = [
    "image",
    "video",
    "audio",
    "document",
    "sticker",
    "interactive",
    "location",
    "reaction",
    "contacts",
];

impl RichMessage {
    /// The platform's `type`.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            RichBody::Media(t, _) => t.as_str(),
            RichBody::Interactive(_) => "interactive",
            RichBody::Location(_) => "location",
            RichBody::Reaction(_) => "reaction",
            RichBody::Contacts(_) => "contacts",
        }
    }

    /// Every platform limit.
    pub fn validate(&self) -> Result<(), RichError> {
        match &self.body {
            RichBody::Media(t, m) => m.validate(*t),
            RichBody::Interactive(i) => i.validate(),
            RichBody::Location(l) => l.validate(),
            RichBody::Reaction(r) => r.validate(),
            RichBody::Contacts(c) => contacts::validate(c),
        }?;
        if let Some(c) = &self.context {
            text("reply_to", c, MAX_URL_CHARS, TextKind::Plain)?;
        }
        Ok(())
    }

    /// The platform body minus `messaging_product`, `to` and `recipient_type`:
    /// `{"type": k, k: {...}, "context"?: {"message_id": wamid}}`. Also the stored content.
    pub fn to_json(&self) -> Value {
        let object = match &self.body {
            RichBody::Media(_, m) => serde_json::to_value(m),
            RichBody::Interactive(i) => serde_json::to_value(i),
            RichBody::Location(l) => serde_json::to_value(l),
            RichBody::Reaction(r) => serde_json::to_value(r),
            RichBody::Contacts(c) => serde_json::to_value(c),
        }
        .expect("plain data serialises");
        let kind = self.kind();
        let mut out = Map::new();
        out.insert("type".into(), json!(kind));
        out.insert(kind.into(), object);
        if let Some(c) = &self.context {
            out.insert("context".into(), json!({ "message_id": c }));
        }
        Value::Object(out)
    }

    /// Reads a body in the platform's shape (see [`RichMessage::to_json`]) and checks every
    /// limit. `messaging_product`, `to` and `recipient_type` are tolerated and ignored.
    pub fn from_json(v: &Value) -> Result<Self, RichError> {
        let obj = v
            .as_object()
            .ok_or_else(|| err("content", "must be a JSON object"))?;
        let kind = obj
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| err("type", "is required"))?;
        for key in obj.keys() {
            if !matches!(
                key.as_str(),
                "type" | "context" | "messaging_product" | "to" | "recipient_type"
            ) && key != kind
            {
                return Err(err(
                    shown(key),
                    format!("is not part of a {} message", shown(kind)),
                ));
            }
        }
        let inner = obj
            .get(kind)
            .ok_or_else(|| err(shown(kind), "is required for that type"))?;
        fn parse<T: serde::de::DeserializeOwned>(kind: &str, v: &Value) -> Result<T, RichError> {
            serde_json::from_value(v.clone()).map_err(|e| err(kind, format!("is not valid: {e}")))
        }
        let body = match kind {
            "interactive" => {
                let fields: InteractiveFields = parse(kind, inner)?;
                RichBody::Interactive(Box::new(Interactive::try_from(fields)?))
            }
            "location" => RichBody::Location(parse(kind, inner)?),
            "reaction" => RichBody::Reaction(parse(kind, inner)?),
            "contacts" => RichBody::Contacts(contacts::parse(inner, "contacts")?),
            other => match MediaType::parse(other) {
                Ok(t) if t.as_str() == other => RichBody::Media(t, parse(kind, inner)?),
                _ => {
                    return Err(err(
                        "type",
                        format!(
                            "{} is not a rich message type; use one of {RICH_TYPES:?}",
                            shown(other)
                        ),
                    ));
                }
            },
        };
        let context = match obj.get("context") {
            None | Some(Value::Null) => None,
            Some(c) => Some(
                c.get("message_id")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| err("context.message_id", "is required in a context"))?
                    .to_owned(),
            ),
        };
        let message = RichMessage { body, context };
        message.validate()?;
        Ok(message)
    }
}

#[cfg(test)]
mod tests;
