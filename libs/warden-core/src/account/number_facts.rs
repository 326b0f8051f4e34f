//! What the platform says of each sender's number (`sender_numbers`): its display number,
//! quality rating, throughput level, name status and tier, from a read of the number
//! ([`record_read`]) and from webhooks (`metadata.display_phone_number` on every event,
//! [`learn_displays`]; a quality flag, [`apply_quality_event`]).
//!
//! A `phone_number_quality_update` names its number only by display number. [`match_display`]
//! finds the one sender whose display number it is; when Warden cannot tell (a business with
//! several senders, a display number not learnt yet) the update is kept
//! ([`defer`]) until a read of the business's numbers says whose it is
//! ([`resolve_deferred`]). It is never applied to a sibling on a guess, nor dropped while it
//! may be one of ours.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_store::schema::quality_updates_unmatched as qu;
use warden_store::schema::sender_numbers as sn;

pub use crate::account::displays::{digits, learn_displays};
use crate::account::protection::QUALITY_FLAGGED;
use crate::account::{protection, throughput};
use crate::{Core, CoreError};

/// What one read of a number from the platform said (every field optional: the platform
/// answers only what it was asked for).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NumberFacts {
    pub display_phone_number: Option<String>,
    pub quality_rating: Option<String>,
    pub throughput_level: Option<String>,
    pub name_status: Option<String>,
    pub messaging_limit_tier: Option<String>,
}

/// What is recorded of one sender's number.
#[derive(Clone, Debug, Default, PartialEq, Eq, Queryable)]
pub struct Recorded {
    pub display_phone_number: Option<String>,
    pub quality_rating: Option<String>,
    pub throughput_level: Option<String>,
    pub name_status: Option<String>,
    pub read_at: Option<DateTime<Utc>>,
}

/// Record a read of the number of the sender stored as `sender`; a field the read did not
/// carry keeps what was known.
pub async fn record_read(
    c: &mut AsyncPgConnection,
    sender: &str,
    facts: &NumberFacts,
    now: DateTime<Utc>,
) -> QueryResult<()> {
    let display = facts
        .display_phone_number
        .as_deref()
        .filter(|d| !d.is_empty());
    diesel::sql_query(
        "INSERT INTO sender_numbers AS s (sender_id, display_phone_number, display_digits,
                quality_rating, throughput_level, name_status, messaging_limit_tier, read_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
         ON CONFLICT (sender_id) DO UPDATE SET
           display_phone_number = COALESCE(excluded.display_phone_number, s.display_phone_number),
           display_digits = COALESCE(excluded.display_digits, s.display_digits),
           quality_rating = COALESCE(excluded.quality_rating, s.quality_rating),
           throughput_level = COALESCE(excluded.throughput_level, s.throughput_level),
           name_status = COALESCE(excluded.name_status, s.name_status),
           messaging_limit_tier = COALESCE(excluded.messaging_limit_tier, s.messaging_limit_tier),
           read_at = excluded.read_at, updated_at = excluded.updated_at",
    )
    .bind::<Text, _>(sender)
    .bind::<diesel::sql_types::Nullable<Text>, _>(display)
    .bind::<diesel::sql_types::Nullable<Text>, _>(display.map(digits))
    .bind::<diesel::sql_types::Nullable<Text>, _>(facts.quality_rating.as_deref())
    .bind::<diesel::sql_types::Nullable<Text>, _>(facts.throughput_level.as_deref())
    .bind::<diesel::sql_types::Nullable<Text>, _>(facts.name_status.as_deref())
    .bind::<diesel::sql_types::Nullable<Text>, _>(facts.messaging_limit_tier.as_deref())
    .bind::<diesel::sql_types::Timestamptz, _>(now)
    .execute(c)
    .await
    .map(|_| ())
}

