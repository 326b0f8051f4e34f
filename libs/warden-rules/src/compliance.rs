//! The compliance decision: may this message be sent to this customer now?
//!
//! Checks run in this order (docs/compliance.md) and the first refusal is reported:
//! 1. opt-out, 2. care window (free-form only), 3. frequency limit, 4. the other
//!    enabled policies that apply to the category, in file order.
//!
//! Opt-out semantics (docs/compliance.md: a stop keyword opts out of marketing *and*
//! utility; platform error 131050 and a marketing "stop" only of marketing):
//! - a marketing opt-out blocks **marketing** only;
//! - a utility opt-out blocks **utility, authentication and service** (free-form
//!   replies): a customer who sent STOP gets nothing more until they opt back in.
//!
//! The decision is pure: the caller loads the facts (flags, tags, last inbound time,
//! the number of accepted messages of this category inside the frequency window of
//! [`PolicySet::frequency_limit`]) and passes `now`. A send must commit the decision
//! and its count atomically; that is the caller's job, this only decides.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};

use crate::kinds::Category;
use crate::phone::PhoneNumber;
use crate::policy::{FrequencyLimit, PolicySet};
use crate::window;

/// Suggested action when a free-form message needs a template.
pub const TEMPLATE_REQUIRED_ACTION: &str =
    "send an approved utility or marketing template instead (send_template)";

/// Why a message is allowed or refused (the reason codes of docs/tools.md, plus `OK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReasonCode {
    /// Allowed.
    Ok,
    /// Free-form outside the care window.
    TemplateRequired,
    /// The customer opted out of this category.
    UserOptedOut,
    /// The frequency cap is reached.
    FrequencyCapExceeded,
    /// A business policy forbids it.
    PolicyRestriction,
    /// The template is not (or no longer) APPROVED; only [`crate::recheck::recheck()`] and template sends
    /// report it.
    TemplateNotApproved,
    /// Someone else (a person, another app) holds the conversation ([`crate::holder`]).
    ConversationHeld,
}

impl ReasonCode {
    /// The wire form, e.g. `FREQUENCY_CAP_EXCEEDED`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "OK",
            Self::TemplateRequired => "TEMPLATE_REQUIRED",
            Self::UserOptedOut => "USER_OPTED_OUT",
            Self::FrequencyCapExceeded => "FREQUENCY_CAP_EXCEEDED",
            Self::PolicyRestriction => "POLICY_RESTRICTION",
            Self::TemplateNotApproved => "TEMPLATE_NOT_APPROVED",
            Self::ConversationHeld => "CONVERSATION_HELD",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ReasonCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Everything the decision needs to know about one planned message.
#[derive(Debug, Clone, PartialEq)]
pub struct ComplianceInput {
    /// The effective category (a template send uses its template's category).
    pub category: Category,
    /// The customer opted out of marketing.
    pub opted_out_marketing: bool,
    /// The customer opted out of utility (blocks utility, authentication and service).
    pub opted_out_utility: bool,
    /// The customer's tags, for `tag_exclusion`.
    pub tags: Vec<String>,
    /// The recipient, for `country_block`.
    pub phone: PhoneNumber,
    /// Platform timestamp of the customer's last inbound message.
    pub last_inbound_at: Option<DateTime<Utc>>,
    /// Accepted messages of this category inside the frequency window.
    pub recent_count: u32,
    /// The instant to decide at.
    pub now: DateTime<Utc>,
}

/// The answer, shaped like check_compliance's response (plus the denying policy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Whether the message may be sent.
    pub allowed: bool,
    /// `OK` or the first refusal's code.
    pub reason_code: ReasonCode,
    /// One or two plain sentences saying why.
    pub human_explanation: String,
    /// What the agent should do next (instead, when refused).
    pub suggested_action: String,
    /// The policy that refused (or that sets the cap that was hit), if any.
    pub policy_id: Option<String>,
    /// When the refusal lifts by itself (end of quiet hours, end of a platform limit), if
    /// known: single sends report it as `retry_after_secs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<DateTime<Utc>>,
    /// Scheduled and campaign messages are held until `retry_at` (then checked again)
    /// instead of failing.
    #[serde(skip)]
    pub hold: bool,
}

