//! The gate between a campaign's fan-out and the people who stop it.
//!
//! Every chunk transaction of a campaign passes the gate first: a shared transaction-level
//! advisory lock on the campaign, then a fresh read of its status (a chunk of a campaign
//! that is no longer sending writes nothing). pause_campaign and cancel_campaign close the
//! gate: they take the same lock exclusively before they change the status, so they wait
//! for the chunks already inside to commit, and every chunk after them reads the new
//! status. When the answer comes, nothing more of the campaign is queued — however large
//! the chunks are.
//!
//! Lock order: the gate before anything else on both sides (a chunk then locks customers,
//! and the campaign row at commit through the counter trigger; a transition the campaign
//! row), so the gate never closes a cycle.

use diesel::sql_types::{Array, Text, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryResult};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;

/// The advisory lock's key: the campaign's id in a name space of its own.
const KEY: &str = "hashtextextended('warden.campaign.gate:' || $1::text, 0)";

#[derive(diesel::QueryableByName)]
struct Sending {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    sending: bool,
}

/// Pass the gate (inside a chunk's transaction, before anything else): true when the
/// campaign is still sending; the gate stays passed until the transaction ends.
pub(crate) async fn enter(c: &mut AsyncPgConnection, campaign: Uuid) -> QueryResult<bool> {
    diesel::sql_query(format!("SELECT pg_advisory_xact_lock_shared({KEY})"))
        .bind::<SqlUuid, _>(campaign)
        .execute(c)
        .await?;
    // A statement of its own: its snapshot is taken after the lock is held.
    let row: Option<Sending> =
        diesel::sql_query("SELECT status = ANY($2) AS sending FROM campaigns WHERE id = $1")
            .bind::<SqlUuid, _>(campaign)
            .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::SENDING))
            .get_result(c)
            .await
            .optional()?;
    Ok(row.is_some_and(|r| r.sending))
}

/// Close the gate (inside a pause's or cancel's transaction, before it locks the campaign
/// row): waits for the chunks inside to commit; the next ones wait for this transaction.
pub(crate) async fn close(c: &mut AsyncPgConnection, campaign: Uuid) -> QueryResult<()> {
    diesel::sql_query(format!("SELECT pg_advisory_xact_lock({KEY})"))
        .bind::<SqlUuid, _>(campaign)
        .execute(c)
        .await
        .map(|_| ())
}
