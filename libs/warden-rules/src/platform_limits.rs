//! The platform's own limits that Warden enforces before the platform would (docs/compliance.md):
//!
//! - **Messaging limit per business portfolio** (since 2025-10-07): unique users reached by
//!   business-initiated messages per rolling 24 h, shared by every number: 250 / 2,000 /
//!   10,000 / 100,000 / unlimited. Warden's definition of *business-initiated*
//!   ([`business_initiated`]): a template message accepted while the customer's care
//!   window is closed (it opens a conversation). Free-form messages need an open window
//!   and never count; a template inside an open window does not count either.
//! - **Per-user marketing limit** (platform error 131049): no marketing to that customer
//!   for 24 h after the platform answered 131049 ([`marketing_limit_refusal`]).
//!
//! Pure: the caller loads the facts (the limit, how many customers were reached, when the
//! customer was held) and passes `now`.

use std::fmt;

use chrono::{DateTime, SecondsFormat, TimeDelta, Utc};

use crate::compliance::{Decision, ReasonCode};
use crate::kinds::Category;

/// The rolling window of the portfolio limit and of the 131049 hold.
pub const WINDOW: TimeDelta = TimeDelta::hours(24);

/// The rule id a messaging-limit refusal names (as `policy_id` and in its explanation).
pub const MESSAGING_LIMIT: &str = "messaging_limit";

/// The rule id of the 131049 hold.
pub const MARKETING_LIMIT_131049: &str = "platform_marketing_limit_131049";

/// A portfolio's messaging limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessagingLimit {
    /// At most this many unique users per rolling 24 h.
    Users(u32),
    /// No limit.
    Unlimited,
}

impl MessagingLimit {
    /// From a tier name (`TIER_250`, `TIER_2K`, `TIER_UNLIMITED`, as `messaging_limit_tier`
    /// and `phone_number_quality_update.current_limit` spell it) or a number
    /// (`business_capability_update.max_daily_conversations_per_business`: 250, 2000, ...,
    /// `-1` for unlimited). `None` when it is neither.
    ///
    /// `TIER_1K` was renamed `TIER_2K` when limits moved to portfolios; an old `TIER_1K`
    /// is read as 2,000. `TIER_50` (no longer issued) is kept as 50.
    pub fn parse(text: &str) -> Option<MessagingLimit> {
        let t = text.trim().to_ascii_uppercase();
        let users = match t.as_str() {
            "TIER_UNLIMITED" | "UNLIMITED" | "-1" => return Some(MessagingLimit::Unlimited),
            "TIER_50" => 50,
            "TIER_250" => 250,
            "TIER_1K" | "TIER_2K" => 2_000,
            "TIER_10K" => 10_000,
            "TIER_100K" => 100_000,
            other => other.parse::<u32>().ok().filter(|n| *n > 0)?,
        };
        Some(MessagingLimit::Users(users))
    }

    /// The number of users, `None` when unlimited.
    pub fn users(self) -> Option<u32> {
        match self {
            MessagingLimit::Users(n) => Some(n),
            MessagingLimit::Unlimited => None,
        }
    }

    /// The tier name of a limit read from a number (`2000` -> `TIER_2K`).
    pub fn tier(self) -> String {
        match self {
            MessagingLimit::Unlimited => "TIER_UNLIMITED".into(),
            MessagingLimit::Users(n) if n >= 1_000 && n % 1_000 == 0 => {
                format!("TIER_{}K", n / 1_000)
            }
            MessagingLimit::Users(n) => format!("TIER_{n}"),
        }
    }
}

impl fmt::Display for MessagingLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MessagingLimit::Users(n) => write!(f, "{n}"),
            MessagingLimit::Unlimited => f.write_str("UNLIMITED"),
        }
    }
}

