//! Who holds a conversation (one business number, one customer) on a shared number, and
//! what an agent may send while someone else does.
//!
//! A number may be answered at once by Warden's agents, by a person in the WhatsApp
//! Business app (coexistence), and by other apps or the platform's own AI agent
//! (conversation routing). Each conversation has one holder:
//! - `agents`: Warden's tools may reply;
//! - `human`: a person answers (a Business-app reply, a hand-off, an operator);
//! - `other_app`: the platform routed the thread to another app or its AI agent;
//! - `idle`: nobody holds it (24 h after the customer's last message, as the platform does).
//!
//! The stored holder is what the last change said; [`effective`] is what it is now (a
//! takeover with an end has ended at it, a quiet thread is idle). [`refusal`] is the rule.

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

use crate::compliance::{Decision, ReasonCode};
use crate::kinds::Category;

/// A thread with no customer message for this long returns to idle.
pub const IDLE_AFTER: TimeDelta = TimeDelta::hours(24);

/// Who holds a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HolderKind {
    /// Warden's agents may reply.
    Agents,
    /// A person answers (Business app, hand-off, operator).
    Human,
    /// Another app or the platform's AI agent owns the thread.
    OtherApp,
    /// Nobody holds it.
    Idle,
}

impl HolderKind {
    /// The stored and wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            HolderKind::Agents => "agents",
            HolderKind::Human => "human",
            HolderKind::OtherApp => "other_app",
            HolderKind::Idle => "idle",
        }
    }

    /// Whether agents must leave the conversation alone.
    pub fn held(self) -> bool {
        matches!(self, HolderKind::Human | HolderKind::OtherApp)
    }
}

impl std::str::FromStr for HolderKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "agents" => Ok(HolderKind::Agents),
            "human" => Ok(HolderKind::Human),
            "other_app" => Ok(HolderKind::OtherApp),
            "idle" => Ok(HolderKind::Idle),
            other => Err(format!("not a holder: {other}")),
        }
    }
}

/// A conversation's holder: who, since when, who made it so, and until when (a takeover
/// that ends by itself; `None`: until something changes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// Who holds it.
    pub kind: HolderKind,
    /// Since when (`None`: never held and the customer never wrote).
    pub since: Option<DateTime<Utc>>,
    /// What made it so: `business_app`, `handover`, `standby`, an agent or operator name,
    /// `customer` (a customer message to a thread nobody else held), `expired`, `idle`.
    pub by: String,
    /// When it ends by itself, if it does.
    pub until: Option<DateTime<Utc>>,
}

/// What a conversation row stores of its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The holder the last change set.
    pub kind: HolderKind,
    /// When that change happened.
    pub since: DateTime<Utc>,
    /// Who or what made it.
    pub by: String,
    /// When it ends by itself.
    pub until: Option<DateTime<Utc>>,
}

