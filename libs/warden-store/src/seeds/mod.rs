//! Idempotent seed data: re-running updates rows in place and never adds duplicates.

pub mod errors;

use diesel::prelude::*;
use diesel::upsert::excluded;
use warden_rules::pricing::RateCard;

use crate::schema::{conversation_pricing, error_knowledge_base, policies};

/// One policy from the policy file, in the form the policies table stores.
#[derive(Clone, Debug)]
pub struct PolicySeed {
    pub id: String,
    pub policy_type: String,
    pub message_types: Vec<String>,
    pub enabled: bool,
    pub definition: serde_json::Value,
}

/// Upsert the error knowledge base; returns the number of codes.
pub fn seed_errors(conn: &mut impl Connection<Backend = diesel::pg::Pg>) -> QueryResult<usize> {
    use error_knowledge_base::dsl as ekb;
    for e in errors::KNOWN_ERRORS {
        diesel::insert_into(ekb::error_knowledge_base)
            .values((
                ekb::code.eq(e.code),
                ekb::title.eq(e.title),
                ekb::category.eq(e.category),
                ekb::can_retry.eq(matches!(e.handling, crate::models::Handling::Retry)),
                ekb::handling.eq(e.handling.as_str()),
                ekb::human_explanation.eq(e.explanation),
                ekb::suggested_action.eq(e.action),
            ))
            .on_conflict(ekb::code)
            .do_update()
            .set((
                ekb::title.eq(excluded(ekb::title)),
                ekb::category.eq(excluded(ekb::category)),
                ekb::can_retry.eq(excluded(ekb::can_retry)),
                ekb::handling.eq(excluded(ekb::handling)),
                ekb::human_explanation.eq(excluded(ekb::human_explanation)),
                ekb::suggested_action.eq(excluded(ekb::suggested_action)),
            ))
            .execute(conn)?;
    }
    Ok(errors::KNOWN_ERRORS.len())
}

/// Upsert every rate of `card` (PRICING_PATH or the built-in card) as a dated row;
/// returns the number of rows. A later card is new rows, an edited rate updates its row.
pub fn seed_rate_card(
    conn: &mut impl Connection<Backend = diesel::pg::Pg>,
    card: &RateCard,
) -> QueryResult<usize> {
    use conversation_pricing::dsl as cp;
    let mut n = 0;
    for dated in &card.cards {
        let version = dated.version();
        for (country, rates) in &dated.rates {
            for (category, cost) in rates {
                diesel::insert_into(cp::conversation_pricing)
                    .values((
                        cp::country.eq(country),
                        cp::conversation_type.eq(category),
                        cp::cost_e4.eq(cost),
                        cp::currency.eq(&card.currency),
                        cp::pricing_category.eq(category.to_ascii_uppercase()),
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
                    .execute(conn)?;
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Make the policies table the runtime copy of the file: upsert by id in file order, and
/// mark policies that left the file as such (kept for the audit trail, never applied).
pub fn seed_policies(
    conn: &mut impl Connection<Backend = diesel::pg::Pg>,
    seeds: &[PolicySeed],
) -> QueryResult<usize> {
    use policies::dsl as p;
    for (position, seed) in seeds.iter().enumerate() {
        diesel::insert_into(p::policies)
            .values((
                p::id.eq(&seed.id),
                p::policy_type.eq(&seed.policy_type),
                p::message_types.eq(&seed.message_types),
                p::enabled.eq(seed.enabled),
                p::definition.eq(&seed.definition),
                p::position.eq(position as i32),
                p::in_file.eq(true),
            ))
            .on_conflict(p::id)
            .do_update()
            .set((
                p::policy_type.eq(excluded(p::policy_type)),
                p::message_types.eq(excluded(p::message_types)),
                p::enabled.eq(excluded(p::enabled)),
                p::definition.eq(excluded(p::definition)),
                p::position.eq(excluded(p::position)),
                p::in_file.eq(true),
                p::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)?;
    }
    let ids: Vec<&str> = seeds.iter().map(|s| s.id.as_str()).collect();
    diesel::update(
        p::policies
            .filter(p::id.ne_all(ids))
            .filter(p::in_file.eq(true)),
    )
    .set((
        p::in_file.eq(false),
        p::enabled.eq(false),
        p::updated_at.eq(diesel::dsl::now),
    ))
    .execute(conn)?;
    Ok(seeds.len())
}
