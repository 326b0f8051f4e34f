//! check_compliance: what a send would decide now (the holder of the conversation too),
//! read in one statement; and
//! check_frequency_cap ([`Core::frequency`]). Never writes.
//!
//! A check is the call agents make most, often before every send. Its inputs (the
//! customer's consent, the care window, the marketing count) are three index lookups; as
//! three statements they cost three executor start-ups in Postgres and three exchanges,
//! which under 32 concurrent callers was most of a check's cost. One statement reads the
//! same rows with the same meaning as the send path's reads ([`crate::send`]).

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bool, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use warden_rules::compliance::{Decision, FrequencyStatus};
use warden_rules::kinds::{Category, ContentKind};
use warden_rules::phone::PhoneNumber;

use super::decide::{CustomerFacts, counting_platform_hold, decide, recent_count};
use crate::sql::Cached;
use crate::{Core, CoreError, customers};

/// The customer's consent, window and recent count in one row (a customer never seen
/// reads as opted in with no tags, as the send path treats them).
#[derive(QueryableByName)]
struct CheckRow {
    #[diesel(sql_type = Bool)]
    known: bool,
    #[diesel(sql_type = Bool)]
    opt_in_marketing: bool,
    #[diesel(sql_type = Bool)]
    opt_in_utility: bool,
    #[diesel(sql_type = Array<Text>)]
    tags: Vec<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    marketing_limited_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_inbound_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    holder: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    holder_since: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    holder_by: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    holder_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = BigInt)]
    accepted: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<DateTime<Utc>>,
}

/// $5 is the sender's stored key, $6 its business's (`customers::consent`: the default
/// business's consent is the customer row's, another's a `business_consent` row).
const CHECK_SQL: &str = "SELECT c.phone IS NOT NULL AS known,
        CASE WHEN $6 = 'default' THEN COALESCE(c.opt_in_marketing, true)
             ELSE COALESCE(b.opt_in_marketing, true) END AS opt_in_marketing,
        CASE WHEN $6 = 'default' THEN COALESCE(c.opt_in_utility, true)
             ELSE COALESCE(b.opt_in_utility, true) END AS opt_in_utility,
        COALESCE(c.tags, '{}') AS tags,
        c.marketing_limited_at,
        v.last_inbound_at, v.holder, v.holder_since, v.holder_by, v.holder_until,
        f.accepted, f.oldest
   FROM (SELECT count(*) AS accepted, min(counted_at) AS oldest
           FROM message_frequencies
          WHERE customer_phone = $1 AND business = $6 AND category = $3 AND counted_at > $4) f
   LEFT JOIN customers c ON c.phone = $1
   LEFT JOIN business_consent b ON b.business = $6 AND b.customer_phone = $1
   LEFT JOIN conversations v ON v.customer_phone = $1 AND v.channel = $2 AND v.sender_id = $5";

impl Core {
    /// Dry-run compliance: what a send from the sender `from` names (`None`: the default)
    /// would decide now. Never writes. `content` is what would be sent; its category (never
    /// a caller's label) decides.
    pub async fn check(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
        content: ContentKind,
        now: DateTime<Utc>,
    ) -> Result<Decision, CoreError> {
        let keys = self.sender_keys(from)?;
        let category = content.category();
        let phone = &self.customer(phone).await?;
        let limit = self.policies().frequency_limit(category);
        // Without a cap for this category the count is not read: `since` = now counts nothing.
        let since = limit.as_ref().map_or(now, |l| now - l.window);
        let row: CheckRow = {
            let mut conn = self.pg().get().await?;
            Cached(
                diesel::sql_query(CHECK_SQL)
                    .bind::<Text, _>(phone.digits())
                    .bind::<Text, _>(warden_settings::DEFAULT_CHANNEL)
                    .bind::<Text, _>(category.as_str())
                    .bind::<Timestamptz, _>(since)
                    .bind::<Text, _>(&keys.sender)
                    .bind::<Text, _>(&keys.business),
            )
            .get_result(&mut conn)
            .await?
        };
        let customer = row.known.then_some(CustomerFacts {
            opt_in_marketing: row.opt_in_marketing,
            opt_in_utility: row.opt_in_utility,
            tags: &row.tags,
            marketing_limited_at: row.marketing_limited_at,
        });
        let accepted = if limit.is_some() {
            (u32::try_from(row.accepted).unwrap_or(u32::MAX), row.oldest)
        } else {
            (0, None)
        };
        let (recent, _) =
            counting_platform_hold(self.policies(), category, customer.as_ref(), accepted, now);
        let decision = decide(
            self.policies(),
            phone,
            customer.as_ref(),
            row.last_inbound_at,
            category,
            recent,
            now,
        );
        // Who holds the conversation, read in the same statement as the window.
        let holder = super::conversation_holder::from_columns(
            row.holder.as_deref(),
            row.holder_since,
            row.holder_by,
            row.holder_until,
            row.last_inbound_at,
            now,
        );
        Ok(super::conversation_holder::judge(
            decision,
            &holder,
            category,
            self.actor(),
        ))
    }

    /// check_frequency_cap: the marketing cap's status for a customer. Never writes.
    pub async fn frequency(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<FrequencyStatus, CoreError> {
        let keys = self.sender_keys(from)?;
        let phone = &self.customer(phone).await?;
        let mut conn = self.pg().get().await?;
        let customer = customers::find(&mut conn, phone).await?;
        let (count, oldest) = recent_count(
            &conn,
            self.policies(),
            (&keys.business, phone.digits()),
            Category::Marketing,
            customer.as_ref(),
            now,
            None,
        )
        .await?;
        Ok(warden_rules::compliance::frequency_status(
            self.policies(),
            Category::Marketing,
            count,
            oldest,
            now,
        ))
    }
}