/// The holder now, from what is stored and the customer's last message.
///
/// A stored holder with an `until` lasts until then (a Business-app reply holds it for
/// `HUMAN_TAKEOVER_TTL`, a standby copy until the other app's thread goes idle); one
/// without lasts until the thread has been quiet for [`IDLE_AFTER`] (no customer message
/// since the change or after it). Then, and when nothing is stored: `agents` while the
/// customer wrote in the last [`IDLE_AFTER`] (a message that reached Warden), else `idle`.
pub fn effective(
    stored: Option<&Stored>,
    last_inbound_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Holder {
    if let Some(s) = stored {
        let quiet_from = last_inbound_at.map_or(s.since, |at| at.max(s.since));
        let end = s.until.unwrap_or(quiet_from + IDLE_AFTER);
        if now < end {
            return Holder {
                kind: s.kind,
                since: Some(s.since),
                by: s.by.clone(),
                until: s.until,
            };
        }
        if s.until.is_some() {
            // The takeover ended: the thread is the agents' again while the customer's
            // last message is recent enough, else idle.
            return after(end, "expired", last_inbound_at, now);
        }
        return Holder {
            kind: HolderKind::Idle,
            since: Some(end),
            by: "idle".into(),
            until: None,
        };
    }
    match last_inbound_at {
        Some(at) if now < at + IDLE_AFTER => Holder {
            kind: HolderKind::Agents,
            since: Some(at),
            by: "customer".into(),
            until: None,
        },
        Some(at) => Holder {
            kind: HolderKind::Idle,
            since: Some(at + IDLE_AFTER),
            by: "idle".into(),
            until: None,
        },
        None => Holder {
            kind: HolderKind::Idle,
            since: None,
            by: "idle".into(),
            until: None,
        },
    }
}

/// The holder after a takeover ended at `end`.
fn after(
    end: DateTime<Utc>,
    by: &str,
    last_inbound_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Holder {
    let idle_at = last_inbound_at.map_or(end, |at| (at + IDLE_AFTER).max(end));
    if now < idle_at {
        Holder {
            kind: HolderKind::Agents,
            since: Some(end),
            by: by.into(),
            until: None,
        }
    } else {
        Holder {
            kind: HolderKind::Idle,
            since: Some(idle_at),
            by: "idle".into(),
            until: None,
        }
    }
}

/// Whether an actor is an operator (the console's `operator:NAME`): nothing an operator
/// sends is refused for being held.
pub fn is_operator(actor: &str) -> bool {
    actor.starts_with("operator:")
}

/// The rule: while a person or another app holds the conversation, agents' free-form
/// messages and marketing templates are refused `CONVERSATION_HELD`; utility and
/// authentication templates (notifications, not conversation) go through, and so does
/// everything an operator sends.
pub fn refusal(holder: &Holder, category: Category, actor: &str) -> Option<Decision> {
    if !holder.kind.held() || is_operator(actor) {
        return None;
    }
    if !matches!(category, Category::Service | Category::Marketing) {
        return None;
    }
    let who = match holder.kind {
        HolderKind::Human => "a person (a reply from the WhatsApp Business app, or a hand-off)",
        _ => "another app or the platform's AI agent",
    };
    let since = holder
        .since
        .map(|s| {
            format!(
                " since {}",
                s.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        })
        .unwrap_or_default();
    let until = holder
        .until
        .map(|u| {
            format!(
                " It returns to the agents at {} unless they answer again.",
                u.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        })
        .unwrap_or_default();
    let why = format!(
        "The conversation is held by {} ({}){since}: agents must not talk over them.{until}",
        holder.kind.as_str(),
        who
    );
    let action = format!(
        "Do not reply to this customer now: the conversation is held by {}{since}. Wait until \
         check_conversation shows holder agents or idle, or ask an operator to release it \
         (release_conversation); utility and authentication templates still go through.",
        holder.kind.as_str()
    );
    Some(Decision {
        allowed: false,
        reason_code: ReasonCode::ConversationHeld,
        human_explanation: why,
        suggested_action: action,
        policy_id: None,
        retry_at: None,
        hold: false,
    })
}

/// `decision` with the holder's rule applied in its place in the order: a template that is
/// not approved and an opt-out still answer first; otherwise a held conversation refuses
/// before the window, the cap and the policies are looked at.
pub fn apply(decision: Decision, refusal: Option<Decision>) -> Decision {
    match (decision.reason_code, refusal) {
        (ReasonCode::TemplateNotApproved | ReasonCode::UserOptedOut, _) | (_, None) => decision,
        (_, Some(held)) => held,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(h: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap() + TimeDelta::hours(h)
    }

    fn stored(kind: HolderKind, since: i64, until: Option<i64>) -> Stored {
        Stored {
            kind,
            since: t(since),
            by: "x".into(),
            until: until.map(t),
        }
    }

    #[test]
    fn nothing_stored() {
        assert_eq!(effective(None, None, t(0)).kind, HolderKind::Idle);
        assert_eq!(effective(None, Some(t(-1)), t(0)).kind, HolderKind::Agents);
        let idle = effective(None, Some(t(-25)), t(0));
        assert_eq!((idle.kind, idle.since), (HolderKind::Idle, Some(t(-1))));
    }

    #[test]
    fn a_takeover_ends_at_its_until_then_the_agents_hold_it() {
        let s = stored(HolderKind::Human, -1, Some(1));
        assert_eq!(
            effective(Some(&s), Some(t(-2)), t(0)).kind,
            HolderKind::Human
        );
        let after = effective(Some(&s), Some(t(-2)), t(2));
        assert_eq!((after.kind, after.since), (HolderKind::Agents, Some(t(1))));
        assert_eq!(after.by, "expired");
        // Ended long after the customer's last message: idle.
        assert_eq!(
            effective(Some(&s), Some(t(-30)), t(30)).kind,
            HolderKind::Idle
        );
    }

    #[test]
    fn a_quiet_thread_goes_idle_24_hours_after_the_last_customer_message() {
        let s = stored(HolderKind::OtherApp, 0, None);
        assert_eq!(effective(Some(&s), None, t(23)).kind, HolderKind::OtherApp);
        assert_eq!(effective(Some(&s), None, t(24)).kind, HolderKind::Idle);
        // A later customer message keeps it held.
        assert_eq!(
            effective(Some(&s), Some(t(10)), t(30)).kind,
            HolderKind::OtherApp
        );
    }

    #[test]
    fn the_rule() {
        let h = effective(Some(&stored(HolderKind::Human, 0, Some(1))), None, t(0));
        for (category, refused) in [
            (Category::Service, true),
            (Category::Marketing, true),
            (Category::Utility, false),
            (Category::Authentication, false),
        ] {
            let r = refusal(&h, category, "agent-x");
            assert_eq!(r.is_some(), refused, "{category:?}");
        }
        let r = refusal(&h, Category::Service, "agent-x").unwrap();
        assert_eq!(r.reason_code.as_str(), "CONVERSATION_HELD");
        assert!(r.suggested_action.contains("held by human"), "{r:?}");
        assert!(r.suggested_action.contains("Do not reply"), "{r:?}");
        assert!(refusal(&h, Category::Service, "operator:ana").is_none());
        let agents = effective(None, Some(t(-1)), t(0));
        assert!(refusal(&agents, Category::Service, "agent-x").is_none());
    }

    #[test]
    fn opt_out_and_template_status_answer_first() {
        let h = effective(Some(&stored(HolderKind::Human, 0, None)), None, t(0));
        let held = refusal(&h, Category::Marketing, "a");
        let opted = Decision::deny(ReasonCode::UserOptedOut, "x".into(), "y".into(), None);
        assert_eq!(
            apply(opted, held.clone()).reason_code,
            ReasonCode::UserOptedOut
        );
        let window = Decision::deny(ReasonCode::TemplateRequired, "x".into(), "y".into(), None);
        assert_eq!(
            apply(window, held).reason_code,
            ReasonCode::ConversationHeld
        );
    }
}
