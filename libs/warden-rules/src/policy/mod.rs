//! Business policies: the YAML file at `POLICIES_PATH`, validated when loaded.
//!
//! The format (docs/compliance.md, The policy file):
//!
//! ```yaml
//! version: 1
//! policies:
//!   - id: quiet_hours_jakarta      # upsert key; named in every denial
//!     type: quiet_hours            # quiet_hours | frequency_limit | tag_exclusion | country_block
//!     message_types: [marketing]   # default: every type
//!     enabled: true                # default: true
//!     start: "20:00"               # quiet_hours: local HH:MM, end exclusive, may cross midnight
//!     end: "08:00"
//!     timezone: Asia/Jakarta       # IANA name, or `customer` (from the number's country)
//!     action: deny                 # deny (default) | hold: scheduled and campaign messages wait
//!   - id: marketing_cap
//!     type: frequency_limit        # max accepted messages per customer per rolling window
//!     max: 2
//!     window: 24h                  # <n>s | <n>m | <n>h | <n>d; default 24h
//!   - id: skip_vip
//!     type: tag_exclusion          # customers carrying any of these tags get none
//!     tags: [vip]
//!   - id: no_marketing_to_us
//!     type: country_block          # numbers starting with any prefix get none
//!     prefixes: ["1"]
//! ```
//!
//! Validation is strict because a typo in a compliance rule must stop startup rather
//! than silently allow messages: unknown fields (also fields of another type), unknown
//! types, bad times, bad time zones, bad windows and duplicate ids are errors. Every
//! error is one line that names the policy (when it has an id) and the reason.
//!
//! The module is split by concern: `error` (what can be wrong), the file format and its
//! validation (`parse`), each type's [`Rule`] and the [`Policy`] that carries it (`rule`),
//! quiet hours' clock (`quiet_hours`), window lengths (`window`), whether one policy forbids
//! a send (`restriction`) and the set in file order with the frequency cap in force (`set`).

mod error;
mod parse;
mod quiet_hours;
mod restriction;
mod rule;
mod set;
mod window;

use chrono::TimeDelta;

pub use error::{PolicyError, PolicyReason};
pub use quiet_hours::{QuietAction, QuietHours, QuietZone};
pub use rule::{Policy, PolicyType, Rule};
pub use set::{FrequencyLimit, PolicySet};
pub use window::{format_window, parse_window};

/// The marketing cap when the file sets none (2 per rolling 24 h; docs/compliance.md).
pub const DEFAULT_MARKETING_MAX: u32 = 2;
/// Window of the default marketing cap.
pub const DEFAULT_MARKETING_WINDOW: TimeDelta = TimeDelta::hours(24);
/// Window used when a `frequency_limit` omits `window`.
pub const DEFAULT_WINDOW: TimeDelta = TimeDelta::hours(24);
/// Longest window accepted; longer ones are almost certainly typos.
pub const MAX_WINDOW: TimeDelta = TimeDelta::days(366);

#[cfg(test)]
mod hold_tests;
