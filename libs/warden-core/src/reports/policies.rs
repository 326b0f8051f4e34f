//! The running policies, as the database holds them (seeded from the policy file).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde::Serialize;
use warden_store::PgPool;
use warden_store::schema::policies;

use crate::CoreError;

#[derive(Debug, Clone, PartialEq, Serialize, Queryable)]
pub struct StoredPolicy {
    pub id: String,
    pub policy_type: String,
    pub message_types: Vec<String>,
    pub enabled: bool,
    pub definition: serde_json::Value,
    pub position: i32,
    /// In the policy file now (false: kept from an earlier file, disabled).
    pub in_file: bool,
    pub updated_at: DateTime<Utc>,
}

/// Every stored policy, in the order they run.
pub async fn list(pg: &PgPool) -> Result<Vec<StoredPolicy>, CoreError> {
    let mut conn = pg.get().await?;
    Ok(policies::table
        .order((policies::position, policies::id))
        .select((
            policies::id,
            policies::policy_type,
            policies::message_types,
            policies::enabled,
            policies::definition,
            policies::position,
            policies::in_file,
            policies::updated_at,
        ))
        .load(&mut conn)
        .await?)
}
