//! A business number's throughput as the platform set it (`number_throughput`, one row
//! per channel and sender, the sender by its stored key: `default` for the default
//! sender): a `phone_number_quality_update` with `THROUGHPUT_UPGRADE` raises it to
//! 1,000 mps, a number read from the platform in coexistence with the WhatsApp Business
//! app is capped at 20 mps (`warden_rules::throughput`). The dispatcher's buckets, one per
//! sender, read the current capacities ([`recorded`]) every few seconds, so a change needs
//! no restart.
//!
//! Kept apart from the messaging-limit tiers the same webhook carries: this module only
//! reads its throughput part.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_rules::throughput::{self as rule, CapacitySource, NumberThroughput};
use warden_store::PgPool;
use warden_store::error::DbError;
use warden_store::schema::number_throughput as nt;

use warden_settings::STORED_DEFAULT;

/// The channel of Warden's business number (the one the messages table names).
pub const CHANNEL: &str = "whatsapp";

/// A number's capacity now, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub mps: u32,
    pub source: CapacitySource,
    /// The stored detail of the last change (`webhook THROUGHPUT_UPGRADE`, ...).
    pub detail: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// The throughput part of a `phone_number_quality_update`: only `THROUGHPUT_UPGRADE`
/// changes it (messaging-limit events are someone else's).
pub fn throughput_change(event: &str) -> Option<NumberThroughput> {
    rule::is_upgrade_event(event).then_some(NumberThroughput {
        high: true,
        coexistence: false,
    })
}

