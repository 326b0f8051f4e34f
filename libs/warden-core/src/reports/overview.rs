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

/// One hour of the overview's chart: outbound messages recorded and refusals in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, QueryableByName)]
pub struct Hour {
    /// The hour's start (UTC).
    #[diesel(sql_type = Timestamptz)]
    pub hour: DateTime<Utc>,
    /// Outbound messages recorded (what the funnel's `recorded` counts).
    #[diesel(sql_type = BigInt)]
    pub sends: i64,
    /// Refusals (what `refusals` counts).
    #[diesel(sql_type = BigInt)]
    pub refusals: i64,
}

/// Every hour from the one holding `$1` to the current one, empty hours included (a chart
/// without gaps). The same rows as the funnel and the refusals, bucketed in UTC.
const HOURLY_SQL: &str = "WITH hours AS (
    SELECT generate_series(date_trunc('hour', $1::timestamptz, 'UTC'),
                           date_trunc('hour', now(), 'UTC'), interval '1 hour') AS hour),
  s AS (SELECT date_trunc('hour', created_at, 'UTC') AS hour, count(*) AS n
          FROM messages WHERE created_at >= $1 AND direction = 'outbound' GROUP BY 1),
  r AS (SELECT date_trunc('hour', occurred_at, 'UTC') AS hour, count(*) AS n
          FROM audit_logs
         WHERE occurred_at >= $1 AND action IN ('send_refused', 'message_refused_at_dispatch')
         GROUP BY 1)
SELECT hours.hour, COALESCE(s.n, 0) AS sends, COALESCE(r.n, 0) AS refusals
  FROM hours LEFT JOIN s USING (hour) LEFT JOIN r USING (hour)
 ORDER BY hours.hour";

/// Sends and refusals per hour since `since`, oldest first.
pub async fn hourly(pg: &PgPool, since: DateTime<Utc>) -> Result<Vec<Hour>, CoreError> {
    let mut conn = pg.get().await?;
    Ok(diesel::sql_query(HOURLY_SQL)
        .bind::<Timestamptz, _>(since)
        .load(&mut conn)
        .await?)
}

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
