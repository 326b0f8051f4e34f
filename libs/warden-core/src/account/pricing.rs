//! What the platform charged per message: the `pricing` object of status webhooks
//! (`billable`, `pricing_model`, `category`, `type`: regular, free_customer_service,
//! free_entry_point), kept in `message_pricing` (one row per message, latest report wins),
//! and cost reports that show that actual cost beside Warden's estimate from the rate card.
//!
//! The estimate: a delivered (or read) message of a billable category at the rate of the
//! customer's country (else DEFAULT) in force on the day it was sent; service messages are
//! free and a utility template sent while the customer's care window was open (an inbound
//! message in the 24 h before) is free (`warden_rules::pricing::billable`). The actual: the
//! messages the platform reported billable, at the rate of the category it reported.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_store::schema::message_pricing as mp;
use warden_store::{DbError, PgPool};

/// A status webhook's `pricing` object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportedPricing<'a> {
    pub billable: Option<bool>,
    pub pricing_model: Option<&'a str>,
    pub category: Option<&'a str>,
    pub pricing_type: Option<&'a str>,
}

/// Store the pricing a status webhook reported for `message_id` (in the caller's
/// transaction). Fields a later report leaves out keep their value.
pub async fn record(
    c: &mut AsyncPgConnection,
    message_id: Uuid,
    p: &ReportedPricing<'_>,
) -> QueryResult<()> {
    let category = normalise_category(p.category);
    let kind = normalise_type(p.pricing_type);
    diesel::insert_into(mp::table)
        .values((
            mp::message_id.eq(message_id),
            mp::billable.eq(p.billable),
            mp::pricing_model.eq(p.pricing_model),
            mp::category.eq(&category),
            mp::pricing_type.eq(&kind),
        ))
        .on_conflict(mp::message_id)
        .do_update()
        .set((
            mp::billable.eq(diesel::dsl::sql::<
                diesel::sql_types::Nullable<diesel::sql_types::Bool>,
            >(
                "COALESCE(excluded.billable, message_pricing.billable)"
            )),
            mp::pricing_model.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<Text>>(
                "COALESCE(excluded.pricing_model, message_pricing.pricing_model)",
            )),
            mp::category.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<Text>>(
                "COALESCE(excluded.category, message_pricing.category)",
            )),
            mp::pricing_type.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<Text>>(
                "COALESCE(excluded.pricing_type, message_pricing.pricing_type)",
            )),
            mp::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
    Ok(())
}

