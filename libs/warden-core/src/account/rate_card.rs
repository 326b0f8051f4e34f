//! The rate card (PRICING_PATH, else the built-in per-message card), read at start; the
//! start-up seeding installs it as dated `conversation_pricing` rows
//! (`warden_store::prepare_with_card`): what `estimate_cost` and the cost reports price with. A new card is an edit of the file; a bad file stops start-up naming
//! the line or field (`warden_rules::pricing`). [`rate`] is the row in force for a country
//! and category.

use std::path::Path;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_rules::kinds::Category;
use warden_rules::pricing::{self, PricingError, RateCard};
use warden_store::PgPool;
use warden_store::models::PricingEntry;
use warden_store::schema::conversation_pricing as cp;

use crate::CoreError;

/// The country whose rates apply where a country has none of its own.
pub const DEFAULT_COUNTRY: &str = "DEFAULT";

#[derive(Debug, thiserror::Error)]
pub enum PricingFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Invalid { path: String, source: PricingError },
}

/// The card at `path`, or the built-in one when None.
pub fn load(path: Option<&Path>) -> Result<RateCard, PricingFileError> {
    let Some(path) = path else {
        return Ok(pricing::builtin());
    };
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| PricingFileError::Read {
        path: shown.clone(),
        source,
    })?;
    pricing::parse(&text).map_err(|source| PricingFileError::Invalid {
        path: shown,
        source,
    })
}

/// The currency of the card in force today (None: no rates installed).
pub async fn installed_currency(pg: &PgPool) -> Option<String> {
    let mut c = pg.get().await.ok()?;
    cp::table
        .filter(cp::effective_date.le(chrono::Utc::now().date_naive()))
        .order(cp::effective_date.desc())
        .select(cp::currency)
        .first(&mut c)
        .await
        .ok()
}

/// The rate in force today for `country` and `category`, else the [`DEFAULT_COUNTRY`]'s
/// (`PricingEntry::country` says which); `None` when neither has one (no card installed).
pub async fn rate(
    pg: &PgPool,
    country: &str,
    category: Category,
) -> Result<Option<PricingEntry>, CoreError> {
    let today = chrono::Utc::now().date_naive();
    let mut conn = pg.get().await?;
    for c in [country, DEFAULT_COUNTRY] {
        let row = cp::table
            .filter(cp::country.eq(c))
            .filter(cp::conversation_type.eq(category.as_str()))
            .filter(cp::effective_date.le(today))
            .order(cp::effective_date.desc())
            .select(PricingEntry::as_select())
            .first(&mut conn)
            .await
            .optional()?;
        if row.is_some() {
            return Ok(row);
        }
    }
    Ok(None)
}
