//! `cta_url`: one call-to-action URL button.

use serde::{Deserialize, Serialize};

use crate::rich::{MAX_BUTTON_TITLE_CHARS, RichError, text, url};
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
pub(super) const NAME: &str = "cta_url";

impl CtaUrlAction {
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
