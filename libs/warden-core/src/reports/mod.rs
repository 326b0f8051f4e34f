//! Read models for the operator console: what the pages show that no tool reads already.
//! Never writes. One module per page's question:
//! - [`overview`]: sends, refusals by code and policy, the delivery funnel, and sends and
//!   refusals per hour, over a period;
//! - [`customers`]: search by phone, BSUID or name; a customer's profile;
//! - [`audit`]: the audit log filtered (actor, action, customer), and a customer's consent
//!   timeline read from it;
//! - [`campaigns`]: campaigns listed, and one campaign's refusals and failures by code;
//! - [`policies`]: the running policies as stored;
//! - [`tester`]: the policy tester (a decision for a customer, a type and a text; nothing sent).

pub mod audit;
pub mod campaigns;
pub mod customers;
pub mod overview;
pub mod policies;
pub mod tester;
