//! The one error shape every tool answers with (docs/tools.md, Errors):
//! `{"error": {"code", "message", "suggested_action"}}` in `structuredContent`, the same
//! JSON as one text block, and `isError: true`.

use rmcp::model::CallToolResult;
use serde::Serialize;
use warden_core::{CoreError, SendError};
use warden_platform::PlatformError;
use warden_rules::compliance::Decision;
use warden_store::DbError;

use crate::quoting::{detail, echo, no_template_message};

/// Every code but the compliance refusals, which carry the decision's own reason code
/// (docs/tools.md, Errors).
pub mod code {
    pub const INVALID_ARGUMENT: &str = "INVALID_ARGUMENT";
    pub const NOT_FOUND: &str = "NOT_FOUND";
    pub const UPSTREAM_ERROR: &str = "UPSTREAM_ERROR";
    pub const UNAVAILABLE: &str = "UNAVAILABLE";
    pub const WINDOW_CLOSED: &str = "WINDOW_CLOSED";
    pub const FEATURE_NOT_AVAILABLE: &str = "FEATURE_NOT_AVAILABLE";
    pub const TEMPLATE_NOT_APPROVED: &str = "TEMPLATE_NOT_APPROVED";
    pub const CAMPAIGN_TERMINAL_STATE: &str = "CAMPAIGN_TERMINAL_STATE";
    pub const INVALID_STATE_TRANSITION: &str = "INVALID_STATE_TRANSITION";
    pub const CONVERSATION_ACTIVE: &str = "CONVERSATION_ACTIVE";
    /// The calling agent lacks the scope the tool needs (or its guardrails forbid it).
    pub const FORBIDDEN: &str = "FORBIDDEN";
    /// The calling agent spent one of its guardrail limits; `retry_after_secs` says when.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
}

/// A refused or failed tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolError {
    pub code: String,
    pub message: String,
    pub suggested_action: String,
    /// When to try again: UNAVAILABLE after a database conflict that persisted, or a refusal
    /// that lifts by itself (quiet hours, a platform limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

pub type ToolResult<T> = Result<T, ToolError>;

impl ToolError {
    pub fn new(
        code: impl Into<String>,
        message: impl Into<String>,
        action: impl Into<String>,
    ) -> Self {
        ToolError {
            code: code.into(),
            message: one_line(&message.into()),
            suggested_action: one_line(&action.into()),
            retry_after_secs: None,
        }
    }

    pub fn invalid(message: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(code::INVALID_ARGUMENT, message, action)
    }

    pub fn not_found(message: impl Into<String>, action: impl Into<String>) -> Self {
        Self::new(code::NOT_FOUND, message, action)
    }

