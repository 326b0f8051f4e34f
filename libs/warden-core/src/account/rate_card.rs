//! The rate card (PRICING_PATH, else the built-in per-message card), read at start; the
//! start-up seeding installs it as dated `conversation_pricing` rows
//! (`warden_store::prepare_with_card`): what `estimate_cost` and the cost reports price with. A new card is an edit of the file; a bad file stops start-up naming
//! the line or field (`warden_rules::pricing`).

use std::path::Path;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_rules::pricing::{self, PricingError, RateCard};
use warden_store::PgPool;
use warden_store::schema::conversation_pricing as cp;

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