/// Store every report of a webhook POST (in the order the platform sent them) with one
/// statement, in the caller's transaction: the same end state as [`record`] called for each
/// in turn (per message and field, the latest report that names it, else what was stored),
/// and a report that changes nothing rewrites nothing (a message's `sent`, `delivered` and
/// `read` usually carry the same pricing).
pub async fn record_many(
    c: &mut AsyncPgConnection,
    reports: &[(Uuid, ReportedPricing<'_>)],
) -> QueryResult<()> {
    if reports.is_empty() {
        return Ok(());
    }
    // Per message, the latest value of each field any report named.
    let mut merged: std::collections::BTreeMap<Uuid, Merged> = std::collections::BTreeMap::new();
    for (id, p) in reports {
        let m = merged.entry(*id).or_default();
        m.billable = p.billable.or(m.billable);
        m.pricing_model = p
            .pricing_model
            .map(str::to_owned)
            .or(m.pricing_model.take());
        m.category = normalise_category(p.category).or(m.category.take());
        m.pricing_type = normalise_type(p.pricing_type).or(m.pricing_type.take());
    }
    let ids: Vec<Uuid> = merged.keys().copied().collect();
    let (mut billable, mut model, mut category, mut kind) = (vec![], vec![], vec![], vec![]);
    for m in merged.into_values() {
        billable.push(m.billable);
        model.push(m.pricing_model);
        category.push(m.category);
        kind.push(m.pricing_type);
    }
    // Rows in id order: concurrent POSTs lock them in one order.
    diesel::sql_query(
        "INSERT INTO message_pricing AS mp (message_id, billable, pricing_model, category, pricing_type)
         SELECT * FROM unnest($1::uuid[], $2::bool[], $3::text[], $4::text[], $5::text[])
         ON CONFLICT (message_id) DO UPDATE
            SET billable = COALESCE(excluded.billable, mp.billable),
                pricing_model = COALESCE(excluded.pricing_model, mp.pricing_model),
                category = COALESCE(excluded.category, mp.category),
                pricing_type = COALESCE(excluded.pricing_type, mp.pricing_type),
                updated_at = now()
          WHERE (mp.billable, mp.pricing_model, mp.category, mp.pricing_type) IS DISTINCT FROM
                (COALESCE(excluded.billable, mp.billable),
                 COALESCE(excluded.pricing_model, mp.pricing_model),
                 COALESCE(excluded.category, mp.category),
                 COALESCE(excluded.pricing_type, mp.pricing_type))",
    )
    .bind::<diesel::sql_types::Array<SqlUuid>, _>(&ids)
    .bind::<diesel::sql_types::Array<Nullable<Bool>>, _>(&billable)
    .bind::<diesel::sql_types::Array<Nullable<Text>>, _>(&model)
    .bind::<diesel::sql_types::Array<Nullable<Text>>, _>(&category)
    .bind::<diesel::sql_types::Array<Nullable<Text>>, _>(&kind)
    .execute(c)
    .await?;
    Ok(())
}

#[derive(Default)]
struct Merged {
    billable: Option<bool>,
    pricing_model: Option<String>,
    category: Option<String>,
    pricing_type: Option<String>,
}

fn normalise_category(category: Option<&str>) -> Option<String> {
    category.map(|s| s.trim().to_ascii_lowercase().replace('-', "_"))
}

fn normalise_type(kind: Option<&str>) -> Option<String> {
    kind.map(|s| s.trim().to_ascii_lowercase())
}

/// One category's line of a cost report (amounts in 1/10000 of the currency).
#[derive(Clone, Debug, PartialEq, Eq, QueryableByName)]
pub struct CostLine {
    /// The category Warden sent it as; `marketing_lite` for marketing the platform
    /// reported sent through the Marketing Messages API.
    #[diesel(sql_type = Text)]
    pub category: String,
    /// Delivered or read messages.
    #[diesel(sql_type = BigInt)]
    pub delivered: i64,
    /// Of those, billable by Warden's rules.
    #[diesel(sql_type = BigInt)]
    pub estimated_billable: i64,
    #[diesel(sql_type = BigInt)]
    pub estimated_e4: i64,
    /// Messages the platform reported pricing for.
    #[diesel(sql_type = BigInt)]
    pub reported: i64,
    /// Of those, billable according to the platform.
    #[diesel(sql_type = BigInt)]
    pub actual_billable: i64,
    #[diesel(sql_type = BigInt)]
    pub actual_e4: i64,
    #[diesel(sql_type = BigInt)]
    pub free_customer_service: i64,
    #[diesel(sql_type = BigInt)]
    pub free_entry_point: i64,
}

/// The rate of `category_expr` for the message's customer on the day it was sent.
fn rate_sql(category_expr: &str) -> String {
    format!(
        "COALESCE((SELECT p.cost_e4 FROM conversation_pricing p
                    WHERE p.country IN (COALESCE(cu.country, ''), 'DEFAULT')
                      AND p.conversation_type = {category_expr}
                      AND p.effective_date <= m.created_at::date
                    ORDER BY (p.country = 'DEFAULT'), p.effective_date DESC LIMIT 1), 0)"
    )
}

/// Which messages a cost report covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportScope {
    /// One campaign's messages.
    Campaign(Uuid),
    /// Outbound messages accepted from `since` (inclusive) to `until` (exclusive).
    Period {
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    },
}

/// Estimated and actual cost of a campaign's messages, by category.
pub async fn campaign_report(pg: &PgPool, campaign_id: Uuid) -> Result<Vec<CostLine>, DbError> {
    report_of(pg, ReportScope::Campaign(campaign_id), None).await
}

/// Estimated and actual cost of the messages of `scope`, by category. Never writes.
/// Only the messages of the numbers in `core`'s reach (a limited caller's own).
pub async fn report(core: &crate::Core, scope: ReportScope) -> Result<Vec<CostLine>, DbError> {
    report_of(core.pg(), scope, core.reach().keys()).await
}