    /// A dependency (Postgres) could not serve the call; nothing was written.
    pub fn unavailable(detail: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %detail, "tool call could not be served");
        Self::new(
            code::UNAVAILABLE,
            "The database is unavailable, so the call could not be served and nothing was changed.",
            "Try again in a few seconds; if it keeps failing, ask an operator to check Postgres.",
        )
    }

    /// A database conflict persisted after the store's retries; nothing was written.
    pub fn busy(detail: impl std::fmt::Display, retry_after_secs: u64) -> Self {
        let mut err = ToolError::unavailable(detail);
        err.retry_after_secs = Some(retry_after_secs);
        err.suggested_action = format!("Call again in {retry_after_secs} s; nothing was changed.");
        err
    }

    /// FORBIDDEN: `agent` may not call `tool` without `scope`.
    pub fn forbidden(tool: &str, agent: &str, scope: crate::caller::Scope) -> Self {
        Self::new(
            code::FORBIDDEN,
            format!(
                "Agent {} may not call {tool}: it needs the `{scope}` scope.",
                echo(agent)
            ),
            format!(
                "Ask an operator to grant the `{scope}` scope (warden-admin agents update), or use a tool your scopes allow (tools/list shows them)."
            ),
        )
    }

    /// A compliance refusal, in the decision's own words.
    pub fn refusal(d: &Decision) -> Self {
        let mut err = Self::new(
            d.reason_code.as_str(),
            d.human_explanation.clone(),
            d.suggested_action.clone(),
        );
        // The refusal lifts by itself then (quiet hours end, a platform limit frees).
        err.retry_after_secs = d.retry_after_secs(chrono::Utc::now());
        err
    }

    /// TEMPLATE_NOT_APPROVED: template `name` (`locale`) is `status`, so `consequence`.
    pub fn template_not_approved(
        name: &str,
        locale: &str,
        status: &str,
        consequence: &str,
        action: impl Into<String>,
    ) -> Self {
        Self::new(
            code::TEMPLATE_NOT_APPROVED,
            format!(
                "Template {} ({}) is {}, not APPROVED, so {consequence}.",
                echo(name),
                echo(locale),
                detail(status)
            ),
            action,
        )
    }

    /// The JSON the agent sees.
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::json!({ "error": self })
    }

    pub fn into_result(self) -> CallToolResult {
        CallToolResult::structured_error(self.envelope())
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The one mapping of a classified database error to the tool envelope.
impl From<DbError> for ToolError {
    fn from(err: DbError) -> Self {
        match err {
            DbError::Busy {
                ref last,
                retry_after_secs,
                ..
            } => ToolError::busy(last, retry_after_secs),
            DbError::Conflict { .. } => ToolError::invalid(
                format!("The change {err}; nothing was written."),
                "Read the existing record and use it instead of creating it again.",
            ),
            DbError::NotFound => ToolError::not_found(
                "The record the call refers to does not exist.",
                "Check the identifier; it may belong to another deployment.",
            ),
            DbError::Unavailable(_) | DbError::Rejected(_) => ToolError::unavailable(err),
        }
    }
}

impl From<diesel::result::Error> for ToolError {
    fn from(err: diesel::result::Error) -> Self {
        DbError::from(err).into()
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for ToolError {
    fn from(err: bb8::RunError<E>) -> Self {
        DbError::from(err).into()
    }
}

impl From<CoreError> for ToolError {
    fn from(err: CoreError) -> Self {
        match err {
            CoreError::NotFound(m) => ToolError::not_found(
                detail(m),
                "Check the identifier; it may belong to another deployment.",
            ),
            CoreError::InvalidArgument(m) => {
                ToolError::invalid(detail(m), "Fix the parameter and call again.")
            }
            CoreError::Conflict(m) => ToolError::invalid(
                detail(m),
                "Read the existing record and use it instead of creating it again.",
            ),
            CoreError::Busy {
                message,
                retry_after_secs,
            } => ToolError::busy(message, retry_after_secs),
            CoreError::Unavailable(m) => ToolError::unavailable(m),
        }
    }
}

impl From<SendError> for ToolError {
    fn from(err: SendError) -> Self {
        match &err {
            SendError::Unavailable(m) => ToolError::unavailable(m),
            SendError::Busy {
                message,
                retry_after_secs,
            } => ToolError::busy(message, *retry_after_secs),
            SendError::Refused(d)
            | SendError::RefusedRecorded { decision: d, .. }
            | SendError::Held { decision: d, .. }
            | SendError::CampaignPaused(d) => ToolError::refusal(d),
            SendError::TemplateNotFound { name, locale } => {
                ToolError::not_found(no_template_message(name, locale), err.suggested_action())
            }
            SendError::TemplateNotApproved {
                name,
                locale,
                status,
            } => ToolError::template_not_approved(
                name,
                locale,
                status,
                "it cannot be sent",
                err.suggested_action(),
            ),
            SendError::InvalidVariables(m) => ToolError::invalid(
                format!("The variables do not match the template: {}.", detail(m)),
                err.suggested_action(),
            ),
            SendError::InvalidArgument(m) => ToolError::invalid(detail(m), err.suggested_action()),
            SendError::Guardrail(r) => {
                let mut e = ToolError::new(r.code, r.message.clone(), r.suggested_action.clone());
                e.retry_after_secs = r.retry_after_secs;
                e
            }
        }
    }
}

/// A failed platform call as the agent sees it. `explained` is the knowledge base's
/// explanation of the platform code, when there was one.
pub fn upstream(
    what: &str,
    err: &PlatformError,
    explained: Option<&warden_core::delivery::knowledge::Explanation>,
) -> ToolError {
    tracing::warn!(error = %err, what, "platform call failed");
    match err {
        PlatformError::Api {
            code,
            message,
            details,
            http_status,
        } => {
            // The platform's texts may quote the request back.
            let mut text = format!(
                "The platform refused to {what}: error {code} (HTTP {http_status}): {}",
                detail(message)
            );
            if let Some(d) = details.as_deref().filter(|d| !d.is_empty()) {
                text.push_str(&format!(" ({})", detail(d)));
            }
            if let Some(e) = explained.filter(|e| e.known) {
                text.push_str(&format!(". {}: {}", e.title, e.human_explanation));
            }
            let action = explained
                .filter(|e| e.known)
                .map(|e| e.suggested_action.clone())
                .unwrap_or_else(|| {
                    "Check the request against the platform's rules (explain_error gives details for the code) and try again.".into()
                });
            ToolError::new(code::UPSTREAM_ERROR, text, action)
        }
        PlatformError::Connect(_) => ToolError::new(
            code::UNAVAILABLE,
            format!("The platform API could not be reached to {what}; nothing was changed."),
            "Try again shortly; if it keeps failing, ask an operator to check PLATFORM_API_URL and the network.",
        ),
        PlatformError::Timeout | PlatformError::Io(_) => ToolError::new(
            code::UPSTREAM_ERROR,
            format!(
                "The platform did not answer in time when asked to {what}; the outcome is unknown."
            ),
            "Check the current state (sync_template_status or list_templates) before trying again.",
        ),
        PlatformError::Http { status, body } => ToolError::new(
            code::UPSTREAM_ERROR,
            format!(
                "The platform answered HTTP {status} when asked to {what}: {}",
                detail(body)
            ),
            "Try again later; if it persists, ask an operator to check the platform status.",
        ),
        PlatformError::Config(m) => ToolError::new(
            code::UNAVAILABLE,
            // A client error may quote the whole request URL.
            format!("The platform client is misconfigured: {}", detail(m)),
            "Ask an operator to check PLATFORM_API_URL and the platform settings.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_rules::compliance::ReasonCode;

    #[test]
    fn a_refusal_that_lifts_by_itself_says_when() {
        let mut d = Decision {
            allowed: false,
            reason_code: ReasonCode::PolicyRestriction,
            human_explanation: "quiet".into(),
            suggested_action: "wait".into(),
            policy_id: Some("quiet".into()),
            retry_at: None,
            hold: false,
        };
        assert_eq!(ToolError::refusal(&d).retry_after_secs, None);
        d.retry_at = Some(chrono::Utc::now() + chrono::TimeDelta::seconds(600));
        let secs = ToolError::refusal(&d).retry_after_secs.unwrap();
        assert!((590..=600).contains(&secs), "{secs}");
        assert_eq!(ToolError::refusal(&d).code, "POLICY_RESTRICTION");
    }
}
