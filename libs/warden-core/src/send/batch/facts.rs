//! The batch's reads: every fact the decision of a chunk's recipients needs, in a few
//! set-based queries (one per kind of fact and business, number or portfolio) instead of
//! one per recipient. With `lock`, inside the chunk's transaction: the chunk's customer
//! rows are locked in phone order (created on first sight, as `customers::ensure_locked`
//! does) and each portfolio's `portfolio_limit` row is locked the way
//! `account::portfolio::admit` locks it, so single sends to the same customers and other
//! chunks are judged one after the other. Without `lock` (the preview) nothing is locked
//! or written.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::kinds::Category;
use warden_rules::platform_limits::WINDOW;
use warden_rules::policy::PolicySet;
use warden_store::models::{Conversation, Customer};
use warden_store::schema::{conversations, customers, message_frequencies};

use super::Target;
use super::judge::Reach;
use crate::customers::consent::{self, Consent};

/// Messages of a category counted inside the policy's window, and the oldest of them.
type Counted = (u32, Option<DateTime<Utc>>);

/// The facts of one chunk, keyed by the stored keys and the customer's phone digits.
#[derive(Default)]
pub(super) struct ChunkFacts {
    pub(super) customers: HashMap<String, Customer>,
    /// By (business, phone).
    pub(super) consent: HashMap<(String, String), Consent>,
    /// By (sender, phone).
    pub(super) conversations: HashMap<(String, String), Conversation>,
    /// By (business, phone): messages of the category inside the policy's window, oldest.
    pub(super) recent: HashMap<(String, String), Counted>,
    /// By sender: the refusal of a protected number's marketing.
    pub(super) protection: HashMap<String, Decision>,
    /// Customers already given a message of the campaign (by another run of this page).
    pub(super) already: HashSet<String>,
}

fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    items.filter(|s| seen.insert(*s)).collect()
}

/// Read the facts of `targets` (distinct customers) for a message of `category`.
#[allow(clippy::too_many_arguments)] // the chunk's shared facts, each read once
pub(super) async fn read(
    c: &mut AsyncPgConnection,
    policies: &PolicySet,
    targets: &[Target],
    channel: &str,
    category: Category,
    campaign_id: Option<Uuid>,
    now: DateTime<Utc>,
    lock: bool,
) -> QueryResult<ChunkFacts> {
    let mut facts = ChunkFacts::default();
    if targets.is_empty() {
        return Ok(facts);
    }
    let mut phones: Vec<&str> = targets.iter().map(|t| t.phone.digits()).collect();
    phones.sort_unstable();
    // 1. The customer rows, locked in a stable order (no deadlock between chunks, and a
    //    single send to one of them waits for the chunk's commit, or the chunk for it).
    let query = customers::table
        .filter(customers::phone.eq_any(&phones))
        .order(customers::phone)
        .select(Customer::as_select());
    let rows: Vec<Customer> = if lock {
        query.for_update().load(c).await?
    } else {
        query.load(c).await?
    };
    facts.customers = rows.into_iter().map(|r| (r.phone.clone(), r)).collect();
    if lock {
        for t in targets {
            if !facts.customers.contains_key(t.phone.digits()) {
                let row = crate::customers::ensure_locked(c, &t.phone).await?;
                facts.customers.insert(row.phone.clone(), row);
            }
        }
    }
    // 2. Who already has a message of the campaign (idempotency of a page read twice).
    //    A range of the (campaign_id, customer_phone) index over the chunk's phones, kept
    //    to the chunk's own in Rust: with `= ANY(phones)` the planner could pick the
    //    (campaign_id, status) index and read every message of the campaign so far, for
    //    every chunk.
    if let (Some(id), Some(first), Some(last)) = (
        campaign_id,
        phones.as_slice().first(),
        phones.as_slice().last(),
    ) {
        let rows: Vec<PhoneRow> = diesel::sql_query(
            "SELECT DISTINCT customer_phone AS phone FROM messages
             WHERE campaign_id = $1 AND customer_phone BETWEEN $2 AND $3",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(*first)
        .bind::<Text, _>(*last)
        .load(c)
        .await?;
        let chunk: HashSet<&str> = phones.iter().copied().collect();
        facts.already = rows
            .into_iter()
            .map(|r| r.phone)
            .filter(|p| chunk.contains(p.as_str()))
            .collect();
    }
    // 3. Consent, per business.
    for business in distinct(targets.iter().map(|t| t.keys.business.as_str())) {
        let mine: Vec<&Customer> = targets
            .iter()
            .filter(|t| t.keys.business == business)
            .filter_map(|t| facts.customers.get(t.phone.digits()))
            .collect();
        for (phone, consent) in consent::of_many(c, business, &mine).await? {
            facts.consent.insert((business.to_string(), phone), consent);
        }
    }
    // 4. The care window (and its holder), per number.
    for sender in distinct(targets.iter().map(|t| t.keys.sender.as_str())) {
        let mine: Vec<&str> = targets
            .iter()
            .filter(|t| t.keys.sender == sender)
            .map(|t| t.phone.digits())
            .collect();
        let rows: Vec<Conversation> = conversations::table
            .filter(conversations::customer_phone.eq_any(&mine))
            .filter(conversations::channel.eq(channel))
            .filter(conversations::sender_id.eq(sender))
            .select(Conversation::as_select())
            .load(c)
            .await?;
        for row in rows {
            facts
                .conversations
                .insert((sender.to_string(), row.customer_phone.clone()), row);
        }
    }
    // 5. The frequency counts, per business (caps count across its numbers).
    if let Some(limit) = policies.frequency_limit(category) {
        let since = now - limit.window;
        for business in distinct(targets.iter().map(|t| t.keys.business.as_str())) {
            let mine: Vec<&str> = targets
                .iter()
                .filter(|t| t.keys.business == business)
                .map(|t| t.phone.digits())
                .collect();
            let rows: Vec<(String, i64, Option<DateTime<Utc>>)> = message_frequencies::table
                .filter(message_frequencies::customer_phone.eq_any(&mine))
                .filter(message_frequencies::business.eq(business))
                .filter(message_frequencies::category.eq(category.as_str()))
                .filter(message_frequencies::counted_at.gt(since))
                .group_by(message_frequencies::customer_phone)
                .select((
                    message_frequencies::customer_phone,
                    diesel::dsl::count_star(),
                    diesel::dsl::min(message_frequencies::counted_at),
                ))
                .load(c)
                .await?;
            for (phone, n, oldest) in rows {
                let n = u32::try_from(n).unwrap_or(u32::MAX);
                facts
                    .recent
                    .insert((business.to_string(), phone), (n, oldest));
            }
        }
    }
    // 6. A protected number sends no marketing (read once per number of the chunk).
    if category == Category::Marketing {
        let mut read = HashSet::new();
        for t in targets {
            if !read.insert(t.keys.sender.as_str()) {
                continue;
            }
            if let Some(p) = crate::account::protection::of(c, &t.keys.sender).await? {
                let refusal = crate::account::protection::refusal(&t.sender_id, &p);
                facts.protection.insert(t.keys.sender.clone(), refusal);
            }
        }
    }
    Ok(facts)
}

#[derive(diesel::QueryableByName)]
struct PhoneRow {
    #[diesel(sql_type = Text)]
    phone: String,
}

#[derive(diesel::QueryableByName)]
struct LimitRow {
    #[diesel(sql_type = Nullable<diesel::sql_types::Int4>)]
    unique_users: Option<i32>,
}

#[derive(diesel::QueryableByName)]
struct ReachedRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<DateTime<Utc>>,
}

