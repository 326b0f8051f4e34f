//! What a status webhook changes: the outbound message it is about moves forward
//! (`crate::delivery::outcomes::apply_status`), and a `failed` status has the one consequence
//! [`crate::delivery::platform_errors::consequence`] decides — the same as the dispatcher's when the
//! error answers its call: a retryable error puts the message back in the queue (the
//! caller publishes it after commit), the rest end it `failed` with the error's side
//! effect (opt-out, undeliverable, marketing limit, pause campaigns).
//!
//! Runs inside the caller's transaction (one per webhook POST): [`StatusTargets::load`]
//! finds every message a batch's statuses mention with one query, then [`apply_all`] applies
//! them in the order the platform sent them (the statuses it leaves, each with
//! [`apply_resolved`] in its place).

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

/// What applying one status did.
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

/// The outbound message a status is about, found by wamid, else by our message id.
#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    n: usize,
    /// The status's wamid is written with it (the row's, or learnt now).
    with_wamid: bool,
}

/// Find the outbound message of `s` and learn its wamid in `targets` (when the row has none
/// and no other message holds it: the column is unique). `None`: acknowledged and ignored.
fn resolve(s: &StatusUpdate<'_>, targets: &mut StatusTargets) -> Option<Resolved> {
    let Some(n) = targets.find(s) else {
        tracing::debug!(
            wamid = %s.wamid,
            callback = s.callback.unwrap_or(""),
            status = s.reported,
            "status of an unknown message; acknowledged and ignored"
        );
        return None;
    };
    if targets.rows[n].direction != "outbound" {
        tracing::debug!(wamid = %s.wamid, "status of a message that is not outbound; ignored");
        return None;
    }
    let record_wamid = !s.wamid.is_empty()
        && targets.rows[n].wamid.is_none()
        && !targets.by_wamid.contains_key(s.wamid);
    if record_wamid {
        targets.rows[n].wamid = Some(s.wamid.to_owned());
        targets.by_wamid.insert(s.wamid.to_owned(), n);
    }
    // The event's wamid also tells a late status of an attempt that failed and was
    // requeued from news about the next attempt (outcomes::apply_status); it is written
    // only when the row has none.
    let with_wamid = !s.wamid.is_empty() && (record_wamid || targets.rows[n].wamid.is_some());
    Some(Resolved { n, with_wamid })
}

/// What [`apply_all`] did with one status of a POST.
#[derive(Clone, Copy, Debug)]
pub struct Planned {
    /// The outbound message it is about (`None`: ignored).
    pub resolved: Option<Resolved>,
    /// Applied (or ignored) with the POST's other `sent`/`delivered`/`read` statuses;
    /// `None`: to apply in its place among the POST's events with [`apply_resolved`] (a
    /// `failed` status, one without delivery meaning, or another status of their message).
    pub done: Option<StatusApplied>,
}

impl StatusTargets {
    /// The id and customer of a resolved status's message.
    pub fn message_at(&self, r: &Resolved) -> (Uuid, &str) {
        let t = &self.rows[r.n];
        (t.id, t.customer_phone.as_str())
    }
}

