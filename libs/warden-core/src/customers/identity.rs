//! Customer identity: phone numbers, BSUIDs, parent BSUIDs and usernames.
//!
//! A customer's key (`customers.phone`, and `customer_phone` everywhere) is its canonical
//! phone digits when known, else its BSUID. `bsuid`, `parent_bsuid` and `username` are
//! columns of the customer (the first two unique). [`resolve`] maps any identifier a
//! caller or the platform gives to the key, so every rule (window, opt-out, caps,
//! suppression) applies to the customer whatever identifier was used. [`link`] records
//! the identifiers a webhook carries together; when a phone and a BSUID name two
//! existing customers, [`merge`] folds the BSUID customer into the phone customer in the
//! caller's transaction (stricter consent wins, history moves, an audit row says so).
//!
//! A BSUID belongs to a business portfolio (the same person has another one in another
//! portfolio): the default sender's portfolio keeps it in `customers.bsuid`, another
//! portfolio's are rows of `portfolio_bsuids`. Every one of them resolves to the customer;
//! a message is addressed with the BSUID of the portfolio it goes out from
//! ([`address_for`]).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use warden_rules::bsuid::Bsuid;
use warden_rules::phone::PhoneNumber;
use warden_store::models::Customer;
use warden_store::schema::customers;

use crate::customers::ensure_locked;

/// Longest username kept (the platform's are far shorter).
pub const MAX_USERNAME: usize = 64;

/// The identifiers one webhook (or import row) carries for one user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub phone: Option<PhoneNumber>,
    pub bsuid: Option<Bsuid>,
    pub parent_bsuid: Option<Bsuid>,
    pub username: Option<String>,
}

impl Identity {
    /// The key these identifiers name before any lookup: the phone, else the BSUID, else
    /// the parent BSUID. None when there is no identifier at all.
    pub fn key(&self) -> Option<PhoneNumber> {
        self.phone
            .clone()
            .or_else(|| self.bsuid.as_ref().map(Bsuid::key))
            .or_else(|| self.parent_bsuid.as_ref().map(Bsuid::key))
    }

    /// True when there is a BSUID, parent BSUID or username to record.
    pub fn has_extra(&self) -> bool {
        self.bsuid.is_some() || self.parent_bsuid.is_some() || self.username.is_some()
    }
}

/// The identifiers of a customer, as tools show them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Identifiers {
    /// Canonical digits; None for a customer known by BSUID only.
    pub phone: Option<String>,
    pub bsuid: Option<String>,
    pub parent_bsuid: Option<String>,
    pub username: Option<String>,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = Text)]
    phone: String,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = Nullable<Text>)]
    bsuid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    parent_bsuid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    username: Option<String>,
}

/// The key of the customer `id` names. A phone is its own key (a customer whose phone is
/// known is always keyed by it); a BSUID or parent BSUID maps to the customer that holds
/// it, else to itself (a customer not seen yet).
pub async fn resolve(c: &mut AsyncPgConnection, id: &PhoneNumber) -> QueryResult<PhoneNumber> {
    if !id.is_bsuid() {
        return Ok(id.clone());
    }
    Ok(find_by_bsuid(c, id.digits())
        .await?
        .and_then(|k| warden_rules::bsuid::customer_key(&k).ok())
        .unwrap_or_else(|| id.clone()))
}

/// The key of the customer holding `bsuid` as key, BSUID (of any portfolio) or parent
/// BSUID.
async fn find_by_bsuid(c: &mut AsyncPgConnection, bsuid: &str) -> QueryResult<Option<String>> {
    Ok(diesel::sql_query(
        "SELECT phone, (phone = $1) AS exact FROM customers \
         WHERE phone = $1 OR bsuid = $1 OR parent_bsuid = $1 \
         UNION ALL SELECT customer_phone, false FROM portfolio_bsuids WHERE bsuid = $1 \
         ORDER BY exact DESC LIMIT 1",
    )
    .bind::<Text, _>(bsuid)
    .get_result::<KeyRow>(c)
    .await
    .optional()?
    .map(|r| r.phone))
}

/// The identifiers of the customer keyed `key` (phone null for a BSUID key).
pub async fn identifiers(c: &mut AsyncPgConnection, key: &PhoneNumber) -> QueryResult<Identifiers> {
    let row =
        diesel::sql_query("SELECT bsuid, parent_bsuid, username FROM customers WHERE phone = $1")
            .bind::<Text, _>(key.digits())
            .get_result::<IdRow>(c)
            .await
            .optional()?;
    let (bsuid, parent_bsuid, username) = row
        .map(|r| (r.bsuid, r.parent_bsuid, r.username))
        .unwrap_or_default();
    Ok(Identifiers {
        phone: key.phone_digits().map(str::to_owned),
        bsuid: bsuid.or_else(|| key.bsuid().map(str::to_owned)),
        parent_bsuid,
        username,
    })
}

