//! What the send path asks before a call permission request goes out, inside its
//! transaction with the customer's row locked (`send`'s compliance step), so two requests
//! racing to one customer are judged one after the other and never both pass the limit,
//! as the marketing frequency cap's count is.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::call_permission::{
    MAX_REQUESTS, REQUEST_WINDOW, Status, request_allowed, status,
};
use warden_rules::compliance::{Decision, ReasonCode};

use super::permission;

/// Why a request may not go out.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A grant is valid: there is nothing to ask (INVALID_ARGUMENT naming `call_permission`).
    Granted(String),
    /// [`MAX_REQUESTS`] went to the customer from the number within [`REQUEST_WINDOW`]
    /// (FREQUENCY_CAP_EXCEEDED naming `call_permission_request`).
    Capped(Decision),
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    sent: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    oldest: Option<DateTime<Utc>>,
}

/// Judges the request `message_id` from the number stored as `sender` to `customer` at
/// `now` and, when it may go, counts it (once per message: a retried or scheduled row
/// was counted when it was first accepted). The caller holds the customer's row lock.
pub async fn admit(
    c: &mut AsyncPgConnection,
    sender: &str,
    customer: &str,
    message_id: Uuid,
    now: DateTime<Utc>,
) -> diesel::QueryResult<Result<(), Refusal>> {
    let stored = permission::stored(c, sender, customer).await?;
    let answer = stored.as_ref().map(permission::Stored::answer);
    if status(answer.as_ref(), now) == Status::Granted {
        let until = match answer
            .and_then(|a| a.expires_at)
            .filter(|_| !stored.as_ref().is_some_and(|s| s.permanent))
        {
            Some(end) => format!("until {}", end.to_rfc3339_opts(SecondsFormat::Secs, true)),
            None => "permanently".to_string(),
        };
        return Ok(Err(Refusal::Granted(format!(
            "`call_permission`: the customer already granted this number permission to call them ({until}); there is nothing to ask"
        ))));
    }
    let since = now - REQUEST_WINDOW;
    let count: Count = diesel::sql_query(
        "SELECT count(*) AS sent, min(requested_at) AS oldest FROM call_permission_requests
          WHERE sender_id = $1 AND customer_phone = $2 AND requested_at > $3 AND message_id <> $4",
    )
    .bind::<Text, _>(sender)
    .bind::<Text, _>(customer)
    .bind::<Timestamptz, _>(since)
    .bind::<SqlUuid, _>(message_id)
    .get_result(c)
    .await?;
    if !request_allowed(count.sent) {
        let retry_at = count.oldest.map(|t| t + REQUEST_WINDOW);
        let when = retry_at
            .map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true))
            .unwrap_or_else(|| "24 hours after the first".into());
        return Ok(Err(Refusal::Capped(Decision {
            allowed: false,
            reason_code: ReasonCode::FrequencyCapExceeded,
            human_explanation: format!(
                "`call_permission_request`: {} requests went to this customer from this number in the last 24 hours; at most {MAX_REQUESTS} are allowed",
                count.sent
            ),
            suggested_action: format!(
                "Do not ask again before {when}; wait for the customer's answer to the requests already sent."
            ),
            policy_id: None,
            retry_at,
            hold: false,
        })));
    }
    diesel::sql_query(
        "INSERT INTO call_permission_requests (message_id, sender_id, customer_phone, requested_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (message_id) DO NOTHING",
    )
    .bind::<SqlUuid, _>(message_id)
    .bind::<Text, _>(sender)
    .bind::<Text, _>(customer)
    .bind::<Timestamptz, _>(now)
    .execute(c)
    .await?;
    Ok(Ok(()))
}
