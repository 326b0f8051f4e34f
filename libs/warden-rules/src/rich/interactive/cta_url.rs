//! `cta_url`: one call-to-action URL button.

use serde::{Deserialize, Serialize};

use super::ActionFields;
use crate::rich::{MAX_BUTTON_TITLE_CHARS, RichError, err, text, url};
use crate::text::TextKind;

/// A CTA URL button's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CtaParameters {
    /// The button text, at most 20 characters.
    pub display_text: String,
    /// Where it leads.
    pub url: String,
}

/// The action of a `cta_url` message: `{"name": "cta_url", "parameters": {...}}` (the
/// name is always `cta_url`, so it is not held).
#[derive(Debug, Clone, PartialEq)]
pub struct CtaUrlAction {
    /// The button's text and url.
    pub parameters: CtaParameters,
}

/// The action `name` of a CTA URL button.
const NAME: &str = "cta_url";

impl CtaUrlAction {
    pub(super) fn from_fields(mut f: ActionFields) -> Result<Self, RichError> {
        let (name, parameters) = (f.name.take(), f.parameters.take());
        f.refuse_rest()?;
        if name.as_deref() != Some(NAME) {
            return Err(err("action.name", "must be \"cta_url\""));
        }
        let parameters =
            parameters.ok_or_else(|| err("url", "and `display_text` are required for cta_url"))?;
        Ok(Self { parameters })
    }

    pub(super) fn to_fields(&self) -> ActionFields {
        ActionFields {
            name: Some(NAME.into()),
            parameters: Some(self.parameters.clone()),
            ..ActionFields::default()
        }
    }

    pub(super) fn validate(&self) -> Result<(), RichError> {
        let p = &self.parameters;
        text(
            "display_text",
            &p.display_text,
            MAX_BUTTON_TITLE_CHARS,
            TextKind::Plain,
        )?;
        url("url", &p.url)
    }
}