/// [`address_for`] on a pooled connection, for a message going out from a number of the
/// portfolio stored as `portfolio`; no query for a phone key. A customer the number cannot
/// reach (the send path refuses those) is addressed by its key, for the platform to answer.
pub async fn send_address_on(
    pg: &warden_store::PgPool,
    portfolio: &str,
    key: &str,
) -> Result<Address, crate::CoreError> {
    if !warden_rules::bsuid::looks_like_bsuid(key) {
        return Ok(Address::Phone(key.to_owned()));
    }
    let mut conn = pg.get().await?;
    Ok(address_for(&mut conn, portfolio, key)
        .await?
        .unwrap_or_else(|| Address::Recipient(key.to_owned())))
}

/// How a send is addressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// `to`: phone digits.
    Phone(String),
    /// `recipient`: a BSUID or parent BSUID.
    Recipient(String),
}

/// Record the identifiers `id` carries together, its BSUID as one of the portfolio stored
/// as `portfolio` (the one of the number the webhook came to), and return the customer's
/// key (created if new). A phone and a BSUID that name two existing customers are merged
/// into the phone's. Runs in the caller's transaction.
pub async fn link(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    id: &Identity,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<Option<PhoneNumber>> {
    let Some(naive) = id.key() else {
        return Ok(None);
    };
    if !id.has_extra() {
        return Ok(Some(naive));
    }
    // Every other customer these BSUIDs already name.
    let mut others: Vec<String> = Vec::new();
    for b in [id.bsuid.as_ref(), id.parent_bsuid.as_ref()]
        .into_iter()
        .flatten()
    {
        if let Some(k) = find_by_bsuid(c, b.as_str()).await?
            && !others.contains(&k)
        {
            others.push(k);
        }
    }
    let key = match &id.phone {
        Some(phone) => phone.clone(),
        // Phone-less: the customer the BSUID already names, else a new one keyed by it.
        None => <[String]>::first(&others)
            .and_then(|k| warden_rules::bsuid::customer_key(k).ok())
            .unwrap_or(naive),
    };
    for other in others.iter().filter(|k| k.as_str() != key.digits()) {
        if let Ok(other) = warden_rules::bsuid::customer_key(other) {
            merge(c, &other, &key, at, actor).await?;
        }
    }
    ensure_locked(c, &key).await?;
    let username = id
        .username
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(|u| u.chars().take(MAX_USERNAME).collect::<String>());
    // Another portfolio's BSUID is kept beside the customer, not in its `bsuid`.
    let own_bsuid = match &id.bsuid {
        Some(b) if !warden_settings::is_stored_default(portfolio) => {
            record_portfolio_bsuid(c, portfolio, b, &key).await?;
            None
        }
        other => other.as_ref(),
    };
    diesel::sql_query(
        "UPDATE customers SET bsuid = COALESCE($2, bsuid), \
         parent_bsuid = COALESCE($3, parent_bsuid), username = COALESCE($4, username), \
         updated_at = now() WHERE phone = $1 AND (bsuid IS DISTINCT FROM COALESCE($2, bsuid) \
         OR parent_bsuid IS DISTINCT FROM COALESCE($3, parent_bsuid) \
         OR username IS DISTINCT FROM COALESCE($4, username))",
    )
    .bind::<Text, _>(key.digits())
    .bind::<Nullable<Text>, _>(own_bsuid.map(Bsuid::as_str))
    .bind::<Nullable<Text>, _>(id.parent_bsuid.as_ref().map(Bsuid::as_str))
    .bind::<Nullable<Text>, _>(username)
    .execute(c)
    .await?;
    Ok(Some(key))
}

/// `bsuid` is the BSUID of the customer keyed `key` in the portfolio stored as `portfolio`
/// (not the default sender's): it replaces the one recorded for that portfolio.
async fn record_portfolio_bsuid(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    bsuid: &Bsuid,
    key: &PhoneNumber,
) -> QueryResult<()> {
    diesel::sql_query(
        "DELETE FROM portfolio_bsuids WHERE portfolio = $1 AND customer_phone = $3 AND bsuid <> $2",
    )
    .bind::<Text, _>(portfolio)
    .bind::<Text, _>(bsuid.as_str())
    .bind::<Text, _>(key.digits())
    .execute(c)
    .await?;
    diesel::sql_query(
        "INSERT INTO portfolio_bsuids (portfolio, bsuid, customer_phone) VALUES ($1, $2, $3) \
         ON CONFLICT (bsuid) DO UPDATE SET portfolio = EXCLUDED.portfolio, \
           customer_phone = EXCLUDED.customer_phone",
    )
    .bind::<Text, _>(portfolio)
    .bind::<Text, _>(bsuid.as_str())
    .bind::<Text, _>(key.digits())
    .execute(c)
    .await?;
    Ok(())
}

#[derive(QueryableByName)]
struct AddressRow {
    #[diesel(sql_type = Nullable<Text>)]
    parent_bsuid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    default_bsuid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    portfolio_bsuid: Option<String>,
    /// The portfolio the key itself is a BSUID of, when it is another portfolio's.
    #[diesel(sql_type = Nullable<Text>)]
    key_portfolio: Option<String>,
}

/// Where a message from a number of the portfolio stored as `portfolio` reaches the
/// customer keyed `key`: `to` = the phone when known; else `recipient` = the parent BSUID
/// (it spans the linked portfolios), else the customer's BSUID in that portfolio. None
/// when the customer is known only by another portfolio's BSUID, which that number cannot
/// use. A BSUID nobody recorded is taken as the sending portfolio's.
pub async fn address_for(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    key: &str,
) -> QueryResult<Option<Address>> {
    if !warden_rules::bsuid::looks_like_bsuid(key) {
        return Ok(Some(Address::Phone(key.to_owned())));
    }
    let row = diesel::sql_query(
        "SELECT c.parent_bsuid, c.bsuid AS default_bsuid, \
                (SELECT pb.bsuid FROM portfolio_bsuids pb \
                  WHERE pb.customer_phone = $1 AND pb.portfolio = $2 \
                  ORDER BY pb.created_at DESC LIMIT 1) AS portfolio_bsuid, \
                (SELECT o.portfolio FROM portfolio_bsuids o WHERE o.bsuid = $1) AS key_portfolio \
         FROM (SELECT $1::text AS k) q LEFT JOIN customers c ON c.phone = q.k",
    )
    .bind::<Text, _>(key)
    .bind::<Text, _>(portfolio)
    .get_result::<AddressRow>(c)
    .await?;
    if let Some(parent) = row.parent_bsuid {
        return Ok(Some(Address::Recipient(parent)));
    }
    let own = if warden_settings::is_stored_default(portfolio) {
        row.default_bsuid.clone()
    } else {
        row.portfolio_bsuid
    };
    if let Some(bsuid) = own {
        return Ok(Some(Address::Recipient(bsuid)));
    }
    // The key is another portfolio's BSUID (recorded there, or the default's on the row).
    let elsewhere = match &row.key_portfolio {
        Some(p) => p != portfolio,
        None => !warden_settings::is_stored_default(portfolio) && row.default_bsuid.is_some(),
    };
    Ok((!elsewhere).then(|| Address::Recipient(key.to_owned())))
}

/// The user's BSUID changed (`user_changed_user_id`): the customer keyed `key` takes the
/// new one as its BSUID in the portfolio stored as `portfolio`. Its key, opt-outs and
/// history stay as they are, so nothing is lost; when the new BSUID already names another
/// customer, that one is merged in first.
pub async fn change_bsuid(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    key: &PhoneNumber,
    new: &Bsuid,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<()> {
    if let Some(other) = find_by_bsuid(c, new.as_str()).await?
        && other != key.digits()
        && let Ok(other) = warden_rules::bsuid::customer_key(&other)
    {
        merge(c, &other, key, at, actor).await?;
    }
    ensure_locked(c, key).await?;
    if warden_settings::is_stored_default(portfolio) {
        diesel::update(customers::table.find(key.digits()))
            .set((
                customers::bsuid.eq(new.as_str()),
                customers::updated_at.eq(diesel::dsl::now),
            ))
            .execute(c)
            .await?;
    } else {
        record_portfolio_bsuid(c, portfolio, new, key).await?;
    }
    warden_store::audit::record(
        c,
        actor,
        "customer_bsuid_changed",
        "customer",
        key.digits(),
        json!({"bsuid": new.as_str(), "portfolio": portfolio, "changed_at": at}),
    )
    .await
}

/// Fold the customer `from` into `into` (created if missing): the stricter consent of the
/// two, the union of tags, the later marketing limit; windows, caps, suppressions, number
/// changes and every message move to `into`; `from` is deleted; an audit row records it.
pub async fn merge(
    c: &mut AsyncPgConnection,
    from: &PhoneNumber,
    into: &PhoneNumber,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<bool> {
    if from.digits() == into.digits() {
        return Ok(false);
    }
    // Lock in key order, as every batch does, so two merges cannot deadlock.
    let (a, b) = if from.digits() < into.digits() {
        let a = ensure_locked(c, from).await?;
        (a, ensure_locked(c, into).await?)
    } else {
        let b = ensure_locked(c, into).await?;
        (ensure_locked(c, from).await?, b)
    };
    let ids = identifiers(c, from).await?;
    let merged = merged_consent(&a, &b);
    diesel::update(customers::table.find(into.digits()))
        .set((
            customers::opt_in_marketing.eq(merged.marketing),
            customers::opt_in_utility.eq(merged.utility),
            customers::opt_changed_at.eq(merged.changed_at),
            customers::opt_change_reason.eq(&merged.reason),
            customers::tags.eq(&merged.tags),
            customers::marketing_limited_at.eq(b.marketing_limited_at.max(a.marketing_limited_at)),
            customers::last_interaction_at.eq(b.last_interaction_at.max(a.last_interaction_at)),
            customers::engagement_score.eq(b.engagement_score.max(a.engagement_score)),
            customers::created_at.eq(b.created_at.min(a.created_at)),
            customers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
    let (f, t) = (from.digits(), into.digits());
    for sql in MOVES {
        diesel::sql_query(*sql)
            .bind::<Text, _>(f)
            .bind::<Text, _>(t)
            .execute(c)
            .await?;
    }
    // The identifiers of `from` are unique: free them before `into` takes them.
    diesel::delete(customers::table.find(f)).execute(c).await?;
    diesel::sql_query(
        "UPDATE customers SET bsuid = COALESCE(bsuid, $2), \
         parent_bsuid = COALESCE(parent_bsuid, $3), username = COALESCE(username, $4) \
         WHERE phone = $1",
    )
    .bind::<Text, _>(t)
    .bind::<Nullable<Text>, _>(ids.bsuid.as_deref())
    .bind::<Nullable<Text>, _>(ids.parent_bsuid.as_deref())
    .bind::<Nullable<Text>, _>(ids.username.as_deref())
    .execute(c)
    .await?;
    warden_store::audit::record(
        c,
        actor,
        "customer_merged",
        "customer",
        t,
        json!({"merged": f, "survivor": t, "bsuid": ids.bsuid,
               "opt_in_marketing": merged.marketing, "opt_in_utility": merged.utility,
               "merged_at": at}),
    )
    .await?;
    Ok(true)
}

/// What moves from the merged customer ($1) to the survivor ($2), in order. Conversations
/// are unique per customer, channel and sender: one both have is folded into the survivor's.
const MOVES: &[&str] = &[
    "UPDATE conversations s SET \
       last_inbound_at = GREATEST(s.last_inbound_at, m.last_inbound_at), \
       last_outbound_at = GREATEST(s.last_outbound_at, m.last_outbound_at), \
       window_expires_at = GREATEST(s.window_expires_at, m.window_expires_at), \
       archived_at = CASE WHEN s.archived_at IS NULL OR m.archived_at IS NULL THEN NULL \
                          ELSE GREATEST(s.archived_at, m.archived_at) END, \
       created_at = LEAST(s.created_at, m.created_at), updated_at = now() \
     FROM conversations m \
     WHERE m.customer_phone = $1 AND s.customer_phone = $2 AND s.channel = m.channel \
       AND s.sender_id = m.sender_id",
    "DELETE FROM conversations m USING conversations s \
     WHERE m.customer_phone = $1 AND s.customer_phone = $2 AND s.channel = m.channel \
       AND s.sender_id = m.sender_id",
    "UPDATE conversations SET customer_phone = $2 WHERE customer_phone = $1",
    "UPDATE messages SET customer_phone = $2 WHERE customer_phone = $1",
    "UPDATE message_frequencies SET customer_phone = $2 WHERE customer_phone = $1",
    "UPDATE conversation_holder_changes SET customer_phone = $2 WHERE customer_phone = $1",
    "INSERT INTO suppressions (phone, reason, created_at) \
     SELECT $2, reason, created_at FROM suppressions WHERE phone = $1 ON CONFLICT DO NOTHING",
    "DELETE FROM suppressions WHERE phone = $1",
    "INSERT INTO customer_number_changes (old_phone, new_phone, changed_at, recorded_at) \
     SELECT CASE WHEN old_phone = $1 THEN $2 ELSE old_phone END, \
            CASE WHEN new_phone = $1 THEN $2 ELSE new_phone END, changed_at, recorded_at \
     FROM customer_number_changes WHERE (old_phone = $1 OR new_phone = $1) \
       AND NOT (old_phone = $1 AND new_phone = $2) AND NOT (old_phone = $2 AND new_phone = $1) \
     ON CONFLICT DO NOTHING",
    "DELETE FROM customer_number_changes WHERE old_phone = $1 OR new_phone = $1",
    // One person counts once against the portfolio's messaging limit: the later reach wins.
    "INSERT INTO portfolio_reach (portfolio, customer_phone, reached_at, message_id) \
     SELECT portfolio, $2, reached_at, message_id FROM portfolio_reach WHERE customer_phone = $1 \
     ON CONFLICT (portfolio, customer_phone) DO UPDATE SET reached_at = EXCLUDED.reached_at, \
       message_id = EXCLUDED.message_id WHERE portfolio_reach.reached_at < EXCLUDED.reached_at",
    "DELETE FROM portfolio_reach WHERE customer_phone = $1",
    // Another business's consent: the stricter of the two, as for the customer rows.
    "INSERT INTO business_consent (business, customer_phone, opt_in_marketing, opt_in_utility, \
       opt_changed_at, opt_change_reason) \
     SELECT business, $2, opt_in_marketing, opt_in_utility, opt_changed_at, opt_change_reason \
     FROM business_consent WHERE customer_phone = $1 \
     ON CONFLICT (business, customer_phone) DO UPDATE SET \
       opt_in_marketing = business_consent.opt_in_marketing AND EXCLUDED.opt_in_marketing, \
       opt_in_utility = business_consent.opt_in_utility AND EXCLUDED.opt_in_utility, \
       opt_changed_at = GREATEST(business_consent.opt_changed_at, EXCLUDED.opt_changed_at)",
    "DELETE FROM business_consent WHERE customer_phone = $1",
    "UPDATE portfolio_bsuids SET customer_phone = $2 WHERE customer_phone = $1",
    // One person's answers to a number's call permission requests: the newer one stands
    // (as `calls::permission` keeps it); the requests they were sent count together.
    "INSERT INTO call_permissions (sender_id, customer_phone, response, permanent, expires_at, \
       source, replied_at, wamid, updated_at) \
     SELECT sender_id, $2, response, permanent, expires_at, source, replied_at, wamid, updated_at \
     FROM call_permissions WHERE customer_phone = $1 \
     ON CONFLICT (sender_id, customer_phone) DO UPDATE SET response = EXCLUDED.response, \
       permanent = EXCLUDED.permanent, expires_at = EXCLUDED.expires_at, \
       source = EXCLUDED.source, replied_at = EXCLUDED.replied_at, wamid = EXCLUDED.wamid, \
       updated_at = EXCLUDED.updated_at \
     WHERE call_permissions.replied_at < EXCLUDED.replied_at",
    "DELETE FROM call_permissions WHERE customer_phone = $1",
    "UPDATE call_permission_requests SET customer_phone = $2 WHERE customer_phone = $1",
];

struct Merged {
    marketing: bool,
    utility: bool,
    changed_at: Option<DateTime<Utc>>,
    reason: Option<String>,
    tags: Vec<String>,
}

/// The stricter consent of two records of one person: opted in only where both are.
fn merged_consent(from: &Customer, into: &Customer) -> Merged {
    let marketing = from.opt_in_marketing && into.opt_in_marketing;
    let utility = from.opt_in_utility && into.opt_in_utility;
    let stricter = marketing != into.opt_in_marketing || utility != into.opt_in_utility;
    let mut tags = into.tags.clone();
    for t in &from.tags {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    Merged {
        marketing,
        utility,
        changed_at: if stricter {
            from.opt_changed_at.max(into.opt_changed_at)
        } else {
            into.opt_changed_at
        },
        reason: if stricter {
            from.opt_change_reason.clone()
        } else {
            into.opt_change_reason.clone()
        },
        tags,
    }
}

impl crate::Core {
    /// The key of the customer `id` (a phone or a BSUID) names; see [`resolve`].
    pub async fn customer(&self, id: &PhoneNumber) -> Result<PhoneNumber, crate::CoreError> {
        if !id.is_bsuid() {
            return Ok(id.clone());
        }
        let mut conn = self.pg().get().await?;
        Ok(resolve(&mut conn, id).await?)
    }

    /// The identifiers of the customer keyed `key`, as tools show them.
    pub async fn customer_identifiers(
        &self,
        key: &PhoneNumber,
    ) -> Result<Identifiers, crate::CoreError> {
        let mut conn = self.pg().get().await?;
        Ok(identifiers(&mut conn, key).await?)
    }
}
