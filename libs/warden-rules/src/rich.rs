//! Rich (non-template) message kinds: media, interactive, location, reaction.
//!
//! The types are the platform's own `/messages` objects (`image`, `interactive`, ...), so
//! a body an agent writes in the platform's shape is parsed, checked against the
//! platform's limits and written back unchanged. Every limit is checked here, purely,
//! before anything is stored or sent; a failure names the field (as the tools call it)
//! and the limit. All of these kinds are free-form: they need an open care window.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::text::{TextKind, check};

mod upload;
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

// ------------------------------------------------------------------------------ media

/// The five media kinds of `send_media`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaType {
    /// JPEG or PNG.
    Image,
    /// MP4 or 3GPP.
    Video,
    /// AAC, AMR, MP3, MP4 audio, OGG.
    Audio,
    /// Any document (PDF, office files, text).
    Document,
    /// WebP, static or animated.
    Sticker,
}

impl MediaType {
    /// All of them, in a stable order.
    pub const ALL: [MediaType; 5] = [
        MediaType::Image,
        MediaType::Video,
        MediaType::Audio,
        MediaType::Document,
        MediaType::Sticker,
    ];

    /// The platform's `type` (and object key).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Image => "image",
            Self::Video => "video",
            Self::Audio => "audio",
            Self::Document => "document",
            Self::Sticker => "sticker",
        }
    }

    /// Case-insensitive parse of `image|video|audio|document|sticker`.
    pub fn parse(s: &str) -> Result<Self, RichError> {
        Self::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                err(
                    "media_type",
                    format!(
                        "is {}; use image, video, audio, document or sticker",
                        shown(s)
                    ),
                )
            })
    }

    /// Whether the platform takes a caption with this kind.
    pub fn takes_caption(self) -> bool {
        !matches!(self, Self::Audio | Self::Sticker)
    }
}

/// The platform's media object: exactly one of `id` (an uploaded media id) or `link`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MediaObject {
    /// A media id returned by an upload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A public http(s) URL the platform fetches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Image, video and document only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// Document only: the name the customer sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

impl MediaObject {
    fn validate(&self, kind: MediaType) -> Result<(), RichError> {
        match (&self.id, &self.link) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "link",
                    "and `media_id` were both given; pass exactly one",
                ));
            }
            (None, None) => return Err(err("link", "or `media_id` is required (exactly one)")),
            (Some(id), None) => text("media_id", id, MAX_BUTTON_ID_CHARS, TextKind::Plain)?,
            (None, Some(link)) => url("link", link)?,
        }
        if let Some(caption) = &self.caption {
            if !kind.takes_caption() {
                return Err(err(
                    "caption",
                    format!(
                        "is not allowed for {}; send it as a separate text",
                        kind.as_str()
                    ),
                ));
            }
            text("caption", caption, MAX_CAPTION_CHARS, TextKind::FreeText)?;
        }
        if let Some(filename) = &self.filename {
            if kind != MediaType::Document {
                return Err(err("filename", "is only allowed for documents"));
            }
            text("filename", filename, MAX_LABEL_CHARS, TextKind::Plain)?;
        }
        Ok(())
    }
}

// ------------------------------------------------------------------------ interactive

/// The three interactive kinds of `send_interactive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InteractiveType {
    /// Up to three reply buttons.
    #[serde(rename = "button")]
    Buttons,
    /// A list of rows behind a button.
    #[serde(rename = "list")]
    List,
    /// One call-to-action URL button.
    #[serde(rename = "cta_url")]
    CtaUrl,
}

impl InteractiveType {
    /// Tool spelling: `buttons|list|cta_url` (`button` also accepted).
    pub fn parse(s: &str) -> Result<Self, RichError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "buttons" | "button" => Ok(Self::Buttons),
            "list" => Ok(Self::List),
            "cta_url" => Ok(Self::CtaUrl),
            _ => Err(err(
                "kind",
                format!("is {}; use buttons, list or cta_url", shown(s)),
            )),
        }
    }
}

/// `{"text": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextObject {
    /// The text.
    pub text: String,
}

/// An interactive header: text, or a media object of its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// `text`, `image`, `video` or `document`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<MediaObject>,
    /// For `video`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<MediaObject>,
    /// For `document`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<MediaObject>,
}

