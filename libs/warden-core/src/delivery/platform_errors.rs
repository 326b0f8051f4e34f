//! What a platform error does, decided once for both ways it arrives: answered to the
//! dispatcher's call, or reported later by a `failed` status webhook: a platform
//! error has one consequence whichever way it arrives (docs/operations.md, Webhook
//! ingestion).
//!
//! - [`consequence`]: retry (with backoff; 131056 backs off that recipient only) or end
//!   `failed`, plus the fact it records: 131050 opt-out of marketing, 131049 marketing
//!   held 24 h, 131026 undeliverable, halt class pauses every active campaign. The class
//!   comes from the error knowledge base (`error_knowledge_base.handling`).
//! - [`apply_effect`]: records that fact, in the caller's transaction.
//! - [`retry_failed_status`]: the webhook's form of the dispatcher's retry: the message
//!   goes back to `queued` with the attempt counted, a backoff and the error kept, bounded
//!   by the same maximum of platform calls ([`RetryPolicy`], the dispatcher's
//!   `DISPATCH_MAX_ATTEMPTS` / `DISPATCH_BACKOFF_*`). The caller publishes it after commit.

use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Int4, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::keywords::OptChange;
use warden_rules::message_status::MessageStatus;
use warden_rules::phone::PhoneNumber;
use warden_store::models::Handling;
use warden_store::schema::messages;

use crate::customers::{self, OptScope};
use crate::delivery::knowledge::ErrorInfo;

/// What a failure records besides the message (the handling class's side effect).
#[derive(Clone, Debug, PartialEq)]
pub enum SideEffect {
    None,
    /// 131050: the user stopped marketing messages.
    OptOutMarketing,
    /// 131026: the number cannot receive messages.
    Undeliverable,
    /// 131049: per-user marketing limit, no marketing for 24 h.
    MarketingLimited,
    /// Halt class: pause every active campaign with this reason.
    PauseCampaigns(String),
    /// A halt-class error that protects the number it came from (`account::protection`):
    /// no marketing from it, its campaigns paused, with this reason.
    ProtectSender(String),
}

/// The one decision about a platform error.
#[derive(Clone, Debug, PartialEq)]
pub struct Consequence {
    /// Send again after a backoff (bounded by the attempts); false: the message ends `failed`.
    pub retry: bool,
    /// 131056: the pair rate of this recipient; back off this recipient only.
    pub pair_rate: bool,
    pub effect: SideEffect,
}

impl Consequence {
    /// A halt-class error: sending stops (the number's campaigns paused) until an operator
    /// checks.
    pub fn halts(&self) -> bool {
        matches!(
            self.effect,
            SideEffect::PauseCampaigns(_) | SideEffect::ProtectSender(_)
        )
    }
}

/// The consequence of platform error `code` of class `handling` (`title` names a halt).
pub fn consequence(handling: Handling, code: i32, title: &str) -> Consequence {
    let effect = match (handling, code) {
        (Handling::RecordState, 131050) => SideEffect::OptOutMarketing,
        (Handling::RecordState, 131026) => SideEffect::Undeliverable,
        (Handling::RecordState, 131049) => SideEffect::MarketingLimited,
        (Handling::Halt, code) if crate::account::protection::PROTECTING_ERRORS.contains(&code) => {
            SideEffect::ProtectSender(format!("platform error {code} ({title})"))
        }
        (Handling::Halt, _) => SideEffect::PauseCampaigns(format!(
            "platform error {code} ({title}): sending halted until an operator checks the account"
        )),
        _ => SideEffect::None,
    };
    Consequence {
        retry: handling == Handling::Retry,
        pair_rate: code == 131056,
        effect,
    }
}

