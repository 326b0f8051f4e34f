//! Status events: the outbound messages they are about (one query per batch), and each
//! status applied through `warden_core::outcomes` / `warden_core::platform_errors`.

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::result::Error as DbError;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use tracing::Instrument;
use uuid::Uuid;
use warden_core::knowledge::{self, ErrorInfo};
use warden_core::outcomes;
use warden_core::platform_errors::{self, Retried};
use warden_platform::webhook::StatusKind;
use warden_store::schema::messages;

use super::{ACTOR, BatchState, retry_policy};
use crate::events::StatusEvent;

/// The outbound messages a batch's statuses are about, found with one query.
#[derive(Default)]
pub(super) struct StatusTargets {
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
    pub(super) async fn load(
        c: &mut AsyncPgConnection,
        statuses: &[&StatusEvent],
    ) -> QueryResult<Self> {
        let mut out = StatusTargets::default();
        if statuses.is_empty() {
            return Ok(out);
        }
        let wamids: Vec<&str> = statuses
            .iter()
            .filter(|s| !s.wamid.is_empty())
            .map(|s| s.wamid.as_str())
            .collect();
        let ids: Vec<Uuid> = statuses
            .iter()
            .filter_map(|s| s.callback.as_deref())
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
            .filter(|s| s.status == StatusKind::Failed)
            .filter_map(|s| s.error.as_ref().map(|e| e.code))
            .collect();
        codes.sort_unstable();
        codes.dedup();
        for code in codes {
            out.explanations
                .insert(code, knowledge::explain(c, code).await?);
        }
        Ok(out)
    }

    /// By wamid first, else by `biz_opaque_callback_data` = message_id.
    fn find(&self, s: &StatusEvent) -> Option<usize> {
        if !s.wamid.is_empty()
            && let Some(&n) = self.by_wamid.get(&s.wamid)
        {
            return Some(n);
        }
        let id = Uuid::parse_str(s.callback.as_deref()?.trim()).ok()?;
        self.by_id.get(&id).copied()
    }
}

pub(super) async fn apply_status(
    c: &mut AsyncPgConnection,
    s: &StatusEvent,
    targets: &mut StatusTargets,
    state: &mut BatchState,
) -> QueryResult<bool> {
    let Some(n) = targets.find(s) else {
        tracing::debug!(
            wamid = %s.wamid,
            callback = s.callback.as_deref().unwrap_or(""),
            status = s.status.as_str(),
            "status of an unknown message; acknowledged and ignored"
        );
        return Ok(false);
    };
    if targets.rows[n].direction != "outbound" {
        tracing::debug!(wamid = %s.wamid, "status of a message that is not outbound; ignored");
        return Ok(false);
    }
    // Record the wamid beside the message id when the row has none and no other message
    // holds it (the column is unique).
    let record_wamid = !s.wamid.is_empty()
        && targets.rows[n].wamid.is_none()
        && !targets.by_wamid.contains_key(&s.wamid);
    if record_wamid {
        targets.rows[n].wamid = Some(s.wamid.clone());
        targets.by_wamid.insert(s.wamid.clone(), n);
    }
    let target = &targets.rows[n];
    let explanation = s
        .error
        .as_ref()
        .filter(|_| s.status == StatusKind::Failed)
        .and_then(|e| targets.explanations.get(&e.code));
    let error = explanation.map(ErrorInfo::from);

    let span = tracing::info_span!(
        "webhook.status_update",
        message_id = %target.id,
        status = s.status.as_str(),
        error_code = s.error.as_ref().map(|e| e.code),
    );
    if let Some(headers) = trace_headers(target.trace_context.as_ref()) {
        warden_telemetry::set_parent_from(&span, &headers);
    }
    let message_id = target.id;
    // The event's wamid also tells a late status of an attempt that failed and was
    // requeued from news about the next attempt (outcomes::apply_status); it is written
    // only when the row has none.
    let wamid = (!s.wamid.is_empty() && (record_wamid || target.wamid.is_some()))
        .then_some(s.wamid.as_str());
    let phone = warden_rules::phone::canonicalize(&target.customer_phone).ok();
    async {
        let mut error = error;
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
                retry_policy(),
                rand::random::<f64>(),
                ACTOR,
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
                    state.requeued.push(message_id);
                    state.outcome.retried += 1;
                    return Ok(());
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
        let moved = outcomes::apply_status(
            c,
            message_id,
            s.status.as_str(),
            s.at,
            wamid,
            error.as_ref(),
        )
        .await?;
        tracing::debug!(moved, "status applied");
        if let Some(d) = decided {
            platform_errors::apply_effect(c, &d.effect, phone.as_ref(), s.at, ACTOR).await?;
        }
        Ok::<_, DbError>(())
    }
    .instrument(span)
    .await?;
    Ok(true)
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
