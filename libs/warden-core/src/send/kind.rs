//! What a send carries ([`SendKind`]: text, a template, or a rich kind in the platform's
//! shape), its validation, and how stored `content` reads back ([`SendKind::from_content`]).

use serde_json::{Value, json};
use warden_rules::rich::{RICH_TYPES, RichMessage};
use warden_rules::template_params::{Variables, named_body_component};

use super::error::SendError;

/// What to send.
#[derive(Clone, Debug, PartialEq)]
pub enum SendKind {
    Text {
        body: String,
    },
    Template {
        name: String,
        locale: String,
        /// Positional body values.
        variables: Vec<String>,
        /// Header, body (named values) and button parameters in the platform's shape;
        /// empty for a body-only send. Checked against the stored template.
        components: Vec<Value>,
    },
    /// Media, interactive, location or reaction, in the platform's shape (free-form).
    Rich(RichMessage),
}

impl SendKind {
    /// A template send with components is stored as the checked platform components (and
    /// no positional values), so the dispatcher sends exactly what was checked.
    pub fn use_checked_components(&mut self, checked: Vec<Value>) {
        if let SendKind::Template {
            variables,
            components,
            ..
        } = self
        {
            *components = checked;
            variables.clear();
        }
    }

    /// The `messages.content` JSON (the dispatcher builds the platform body from it).
    pub fn to_content(&self) -> Value {
        match self {
            SendKind::Text { body } => json!({"type": "text", "text": {"body": body}}),
            SendKind::Template {
                name,
                locale,
                variables,
                components,
            } => {
                let mut t = json!({"name": name, "locale": locale, "variables": variables});
                // Only when given, so a body-only send is stored exactly as before.
                if !components.is_empty() {
                    t["components"] = json!(components);
                }
                json!({"type": "template", "template": t})
            }
            SendKind::Rich(m) => m.to_json(),
        }
    }

    /// Characters the platform refuses (docs/tools.md, Conventions): NUL and other control
    /// characters in the text (line breaks and tabs are fine there), and in template
    /// parameters also newlines, tabs and runs of more than four spaces. Checked on every
    /// path, so no row is half-written by a value Postgres or the platform rejects.
    pub fn check_text(&self) -> Result<(), SendError> {
        use warden_rules::text::{TextKind, check};
        match self {
            SendKind::Text { body } => check(body, TextKind::FreeText)
                .map_err(|e| SendError::InvalidArgument(format!("the text {e}"))),
            SendKind::Template {
                name,
                locale,
                variables,
                ..
            } => {
                check(name, TextKind::Plain)
                    .map_err(|e| SendError::InvalidArgument(format!("the template name {e}")))?;
                check(locale, TextKind::Plain)
                    .map_err(|e| SendError::InvalidArgument(format!("the locale {e}")))?;
                warden_rules::templates::check_parameters(variables)
                    .map_err(|e| SendError::InvalidVariables(e.to_string()))
            }
            SendKind::Rich(m) => m
                .validate()
                .map_err(|e| SendError::InvalidArgument(e.to_string())),
        }
    }

    /// Read back a stored `content` (also accepts `language` for the locale and an object
    /// of numbered variables, as agents write them in schedule_message).
    pub fn from_content(content: &Value) -> Result<SendKind, ContentError> {
        match content.get("type").and_then(Value::as_str) {
            Some("text") => {
                let body = content
                    .pointer("/text/body")
                    .and_then(Value::as_str)
                    .filter(|b| !b.trim().is_empty())
                    .ok_or(ContentError::MissingTextBody)?;
                Ok(SendKind::Text {
                    body: body.to_string(),
                })
            }
            Some("template") => {
                let t = content
                    .get("template")
                    .ok_or(ContentError::MissingTemplate)?;
                let name = t
                    .get("name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.trim().is_empty())
                    .ok_or(ContentError::MissingTemplateName)?;
                let locale = t
                    .get("locale")
                    .or_else(|| t.get("language"))
                    .and_then(|l| l.as_str().or_else(|| l.get("code").and_then(Value::as_str)))
                    .unwrap_or("en");
                // The platform's own shape carries `components`; ours `variables` (by
                // position, or an object of named values, which travels as a body component).
                let mut components = match t.get("components") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(c)) => c.clone(),
                    Some(_) => return Err(ContentError::Components),
                };
                let variables = match t.get("variables") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(v) => match warden_rules::template_params::parse_any_variables(v)
                        .map_err(|e| ContentError::Variables(e.to_string()))?
                    {
                        Variables::Positional(v) => v,
                        Variables::Named(named) => {
                            components.push(named_body_component(&named));
                            Vec::new()
                        }
                    },
                };
                Ok(SendKind::Template {
                    name: name.to_string(),
                    locale: locale.to_string(),
                    variables,
                    components,
                })
            }
            Some(kind) if RICH_TYPES.contains(&kind) => RichMessage::from_json(content)
                .map(SendKind::Rich)
                .map_err(|e| ContentError::Rich(e.to_string())),
            Some(other) => Err(ContentError::UnsupportedType(other.to_owned())),
            None => Err(ContentError::MissingType),
        }
    }
}

/// Why a stored `content` is not a message [`SendKind::from_content`] can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    #[error("a text message needs text.body")]
    MissingTextBody,
    #[error("a template message needs a template object")]
    MissingTemplate,
    #[error("template.name is required")]
    MissingTemplateName,
    /// The template's `variables` are not a list of values (or numbered values).
    #[error("{0}")]
    Variables(String),
    #[error("template.components must be a JSON array of header, body and button components")]
    Components,
    /// A media, interactive, location or reaction body that breaks a platform rule.
    #[error("{0}")]
    Rich(String),
    #[error(
        "content type `{0}` is not supported; use text, template, image, video, audio, document, sticker, interactive, location or reaction"
    )]
    UnsupportedType(String),
    #[error("content needs a `type` (`text`, `template`, `image`, `interactive`, ...)")]
    MissingType,
}
