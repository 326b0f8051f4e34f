//! The error knowledge base: what a platform error code means and what to do about it.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde::Serialize;
use warden_store::models::{ErrorKnowledge, Handling};
use warden_store::schema::error_knowledge_base;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Explanation {
    pub code: i32,
    pub title: String,
    pub category: String,
    pub can_retry: bool,
    pub handling: Handling,
    pub human_explanation: String,
    pub suggested_action: String,
    /// False when the code is not in the knowledge base (a fallback explanation).
    pub known: bool,
}

/// What a failed message stores and get_delivery_status returns.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ErrorInfo {
    pub code: i32,
    pub category: String,
    pub can_retry: bool,
    pub human_explanation: String,
    pub suggested_action: String,
}

impl From<&Explanation> for ErrorInfo {
    fn from(e: &Explanation) -> Self {
        ErrorInfo {
            code: e.code,
            category: e.category.clone(),
            can_retry: e.can_retry,
            human_explanation: e.human_explanation.clone(),
            suggested_action: e.suggested_action.clone(),
        }
    }
}

/// Explain `code`; unknown codes get a cautious fallback (not retried automatically).
pub async fn explain(conn: &mut AsyncPgConnection, code: i32) -> QueryResult<Explanation> {
    let row = error_knowledge_base::table
        .find(code)
        .select(ErrorKnowledge::as_select())
        .first(conn)
        .await
        .optional()?;
    Ok(match row {
        Some(r) => Explanation {
            code: r.code,
            title: r.title,
            category: r.category,
            can_retry: r.can_retry,
            handling: Handling::parse(&r.handling).unwrap_or(Handling::FixRequest),
            human_explanation: r.human_explanation,
            suggested_action: r.suggested_action,
            known: true,
        },
        None => fallback(code),
    })
}

/// The explanation for a code the knowledge base does not know.
pub fn fallback(code: i32) -> Explanation {
    Explanation {
        code,
        title: "Unknown error".into(),
        category: "unknown".into(),
        can_retry: false,
        handling: Handling::FixRequest,
        human_explanation: format!(
            "Platform error {code} is not in Warden's error knowledge base, so its cause is unknown."
        ),
        suggested_action: "Check the platform's error code reference and the message details; do not resend automatically until the cause is known.".into(),
        known: false,
    }
}

/// The error a message refused by compliance at dispatch carries (category `compliance`).
pub fn compliance_error(reason_code: &str, explanation: &str, action: &str) -> ErrorInfo {
    ErrorInfo {
        code: 0,
        category: "compliance".into(),
        can_retry: false,
        human_explanation: format!("{reason_code}: {explanation}"),
        suggested_action: action.to_string(),
    }
}