/// Record `effect` of the platform's answer to `message_id` for the customer `phone` (when
/// known). Returns how many campaigns it paused.
pub async fn apply_effect(
    conn: &mut AsyncPgConnection,
    message_id: uuid::Uuid,
    effect: &SideEffect,
    phone: Option<&PhoneNumber>,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<usize> {
    match (effect, phone) {
        (SideEffect::OptOutMarketing, Some(p)) => {
            // A 131050 stops marketing from the business that sent the message.
            let business = customers::consent::business_of_message(conn, message_id).await?;
            customers::apply_opt_change(
                conn,
                &business,
                p,
                OptChange::Stop,
                OptScope::Marketing,
                "platform_131050",
                actor,
                at,
            )
            .await?;
        }
        (SideEffect::Undeliverable, Some(p)) => {
            customers::mark_undeliverable(conn, p, at, actor).await?
        }
        (SideEffect::MarketingLimited, Some(p)) => {
            customers::mark_marketing_limited(conn, p, at, actor).await?
        }
        (SideEffect::ProtectSender(reason), _) => {
            let sender = customers::consent::sender_of_message(conn, message_id).await?;
            return crate::account::protection::protect(
                conn,
                &sender,
                reason,
                "platform_error",
                actor,
            )
            .await;
        }
        (SideEffect::PauseCampaigns(reason), _) => {
            // The account or token behind one number: that number's campaigns stop; another
            // business's numbers go on (one of its own would meet the error on its own send).
            let sender = customers::consent::sender_of_message(conn, message_id).await?;
            tracing::error!(%reason, %sender, "halt-class platform error: pausing the sender's active campaigns");
            return crate::campaigns::pause_active(conn, reason, Some(&sender), actor).await;
        }
        _ => {}
    }
    Ok(0)
}

/// A retry setting that does not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RetryPolicyError {
    #[error("DISPATCH_MAX_ATTEMPTS: `{0}` is not a whole number in range")]
    MaxAttempts(String),
    #[error("{variable}: {reason}")]
    Duration {
        variable: &'static str,
        reason: String,
    },
    #[error("DISPATCH_BACKOFF_CAP: must not be shorter than DISPATCH_BACKOFF_BASE")]
    CapBelowBase,
}

/// How many platform calls a message gets and how long it waits between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: i32,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
}

impl Default for RetryPolicy {
    /// The dispatcher's defaults.
    fn default() -> Self {
        RetryPolicy::from_settings(&warden_settings::Dispatch::default())
    }
}

impl RetryPolicy {
    /// The dispatcher's knobs (`DISPATCH_MAX_ATTEMPTS`, `DISPATCH_BACKOFF_BASE`,
    /// `DISPATCH_BACKOFF_CAP`, validated by the settings tree), so both paths share one bound.
    pub fn from_settings(dispatch: &warden_settings::Dispatch) -> Self {
        RetryPolicy {
            max_attempts: dispatch.max_attempts,
            backoff_base: dispatch.backoff_base,
            backoff_cap: dispatch.backoff_cap,
        }
    }

    /// The `n`th retry's delay (1-based): exponential with equal jitter, between half and
    /// all of `base * 2^(n-1)`, capped. `unit` in [0, 1) is the random draw. The
    /// dispatcher's formula.
    pub fn backoff(&self, n: i32, unit: f64) -> Duration {
        let exp = u32::try_from(n.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        let full = self
            .backoff_base
            .saturating_mul(2u32.saturating_pow(exp))
            .min(self.backoff_cap);
        let half = full / 2;
        half + half.mul_f64(unit.clamp(0.0, 1.0))
    }
}

/// The platform's pair window: about one message per 6 s to the same user.
pub const PAIR_WINDOW: Duration = Duration::from_secs(6);

/// How long one (business number, customer) pair backs off after 131056: at least the
/// pair window (or the configured pair interval, if longer) plus up to half of it again
/// (`unit` in [0, 1) is the random draw), or the retry backoff when that is longer. The
/// jitter keeps many hot pairs that failed together from all coming back in the same
/// instant (a synchronised burst would hit the pair rate again).
pub fn pair_backoff(retry_delay: Duration, pair_interval: Duration, unit: f64) -> Duration {
    let floor = pair_interval.max(PAIR_WINDOW);
    let jittered = floor + (floor / 2).mul_f64(unit.clamp(0.0, 1.0));
    retry_delay.max(jittered)
}

/// What [`retry_failed_status`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Retried {
    /// Back to `queued`, due after `delay`; publish it (dedupe id from `retry_count`).
    Requeued { retry_count: i32, delay: Duration },
    /// The attempts are spent: the caller ends it `failed` (with [`exhausted`]).
    Exhausted { attempts: i32 },
    /// Not a message this applies to (unknown, not outbound, already final or already
    /// queued again): the caller applies the status as usual.
    NotApplicable,
}

