//! How a send fails ([`SendError`]): refused by a rule (reported or recorded), held, a
//! template problem, a bad argument, a guardrail, or the database; with the tool error code
//! and the next step of each.

use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_store::tx::TxError;

use super::guardrails::GuardrailRefusal;
use crate::CoreError;

#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("{}", .0.human_explanation)]
    Refused(Decision),
    /// RecordFailed mode: the refusal was recorded on this message row.
    #[error("{}", .decision.human_explanation)]
    RefusedRecorded {
        message_id: Uuid,
        decision: Decision,
    },
    #[error("no template named `{name}` in locale `{locale}`")]
    TemplateNotFound { name: String, locale: String },
    #[error("template `{name}` ({locale}) is {status}, not APPROVED")]
    TemplateNotApproved {
        name: String,
        locale: String,
        status: String,
    },
    #[error("{0}")]
    InvalidVariables(String),
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    Unavailable(String),
    /// A database conflict persisted after the store's retries; nothing was written.
    #[error("{message}")]
    Busy {
        message: String,
        retry_after_secs: u64,
    },
    /// RecordFailed mode: refused by a rule that lifts by itself (`decision.retry_at`); the
    /// message waits `scheduled` until then (`send::message_holds`).
    #[error("{}", .decision.human_explanation)]
    Held {
        message_id: Uuid,
        decision: Decision,
    },
    /// A new campaign recipient refused by the portfolio messaging limit: nothing was
    /// recorded for it and the campaign is paused (`send::message_holds`).
    #[error("{}", .0.human_explanation)]
    CampaignPaused(Decision),
    /// The calling agent's guardrails refuse it (RATE_LIMITED or FORBIDDEN).
    #[error("{}", .0.message)]
    Guardrail(GuardrailRefusal),
}

impl From<diesel::result::Error> for SendError {
    fn from(err: diesel::result::Error) -> Self {
        CoreError::from(err).into()
    }
}

impl<E: Into<SendError>> From<TxError<E>> for SendError {
    fn from(err: TxError<E>) -> Self {
        match err {
            TxError::App(e) => e.into(),
            TxError::Db(e) => CoreError::from(e).into(),
        }
    }
}

impl From<CoreError> for SendError {
    fn from(err: CoreError) -> Self {
        match err {
            CoreError::InvalidArgument(m) => SendError::InvalidArgument(m),
            CoreError::NotFound(m) => SendError::InvalidArgument(m),
            CoreError::Conflict(m) => SendError::InvalidArgument(m),
            CoreError::Busy {
                message,
                retry_after_secs,
            } => SendError::Busy {
                message,
                retry_after_secs,
            },
            CoreError::Unavailable(m) => SendError::Unavailable(m),
        }
    }
}

impl SendError {
    /// The tool error code of this refusal.
    pub fn code(&self) -> &'static str {
        match self {
            SendError::Refused(d)
            | SendError::RefusedRecorded { decision: d, .. }
            | SendError::Held { decision: d, .. }
            | SendError::CampaignPaused(d) => d.reason_code.as_str(),
            SendError::TemplateNotFound { .. } => "NOT_FOUND",
            SendError::TemplateNotApproved { .. } => "TEMPLATE_NOT_APPROVED",
            SendError::InvalidVariables(_) | SendError::InvalidArgument(_) => "INVALID_ARGUMENT",
            SendError::Unavailable(_) | SendError::Busy { .. } => "UNAVAILABLE",
            SendError::Guardrail(r) => r.code,
        }
    }
    /// What the caller should do next.
    pub fn suggested_action(&self) -> String {
        match self {
            SendError::Refused(d)
            | SendError::RefusedRecorded { decision: d, .. }
            | SendError::Held { decision: d, .. }
            | SendError::CampaignPaused(d) => d.suggested_action.clone(),
            SendError::TemplateNotFound { .. } => {
                "List approved templates with list_templates, or create one with create_template and wait for approval.".into()
            }
            SendError::TemplateNotApproved { .. } => {
                "Wait for the platform's approval (sync_template_status shows the latest status) or use an APPROVED template.".into()
            }
            SendError::InvalidVariables(_) => "Pass `variables` as a JSON array with one value per {{n}} placeholder of the template.".into(),
            SendError::InvalidArgument(_) => "Fix the parameter and call again.".into(),
            SendError::Unavailable(_) | SendError::Busy { .. } => "Nothing was written; try again shortly.".into(),
            SendError::Guardrail(r) => r.suggested_action.clone(),
        }
    }
}
