//! The content rules of the send path (docs/compliance.md): `content_filter`
//! (pure, `warden_rules::safety`) and `duplicate_guard`, which compares the message with
//! what this customer was sent inside the guard's window. Runs inside the send
//! transaction after the customer row lock, so two identical sends racing to one customer
//! are judged one after the other.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;
use warden_rules::compliance::{Decision, ReasonCode};
use warden_rules::kinds::Category;
use warden_rules::message_status::MessageStatus;
use warden_rules::policy::PolicySet;
use warden_rules::safety::{self, ContentRefusal, duplicate};
use warden_store::schema::messages;

/// How many earlier messages of one customer inside the window are compared at most (a
/// looping agent is refused long before it sends this many).
const MAX_COMPARED: i64 = 500;

/// The first content-rule refusal of `content`: content filters, then duplicate guards.
pub(crate) async fn check(
    conn: &mut AsyncPgConnection,
    policies: &PolicySet,
    phone: &str,
    category: Category,
    content: &Value,
    now: DateTime<Utc>,
    exclude: Option<Uuid>,
) -> QueryResult<Option<Decision>> {
    if let Some(r) = safety::content_refusal(policies, category, content) {
        return Ok(Some(refused(r)));
    }
    let guards = safety::duplicate_guards(policies, category);
    let Some(longest) = guards.iter().map(|(_, w)| *w).max() else {
        return Ok(None);
    };
    let Some(print) = duplicate::fingerprint(content) else {
        return Ok(None);
    };
    let earlier = recent_outbound(conn, phone, now - longest, exclude).await?;
    for (policy_id, window) in guards {
        let since = now - window;
        if let Some((id, _, _)) = earlier
            .iter()
            .find(|(_, at, c)| *at > since && duplicate::fingerprint(c).as_ref() == Some(&print))
        {
            return Ok(Some(refused(safety::duplicate_refusal(
                policy_id,
                window,
                &id.to_string(),
            ))));
        }
    }
    Ok(None)
}

/// Outbound messages to `phone` since `since` that reached (or are on their way to) the
/// customer: not failed, not still scheduled.
async fn recent_outbound(
    conn: &mut AsyncPgConnection,
    phone: &str,
    since: DateTime<Utc>,
    exclude: Option<Uuid>,
) -> QueryResult<Vec<(Uuid, DateTime<Utc>, Value)>> {
    messages::table
        .filter(messages::customer_phone.eq(phone))
        .filter(messages::created_at.gt(since))
        .filter(messages::direction.eq("outbound"))
        .filter(messages::status.ne_all([
            MessageStatus::Failed.as_str(),
            MessageStatus::Scheduled.as_str(),
        ]))
        .filter(messages::id.ne(exclude.unwrap_or_else(Uuid::nil)))
        .order(messages::created_at.desc())
        .limit(MAX_COMPARED)
        .select((messages::id, messages::created_at, messages::content))
        .load(conn)
        .await
}

fn refused(r: ContentRefusal) -> Decision {
    Decision {
        allowed: false,
        reason_code: ReasonCode::PolicyRestriction,
        human_explanation: r.explanation,
        suggested_action: r.suggested_action,
        policy_id: Some(r.policy_id),
        retry_at: None,
        hold: false,
    }
}

/// True when a send of `category` has content rules to pass (so its content is built).
pub(crate) fn reads_content(policies: &PolicySet, category: Category) -> bool {
    policies.active_for(category).any(|p| {
        matches!(
            p.policy_type(),
            warden_rules::policy::PolicyType::ContentFilter
                | warden_rules::policy::PolicyType::DuplicateGuard
        )
    })
}

impl crate::Core {
    /// Dry run of the content rules (check_compliance with a text): the refusal a send of
    /// `content` would get from a `content_filter` or `duplicate_guard`, if any. Never writes.
    pub async fn check_content(
        &self,
        phone: &warden_rules::phone::PhoneNumber,
        category: Category,
        content: &Value,
    ) -> Result<Option<Decision>, crate::CoreError> {
        if !reads_content(self.policies(), category) {
            return Ok(None);
        }
        let mut conn = self.pg().get().await?;
        Ok(check(
            &mut conn,
            self.policies(),
            phone.digits(),
            category,
            content,
            self.now(),
            None,
        )
        .await?)
    }
}
