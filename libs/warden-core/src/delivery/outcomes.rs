//! Delivery outcomes of outbound messages, from the dispatcher (platform answers) and the
//! webhook (status events). Statuses only move forward; campaign counters follow the rows.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_store::models::Message;
use warden_store::schema::messages;

use crate::delivery::knowledge::ErrorInfo;

/// Move an outbound message to `status` if that is forward progress (a late `delivered`
/// never overwrites `read`; `failed` may follow `sent`). Records the wamid beside the
/// message id when given, the error when failed, and keeps campaign counters in step.
/// Returns true when the row changed.
///
/// `status` is a [`MessageStatus`]; a stored spelling (`"sent"`) is accepted from callers
/// not converted yet, and one this version does not know never moves the row (only its
/// wamid is learnt).
pub async fn apply_status<S: TryInto<MessageStatus>>(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    status: S,
    at: DateTime<Utc>,
    wamid: Option<&str>,
    error: Option<&ErrorInfo>,
) -> QueryResult<bool> {
    match status.try_into() {
        Ok(status) => apply(conn, message_id, status, at, wamid, error).await,
        Err(_) => {
            if let Some(w) = wamid {
                learn_wamid(conn, message_id, w).await?;
            }
            Ok(false)
        }
    }
}

async fn apply(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    status: MessageStatus,
    at: DateTime<Utc>,
    wamid: Option<&str>,
    error: Option<&ErrorInfo>,
) -> QueryResult<bool> {
    let Some(current) = messages::table
        .find(message_id)
        .select(Message::as_select())
        .for_update()
        .first(conn)
        .await
        .optional()?
    else {
        return Ok(false);
    };
    let mut row = Row::from(&current);
    match row.step(status, at, wamid) {
        Step::Fenced => return Ok(false),
        Step::Stays { learnt_wamid } => {
            // Still learn the wamid of a message whose status we already know.
            if let Some(w) = learnt_wamid {
                diesel::update(messages::table.find(message_id))
                    .set(messages::wamid.eq(w))
                    .execute(conn)
                    .await?;
            }
            return Ok(false);
        }
        Step::Moved { clear_error } => {
            diesel::update(messages::table.find(message_id))
                .set((
                    messages::status.eq(status.as_str()),
                    messages::updated_at.eq(diesel::dsl::now),
                    messages::wamid.eq(row.wamid.as_deref()),
                    messages::lease_until.eq(None::<DateTime<Utc>>),
                    messages::lease_owner.eq(None::<String>),
                    messages::sent_at.eq(row.sent_at),
                    messages::delivered_at.eq(row.delivered_at),
                    messages::read_at.eq(row.read_at),
                    messages::failed_at.eq(row.failed_at),
                ))
                .execute(conn)
                .await?;
            if clear_error {
                // An attempt got through: the errors of earlier attempts no longer describe it.
                diesel::update(messages::table.find(message_id))
                    .set((
                        messages::next_attempt_at.eq(None::<DateTime<Utc>>),
                        messages::error_code.eq(None::<i32>),
                        messages::error_category.eq(None::<String>),
                        messages::error_can_retry.eq(None::<bool>),
                        messages::error_explanation.eq(None::<String>),
                        messages::error_suggested_action.eq(None::<String>),
                    ))
                    .execute(conn)
                    .await?;
            }
        }
    }
    if status == MessageStatus::Failed {
        let info = error.cloned().unwrap_or_else(|| crate::delivery::knowledge::ErrorInfo {
            code: 0,
            category: "unknown".into(),
            can_retry: false,
            human_explanation: "The platform reported the message as failed without an error code.".into(),
            suggested_action: "Check the conversation on the platform; resend with retry_failed_messages if appropriate.".into(),
        });
        record_error(conn, message_id, &info).await?;
    }
    // Campaign counters follow the row by themselves (the counter triggers, see
    // `crate::campaigns`): each recipient counted once, in its latest state.
    if let Some(campaign_id) = current.campaign_id {
        crate::campaigns::settle_if_done(conn, campaign_id).await?;
    }
    Ok(true)
}

/// The fields of an outbound message row a status moves, as [`Row::step`] reads and
/// changes them: [`apply_status`] takes one step and writes it, the webhook's
/// `statuses::apply_all` takes every step a POST holds for a row and writes the last state.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub status: Option<MessageStatus>,
    pub outbound: bool,
    pub wamid: Option<String>,
    pub error_code: Option<i32>,
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub sent_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub read_at: Option<DateTime<Utc>>,
    pub failed_at: Option<DateTime<Utc>>,
}

