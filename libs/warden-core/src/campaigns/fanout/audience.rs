//! A campaign's audience, read in keyset pages straight from `customers`.
//!
//! The whole filter (docs/operations.md, campaigns: include_tags any-of, exclude_tags,
//! customer_ids, opt_in, active_within_days) runs in SQL, and the rows are checked again
//! with [`AudienceFilter::matches`] so the semantics are the rules crate's. Customers
//! that already have a message of this campaign are left out by the query itself: a
//! page interrupted by a crash, a pause or a shutdown is read again and only the
//! recipients not yet given a message come back.

use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel::sql_types::{Array, BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_rules::audience::{AudienceFilter, Candidate, OptInKind};
use warden_rules::phone::PhoneNumber;
use warden_store::PgPool;

use crate::CoreError;

#[derive(diesel::QueryableByName, Debug, Clone)]
struct AudienceRow {
    #[diesel(sql_type = Text)]
    phone: String,
    #[diesel(sql_type = Array<Text>)]
    tags: Vec<String>,
    #[diesel(sql_type = Bool)]
    opt_in_marketing: bool,
    #[diesel(sql_type = Bool)]
    opt_in_utility: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_interaction_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    bsuid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    parent_bsuid: Option<String>,
}

/// One page of recipients.
#[derive(Debug, Clone)]
pub struct AudiencePage {
    /// Recipients in phone order (canonical numbers), already filtered.
    pub recipients: Vec<PhoneNumber>,
    /// The last phone the query returned (the next cursor), filtered or not.
    pub last: Option<String>,
    /// Rows the query returned (a short page means the audience is exhausted).
    pub fetched: usize,
    /// Rows skipped: not a valid phone number, or not matching in the second check.
    pub skipped: usize,
}

/// The audience after the cursor `$2` ('' = from the start), without the customers given
/// a message of campaign `$1` already. Shared by the page and the count, so the two can
/// never disagree.
macro_rules! audience_where {
    () => {
        "
FROM customers c
WHERE c.phone > $2
  AND (cardinality($3::text[]) = 0 OR c.tags && $3::text[])
  AND NOT (c.tags && $4::text[])
  AND (cardinality($5::text[]) = 0 OR c.phone = ANY($5::text[])
       OR c.bsuid = ANY($5::text[]) OR c.parent_bsuid = ANY($5::text[]))
  AND ($6::text IS NULL
       OR ($6::text = 'marketing' AND c.opt_in_marketing)
       OR ($6::text = 'utility' AND c.opt_in_utility))
  AND ($7::timestamptz IS NULL OR c.last_interaction_at >= $7::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM messages m
                  WHERE m.customer_phone = c.phone AND m.campaign_id = $1
                    -- Redundant with c.phone > $2, but lets the anti-join start its scan of
                    -- the campaign's messages at the cursor instead of at the first phone.
                    AND m.customer_phone > $2)"
    };
}

const PAGE_SQL: &str = concat!(
    "SELECT c.phone, c.tags, c.opt_in_marketing, c.opt_in_utility, c.last_interaction_at, \
     c.bsuid, c.parent_bsuid",
    audience_where!(),
    "
ORDER BY c.phone
LIMIT $8"
);

const COUNT_SQL: &str = concat!("SELECT count(*) AS n", audience_where!());

#[derive(diesel::QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// `sql` with the audience's parameters `$1`..`$7` bound.
fn audience_query(
    sql: &'static str,
    campaign_id: Uuid,
    cursor: Option<&str>,
    filter: &AudienceFilter,
    now: DateTime<Utc>,
) -> BoxedSqlQuery<'static, Pg, SqlQuery> {
    let ids: Vec<String> = filter
        .customer_ids
        .iter()
        .map(|p| p.digits().to_string())
        .collect();
    let opt_in = filter.opt_in.map(|o| match o {
        OptInKind::Marketing => "marketing",
        OptInKind::Utility => "utility",
    });
    diesel::sql_query(sql)
        .into_boxed()
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<Text, _>(cursor.unwrap_or("").to_string())
        .bind::<Array<Text>, _>(filter.include_tags.clone())
        .bind::<Array<Text>, _>(filter.exclude_tags.clone())
        .bind::<Array<Text>, _>(ids)
        .bind::<Nullable<Text>, _>(opt_in)
        .bind::<Nullable<Timestamptz>, _>(filter.active_since(now))
}

/// Recipients of the audience not given a message of this campaign (a cancelled
/// campaign's never-queued recipients).
pub async fn count_remaining(
    pg: &PgPool,
    campaign_id: Uuid,
    filter: &AudienceFilter,
    now: DateTime<Utc>,
) -> Result<i64, CoreError> {
    let mut conn = pg.get().await?;
    let row: CountRow = audience_query(COUNT_SQL, campaign_id, None, filter, now)
        .get_result(&mut conn)
        .await?;
    Ok(row.n)
}

/// Read the next page after `cursor` (None: from the start).
pub async fn load_page(
    pg: &PgPool,
    campaign_id: Uuid,
    cursor: Option<&str>,
    filter: &AudienceFilter,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<AudiencePage, CoreError> {
    let rows: Vec<AudienceRow> = {
        let mut conn = pg.get().await?;
        audience_query(PAGE_SQL, campaign_id, cursor, filter, now)
            .bind::<BigInt, _>(limit)
            .load(&mut conn)
            .await?
    };
    let fetched = rows.len();
    let last = rows.last().map(|r| r.phone.clone());
    let mut recipients = Vec::with_capacity(fetched);
    let mut skipped = 0;
    for row in rows {
        // Rows are keyed by canonical digits; anything else cannot be matched back to
        // its messages, so it is skipped rather than risk a second message.
        let phone = match warden_rules::bsuid::customer_key(&row.phone) {
            Ok(p) if p.digits() == row.phone => p,
            _ => {
                tracing::warn!(
                    phone = row.phone,
                    "customer row with a non-canonical phone number skipped"
                );
                skipped += 1;
                continue;
            }
        };
        let aliases: Vec<String> = [row.bsuid, row.parent_bsuid]
            .into_iter()
            .flatten()
            .collect();
        let candidate = Candidate {
            phone: &phone,
            aliases: &aliases,
            tags: &row.tags,
            opt_in_marketing: row.opt_in_marketing,
            opt_in_utility: row.opt_in_utility,
            last_interaction: row.last_interaction_at,
        };
        if !filter.matches(&candidate, now) {
            skipped += 1;
            continue;
        }
        recipients.push(phone);
    }
    Ok(AudiencePage {
        recipients,
        last,
        fetched,
        skipped,
    })
}
