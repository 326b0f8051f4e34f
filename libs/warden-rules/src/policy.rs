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

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use chrono_tz::Tz;
use serde::Deserialize;
use serde_yaml::Value;

use crate::kinds::Category;
use crate::phone::PhoneNumber;

/// The marketing cap when the file sets none (2 per rolling 24 h; docs/compliance.md).
pub const DEFAULT_MARKETING_MAX: u32 = 2;
/// Window of the default marketing cap.
pub const DEFAULT_MARKETING_WINDOW: TimeDelta = TimeDelta::hours(24);
/// Window used when a `frequency_limit` omits `window`.
pub const DEFAULT_WINDOW: TimeDelta = TimeDelta::hours(24);
/// Longest window accepted; longer ones are almost certainly typos.
pub const MAX_WINDOW: TimeDelta = TimeDelta::days(366);

/// A policy file or policy that cannot be used. `Display` is a single line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// The text is not YAML.
    Syntax {
        /// 1-based line and column, when the parser knows them.
        location: Option<(usize, usize)>,
        /// The parser's message.
        message: String,
    },
    /// A problem with the file as a whole (version, top-level keys).
    File {
        /// What is wrong.
        reason: String,
    },
    /// A problem with the policy that has this id.
    Policy {
        /// The policy's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// A problem with a policy that has no usable id.
    Unnamed {
        /// 1-based position in the `policies` list.
        index: usize,
        /// What is wrong.
        reason: String,
    },
}

impl PolicyError {
    /// The id of the policy at fault, when known.
    pub fn policy_id(&self) -> Option<&str> {
        match self {
            Self::Policy { id, .. } => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Syntax {
                location: Some((line, column)),
                message,
            } => write!(
                f,
                "policy file is not valid YAML at line {line}, column {column}: {}",
                one_line(message)
            ),
            Self::Syntax {
                location: None,
                message,
            } => write!(f, "policy file is not valid YAML: {}", one_line(message)),
            Self::File { reason } => write!(f, "policy file: {}", one_line(reason)),
            Self::Policy { id, reason } => write!(f, "policy {id:?}: {}", one_line(reason)),
            Self::Unnamed { index, reason } => {
                write!(f, "policy #{index} (no id): {}", one_line(reason))
            }
        }
    }
}

impl std::error::Error for PolicyError {}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What is wrong inside one policy (or with one of its values); the [`PolicyError`] that
/// carries it names the policy.
// Each variant is documented by its message.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyReason {
    #[error(
        "unknown type {name:?} (expected quiet_hours, frequency_limit, tag_exclusion, country_block, duplicate_guard, recipient_allowlist or content_filter)"
    )]
    UnknownType { name: String },
    #[error("`{field}` must be a time HH:MM from 00:00 to 23:59 (end may be 24:00), got {text:?}")]
    Clock { field: String, text: String },
    #[error(
        "unknown timezone {name:?}; use an IANA time zone name such as Asia/Jakarta, Europe/London or UTC, or customer (the zone of the customer's country)"
    )]
    Timezone { name: String },
    #[error(
        "`window` must be a duration such as 24h, 30m, 7d or 3600s (at most 366d), got {text:?}"
    )]
    Window { text: String },
    #[error("`{field}` entries must be text, got {got}")]
    EntryNotText { field: String, got: String },
    #[error("missing `{field}` (e.g. {example})")]
    Missing { field: String, example: String },
    #[error("`{field}` must be {hint}, got {got}")]
    WrongType {
        field: String,
        hint: String,
        got: String,
    },
    #[error("`{field}` must be a list like {example}, got {got}")]
    NotAList {
        field: String,
        example: String,
        got: String,
    },
    #[error("`{field}` must not be empty (e.g. {example})")]
    EmptyList { field: String, example: String },
    #[error("`{field}` has an empty entry")]
    EmptyEntry { field: String },
    #[error("`enabled` must be true or false, got {got}")]
    Enabled { got: String },
    #[error("`message_types`: {0}")]
    MessageType(String),
    #[error("`action` must be deny or hold, got {got}")]
    QuietAction { got: String },
    #[error("`max` must be a whole number of at least 1, got {got}")]
    Max { got: String },
    /// An agent-safety policy's own reason (see `crate::safety`).
    #[error("{0}")]
    Safety(#[from] crate::safety::SafetyPolicyError),
    #[error(
        "`prefixes` entry {prefix:?} must be the leading digits of E.164 numbers (e.g. \"1\" or \"44\"), without a leading 0"
    )]
    Prefix { prefix: String },
}

/// The four policy types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyType {
    /// No sends between two local clock times.
    QuietHours,
    /// At most `max` accepted messages per customer per rolling window.
    FrequencyLimit,
    /// No sends to customers carrying a tag.
    TagExclusion,
    /// No sends to numbers starting with a prefix.
    CountryBlock,
    /// No same content to the same customer within a window (`crate::safety::duplicate`).
    DuplicateGuard,
    /// Sends only to listed phones or tags (`crate::safety::allowlist`).
    RecipientAllowlist,
    /// No denied phrases, links only to listed domains (`crate::safety::content`).
    ContentFilter,
}

const COMMON_FIELDS: [&str; 4] = ["id", "type", "message_types", "enabled"];

impl PolicyType {
    /// Name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QuietHours => "quiet_hours",
            Self::FrequencyLimit => "frequency_limit",
            Self::TagExclusion => "tag_exclusion",
            Self::CountryBlock => "country_block",
            Self::DuplicateGuard => "duplicate_guard",
            Self::RecipientAllowlist => "recipient_allowlist",
            Self::ContentFilter => "content_filter",
        }
    }

    /// The fields only this type has.
    fn own_fields(self) -> &'static [&'static str] {
        match self {
            Self::QuietHours => &["start", "end", "timezone", "action"],
            Self::FrequencyLimit => &["max", "window"],
            Self::TagExclusion => &["tags"],
            Self::CountryBlock => &["prefixes"],
            Self::DuplicateGuard => &["window"],
            Self::RecipientAllowlist => &["phones", "tags"],
            Self::ContentFilter => &["deny_patterns", "link_domains"],
        }
    }

    const ALL: [PolicyType; 7] = [
        Self::QuietHours,
        Self::FrequencyLimit,
        Self::TagExclusion,
        Self::CountryBlock,
        Self::DuplicateGuard,
        Self::RecipientAllowlist,
        Self::ContentFilter,
    ];
}

impl fmt::Display for PolicyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyType {
    type Err = PolicyReason;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| PolicyReason::UnknownType {
                name: s.to_string(),
            })
    }
}

/// Quiet hours: local clock times in a time zone during which nothing is sent.
///
/// The interval is `start` inclusive to `end` exclusive, at minute resolution.
/// When `start > end` it crosses midnight (20:00 -> 08:00 is 20:00..24:00 and
/// 00:00..08:00). When `start == end` it is empty: quiet hours never apply (an
/// all-day block is written 00:00 -> 24:00, or as a `country_block`/disabled type).
/// Times are local wall-clock times, so daylight-saving changes move them in UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietHours {
    start: u16,
    end: u16,
    timezone: QuietZone,
    action: QuietAction,
}

/// Whose clock quiet hours are read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuietZone {
    /// One IANA zone for every customer.
    Fixed(Tz),
    /// `timezone: customer`: the zone of the customer's country ([`crate::zones`]).
    Customer,
}

/// What quiet hours do to a message that falls inside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuietAction {
    /// Refuse it (single sends, scheduled and campaign messages alike).
    #[default]
    Deny,
    /// Scheduled and campaign messages wait until the quiet period ends (then are checked
    /// again); single sends are still refused, with `retry_after_secs`.
    Hold,
}

