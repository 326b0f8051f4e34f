//! The batch's decision of one recipient, pure: the facts read for the whole chunk
//! ([`super::facts`]) in, a [`Decision`] out. It calls the single path's own functions in
//! the single path's order — [`decide`] with the platform hold counted
//! ([`counting_platform_hold`]), the conversation holder (`send::conversation_holder`), the
//! content rules' answer, the number's protection, the portfolio messaging limit — so the two paths cannot drift:
//! the only difference is where the facts came from (one query per chunk instead of one
//! per recipient).

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use warden_rules::compliance::Decision;
use warden_rules::kinds::Category;
use warden_rules::phone::PhoneNumber;
use warden_rules::platform_limits::{self, MessagingLimit, WINDOW};
use warden_rules::policy::PolicySet;
use warden_store::models::{Conversation, Customer};

use crate::customers::consent::Consent;
use crate::send::decide::{CustomerFacts, counting_platform_hold, decide};

/// What compliance read of one recipient.
pub(super) struct RecipientFacts<'a> {
    pub(super) customer: &'a Customer,
    pub(super) consent: &'a Consent,
    pub(super) conversation: Option<&'a Conversation>,
    /// Messages of the category counted inside the policy's window, and the oldest.
    pub(super) recent: (u32, Option<DateTime<Utc>>),
}

/// Step 2 of the send path (`Core::compliance`) on facts already read: the decision and
/// the customer's last inbound message (the policy step reads the care window too).
pub(super) fn compliance(
    policies: &PolicySet,
    phone: &PhoneNumber,
    facts: &RecipientFacts<'_>,
    category: Category,
    actor: &str,
    now: DateTime<Utc>,
) -> (Decision, Option<DateTime<Utc>>) {
    let customer = CustomerFacts::with_consent(facts.customer, facts.consent);
    let recent = counting_platform_hold(policies, category, Some(&customer), facts.recent, now);
    let last_inbound_at = facts.conversation.and_then(|c| c.last_inbound_at);
    let decision = decide(
        policies,
        phone,
        Some(&customer),
        last_inbound_at,
        category,
        recent.0,
        now,
    );
    // Read with the window: who holds the conversation (`send::conversation_holder`,
    // CONVERSATION_HELD).
    (
        crate::send::conversation_holder::apply(decision, facts.conversation, category, actor, now),
        last_inbound_at,
    )
}

/// The portfolio messaging limit of one portfolio for one chunk (or a whole preview): the
/// limit in force (None: unknown or unlimited, nothing enforced), the customers reached in
/// the last 24 h and the oldest of them, and which of the chunk's customers are among
/// them. [`Reach::admit`] is `account::portfolio::admit` without the writes.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    pub(super) limit: Option<u32>,
    pub(super) used: u64,
    pub(super) oldest: Option<DateTime<Utc>>,
    pub(super) reached: HashSet<String>,
}

impl Reach {
    /// May a business-initiated message reach `phone` at `now`? `Some(refusal)` at the
    /// limit for a customer not reached in the last 24 h; otherwise the customer is
    /// counted as reached.
    pub(super) fn admit(&mut self, phone: &str, now: DateTime<Utc>) -> Option<Decision> {
        if self.reached.contains(phone) {
            return None;
        }
        if let Some(max) = self.limit
            && let Some(refusal) = platform_limits::messaging_limit_refusal(
                MessagingLimit::Users(max),
                self.used,
                self.oldest.map(|t| t + WINDOW),
            )
        {
            return Some(refusal);
        }
        self.used += 1;
        self.oldest = Some(self.oldest.map_or(now, |o| o.min(now)));
        self.reached.insert(phone.to_string());
        None
    }
}

/// Step 3 of the send path (`Core::policy`) on facts already read: the content rules'
/// answer (`content`, read only for a message compliance allowed), the number's
/// protection for marketing, then the portfolio messaging limit for a business-initiated
/// message. Also answers whether an accepted message counts against the portfolio's reach
/// (a business-initiated one: `portfolio_reach` is written for it).
#[allow(clippy::too_many_arguments)] // the send path's policy facts, each read once
pub(super) fn policy(
    decision: Decision,
    last_inbound_at: Option<DateTime<Utc>>,
    content: Option<Decision>,
    protection: Option<&Decision>,
    reach: &mut Reach,
    phone: &PhoneNumber,
    category: Category,
    now: DateTime<Utc>,
) -> (Decision, bool) {
    let decision = match content {
        Some(refusal) if decision.allowed => refusal,
        _ => decision,
    };
    if !decision.allowed {
        return (decision, false);
    }
    if category == Category::Marketing
        && let Some(refusal) = protection
    {
        return (refusal.clone(), false);
    }
    let window_open = warden_rules::window::window_open(
        warden_rules::window::usable_inbound(last_inbound_at, now),
        now,
    );
    let initiated = platform_limits::business_initiated(category, window_open);
    if initiated && let Some(refusal) = reach.admit(phone.digits(), now) {
        return (refusal, false);
    }
    (decision, initiated)
}
