//! What Warden knows about each of its numbers (`list_senders`): the display number,
//! quality rating and name status the platform last reported for it (`sender_numbers`,
//! [`crate::account::number_facts`]), its throughput (`number_throughput`), whether it is
//! protected and why (`sender_protection`), and its portfolio's messaging limit. Read from
//! what is stored only: no platform call, never a token or a secret.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_settings::StoreKeys;
use warden_store::schema::number_throughput as nt;

use crate::account::number_facts;
use crate::account::portfolio::{self, Usage};
use crate::account::protection::{self, Protection};
use crate::account::throughput::{self, CHANNEL, Capacity};
use crate::{Core, CoreError};

pub use crate::account::protection::QUALITY_FLAGGED;

/// One sender's number as Warden knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Number {
    /// The sender's id (the senders file's order is kept).
    pub id: String,
    pub keys: StoreKeys,
    /// As the platform last showed it (a read of the number, or any webhook's metadata);
    /// `None` until it has.
    pub display_phone_number: Option<String>,
    /// The platform's latest rating (a read, or a quality flag): "RED" while the number is
    /// protected because its quality was flagged; `None` when Warden has no rating for it.
    pub quality_rating: Option<&'static str>,
    /// The review of the number's display name (APPROVED, PENDING_REVIEW, ...), as last read.
    pub name_status: Option<String>,
    /// The pace its sends go at: the platform's word, else its `mps`, else `RATE_LIMIT_MPS`.
    pub capacity: Capacity,
    /// The setting that gives the pace while the platform has said nothing.
    pub configured_by: String,
    /// Why it sends no marketing now, when it is protected.
    pub protection: Option<Protection>,
    /// Its portfolio's messaging limit and use (shared by the portfolio's numbers).
    pub usage: Usage,
}

impl Core {
    /// Every sender's number, in the senders file's order, as of `now`.
    pub async fn numbers(&self, now: DateTime<Utc>) -> Result<Vec<Number>, CoreError> {
        let senders = self.senders();
        let recorded = throughput::recorded(self.pg()).await?;
        let (displayed, facts, protections) = {
            let mut conn = self.pg().get().await?;
            let facts = number_facts::recorded(&mut conn).await?;
            let displayed: HashMap<String, String> = nt::table
                .filter(nt::channel.eq(CHANNEL))
                .filter(nt::display_phone_number.is_not_null())
                .select((nt::sender, nt::display_phone_number.assume_not_null()))
                .load::<(String, String)>(&mut conn)
                .await?
                .into_iter()
                .collect();
            let protections: HashMap<String, Protection> = protection::all(&mut conn)
                .await?
                .into_iter()
                .map(|p| (p.sender_id.clone(), p))
                .collect();
            (displayed, facts, protections)
        };
        // One read per portfolio: its numbers share the limit.
        let mut usages: HashMap<String, Usage> = HashMap::new();
        let mut out = Vec::with_capacity(senders.len());
        for sender in senders.all() {
            let keys = senders.key_of(sender);
            let usage = match usages.get(&keys.portfolio) {
                Some(u) => u.clone(),
                None => {
                    let u = portfolio::current_usage(self.pg(), &keys.portfolio, now).await?;
                    usages.insert(keys.portfolio.clone(), u.clone());
                    u
                }
            };
            let rate = self.settings().rate_limit_mps;
            let (setting, configured_by) = match sender.mps {
                Some(mps) => (
                    mps,
                    format!("senders file: mps {mps} of sender {}", sender.id),
                ),
                None => (rate, format!("RATE_LIMIT_MPS={rate}")),
            };
            let protection = protections.get(&keys.sender).cloned();
            let known = facts.get(&keys.sender);
            let flagged = protection
                .as_ref()
                .is_some_and(|p| p.source == QUALITY_FLAGGED);
            out.push(Number {
                id: sender.id.clone(),
                display_phone_number: known
                    .and_then(|f| f.display_phone_number.clone())
                    .or_else(|| displayed.get(&keys.sender).cloned()),
                quality_rating: if flagged {
                    Some("RED")
                } else {
                    known.and_then(|f| f.quality_rating.as_deref()).map(rating)
                },
                name_status: known.and_then(|f| f.name_status.clone()),
                capacity: Capacity::of(recorded.get(&keys.sender), setting),
                configured_by,
                protection,
                usage,
                keys,
            });
        }
        Ok(out)
    }
}

/// The platform's rating as one of its known names (anything else reads UNKNOWN).
fn rating(r: &str) -> &'static str {
    match r {
        "GREEN" => "GREEN",
        "YELLOW" => "YELLOW",
        "RED" => "RED",
        "NA" => "NA",
        _ => "UNKNOWN",
    }
}
