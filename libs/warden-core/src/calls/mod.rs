//! Calls: a customer's permission for a business number to call them, and what the send
//! path asks before a call permission request goes out. Warden places no calls.
//!
//! - [`permission`]: the customer's latest answer per (sender, customer), written only by
//!   the webhook's `call_permission_reply` (`platform_events::calls`), and how tools show it.
//! - [`guard`]: a request while a grant is valid is pointless, and at most two go to one
//!   customer from one number in 24 hours; judged in the send transaction.

pub mod guard;
pub mod permission;

pub use permission::{CallPermissionView, Reply};
