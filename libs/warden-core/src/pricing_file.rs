//! The rate card (PRICING_PATH, else the built-in per-message card), read at start and
//! installed as dated `conversation_pricing` rows: what `estimate_cost` and the cost
//! reports price with. A new card is an edit of the file; a bad file stops start-up naming
//! the line or field (`warden_rules::pricing`).

use std::path::Path;

use diesel::prelude::*;
use diesel::upsert::excluded;
use diesel_async::RunQueryDsl;
use warden_rules::pricing::{self, PricingError, RateCard};
use warden_store::schema::conversation_pricing as cp;
use warden_store::{DbError, PgPool};

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

/// The pricing category reported for a stored category.
fn pricing_category(category: &str) -> String {
    category.to_ascii_uppercase()
}

/// Upsert every rate of `card` as a dated row; returns how many.
pub async fn install(pg: &PgPool, card: &RateCard) -> Result<usize, DbError> {
    let mut c = pg.get().await?;
    let mut n = 0;
    for dated in &card.cards {
        let version = dated.version();
        for (country, rates) in &dated.rates {
            for (category, cost) in rates {
                diesel::insert_into(cp::table)
                    .values((
                        cp::country.eq(country),
                        cp::conversation_type.eq(category),
                        cp::cost_e4.eq(cost),
                        cp::currency.eq(&card.currency),
                        cp::pricing_category.eq(pricing_category(category)),
                        cp::pricing_model_version.eq(&version),
                        cp::effective_date.eq(dated.effective_from),
                    ))
                    .on_conflict((cp::country, cp::conversation_type, cp::effective_date))
                    .do_update()
                    .set((
                        cp::cost_e4.eq(excluded(cp::cost_e4)),
                        cp::currency.eq(excluded(cp::currency)),
                        cp::pricing_category.eq(excluded(cp::pricing_category)),
                        cp::pricing_model_version.eq(excluded(cp::pricing_model_version)),
                    ))
                    .execute(&mut c)
                    .await?;
                n += 1;
            }
        }
    }
    Ok(n)
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