impl QuietAction {
    /// As written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            QuietAction::Deny => "deny",
            QuietAction::Hold => "hold",
        }
    }
}

const MINUTES_PER_DAY: u16 = 24 * 60;

impl QuietHours {
    /// Builds quiet hours from `HH:MM` texts and an IANA zone name (or `customer`).
    /// `end` may be `24:00` (end of day); `start` may not. The action is `deny`.
    pub fn new(start: &str, end: &str, timezone: &str) -> Result<Self, PolicyReason> {
        let timezone = if timezone.trim() == "customer" {
            QuietZone::Customer
        } else {
            QuietZone::Fixed(parse_timezone(timezone)?)
        };
        Ok(Self {
            start: parse_clock("start", start, false)?,
            end: parse_clock("end", end, true)?,
            timezone,
            action: QuietAction::Deny,
        })
    }

    /// The same quiet hours with `action`.
    pub fn with_action(mut self, action: QuietAction) -> Self {
        self.action = action;
        self
    }

    /// Deny or hold.
    pub fn action(&self) -> QuietAction {
        self.action
    }

    /// True for `action: hold`.
    pub fn holds(&self) -> bool {
        self.action == QuietAction::Hold
    }

    /// Whose clock is read.
    pub fn zone(&self) -> QuietZone {
        self.timezone
    }

    /// The zone the clock times are read in for `phone`.
    pub fn zone_for(&self, phone: &PhoneNumber) -> Tz {
        match self.timezone {
            QuietZone::Fixed(tz) => tz,
            QuietZone::Customer => crate::zones::customer_zone(phone),
        }
    }

    fn zone_name(&self) -> &'static str {
        match self.timezone {
            QuietZone::Fixed(tz) => tz.name(),
            QuietZone::Customer => "customer",
        }
    }

    /// True when `at` falls inside the quiet interval on `phone`'s clock.
    pub fn contains_for(&self, phone: &PhoneNumber, at: DateTime<Utc>) -> bool {
        self.contains_minute(minute_in(self.zone_for(phone), at))
    }

    /// When the quiet period that contains `at` ends on `phone`'s clock (the first minute
    /// outside it, at `end`). `None` when `at` is not quiet or quiet hours never end
    /// (00:00-24:00). A local `end` skipped by a daylight-saving jump ends at the first
    /// local minute after it.
    pub fn ends_after(&self, phone: &PhoneNumber, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        use chrono::{Duration, NaiveTime, TimeZone};
        let tz = self.zone_for(phone);
        if !self.contains_for(phone, at) {
            return None;
        }
        let local = at.with_timezone(&tz).naive_local();
        let (end_day_offset, end_minute) = if self.end == MINUTES_PER_DAY {
            (1, 0)
        } else {
            (0, self.end)
        };
        let end_clock =
            NaiveTime::from_hms_opt(u32::from(end_minute / 60), u32::from(end_minute % 60), 0)?;
        // The next local `end` after now: today's, or tomorrow's when today's has passed.
        let mut candidate = (local.date() + Duration::days(end_day_offset)).and_time(end_clock);
        if candidate <= local {
            candidate += Duration::days(1);
        }
        // Several steps only around daylight-saving changes or an interval whose end
        // comes round again inside it (never for a valid interval); bounded anyway.
        for _ in 0..4 {
            let mut probe = candidate;
            // A local time that happens twice (clocks set back): the first one after `at`.
            let instant = loop {
                let found: Vec<DateTime<Utc>> = match tz.from_local_datetime(&probe) {
                    chrono::LocalResult::Single(t) => vec![t.with_timezone(&Utc)],
                    chrono::LocalResult::Ambiguous(a, b) => {
                        vec![a.with_timezone(&Utc), b.with_timezone(&Utc)]
                    }
                    // Skipped by a jump forward: the next local minute.
                    chrono::LocalResult::None => {
                        probe += Duration::minutes(1);
                        continue;
                    }
                };
                break found.into_iter().find(|t| *t > at);
            };
            if let Some(instant) = instant
                && !self.contains_for(phone, instant)
            {
                return Some(instant);
            }
            candidate += Duration::days(1);
        }
        None
    }

    /// Start as `HH:MM`.
    pub fn start(&self) -> String {
        format_clock(self.start)
    }

    /// End as `HH:MM` (`24:00` for end of day).
    pub fn end(&self) -> String {
        format_clock(self.end)
    }

    /// The time zone the clock times are in (`None` for `timezone: customer`).
    pub fn timezone(&self) -> Option<Tz> {
        match self.timezone {
            QuietZone::Fixed(tz) => Some(tz),
            QuietZone::Customer => None,
        }
    }

    /// True when `minute_of_day` (0..1440, local) falls inside the quiet interval.
    pub fn contains_minute(&self, minute_of_day: u16) -> bool {
        let m = minute_of_day;
        if self.start == self.end {
            false
        } else if self.start < self.end {
            self.start <= m && m < self.end
        } else {
            m >= self.start || m < self.end
        }
    }

    /// The local minute of day of `at` in this zone (UTC for `timezone: customer`; use
    /// [`QuietHours::contains_for`] with a phone).
    pub fn local_minute(&self, at: DateTime<Utc>) -> u16 {
        minute_in(self.timezone().unwrap_or(Tz::UTC), at)
    }

    /// True when `at` falls inside the quiet interval, in local time (UTC for
    /// `timezone: customer`).
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.contains_minute(self.local_minute(at))
    }

    /// `20:00-08:00 Asia/Jakarta`, for explanations.
    pub fn describe(&self) -> String {
        format!("{}-{} {}", self.start(), self.end(), self.zone_name())
    }
}

fn minute_in(tz: Tz, at: DateTime<Utc>) -> u16 {
    let local = at.with_timezone(&tz);
    (local.hour() * 60 + local.minute()) as u16
}

fn parse_clock(field: &str, text: &str, allow_24: bool) -> Result<u16, PolicyReason> {
    let bad = || PolicyReason::Clock {
        field: field.to_string(),
        text: text.to_string(),
    };
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 1, 2) || !digits(m, 2, 2) {
        return Err(bad());
    }
    let (h, m): (u16, u16) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    match (h, m) {
        (24, 0) if allow_24 => Ok(MINUTES_PER_DAY),
        (0..=23, 0..=59) => Ok(h * 60 + m),
        _ => Err(bad()),
    }
}

