//! The per-message pricing rate card (model in force since 2025-07-01), seeded dated rows.
//!
//! Rates are USD per delivered template message, in 1/10000 USD, from the platform's
//! published rate card of 2025-07-01; service messages are free. Rate cards change a few
//! times a year: add rows with a later effective date rather than editing these.

pub const PRICING_MODEL_VERSION: &str = "PMP-2025-07-01";
pub const EFFECTIVE_DATE: (i32, u32, u32) = (2025, 7, 1);
pub const CURRENCY: &str = "USD";

pub struct Rate {
    pub country: &'static str,
    pub conversation_type: &'static str,
    pub cost_e4: i64,
}

const fn r(country: &'static str, conversation_type: &'static str, cost_e4: i64) -> Rate {
    Rate {
        country,
        conversation_type,
        cost_e4,
    }
}

pub const RATES: &[Rate] = &[
    r("ID", "marketing", 411),
    r("ID", "utility", 250),
    r("ID", "authentication", 250),
    r("ID", "service", 0),
    r("US", "marketing", 250),
    r("US", "utility", 40),
    r("US", "authentication", 135),
    r("US", "service", 0),
    r("IN", "marketing", 107),
    r("IN", "utility", 14),
    r("IN", "authentication", 14),
    r("IN", "service", 0),
    r("BR", "marketing", 625),
    r("BR", "utility", 68),
    r("BR", "authentication", 315),
    r("BR", "service", 0),
    r("GB", "marketing", 529),
    r("GB", "utility", 220),
    r("GB", "authentication", 358),
    r("GB", "service", 0),
    r("DEFAULT", "marketing", 604),
    r("DEFAULT", "utility", 77),
    r("DEFAULT", "authentication", 280),
    r("DEFAULT", "service", 0),
];

/// The pricing category reported for a conversation type.
pub fn pricing_category(conversation_type: &str) -> &'static str {
    match conversation_type {
        "marketing" => "MARKETING",
        "utility" => "UTILITY",
        "authentication" => "AUTHENTICATION",
        _ => "SERVICE",
    }
}