impl Decision {
    pub(crate) fn deny(
        code: ReasonCode,
        why: String,
        action: String,
        policy_id: Option<String>,
    ) -> Self {
        Self {
            allowed: false,
            reason_code: code,
            human_explanation: why,
            suggested_action: action,
            policy_id,
            retry_at: None,
            hold: false,
        }
    }

    /// Whole seconds until `retry_at` from `now` (at least 1), when known.
    pub fn retry_after_secs(&self, now: DateTime<Utc>) -> Option<u64> {
        self.retry_at
            .map(|t| u64::try_from((t - now).num_seconds().max(1)).unwrap_or(1))
    }
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn noun(category: Category) -> &'static str {
    match category {
        Category::Service => "free-form (service) messages",
        Category::Marketing => "marketing messages",
        Category::Utility => "utility messages",
        Category::Authentication => "authentication messages",
    }
}

/// True when the customer's opt-outs block `category` (see the module docs).
pub fn blocked_by_opt_out(
    category: Category,
    opted_out_marketing: bool,
    opted_out_utility: bool,
) -> bool {
    match category {
        Category::Marketing => opted_out_marketing,
        Category::Utility | Category::Authentication | Category::Service => opted_out_utility,
    }
}

/// The opt-out step alone: what schedule_message checks when scheduling.
/// `None` when the opt-outs do not block `category`.
pub fn opt_out_refusal(
    category: Category,
    opted_out_marketing: bool,
    opted_out_utility: bool,
) -> Option<Decision> {
    if !blocked_by_opt_out(category, opted_out_marketing, opted_out_utility) {
        return None;
    }
    let resume = "they can opt back in by sending START, UNSTOP or RESUME";
    let (why, action) = match category {
        Category::Marketing if !opted_out_utility => (
            "The customer opted out of marketing messages, so no marketing message may be sent to them.".to_string(),
            format!(
                "Do not send marketing to this customer; utility templates and replies inside an open care window are still allowed, and {resume}."
            ),
        ),
        Category::Marketing => (
            "The customer opted out of marketing and utility messages, so no marketing message may be sent to them.".to_string(),
            format!("Do not message this customer; {resume}."),
        ),
        other => (
            "The customer opted out of utility messages (for example by sending STOP), which blocks utility, authentication and free-form service messages.".to_string(),
            format!("Do not send {} to this customer; {resume}.", noun(other)),
        ),
    };
    Some(Decision::deny(ReasonCode::UserOptedOut, why, action, None))
}

/// Decides whether the message described by `input` may be sent (see the module docs
/// for the order of checks and the opt-out semantics).
pub fn decide(policies: &PolicySet, input: &ComplianceInput) -> Decision {
    let category = input.category;
    if let Some(refusal) =
        opt_out_refusal(category, input.opted_out_marketing, input.opted_out_utility)
    {
        return refusal;
    }

    // An implausible inbound time (before 2010, or in the future) opens no window.
    let last_inbound_at = window::usable_inbound(input.last_inbound_at, input.now);
    if category.is_free_form() && !window::window_open(last_inbound_at, input.now) {
        return window_refusal(last_inbound_at);
    }

    let limit = policies.frequency_limit(category);
    if let Some(limit) = &limit
        && input.recent_count >= limit.max
    {
        return Decision::deny(
            ReasonCode::FrequencyCapExceeded,
            cap_reason(category, input.recent_count, limit),
            cap_action(category, limit),
            limit.policy_id.clone(),
        );
    }

    for policy in policies.active_for(category) {
        if let Some((why, action)) =
            policy.restriction(category, &input.tags, &input.phone, input.now)
        {
            let mut d = Decision::deny(
                ReasonCode::PolicyRestriction,
                why,
                action,
                Some(policy.id().to_string()),
            );
            if let crate::policy::Rule::QuietHours(q) = policy.rule() {
                d.retry_at = q.ends_after(&input.phone, input.now);
                d.hold = q.holds() && d.retry_at.is_some();
            }
            return d;
        }
    }

    let (why, action) = if category.is_free_form() {
        let closes = window::expires_at(input.last_inbound_at)
            .map(rfc3339)
            .unwrap_or_default();
        (
            format!(
                "A free-form message is allowed: the customer's care window is open until {closes}, they have not opted out and no policy forbids it."
            ),
            format!(
                "Send it with send_message or reply_customer before the window closes at {closes}."
            ),
        )
    } else {
        let cap = match &limit {
            Some(l) => format!(
                "{} of {} allowed {} in the rolling {} window have been used",
                input.recent_count,
                l.max,
                noun(category),
                l.window_label()
            ),
            None => format!("no frequency limit applies to {}", noun(category)),
        };
        (
            format!(
                "A {} message is allowed: the customer has not opted out, {cap}, and no policy forbids it.",
                category.as_str()
            ),
            format!(
                "Send it with send_template using an approved {} template.",
                category.as_str()
            ),
        )
    };
    Decision {
        allowed: true,
        reason_code: ReasonCode::Ok,
        human_explanation: why,
        suggested_action: action,
        policy_id: None,
        retry_at: None,
        hold: false,
    }
}