fn format_clock(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

fn parse_timezone(name: &str) -> Result<Tz, PolicyReason> {
    name.trim()
        .parse::<Tz>()
        .map_err(|_| PolicyReason::Timezone {
            name: name.to_string(),
        })
}

/// Parses a rolling-window length: a positive whole number and a unit, `s`, `m`,
/// `h` or `d` (`3600s`, `30m`, `24h`, `7d`), at most 366 days.
pub fn parse_window(text: &str) -> Result<TimeDelta, PolicyReason> {
    let bad = || PolicyReason::Window {
        text: text.to_string(),
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let number = &t[..t.len() - unit.len_utf8()];
    if number.is_empty() || number.len() > 12 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: i64 = number.parse().map_err(|_| bad())?;
    let secs_per_unit = match unit.to_ascii_lowercase() {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    let secs = n.checked_mul(secs_per_unit).ok_or_else(bad)?;
    if secs <= 0 || secs > MAX_WINDOW.num_seconds() {
        return Err(bad());
    }
    Ok(TimeDelta::seconds(secs))
}

/// Formats a window the way the file writes it: `24h`, `30m`, `7d`, `90s`
/// (days only for whole days of 2 or more, so the usual `24h` stays `24h`).
pub fn format_window(window: TimeDelta) -> String {
    let s = window.num_seconds();
    if s >= 2 * 86_400 && s % 86_400 == 0 {
        format!("{}d", s / 86_400)
    } else if s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// What a policy does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// No sends in a local time interval.
    QuietHours(QuietHours),
    /// At most `max` accepted messages per customer per rolling `window`.
    FrequencyLimit {
        /// Messages allowed in the window (at least 1).
        max: u32,
        /// Length of the rolling window.
        window: TimeDelta,
    },
    /// No sends to customers carrying any of these tags (case-insensitive; stored lower-cased).
    TagExclusion {
        /// Excluding tags.
        tags: Vec<String>,
    },
    /// No sends to numbers whose canonical digits start with any of these prefixes.
    CountryBlock {
        /// Digit prefixes, without `+`.
        prefixes: Vec<String>,
    },
    /// No same content to the same customer within a window.
    DuplicateGuard(crate::safety::duplicate::DuplicateGuard),
    /// Sends only to listed phones or tags.
    RecipientAllowlist(crate::safety::allowlist::RecipientAllowlist),
    /// Denied phrases and allowed link domains.
    ContentFilter(crate::safety::content::ContentFilter),
}

impl Rule {
    /// The type of this rule.
    pub fn policy_type(&self) -> PolicyType {
        match self {
            Self::QuietHours(_) => PolicyType::QuietHours,
            Self::FrequencyLimit { .. } => PolicyType::FrequencyLimit,
            Self::TagExclusion { .. } => PolicyType::TagExclusion,
            Self::CountryBlock { .. } => PolicyType::CountryBlock,
            Self::DuplicateGuard(_) => PolicyType::DuplicateGuard,
            Self::RecipientAllowlist(_) => PolicyType::RecipientAllowlist,
            Self::ContentFilter(_) => PolicyType::ContentFilter,
        }
    }
}

/// One validated policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    id: String,
    enabled: bool,
    message_types: Option<Vec<Category>>,
    rule: Rule,
}

/// Raw shape of one policy. Every field is kept as a YAML value and checked by hand
/// so each error can name the field; `deny_unknown_fields` is the backstop that
/// makes any field this struct does not know an error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // id and type are read from the mapping before this struct is built.
struct RawPolicy {
    id: Option<Value>,
    #[serde(rename = "type")]
    kind: Option<Value>,
    message_types: Option<Value>,
    enabled: Option<Value>,
    start: Option<Value>,
    end: Option<Value>,
    timezone: Option<Value>,
    max: Option<Value>,
    window: Option<Value>,
    tags: Option<Value>,
    prefixes: Option<Value>,
    phones: Option<Value>,
    deny_patterns: Option<Value>,
    link_domains: Option<Value>,
    action: Option<Value>,
}

/// Raw shape of the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    version: Option<Value>,
    policies: Option<Value>,
}

fn show(v: &Value) -> String {
    let text = match v {
        Value::String(s) => format!("{s:?}"),
        other => serde_json::to_string(other)
            .or_else(|_| serde_yaml::to_string(other))
            .unwrap_or_else(|_| "?".into()),
    };
    let text = one_line(&text);
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

fn scalar_text(field: &str, v: &Value) -> Result<String, PolicyReason> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(PolicyReason::EntryNotText {
            field: field.to_string(),
            got: show(other),
        }),
    }
}

fn required<'a>(
    field: &str,
    v: &'a Option<Value>,
    example: &str,
) -> Result<&'a Value, PolicyReason> {
    v.as_ref().ok_or_else(|| PolicyReason::Missing {
        field: field.to_string(),
        example: example.to_string(),
    })
}

fn string_field(field: &str, v: &Value, hint: &str) -> Result<String, PolicyReason> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(PolicyReason::WrongType {
            field: field.to_string(),
            hint: hint.to_string(),
            got: show(other),
        }),
    }
}