#[derive(QueryableByName)]
struct RetryCount {
    #[diesel(sql_type = Int4)]
    retry_count: i32,
}

/// A retryable error reported by status webhook for the attempt that got `wamid`: put
/// the message back in the queue exactly as the dispatcher does with the same error
/// answered to its call (attempt counted, backoff, last error kept). The failed
/// attempt's wamid and error stay on the row until the next attempt is recorded, so late
/// statuses of that attempt (and the dispatcher's own record of it, when the webhook won
/// the race) are told apart from the next one (see `outcomes::apply_status`). `sent_at` is kept so
/// the resend is not counted as sent a second time.
pub async fn retry_failed_status(
    conn: &mut AsyncPgConnection,
    message_id: Uuid,
    wamid: Option<&str>,
    error: &ErrorInfo,
    policy: &RetryPolicy,
    unit: f64,
    actor: &str,
) -> QueryResult<Retried> {
    let row: Option<(String, String, i32, i32)> = messages::table
        .find(message_id)
        .select((
            messages::direction,
            messages::status,
            messages::attempt,
            messages::retry_count,
        ))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    let Some((direction, status, attempt, retry_count)) = row else {
        return Ok(Retried::NotApplicable);
    };
    let retryable = matches!(
        status.parse::<MessageStatus>(),
        Ok(MessageStatus::Sending | MessageStatus::Sent)
    );
    if direction != "outbound" || !retryable {
        return Ok(Retried::NotApplicable);
    }
    if attempt >= policy.max_attempts {
        return Ok(Retried::Exhausted { attempts: attempt });
    }
    let mut delay = policy.backoff(retry_count + 1, unit);
    if error.code == 131056 {
        // The webhook's form of the dispatcher's pair back-off (this row only).
        delay = pair_backoff(delay, Duration::ZERO, unit);
    }
    let retried: RetryCount = diesel::sql_query(
        "UPDATE messages
            SET status = 'queued', retry_count = retry_count + 1,
                next_attempt_at = now() + $2 * interval '1 millisecond',
                lease_owner = NULL, lease_until = NULL, published_at = NULL,
                wamid = COALESCE($3, wamid),
                error_code = $4, error_category = $5, error_can_retry = $6,
                error_explanation = $7, error_suggested_action = $8, updated_at = now()
          WHERE id = $1
         RETURNING retry_count",
    )
    .bind::<SqlUuid, _>(message_id)
    .bind::<BigInt, _>(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX))
    .bind::<Nullable<Text>, _>(wamid.filter(|w| !w.is_empty()))
    .bind::<Int4, _>(error.code)
    .bind::<Text, _>(&error.category)
    .bind::<Bool, _>(error.can_retry)
    .bind::<Text, _>(&error.human_explanation)
    .bind::<Text, _>(&error.suggested_action)
    .get_result(conn)
    .await?;
    warden_store::audit::record(
        conn,
        actor,
        "retry_after_failed_status",
        "message",
        &message_id.to_string(),
        serde_json::json!({
            "error_code": error.code,
            "attempt": attempt,
            "retry_count": retried.retry_count,
            "delay_ms": i64::try_from(delay.as_millis()).unwrap_or(i64::MAX),
        }),
    )
    .await?;
    Ok(Retried::Requeued {
        retry_count: retried.retry_count,
        delay,
    })
}