/// Every recorded number, by stored sender key.
pub async fn recorded(c: &mut AsyncPgConnection) -> QueryResult<HashMap<String, Recorded>> {
    let rows: Vec<(String, Recorded)> = sn::table
        .select((
            sn::sender_id,
            (
                sn::display_phone_number,
                sn::quality_rating,
                sn::throughput_level,
                sn::name_status,
                sn::read_at,
            ),
        ))
        .load(c)
        .await?;
    Ok(rows.into_iter().collect())
}

/// Which sender a quality update naming `display` is about, among `candidates` (the stored
/// keys of its business account's senders).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// The sender whose display number it is (or the business's only sender, whose display
    /// number is not known yet: Warden speaks for no other number of that account).
    One(String),
    /// Every candidate's display number is known and none is this one: not ours.
    NotOurs,
    /// Some candidates' display numbers are unknown: ask the platform.
    Unknown,
}

/// See [`Match`].
pub async fn match_display(
    c: &mut AsyncPgConnection,
    candidates: &[String],
    display: &str,
) -> QueryResult<Match> {
    let wanted = digits(display);
    let known: HashMap<String, String> = sn::table
        .filter(sn::sender_id.eq_any(candidates))
        .filter(sn::display_digits.is_not_null())
        .select((sn::sender_id, sn::display_digits.assume_not_null()))
        .load::<(String, String)>(c)
        .await?
        .into_iter()
        .collect();
    if !wanted.is_empty()
        && let Some(key) = candidates
            .iter()
            .find(|k| known.get(*k).is_some_and(|d| *d == wanted))
    {
        return Ok(Match::One(key.clone()));
    }
    let unknown: Vec<&String> = candidates
        .iter()
        .filter(|k| !known.contains_key(*k))
        .collect();
    Ok(match unknown.as_slice() {
        [] => Match::NotOurs,
        [only] if candidates.len() == 1 => Match::One((*only).clone()),
        _ => Match::Unknown,
    })
}

/// Whether quality updates of `account` wait for the platform's word (a later one waits
/// behind them, so they apply in the order the platform sent them).
pub async fn has_deferred(c: &mut AsyncPgConnection, account: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        qu::table.filter(qu::account.eq(account)),
    ))
    .get_result(c)
    .await
}

/// Keep a quality update of `account` whose number Warden cannot tell yet.
pub async fn defer(
    c: &mut AsyncPgConnection,
    account: &str,
    shown: &str,
    event: &str,
) -> QueryResult<()> {
    tracing::warn!(
        account,
        display_phone_number = shown,
        event,
        "quality update for a number Warden cannot tell yet; kept until the platform says whose it is"
    );
    diesel::insert_into(qu::table)
        .values((
            qu::account.eq(account),
            qu::display_phone_number.eq(shown),
            qu::event.eq(event),
        ))
        .execute(c)
        .await
        .map(|_| ())
}

/// The accounts with quality updates waiting.
pub async fn deferred_accounts(c: &mut AsyncPgConnection) -> QueryResult<Vec<String>> {
    qu::table
        .select(qu::account)
        .distinct()
        .order(qu::account)
        .load(c)
        .await
}

/// What [`resolve_deferred`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    pub applied: usize,
    /// About a number of the account that is no sender of this deployment.
    pub not_ours: usize,
    /// Still unknown (the platform has not said yet).
    pub left: usize,
}

/// Apply the waiting quality updates of `account` whose number is known now, in arrival
/// order; stop at the first still unknown (a later one must not overtake it).
pub async fn resolve_deferred(
    c: &mut AsyncPgConnection,
    account: &str,
    candidates: &[String],
    actor: &str,
) -> QueryResult<Resolved> {
    // Locked: two replicas resolving at once apply each update once.
    let rows: Vec<(i64, String, String)> = qu::table
        .filter(qu::account.eq(account))
        .order(qu::id)
        .select((qu::id, qu::display_phone_number, qu::event))
        .for_update()
        .load(c)
        .await?;
    let mut out = Resolved::default();
    for (i, (id, shown, event)) in rows.iter().enumerate() {
        match match_display(c, candidates, shown).await? {
            Match::One(key) => {
                apply_quality_event(c, &key, event, Some(shown), actor).await?;
                out.applied += 1;
            }
            Match::NotOurs => {
                tracing::info!(account, display_phone_number = %shown, event = %event,
                    "quality update for a number of the account that is no sender of this deployment");
                out.not_ours += 1;
            }
            Match::Unknown => {
                out.left = rows.len() - i;
                break;
            }
        }
        diesel::delete(qu::table.find(id)).execute(c).await?;
    }
    Ok(out)
}

