//! Cost report shapes: Warden's estimate from the rate card beside what the platform
//! reported in status webhooks' `pricing` objects.

use schemars::JsonSchema;
use serde::Serialize;

#[derive(Serialize, JsonSchema)]
pub struct CostReport {
    /// The rate card's currency.
    pub currency: String,
    /// Estimated total (decimal string, 4 places): delivered messages billable by the rate
    /// card's rules (service free; utility inside an open care window free).
    pub estimated: String,
    /// Actual total (decimal string, 4 places): messages the platform reported billable, at
    /// the rate of the category it reported.
    pub actual: String,
    pub by_category: Vec<CostLineOut>,
}

#[derive(Serialize, JsonSchema)]
pub struct CostLineOut {
    pub category: String,
    /// Delivered or read messages.
    pub delivered: i64,
    pub estimated_billable: i64,
    pub estimated: String,
    /// Messages with a `pricing` report from the platform.
    pub reported: i64,
    pub actual_billable: i64,
    pub actual: String,
    /// Reported free: inside a customer service window.
    pub free_customer_service: i64,
    /// Reported free: a free entry point conversation.
    pub free_entry_point: i64,
}

/// Spend over a period: Warden's estimate beside what the platform reported.
#[derive(Serialize, JsonSchema)]
pub struct SpendOut {
    /// The senders (business numbers) whose messages it counts: the caller's.
    pub senders: Vec<String>,
    /// Start of the period (RFC 3339, inclusive).
    pub since: String,
    /// End of the period (RFC 3339, exclusive).
    pub until: String,
    #[serde(flatten)]
    pub report: CostReport,
}
