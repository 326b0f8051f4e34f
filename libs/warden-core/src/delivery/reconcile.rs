//! sync_webhooks' repairs of message state, for when webhook events or publishes were lost:
//! sends stuck mid-delivery whose platform acceptance is on record are settled as sent,
//! and accepted messages whose publish was lost are found for re-publishing. Sends with an
//! unknown outcome are never settled blindly: their status webhook settles them.

use std::convert::Infallible;

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_store::models::message_status::{QUEUED, SENDING, SENT};
use warden_store::schema::messages;
use warden_store::tx::{Abort, transact};
use warden_store::{DbError, PgPool};

use crate::db::infallible;

/// A queued row this old without a publish lost its publish (the send path publishes at once).
pub const UNPUBLISHED_AFTER: TimeDelta = TimeDelta::seconds(30);
/// Rows one reconcile step looks at most (sync_webhooks can be called again).
pub const RECONCILE_BATCH: i64 = 500;

/// What [`settle_expired_sends`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExpiredSends {
    /// Settled as sent by this call (the platform's id was on record).
    pub settled: i64,
    /// Left as they are: the outcome is unknown until the status webhook arrives.
    pub awaiting_status: i64,
}

/// Sends stuck in `sending` after their lease ran out (at most [`RECONCILE_BATCH`], the
/// oldest first): one the platform accepted (its wamid is on record) is at least sent.
pub async fn settle_expired_sends(
    pg: &PgPool,
    now: DateTime<Utc>,
) -> Result<ExpiredSends, DbError> {
    let stuck: Vec<(Uuid, Option<String>)> = {
        let mut conn = pg.get().await?;
        messages::table
            .filter(messages::status.eq(SENDING))
            .filter(messages::lease_until.lt(now))
            .order(messages::lease_until.asc())
            .limit(RECONCILE_BATCH)
            .select((messages::id, messages::wamid))
            .load(&mut conn)
            .await?
    };
    let mut done = ExpiredSends::default();
    for (id, wamid) in stuck {
        let Some(wamid) = wamid else {
            done.awaiting_status += 1;
            continue;
        };
        let settled = transact(pg, "settle_expired_send", move |c| {
            let wamid = wamid.clone();
            async move {
                let changed =
                    crate::delivery::outcomes::apply_status(c, id, SENT, now, Some(&wamid), None)
                        .await?;
                Ok::<_, Abort<Infallible>>(changed)
            }
            .boxed()
        })
        .await;
        if infallible(settled)? {
            done.settled += 1;
        }
    }
    Ok(done)
}

/// Accepted (`queued`) messages older than [`UNPUBLISHED_AFTER`] that were never handed to
/// delivery, oldest first, at most [`RECONCILE_BATCH`]: `Core::publish` hands them over.
pub async fn unpublished_messages(pg: &PgPool, now: DateTime<Utc>) -> Result<Vec<Uuid>, DbError> {
    let mut conn = pg.get().await?;
    Ok(messages::table
        .filter(messages::status.eq(QUEUED))
        .filter(messages::published_at.is_null())
        .filter(messages::created_at.lt(now - UNPUBLISHED_AFTER))
        .order(messages::created_at.asc())
        .limit(RECONCILE_BATCH)
        .select(messages::id)
        .load(&mut conn)
        .await?)
}

/// What one sync_webhooks call did, for the audit trail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReport {
    /// Template statuses were re-read from the platform.
    pub template_synced: bool,
    pub templates_checked: i64,
    pub templates_updated: i64,
    pub messages_reconciled: i64,
    pub messages_awaiting_status: i64,
}

/// The audit row of a sync_webhooks call (`webhooks_synced`, on the business account).
pub async fn record_sync(
    pg: &PgPool,
    account_id: &str,
    report: SyncReport,
    actor: &str,
) -> Result<(), DbError> {
    let mut conn = pg.get().await?;
    warden_store::audit::record(
        &mut conn,
        actor,
        "webhooks_synced",
        "account",
        account_id,
        json!({
            "template_synced": report.template_synced,
            "templates_checked": report.templates_checked,
            "templates_updated": report.templates_updated,
            "messages_reconciled": report.messages_reconciled,
            "messages_awaiting_status": report.messages_awaiting_status,
        }),
    )
    .await?;
    Ok(())
}
