//! The business account's limits and costs: the portfolio messaging limit ([`portfolio`]),
//! each number's throughput ([`throughput`]), what the platform charged per message
//! ([`pricing`]) and the rate card Warden prices with ([`rate_card`]); what is known of
//! each number, for list_senders ([`numbers`]).

pub mod numbers;
pub mod portfolio;
pub mod pricing;
pub mod protection;
pub mod rate_card;
pub mod throughput;