/// A quality update's effect on the number of the sender stored as `sender`: a flag
/// (FLAGGED: quality RED, the number protected; UNFLAGGED: the protection its quality set
/// lifted, the rating read again by the caller) or a throughput upgrade.
pub async fn apply_quality_event(
    c: &mut AsyncPgConnection,
    sender: &str,
    event: &str,
    display: Option<&str>,
    actor: &str,
) -> QueryResult<()> {
    match event {
        "FLAGGED" => {
            protection::protect(c, sender, "quality RED (FLAGGED)", QUALITY_FLAGGED, actor).await?;
            set_rating(c, sender, Some("RED")).await?;
        }
        "UNFLAGGED" => {
            protection::lift(c, sender, Some(QUALITY_FLAGGED), QUALITY_FLAGGED, actor).await?;
            // No longer RED; YELLOW or GREEN is the platform's to say (the caller reads it).
            diesel::update(sn::table.find(sender).filter(sn::quality_rating.eq("RED")))
                .set((
                    sn::quality_rating.eq(None::<String>),
                    sn::updated_at.eq(diesel::dsl::now),
                ))
                .execute(c)
                .await?;
        }
        _ => {
            throughput::apply_sender_quality_event(c, sender, event, display).await?;
        }
    }
    Ok(())
}

async fn set_rating(
    c: &mut AsyncPgConnection,
    sender: &str,
    rating: Option<&str>,
) -> QueryResult<()> {
    diesel::insert_into(sn::table)
        .values((sn::sender_id.eq(sender), sn::quality_rating.eq(rating)))
        .on_conflict(sn::sender_id)
        .do_update()
        .set((
            sn::quality_rating.eq(rating),
            sn::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await
        .map(|_| ())
}

impl Core {
    /// Record reads of numbers from the platform, `(stored sender key, what it said)`.
    pub async fn record_number_reads(
        &self,
        reads: &[(String, NumberFacts)],
    ) -> Result<(), CoreError> {
        if reads.is_empty() {
            return Ok(());
        }
        let mut c = self.pg().get().await?;
        let now = self.now();
        for (sender, facts) in reads {
            record_read(&mut c, sender, facts, now).await?;
        }
        Ok(())
    }

    /// The business accounts whose quality updates wait for the platform's word.
    pub async fn deferred_quality_accounts(&self) -> Result<Vec<String>, CoreError> {
        let mut c = self.pg().get().await?;
        Ok(deferred_accounts(&mut c).await?)
    }

    /// Apply what waits of `account` now that its numbers were read (see [`resolve_deferred`]).
    pub async fn resolve_deferred_quality(&self, account: &str) -> Result<Resolved, CoreError> {
        let senders = self.senders();
        let candidates: Vec<String> = senders
            .of_business(account)
            .map(|s| senders.key_of(s).sender)
            .collect();
        let actor = self.actor();
        let account = account.to_string();
        Ok(
            warden_store::tx::transact::<_, CoreError, _>(self.pg(), "resolve quality", |c| {
                let (account, candidates) = (account.clone(), candidates.clone());
                use futures::FutureExt;
                async move { Ok(resolve_deferred(c, &account, &candidates, actor).await?) }.boxed()
            })
            .await?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_numbers_compare_by_digits() {
        assert_eq!(digits("+1 555-010-0000"), "15550100000");
        assert_eq!(digits("15550100000"), "15550100000");
        assert_eq!(digits(""), "");
    }
}
