//! The campaign and scheduling use cases' refusals as the tools' errors (docs/tools.md,
//! "Errors").

use uuid::Uuid;
use warden_core::campaigns::CampaignError;
use warden_core::campaigns::create::ScheduleCampaignError;
use warden_core::scheduling::schedule::ScheduleMessageError;
use warden_rules::campaign_status::CampaignStatus;

use crate::error::{ToolError, code};
use crate::quoting::{detail, echo, no_template_message};

/// A campaign use case's refusal as the tool's error (docs/tools.md, "Errors").
pub(super) fn campaign_error(e: CampaignError) -> ToolError {
    match e {
        CampaignError::NotFound(id) => campaign_not_found(id),
        CampaignError::Terminal { id, status } => ToolError::new(
            code::CAMPAIGN_TERMINAL_STATE,
            format!("Campaign {id} is already {status}, a final state, so it cannot be cancelled."),
            "Nothing to do: the campaign sends nothing more. get_campaign shows its final counters.",
        ),
        CampaignError::InvalidTransition {
            id,
            status,
            to: CampaignStatus::Running,
        } => ToolError::new(
            code::INVALID_STATE_TRANSITION,
            format!("Campaign {id} is {status}; only a paused campaign can be resumed."),
            "Check get_campaign: a scheduled, running or sending campaign is already going; a finished one cannot restart.",
        ),
        CampaignError::InvalidTransition { id, status, .. } => ToolError::new(
            code::INVALID_STATE_TRANSITION,
            format!(
                "Campaign {id} is {status}; only scheduled, running or sending campaigns can be paused."
            ),
            if status == CampaignStatus::Paused {
                "It is paused already; call resume_campaign to continue it."
            } else {
                "It has finished; nothing is being sent. get_campaign shows its counters."
            },
        ),
        CampaignError::Busy(detail, retry_after_secs) => ToolError::busy(detail, retry_after_secs),
        CampaignError::Unavailable(detail) => ToolError::unavailable(detail),
    }
}

/// schedule_message's refusals as the tool's errors (docs/tools.md, "Errors").
pub(super) fn schedule_message_error(e: ScheduleMessageError) -> ToolError {
    match e {
        ScheduleMessageError::TemplateNotFound { name, locale } => ToolError::not_found(
            no_template_message(&name, &locale),
            "Pick a template from list_templates (by name and locale), or create one with create_template.",
        ),
        ScheduleMessageError::Variables { name, reason } => ToolError::invalid(
            format!(
                "The content's variables do not match template {}: {}.",
                echo(&name),
                detail(reason)
            ),
            "Give template.variables as a JSON array with one value per {{n}} placeholder.",
        ),
        ScheduleMessageError::OptedOut(refusal) => ToolError::refusal(&refusal),
        ScheduleMessageError::Idempotency(m) => ToolError::invalid(
            m,
            "Use a new idempotency_key for a new message, or repeat the first call exactly.",
        ),
        ScheduleMessageError::Db(e) => e.into(),
    }
}

/// schedule_campaign's refusals as the tool's errors (docs/tools.md, "Errors").
pub(super) fn schedule_campaign_error(e: ScheduleCampaignError) -> ToolError {
    match e {
        ScheduleCampaignError::TemplateNotFound { name, locale } => ToolError::not_found(
            no_template_message(&name, &locale),
            "Pick an APPROVED template from list_templates, or create one with create_template and wait for approval.",
        ),
        ScheduleCampaignError::TemplateNotApproved {
            name,
            locale,
            status,
        } => ToolError::template_not_approved(
            &name,
            &locale,
            &status,
            "a campaign cannot use it",
            "Wait for the platform's approval (sync_template_status shows the latest status) or use an APPROVED template from list_templates.",
        ),
        ScheduleCampaignError::Variables { name, reason } => ToolError::invalid(
            format!(
                "The variables do not match template {}: {}.",
                echo(&name),
                detail(reason)
            ),
            "Pass variables as a JSON object with one value per {{n}} placeholder, e.g. {\"1\": \"friend\"}.",
        ),
        ScheduleCampaignError::Idempotency(m) => ToolError::invalid(
            m,
            "Use a new idempotency_key for a new campaign, or repeat the first call exactly.",
        ),
        ScheduleCampaignError::Db(e) => e.into(),
    }
}

pub(super) fn campaign_not_found(id: Uuid) -> ToolError {
    ToolError::not_found(
        format!("There is no campaign with id {id}."),
        "Check the campaign_id: it is the id schedule_campaign returned.",
    )
}
