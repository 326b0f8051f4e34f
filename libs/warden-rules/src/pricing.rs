//! The rate card as data: dated cards of per-message rates by recipient country, read from
//! `PRICING_PATH` (YAML or JSON) or the built-in card (the platform's per-message card in
//! force since 2025-07-01). A new card is an edit of the file, read at start; a bad file
//! stops start-up naming the line or the field.
//!
//! ```yaml
//! currency: USD
//! cards:
//!   - effective_from: 2025-07-01
//!     pricing_model: PMP
//!     rates:              # USD per delivered message; DEFAULT: every other country
//!       ID: {marketing: 0.0411, utility: 0.025, authentication: 0.025, service: 0}
//!       DEFAULT: {marketing: 0.0604, utility: 0.0077, authentication: 0.028,
//!                 authentication_international: 0.0450, service: 0}
//! ```
//!
//! Billing rules kept here: service messages are free; a utility template sent inside an
//! open care window is free ([`billable`]). `marketing_lite` (a marketing template sent
//! through the Marketing Messages API) is marketing: a card that gives it no rate of its
//! own charges it the country's marketing rate.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::Deserialize;

/// The categories a card prices (stored spellings of `conversation_type`).
pub const CATEGORIES: [&str; 6] = [
    "marketing",
    "marketing_lite",
    "utility",
    "authentication",
    "authentication_international",
    "service",
];

/// Why a rate-card file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PricingError {
    /// Not YAML/JSON of the card's shape (with the line and column when known).
    #[error("{0}")]
    Syntax(String),
    /// A value that cannot be a rate card (the field is named).
    #[error("{field}: {problem}")]
    Field {
        /// The field's path, e.g. `cards[0].rates.ID.marketing`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
}

fn field(field: impl Into<String>, problem: impl Into<String>) -> PricingError {
    PricingError::Field {
        field: field.into(),
        problem: problem.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCard {
    currency: String,
    cards: Vec<FileDated>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDated {
    effective_from: String,
    #[serde(default = "pmp")]
    pricing_model: String,
    rates: BTreeMap<String, BTreeMap<String, f64>>,
}

fn pmp() -> String {
    "PMP".to_owned()
}

/// A validated rate card.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCard {
    /// ISO 4217 code, upper case.
    pub currency: String,
    /// Oldest first.
    pub cards: Vec<DatedCard>,
}

/// One card and the day it takes effect.
#[derive(Debug, Clone, PartialEq)]
pub struct DatedCard {
    /// The first day it applies.
    pub effective_from: NaiveDate,
    /// `PMP` (per-message pricing).
    pub pricing_model: String,
    /// Country (ISO 3166 alpha-2, upper case, or `DEFAULT`) -> category -> rate in 1/10000
    /// of the currency.
    pub rates: BTreeMap<String, BTreeMap<String, i64>>,
}

impl DatedCard {
    /// `pricing_model_version` as stored (e.g. `PMP-2025-07-01`).
    pub fn version(&self) -> String {
        format!("{}-{}", self.pricing_model, self.effective_from)
    }
}

/// Parse and validate a rate-card file.
pub fn parse(text: &str) -> Result<RateCard, PricingError> {
    let file: FileCard = serde_yaml::from_str(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
            .unwrap_or_default();
        PricingError::Syntax(format!("{at}{e}"))
    })?;
    let currency = file.currency.trim().to_ascii_uppercase();
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(field(
            "currency",
            "must be a 3-letter currency code such as USD",
        ));
    }
    if file.cards.is_empty() {
        return Err(field("cards", "must list at least one dated card"));
    }
    let mut cards = Vec::with_capacity(file.cards.len());
    for (i, c) in file.cards.into_iter().enumerate() {
        let at = |f: &str| format!("cards[{i}].{f}");
        let effective_from = NaiveDate::parse_from_str(c.effective_from.trim(), "%Y-%m-%d")
            .map_err(|_| field(at("effective_from"), "must be a date YYYY-MM-DD"))?;
        let pricing_model = c.pricing_model.trim().to_ascii_uppercase();
        if pricing_model.is_empty() {
            return Err(field(at("pricing_model"), "must not be empty"));
        }
        if !c.rates.contains_key("DEFAULT") {
            return Err(field(
                at("rates"),
                "must have a DEFAULT country (every other country)",
            ));
        }
        let mut rates = BTreeMap::new();
        for (country, by_category) in c.rates {
            let country_key = country.trim().to_ascii_uppercase();
            let ok = country_key == "DEFAULT"
                || (country_key.len() == 2 && country_key.bytes().all(|b| b.is_ascii_uppercase()));
            if !ok {
                return Err(field(
                    at(&format!("rates.{country}")),
                    "must be a 2-letter country code or DEFAULT",
                ));
            }
            let mut row = BTreeMap::new();
            for (category, rate) in by_category {
                let name = category.trim().to_ascii_lowercase().replace('-', "_");
                let f = at(&format!("rates.{country}.{category}"));
                if !CATEGORIES.contains(&name.as_str()) {
                    return Err(field(
                        f,
                        format!("unknown category (one of {})", CATEGORIES.join(", ")),
                    ));
                }
                if !rate.is_finite() || !(0.0..=1000.0).contains(&rate) {
                    return Err(field(f, "must be a rate between 0 and 1000"));
                }
                row.insert(name, (rate * 10_000.0).round() as i64);
            }
            for needed in ["marketing", "utility", "authentication", "service"] {
                if !row.contains_key(needed) {
                    return Err(field(
                        at(&format!("rates.{country}.{needed}")),
                        "is missing",
                    ));
                }
            }
            if !row.contains_key("marketing_lite") {
                let marketing = row["marketing"];
                row.insert("marketing_lite".to_owned(), marketing);
            }
            rates.insert(country_key, row);
        }
        cards.push(DatedCard {
            effective_from,
            pricing_model,
            rates,
        });
    }
    cards.sort_by_key(|c| c.effective_from);
    if cards
        .windows(2)
        .any(|w| w[0].effective_from == w[1].effective_from)
    {
        return Err(field("cards", "two cards take effect on the same day"));
    }
    Ok(RateCard { currency, cards })
}

