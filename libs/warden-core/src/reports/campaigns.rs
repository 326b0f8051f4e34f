//! Campaigns as the console lists them, and one campaign's refusals and failures by code.

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::prelude::*;
use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::RunQueryDsl;
use serde::Serialize;
use uuid::Uuid;
use warden_store::PgPool;
use warden_store::schema::campaigns;

use super::overview::Count;
use crate::CoreError;

#[derive(Debug, Clone, PartialEq, Serialize, Queryable)]
pub struct CampaignLine {
    pub id: Uuid,
    pub name: String,
    pub campaign_type: String,
    pub status: String,
    pub deliver_at: DateTime<Utc>,
    pub template_name: String,
    pub total_recipients: i32,
    pub sent_count: i32,
    pub delivered_count: i32,
    pub failed_count: i32,
    pub cancelled_count: i32,
    pub status_reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// The newest `limit` campaigns, newest first.
pub async fn list(pg: &PgPool, limit: i64) -> Result<Vec<CampaignLine>, CoreError> {
    let mut conn = pg.get().await?;
    Ok(campaigns::table
        .order(campaigns::created_at.desc())
        .limit(limit)
        .select((
            campaigns::id,
            campaigns::name,
            campaigns::campaign_type,
            campaigns::status,
            campaigns::deliver_at,
            campaigns::template_name,
            campaigns::total_recipients,
            campaigns::sent_count,
            campaigns::delivered_count,
            campaigns::failed_count,
            campaigns::cancelled_count,
            campaigns::status_reason,
            campaigns::created_at,
        ))
        .load(&mut conn)
        .await?)
}

/// Why a campaign's recipients were not reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcomes {
    /// Recipients the compliance decision refused, by reason code.
    pub refused_by_code: Vec<Count>,
    /// Recipients the platform failed, by its error code.
    pub failed_by_error: Vec<Count>,
}

#[derive(QueryableByName)]
struct Coded {
    #[diesel(sql_type = diesel::sql_types::Text)]
    key: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Refusals are the failed rows the send path recorded with `error_category = compliance`
/// (the audit row beside each names the reason code); failures are the other failed rows,
/// by the platform's error code.
const REFUSED_SQL: &str = "SELECT COALESCE(a.details->>'reason_code', '') AS key, count(*) AS n
  FROM messages m
  JOIN audit_logs a ON a.entity_type = 'message' AND a.entity_id = m.id::text
                   AND a.action = 'message_refused_at_dispatch'
 WHERE m.campaign_id = $1 AND m.status = 'failed'
 GROUP BY 1 ORDER BY n DESC, key";

const FAILED_SQL: &str =
    "SELECT COALESCE(m.error_code::text, m.error_category, 'unknown') AS key, count(*) AS n
  FROM messages m
 WHERE m.campaign_id = $1 AND m.status = 'failed'
   AND m.error_category IS DISTINCT FROM 'compliance'
   AND m.error_category IS DISTINCT FROM 'campaign'
 GROUP BY 1 ORDER BY n DESC, key";

/// A campaign's refusals by code and failures by error code.
pub async fn outcomes(pg: &PgPool, id: Uuid) -> Result<Outcomes, CoreError> {
    let mut conn = pg.get().await?;
    let load = async |sql: &'static str, conn: &mut warden_store::PgConn<'_>| {
        diesel::sql_query(sql)
            .bind::<SqlUuid, _>(id)
            .load::<Coded>(conn)
            .await
            .map(|rows| {
                rows.into_iter()
                    .map(|r| Count { key: r.key, n: r.n })
                    .collect::<Vec<_>>()
            })
    };
    let refused_by_code = load(REFUSED_SQL, &mut conn).await?;
    let failed_by_error = load(FAILED_SQL, &mut conn).await?;
    Ok(Outcomes {
        refused_by_code,
        failed_by_error,
    })
}
