//! Limited-time offer templates: an offer line (at most 16 characters) with an optional
//! countdown, a body of at most 600 characters, an optional IMAGE or VIDEO header, no
//! footer, a URL button and, when the offer expires, a COPY_CODE button first. MARKETING only.

use serde_json::{Value, json};

use super::not_allowed;
use crate::kinds::TemplateCategory;
use crate::template_spec::{ButtonKind, HeaderFormat, SpecError, TemplateSpec, err};

/// Longest offer text (platform).
pub const MAX_OFFER_TEXT_CHARS: usize = 16;
/// Longest body of an offer template (platform).
pub const MAX_OFFER_BODY_CHARS: usize = 600;

/// The offer as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitedTimeOffer {
    /// The offer line, 1 to 16 characters.
    pub text: String,
    /// Whether the message shows a countdown to the expiry each send gives.
    pub has_expiration: bool,
}

/// Reads create_template's `limited_time_offer`: `{"text": "...", "has_expiration": true}`.
pub fn parse_offer(value: &Value) -> Result<LimitedTimeOffer, SpecError> {
    let o = value.as_object().ok_or_else(|| {
        err(
            "limited_time_offer",
            "must be a JSON object like {\"text\": \"Ends soon!\", \"has_expiration\": true}",
        )
    })?;
    if let Some(key) = o
        .keys()
        .find(|k| !matches!(k.as_str(), "text" | "has_expiration"))
    {
        return Err(err(
            "limited_time_offer",
            format!("has an unknown key {key:?}; use text and has_expiration"),
        ));
    }
    let text = match o.get("text") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(err(
                "limited_time_offer.text",
                format!("is required: the offer line, 1 to {MAX_OFFER_TEXT_CHARS} characters"),
            ));
        }
    };
    let has_expiration = match o.get("has_expiration") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => true,
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => false,
        Some(_) => {
            return Err(err(
                "limited_time_offer.has_expiration",
                "must be true or false",
            ));
        }
    };
    Ok(LimitedTimeOffer {
        text,
        has_expiration,
    })
}

impl LimitedTimeOffer {
    /// The platform's rules for an offer template (`spec` is the template around it).
    pub fn validate(
        &self,
        spec: &TemplateSpec,
        category: TemplateCategory,
    ) -> Result<(), SpecError> {
        if category != TemplateCategory::Marketing {
            return Err(err(
                "category",
                format!(
                    "is {}, but a limited-time offer template must be MARKETING",
                    category.as_upper()
                ),
            ));
        }
        let n = self.text.chars().count();
        if self.text.trim().is_empty() || n > MAX_OFFER_TEXT_CHARS {
            return Err(err(
                "limited_time_offer.text",
                format!("has {n} characters; the offer line has 1 to {MAX_OFFER_TEXT_CHARS}"),
            ));
        }
        crate::text::check(&self.text, crate::text::TextKind::Plain)
            .map_err(|e| err("limited_time_offer.text", e.to_string()))?;
        if !crate::template_spec::tokens(&self.text).is_empty() {
            return Err(err("limited_time_offer.text", "may not hold variables"));
        }
        if spec.footer.is_some() {
            return Err(not_allowed("footer", "a limited-time offer template"));
        }
        if let Some(h) = &spec.header
            && !matches!(h.format, HeaderFormat::Image | HeaderFormat::Video)
        {
            return Err(err(
                "header.format",
                format!(
                    "is {}; a limited-time offer template's header is IMAGE or VIDEO",
                    h.format.as_upper()
                ),
            ));
        }
        let body = spec.body.chars().count();
        if body > MAX_OFFER_BODY_CHARS {
            return Err(err(
                "body_text",
                format!(
                    "has {body} characters; a limited-time offer template's body has at most {MAX_OFFER_BODY_CHARS}"
                ),
            ));
        }
        for (i, b) in spec.buttons.iter().enumerate() {
            match b.kind {
                ButtonKind::Url => {}
                ButtonKind::CopyCode if i == 0 => {}
                ButtonKind::CopyCode => {
                    return Err(err(
                        format!("buttons[{i}].type"),
                        "is COPY_CODE, which must be the first button of a limited-time offer template",
                    ));
                }
                other => {
                    return Err(err(
                        format!("buttons[{i}].type"),
                        format!(
                            "is {}; a limited-time offer template takes a COPY_CODE and URL buttons only",
                            other.as_upper()
                        ),
                    ));
                }
            }
        }
        if !spec.buttons.iter().any(|b| b.kind == ButtonKind::Url) {
            return Err(err(
                "buttons",
                "needs a URL button: a limited-time offer template always has one",
            ));
        }
        if self.has_expiration && !spec.buttons.iter().any(|b| b.kind == ButtonKind::CopyCode) {
            return Err(err(
                "buttons",
                "needs a COPY_CODE button first: an offer with has_expiration shows the code its countdown is for",
            ));
        }
        Ok(())
    }

    /// The `LIMITED_TIME_OFFER` component goes after the header, before the body.
    pub(super) fn shape_components(&self, mut common: Vec<Value>) -> Vec<Value> {
        let at = usize::from(common.first().is_some_and(|c| c["type"] == "HEADER"));
        common.insert(
            at,
            json!({
                "type": "LIMITED_TIME_OFFER",
                "limited_time_offer": {"text": self.text, "has_expiration": self.has_expiration},
            }),
        );
        common
    }

    /// Reads a `LIMITED_TIME_OFFER` component back.
    pub fn read(c: &Value) -> Self {
        let o = c.get("limited_time_offer").unwrap_or(&Value::Null);
        LimitedTimeOffer {
            text: o
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            has_expiration: o
                .get("has_expiration")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }
}
