//! retry_failed_messages: whether one failed message may be sent again and, when it may,
//! the retry ([`retry_failed`]) through the one send path (`SendRequest::existing_message_id`,
//! so compliance runs again now), and its audit trail ([`record_retried`]).

use serde_json::json;
use uuid::Uuid;
use warden_rules::kinds::MessageType;
use warden_store::models::{Message, message_status};
use warden_store::{DbError, PgPool};

use super::knowledge;
use super::tracking::public_status;
use crate::send::recheck::retry_refusal;
use crate::{Core, CoreError, RefusalMode, SendError, SendKind, SendRequest};

/// Characters of another component's error text a skip reason carries at most (the
/// gateway's bound for such texts).
const DETAIL_CHARS: usize = 300;

/// A failed message the send path accepted again.
#[derive(Debug, Clone)]
pub struct Retried {
    pub message_id: Uuid,
    pub previous_error_code: Option<i32>,
    pub previous_error_category: Option<String>,
    /// The retry count now (the failed attempt's plus one).
    pub retry_count: i32,
    /// Handed to delivery at once (else the relay publishes it).
    pub published: bool,
}

/// The `message_retried` audit row of a retry already committed.
pub async fn record_retried(pg: &PgPool, retried: &Retried, actor: &str) -> Result<(), DbError> {
    let mut conn = pg.get().await?;
    warden_store::audit::record(
        &mut conn,
        actor,
        "message_retried",
        "message",
        &retried.message_id.to_string(),
        json!({
            "previous_error_code": retried.previous_error_code,
            "previous_error_category": retried.previous_error_category,
            "retry_count": retried.retry_count,
            "published": retried.published,
        }),
    )
    .await?;
    Ok(())
}

/// What [`retry_failed`] did with one message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryOutcome {
    /// Accepted again by the send path: `queued`, its error cleared.
    Requeued {
        /// The retry count now (the failed attempt's plus one).
        retry_count: i32,
        /// Handed to delivery at once (else the relay publishes it).
        published: bool,
    },
    /// Left as it was; the reason is a sentence for the agent.
    Skipped(String),
}

/// Send the failed outbound message `message_id` again, unless it must not be: no such
/// message, inbound, not failed, a compliance failure (the rule still stands), an error the
/// knowledge base calls not retryable, content or a recipient that cannot be read back, or
/// a refusal by compliance now. `Err` only when a dependency is down (nothing was retried);
/// the audit row of a committed retry is best effort, as the message is queued either way.
pub async fn retry_failed(
    core: &Core,
    message_id: Uuid,
    actor: &'static str,
) -> Result<RetryOutcome, CoreError> {
    let skipped = |reason: String| Ok(RetryOutcome::Skipped(reason));
    let id = message_id;
    let message = {
        let mut conn = core.pg().get().await?;
        match core.admit_message(&mut conn, id).await {
            // Outside the caller's reach: answered as a message that does not exist.
            Err(CoreError::NotFound(_)) => None,
            Err(other) => return Err(other),
            Ok(_) => Message::find(&mut conn, id).await?,
        }
    };
    let Some(m) = message else {
        return skipped("no message with this id".into());
    };
    if m.direction != "outbound" {
        return skipped("an inbound message cannot be retried".into());
    }
    if m.status != message_status::FAILED {
        return skipped(format!(
            "the message is {}, not failed; only failed messages are retried",
            public_status(&m.status)
        ));
    }
    // A compliance failure is never resent: the rule that refused it still stands.
    if let Some(reason) = retry_refusal(&m) {
        return skipped(reason);
    }
    let code = m.error_code.unwrap_or(0);
    let explained = {
        let mut conn = core.pg().get().await?;
        knowledge::explain(&mut conn, code).await?
    };
    if !explained.can_retry {
        let reason = if code == 0 {
            "the failure carries no platform error code, so the error knowledge base cannot call it retryable (error 0 is not retryable); send a new message instead".to_string()
        } else {
            format!(
                "error {code} ({}) is not retryable: {} {}",
                explained.title, explained.human_explanation, explained.suggested_action
            )
        };
        return skipped(reason);
    }
    let kind = match SendKind::from_content(&m.content) {
        Ok(k) => k,
        Err(e) => {
            return skipped(format!(
                "the stored content cannot be re-sent: {}",
                detail(e)
            ));
        }
    };
    let message_type = m.message_type.parse::<MessageType>().unwrap_or(match kind {
        SendKind::Text { .. } | SendKind::Rich(_) => MessageType::Service,
        SendKind::Template(_) => MessageType::Template,
    });
    let phone = match warden_rules::bsuid::customer_key(&m.customer_phone) {
        Ok(p) => p,
        Err(e) => return skipped(format!("the stored recipient is invalid: {e}")),
    };
    let result = core
        .send(SendRequest {
            phone,
            channel: m.channel.clone(),
            kind,
            message_type,
            campaign_id: m.campaign_id,
            existing_message_id: Some(id),
            refusal: RefusalMode::Error,
            actor,
            // As recorded on the message.
            sender: None,
        })
        .await;
    match result {
        Ok(accepted) => {
            let retried = Retried {
                message_id: id,
                previous_error_code: m.error_code,
                previous_error_category: m.error_category.clone(),
                retry_count: m.retry_count + 1,
                published: accepted.published,
            };
            if let Err(error) = record_retried(core.pg(), &retried, actor).await {
                tracing::warn!(message_id = %id, %error, "retried, but the audit row could not be written");
            }
            Ok(RetryOutcome::Requeued {
                retry_count: retried.retry_count,
                published: retried.published,
            })
        }
        Err(SendError::Unavailable(message)) => Err(CoreError::Unavailable(message)),
        Err(SendError::Busy {
            message,
            retry_after_secs,
        }) => Err(CoreError::Busy {
            message,
            retry_after_secs,
        }),
        Err(SendError::Refused(d)) | Err(SendError::RefusedRecorded { decision: d, .. }) => {
            skipped(format!(
                "compliance refused the retry now ({}): {}",
                d.reason_code.as_str(),
                d.human_explanation
            ))
        }
        Err(other) => skipped(format!(
            "cannot be re-sent ({}): {}",
            other.code(),
            detail(&other)
        )),
    }
}

/// Another component's error text inside a reason: control and invisible formatting
/// characters escaped, cut after [`DETAIL_CHARS`] characters (escapes counted, never split)
/// with "…", as the gateway bounds such texts.
fn detail(text: impl std::fmt::Display) -> String {
    let (shown, cut) = warden_rules::text::clip(&text.to_string(), DETAIL_CHARS);
    if cut { format!("{shown}…") } else { shown }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_bounded_and_escaped() {
        assert_eq!(detail("short"), "short");
        assert_eq!(detail("a\nb\u{202E}"), "a\\nb\\u{202e}");
        let long = detail("x".repeat(10_000));
        assert_eq!(long.chars().count(), DETAIL_CHARS + 1);
        assert!(long.ends_with('…'));
        assert_eq!(detail("y".repeat(DETAIL_CHARS)), "y".repeat(DETAIL_CHARS));
    }
}
