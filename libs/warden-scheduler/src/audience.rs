//! A campaign's audience, read in keyset pages straight from `customers`.
//!
//! The whole filter (CONTRACT.md "Campaigns": include_tags any-of, exclude_tags,
//! customer_ids, opt_in, active_within_days) runs in SQL, and the rows are checked again
//! with [`AudienceFilter::matches`] so the semantics are the rules crate's. Customers
//! that already have a message of this campaign are left out by the query itself: a
//! page interrupted by a crash, a pause or a shutdown is read again and only the
//! recipients not yet given a message come back.

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    Array, BigInt, Bool, Float8, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::audience::{AudienceFilter, Candidate, OptInKind};
use warden_rules::phone::PhoneNumber;

#[derive(diesel::QueryableByName, Debug, Clone)]
pub(crate) struct AudienceRow {
    #[diesel(sql_type = Text)]
    pub phone: String,
    #[diesel(sql_type = Array<Text>)]
    pub tags: Vec<String>,
    #[diesel(sql_type = Bool)]
    pub opt_in_marketing: bool,
    #[diesel(sql_type = Bool)]
    pub opt_in_utility: bool,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_interaction_at: Option<DateTime<Utc>>,
    #[allow(dead_code)]
    #[diesel(sql_type = Float8)]
    pub engagement_score: f64,
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

const PAGE_SQL: &str = "
SELECT c.phone, c.tags, c.opt_in_marketing, c.opt_in_utility, c.last_interaction_at, c.engagement_score
FROM customers c
WHERE c.phone > $2
  AND (cardinality($3::text[]) = 0 OR c.tags && $3::text[])
  AND NOT (c.tags && $4::text[])
  AND (cardinality($5::text[]) = 0 OR c.phone = ANY($5::text[]))
  AND ($6::text IS NULL
       OR ($6::text = 'marketing' AND c.opt_in_marketing)
       OR ($6::text = 'utility' AND c.opt_in_utility))
  AND ($7::timestamptz IS NULL OR c.last_interaction_at >= $7::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM messages m
                  WHERE m.customer_phone = c.phone AND m.campaign_id = $1
                    -- Redundant with c.phone > $2, but lets the anti-join start its scan of
                    -- the campaign's messages at the cursor instead of at the first phone.
                    AND m.customer_phone > $2)
ORDER BY c.phone
LIMIT $8";

/// The same conditions as [`PAGE_SQL`], over the whole audience.
const COUNT_SQL: &str = "
SELECT count(*) AS n
FROM customers c
WHERE (cardinality($2::text[]) = 0 OR c.tags && $2::text[])
  AND NOT (c.tags && $3::text[])
  AND (cardinality($4::text[]) = 0 OR c.phone = ANY($4::text[]))
  AND ($5::text IS NULL
       OR ($5::text = 'marketing' AND c.opt_in_marketing)
       OR ($5::text = 'utility' AND c.opt_in_utility))
  AND ($6::timestamptz IS NULL OR c.last_interaction_at >= $6::timestamptz)
  AND NOT EXISTS (SELECT 1 FROM messages m
                  WHERE m.customer_phone = c.phone AND m.campaign_id = $1)";

#[derive(diesel::QueryableByName)]
struct CountRow {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Recipients of the audience not given a message of this campaign (a cancelled
/// campaign's never-queued recipients).
pub(crate) async fn count_remaining(
    conn: &mut AsyncPgConnection,
    campaign_id: Uuid,
    filter: &AudienceFilter,
    now: DateTime<Utc>,
) -> diesel::QueryResult<i64> {
    let ids: Vec<String> = filter
        .customer_ids
        .iter()
        .map(|p| p.digits().to_string())
        .collect();
    let row: CountRow = diesel::sql_query(COUNT_SQL)
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<Array<Text>, _>(&filter.include_tags)
        .bind::<Array<Text>, _>(&filter.exclude_tags)
        .bind::<Array<Text>, _>(&ids)
        .bind::<Nullable<Text>, _>(opt_in_str(filter))
        .bind::<Nullable<Timestamptz>, _>(filter.active_since(now))
        .get_result(conn)
        .await?;
    Ok(row.n)
}

fn opt_in_str(filter: &AudienceFilter) -> Option<&'static str> {
    filter.opt_in.map(|o| match o {
        OptInKind::Marketing => "marketing",
        OptInKind::Utility => "utility",
    })
}

/// Read the next page after `cursor` (None: from the start).
pub(crate) async fn load_page(
    conn: &mut AsyncPgConnection,
    campaign_id: Uuid,
    cursor: Option<&str>,
    filter: &AudienceFilter,
    now: DateTime<Utc>,
    limit: i64,
) -> diesel::QueryResult<AudiencePage> {
    let ids: Vec<String> = filter
        .customer_ids
        .iter()
        .map(|p| p.digits().to_string())
        .collect();
    let opt_in = opt_in_str(filter);
    let rows: Vec<AudienceRow> = diesel::sql_query(PAGE_SQL)
        .bind::<SqlUuid, _>(campaign_id)
        .bind::<Text, _>(cursor.unwrap_or(""))
        .bind::<Array<Text>, _>(&filter.include_tags)
        .bind::<Array<Text>, _>(&filter.exclude_tags)
        .bind::<Array<Text>, _>(&ids)
        .bind::<Nullable<Text>, _>(opt_in)
        .bind::<Nullable<Timestamptz>, _>(filter.active_since(now))
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await?;
    let fetched = rows.len();
    let last = rows.last().map(|r| r.phone.clone());
    let mut recipients = Vec::with_capacity(fetched);
    let mut skipped = 0;
    for row in rows {
        // Rows are keyed by canonical digits; anything else cannot be matched back to
        // its messages, so it is skipped rather than risk a second message.
        let phone = match warden_rules::phone::canonicalize(&row.phone) {
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
        let candidate = Candidate {
            phone: &phone,
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