/// Apply a POST's statuses (in the order the platform sent them) to the messages that only
/// move forward through `sent`, `delivered` and `read` in it, all at once: their rows
/// locked in one statement (in id order), each status taken in turn in memory by the rules
/// of `outcomes::apply_status`, and each row written once in one statement, with its last
/// state. That is the end state one [`apply_resolved`] per status reaches, in two round
/// trips instead of two per status and one row version per message instead of one per
/// status. A message with any other status in the POST (failed, or one without delivery
/// meaning, which have consequences beyond the row) is left to [`apply_resolved`] in its
/// place: every status of it, so its statuses keep their order.
pub async fn apply_all(
    c: &mut AsyncPgConnection,
    statuses: &[StatusUpdate<'_>],
    targets: &mut StatusTargets,
) -> QueryResult<Vec<Planned>> {
    let resolved: Vec<Option<Resolved>> = statuses.iter().map(|s| resolve(s, targets)).collect();
    let foldable = |s: &StatusUpdate<'_>| {
        matches!(
            s.status,
            Some(MessageStatus::Sent | MessageStatus::Delivered | MessageStatus::Read)
        )
    };
    let mut in_place: std::collections::HashSet<usize> = std::collections::HashSet::new();
    for (s, r) in statuses.iter().zip(&resolved) {
        if let Some(r) = r
            && !foldable(s)
        {
            in_place.insert(r.n);
        }
    }
    let mut ids: Vec<Uuid> = resolved
        .iter()
        .flatten()
        .filter(|r| !in_place.contains(&r.n))
        .map(|r| targets.rows[r.n].id)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let plan = resolved
        .iter()
        .map(|r| Planned {
            resolved: *r,
            done: match r {
                None => Some(StatusApplied::Ignored),
                Some(r) if in_place.contains(&r.n) => None,
                Some(_) => Some(StatusApplied::Applied),
            },
        })
        .collect();
    if ids.is_empty() {
        return Ok(plan);
    }
    let current: Vec<warden_store::models::Message> = messages::table
        .filter(messages::id.eq_any(&ids))
        .order(messages::id)
        .select(warden_store::models::Message::as_select())
        .for_update()
        .load(c)
        .await?;
    let mut rows: HashMap<Uuid, Folded> = current
        .iter()
        .map(|m| {
            let row = outcomes::Row::from(m);
            let folded = Folded {
                before: row.clone(),
                row,
                moved: false,
                clear_error: false,
                campaign: m.campaign_id,
            };
            (m.id, folded)
        })
        .collect();
    for (s, r) in statuses.iter().zip(&resolved) {
        let Some(r) = r.filter(|r| !in_place.contains(&r.n)) else {
            continue;
        };
        let (Some(status), Some(f)) = (s.status, rows.get_mut(&targets.rows[r.n].id)) else {
            continue;
        };
        let wamid = r.with_wamid.then_some(s.wamid);
        // Each status keeps its span in the message's trace (written with the batch below).
        let span = status_span(targets.rows[r.n].id, s);
        if let Some(headers) = trace_headers(targets.rows[r.n].trace_context.as_ref()) {
            warden_telemetry::set_parent_from(&span, &headers);
        }
        let step = span.in_scope(|| f.row.step(status, s.at, wamid));
        if let outcomes::Step::Moved { clear_error } = step {
            f.moved = true;
            f.clear_error |= clear_error;
        }
    }
    let changed: Vec<(&Uuid, &Folded)> = {
        let mut v: Vec<_> = rows
            .iter()
            .filter(|(_, f)| f.moved || f.row.wamid != f.before.wamid)
            .collect();
        v.sort_unstable_by_key(|(id, _)| **id);
        v
    };
    if !changed.is_empty() {
        let mut cols = FoldedColumns::default();
        for (id, f) in &changed {
            cols.push(**id, f);
        }
        cols.write(c).await?;
    }
    let mut campaigns: Vec<Uuid> = changed
        .iter()
        .filter(|(_, f)| f.moved)
        .filter_map(|(_, f)| f.campaign)
        .collect();
    campaigns.sort_unstable();
    campaigns.dedup();
    for campaign_id in campaigns {
        crate::campaigns::settle_if_done(c, campaign_id).await?;
    }
    tracing::debug!(
        messages = ids.len(),
        written = changed.len(),
        "statuses applied together"
    );
    Ok(plan)
}

/// One message's row across a POST's statuses.
struct Folded {
    before: outcomes::Row,
    row: outcomes::Row,
    moved: bool,
    clear_error: bool,
    campaign: Option<Uuid>,
}

/// The rows [`apply_all`] writes, column by column.
#[derive(Default)]
struct FoldedColumns {
    id: Vec<Uuid>,
    moved: Vec<bool>,
    status: Vec<Option<&'static str>>,
    wamid: Vec<Option<String>>,
    sent_at: Vec<Option<DateTime<Utc>>>,
    delivered_at: Vec<Option<DateTime<Utc>>>,
    read_at: Vec<Option<DateTime<Utc>>>,
    clear_error: Vec<bool>,
}

