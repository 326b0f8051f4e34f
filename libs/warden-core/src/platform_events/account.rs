//! What the platform says of the business account's numbers, through the webhook: every
//! event naming one of our numbers shows its display number ([`learn_displays`]); a
//! `phone_number_quality_update` or `business_capability_update` is stored as it came and
//! its messaging limit learnt ([`Quality`]); a quality flag or a throughput upgrade is
//! applied to exactly the number it names (`crate::account::number_facts`): FLAGGED
//! protects the number, UNFLAGGED lifts that protection and has its rating read again.

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::Value;
use warden_settings::Senders;

use super::kept::{self, QualityUpdate};
use super::{Context, Effects, Event, Origin};
use crate::account::{number_facts, throughput};

/// A phone-number quality / limit change.
#[derive(Clone, Debug)]
pub struct QualityReport<'a> {
    pub event: &'a str,
    pub current_limit: Option<&'a str>,
    pub display_phone_number: Option<&'a str>,
    /// The update as received.
    pub payload: &'a Value,
}

/// Learn the display number of every sender `events` name, before anything else of the
/// batch, so a quality update later in it can already be matched by it.
pub async fn learn_displays(
    c: &mut AsyncPgConnection,
    senders: &Senders,
    events: &[Event<'_>],
) -> QueryResult<()> {
    let mut displays: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| {
            let sender = senders.by_phone_number_id(e.origin.number?)?;
            Some((senders.key_of(sender).sender, e.origin.display?.to_string()))
        })
        .collect();
    displays.sort_unstable();
    displays.dedup_by(|a, b| a.0 == b.0);
    number_facts::learn_displays(c, &displays).await?;
    Ok(())
}

/// A batch's quality updates: each number's part applied in its place, every update stored
/// in one statement at the end ([`Quality::finish`]).
#[derive(Default)]
pub struct Quality<'a> {
    kept: Vec<QualityUpdate<'a>>,
}

impl<'a> Quality<'a> {
    pub async fn apply(
        &mut self,
        c: &mut AsyncPgConnection,
        ctx: &Context<'a>,
        origin: Origin<'a>,
        q: &QualityReport<'a>,
        effects: &mut Effects,
    ) -> QueryResult<bool> {
        if is_about_one_number(q.event) {
            apply_to_number(c, ctx, origin, q, effects).await?;
        }
        self.kept.push(QualityUpdate {
            event: q.event,
            current_limit: q.current_limit,
            display_phone_number: q.display_phone_number,
            portfolio: origin.portfolio(ctx.senders),
            payload: q.payload,
        });
        Ok(true)
    }

    /// Store the batch's updates and learn their messaging limits.
    pub async fn finish(self, c: &mut AsyncPgConnection) -> QueryResult<()> {
        kept::record_quality(c, &self.kept).await
    }
}

/// An update's throughput part (THROUGHPUT_UPGRADE) and its flag belong to one number;
/// tiers are the portfolio's, read apart. Only those two look the number up.
fn is_about_one_number(event: &str) -> bool {
    throughput::throughput_change(event).is_some() || matches!(event, "FLAGGED" | "UNFLAGGED")
}

/// A flag or throughput upgrade, on exactly the number it names by display number
/// (`number_facts::match_display`) among its business account's senders (an account of
/// no sender is the default sender's). When Warden cannot tell which (or updates of the
/// account already wait), it is kept and the platform asked after the commit; one about a
/// number that is no sender is not applied.
async fn apply_to_number(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    origin: Origin<'_>,
    q: &QualityReport<'_>,
    effects: &mut Effects,
) -> QueryResult<()> {
    let senders = ctx.senders;
    let account = origin.account;
    let mut candidates: Vec<String> = senders
        .of_business(account)
        .map(|s| senders.key_of(s).sender)
        .collect();
    if candidates.is_empty() {
        candidates.push(origin.keys(senders).sender);
    }
    let Some(shown) = q.display_phone_number else {
        if let [only] = candidates.as_slice() {
            return number_facts::apply_quality_event(c, only, q.event, None, ctx.actor).await;
        }
        tracing::warn!(account, event = %q.event,
            "quality update names no display number; not applied");
        return Ok(());
    };
    let waiting = number_facts::has_deferred(c, account).await?;
    let found = if waiting {
        number_facts::Match::Unknown
    } else {
        number_facts::match_display(c, &candidates, shown).await?
    };
    match found {
        number_facts::Match::One(key) => {
            number_facts::apply_quality_event(c, &key, q.event, Some(shown), ctx.actor).await?;
            if q.event == "UNFLAGGED" {
                effects.ask_senders.insert(key);
            }
        }
        number_facts::Match::NotOurs => {
            tracing::info!(account, display_phone_number = %shown, event = %q.event,
                "quality update for a number of the account that is no sender of this deployment");
        }
        number_facts::Match::Unknown => {
            number_facts::defer(c, account, shown, q.event).await?;
            effects.ask_accounts.insert(account.to_string());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_flags_and_throughput_upgrades_name_one_number() {
        assert!(is_about_one_number("FLAGGED"));
        assert!(is_about_one_number("UNFLAGGED"));
        assert!(is_about_one_number("THROUGHPUT_UPGRADE"));
        assert!(!is_about_one_number("UPGRADE"));
        assert!(!is_about_one_number("DOWNGRADE"));
        assert!(!is_about_one_number(super::super::CAPABILITY_EVENT));
    }
}