pub(crate) fn window_refusal(last_inbound_at: Option<DateTime<Utc>>) -> Decision {
    let why = match (last_inbound_at, window::expires_at(last_inbound_at)) {
        (Some(last), Some(end)) => format!(
            "Free-form messages need an open 24-hour customer care window; this customer's window closed at {} (24 hours after their last message at {}).",
            rfc3339(end),
            rfc3339(last)
        ),
        _ => "Free-form messages need an open 24-hour customer care window, and this customer has never messaged, so no window is open.".to_string(),
    };
    Decision::deny(
        ReasonCode::TemplateRequired,
        why,
        TEMPLATE_REQUIRED_ACTION.to_string(),
        None,
    )
}

fn cap_source(limit: &FrequencyLimit) -> String {
    match &limit.policy_id {
        Some(id) => format!("set by policy {id}"),
        None => "the default limit".to_string(),
    }
}

fn cap_reason(category: Category, count: u32, limit: &FrequencyLimit) -> String {
    format!(
        "The customer has already received {count} {} in the rolling {} window; the limit is {} ({}).",
        noun(category),
        limit.window_label(),
        limit.max,
        cap_source(limit)
    )
}

fn cap_action(category: Category, limit: &FrequencyLimit) -> String {
    format!(
        "Do not send more {} to this customer now; wait until older messages leave the rolling {} window (check_frequency_cap tells when), or schedule the message for later with schedule_message.",
        noun(category),
        limit.window_label()
    )
}

/// check_frequency_cap's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrequencyStatus {
    /// The cap is reached: another message of this category would be refused.
    pub is_capped: bool,
    /// Why it is capped; empty when not capped.
    pub reason: String,
    /// What to do instead; empty when not capped.
    pub suggested_action: String,
    /// When the cap resets; present only when capped.
    pub reset_hint: Option<String>,
    /// When the next message may go, if known (the oldest counted message + window).
    pub next_slot_at: Option<DateTime<Utc>>,
    /// Messages still allowed in the window; `None` when no cap applies.
    pub remaining: Option<u32>,
    /// The cap in force, if any.
    #[serde(skip)]
    pub limit: Option<FrequencyLimit>,
}

impl FrequencyStatus {
    /// Not capped: `remaining` of the cap in force, or no cap at all.
    fn not_capped(remaining: Option<(u32, FrequencyLimit)>) -> Self {
        let (remaining, limit) = match remaining {
            Some((n, limit)) => (Some(n), Some(limit)),
            None => (None, None),
        };
        FrequencyStatus {
            is_capped: false,
            reason: String::new(),
            suggested_action: String::new(),
            reset_hint: None,
            next_slot_at: None,
            remaining,
            limit,
        }
    }
}

