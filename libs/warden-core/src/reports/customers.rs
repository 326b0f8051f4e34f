//! Customers as the console finds them: by phone, BSUID or name; one customer's profile.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde::Serialize;
use warden_store::PgPool;
use warden_store::schema::{customers, suppressions};

use crate::CoreError;

#[derive(Debug, Clone, PartialEq, Serialize, Queryable)]
pub struct CustomerRow {
    /// The customer's key (phone digits, else the BSUID).
    pub phone: String,
    pub country: String,
    pub opt_in_marketing: bool,
    pub opt_in_utility: bool,
    pub opt_changed_at: Option<DateTime<Utc>>,
    pub opt_change_reason: Option<String>,
    pub tags: Vec<String>,
    pub last_interaction_at: Option<DateTime<Utc>>,
    pub bsuid: Option<String>,
    pub username: Option<String>,
    pub created_at: DateTime<Utc>,
}

type Columns = (
    customers::phone,
    customers::country,
    customers::opt_in_marketing,
    customers::opt_in_utility,
    customers::opt_changed_at,
    customers::opt_change_reason,
    customers::tags,
    customers::last_interaction_at,
    customers::bsuid,
    customers::username,
    customers::created_at,
);

const COLUMNS: Columns = (
    customers::phone,
    customers::country,
    customers::opt_in_marketing,
    customers::opt_in_utility,
    customers::opt_changed_at,
    customers::opt_change_reason,
    customers::tags,
    customers::last_interaction_at,
    customers::bsuid,
    customers::username,
    customers::created_at,
);

/// Customers whose phone starts with the digits of `q`, whose BSUID is `q`, or whose name
/// contains `q` (case-insensitive); at most `limit`, by key. An empty `q`: the most
/// recently seen customers.
pub async fn search(pg: &PgPool, q: &str, limit: i64) -> Result<Vec<CustomerRow>, CoreError> {
    let mut conn = pg.get().await?;
    let q = q.trim();
    if q.is_empty() {
        return Ok(customers::table
            .order(customers::updated_at.desc())
            .limit(limit)
            .select(COLUMNS)
            .load(&mut conn)
            .await?);
    }
    let digits: String = q.chars().filter(char::is_ascii_digit).collect();
    let looks_like_phone = !digits.is_empty()
        && q.chars()
            .all(|c| c.is_ascii_digit() || " +-().".contains(c));
    let mut query = customers::table.into_boxed();
    if looks_like_phone {
        query = query.filter(customers::phone.like(format!("{}%", escape_like(&digits))));
    } else {
        let pattern = format!("%{}%", escape_like(q));
        query = query.filter(
            customers::bsuid
                .eq(q)
                .or(customers::parent_bsuid.eq(q))
                .or(customers::phone.eq(q))
                .or(customers::username.ilike(pattern)),
        );
    }
    Ok(query
        .order(customers::phone)
        .limit(limit)
        .select(COLUMNS)
        .load(&mut conn)
        .await?)
}

fn escape_like(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// One customer and whether the number is suppressed (forgotten or blocked).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Profile {
    pub customer: CustomerRow,
    pub suppressed: Option<String>,
}

/// The customer whose key is `key`; `None` when there is none.
pub async fn profile(pg: &PgPool, key: &str) -> Result<Option<Profile>, CoreError> {
    let mut conn = pg.get().await?;
    let Some(customer) = customers::table
        .find(key)
        .select(COLUMNS)
        .first(&mut conn)
        .await
        .optional()?
    else {
        return Ok(None);
    };
    let suppressed = suppressions::table
        .find(key)
        .select(suppressions::reason)
        .first::<String>(&mut conn)
        .await
        .optional()?;
    Ok(Some(Profile {
        customer,
        suppressed,
    }))
}
