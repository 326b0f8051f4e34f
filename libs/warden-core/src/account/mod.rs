//! The business account's limits and costs: the portfolio messaging limit ([`portfolio`]),
//! each number's throughput ([`throughput`]), what the platform charged per message
//! ([`pricing`]) and the rate card Warden prices with ([`rate_card`]); what is known of
//! each number, for list_senders ([`numbers`]), and what the platform said of it
//! ([`number_facts`]: display number, quality, name status; which number a quality update
//! is about).

pub mod displays;
pub mod number_facts;
pub mod numbers;
pub mod portfolio;
pub mod pricing;
pub mod protection;
pub mod rate_card;
pub mod throughput;
