//! A business number's throughput as the platform set it (`number_throughput`, one row
//! per channel): a `phone_number_quality_update` with `THROUGHPUT_UPGRADE` raises it to
//! 1,000 mps, a number read from the platform in coexistence with the WhatsApp Business
//! app is capped at 20 mps (`warden_rules::throughput`). The dispatcher's bucket reads the
//! current capacity ([`current`]) every few seconds, so a change needs no restart.
//!
//! Kept apart from the messaging-limit tiers the same webhook carries: this module only
//! reads its throughput part.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_rules::throughput::{self as rule, CapacitySource, NumberThroughput};
use warden_store::PgPool;
use warden_store::error::DbError;
use warden_store::schema::number_throughput as nt;

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

/// Apply a `phone_number_quality_update`'s throughput part in the webhook's transaction.
/// Returns whether it changed anything. Coexistence stays as it was (it caps an upgrade).
pub async fn apply_quality_event(
    c: &mut AsyncPgConnection,
    event: &str,
    display_phone_number: Option<&str>,
) -> QueryResult<bool> {
    if throughput_change(event).is_none() {
        return Ok(false);
    }
    let n = diesel::insert_into(nt::table)
        .values((
            nt::channel.eq(CHANNEL),
            nt::high_throughput.eq(true),
            nt::source.eq(format!(
                "webhook phone_number_quality_update {}",
                rule::UPGRADE_EVENT
            )),
            nt::display_phone_number.eq(display_phone_number),
        ))
        .on_conflict(nt::channel)
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

/// What a read of the number from the platform said (`throughput.level`,
/// `is_on_biz_app`). A number with nothing but defaults and no row yet writes nothing
/// (no row keeps `RATE_LIMIT_MPS`); otherwise the row follows the platform.
pub async fn record_number(
    pg: &PgPool,
    high: bool,
    coexistence: bool,
    display_phone_number: Option<&str>,
) -> Result<(), DbError> {
    let mut c = pg.get().await?;
    let exists: Option<String> = nt::table
        .find(CHANNEL)
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
            nt::high_throughput.eq(high),
            nt::coexistence.eq(coexistence),
            nt::source.eq(source),
            nt::display_phone_number.eq(display_phone_number),
        ))
        .on_conflict(nt::channel)
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

/// The number's capacity now: the platform's word when it said something, else
/// `setting_mps` (`RATE_LIMIT_MPS`).
pub async fn current(pg: &PgPool, setting_mps: u32) -> Result<Capacity, DbError> {
    let mut c = pg.get().await?;
    let row: Option<(bool, bool, String, DateTime<Utc>)> = nt::table
        .find(CHANNEL)
        .select((
            nt::high_throughput,
            nt::coexistence,
            nt::source,
            nt::updated_at,
        ))
        .first(&mut c)
        .await
        .optional()?;
    let known = row
        .as_ref()
        .map(|(high, coexistence, _, _)| NumberThroughput {
            high: *high,
            coexistence: *coexistence,
        });
    let (mps, source) = rule::capacity(known, setting_mps);
    Ok(Capacity {
        mps,
        source,
        detail: row.as_ref().map(|r| r.2.clone()),
        updated_at: row.map(|r| r.3),
    })
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
