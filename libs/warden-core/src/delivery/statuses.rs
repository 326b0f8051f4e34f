//! What a status webhook changes: the outbound message it is about moves forward
//! (`crate::delivery::outcomes::apply_status`), and a `failed` status has the one consequence
//! [`crate::delivery::platform_errors::consequence`] decides — the same as the dispatcher's when the
//! error answers its call: a retryable error puts the message back in the queue (the
//! caller publishes it after commit), the rest end it `failed` with the error's side
//! effect (opt-out, undeliverable, marketing limit, pause campaigns).
//!
//! Runs inside the caller's transaction (one per webhook POST): [`StatusTargets::load`]
//! finds every message a batch's statuses mention with one query, then [`apply`] applies
//! each status in the order the platform sent them.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use tracing::Instrument;
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_store::schema::messages;

use crate::delivery::knowledge::{self, ErrorInfo};
use crate::delivery::outcomes;
use crate::delivery::platform_errors::{self, Retried, RetryPolicy};

/// One status the platform reported.
#[derive(Clone, Copy, Debug)]
pub struct StatusUpdate<'a> {
    /// Empty when the platform sent none (then only `callback` can match).
    pub wamid: &'a str,
    /// `biz_opaque_callback_data`: our message id when we set it.
    pub callback: Option<&'a str>,
    /// `None`: a status with no meaning for delivery (deleted, warning, played, ...).
    pub status: Option<MessageStatus>,
    /// The status as the platform named it (for logs).
    pub reported: &'a str,
    pub at: DateTime<Utc>,
    /// The platform error code of a failed status.
    pub error_code: Option<i32>,
}

impl StatusUpdate<'_> {
    fn is_failed(&self) -> bool {
        self.status == Some(MessageStatus::Failed)
    }
}

/// What [`apply`] did with one status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusApplied {
    /// Not about an outbound message of ours: acknowledged without effect.
    Ignored,
    /// Applied (the message moved forward, or already had; its wamid is learnt).
    Applied,
    /// A retryable failure: the message is back in the queue; publish it after commit.
    Requeued { message_id: Uuid },
}

/// The outbound messages a batch's statuses are about, found with one query.
#[derive(Default)]
pub struct StatusTargets {
    by_wamid: HashMap<String, usize>,
    by_id: HashMap<Uuid, usize>,
    rows: Vec<Target>,
    explanations: HashMap<i32, knowledge::Explanation>,
}

#[derive(Queryable)]
struct Target {
    id: Uuid,
    customer_phone: String,
    direction: String,
    wamid: Option<String>,
    trace_context: Option<Value>,
}

