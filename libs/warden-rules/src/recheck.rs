//! The dispatcher's last look before the platform call (docs/compliance.md, Compliance
//! decisions on every path): a message accepted earlier may have lost its right to leave
//! since.

use chrono::{DateTime, Utc};

use crate::compliance::{Decision, ReasonCode, opt_out_refusal, window_refusal};
use crate::kinds::ContentKind;
use crate::window;

/// What the dispatcher knows about a message right before the platform call.
#[derive(Debug, Clone, PartialEq)]
pub struct RecheckInput {
    /// The content, with the template's category as stored now.
    pub content: ContentKind,
    /// The template's status now (`None` for free-form content, or when the template is gone).
    pub template_status: Option<String>,
    /// The customer opted out of marketing.
    pub opted_out_marketing: bool,
    /// The customer opted out of utility (blocks utility, authentication and service).
    pub opted_out_utility: bool,
    /// Platform timestamp of the customer's last inbound message.
    pub last_inbound_at: Option<DateTime<Utc>>,
    /// The instant to decide at.
    pub now: DateTime<Utc>,
}

/// The last look before the platform call (docs/compliance.md): a message
/// accepted earlier may have lost its right to leave since (a STOP, a window that closed, a
/// template paused). Checks the template's status, then opt-out, then the care window for
/// free-form content; the frequency cap and the policies were decided at acceptance, where
/// the message was counted. `None` when it may go.
pub fn recheck(input: &RecheckInput) -> Option<Decision> {
    if let ContentKind::Template(_) = input.content {
        let status = input.template_status.as_deref().unwrap_or("missing");
        if !status.eq_ignore_ascii_case("APPROVED") {
            return Some(Decision::deny(
                ReasonCode::TemplateNotApproved,
                format!(
                    "The message's template is {status} now, not APPROVED, so it may no longer be sent."
                ),
                "Send it again with an APPROVED template (list_templates shows them) once this one is approved again.".to_string(),
                None,
            ));
        }
    }
    let category = input.content.category();
    if let Some(refusal) =
        opt_out_refusal(category, input.opted_out_marketing, input.opted_out_utility)
    {
        return Some(refusal);
    }
    let last_inbound_at = window::usable_inbound(input.last_inbound_at, input.now);
    if category.is_free_form() && !window::window_open(last_inbound_at, input.now) {
        return Some(window_refusal(last_inbound_at));
    }
    None
}