/// `{"id", "title"}` of a reply button.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Echoed in the customer's button reply.
    pub id: String,
    /// At most 20 characters.
    pub title: String,
}

/// `{"type": "reply", "reply": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyButton {
    /// Always `reply`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The button.
    pub reply: Reply,
}

/// A list row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Echoed in the customer's list reply.
    pub id: String,
    /// At most 24 characters.
    pub title: String,
    /// At most 72 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A list section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Required when there are several sections; at most 24 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The rows.
    pub rows: Vec<Row>,
}

/// A CTA URL button's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CtaParameters {
    /// The button text, at most 20 characters.
    pub display_text: String,
    /// Where it leads.
    pub url: String,
}

/// The `action` of an interactive message (which fields are used depends on its type).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Reply buttons (`button`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buttons: Option<Vec<ReplyButton>>,
    /// The list's button label (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button: Option<String>,
    /// The list's sections (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<Section>>,
    /// `cta_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The CTA's text and url (`cta_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<CtaParameters>,
}

/// The platform's `interactive` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interactive {
    /// `button`, `list` or `cta_url`.
    #[serde(rename = "type")]
    pub kind: InteractiveType,
    /// Optional header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Header>,
    /// The body text (required).
    pub body: TextObject,
    /// Optional footer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<TextObject>,
    /// Buttons, rows or the CTA.
    pub action: Action,
}