impl StatusTargets {
    /// The messages `statuses` mention (by wamid or callback id), and the knowledge
    /// base's explanation of every error code among the failed ones.
    pub async fn load(
        c: &mut AsyncPgConnection,
        statuses: &[StatusUpdate<'_>],
    ) -> QueryResult<Self> {
        let mut out = StatusTargets::default();
        if statuses.is_empty() {
            return Ok(out);
        }
        let wamids: Vec<&str> = statuses
            .iter()
            .filter(|s| !s.wamid.is_empty())
            .map(|s| s.wamid)
            .collect();
        let ids: Vec<Uuid> = statuses
            .iter()
            .filter_map(|s| s.callback)
            .filter_map(|cb| Uuid::parse_str(cb.trim()).ok())
            .collect();
        let rows: Vec<Target> = messages::table
            .filter(
                messages::wamid
                    .eq_any(&wamids)
                    .or(messages::id.eq_any(&ids)),
            )
            .select((
                messages::id,
                messages::customer_phone,
                messages::direction,
                messages::wamid,
                messages::trace_context,
            ))
            .load(c)
            .await?;
        for (n, row) in rows.iter().enumerate() {
            if let Some(w) = &row.wamid {
                out.by_wamid.insert(w.clone(), n);
            }
            out.by_id.insert(row.id, n);
        }
        out.rows = rows;
        let mut codes: Vec<i32> = statuses
            .iter()
            .filter(|s| s.is_failed())
            .filter_map(|s| s.error_code)
            .collect();
        codes.sort_unstable();
        codes.dedup();
        for code in codes {
            out.explanations
                .insert(code, knowledge::explain(c, code).await?);
        }
        Ok(out)
    }

    /// The customer of the outbound message a status is about (for conversation hints).
    pub fn customer_of(&self, s: &StatusUpdate<'_>) -> Option<&str> {
        self.find(s)
            .map(|n| &self.rows[n])
            .filter(|t| t.direction == "outbound")
            .map(|t| t.customer_phone.as_str())
    }

    /// The outbound message a status is about.
    pub fn message_of(&self, s: &StatusUpdate<'_>) -> Option<Uuid> {
        self.find(s)
            .map(|n| &self.rows[n])
            .filter(|t| t.direction == "outbound")
            .map(|t| t.id)
    }

    /// By wamid first, else by `biz_opaque_callback_data` = message_id.
    fn find(&self, s: &StatusUpdate<'_>) -> Option<usize> {
        if !s.wamid.is_empty()
            && let Some(&n) = self.by_wamid.get(s.wamid)
        {
            return Some(n);
        }
        let id = Uuid::parse_str(s.callback?.trim()).ok()?;
        self.by_id.get(&id).copied()
    }
}

/// Apply one status to the message it is about (see the module doc); retries follow
/// `policy` (the dispatcher's bound and backoff), audit rows name `actor`.
pub async fn apply(
    c: &mut AsyncPgConnection,
    s: &StatusUpdate<'_>,
    targets: &mut StatusTargets,
    policy: &RetryPolicy,
    actor: &str,
) -> QueryResult<StatusApplied> {
    let Some(n) = targets.find(s) else {
        tracing::debug!(
            wamid = %s.wamid,
            callback = s.callback.unwrap_or(""),
            status = s.reported,
            "status of an unknown message; acknowledged and ignored"
        );
        return Ok(StatusApplied::Ignored);
    };
    if targets.rows[n].direction != "outbound" {
        tracing::debug!(wamid = %s.wamid, "status of a message that is not outbound; ignored");
        return Ok(StatusApplied::Ignored);
    }
    // Record the wamid beside the message id when the row has none and no other message
    // holds it (the column is unique).
    let record_wamid = !s.wamid.is_empty()
        && targets.rows[n].wamid.is_none()
        && !targets.by_wamid.contains_key(s.wamid);
    if record_wamid {
        targets.rows[n].wamid = Some(s.wamid.to_owned());
        targets.by_wamid.insert(s.wamid.to_owned(), n);
    }
    let target = &targets.rows[n];
    let explanation = s
        .error_code
        .filter(|_| s.is_failed())
        .and_then(|code| targets.explanations.get(&code));

    let span = tracing::info_span!(
        "webhook.status_update",
        message_id = %target.id,
        status = s.reported,
        error_code = s.error_code,
    );
    if let Some(headers) = trace_headers(target.trace_context.as_ref()) {
        warden_telemetry::set_parent_from(&span, &headers);
    }
    let message_id = target.id;
    // The event's wamid also tells a late status of an attempt that failed and was
    // requeued from news about the next attempt (outcomes::apply_status); it is written
    // only when the row has none.
    let wamid =
        (!s.wamid.is_empty() && (record_wamid || target.wamid.is_some())).then_some(s.wamid);
    let phone = warden_rules::bsuid::customer_key(&target.customer_phone).ok();
    async {
        let mut error = explanation.map(ErrorInfo::from);
        // The same decision the dispatcher takes when this error answers its call.
        let decided =
            explanation.map(|e| platform_errors::consequence(e.handling, e.code, &e.title));
        if let (Some(d), Some(info)) = (&decided, error.as_ref())
            && d.retry
        {
            match platform_errors::retry_failed_status(
                c,
                message_id,
                wamid,
                info,
                policy,
                rand::random::<f64>(),
                actor,
            )
            .await?
            {
                Retried::Requeued { retry_count, delay } => {
                    tracing::info!(
                        code = info.code,
                        retry_count,
                        delay_ms = delay.as_millis() as u64,
                        "retryable failure reported by webhook; message back in the queue"
                    );
                    return Ok(StatusApplied::Requeued { message_id });
                }
                Retried::Exhausted { attempts } => {
                    tracing::warn!(
                        code = info.code,
                        attempts,
                        "retryable failure, but the attempts are spent"
                    );
                    error = Some(platform_errors::exhausted(info, attempts));
                }
                Retried::NotApplicable => {}
            }
        }
        let moved = match s.status {
            Some(status) => {
                outcomes::apply_status(c, message_id, status, s.at, wamid, error.as_ref()).await?
            }
            // No delivery meaning: only the wamid is learnt.
            None => {
                if let Some(w) = wamid {
                    outcomes::learn_wamid(c, message_id, w).await?;
                }
                false
            }
        };
        tracing::debug!(moved, "status applied");
        if let Some(d) = decided {
            platform_errors::apply_effect(c, message_id, &d.effect, phone.as_ref(), s.at, actor)
                .await?;
        }
        Ok(StatusApplied::Applied)
    }
    .instrument(span)
    .await
}

/// The W3C trace context stored with a message (`{"traceparent": ..., "tracestate": ...}`).
fn trace_headers(stored: Option<&Value>) -> Option<HashMap<String, String>> {
    let map = stored?.as_object()?;
    let headers: HashMap<String, String> = map
        .iter()
        .filter_map(|(k, v)| Some((k.to_ascii_lowercase(), v.as_str()?.to_string())))
        .collect();
    headers.contains_key("traceparent").then_some(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trace_headers_need_a_traceparent() {
        assert!(trace_headers(None).is_none());
        assert!(trace_headers(Some(&json!({"tracestate": "x"}))).is_none());
        let h = trace_headers(Some(&json!({
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "n": 1})))
        .unwrap();
        assert_eq!(h.len(), 1);
    }
}
