//! The shared-number rule on the send path (docs/compliance.md, "Shared numbers"): while a
//! person or another app holds the conversation, agents' free-form messages and marketing
//! templates are refused `CONVERSATION_HELD`; utility and authentication templates and
//! everything an operator sends go through. The holder is a column of the conversation
//! row, so every path reads it in the statement that reads the care window: the send
//! path's `conversations::find`, check_compliance's one statement and the dispatcher's
//! recheck ([`super::recheck`]).

use chrono::{DateTime, Utc};
use warden_rules::compliance::Decision;
use warden_rules::holder::{self, Holder};
use warden_rules::kinds::Category;
use warden_store::models::Conversation;

use crate::conversations::holder as conv_holder;

/// `decision` with the holder of `conv` (None: no conversation yet) applied for `actor`.
pub(super) fn apply(
    decision: Decision,
    conv: Option<&Conversation>,
    category: Category,
    actor: &str,
    now: DateTime<Utc>,
) -> Decision {
    judge(decision, &conv_holder::of(conv, now), category, actor)
}

/// `decision` with `holder` applied for `actor`, in its place in the order of the checks.
pub(super) fn judge(
    decision: Decision,
    holder: &Holder,
    category: Category,
    actor: &str,
) -> Decision {
    holder::apply(decision, holder::refusal(holder, category, actor))
}

pub(super) use conv_holder::from_columns;