pub(crate) fn list_field(
    field: &str,
    v: &Value,
    example: &str,
) -> Result<Vec<String>, PolicyReason> {
    let items = match v {
        Value::Sequence(items) => items,
        other => {
            return Err(PolicyReason::NotAList {
                field: field.to_string(),
                example: example.to_string(),
                got: show(other),
            });
        }
    };
    if items.is_empty() {
        return Err(PolicyReason::EmptyList {
            field: field.to_string(),
            example: example.to_string(),
        });
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let text = scalar_text(field, item)?;
        let text = text.trim().to_string();
        if text.is_empty() {
            return Err(PolicyReason::EmptyEntry {
                field: field.to_string(),
            });
        }
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

impl Policy {
    /// The upsert key, named in denials.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Disabled policies are kept (and stored) but never applied.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The categories the policy is limited to; `None` means every category.
    pub fn message_types(&self) -> Option<&[Category]> {
        self.message_types.as_deref()
    }

    /// What the policy does.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The policy's type.
    pub fn policy_type(&self) -> PolicyType {
        self.rule.policy_type()
    }

    /// True when the policy's `message_types` include `category` (ignores `enabled`).
    pub fn applies_to(&self, category: Category) -> bool {
        self.message_types
            .as_ref()
            .is_none_or(|types| types.contains(&category))
    }

    /// True when the policy is enabled and applies to `category`.
    pub fn is_active_for(&self, category: Category) -> bool {
        self.enabled && self.applies_to(category)
    }

    /// The policy in the file's shape as JSON, for the runtime copy in the database.
    /// [`Policy::from_json`] reads it back. `message_types` is omitted when it is "all".
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{Value as J, json};
        let mut m = serde_json::Map::new();
        m.insert("id".into(), J::from(self.id.clone()));
        m.insert("type".into(), J::from(self.policy_type().as_str()));
        if let Some(types) = &self.message_types {
            m.insert(
                "message_types".into(),
                J::from(types.iter().map(|c| c.as_str()).collect::<Vec<_>>()),
            );
        }
        m.insert("enabled".into(), J::from(self.enabled));
        match &self.rule {
            Rule::QuietHours(q) => {
                m.insert("start".into(), J::from(q.start()));
                m.insert("end".into(), J::from(q.end()));
                m.insert("timezone".into(), J::from(q.zone_name()));
                if q.holds() {
                    m.insert("action".into(), J::from(q.action.as_str()));
                }
            }
            Rule::FrequencyLimit { max, window } => {
                m.insert("max".into(), json!(max));
                m.insert("window".into(), J::from(format_window(*window)));
            }
            Rule::TagExclusion { tags } => {
                m.insert("tags".into(), json!(tags));
            }
            Rule::CountryBlock { prefixes } => {
                m.insert("prefixes".into(), json!(prefixes));
            }
            Rule::DuplicateGuard(g) => {
                m.insert("window".into(), J::from(format_window(g.window)));
            }
            Rule::RecipientAllowlist(l) => {
                let phones: Vec<String> = l.phones.iter().map(|d| format!("+{d}")).collect();
                if !phones.is_empty() {
                    m.insert("phones".into(), json!(phones));
                }
                if !l.tags.is_empty() {
                    m.insert("tags".into(), json!(l.tags));
                }
            }
            Rule::ContentFilter(f) => {
                let patterns: Vec<&str> = f.deny_patterns.iter().map(|p| p.as_str()).collect();
                if !patterns.is_empty() {
                    m.insert("deny_patterns".into(), json!(patterns));
                }
                if !f.link_domains.is_empty() {
                    m.insert("link_domains".into(), json!(f.link_domains));
                }
            }
        }
        J::Object(m)
    }

    /// Reads a policy back from [`Policy::to_json`]'s shape, with the same validation
    /// as the file.
    pub fn from_json(value: &serde_json::Value) -> Result<Policy, PolicyError> {
        let yaml = serde_yaml::to_value(value).map_err(|e| PolicyError::Unnamed {
            index: 1,
            reason: e.to_string(),
        })?;
        Self::from_value(&yaml, 1)
    }

    /// Validates one entry of the `policies` list (`index` is 1-based, for errors).
    fn from_value(value: &Value, index: usize) -> Result<Policy, PolicyError> {
        let unnamed = |reason: String| PolicyError::Unnamed { index, reason };
        let map = value.as_mapping().ok_or_else(|| {
            unnamed(format!(
                "each policy must be a mapping with `id` and `type`, got {}",
                show(value)
            ))
        })?;
        let id = match map.get("id") {
            None | Some(Value::Null) => return Err(unnamed("missing `id`".into())),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(unnamed(format!("`id` must be text, got {}", show(other))));
            }
        };
        if id.trim().is_empty() {
            return Err(unnamed("`id` is empty".into()));
        }
        if id.trim() != id || id.chars().any(char::is_control) || id.chars().count() > 200 {
            return Err(unnamed(format!(
                "`id` {id:?} must be at most 200 characters without control characters or surrounding spaces"
            )));
        }
        let fail = |reason: String| PolicyError::Policy {
            id: id.clone(),
            reason,
        };
        let ptype = match map.get("type") {
            None | Some(Value::Null) => {
                return Err(fail(
                    "missing `type` (quiet_hours, frequency_limit, tag_exclusion, country_block, duplicate_guard, recipient_allowlist or content_filter)"
                        .into(),
                ));
            }
            Some(Value::String(s)) => s.parse::<PolicyType>().map_err(|e| fail(e.to_string()))?,
            Some(other) => {
                return Err(fail(format!("`type` must be text, got {}", show(other))));
            }
        };
        let allowed: Vec<&str> = COMMON_FIELDS
            .iter()
            .chain(ptype.own_fields())
            .copied()
            .collect();
        for key in map.keys() {
            let Some(key) = key.as_str() else {
                return Err(fail(format!("field names must be text, got {}", show(key))));
            };
            if allowed.contains(&key) {
                continue;
            }
            let owner = PolicyType::ALL
                .into_iter()
                .find(|t| t.own_fields().contains(&key));
            return Err(fail(match owner {
                Some(owner) => format!(
                    "field `{key}` belongs to type {owner}, not {ptype} (fields of {ptype}: {})",
                    allowed.join(", ")
                ),
                None => format!(
                    "unknown field `{key}` (fields of {ptype}: {})",
                    allowed.join(", ")
                ),
            }));
        }
        let raw: RawPolicy =
            serde_yaml::from_value(value.clone()).map_err(|e| fail(e.to_string()))?;
        Self::from_raw(id.clone(), ptype, raw).map_err(|e| fail(e.to_string()))
    }

    fn from_raw(id: String, ptype: PolicyType, raw: RawPolicy) -> Result<Policy, PolicyReason> {
        let enabled = match &raw.enabled {
            None => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(PolicyReason::Enabled { got: show(other) }),
        };
        let message_types = match &raw.message_types {
            None => None,
            Some(v) => {
                let names = list_field("message_types", v, "[marketing, utility]")?;
                let mut types = Vec::with_capacity(names.len());
                for name in names {
                    let c = name
                        .parse::<Category>()
                        .map_err(|e| PolicyReason::MessageType(e.to_string()))?;
                    if !types.contains(&c) {
                        types.push(c);
                    }
                }
                Some(types)
            }
        };
        let rule = match ptype {
            PolicyType::QuietHours => {
                let text = |field: &str, example: &str| -> Result<String, PolicyReason> {
                    let v = match field {
                        "start" => &raw.start,
                        "end" => &raw.end,
                        _ => &raw.timezone,
                    };
                    let v = required(field, v, example)?;
                    string_field(field, v, &format!("quoted text like {example}"))
                };
                let start = text("start", "\"20:00\"")?;
                let end = text("end", "\"08:00\"")?;
                let tz = text("timezone", "Asia/Jakarta")?;
                let action = match &raw.action {
                    None => QuietAction::Deny,
                    Some(Value::String(a)) if a.trim() == "deny" => QuietAction::Deny,
                    Some(Value::String(a)) if a.trim() == "hold" => QuietAction::Hold,
                    Some(other) => return Err(PolicyReason::QuietAction { got: show(other) }),
                };
                Rule::QuietHours(QuietHours::new(&start, &end, &tz)?.with_action(action))
            }
            PolicyType::FrequencyLimit => {
                let max = match required("max", &raw.max, "max: 2")? {
                    Value::Number(n) => n
                        .as_u64()
                        .filter(|n| (1..=u64::from(u32::MAX)).contains(n))
                        .map(|n| n as u32),
                    _ => None,
                }
                .ok_or_else(|| PolicyReason::Max {
                    got: raw.max.as_ref().map(show).unwrap_or_default(),
                })?;
                let window = match &raw.window {
                    None => DEFAULT_WINDOW,
                    Some(Value::String(s)) => parse_window(s)?,
                    Some(other) => parse_window(&show(other))?,
                };
                Rule::FrequencyLimit { max, window }
            }
            PolicyType::TagExclusion => {
                let tags =
                    list_field("tags", required("tags", &raw.tags, "tags: [vip]")?, "[vip]")?;
                Rule::TagExclusion {
                    tags: crate::tags::normalize_all(tags),
                }
            }
            PolicyType::CountryBlock => {
                let v = required("prefixes", &raw.prefixes, "prefixes: [\"1\"]")?;
                let mut prefixes = Vec::new();
                for p in list_field("prefixes", v, "[\"1\", \"44\"]")? {
                    let digits = p.strip_prefix('+').unwrap_or(&p);
                    if digits.is_empty()
                        || digits.len() > crate::phone::MAX_DIGITS
                        || !digits.bytes().all(|b| b.is_ascii_digit())
                        || digits.starts_with('0')
                    {
                        return Err(PolicyReason::Prefix { prefix: p });
                    }
                    if !prefixes.iter().any(|x: &String| x == digits) {
                        prefixes.push(digits.to_string());
                    }
                }
                Rule::CountryBlock { prefixes }
            }
            PolicyType::DuplicateGuard => {
                let window = match required("window", &raw.window, "window: 10m")? {
                    Value::String(s) => parse_window(s)?,
                    other => parse_window(&show(other))?,
                };
                Rule::DuplicateGuard(crate::safety::duplicate::DuplicateGuard { window })
            }
            PolicyType::RecipientAllowlist => {
                let list = |field: &str, v: &Option<Value>, example: &str| match v {
                    None => Ok(Vec::new()),
                    Some(v) => list_field(field, v, example),
                };
                let phones = list("phones", &raw.phones, "[\"+15550100\"]")?;
                let tags = list("tags", &raw.tags, "[qa]")?;
                Rule::RecipientAllowlist(crate::safety::allowlist::RecipientAllowlist::new(
                    phones, tags,
                )?)
            }
            PolicyType::ContentFilter => {
                let list = |field: &str, v: &Option<Value>, example: &str| match v {
                    None => Ok(Vec::new()),
                    Some(v) => list_field(field, v, example),
                };
                let patterns = list("deny_patterns", &raw.deny_patterns, "[\"(?i)password\"]")?;
                let domains = list("link_domains", &raw.link_domains, "[example.com]")?;
                Rule::ContentFilter(crate::safety::content::ContentFilter::new(
                    patterns, domains,
                )?)
            }
        };
        Ok(Policy {
            id,
            enabled,
            message_types,
            rule,
        })
    }

    /// Whether this (non-frequency) policy forbids sending to `ctx` at `now`:
    /// `Some(explanation, suggested action)` when it does. Frequency limits are judged
    /// by the caller with the message count, so they never deny here.
    pub(crate) fn restriction(
        &self,
        category: Category,
        tags: &[String],
        phone: &PhoneNumber,
        now: DateTime<Utc>,
    ) -> Option<(String, String)> {
        let what = format!("{} messages", category.as_str());
        match &self.rule {
            // Content rules are judged with the message (`crate::safety`).
            Rule::FrequencyLimit { .. } | Rule::DuplicateGuard(_) | Rule::ContentFilter(_) => None,
            Rule::RecipientAllowlist(list) => {
                if list.allows(phone, tags) {
                    return None;
                }
                Some((
                    format!(
                        "Policy {} allows {what} only to {}, and this recipient is not one of them.",
                        self.id,
                        list.describe()
                    ),
                    format!(
                        "Do not send to this recipient; policy {} limits this agent to its allowlist.",
                        self.id
                    ),
                ))
            }
            Rule::TagExclusion { tags: blocked } => {
                let hit = crate::tags::first_match(blocked, tags)?;
                Some((
                    format!(
                        "Policy {} forbids {what} to customers tagged {hit:?}, and this customer carries that tag.",
                        self.id
                    ),
                    format!(
                        "Do not send {what} to this customer; remove the {hit:?} tag first only if it was applied by mistake."
                    ),
                ))
            }
            Rule::CountryBlock { prefixes } => {
                let hit = prefixes.iter().find(|p| phone.starts_with_prefix(p))?;
                Some((
                    format!(
                        "Policy {} forbids {what} to numbers starting with +{hit}, and this recipient's number does.",
                        self.id
                    ),
                    format!(
                        "Do not send {what} to this number; no other send path is allowed for it."
                    ),
                ))
            }
            Rule::QuietHours(q) => {
                if !q.contains_for(phone, now) {
                    return None;
                }
                let tz = q.zone_for(phone);
                let local = format_clock(minute_in(tz, now));
                Some((
                    format!(
                        "Policy {} forbids {what} during quiet hours {}-{} {}{}; it is now {local} there.",
                        self.id,
                        q.start(),
                        q.end(),
                        tz.name(),
                        if q.zone() == QuietZone::Customer {
                            " (the customer's time zone, from their number's country)"
                        } else {
                            ""
                        }
                    ),
                    format!(
                        "Wait until {} {} (end of quiet hours) and try again, or schedule the message for then with schedule_message{}.",
                        q.end(),
                        tz.name(),
                        if q.holds() {
                            " (scheduled and campaign messages wait for it by themselves)"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
    }
}

impl serde::Serialize for Policy {
    /// Serialises as [`Policy::to_json`], the file's shape.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

/// A frequency cap in force for one category. Messages are counted per category:
/// a limit listing `[marketing, utility]` caps each of them separately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrequencyLimit {
    /// The policy that sets it; `None` for the built-in marketing default.
    pub policy_id: Option<String>,
    /// Accepted messages allowed per customer in the window.
    pub max: u32,
    /// Length of the rolling window.
    pub window: TimeDelta,
}

impl FrequencyLimit {
    /// The contract's default marketing cap: 2 per rolling 24 h.
    pub fn default_marketing() -> Self {
        Self {
            policy_id: None,
            max: DEFAULT_MARKETING_MAX,
            window: DEFAULT_MARKETING_WINDOW,
        }
    }

    /// The window as written in files, e.g. `24h`.
    pub fn window_label(&self) -> String {
        format_window(self.window)
    }
}

/// A validated set of policies, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySet {
    policies: Vec<Policy>,
}

impl PolicySet {
    /// Parses and validates a policy file (see the module docs for the format).
    pub fn from_yaml(text: &str) -> Result<PolicySet, PolicyError> {
        let doc: Value = serde_yaml::from_str(text).map_err(|e| {
            let location = e.location().map(|l| (l.line(), l.column()));
            let mut message = e.to_string();
            if let Some((line, column)) = location {
                // The location is reported once, in front; drop the parser's repeat.
                message = message.replacen(&format!(" at line {line} column {column}"), "", 1);
            }
            PolicyError::Syntax { location, message }
        })?;
        let file_err = |reason: String| PolicyError::File { reason };
        match &doc {
            Value::Null => {
                return Err(file_err(
                    "the file is empty; it needs `version: 1` and a `policies` list".into(),
                ));
            }
            Value::Mapping(_) => {}
            other => {
                return Err(file_err(format!(
                    "the top level must be a mapping with `version` and `policies`, got {}",
                    show(other)
                )));
            }
        }
        let raw: RawFile = serde_yaml::from_value(doc).map_err(|e| file_err(e.to_string()))?;
        match &raw.version {
            None => return Err(file_err("missing `version: 1`".into())),
            Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
            Some(other) => {
                return Err(file_err(format!(
                    "unsupported version {}; the only version is 1",
                    show(other)
                )));
            }
        }
        let items = match raw.policies {
            None => {
                return Err(file_err(
                    "missing `policies` (write `policies: []` for none)".into(),
                ));
            }
            Some(Value::Sequence(items)) => items,
            Some(other) => {
                return Err(file_err(format!(
                    "`policies` must be a list, got {}",
                    show(&other)
                )));
            }
        };
        let policies = items
            .iter()
            .enumerate()
            .map(|(i, v)| Policy::from_value(v, i + 1))
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_policies(policies)
    }

    /// Builds a set from policies already validated one by one (e.g. read back from
    /// the database); refuses duplicate ids.
    pub fn from_policies(policies: Vec<Policy>) -> Result<PolicySet, PolicyError> {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in policies.iter().enumerate() {
            if let Some(first) = seen.insert(p.id(), i + 1) {
                return Err(PolicyError::Policy {
                    id: p.id.clone(),
                    reason: format!(
                        "duplicate id: policies #{first} and #{} both use it; ids must be unique",
                        i + 1
                    ),
                });
            }
        }
        Ok(PolicySet { policies })
    }

    /// All policies (enabled or not), in file order.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The policy with this id.
    pub fn get(&self, id: &str) -> Option<&Policy> {
        self.policies.iter().find(|p| p.id == id)
    }

    /// Number of policies.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// True when the file has no policies (only the default marketing cap applies).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }

    /// Enabled policies that apply to `category`, in file order.
    pub fn active_for(&self, category: Category) -> impl Iterator<Item = &Policy> {
        self.policies
            .iter()
            .filter(move |p| p.is_active_for(category))
    }

    /// The cap in force for `category`: the first enabled `frequency_limit` that applies
    /// to it. Without one, marketing gets the default 2 per 24 h (a disabled cap does
    /// not lift it; raise `max` instead) and other categories are unlimited (`None`).
    pub fn frequency_limit(&self, category: Category) -> Option<FrequencyLimit> {
        self.active_for(category)
            .find_map(|p| match p.rule {
                Rule::FrequencyLimit { max, window } => Some(FrequencyLimit {
                    policy_id: Some(p.id.clone()),
                    max,
                    window,
                }),
                _ => None,
            })
            .or_else(|| (category == Category::Marketing).then(FrequencyLimit::default_marketing))
    }

    /// Non-fatal remarks for `policies check`: frequency limits shadowed by an earlier
    /// one, and quiet hours that can never apply.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.policies {
            match &p.rule {
                Rule::QuietHours(q) if q.start == q.end => out.push(format!(
                    "policy {:?}: start equals end ({}), so these quiet hours never apply",
                    p.id,
                    q.start()
                )),
                Rule::FrequencyLimit { .. } if p.enabled => {
                    for c in Category::ALL {
                        if !p.applies_to(c) {
                            continue;
                        }
                        if let Some(first) = self.frequency_limit(c)
                            && first.policy_id.as_deref() != Some(p.id())
                        {
                            out.push(format!(
                                "policy {:?}: ignored for {} because policy {:?} comes first and sets that cap",
                                p.id,
                                c.as_str(),
                                first.policy_id.unwrap_or_default()
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// Every policy as JSON ([`Policy::to_json`]), in file order.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Array(self.policies.iter().map(Policy::to_json).collect())
    }
}

#[cfg(test)]
#[path = "policy_hold_tests.rs"]
mod hold_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    const CONTRACT_EXAMPLE: &str = r#"
version: 1
policies:
  - id: quiet_hours_jakarta
    type: quiet_hours            # no sends from start to end, local time; may cross midnight
    message_types: [marketing]
    start: "20:00"
    end: "08:00"
    timezone: Asia/Jakarta
  - id: marketing_cap
    type: frequency_limit        # at most `max` accepted messages per customer per rolling window
    message_types: [marketing]
    max: 2
    window: 24h
  - id: skip_vip
    type: tag_exclusion          # customers carrying any of these tags get none
    message_types: [marketing]
    tags: [vip]
  - id: no_marketing_to_us
    type: country_block          # recipients whose number starts with a prefix get none
    message_types: [marketing]
    prefixes: ["1"]
    enabled: true
"#;

    /// acceptance/warden_acc/policy.py: policy_yaml()
    const ACC_MAIN: &str = r#"# Policies for the acceptance run (written by acceptance/warden_acc/policy.py).
version: 1
policies:
  - id: acc_marketing_cap
    type: frequency_limit
    message_types: [marketing]
    max: 2
    window: 24h
  - id: acc_no_marketing_to_plus1
    type: country_block
    message_types: [marketing]
    prefixes: ["1"]
    enabled: true
  - id: acc_skip_no_marketing_tag
    type: tag_exclusion
    message_types: [marketing]
    tags: [acc_no_marketing]
"#;

    /// policy.py: INVALID_POLICY_FILES, verbatim.
    const INVALID: [(&str, &str, &str); 4] = [
        (
            "unknown-type",
            "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: carrier_pigeon_limit\n    message_types: [marketing]\n    max: 3\n",
            "unknown type",
        ),
        (
            "unknown-field",
            "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: tag_exclusion\n    message_types: [marketing]\n    tags: [vip]\n    favourite_colour: blue\n",
            "unknown field `favourite_colour`",
        ),
        (
            "bad-timezone",
            "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: quiet_hours\n    message_types: [marketing]\n    start: \"20:00\"\n    end: \"08:00\"\n    timezone: Mars/Olympus_Mons\n",
            "unknown timezone \"Mars/Olympus_Mons\"",
        ),
        (
            "duplicate-id",
            "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: tag_exclusion\n    message_types: [marketing]\n    tags: [vip]\n  - id: acc_bad_policy\n    type: country_block\n    message_types: [marketing]\n    prefixes: [\"999\"]\n",
            "duplicate id",
        ),
    ];

    fn quiet_yaml(start: &str, end: &str) -> String {
        format!(
            "version: 1\npolicies:\n  - id: acc_quiet_now_utc\n    type: quiet_hours\n    message_types: [marketing]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: UTC\n  - id: acc_quiet_same_clock_kathmandu\n    type: quiet_hours\n    message_types: [utility]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: Asia/Kathmandu\n  - id: acc_quiet_disabled\n    type: quiet_hours\n    message_types: [utility]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: UTC\n    enabled: false\n  - id: acc_block_all_types_to_7\n    type: country_block\n    prefixes: [\"7\"]\n"
        )
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    fn err(text: &str) -> PolicyError {
        PolicySet::from_yaml(text).expect_err("must be refused")
    }

    #[test]
    fn parses_the_contract_example() {
        let set = PolicySet::from_yaml(CONTRACT_EXAMPLE).unwrap();
        let ids: Vec<_> = set.policies().iter().map(Policy::id).collect();
        assert_eq!(
            ids,
            [
                "quiet_hours_jakarta",
                "marketing_cap",
                "skip_vip",
                "no_marketing_to_us"
            ]
        );
        let q = match set.policies()[0].rule() {
            Rule::QuietHours(q) => q.clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(q.describe(), "20:00-08:00 Asia/Jakarta");
        assert!(set.policies().iter().all(Policy::enabled));
        assert_eq!(
            set.policies()[0].message_types(),
            Some(&[Category::Marketing][..])
        );
        assert!(set.warnings().is_empty(), "{:?}", set.warnings());
    }

    #[test]
    fn parses_the_acceptance_main_file() {
        let set = PolicySet::from_yaml(ACC_MAIN).unwrap();
        assert_eq!(set.len(), 3);
        let cap = set.frequency_limit(Category::Marketing).unwrap();
        assert_eq!(cap.policy_id.as_deref(), Some("acc_marketing_cap"));
        assert_eq!(cap.max, 2);
        assert_eq!(cap.window, TimeDelta::hours(24));
        assert_eq!(set.frequency_limit(Category::Utility), None);
        assert_eq!(set.frequency_limit(Category::Service), None);
    }

    #[test]
    fn parses_the_acceptance_quiet_hours_file() {
        let set = PolicySet::from_yaml(&quiet_yaml("23:30", "01:30")).unwrap();
        assert_eq!(set.len(), 4);
        assert!(!set.get("acc_quiet_disabled").unwrap().enabled());
        let all = set.get("acc_block_all_types_to_7").unwrap();
        assert_eq!(all.message_types(), None);
        for c in Category::ALL {
            assert!(all.is_active_for(c));
        }
    }

    #[test]
    fn every_invalid_acceptance_file_names_the_policy_and_reason() {
        for (name, text, reason) in INVALID {
            let e = err(text);
            let line = e.to_string();
            assert_eq!(e.policy_id(), Some("acc_bad_policy"), "{name}: {line}");
            assert!(line.contains("acc_bad_policy"), "{name}: {line}");
            assert!(line.contains(reason), "{name}: {line}");
            assert!(!line.contains('\n'), "{name}: {line}");
        }
    }

    #[test]
    fn invalid_yaml_reports_line_and_column() {
        // policy.py: invalid_policy_yaml()
        let e = err("version: 1\npolicies: [\n  - id: broken\n    type: frequency_limit\n");
        let line = e.to_string();
        assert!(
            matches!(
                e,
                PolicyError::Syntax {
                    location: Some(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            line.starts_with("policy file is not valid YAML at line "),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn file_level_errors() {
        assert!(err("").to_string().contains("empty"));
        assert!(err("# only a comment\n").to_string().contains("empty"));
        assert!(err("- a\n- b\n").to_string().contains("top level"));
        assert!(
            err("policies: []\n")
                .to_string()
                .contains("missing `version")
        );
        assert!(
            err("version: 2\npolicies: []\n")
                .to_string()
                .contains("unsupported version 2")
        );
        assert!(
            err("version: 1\n")
                .to_string()
                .contains("missing `policies`")
        );
        assert!(
            err("version: 1\npolicies: {}\n")
                .to_string()
                .contains("must be a list")
        );
        let e = err("version: 1\npolicies: []\nextra: 1\n").to_string();
        assert!(e.contains("unknown field `extra`"), "{e}");
        assert!(
            PolicySet::from_yaml("version: 1\npolicies: []\n")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn policy_level_errors() {
        let wrap = |body: &str| format!("version: 1\npolicies:\n  - {body}\n");
        let cases = [
            (
                "type: tag_exclusion\n    tags: [vip]",
                "policy #1 (no id): missing `id`",
            ),
            (
                "id: 7\n    type: tag_exclusion\n    tags: [a]",
                "`id` must be text",
            ),
            (
                "id: \"\"\n    type: tag_exclusion\n    tags: [a]",
                "`id` is empty",
            ),
            ("id: a\n    tags: [vip]", "missing `type`"),
            (
                "id: a\n    type: TAG_EXCLUSION\n    tags: [vip]",
                "unknown type",
            ),
            ("id: a\n    type: tag_exclusion", "missing `tags`"),
            (
                "id: a\n    type: tag_exclusion\n    tags: []",
                "`tags` must not be empty",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: vip",
                "`tags` must be a list",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: [vip]\n    max: 3",
                "field `max` belongs to type frequency_limit, not tag_exclusion",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: [vip]\n    enabled: maybe",
                "`enabled` must be true or false",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: [promo]",
                "unknown category \"promo\"",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: [template]",
                "template",
            ),
            (
                "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: []",
                "must not be empty",
            ),
            ("id: a\n    type: frequency_limit", "missing `max`"),
            (
                "id: a\n    type: frequency_limit\n    max: 0",
                "`max` must be a whole number of at least 1",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: -1",
                "`max` must be",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: 2.5",
                "`max` must be",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: two",
                "`max` must be",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: 2\n    window: 24",
                "`window` must be a duration",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: 2\n    window: 1w",
                "`window` must be a duration",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: 2\n    window: 0h",
                "`window` must be a duration",
            ),
            (
                "id: a\n    type: frequency_limit\n    max: 2\n    window: 400d",
                "`window` must be a duration",
            ),
            (
                "id: a\n    type: quiet_hours\n    end: \"08:00\"\n    timezone: UTC",
                "missing `start`",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"08:00\"",
                "missing `timezone`",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"25:00\"\n    end: \"08:00\"\n    timezone: UTC",
                "`start` must be a time HH:MM",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"20:60\"\n    end: \"08:00\"\n    timezone: UTC",
                "`start` must be a time",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"8\"\n    timezone: UTC",
                "`end` must be a time",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"24:00\"\n    end: \"08:00\"\n    timezone: UTC",
                "`start` must be a time",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"08:00\"\n    timezone: asia/jakarta",
                "unknown timezone",
            ),
            (
                "id: a\n    type: quiet_hours\n    start: 1200\n    end: \"08:00\"\n    timezone: UTC",
                "`start` must be quoted text",
            ),
            (
                "id: a\n    type: country_block\n    prefixes: [\"0\"]",
                "without a leading 0",
            ),
            (
                "id: a\n    type: country_block\n    prefixes: [\"1a\"]",
                "`prefixes` entry \"1a\"",
            ),
            (
                "id: a\n    type: country_block\n    prefixes: [\"\"]",
                "empty entry",
            ),
        ];
        for (body, expected) in cases {
            let e = err(&wrap(body)).to_string();
            assert!(
                e.contains(expected),
                "{body:?}\n  got: {e}\n  want: {expected}"
            );
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(
            PolicySet::from_yaml(&wrap("id: a\n    type: tag_exclusion\n    tags: [vip]")).is_ok()
        );
    }

    #[test]
    fn lenient_spellings_that_are_still_unambiguous() {
        let set = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: a\n    type: country_block\n    prefixes: [1, \"+44\", \"1\"]\n    message_types: [MARKETING, Text]\n  - id: b\n    type: quiet_hours\n    start: \"8:00\"\n    end: \"24:00\"\n    timezone: Europe/London\n  - id: c\n    type: frequency_limit\n    max: 5\n",
        )
        .unwrap();
        match set.get("a").unwrap().rule() {
            Rule::CountryBlock { prefixes } => assert_eq!(prefixes, &["1", "44"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            set.get("a").unwrap().message_types(),
            Some(&[Category::Marketing, Category::Service][..])
        );
        match set.get("b").unwrap().rule() {
            Rule::QuietHours(q) => {
                assert_eq!((q.start(), q.end()), ("08:00".into(), "24:00".into()));
                assert!(q.contains_minute(23 * 60 + 59));
                assert!(!q.contains_minute(7 * 60 + 59));
            }
            other => panic!("{other:?}"),
        }
        // window defaults to 24h; the cap applies to every category.
        for c in Category::ALL {
            let l = set.frequency_limit(c).unwrap();
            assert_eq!(
                (l.policy_id.as_deref(), l.max, l.window_label().as_str()),
                (Some("c"), 5, "24h")
            );
        }
    }

    #[test]
    fn windows() {
        for (text, secs) in [
            ("24h", 86_400),
            ("30m", 1800),
            ("7d", 604_800),
            ("3600s", 3600),
            (" 2H ", 7200),
        ] {
            assert_eq!(parse_window(text).unwrap().num_seconds(), secs, "{text}");
        }
        for bad in [
            "",
            "h",
            "24",
            "-1h",
            "1.5h",
            "1w",
            "0s",
            "367d",
            "99999999999999d",
            "24 h",
            "٣h",
        ] {
            assert!(parse_window(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_window(TimeDelta::hours(24)), "24h");
        assert_eq!(format_window(TimeDelta::days(7)), "7d");
        assert_eq!(format_window(TimeDelta::minutes(90)), "90m");
        assert_eq!(format_window(TimeDelta::seconds(61)), "61s");
    }

    #[test]
    fn default_and_first_frequency_limit() {
        let empty = PolicySet::default();
        assert_eq!(
            empty.frequency_limit(Category::Marketing),
            Some(FrequencyLimit::default_marketing())
        );
        assert_eq!(empty.frequency_limit(Category::Utility), None);
        let set = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: off\n    type: frequency_limit\n    message_types: [marketing]\n    max: 10\n    enabled: false\n  - id: first\n    type: frequency_limit\n    message_types: [marketing, utility]\n    max: 3\n    window: 7d\n  - id: second\n    type: frequency_limit\n    message_types: [marketing]\n    max: 1\n",
        )
        .unwrap();
        let m = set.frequency_limit(Category::Marketing).unwrap();
        assert_eq!((m.policy_id.as_deref(), m.max), (Some("first"), 3));
        assert_eq!(m.window, TimeDelta::days(7));
        assert_eq!(set.frequency_limit(Category::Utility).unwrap().max, 3);
        assert_eq!(set.frequency_limit(Category::Authentication), None);
        let w = set.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("\"second\"") && w[0].contains("\"first\""),
            "{w:?}"
        );
        // Only a disabled cap: the default still holds.
        let only_off = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: off\n    type: frequency_limit\n    max: 10\n    enabled: false\n",
        )
        .unwrap();
        assert_eq!(
            only_off.frequency_limit(Category::Marketing),
            Some(FrequencyLimit::default_marketing())
        );
    }

    #[test]
    fn json_round_trip() {
        let set = PolicySet::from_yaml(CONTRACT_EXAMPLE).unwrap();
        let json = set.to_json();
        assert_eq!(serde_json::to_value(&set.policies()[1]).unwrap(), json[1]);
        assert_eq!(json[0]["type"], "quiet_hours");
        assert_eq!(json[0]["timezone"], "Asia/Jakarta");
        assert_eq!(json[1]["window"], "24h");
        assert_eq!(json[1]["max"], 2);
        assert_eq!(json[3]["prefixes"][0], "1");
        let back: Vec<Policy> = json
            .as_array()
            .unwrap()
            .iter()
            .map(|v| Policy::from_json(v).unwrap())
            .collect();
        assert_eq!(PolicySet::from_policies(back).unwrap(), set);
        let all = PolicySet::from_yaml(&quiet_yaml("01:00", "02:00")).unwrap();
        let j = all.get("acc_block_all_types_to_7").unwrap().to_json();
        assert!(j.get("message_types").is_none());
        assert_eq!(
            Policy::from_json(&j).unwrap(),
            *all.get("acc_block_all_types_to_7").unwrap()
        );
        assert!(Policy::from_json(&serde_json::json!({"id": "x", "type": "nope"})).is_err());
    }

    #[test]
    fn quiet_hours_across_midnight() {
        let q = QuietHours::new("20:00", "08:00", "UTC").unwrap();
        assert!(q.contains(utc(2025, 1, 1, 20, 0)));
        assert!(q.contains(utc(2025, 1, 1, 23, 59)));
        assert!(q.contains(utc(2025, 1, 2, 0, 0)));
        assert!(q.contains(utc(2025, 1, 2, 7, 59)));
        assert!(!q.contains(utc(2025, 1, 2, 8, 0)), "end is exclusive");
        assert!(!q.contains(utc(2025, 1, 2, 19, 59)));
        let day = QuietHours::new("09:00", "17:00", "UTC").unwrap();
        assert!(day.contains(utc(2025, 1, 1, 9, 0)));
        assert!(!day.contains(utc(2025, 1, 1, 17, 0)));
        assert!(!day.contains(utc(2025, 1, 1, 8, 59)));
        let never = QuietHours::new("10:00", "10:00", "UTC").unwrap();
        assert!((0..MINUTES_PER_DAY).all(|m| !never.contains_minute(m)));
        let always = QuietHours::new("00:00", "24:00", "UTC").unwrap();
        assert!((0..MINUTES_PER_DAY).all(|m| always.contains_minute(m)));
    }

    #[test]
    fn quiet_hours_in_kathmandu() {
        // UTC+05:45 all year.
        let q = QuietHours::new("11:00", "13:00", "Asia/Kathmandu").unwrap();
        assert!(!q.contains(utc(2025, 6, 1, 5, 14)), "10:59 local");
        assert!(q.contains(utc(2025, 6, 1, 5, 15)), "11:00 local");
        assert!(q.contains(utc(2025, 6, 1, 7, 14)), "12:59 local");
        assert!(!q.contains(utc(2025, 6, 1, 7, 15)), "13:00 local");
        // The acceptance scenario: a +/-1h window around the UTC clock never contains
        // the Kathmandu clock, at any minute of the day.
        for minute in 0..(24 * 60) {
            let now = utc(2025, 6, 1, 0, 0) + TimeDelta::minutes(minute);
            let start = format_clock(((minute + 1440 - 60) % 1440) as u16);
            let end = format_clock(((minute + 60) % 1440) as u16);
            let here = QuietHours::new(&start, &end, "UTC").unwrap();
            let there = QuietHours::new(&start, &end, "Asia/Kathmandu").unwrap();
            assert!(here.contains(now), "{start}-{end} at minute {minute}");
            assert!(
                !there.contains(now),
                "{start}-{end} Kathmandu at minute {minute}"
            );
        }
    }

    #[test]
    fn quiet_hours_follow_daylight_saving() {
        let q = QuietHours::new("22:00", "07:00", "America/New_York").unwrap();
        // 2025-03-09: clocks jump 02:00 EST -> 03:00 EDT.
        assert!(q.contains(utc(2025, 3, 9, 6, 30)), "01:30 EST");
        assert!(
            q.contains(utc(2025, 3, 9, 7, 30)),
            "03:30 EDT, after the gap"
        );
        assert!(
            !q.contains(utc(2025, 3, 9, 11, 30)),
            "07:30 EDT (06:30 in EST would be quiet)"
        );
        assert!(
            q.contains(utc(2025, 3, 8, 11, 30)),
            "06:30 EST the day before"
        );
        // 2025-11-02: 02:00 EDT -> 01:00 EST (01:xx happens twice; both quiet).
        assert!(q.contains(utc(2025, 11, 2, 5, 30)), "01:30 EDT");
        assert!(q.contains(utc(2025, 11, 2, 6, 30)), "01:30 EST");
        let london = QuietHours::new("09:00", "10:00", "Europe/London").unwrap();
        assert!(london.contains(utc(2025, 7, 1, 8, 30)), "09:30 BST");
        assert!(!london.contains(utc(2025, 1, 1, 8, 30)), "08:30 GMT");
        assert!(london.contains(utc(2025, 1, 1, 9, 30)), "09:30 GMT");
    }

    fn brute_force(start: u16, end: u16, minute: u16) -> bool {
        // Walk the clock from start to end (exclusive), wrapping at midnight.
        if start == end {
            return false;
        }
        let mut m = start;
        loop {
            if m == minute {
                return true;
            }
            m = (m + 1) % MINUTES_PER_DAY;
            if m == end % MINUTES_PER_DAY {
                return false;
            }
        }
    }

    proptest! {
        #[test]
        fn quiet_hours_match_brute_force(start in 0u16..1440, end in 0u16..=1440, minute in 0u16..1440) {
            let q = QuietHours::new(&format_clock(start), &format_clock(end), "UTC").unwrap();
            let expected = if end == MINUTES_PER_DAY {
                minute >= start
            } else {
                brute_force(start, end, minute)
            };
            prop_assert_eq!(q.contains_minute(minute), expected);
        }

        #[test]
        fn quiet_hours_use_local_minute(
            start in 0u16..1440,
            end in 0u16..1440,
            secs in 0i64..(10 * 365 * 86_400),
            zone in prop::sample::select(vec!["UTC", "Asia/Kathmandu", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Jakarta", "Pacific/Chatham"]),
        ) {
            let q = QuietHours::new(&format_clock(start), &format_clock(end), zone).unwrap();
            let at = utc(2020, 1, 1, 0, 0) + TimeDelta::seconds(secs);
            let local = at.with_timezone(&zone.parse::<Tz>().unwrap());
            let minute = (local.hour() * 60 + local.minute()) as u16;
            prop_assert_eq!(q.contains(at), brute_force(start, end, minute));
        }

        #[test]
        fn parser_never_panics_on_any_text(text in "\\PC{0,300}") {
            let _ = PolicySet::from_yaml(&text);
        }

        #[test]
        fn parser_never_panics_on_policy_shaped_yaml(
            id in "[a-z_]{0,8}",
            kind in prop::sample::select(vec!["quiet_hours", "frequency_limit", "tag_exclusion", "country_block", "x"]),
            key in prop::sample::select(vec!["start", "end", "timezone", "max", "window", "tags", "prefixes", "message_types", "enabled", "other"]),
            value in prop::sample::select(vec!["\"20:00\"", "[1, a]", "[]", "24h", "-3", "UTC", "true", "null", "{a: 1}", "\"\"", "99999999999999999999"]),
        ) {
            let text = format!("version: 1\npolicies:\n  - id: {id}\n    type: {kind}\n    {key}: {value}\n");
            if let Err(e) = PolicySet::from_yaml(&text) {
                prop_assert!(!e.to_string().contains('\n'));
            }
        }

        #[test]
        fn window_format_round_trips(secs in 1i64..=(366 * 86_400)) {
            let w = TimeDelta::seconds(secs);
            prop_assert_eq!(parse_window(&format_window(w)).unwrap(), w);
        }
    }
}