/// True when a message of `category` sent now counts against the portfolio limit: a
/// template (any category but service) while the customer's care window is closed.
pub fn business_initiated(category: Category, window_open: bool) -> bool {
    !category.is_free_form() && !window_open
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// The refusal of a business-initiated message to a customer not reached in the last
/// 24 h, when `used` customers were reached already. `frees_at`: when the oldest of them
/// leaves the window (then one more may be reached). `None` when the limit allows it.
pub fn messaging_limit_refusal(
    limit: MessagingLimit,
    used: u64,
    frees_at: Option<DateTime<Utc>>,
) -> Option<Decision> {
    let max = limit.users()?;
    if used < u64::from(max) {
        return None;
    }
    let when = frees_at
        .map(|t| format!(" The next customer can be reached at {}.", rfc3339(t)))
        .unwrap_or_default();
    Some(Decision {
        allowed: false,
        reason_code: ReasonCode::PolicyRestriction,
        human_explanation: format!(
            "{MESSAGING_LIMIT}: the business portfolio's messaging limit is reached: {used} of {max} unique customers were reached by business-initiated messages in the rolling 24 hours, and this customer is not one of them.{when}"
        ),
        suggested_action: "Wait until the next customer can be reached, message customers whose care window is open, or ask the platform for a higher limit; campaigns pause and can be resumed with resume_campaign.".into(),
        policy_id: Some(MESSAGING_LIMIT.into()),
        retry_at: frees_at,
        hold: true,
    })
}

/// The platform answered 131049 (per-user marketing limit) for this customer at
/// `limited_at`: no marketing for 24 h, then one attempt. `None` once the 24 h are over or
/// for other categories.
pub fn marketing_limit_refusal(
    category: Category,
    limited_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Decision> {
    let at = limited_at.filter(|_| category == Category::Marketing)?;
    let until = at + WINDOW;
    if until <= now {
        return None;
    }
    Some(Decision {
        allowed: false,
        reason_code: ReasonCode::FrequencyCapExceeded,
        human_explanation: format!(
            "The platform refused a marketing message to this customer at {} with error 131049 (per-user marketing limit), so no marketing message may be sent to them until {}.",
            rfc3339(at),
            rfc3339(until)
        ),
        suggested_action: format!(
            "Do not send marketing to this customer before {}; scheduled and campaign marketing messages are held until then and tried once. Utility templates and replies inside an open care window are still allowed.",
            rfc3339(until)
        ),
        policy_id: Some(MARKETING_LIMIT_131049.into()),
        retry_at: Some(until),
        hold: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + secs, 0).unwrap()
    }

    #[test]
    fn tiers_and_numbers() {
        use MessagingLimit::*;
        for (text, want) in [
            ("TIER_250", Users(250)),
            ("tier_2k", Users(2_000)),
            ("TIER_1K", Users(2_000)),
            ("TIER_10K", Users(10_000)),
            ("TIER_100K", Users(100_000)),
            ("TIER_UNLIMITED", Unlimited),
            ("-1", Unlimited),
            ("2000", Users(2_000)),
            (" 250 ", Users(250)),
        ] {
            assert_eq!(MessagingLimit::parse(text), Some(want), "{text}");
        }
        for bad in ["", "0", "-2", "TIER_X", "lots"] {
            assert_eq!(MessagingLimit::parse(bad), None, "{bad}");
        }
        assert_eq!(Users(2_000).tier(), "TIER_2K");
        assert_eq!(Users(250).tier(), "TIER_250");
        assert_eq!(Unlimited.to_string(), "UNLIMITED");
    }

    #[test]
    fn only_templates_outside_the_window_are_business_initiated() {
        assert!(business_initiated(Category::Marketing, false));
        assert!(business_initiated(Category::Utility, false));
        assert!(business_initiated(Category::Authentication, false));
        assert!(!business_initiated(Category::Marketing, true));
        assert!(!business_initiated(Category::Service, false));
        assert!(!business_initiated(Category::Service, true));
    }

    #[test]
    fn limit_edge() {
        let l = MessagingLimit::Users(250);
        assert!(messaging_limit_refusal(l, 249, None).is_none());
        let d = messaging_limit_refusal(l, 250, Some(t(60))).unwrap();
        assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
        assert!(d.human_explanation.starts_with("messaging_limit:"));
        assert_eq!(d.policy_id.as_deref(), Some(MESSAGING_LIMIT));
        assert_eq!((d.retry_at, d.hold), (Some(t(60)), true));
        assert!(messaging_limit_refusal(MessagingLimit::Unlimited, u64::MAX, None).is_none());
    }

    #[test]
    fn hold_lasts_24_hours_and_only_for_marketing() {
        let at = t(0);
        let d = marketing_limit_refusal(Category::Marketing, Some(at), t(3600)).unwrap();
        assert!(d.human_explanation.contains("131049"));
        assert_eq!(d.retry_at, Some(at + WINDOW));
        assert!(marketing_limit_refusal(Category::Utility, Some(at), t(3600)).is_none());
        assert!(marketing_limit_refusal(Category::Marketing, None, t(3600)).is_none());
        assert!(marketing_limit_refusal(Category::Marketing, Some(at), at + WINDOW).is_none());
    }

    proptest! {
        #[test]
        fn refused_exactly_from_the_limit(max in 1u32..200_000, used in 0u64..300_000) {
            let refused = messaging_limit_refusal(MessagingLimit::Users(max), used, None).is_some();
            prop_assert_eq!(refused, used >= u64::from(max));
        }

        #[test]
        fn tier_round_trips(n in 1u32..1_000_000) {
            let l = MessagingLimit::Users(n);
            prop_assert_eq!(MessagingLimit::parse(&l.tier()).or(MessagingLimit::parse(&n.to_string())).is_some(), true);
            prop_assert_eq!(MessagingLimit::parse(&l.to_string()), Some(l));
        }
    }
}
