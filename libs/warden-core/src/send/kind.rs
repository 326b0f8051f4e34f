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
    Template(TemplateSend),
    /// Media, interactive, location or reaction, in the platform's shape (free-form).
    Rich(RichMessage),
}

/// A template send. Build it with named fields and `..Default::default()`, so a new optional
/// field changes only the places that use it:
/// `TemplateSend { name: "order_update".into(), locale: "en".into(), ..Default::default() }`.
///
/// A new field goes here (with its doc line), in [`SendKind::to_content`] and
/// [`SendKind::from_content`] (written only when set, so stored rows stay as they were),
/// and where it is used.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TemplateSend {
    pub name: String,
    pub locale: String,
    /// Positional body values.
    pub variables: Vec<String>,
    /// Header, body (named values) and button parameters in the platform's shape;
    /// empty for a body-only send. Checked against the stored template.
    pub components: Vec<Value>,
}

impl From<TemplateSend> for SendKind {
    fn from(t: TemplateSend) -> Self {
        SendKind::Template(t)
    }
}

impl SendKind {
    /// A template send with components is stored as the checked platform components (and
    /// no positional values), so the dispatcher sends exactly what was checked.
    pub fn use_checked_components(&mut self, checked: Vec<Value>) {
        if let SendKind::Template(t) = self {
            t.components = checked;
            t.variables.clear();
        }
    }

    /// An interactive call permission request (the send path's guard applies: `calls::guard`).
    pub fn is_call_permission_request(&self) -> bool {
        use warden_rules::rich::{InteractiveType, RichBody};
        matches!(self, SendKind::Rich(m) if matches!(&m.body,
            RichBody::Interactive(i) if i.kind() == InteractiveType::CallPermissionRequest))
    }

    /// The `messages.content` JSON (the dispatcher builds the platform body from it).
    pub fn to_content(&self) -> Value {
        match self {
            SendKind::Text { body } => json!({"type": "text", "text": {"body": body}}),
            SendKind::Template(TemplateSend {
                name,
                locale,
                variables,
                components,
            }) => {
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
            SendKind::Template(TemplateSend {
                name,
                locale,
                variables,
                ..
            }) => {
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
                components.extend(format_components(t)?);
                Ok(SendKind::Template(TemplateSend {
                    name: name.to_string(),
                    locale: locale.to_string(),
                    variables,
                    components,
                }))
            }
            Some(kind) if RICH_TYPES.contains(&kind) => RichMessage::from_json(content)
                .map(SendKind::Rich)
                .map_err(|e| ContentError::Rich(e.to_string())),
            Some(other) => Err(ContentError::UnsupportedType(other.to_owned())),
            None => Err(ContentError::MissingType),
        }
    }
}

/// A template's `cards`, `offer_expires_at` and `code` as schedule_message's content
/// writes them, as the components `resolve` checks (what is stored is the resolved form,
/// so stored rows never hold these keys).
fn format_components(t: &Value) -> Result<Vec<Value>, ContentError> {
    use warden_rules::template_params::formats::{
        carousel_component, code_component, offer_component,
    };
    let mut out = Vec::new();
    if let Some(cards) = t.get("cards").filter(|c| !c.is_null()) {
        out.push(carousel_component(cards));
    }
    if let Some(at) = t.get("offer_expires_at").filter(|c| !c.is_null()) {
        let ms = at
            .as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.timestamp_millis())
            .ok_or_else(|| {
                ContentError::Variables(
                    "template.offer_expires_at must be an RFC 3339 time such as 2030-01-31T23:59:00Z"
                        .into(),
                )
            })?;
        out.push(offer_component(ms));
    }
    if let Some(code) = t.get("code").filter(|c| !c.is_null()) {
        let code = code.as_str().ok_or_else(|| {
            ContentError::Variables("template.code must be a string of 1 to 15 characters".into())
        })?;
        out.push(code_component(code));
    }
    Ok(out)
}

/// The platform delivers an authentication code only to a phone number: a customer known
/// by a BSUID alone cannot get one (named as send_template's `to`).
pub(crate) fn needs_phone(
    category: warden_rules::kinds::TemplateCategory,
    to: &warden_rules::phone::PhoneNumber,
) -> Result<(), SendError> {
    if category == warden_rules::kinds::TemplateCategory::Authentication && to.is_bsuid() {
        return Err(SendError::InvalidArgument(format!(
            "`to`: customer `{}` is known only by a BSUID, and an AUTHENTICATION template goes only to a phone number; send the code once the customer's phone number is known",
            to.digits()
        )));
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored template contents as rows hold them: reading one back and storing it again
    /// gives the same bytes.
    #[test]
    fn a_stored_template_reads_back_and_stores_byte_for_byte() {
        let stored = [
            r#"{"template":{"locale":"en","name":"order_update","variables":["Ana","A-1"]},"type":"template"}"#,
            r#"{"template":{"locale":"pt_BR","name":"t","variables":[]},"type":"template"}"#,
            r#"{"template":{"components":[{"parameters":[{"text":"A1","type":"text"}],"type":"body"},{"index":"0","parameters":[{"text":"A1","type":"text"}],"sub_type":"url","type":"button"}],"locale":"en","name":"track","variables":[]},"type":"template"}"#,
        ];
        for row in stored {
            let content: Value = serde_json::from_str(row).unwrap();
            let kind = SendKind::from_content(&content).unwrap();
            assert_eq!(kind.to_content().to_string(), row);
        }
    }

    #[test]
    fn a_template_send_is_stored_as_before() {
        let plain = SendKind::Template(TemplateSend {
            name: "order_update".into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        });
        assert_eq!(
            plain.to_content().to_string(),
            r#"{"template":{"locale":"en","name":"order_update","variables":["Ana"]},"type":"template"}"#
        );
        let with_components = SendKind::Template(TemplateSend {
            name: "w".into(),
            locale: "en".into(),
            components: vec![json!({"type": "body", "parameters": []})],
            ..Default::default()
        });
        assert_eq!(
            with_components.to_content().to_string(),
            r#"{"template":{"components":[{"parameters":[],"type":"body"}],"locale":"en","name":"w","variables":[]},"type":"template"}"#
        );
        assert_eq!(
            SendKind::from_content(&with_components.to_content()).unwrap(),
            with_components
        );
    }
}