impl FoldedColumns {
    fn push(&mut self, id: Uuid, f: &Folded) {
        self.id.push(id);
        self.moved.push(f.moved);
        self.status.push(f.row.status.map(MessageStatus::as_str));
        self.wamid.push(f.row.wamid.clone());
        self.sent_at.push(f.row.sent_at);
        self.delivered_at.push(f.row.delivered_at);
        self.read_at.push(f.row.read_at);
        self.clear_error.push(f.clear_error);
    }

    /// What a moved row gets from `outcomes::apply_status` (status, wamid, times, the lease
    /// cleared, earlier attempts' errors cleared when this one got through); a row that only
    /// learnt its wamid, only that.
    async fn write(self, c: &mut AsyncPgConnection) -> QueryResult<()> {
        use diesel::sql_types::{Array, Bool, Nullable, Text, Timestamptz};
        diesel::sql_query(
            "UPDATE messages m
                SET status = CASE WHEN u.moved THEN u.status ELSE m.status END,
                    updated_at = CASE WHEN u.moved THEN now() ELSE m.updated_at END,
                    wamid = u.wamid,
                    lease_until = CASE WHEN u.moved THEN NULL ELSE m.lease_until END,
                    lease_owner = CASE WHEN u.moved THEN NULL ELSE m.lease_owner END,
                    sent_at = u.sent_at, delivered_at = u.delivered_at, read_at = u.read_at,
                    next_attempt_at = CASE WHEN u.clear THEN NULL ELSE m.next_attempt_at END,
                    error_code = CASE WHEN u.clear THEN NULL ELSE m.error_code END,
                    error_category = CASE WHEN u.clear THEN NULL ELSE m.error_category END,
                    error_can_retry = CASE WHEN u.clear THEN NULL ELSE m.error_can_retry END,
                    error_explanation = CASE WHEN u.clear THEN NULL ELSE m.error_explanation END,
                    error_suggested_action =
                        CASE WHEN u.clear THEN NULL ELSE m.error_suggested_action END
               FROM unnest($1::uuid[], $2::bool[], $3::text[], $4::text[], $5::timestamptz[],
                           $6::timestamptz[], $7::timestamptz[], $8::bool[])
                    AS u(id, moved, status, wamid, sent_at, delivered_at, read_at, clear)
              WHERE m.id = u.id",
        )
        .bind::<Array<diesel::sql_types::Uuid>, _>(&self.id)
        .bind::<Array<Bool>, _>(&self.moved)
        .bind::<Array<Nullable<Text>>, _>(&self.status)
        .bind::<Array<Nullable<Text>>, _>(&self.wamid)
        .bind::<Array<Nullable<Timestamptz>>, _>(&self.sent_at)
        .bind::<Array<Nullable<Timestamptz>>, _>(&self.delivered_at)
        .bind::<Array<Nullable<Timestamptz>>, _>(&self.read_at)
        .bind::<Array<Bool>, _>(&self.clear_error)
        .execute(c)
        .await?;
        Ok(())
    }
}

/// Apply one status [`resolve`]d before, to the message it is about (see the module doc);
/// retries follow `policy` (the dispatcher's bound and backoff), audit rows name `actor`.
pub async fn apply_resolved(
    c: &mut AsyncPgConnection,
    s: &StatusUpdate<'_>,
    resolved: Resolved,
    targets: &StatusTargets,
    policy: &RetryPolicy,
    actor: &str,
) -> QueryResult<StatusApplied> {
    let Resolved { n, with_wamid } = resolved;
    let target = &targets.rows[n];
    let explanation = s
        .error_code
        .filter(|_| s.is_failed())
        .and_then(|code| targets.explanations.get(&code));

    let span = status_span(target.id, s);
    if let Some(headers) = trace_headers(target.trace_context.as_ref()) {
        warden_telemetry::set_parent_from(&span, &headers);
    }
    let message_id = target.id;
    let wamid = with_wamid.then_some(s.wamid);
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

fn status_span(message_id: Uuid, s: &StatusUpdate<'_>) -> tracing::Span {
    tracing::info_span!(
        "webhook.status_update",
        message_id = %message_id,
        status = s.reported,
        error_code = s.error_code,
    )
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
