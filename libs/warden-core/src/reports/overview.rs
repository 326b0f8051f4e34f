//! The console's overview: what happened since a moment (the page asks for the last 24 h).

use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use serde::Serialize;
use warden_store::PgPool;

use crate::CoreError;

/// Outbound messages created since `since`, by where they stand (the delivery funnel).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Funnel {
    /// Every outbound message recorded (accepted, held or refused at dispatch).
    pub recorded: i64,
    /// Accepted and not yet sent (scheduled, queued, sending).
    pub waiting: i64,
    /// Reached the platform: sent, delivered or read.
    pub sent: i64,
    /// Delivered or read.
    pub delivered: i64,
    pub read: i64,
    pub failed: i64,
}

/// A count under a name (a reason code, a policy id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, QueryableByName)]
pub struct Count {
    #[diesel(sql_type = Text)]
    pub key: String,
    #[diesel(sql_type = BigInt)]
    pub n: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Overview {
    pub since: DateTime<Utc>,
    pub funnel: Funnel,
    /// Inbound messages received.
    pub inbound: i64,
    /// Every refusal (a tool's send refused, a scheduled or campaign message refused).
    pub refusals: i64,
    pub refusals_by_code: Vec<Count>,
    /// Refusals a policy made, by policy id.
    pub refusals_by_policy: Vec<Count>,
}

#[derive(QueryableByName)]
struct FunnelRow {
    #[diesel(sql_type = BigInt)]
    recorded: i64,
    #[diesel(sql_type = BigInt)]
    waiting: i64,
    #[diesel(sql_type = BigInt)]
    sent: i64,
    #[diesel(sql_type = BigInt)]
    delivered: i64,
    #[diesel(sql_type = BigInt)]
    read: i64,
    #[diesel(sql_type = BigInt)]
    failed: i64,
    #[diesel(sql_type = BigInt)]
    inbound: i64,
}

const FUNNEL_SQL: &str = "SELECT
    count(*) FILTER (WHERE direction = 'outbound') AS recorded,
    count(*) FILTER (WHERE direction = 'outbound' AND status IN ('scheduled', 'queued', 'sending')) AS waiting,
    count(*) FILTER (WHERE direction = 'outbound' AND status IN ('sent', 'delivered', 'read')) AS sent,
    count(*) FILTER (WHERE direction = 'outbound' AND status IN ('delivered', 'read')) AS delivered,
    count(*) FILTER (WHERE direction = 'outbound' AND status = 'read') AS read,
    count(*) FILTER (WHERE direction = 'outbound' AND status = 'failed') AS failed,
    count(*) FILTER (WHERE direction = 'inbound') AS inbound
  FROM messages WHERE created_at >= $1";

/// Refusals are the audit rows the send path writes: `send_refused` (a tool's send) and
/// `message_refused_at_dispatch` (a scheduled or campaign message), each with its
/// `reason_code` and `policy_id`.
const REFUSALS_SQL: &str = "SELECT COALESCE(details->>$2, '') AS key, count(*) AS n
  FROM audit_logs
 WHERE occurred_at >= $1 AND action IN ('send_refused', 'message_refused_at_dispatch')
   AND ($3::text IS NULL OR details->>$2 IS NOT NULL)
 GROUP BY 1 ORDER BY n DESC, key";

/// The overview since `since`.
pub async fn overview(pg: &PgPool, since: DateTime<Utc>) -> Result<Overview, CoreError> {
    let mut conn = pg.get().await?;
    let f: FunnelRow = diesel::sql_query(FUNNEL_SQL)
        .bind::<Timestamptz, _>(since)
        .get_result(&mut conn)
        .await?;
    let by_code: Vec<Count> = diesel::sql_query(REFUSALS_SQL)
        .bind::<Timestamptz, _>(since)
        .bind::<Text, _>("reason_code")
        .bind::<Nullable<Text>, _>(None::<String>)
        .load(&mut conn)
        .await?;
    let by_policy: Vec<Count> = diesel::sql_query(REFUSALS_SQL)
        .bind::<Timestamptz, _>(since)
        .bind::<Text, _>("policy_id")
        .bind::<Nullable<Text>, _>(Some("only named"))
        .load(&mut conn)
        .await?;
    Ok(Overview {
        since,
        funnel: Funnel {
            recorded: f.recorded,
            waiting: f.waiting,
            sent: f.sent,
            delivered: f.delivered,
            read: f.read,
            failed: f.failed,
        },
        inbound: f.inbound,
        refusals: by_code.iter().map(|c| c.n).sum(),
        refusals_by_code: by_code,
        refusals_by_policy: by_policy,
    })
}
