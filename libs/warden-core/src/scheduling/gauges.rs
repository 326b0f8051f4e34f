//! What the scheduler's gauges show: scheduled rows due, queued rows never published,
//! campaigns per open status. Reads only.

use diesel::sql_types::{Array, BigInt, Text};
use diesel_async::RunQueryDsl;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::PgPool;

use crate::CoreError;

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(pg: &PgPool, sql: &'static str) -> Result<i64, CoreError> {
    let mut conn = pg.get().await?;
    let c: Count = diesel::sql_query(sql).get_result(&mut conn).await?;
    Ok(c.n)
}

/// Scheduled messages whose time has come (claimed or not).
pub async fn due_scheduled(pg: &PgPool) -> Result<i64, CoreError> {
    count(
        pg,
        "SELECT count(*) AS n FROM messages WHERE status = 'scheduled' AND deliver_at <= now()",
    )
    .await
}

/// Queued messages never published, and those of campaign chunks' publish batches the stream
/// has not acknowledged yet (the relay's backlog).
pub async fn unpublished(pg: &PgPool) -> Result<i64, CoreError> {
    count(
        pg,
        "SELECT (SELECT count(*) FROM messages WHERE status = 'queued' AND published_at IS NULL)
              + (SELECT coalesce(sum(cardinality(message_ids)), 0) FROM message_handoffs) AS n",
    )
    .await
}

#[derive(diesel::QueryableByName)]
struct ByStatus {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// How many campaigns are in each non-terminal status (every one listed, 0 included).
/// Never writes.
pub async fn open_campaigns(pg: &PgPool) -> Result<Vec<(CampaignStatus, i64)>, CoreError> {
    let rows: Vec<ByStatus> = {
        let mut conn = pg.get().await?;
        diesel::sql_query(
            "SELECT status, count(*) AS n FROM campaigns WHERE NOT (status = ANY($1)) GROUP BY status",
        )
        .bind::<Array<Text>, _>(CampaignStatus::names(&CampaignStatus::TERMINAL))
        .load(&mut conn)
        .await?
    };
    Ok(CampaignStatus::ALL
        .into_iter()
        .filter(|s| !s.is_terminal())
        .map(|s| {
            let n = rows
                .iter()
                .find(|r| r.status == s.as_str())
                .map_or(0, |r| r.n);
            (s, n)
        })
        .collect())
}