impl From<&Message> for Row {
    fn from(m: &Message) -> Self {
        Row {
            // A spelling this version does not know ranks lowest, like `scheduled`.
            status: m.status.parse::<MessageStatus>().ok(),
            outbound: m.direction == "outbound",
            wamid: m.wamid.clone(),
            error_code: m.error_code,
            next_attempt_at: m.next_attempt_at,
            sent_at: m.sent_at,
            delivered_at: m.delivered_at,
            read_at: m.read_at,
            failed_at: m.failed_at,
        }
    }
}

/// What one status did to a [`Row`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// News of an attempt that failed and was requeued: nothing changes.
    Fenced,
    /// Not forward progress (or not outbound): at most the wamid is learnt.
    Stays { learnt_wamid: Option<&'a str> },
    /// The row moved to the status; `clear_error`: an attempt got through, the errors of
    /// earlier attempts (and their next attempt time) are cleared.
    Moved { clear_error: bool },
}

impl Row {
    /// Apply `status` (reported at `at`, for platform message `wamid`) to the row in memory
    /// by the rules of [`apply_status`]: forward only, a late `delivered` never overwrites
    /// `read`, `failed` may follow `sent`.
    pub(crate) fn step<'a>(
        &mut self,
        status: MessageStatus,
        at: DateTime<Utc>,
        wamid: Option<&'a str>,
    ) -> Step<'a> {
        let pending = self.status.is_some_and(MessageStatus::is_pending);
        // A status of an attempt that failed and was put back in the queue: the row keeps that
        // attempt's wamid and error until the next attempt is recorded
        // (`platform_errors::retry_failed_status`). Late news of the failed attempt (or the
        // dispatcher's own record of it, when the webhook came first) says nothing about the
        // next one.
        if pending && self.error_code.is_some() && wamid.is_some() && self.wamid.as_deref() == wamid
        {
            return Step::Fenced;
        }
        let advances = self
            .status
            .map_or(status.rank() > 0, |from| from.advances_to(status));
        if !self.outbound || !advances {
            let learnt_wamid = wamid.filter(|_| self.wamid.is_none());
            if let Some(w) = learnt_wamid {
                self.wamid = Some(w.to_owned());
            }
            return Step::Stays { learnt_wamid };
        }
        let now_sent = status.is_sent();
        // A queued or sending row's wamid is that of an attempt that failed (see the fence
        // above) or this one's: the attempt that got through wins.
        self.wamid = if pending {
            wamid.map(str::to_owned).or(self.wamid.take())
        } else {
            self.wamid.take().or(wamid.map(str::to_owned))
        };
        if now_sent {
            self.sent_at = self.sent_at.or(Some(at));
        }
        if status.is_delivered() {
            self.delivered_at = self.delivered_at.or(Some(at));
        }
        if status == MessageStatus::Read {
            self.read_at = Some(at);
        }
        if status == MessageStatus::Failed {
            self.failed_at = Some(at);
        }
        let clear_error =
            now_sent && pending && (self.error_code.is_some() || self.next_attempt_at.is_some());
        if clear_error {
            self.error_code = None;
            self.next_attempt_at = None;
        }
        self.status = Some(status);
        Step::Moved { clear_error }
    }
}

/// Learn the wamid of a message that has none (a status without delivery meaning, or
/// one that does not move it forward, still tells which platform message it is).
pub async fn learn_wamid(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    wamid: &str,
) -> QueryResult<()> {
    diesel::update(
        messages::table
            .find(message_id)
            .filter(messages::wamid.is_null()),
    )
    .set(messages::wamid.eq(wamid))
    .execute(conn)
    .await
    .map(|_| ())
}

/// Store the explained error of a failed message.
pub async fn record_error(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    error: &ErrorInfo,
) -> QueryResult<()> {
    diesel::update(messages::table.find(message_id))
        .set((
            messages::error_code.eq(error.code),
            messages::error_category.eq(&error.category),
            messages::error_can_retry.eq(error.can_retry),
            messages::error_explanation.eq(&error.human_explanation),
            messages::error_suggested_action.eq(&error.suggested_action),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}
