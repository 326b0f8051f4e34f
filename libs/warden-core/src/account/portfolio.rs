//! The business portfolio's messaging limit (docs/compliance.md, Platform limits): unique
//! customers reached by business-initiated messages per rolling 24 h, shared by every number
//! of the portfolio. Every function takes the portfolio's stored key
//! (`warden_settings::Senders::key_of`).
//!
//! - **The limit** is learnt from the platform: `get_account_quality`'s tier,
//!   `phone_number_quality_update.current_limit` and
//!   `business_capability_update.max_daily_conversations_per_business` ([`learn`]); the
//!   last one learnt wins. Until one is learnt nothing is enforced.
//! - **The count** is Postgres's: `portfolio_reach` keeps the last business-initiated
//!   message of each customer (`warden_rules::platform_limits::business_initiated`: a
//!   template accepted while the care window is closed). It is counted when the send path
//!   accepts the message, not when the platform delivers it, so a message that fails later
//!   still uses its slot until it leaves the window (Warden errs on the side of the limit).
//! - **The check** ([`admit`]) runs inside the send transaction, after compliance, for
//!   every caller (tool, scheduled message, campaign). A customer reached in the last
//!   24 h does not count again. Before it counts a new customer it updates the single
//!   `portfolio_limit` row, so concurrent sends at limit - 1 queue on that row lock and
//!   only the first passes (the others then see its customer in the count).

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::phone::PhoneNumber;
use warden_rules::platform_limits::{self, MessagingLimit, WINDOW};

/// The limit in force and how much of it the last 24 h used (get_account_quality).
#[derive(Debug, Clone, PartialEq)]
pub struct Usage {
    /// Unique customers reached by business-initiated messages in the rolling 24 h.
    pub used: i64,
    /// `None` until a limit was learnt (then nothing is enforced).
    pub limit: Option<MessagingLimit>,
    /// Where the limit came from (`get_account_quality`, `phone_number_quality_update`,
    /// `business_capability_update`, `unknown`).
    pub source: String,
    pub updated_at: DateTime<Utc>,
    /// When the oldest counted customer leaves the window.
    pub frees_at: Option<DateTime<Utc>>,
    /// Customers held from marketing after a 131049 in the last 24 h.
    pub marketing_limited: i64,
}

