//! Per-agent guardrails at send time: `allowed_message_types`, `max_sends_per_minute`,
//! `max_marketing_per_day` (`warden-admin agents create/update`).
//!
//! Checked and counted inside the send's own transaction ([`crate::Core::send`]): the
//! counter row is an upsert that holds its row lock until commit, so concurrent sends of
//! one agent — from any number of gateway replicas — are counted one after the other and
//! exactly `max` pass. A refused or rolled-back send counts nothing. Windows are calendar
//! minutes and UTC days. Actors without an `agents` row (services, stdio) have no limits.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_rules::kinds::Category;
use warden_store::schema::{agent_usage, agents};

/// A send the agent's guardrails refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuardrailRefusal {
    /// `RATE_LIMITED` (a limit is spent) or `FORBIDDEN` (a message type not allowed).
    pub code: &'static str,
    pub message: String,
    pub suggested_action: String,
    pub retry_after_secs: Option<u64>,
}

/// An agent's limits as stored: per minute, marketing per day, allowed categories.
pub(crate) type Limits = (Option<i32>, Option<i32>, Option<Vec<String>>);

const MINUTE: i64 = 60;
const DAY: i64 = 86_400;

fn window(now: DateTime<Utc>, len: i64) -> (DateTime<Utc>, u64) {
    let ts = now.timestamp();
    let start = ts - ts.rem_euclid(len);
    let start_at = DateTime::from_timestamp(start, 0).unwrap_or(now);
    let left = (start_at + TimeDelta::seconds(len)) - now;
    // Round up: an agent told to wait 0 s would retry into the same window.
    let secs = (left.num_milliseconds().max(0) as u64)
        .div_ceil(1000)
        .max(1);
    (start_at, secs)
}

/// `actor`'s limits (none: an actor without an `agents` row). Read only, so the send path
/// reads it in the round trip of the customer's lock.
pub(crate) async fn limits_of(
    mut c: &AsyncPgConnection,
    actor: &str,
) -> QueryResult<Option<Limits>> {
    agents::table
        .find(actor.to_string())
        .select((
            agents::max_sends_per_minute,
            agents::max_marketing_per_day,
            agents::allowed_message_types,
        ))
        .first(&mut c)
        .await
        .optional()
}

/// Count this send against `actor`'s [`limits_of`], or say why it may not go.
pub(crate) async fn check_and_count(
    c: &mut AsyncPgConnection,
    actor: &str,
    limits: Option<Limits>,
    category: Category,
    now: DateTime<Utc>,
) -> QueryResult<Result<(), GuardrailRefusal>> {
    let Some((per_minute, marketing_per_day, allowed)) = limits else {
        return Ok(Ok(()));
    };
    if let Some(allowed) = allowed
        && !allowed.iter().any(|t| t == category.as_str())
    {
        return Ok(Err(GuardrailRefusal {
            code: "FORBIDDEN",
            message: format!(
                "Agent {actor} may not send {} messages (allowed: {}).",
                category.as_str(),
                if allowed.is_empty() {
                    "none".to_string()
                } else {
                    allowed.join(", ")
                }
            ),
            suggested_action: "Send only the allowed message types, or ask an operator to change the agent's allowed_message_types.".into(),
            retry_after_secs: None,
        }));
    }
    if let Some(max) = per_minute
        && let Some(refusal) = count(
            c,
            actor,
            "sends_per_minute",
            max,
            MINUTE,
            now,
            "sends per minute",
        )
        .await?
    {
        return Ok(Err(refusal));
    }
    if category == Category::Marketing
        && let Some(max) = marketing_per_day
        && let Some(refusal) = count(
            c,
            actor,
            "marketing_per_day",
            max,
            DAY,
            now,
            "marketing messages per day",
        )
        .await?
    {
        return Ok(Err(refusal));
    }
    Ok(Ok(()))
}

#[allow(clippy::too_many_arguments)]
async fn count(
    c: &mut AsyncPgConnection,
    actor: &str,
    kind: &str,
    max: i32,
    len: i64,
    now: DateTime<Utc>,
    what: &str,
) -> QueryResult<Option<GuardrailRefusal>> {
    let (start, retry_after_secs) = window(now, len);
    let used: i32 = diesel::insert_into(agent_usage::table)
        .values((
            agent_usage::agent.eq(actor),
            agent_usage::kind.eq(kind),
            agent_usage::window_start.eq(start),
            agent_usage::used.eq(1),
        ))
        .on_conflict((
            agent_usage::agent,
            agent_usage::kind,
            agent_usage::window_start,
        ))
        .do_update()
        .set(agent_usage::used.eq(agent_usage::used + 1))
        .returning(agent_usage::used)
        .get_result(c)
        .await?;
    if used == 1 {
        // A new window: drop this agent's counters of windows long gone.
        diesel::delete(
            agent_usage::table
                .filter(agent_usage::agent.eq(actor))
                .filter(agent_usage::kind.eq(kind))
                .filter(agent_usage::window_start.lt(start - TimeDelta::days(2))),
        )
        .execute(c)
        .await?;
    }
    if used <= max {
        return Ok(None);
    }
    Ok(Some(GuardrailRefusal {
        code: "RATE_LIMITED",
        message: format!("Agent {actor} has used its limit of {max} {what}."),
        suggested_action: format!(
            "Wait {retry_after_secs} s before sending again, or ask an operator to raise the agent's limit."
        ),
        retry_after_secs: Some(retry_after_secs),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_calendar_minutes_and_days() {
        let at = DateTime::parse_from_rfc3339("2026-11-25T10:15:42.300Z")
            .unwrap()
            .with_timezone(&Utc);
        let (start, left) = window(at, MINUTE);
        assert_eq!(start.to_rfc3339(), "2026-11-25T10:15:00+00:00");
        assert_eq!(left, 18);
        let (start, left) = window(at, DAY);
        assert_eq!(start.to_rfc3339(), "2026-11-25T00:00:00+00:00");
        assert_eq!(left, 13 * 3600 + 44 * 60 + 18);
        let exact = DateTime::from_timestamp(1_700_000_040, 0).unwrap();
        assert_eq!(window(exact, MINUTE).1, 60);
    }
}