impl Interactive {
    fn validate(&self) -> Result<(), RichError> {
        text("body", &self.body.text, MAX_BODY_CHARS, TextKind::FreeText)?;
        if let Some(footer) = &self.footer {
            text("footer", &footer.text, MAX_FOOTER_CHARS, TextKind::FreeText)?;
        }
        if let Some(h) = &self.header {
            match (h.kind.as_str(), &h.text, &h.image, &h.video, &h.document) {
                ("text", Some(t), None, None, None) => {
                    text("header", t, MAX_HEADER_CHARS, TextKind::Plain)?
                }
                ("image", None, Some(m), None, None) => m.validate(MediaType::Image)?,
                ("video", None, None, Some(m), None) => m.validate(MediaType::Video)?,
                ("document", None, None, None, Some(m)) => m.validate(MediaType::Document)?,
                _ => {
                    return Err(err(
                        "header",
                        "must be {\"type\":\"text\",\"text\":...} or a media header whose type names its one media object",
                    ));
                }
            }
            if self.kind == InteractiveType::List && h.kind != "text" {
                return Err(err("header", "of a list message must be text"));
            }
        }
        let a = &self.action;
        let unused = |present: bool, field: &str| -> Result<(), RichError> {
            if present {
                Err(err(
                    field,
                    "does not belong to this kind of interactive message",
                ))
            } else {
                Ok(())
            }
        };
        match self.kind {
            InteractiveType::Buttons => {
                unused(a.sections.is_some(), "sections")?;
                unused(a.button.is_some(), "button_label")?;
                unused(a.parameters.is_some() || a.name.is_some(), "url")?;
                let buttons = a.buttons.as_deref().unwrap_or(&[]);
                if buttons.is_empty() || buttons.len() > MAX_BUTTONS {
                    return Err(err(
                        "buttons",
                        format!(
                            "has {} buttons; between 1 and {MAX_BUTTONS} are allowed",
                            buttons.len()
                        ),
                    ));
                }
                let mut ids = HashSet::new();
                for (i, b) in buttons.iter().enumerate() {
                    if b.kind != "reply" {
                        return Err(err(format!("buttons[{i}].type"), "must be \"reply\""));
                    }
                    let id = &b.reply.id;
                    text(
                        &format!("buttons[{i}].id"),
                        id,
                        MAX_BUTTON_ID_CHARS,
                        TextKind::Plain,
                    )?;
                    text(
                        &format!("buttons[{i}].title"),
                        &b.reply.title,
                        MAX_BUTTON_TITLE_CHARS,
                        TextKind::Plain,
                    )?;
                    if !ids.insert(id.as_str()) {
                        return Err(err(
                            format!("buttons[{i}].id"),
                            format!("repeats the id {id:?}; button ids must be unique"),
                        ));
                    }
                }
            }
            InteractiveType::List => {
                unused(a.buttons.is_some(), "buttons")?;
                unused(a.parameters.is_some() || a.name.is_some(), "url")?;
                let label = a
                    .button
                    .as_deref()
                    .ok_or_else(|| err("button_label", "is required for a list"))?;
                text(
                    "button_label",
                    label,
                    MAX_BUTTON_TITLE_CHARS,
                    TextKind::Plain,
                )?;
                let sections = a.sections.as_deref().unwrap_or(&[]);
                if sections.is_empty() || sections.len() > MAX_SECTIONS {
                    return Err(err(
                        "sections",
                        format!(
                            "has {} sections; between 1 and {MAX_SECTIONS} are allowed",
                            sections.len()
                        ),
                    ));
                }
                let rows: usize = sections.iter().map(|s| s.rows.len()).sum();
                if rows == 0 || rows > MAX_LIST_ROWS {
                    return Err(err(
                        "sections",
                        format!(
                            "has {rows} rows in all; between 1 and {MAX_LIST_ROWS} are allowed"
                        ),
                    ));
                }
                let mut ids = HashSet::new();
                for (s, section) in sections.iter().enumerate() {
                    match &section.title {
                        Some(t) => text(
                            &format!("sections[{s}].title"),
                            t,
                            MAX_ROW_TITLE_CHARS,
                            TextKind::Plain,
                        )?,
                        None if sections.len() > 1 => {
                            return Err(err(
                                format!("sections[{s}].title"),
                                "is required when there are several sections",
                            ));
                        }
                        None => {}
                    }
                    if section.rows.is_empty() {
                        return Err(err(format!("sections[{s}].rows"), "must not be empty"));
                    }
                    for (r, row) in section.rows.iter().enumerate() {
                        let at = format!("sections[{s}].rows[{r}]");
                        text(
                            &format!("{at}.id"),
                            &row.id,
                            MAX_ROW_ID_CHARS,
                            TextKind::Plain,
                        )?;
                        text(
                            &format!("{at}.title"),
                            &row.title,
                            MAX_ROW_TITLE_CHARS,
                            TextKind::Plain,
                        )?;
                        if let Some(d) = &row.description {
                            text(
                                &format!("{at}.description"),
                                d,
                                MAX_ROW_DESCRIPTION_CHARS,
                                TextKind::Plain,
                            )?;
                        }
                        if !ids.insert(row.id.as_str()) {
                            return Err(err(
                                format!("{at}.id"),
                                format!("repeats the id {:?}; row ids must be unique", row.id),
                            ));
                        }
                    }
                }
            }
            InteractiveType::CtaUrl => {
                unused(a.buttons.is_some(), "buttons")?;
                unused(a.sections.is_some(), "sections")?;
                unused(a.button.is_some(), "button_label")?;
                if a.name.as_deref() != Some("cta_url") {
                    return Err(err("action.name", "must be \"cta_url\""));
                }
                let p = a
                    .parameters
                    .as_ref()
                    .ok_or_else(|| err("url", "and `display_text` are required for cta_url"))?;
                text(
                    "display_text",
                    &p.display_text,
                    MAX_BUTTON_TITLE_CHARS,
                    TextKind::Plain,
                )?;
                url("url", &p.url)?;
            }
        }
        Ok(())
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
pub const RICH_TYPES: [&str; 8] = [
    "image",
    "video",
    "audio",
    "document",
    "sticker",
    "interactive",
    "location",
    "reaction",
];

impl RichMessage {
    /// The platform's `type`.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            RichBody::Media(t, _) => t.as_str(),
            RichBody::Interactive(_) => "interactive",
            RichBody::Location(_) => "location",
            RichBody::Reaction(_) => "reaction",
        }
    }

    /// Every platform limit.
    pub fn validate(&self) -> Result<(), RichError> {
        match &self.body {
            RichBody::Media(t, m) => m.validate(*t),
            RichBody::Interactive(i) => i.validate(),
            RichBody::Location(l) => l.validate(),
            RichBody::Reaction(r) => r.validate(),
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
            "interactive" => RichBody::Interactive(Box::new(parse(kind, inner)?)),
            "location" => RichBody::Location(parse(kind, inner)?),
            "reaction" => RichBody::Reaction(parse(kind, inner)?),
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