/// The built-in card: the platform's per-message card of 2025-07-01 (USD).
pub const BUILTIN: &str = include_str!("pricing_default.yaml");

/// [`BUILTIN`], parsed (it is checked by a test).
pub fn builtin() -> RateCard {
    parse(BUILTIN).expect("the built-in rate card is valid")
}

/// Is a delivered message of `category` charged? Service messages never are; a utility
/// template sent while the customer's care window was open is free.
pub fn billable(category: &str, window_open: bool) -> bool {
    match category {
        "service" => false,
        "utility" => !window_open,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_builtin_card_is_the_per_message_card() {
        let card = builtin();
        assert_eq!(card.currency, "USD");
        let c = &card.cards[0];
        assert_eq!(c.version(), "PMP-2025-07-01");
        assert_eq!(c.rates["ID"]["marketing"], 411);
        assert!(c.rates["IN"].contains_key("authentication_international"));
        assert_eq!(c.rates["DEFAULT"]["service"], 0);
    }

    #[test]
    fn a_bad_file_names_its_line_or_field() {
        let e = parse("currency: USD\ncards:\n  - effective_from: 2026-01-01\n    rates: [1,\n")
            .unwrap_err();
        assert!(e.to_string().contains("line"), "{e}");
        let e = parse(
            "currency: USD\ncards:\n  - effective_from: 2026-01-01\n    rates:\n      DEFAULT: {marketing: -1, utility: 0, authentication: 0, service: 0}\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            field(
                "cards[0].rates.DEFAULT.marketing",
                "must be a rate between 0 and 1000"
            )
        );
        let e = parse("currency: USD\ncards:\n  - effective_from: 2026-13-01\n    rates: {}\n")
            .unwrap_err();
        assert!(e.to_string().starts_with("cards[0].effective_from"), "{e}");
        let e = parse(
            "currency: USD\ncards:\n  - effective_from: 2026-01-01\n    rates:\n      DEFAULT: {marketing: 1, utility: 0, authentication: 0}\n",
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("cards[0].rates.DEFAULT.service"),
            "{e}"
        );
    }

    #[test]
    fn marketing_lite_is_charged_as_marketing_unless_the_card_says() {
        let card = builtin();
        for rates in card.cards[0].rates.values() {
            assert_eq!(rates["marketing_lite"], rates["marketing"]);
        }
        let own = parse(
            "currency: USD\ncards:\n  - effective_from: 2026-01-01\n    rates:\n      DEFAULT: {marketing: 0.05, marketing_lite: 0.04, utility: 0, authentication: 0, service: 0}\n",
        )
        .unwrap();
        assert_eq!(own.cards[0].rates["DEFAULT"]["marketing_lite"], 400);
        assert!(billable("marketing_lite", true));
    }

    #[test]
    fn care_window_makes_utility_free() {
        assert!(!billable("utility", true));
        assert!(billable("utility", false));
        assert!(!billable("service", false));
        assert!(billable("marketing", true));
        assert!(billable("authentication_international", true));
    }

    proptest! {
        #[test]
        fn any_text_is_parsed_or_refused_never_a_panic(text in ".{0,200}") {
            let _ = parse(&text);
        }

        #[test]
        fn rates_round_to_ten_thousandths(cents in 0u32..100_000) {
            let rate = f64::from(cents) / 10_000.0;
            let text = format!(
                "currency: USD\ncards:\n  - effective_from: 2026-01-01\n    rates:\n      DEFAULT: {{marketing: {rate}, utility: 0, authentication: 0, service: 0}}\n"
            );
            let card = parse(&text).unwrap();
            prop_assert_eq!(card.cards[0].rates["DEFAULT"]["marketing"], i64::from(cents));
        }
    }
}