#[derive(QueryableByName)]
struct LimitRow {
    #[diesel(sql_type = Nullable<Text>)]
    tier: Option<String>,
    #[diesel(sql_type = Nullable<Int4>)]
    unique_users: Option<i32>,
    #[diesel(sql_type = Text)]
    source: String,
    #[diesel(sql_type = Timestamptz)]
    updated_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct Reached {
    #[diesel(sql_type = BigInt)]
    n: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<DateTime<Utc>>,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct Users {
    #[diesel(sql_type = Nullable<Int4>)]
    unique_users: Option<i32>,
}

fn limit_of(tier: Option<&str>, users: Option<i32>) -> Option<MessagingLimit> {
    tier?;
    Some(match users {
        Some(n) => MessagingLimit::Users(u32::try_from(n).unwrap_or(u32::MAX)),
        None => MessagingLimit::Unlimited,
    })
}

/// Record the limit the platform reported as `text` (a tier such as `TIER_2K`, or a number,
/// `-1` for unlimited) from `source`. False (nothing written) when `text` is no limit.
/// Audited when it changes.
pub async fn learn(
    conn: &mut AsyncPgConnection,
    portfolio: &str,
    text: &str,
    source: &str,
    actor: &str,
) -> QueryResult<bool> {
    let Some(limit) = MessagingLimit::parse(text) else {
        tracing::warn!(
            limit = text,
            source,
            "unrecognised messaging limit; ignored"
        );
        return Ok(false);
    };
    let users = limit.users().map(|n| i32::try_from(n).unwrap_or(i32::MAX));
    let before: Option<LimitRow> = diesel::sql_query(
        "SELECT tier, unique_users, source, updated_at FROM portfolio_limit WHERE portfolio = $1 FOR UPDATE",
    )
    .bind::<Text, _>(portfolio)
    .get_result(conn)
    .await
    .optional()?;
    diesel::sql_query(
        "INSERT INTO portfolio_limit (portfolio, tier, unique_users, source, updated_at)
         VALUES ($4, $1, $2, $3, now())
         ON CONFLICT (portfolio) DO UPDATE SET tier = EXCLUDED.tier, unique_users = EXCLUDED.unique_users,
                source = EXCLUDED.source, updated_at = now()",
    )
    .bind::<Text, _>(limit.tier())
    .bind::<Nullable<Int4>, _>(users)
    .bind::<Text, _>(source)
    .bind::<Text, _>(portfolio)
    .execute(conn)
    .await?;
    let previous = before.and_then(|b| limit_of(b.tier.as_deref(), b.unique_users));
    if previous != Some(limit) {
        tracing::info!(limit = %limit, source, "business portfolio messaging limit learnt");
        warden_store::audit::record(
            conn,
            actor,
            "messaging_limit_changed",
            "portfolio",
            "messaging_limit",
            json!({"portfolio": portfolio, "from": previous.map(|l| l.to_string()), "to": limit.to_string(), "source": source}),
        )
        .await?;
    }
    Ok(true)
}

/// The limit, its use in the rolling 24 h before `now`, and the customers held after 131049.
pub async fn usage(
    conn: &mut AsyncPgConnection,
    portfolio: &str,
    now: DateTime<Utc>,
) -> QueryResult<Usage> {
    let row: LimitRow = diesel::sql_query(
        "SELECT tier, unique_users, source, updated_at FROM portfolio_limit WHERE portfolio = $1",
    )
    .bind::<Text, _>(portfolio)
    .get_result(conn)
    .await
    .optional()?
    .unwrap_or(LimitRow {
        tier: None,
        unique_users: None,
        source: "unknown".into(),
        updated_at: now,
    });
    let reached = reached_since(conn, portfolio, now).await?;
    let limited: Count =
        diesel::sql_query("SELECT count(*) AS n FROM customers WHERE marketing_limited_at > $1")
            .bind::<Timestamptz, _>(now - WINDOW)
            .get_result(conn)
            .await?;
    Ok(Usage {
        used: reached.n,
        limit: limit_of(row.tier.as_deref(), row.unique_users),
        source: row.source,
        updated_at: row.updated_at,
        frees_at: reached.oldest.map(|t| t + WINDOW),
        marketing_limited: limited.n,
    })
}

async fn reached_since(
    conn: &mut AsyncPgConnection,
    portfolio: &str,
    now: DateTime<Utc>,
) -> QueryResult<Reached> {
    diesel::sql_query(
        "SELECT count(*) AS n, min(reached_at) AS oldest FROM portfolio_reach
         WHERE portfolio = $2 AND reached_at > $1",
    )
    .bind::<Timestamptz, _>(now - WINDOW)
    .bind::<Text, _>(portfolio)
    .get_result(conn)
    .await
}

/// What [`admit`] needs to know before it decides: when the customer was last reached by
/// the portfolio, and whether a finite limit is known (only then is there anything to
/// count). One statement, so the send path reads it in the round trip of the customer's lock.
#[derive(QueryableByName, Clone, Copy, Debug)]
pub(crate) struct ReachFacts {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last: Option<DateTime<Utc>>,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    finite: bool,
}

pub(crate) async fn reach_facts(
    mut conn: &AsyncPgConnection,
    portfolio: &str,
    phone: &PhoneNumber,
) -> QueryResult<ReachFacts> {
    diesel::sql_query(
        "SELECT (SELECT reached_at FROM portfolio_reach
                  WHERE portfolio = $1 AND customer_phone = $2) AS last,
                EXISTS (SELECT 1 FROM portfolio_limit
                         WHERE portfolio = $1 AND tier IS NOT NULL
                           AND unique_users IS NOT NULL) AS finite",
    )
    .bind::<Text, _>(portfolio.to_string())
    .bind::<Text, _>(phone.digits().to_string())
    .get_result(&mut conn)
    .await
}

/// Inside the send transaction (the customer row locked): may a business-initiated message
/// to `phone` be accepted at `now`? `Some(refusal)` when the limit is reached and the
/// customer was not reached in the last 24 h; otherwise the customer is recorded as reached
/// by `message_id` and `None` is returned. `facts`: [`reach_facts`], read in this
/// transaction after the customer's lock.
pub(crate) async fn admit(
    conn: &mut AsyncPgConnection,
    portfolio: &str,
    phone: &PhoneNumber,
    message_id: Uuid,
    now: DateTime<Utc>,
    facts: ReachFacts,
) -> QueryResult<Option<Decision>> {
    let already = facts.last.is_some_and(|t| t > now - WINDOW);
    if !already && facts.finite {
        // The row lock that orders new customers (see the module docs). Only a finite limit
        // needs it; an unknown or unlimited one counts nothing.
        let locked: Option<Users> = diesel::sql_query(
            "UPDATE portfolio_limit SET checked_at = $1
             WHERE portfolio = $2 AND tier IS NOT NULL AND unique_users IS NOT NULL
             RETURNING unique_users",
        )
        .bind::<Timestamptz, _>(now)
        .bind::<Text, _>(portfolio)
        .get_result(conn)
        .await
        .optional()?;
        if let Some(max) = locked.and_then(|u| u.unique_users) {
            let reached = reached_since(conn, portfolio, now).await?;
            let limit = MessagingLimit::Users(u32::try_from(max).unwrap_or(u32::MAX));
            let used = u64::try_from(reached.n).unwrap_or(0);
            if let Some(refusal) = platform_limits::messaging_limit_refusal(
                limit,
                used,
                reached.oldest.map(|t| t + WINDOW),
            ) {
                return Ok(Some(refusal));
            }
        }
    }
    diesel::sql_query(
        "INSERT INTO portfolio_reach (customer_phone, reached_at, message_id, portfolio)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (portfolio, customer_phone) DO UPDATE
            SET reached_at = EXCLUDED.reached_at, message_id = EXCLUDED.message_id
          WHERE portfolio_reach.reached_at <= EXCLUDED.reached_at",
    )
    .bind::<Text, _>(phone.digits())
    .bind::<Timestamptz, _>(now)
    .bind::<SqlUuid, _>(message_id)
    .bind::<Text, _>(portfolio)
    .execute(conn)
    .await?;
    Ok(None)
}

/// True for the portfolio limit's refusal.
pub fn is_messaging_limit(d: &Decision) -> bool {
    d.policy_id.as_deref() == Some(platform_limits::MESSAGING_LIMIT)
}

/// [`learn`] in a transaction of its own (get_account_quality's reading of the tier).
pub async fn learn_from_platform(
    pg: &warden_store::PgPool,
    portfolio: &str,
    text: &str,
    source: &'static str,
    actor: &'static str,
) -> Result<bool, crate::CoreError> {
    use futures::FutureExt;
    let (text, portfolio) = (text.to_string(), portfolio.to_string());
    Ok(
        warden_store::tx::transact::<_, crate::CoreError, _>(pg, "messaging_limit_learn", |c| {
            let (text, portfolio) = (text.clone(), portfolio.clone());
            async move { Ok(learn(c, &portfolio, &text, source, actor).await?) }.boxed()
        })
        .await?,
    )
}

/// [`usage`] on a pooled connection. Never writes.
pub async fn current_usage(
    pg: &warden_store::PgPool,
    portfolio: &str,
    now: DateTime<Utc>,
) -> Result<Usage, crate::CoreError> {
    let mut conn = pg.get().await?;
    Ok(usage(&mut conn, portfolio, now).await?)
}