/// The messaging limit of `portfolio` as `account::portfolio::admit` reads it, for
/// `phones` (the chunk's business-initiated candidates). With `lock` the limit row is
/// locked (concurrent sends at limit - 1 queue on it). Only a finite limit counts anything:
/// without one nothing else is read.
pub(super) async fn reach(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    phones: &[&str],
    now: DateTime<Utc>,
    lock: bool,
) -> QueryResult<Reach> {
    let sql = if lock {
        "UPDATE portfolio_limit SET checked_at = $1
         WHERE portfolio = $2 AND tier IS NOT NULL AND unique_users IS NOT NULL
         RETURNING unique_users"
    } else {
        "SELECT unique_users FROM portfolio_limit
         WHERE $1::timestamptz IS NOT NULL AND portfolio = $2
           AND tier IS NOT NULL AND unique_users IS NOT NULL"
    };
    let limit: Option<LimitRow> = diesel::sql_query(sql)
        .bind::<Timestamptz, _>(now)
        .bind::<Text, _>(portfolio)
        .get_result(c)
        .await
        .optional()?;
    let Some(max) = limit.and_then(|l| l.unique_users) else {
        return Ok(Reach::default());
    };
    let since = now - WINDOW;
    let reached: ReachedRow = diesel::sql_query(
        "SELECT count(*) AS n, min(reached_at) AS oldest FROM portfolio_reach
         WHERE portfolio = $2 AND reached_at > $1",
    )
    .bind::<Timestamptz, _>(since)
    .bind::<Text, _>(portfolio)
    .get_result(c)
    .await?;
    let mut r = Reach {
        limit: Some(u32::try_from(max).unwrap_or(u32::MAX)),
        used: u64::try_from(reached.n).unwrap_or(0),
        oldest: reached.oldest,
        reached: HashSet::new(),
    };
    reached_among(c, portfolio, phones, now, &mut r).await?;
    Ok(r)
}

/// Add to `r` which of `phones` the portfolio reached in the last 24 h (nothing to read
/// without a finite limit: then nothing is counted).
pub(super) async fn reached_among(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    phones: &[&str],
    now: DateTime<Utc>,
    r: &mut Reach,
) -> QueryResult<()> {
    if r.limit.is_none() {
        return Ok(());
    }
    let known: Vec<PhoneRow> = diesel::sql_query(
        "SELECT customer_phone AS phone FROM portfolio_reach
         WHERE portfolio = $1 AND customer_phone = ANY($2) AND reached_at > $3",
    )
    .bind::<Text, _>(portfolio)
    .bind::<Array<Text>, _>(phones)
    .bind::<Timestamptz, _>(now - WINDOW)
    .load(c)
    .await?;
    r.reached.extend(known.into_iter().map(|k| k.phone));
    Ok(())
}