/// Apply a `phone_number_quality_update`'s throughput part in the webhook's transaction,
/// for the number of the sender stored as `sender`. Returns whether it changed anything.
/// Coexistence stays as it was (it caps an upgrade).
pub async fn apply_sender_quality_event(
    c: &mut AsyncPgConnection,
    sender: &str,
    event: &str,
    display_phone_number: Option<&str>,
) -> QueryResult<bool> {
    if throughput_change(event).is_none() {
        return Ok(false);
    }
    let n = diesel::insert_into(nt::table)
        .values((
            nt::channel.eq(CHANNEL),
            nt::sender.eq(sender),
            nt::high_throughput.eq(true),
            nt::source.eq(format!(
                "webhook phone_number_quality_update {}",
                rule::UPGRADE_EVENT
            )),
            nt::display_phone_number.eq(display_phone_number),
        ))
        .on_conflict((nt::channel, nt::sender))
        .do_update()
        .set((
            nt::high_throughput.eq(true),
            nt::source.eq(excluded(nt::source)),
            nt::display_phone_number.eq(diesel::dsl::sql::<
                diesel::sql_types::Nullable<diesel::sql_types::Text>,
            >(
                "COALESCE(excluded.display_phone_number, number_throughput.display_phone_number)",
            )),
            nt::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
    Ok(n > 0)
}

/// Which of `candidates` (the stored keys of one business account's senders) a
/// `phone_number_quality_update` naming `display_phone_number` is about: the only one, else
/// the one whose number was recorded with that display number; None when that is unknown.
pub async fn sender_of_display(
    c: &mut AsyncPgConnection,
    candidates: &[String],
    display_phone_number: Option<&str>,
) -> QueryResult<Option<String>> {
    if let [only] = candidates {
        return Ok(Some(only.clone()));
    }
    let Some(display) = display_phone_number else {
        return Ok(None);
    };
    nt::table
        .filter(nt::channel.eq(CHANNEL))
        .filter(nt::sender.eq_any(candidates))
        .filter(nt::display_phone_number.eq(display))
        .select(nt::sender)
        .first(c)
        .await
        .optional()
}

/// What a read of the number of the sender stored as `sender` from the platform said
/// (`throughput.level`, `is_on_biz_app`). A number with nothing but defaults and no row
/// yet writes nothing (no row keeps the sender's configured rate); otherwise the row
/// follows the platform.
pub async fn record_number(
    pg: &PgPool,
    sender: &str,
    high: bool,
    coexistence: bool,
    display_phone_number: Option<&str>,
) -> Result<(), DbError> {
    let mut c = pg.get().await?;
    // The display number read is what quality updates are matched on.
    if let Some(display) = display_phone_number.filter(|d| !d.is_empty()) {
        crate::account::displays::learn_displays(
            &mut c,
            &[(sender.to_string(), display.to_string())],
        )
        .await?;
    }
    let exists: Option<String> = nt::table
        .find((CHANNEL, sender))
        .select(nt::channel)
        .first(&mut c)
        .await
        .optional()?;
    if exists.is_none() && !high && !coexistence {
        return Ok(());
    }
    let source = if coexistence {
        "platform phone number is_on_biz_app"
    } else {
        "platform phone number throughput.level"
    };
    diesel::insert_into(nt::table)
        .values((
            nt::channel.eq(CHANNEL),
            nt::sender.eq(sender),
            nt::high_throughput.eq(high),
            nt::coexistence.eq(coexistence),
            nt::source.eq(source),
            nt::display_phone_number.eq(display_phone_number),
        ))
        .on_conflict((nt::channel, nt::sender))
        .do_update()
        .set((
            // An upgrade is never taken back by a read that lags behind its webhook.
            nt::high_throughput.eq(diesel::dsl::sql::<diesel::sql_types::Bool>(
                "number_throughput.high_throughput OR excluded.high_throughput",
            )),
            nt::coexistence.eq(excluded(nt::coexistence)),
            nt::source.eq(diesel::dsl::sql::<diesel::sql_types::Text>(
                "CASE WHEN number_throughput.high_throughput = (number_throughput.high_throughput OR excluded.high_throughput) \
                      AND number_throughput.coexistence = excluded.coexistence \
                 THEN number_throughput.source ELSE excluded.source END",
            )),
            nt::updated_at.eq(diesel::dsl::now),
        ))
        .execute(&mut c)
        .await?;
    Ok(())
}

/// What is recorded about one sender's number (a row of `number_throughput`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub throughput: NumberThroughput,
    /// Where the last change came from.
    pub source: String,
    pub updated_at: DateTime<Utc>,
}

impl Capacity {
    /// The capacity of a number: the platform's word when something is `recorded`, else
    /// `setting_mps` (the sender's `mps`, else `RATE_LIMIT_MPS`).
    pub fn of(recorded: Option<&Recorded>, setting_mps: u32) -> Capacity {
        let (mps, source) = rule::capacity(recorded.map(|r| r.throughput), setting_mps);
        Capacity {
            mps,
            source,
            detail: recorded.map(|r| r.source.clone()),
            updated_at: recorded.map(|r| r.updated_at),
        }
    }
}

/// The default sender's number's capacity now (see [`current_for`]).
pub async fn current(pg: &PgPool, setting_mps: u32) -> Result<Capacity, DbError> {
    current_for(pg, STORED_DEFAULT, setting_mps).await
}

/// The capacity now of the number of the sender stored as `sender`: the platform's word
/// when it said something, else `setting_mps`.
pub async fn current_for(pg: &PgPool, sender: &str, setting_mps: u32) -> Result<Capacity, DbError> {
    let mut c = pg.get().await?;
    let row = nt::table
        .find((CHANNEL, sender))
        .select(RECORDED)
        .first::<RecordedRow>(&mut c)
        .await
        .optional()?;
    Ok(Capacity::of(row.map(Recorded::from).as_ref(), setting_mps))
}

/// Every sender's recorded number, by stored sender key (one query, for the dispatcher's
/// periodic refresh of all its buckets).
pub async fn recorded(pg: &PgPool) -> Result<HashMap<String, Recorded>, DbError> {
    let mut c = pg.get().await?;
    let rows = nt::table
        .filter(nt::channel.eq(CHANNEL))
        .select((nt::sender, RECORDED))
        .load::<(String, RecordedRow)>(&mut c)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(sender, row)| (sender, Recorded::from(row)))
        .collect())
}

type RecordedRow = (bool, bool, String, DateTime<Utc>);

const RECORDED: (
    nt::high_throughput,
    nt::coexistence,
    nt::source,
    nt::updated_at,
) = (
    nt::high_throughput,
    nt::coexistence,
    nt::source,
    nt::updated_at,
);

impl From<RecordedRow> for Recorded {
    fn from((high, coexistence, source, updated_at): RecordedRow) -> Self {
        Recorded {
            throughput: NumberThroughput { high, coexistence },
            source,
            updated_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_upgrade_event_is_a_throughput_change() {
        assert_eq!(
            throughput_change("THROUGHPUT_UPGRADE"),
            Some(NumberThroughput {
                high: true,
                coexistence: false
            })
        );
        for other in ["UPGRADE", "DOWNGRADE", "FLAGGED", ""] {
            assert_eq!(throughput_change(other), None, "{other}");
        }
    }
}
