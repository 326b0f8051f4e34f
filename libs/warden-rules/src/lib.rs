//! Warden's compliance rules as pure functions.
//!
//! Every sender (tools, scheduler, campaigns, retries) asks this crate whether a
//! message may leave, so the rules live in one place and can be tested without a
//! database, a cache or a clock. Nothing here does I/O, spawns tasks or reads the
//! time: callers pass `now` and the facts they loaded (opt-out flags, last inbound
//! timestamp, frequency count) and get a [`compliance::Decision`] back.
//!
//! Modules:
//! - [`phone`]: canonical phone numbers (E.164 digits) and their country.
//! - [`kinds`]: message types, template categories, the effective category, channel.
//! - [`window`]: the 24-hour customer care window.
//! - [`message_status`]: a message's delivery status and how it moves forward.
//! - [`policy`]: the business policy file (YAML) and its validation.
//! - [`compliance`]: the decision itself and the frequency-cap status.
//! - [`call_permission`]: a customer's permission to be called, and the requests' daily limit.
//! - [`holder`]: who holds a conversation on a shared number, and what agents may send then.
//! - [`platform_limits`]: the portfolio messaging limit and the 131049 marketing hold.
//! - [`zones`]: a customer's time zone from their number's country (quiet hours).
//! - [`recheck`]: the dispatcher's last look before the platform call.
//! - [`safety`]: agent safety (idempotency keys, duplicate guard, allowlist, content filter).
//! - [`rich`]: media, interactive, location and reaction messages and their limits.
//! - [`keywords`]: stop / resume keywords in inbound texts.
//! - [`text`]: control characters and template-parameter text the platform refuses.
//! - [`tags`]: customer tags, compared case-insensitively (stored lower-cased).
//! - [`templates`]: template placeholders, variables, names and bodies.
//! - [`audience`]: campaign audience filters.
//! - [`campaign_status`]: a campaign's states and which of them are active / terminal.
//! - [`pricing`]: the rate card as data (dated cards, validation) and what is billable.
//! - [`order`]: a customer's cart (an inbound `order`) read leniently, and its totals per
//!   currency in exact decimal arithmetic.
//! - [`throughput`]: a business number's messages per second, from what the platform said.
//! - [`import`]: streaming parsers for customer import files.
//! - [`errors`]: one error type wrapping the module errors for callers that
//!   only need "this input is invalid, here is why".

#![warn(missing_docs)]

pub mod audience;
pub mod bsuid;
pub mod call_permission;
pub mod campaign_status;
pub mod compliance;
pub mod errors;
pub mod holder;
pub mod import;
pub mod keywords;
pub mod kinds;
pub mod message_status;
pub mod order;
pub mod phone;
pub mod platform_limits;
pub mod policy;
pub mod pricing;
pub mod recheck;
pub mod rich;
pub mod safety;
pub mod tags;
pub mod template_params;
pub mod template_spec;
pub mod templates;
pub mod text;
pub mod throughput;
pub mod window;
pub mod zones;

pub use campaign_status::CampaignStatus;
pub use compliance::{ComplianceInput, Decision, FrequencyStatus, ReasonCode, decide};
pub use errors::RuleError;
pub use kinds::{Category, ContentKind, MessageType, TemplateCategory, parse_channel};
pub use message_status::MessageStatus;
pub use phone::{PhoneError, PhoneNumber, canonicalize};
pub use policy::{FrequencyLimit, Policy, PolicyError, PolicySet};