/// [`report`] of the senders stored under `senders` (`None`: every sender).
async fn report_of(
    pg: &PgPool,
    scope: ReportScope,
    senders: Option<&[String]>,
) -> Result<Vec<CostLine>, DbError> {
    let mut c = pg.get().await?;
    let (mut filter, next) = match scope {
        ReportScope::Campaign(_) => ("m.campaign_id = $1".to_string(), 2),
        ReportScope::Period { .. } => ("m.created_at >= $1 AND m.created_at < $2".to_string(), 3),
    };
    if senders.is_some() {
        filter.push_str(" AND ");
        filter.push_str(&crate::senders::message_of_senders(
            "m",
            &format!("${next}"),
        ));
    }
    // Window open at send: the customer wrote within the 24 h before the message.
    let sql = format!(
        "WITH rows AS (
           SELECT CASE WHEN mp.category = 'marketing_lite' THEN mp.category ELSE m.category END
                    AS category, mp.billable, mp.category AS reported_category, mp.pricing_type,
                  mp.message_id IS NOT NULL AS reported,
                  m.status IN ('delivered', 'read') AS delivered,
                  (m.category = 'marketing' OR m.category LIKE 'authentication%'
                   OR (m.category = 'utility' AND NOT EXISTS (
                        SELECT 1 FROM messages i
                         WHERE i.customer_phone = m.customer_phone AND i.direction = 'inbound'
                           AND i.created_at <= m.created_at
                           AND i.created_at > m.created_at - interval '24 hours'))) AS billable_by_rule,
                  {estimate} AS rate,
                  {actual} AS actual_rate
             FROM messages m
             LEFT JOIN customers cu ON cu.phone = m.customer_phone
             LEFT JOIN message_pricing mp ON mp.message_id = m.id
            WHERE {filter} AND m.direction = 'outbound')
         SELECT category,
                count(*) FILTER (WHERE delivered) AS delivered,
                count(*) FILTER (WHERE delivered AND billable_by_rule) AS estimated_billable,
                COALESCE(sum(rate) FILTER (WHERE delivered AND billable_by_rule), 0)::int8 AS estimated_e4,
                count(*) FILTER (WHERE reported) AS reported,
                count(*) FILTER (WHERE billable IS TRUE) AS actual_billable,
                COALESCE(sum(actual_rate) FILTER (WHERE billable IS TRUE), 0)::int8 AS actual_e4,
                count(*) FILTER (WHERE pricing_type = 'free_customer_service') AS free_customer_service,
                count(*) FILTER (WHERE pricing_type = 'free_entry_point') AS free_entry_point
           FROM rows GROUP BY category ORDER BY category",
        estimate = rate_sql("m.category"),
        actual = rate_sql("COALESCE(mp.category, m.category)"),
    );
    let q = diesel::sql_query(sql).into_boxed();
    let q = match scope {
        ReportScope::Campaign(id) => q.bind::<SqlUuid, _>(id),
        ReportScope::Period { since, until } => q
            .bind::<Timestamptz, _>(since)
            .bind::<Timestamptz, _>(until),
    };
    let q = match senders {
        Some(keys) => q.bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(keys.to_vec()),
        None => q,
    };
    Ok(q.load(&mut c).await?)
}

/// What the platform reported one message cost.
#[derive(Clone, Debug, PartialEq, Eq, QueryableByName)]
pub struct MessageCharge {
    #[diesel(sql_type = Nullable<Bool>)]
    pub billable: Option<bool>,
    #[diesel(sql_type = Nullable<Text>)]
    pub pricing_model: Option<String>,
    /// The category the platform charged it as.
    #[diesel(sql_type = Nullable<Text>)]
    pub category: Option<String>,
    /// regular, free_customer_service or free_entry_point.
    #[diesel(sql_type = Nullable<Text>)]
    pub pricing_type: Option<String>,
    /// The reported category's rate for the customer's country on the day it was sent when
    /// billable, else 0 (1/10000 of the currency).
    #[diesel(sql_type = BigInt)]
    pub actual_e4: i64,
}

/// The pricing the platform reported for `message_id`; `None` before any report.
pub async fn charge_of(
    c: &mut AsyncPgConnection,
    message_id: Uuid,
) -> QueryResult<Option<MessageCharge>> {
    let sql = format!(
        "SELECT mp.billable, mp.pricing_model, mp.category, mp.pricing_type,
                CASE WHEN mp.billable IS TRUE THEN {actual} ELSE 0 END::int8 AS actual_e4
           FROM message_pricing mp
           JOIN messages m ON m.id = mp.message_id
           LEFT JOIN customers cu ON cu.phone = m.customer_phone
          WHERE mp.message_id = $1",
        actual = rate_sql("COALESCE(mp.category, m.category)"),
    );
    diesel::sql_query(sql)
        .bind::<SqlUuid, _>(message_id)
        .get_result(c)
        .await
        .optional()
}