/// The error a message carries when its retries are spent, whichever process spent them.
pub fn exhausted(last: &ErrorInfo, attempts: i32) -> ErrorInfo {
    ErrorInfo {
        human_explanation: format!(
            "Gave up after {attempts} attempts. Last error: {}",
            last.human_explanation
        ),
        ..last.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_consequence_per_code() {
        let c = consequence(Handling::Retry, 131000, "Something went wrong");
        assert!(c.retry && !c.pair_rate && c.effect == SideEffect::None);
        assert!(consequence(Handling::Retry, 131056, "pair").pair_rate);
        let c = consequence(Handling::RecordState, 131050, "stop");
        assert!(!c.retry && c.effect == SideEffect::OptOutMarketing);
        assert_eq!(
            consequence(Handling::RecordState, 131049, "x").effect,
            SideEffect::MarketingLimited
        );
        assert_eq!(
            consequence(Handling::RecordState, 131026, "x").effect,
            SideEffect::Undeliverable
        );
        assert!(matches!(
            consequence(Handling::Halt, 131048, "Spam rate limit hit").effect,
            SideEffect::ProtectSender(r) if r.contains("131048")
        ));
        let c = consequence(Handling::FixRequest, 132000, "x");
        assert!(!c.retry && c.effect == SideEffect::None && !c.halts());
        assert!(consequence(Handling::Halt, 131048, "x").halts());
    }

    proptest::proptest! {
        #[test]
        fn pair_backoff_is_jittered_above_the_pair_window(
            retry_ms in 0u64..20_000, interval_ms in 0u64..20_000, unit in 0.0f64..1.0,
        ) {
            let retry = Duration::from_millis(retry_ms);
            let interval = Duration::from_millis(interval_ms);
            let d = pair_backoff(retry, interval, unit);
            let floor = interval.max(PAIR_WINDOW);
            proptest::prop_assert!(d >= floor && d >= retry);
            proptest::prop_assert!(d <= retry.max(floor + floor / 2));
        }
    }

    #[test]
    fn pair_backoff_spreads_pairs_that_failed_together() {
        let short = Duration::from_millis(500);
        let a = pair_backoff(short, Duration::ZERO, 0.0);
        let b = pair_backoff(short, Duration::ZERO, 0.99);
        assert_eq!(a, PAIR_WINDOW);
        assert!(b > a + Duration::from_secs(2), "{a:?} vs {b:?}");
        // A retry backoff longer than the jittered window wins.
        let long = Duration::from_secs(60);
        assert_eq!(pair_backoff(long, Duration::ZERO, 0.5), long);
    }

    #[test]
    fn retry_policy_reads_the_dispatchers_variables() {
        let settings = |pairs: &[(&str, &str)]| {
            let env = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            warden_settings::Settings::from_sources(None, &env)
        };
        assert_eq!(
            RetryPolicy::from_settings(&settings(&[]).unwrap().dispatch),
            RetryPolicy::default()
        );
        assert_eq!(RetryPolicy::default().max_attempts, 8);
        let p = RetryPolicy::from_settings(
            &settings(&[
                ("DISPATCH_MAX_ATTEMPTS", "3"),
                ("DISPATCH_BACKOFF_BASE", "100ms"),
                ("DISPATCH_BACKOFF_CAP", "1s"),
            ])
            .unwrap()
            .dispatch,
        );
        assert_eq!(p.max_attempts, 3);
        assert_eq!(p.backoff(1, 0.0), Duration::from_millis(50));
        assert_eq!(p.backoff(1, 1.0), Duration::from_millis(100));
        assert_eq!(p.backoff(20, 1.0), Duration::from_secs(1));
        assert!(settings(&[("DISPATCH_MAX_ATTEMPTS", "0")]).is_err());
    }
}