/// The frequency-cap status of a customer for `category` (check_frequency_cap uses
/// marketing). `recent_count` is the number of accepted messages inside the window;
/// `oldest_in_window` the acceptance time of the oldest of them, from which the time
/// the next slot frees is computed (exact when the count equals the cap).
pub fn frequency_status(
    policies: &PolicySet,
    category: Category,
    recent_count: u32,
    oldest_in_window: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> FrequencyStatus {
    let Some(limit) = policies.frequency_limit(category) else {
        return FrequencyStatus::not_capped(None);
    };
    let remaining = limit.max.saturating_sub(recent_count);
    if remaining > 0 {
        return FrequencyStatus::not_capped(Some((remaining, limit)));
    }
    let next_slot_at = oldest_in_window.map(|t| {
        t.checked_add_signed(limit.window)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    });
    let base = format!(
        "The cap resets as messages age out of the rolling {} window",
        limit.window_label()
    );
    let reset_hint = match (oldest_in_window, next_slot_at) {
        (Some(oldest), Some(next)) if next > now => format!(
            "{base}; the oldest counted message was accepted at {}, so the next message can be sent from {}.",
            rfc3339(oldest),
            rfc3339(next)
        ),
        (Some(oldest), Some(_)) => format!(
            "{base}; the oldest counted message (accepted at {}) has already aged out, so a slot is free now.",
            rfc3339(oldest)
        ),
        _ => format!("{base}."),
    };
    FrequencyStatus {
        is_capped: true,
        reason: cap_reason(category, recent_count, &limit),
        suggested_action: cap_action(category, &limit),
        reset_hint: Some(reset_hint),
        next_slot_at,
        remaining: Some(0),
        limit: Some(limit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phone::canonicalize;
    use chrono::{TimeDelta, TimeZone};

    const POLICIES: &str = r#"
version: 1
policies:
  - id: marketing_cap
    type: frequency_limit
    message_types: [marketing]
    max: 2
    window: 24h
  - id: quiet_jakarta
    type: quiet_hours
    message_types: [marketing]
    start: "20:00"
    end: "08:00"
    timezone: Asia/Jakarta
  - id: skip_vip
    type: tag_exclusion
    message_types: [marketing, utility]
    tags: [vip]
  - id: no_marketing_to_us
    type: country_block
    message_types: [marketing]
    prefixes: ["1"]
  - id: off
    type: country_block
    prefixes: ["62"]
    enabled: false
"#;

    fn set() -> PolicySet {
        PolicySet::from_yaml(POLICIES).unwrap()
    }

    /// 10:00 in Jakarta (UTC+7): outside the quiet hours.
    fn noon() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 5, 5, 3, 0, 0).unwrap()
    }

    fn input(category: Category) -> ComplianceInput {
        ComplianceInput {
            category,
            opted_out_marketing: false,
            opted_out_utility: false,
            tags: vec![],
            phone: canonicalize("+628123456789").unwrap(),
            last_inbound_at: Some(noon() - TimeDelta::hours(1)),
            recent_count: 0,
            now: noon(),
        }
    }

    #[test]
    fn reason_codes_wire_form() {
        assert_eq!(ReasonCode::Ok.as_str(), "OK");
        assert_eq!(ReasonCode::TemplateRequired.as_str(), "TEMPLATE_REQUIRED");
        assert_eq!(ReasonCode::UserOptedOut.as_str(), "USER_OPTED_OUT");
        assert_eq!(
            ReasonCode::FrequencyCapExceeded.as_str(),
            "FREQUENCY_CAP_EXCEEDED"
        );
        assert_eq!(ReasonCode::PolicyRestriction.as_str(), "POLICY_RESTRICTION");
        let d = decide(&set(), &input(Category::Utility));
        let j = serde_json::to_value(&d).unwrap();
        assert_eq!(j["reason_code"], "OK");
        assert_eq!(j["allowed"], true);
    }

    #[test]
    fn allowed_everywhere_by_default() {
        for c in Category::ALL {
            let d = decide(&set(), &input(c));
            assert!(d.allowed, "{c:?}: {d:?}");
            assert_eq!(d.reason_code, ReasonCode::Ok);
            assert!(!d.human_explanation.is_empty() && !d.suggested_action.is_empty());
        }
    }

    #[test]
    fn opt_out_semantics() {
        let mut i = input(Category::Marketing);
        i.opted_out_marketing = true;
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::UserOptedOut);
        assert!(d.suggested_action.contains("utility templates"), "{d:?}");
        for c in [
            Category::Utility,
            Category::Authentication,
            Category::Service,
        ] {
            i.category = c;
            assert!(
                decide(&set(), &i).allowed,
                "marketing opt-out must not block {c:?}"
            );
        }
        let mut i = input(Category::Utility);
        i.opted_out_utility = true;
        for c in [
            Category::Utility,
            Category::Authentication,
            Category::Service,
        ] {
            i.category = c;
            let d = decide(&set(), &i);
            assert_eq!(d.reason_code, ReasonCode::UserOptedOut, "{c:?}");
            assert!(
                d.human_explanation.contains("opted out of utility"),
                "{d:?}"
            );
        }
        i.category = Category::Marketing;
        assert!(
            decide(&set(), &i).allowed,
            "utility opt-out alone leaves marketing"
        );
        i.opted_out_marketing = true;
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::UserOptedOut);
        assert!(d.human_explanation.contains("marketing and utility"));
        assert!(opt_out_refusal(Category::Service, true, false).is_none());
    }

    #[test]
    fn opt_out_comes_first() {
        // Window closed, cap reached, policy denial: opt-out is still what is reported.
        let mut i = input(Category::Marketing);
        i.opted_out_marketing = true;
        i.recent_count = 99;
        i.tags = vec!["vip".into()];
        assert_eq!(decide(&set(), &i).reason_code, ReasonCode::UserOptedOut);
        let mut s = input(Category::Service);
        s.opted_out_utility = true;
        s.last_inbound_at = None;
        assert_eq!(decide(&set(), &s).reason_code, ReasonCode::UserOptedOut);
    }

    #[test]
    fn care_window_only_restricts_free_form() {
        let mut i = input(Category::Service);
        i.last_inbound_at = None;
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::TemplateRequired);
        assert_eq!(d.suggested_action, TEMPLATE_REQUIRED_ACTION);
        assert!(d.human_explanation.contains("never messaged"));
        // Exactly 24h after the inbound message: closed.
        i.last_inbound_at = Some(noon() - TimeDelta::hours(24));
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::TemplateRequired);
        assert!(
            d.human_explanation
                .contains("closed at 2025-05-05T03:00:00Z"),
            "{d:?}"
        );
        i.last_inbound_at = Some(noon() - TimeDelta::hours(24) + TimeDelta::seconds(1));
        assert!(decide(&set(), &i).allowed);
        for c in [
            Category::Marketing,
            Category::Utility,
            Category::Authentication,
        ] {
            let mut t = input(c);
            t.last_inbound_at = None;
            assert!(
                decide(&set(), &t).allowed,
                "{c:?} templates ignore the window"
            );
        }
    }

    #[test]
    fn cap_at_exactly_max() {
        let mut i = input(Category::Marketing);
        i.recent_count = 1;
        assert!(decide(&set(), &i).allowed);
        i.recent_count = 2;
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::FrequencyCapExceeded);
        assert_eq!(d.policy_id.as_deref(), Some("marketing_cap"));
        assert!(d.human_explanation.contains("limit is 2"), "{d:?}");
        i.recent_count = 3;
        assert_eq!(
            decide(&set(), &i).reason_code,
            ReasonCode::FrequencyCapExceeded
        );
        // Utility has no cap in this file.
        let mut u = input(Category::Utility);
        u.recent_count = 1000;
        assert!(decide(&set(), &u).allowed);
        // Default cap without a file.
        let mut m = input(Category::Marketing);
        m.recent_count = 2;
        let d = decide(&PolicySet::default(), &m);
        assert_eq!(d.reason_code, ReasonCode::FrequencyCapExceeded);
        assert_eq!(d.policy_id, None);
        assert!(d.human_explanation.contains("default limit"));
    }

    #[test]
    fn cap_comes_before_policies_and_after_window() {
        let mut i = input(Category::Marketing);
        i.recent_count = 2;
        i.tags = vec!["vip".into()];
        assert_eq!(
            decide(&set(), &i).reason_code,
            ReasonCode::FrequencyCapExceeded
        );
    }

    #[test]
    fn policies_in_file_order_name_the_policy() {
        // Quiet hours (2nd) come before tag exclusion (3rd) and country block (4th).
        let mut i = input(Category::Marketing);
        i.now = Utc.with_ymd_and_hms(2025, 5, 5, 14, 0, 0).unwrap(); // 21:00 Jakarta
        i.tags = vec!["vip".into()];
        i.phone = canonicalize("+1 415 555 0100").unwrap();
        let d = decide(&set(), &i);
        assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
        assert_eq!(d.policy_id.as_deref(), Some("quiet_jakarta"));
        assert!(d.human_explanation.contains("quiet_jakarta"));
        assert!(d.human_explanation.contains("21:00"), "{d:?}");
        assert!(d.suggested_action.contains("08:00 Asia/Jakarta"), "{d:?}");
        i.now = noon();
        let d = decide(&set(), &i);
        assert_eq!(d.policy_id.as_deref(), Some("skip_vip"));
        assert!(
            d.human_explanation.contains("skip_vip") && d.human_explanation.contains("\"vip\"")
        );
        i.tags.clear();
        let d = decide(&set(), &i);
        assert_eq!(d.policy_id.as_deref(), Some("no_marketing_to_us"));
        assert!(d.human_explanation.contains("+1"));
        // Policies only apply to their message types; disabled ones never.
        let mut u = input(Category::Utility);
        u.phone = canonicalize("+14155550100").unwrap();
        u.now = Utc.with_ymd_and_hms(2025, 5, 5, 14, 0, 0).unwrap();
        assert!(decide(&set(), &u).allowed);
        u.tags = vec!["vip".into()];
        assert_eq!(decide(&set(), &u).policy_id.as_deref(), Some("skip_vip"));
    }

    #[test]
    fn acceptance_main_file_scenarios() {
        let set = PolicySet::from_yaml(
            "version: 1\npolicies:\n  - id: acc_marketing_cap\n    type: frequency_limit\n    message_types: [marketing]\n    max: 2\n    window: 24h\n  - id: acc_no_marketing_to_plus1\n    type: country_block\n    message_types: [marketing]\n    prefixes: [\"1\"]\n    enabled: true\n  - id: acc_skip_no_marketing_tag\n    type: tag_exclusion\n    message_types: [marketing]\n    tags: [acc_no_marketing]\n",
        )
        .unwrap();
        let mut i = input(Category::Marketing);
        i.phone = canonicalize("+12025550123").unwrap();
        assert_eq!(
            decide(&set, &i).policy_id.as_deref(),
            Some("acc_no_marketing_to_plus1")
        );
        i.category = Category::Utility;
        assert!(decide(&set, &i).allowed);
        let mut t = input(Category::Marketing);
        t.tags = vec!["acc_no_marketing".into()];
        let d = decide(&set, &t);
        assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
        assert!(d.human_explanation.contains("acc_skip_no_marketing_tag"));
    }

    #[test]
    fn acceptance_quiet_hours_file() {
        // Quiet window around the current UTC time, for marketing in UTC and for
        // utility in Kathmandu; an all-types block for numbers starting with 7.
        let now = Utc.with_ymd_and_hms(2025, 5, 5, 23, 30, 0).unwrap();
        let yaml = "version: 1\npolicies:\n  - id: acc_quiet_now_utc\n    type: quiet_hours\n    message_types: [marketing]\n    start: \"22:30\"\n    end: \"00:30\"\n    timezone: UTC\n  - id: acc_quiet_same_clock_kathmandu\n    type: quiet_hours\n    message_types: [utility]\n    start: \"22:30\"\n    end: \"00:30\"\n    timezone: Asia/Kathmandu\n  - id: acc_quiet_disabled\n    type: quiet_hours\n    message_types: [utility]\n    start: \"22:30\"\n    end: \"00:30\"\n    timezone: UTC\n    enabled: false\n  - id: acc_block_all_types_to_7\n    type: country_block\n    prefixes: [\"7\"]\n";
        let set = PolicySet::from_yaml(yaml).unwrap();
        let mut m = input(Category::Marketing);
        m.now = now;
        m.last_inbound_at = Some(now - TimeDelta::minutes(5));
        assert_eq!(
            decide(&set, &m).policy_id.as_deref(),
            Some("acc_quiet_now_utc")
        );
        let mut u = m.clone();
        u.category = Category::Utility;
        assert!(decide(&set, &u).allowed, "{:?}", decide(&set, &u));
        for c in Category::ALL {
            let mut r = m.clone();
            r.category = c;
            r.phone = canonicalize("+79161234567").unwrap();
            let d = decide(&set, &r);
            let expected = if c == Category::Marketing {
                "acc_quiet_now_utc"
            } else {
                "acc_block_all_types_to_7"
            };
            assert_eq!(d.policy_id.as_deref(), Some(expected), "{c:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn decision_invariants(
            cat in 0usize..4,
            m in proptest::bool::ANY,
            u in proptest::bool::ANY,
            vip in proptest::bool::ANY,
            us in proptest::bool::ANY,
            count in 0u32..5,
            inbound_ago_mins in proptest::option::of(0i64..3000),
            now_secs in 0i64..(2 * 86_400),
        ) {
            let c = Category::ALL[cat];
            let now = noon() + TimeDelta::seconds(now_secs);
            let i = ComplianceInput {
                category: c,
                opted_out_marketing: m,
                opted_out_utility: u,
                tags: if vip { vec!["vip".into()] } else { vec![] },
                phone: canonicalize(if us { "+14155550100" } else { "+628123456789" }).unwrap(),
                last_inbound_at: inbound_ago_mins.map(|x| now - TimeDelta::minutes(x)),
                recent_count: count,
                now,
            };
            let d = decide(&set(), &i);
            proptest::prop_assert_eq!(d.allowed, d.reason_code == ReasonCode::Ok);
            proptest::prop_assert_eq!(
                d.reason_code == ReasonCode::UserOptedOut,
                blocked_by_opt_out(c, m, u)
            );
            if d.reason_code == ReasonCode::PolicyRestriction {
                let id = d.policy_id.clone().unwrap();
                proptest::prop_assert!(d.human_explanation.contains(&id));
            }
            if d.reason_code == ReasonCode::TemplateRequired {
                proptest::prop_assert_eq!(c, Category::Service);
            }
            proptest::prop_assert!(!d.human_explanation.is_empty() && !d.suggested_action.is_empty());
        }
    }

    #[test]
    fn frequency_status_reports_reset() {
        let s = set();
        let now = noon();
        let st = frequency_status(
            &s,
            Category::Marketing,
            1,
            Some(now - TimeDelta::hours(3)),
            now,
        );
        assert!(!st.is_capped);
        assert_eq!(st.remaining, Some(1));
        assert!(st.reason.is_empty() && st.suggested_action.is_empty() && st.reset_hint.is_none());
        let oldest = now - TimeDelta::hours(3);
        let st = frequency_status(&s, Category::Marketing, 2, Some(oldest), now);
        assert!(st.is_capped);
        assert_eq!(st.next_slot_at, Some(oldest + TimeDelta::hours(24)));
        let hint = st.reset_hint.clone().unwrap();
        assert!(hint.contains("rolling 24h window"), "{hint}");
        assert!(hint.contains("2025-05-06T00:00:00Z"), "{hint}");
        assert!(st.reason.contains("limit is 2"));
        assert!(!st.suggested_action.is_empty());
        let j = serde_json::to_value(&st).unwrap();
        assert_eq!(j["is_capped"], true);
        let st = frequency_status(&s, Category::Marketing, 2, None, now);
        assert_eq!(
            st.reset_hint.unwrap(),
            "The cap resets as messages age out of the rolling 24h window."
        );
        let st = frequency_status(
            &s,
            Category::Marketing,
            2,
            Some(now - TimeDelta::hours(25)),
            now,
        );
        assert!(st.reset_hint.unwrap().contains("free now"));
        let st = frequency_status(&s, Category::Utility, 50, None, now);
        assert!(!st.is_capped && st.remaining.is_none());
    }
}
