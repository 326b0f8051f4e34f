//! Pure decisions: what to do with a stream message given its row, how a platform failure
//! is handled, and how long to back off. No I/O here, so the rules are unit-tested.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use warden_core::knowledge::{ErrorInfo, Explanation};
use warden_platform::PlatformError;
use warden_store::models::Handling;

use crate::store::{Row, SideEffect};

/// Longest a stream message is held back in one go (it comes back and is re-decided).
pub const MAX_HOLD: Duration = Duration::from_secs(3600);

/// What to do with a delivered stream message, before any platform call.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Queued and due: rate-limit, claim, send.
    Send,
    /// Not now: put the stream message back for this long (nak with delay).
    Hold(Duration, &'static str),
    /// Nothing to send: acknowledge (the reason is logged and counted).
    Done(&'static str),
    /// The campaign was cancelled before this message went out: it ends failed.
    CancelledCampaign,
    /// An unknown outcome (a dispatcher died mid-call, or the call timed out) that no
    /// status webhook settled: put it back to `queued` and send, for the reason given.
    Resend(Why),
}

/// Why an unknown outcome is resent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// Statuses the platform emitted after the claim arrived without this one's.
    Evidence,
    /// No such evidence within DISPATCH_UNKNOWN_MAX_WAIT (e.g. no traffic after it).
    MaxWait,
}

impl Why {
    /// The metric label and audit wording.
    pub fn label(self) -> &'static str {
        match self {
            Why::Evidence => "resent_on_evidence",
            Why::MaxWait => "resent_on_max_wait",
        }
    }
}

/// How a claim a stopped dispatcher left behind is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownOutcome {
    /// Wait this long after the lease ends for the row's own status webhook
    /// (DISPATCH_UNKNOWN_SETTLE).
    pub settle: Duration,
    /// Resend without evidence that webhooks flow after this long (DISPATCH_UNKNOWN_MAX_WAIT).
    pub max_wait: Duration,
}

/// Webhooks count as having caught up with a claim once the platform emitted statuses this
/// long after it (whole-second platform timestamps, clock skew, batches applied in parallel).
pub const WEBHOOK_EVIDENCE_MARGIN: TimeDelta = TimeDelta::seconds(5);

/// Status webhooks count as quiet (so the max wait may resend) once `status_through` has
/// not moved for this long, or the settle period if longer: a loaded webhook server can
/// take seconds per batch while a backlog drains.
pub const WEBHOOKS_QUIET: Duration = Duration::from_secs(30);

pub fn plan(row: &Row, unknown: UnknownOutcome) -> Plan {
    let now = row.db_now;
    if row.direction != "outbound" {
        return Plan::Done("not_outbound");
    }
    match row.status.as_str() {
        "sent" | "delivered" | "read" => Plan::Done("already_sent"),
        "failed" => Plan::Done("already_failed"),
        // The scheduler publishes it again at deliver_at (after the full checks).
        "scheduled" => Plan::Done("scheduled"),
        "sending" => match row.lease_until {
            // Someone is on it: keep the stream message (their retry may need it) and look
            // again when the lease ends.
            Some(until) if until > now => Plan::Hold(until_after(now, until), "in_flight"),
            // A dispatcher died mid-call: the outcome is unknown and the platform has no
            // idempotency key. An accepted send gets its status webhook (callback data =
            // message id), which moves the row on; give it `settle`.
            lease => {
                let ended = lease.unwrap_or(row.claimed_at);
                let settled = ended + to_delta(unknown.settle);
                if now < settled {
                    return Plan::Hold(until_after(now, settled), "outcome_unknown");
                }
                // Still `sending`. Resend only when statuses the platform emitted after the
                // lease ended have arrived without this one: no call outlives its lease, so
                // the call never reached the platform. (Measured from the claim instead, a
                // call that reached the platform late in its lease looked unsent.) Not while
                // webhooks lag behind; after `max_wait` with webhooks quiet, resend anyway.
                let caught_up = row
                    .webhooks_through
                    .is_some_and(|w| w >= ended.max(row.claimed_at) + WEBHOOK_EVIDENCE_MARGIN);
                let give_up = ended + to_delta(unknown.max_wait);
                // A backlog still draining (webhooks moved forward within a settle period,
                // not yet past the claim) may bring its own status: the max wait is for
                // quiet webhooks (nothing sent after it, or an outage).
                let quiet = row
                    .webhooks_advanced_at
                    .is_none_or(|a| now - a >= to_delta(unknown.settle.max(WEBHOOKS_QUIET)));
                if caught_up {
                    Plan::Resend(Why::Evidence)
                } else if now >= give_up && quiet {
                    Plan::Resend(Why::MaxWait)
                } else {
                    let next = if now >= give_up {
                        now + to_delta(unknown.settle)
                    } else {
                        (now + to_delta(unknown.settle)).min(give_up)
                    };
                    Plan::Hold(until_after(now, next), "awaiting_webhooks")
                }
            }
        },
        "queued" => match row.campaign_status.as_deref() {
            // Stays queued; the scheduler republishes it when the campaign resumes.
            Some("paused") => Plan::Done("campaign_paused"),
            Some("cancelled") => Plan::CancelledCampaign,
            _ => {
                if let Some(next) = row.next_attempt_at.filter(|t| *t > now) {
                    return Plan::Hold(until_after(now, next), "backoff");
                }
                if let Some(at) = row.deliver_at.filter(|t| *t > now) {
                    return Plan::Hold(until_after(now, at), "not_due");
                }
                Plan::Send
            }
        },
        _ => Plan::Done("unknown_status"),
    }
}

fn to_delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

fn until_after(now: DateTime<Utc>, t: DateTime<Utc>) -> Duration {
    let d = (t - now).to_std().unwrap_or_default() + Duration::from_millis(200);
    d.min(MAX_HOLD)
}

/// How a failed platform call is handled.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub class: Handling,
    /// The platform error code (0 when there was none: timeouts, proxies, ...).
    pub code: i32,
    /// What the message stores if it ends failed (or keeps as its last error on retry).
    pub info: ErrorInfo,
    /// The request may have reached the platform (timeout, broken connection).
    pub outcome_unknown: bool,
    /// 131056: the recipient's pair rate, back off that recipient only.
    pub pair_rate: bool,
    pub effect: SideEffect,
}

/// Classify a platform error. `explained` is the knowledge base's entry for the error's
/// code (looked up by the caller when there is a code).
pub fn classify(err: &PlatformError, explained: Option<&Explanation>) -> Failure {
    match err {
        PlatformError::Api {
            http_status,
            code,
            message,
            details,
        } => {
            let code32 = i32::try_from(*code).unwrap_or(0);
            let said = match details.as_deref().filter(|d| !d.is_empty()) {
                Some(d) => format!("{message} ({d})"),
                None => message.clone(),
            };
            let (class, mut info) = match explained {
                Some(e) if e.known => (e.handling, ErrorInfo::from(e)),
                // Unknown code: a server error is worth another try, anything else is not
                // resent blindly (the knowledge base's cautious fallback).
                Some(e) if *http_status >= 500 => (Handling::Retry, retryable(ErrorInfo::from(e))),
                Some(e) => (e.handling, ErrorInfo::from(e)),
                None if *http_status >= 500 => (
                    Handling::Retry,
                    transport_info(
                        code32,
                        "upstream_transient",
                        "The platform failed while handling the request.",
                        true,
                    ),
                ),
                None => (
                    Handling::FixRequest,
                    transport_info(
                        code32,
                        "unknown",
                        "The platform refused the request.",
                        false,
                    ),
                ),
            };
            if !said.is_empty() {
                info.human_explanation =
                    format!("{} Platform said: {said}", info.human_explanation);
            }
            // The one decision about a platform error, shared with the status webhook.
            let effect = warden_core::platform_errors::consequence(
                class,
                code32,
                explained.map(|e| e.title.as_str()).unwrap_or("halt"),
            )
            .effect;
            Failure {
                class,
                code: code32,
                info,
                outcome_unknown: false,
                pair_rate: code32 == 131056,
                effect,
            }
        }
        PlatformError::Http { status, body } => {
            // 408: the server gave up reading the request (a slow or stalled connection),
            // so it did not act on it; 429: throttled. Both are worth another try.
            let retry = matches!(*status, 408 | 429) || *status >= 500;
            let mut info = transport_info(
                i32::from(*status),
                "upstream_http",
                &format!("The platform answered HTTP {status} without a platform error body."),
                retry,
            );
            if !body.trim().is_empty() {
                let short: String = body.chars().take(200).collect();
                info.human_explanation = format!("{} Body: {short}", info.human_explanation);
            }
            Failure {
                class: if retry {
                    Handling::Retry
                } else {
                    Handling::FixRequest
                },
                code: i32::from(*status),
                info,
                outcome_unknown: false,
                pair_rate: false,
                effect: SideEffect::None,
            }
        }
        PlatformError::Timeout | PlatformError::Io(_) => Failure {
            class: Handling::Retry,
            code: 0,
            info: transport_info(
                0,
                "upstream_unreachable",
                &format!(
                    "No complete answer from the platform ({err}); the message may or may not have been accepted."
                ),
                true,
            ),
            outcome_unknown: true,
            pair_rate: false,
            effect: SideEffect::None,
        },
        PlatformError::Connect(_) | PlatformError::Config(_) => Failure {
            class: Handling::Retry,
            code: 0,
            info: transport_info(
                0,
                "upstream_unreachable",
                &format!("The platform could not be reached ({err}); nothing was sent."),
                true,
            ),
            outcome_unknown: false,
            pair_rate: false,
            effect: SideEffect::None,
        },
    }
}

fn retryable(mut info: ErrorInfo) -> ErrorInfo {
    info.can_retry = true;
    info
}

fn transport_info(code: i32, category: &str, explanation: &str, can_retry: bool) -> ErrorInfo {
    ErrorInfo {
        code,
        category: category.to_owned(),
        can_retry,
        human_explanation: explanation.to_owned(),
        suggested_action: if can_retry {
            "Warden retries automatically with backoff; if it keeps failing, check the platform's status and PLATFORM_API_URL, then use retry_failed_messages.".to_owned()
        } else {
            "Check the request and the platform's error reference before sending again.".to_owned()
        },
    }
}

/// The error of a message whose campaign was cancelled before it went out (the same words
/// the scheduler uses when it fails a cancelled campaign's queued messages in bulk).
pub fn cancelled_campaign() -> ErrorInfo {
    ErrorInfo {
        code: 0,
        category: "campaign".to_owned(),
        can_retry: false,
        human_explanation: "campaign cancelled: the campaign was cancelled before this message was sent, so it was not sent.".to_owned(),
        suggested_action: "Nothing to do for this message; schedule a new campaign to reach this customer.".to_owned(),
    }
}

/// The error of a message whose stored content cannot become a platform request.
pub fn bad_content(reason: &str) -> ErrorInfo {
    ErrorInfo {
        code: 0,
        category: "invalid_request".to_owned(),
        can_retry: false,
        human_explanation: format!(
            "The stored message cannot be sent as a platform request: {reason}."
        ),
        suggested_action: "Send a new message with valid content.".to_owned(),
    }
}

/// Exponential backoff with equal jitter: the `n`th retry (1-based) waits between half and
/// all of `base * 2^(n-1)`, capped at `cap`. `unit` in [0, 1) is the random draw.
pub fn backoff(n: i32, base: Duration, cap: Duration, unit: f64) -> Duration {
    let exp = u32::try_from(n.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    let full = base.saturating_mul(2u32.saturating_pow(exp)).min(cap);
    let half = full / 2;
    half + half.mul_f64(unit.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeDelta;
    use serde_json::json;

    const SETTLE: UnknownOutcome = UnknownOutcome {
        settle: Duration::from_secs(30),
        max_wait: Duration::from_secs(900),
    };

    fn row(status: &str) -> Row {
        Row {
            id: uuid::Uuid::new_v4(),
            customer_phone: "628123".into(),
            channel: "whatsapp".into(),
            direction: "outbound".into(),
            status: status.into(),
            content: json!({}),
            template_name: None,
            template_locale: None,
            campaign_id: None,
            campaign_status: None,
            deliver_at: None,
            next_attempt_at: None,
            lease_until: None,
            retry_count: 0,
            has_error: false,
            claimed_at: Utc::now(),
            webhooks_through: None,
            webhooks_advanced_at: None,
            unknown_since: None,
            db_now: Utc::now(),
        }
    }

    #[test]
    fn only_due_queued_rows_are_sent() {
        assert_eq!(plan(&row("queued"), SETTLE), Plan::Send);
        for s in ["sent", "delivered", "read"] {
            assert_eq!(plan(&row(s), SETTLE), Plan::Done("already_sent"));
        }
        assert_eq!(plan(&row("failed"), SETTLE), Plan::Done("already_failed"));
        assert_eq!(plan(&row("scheduled"), SETTLE), Plan::Done("scheduled"));
        let mut r = row("queued");
        r.next_attempt_at = Some(r.db_now + TimeDelta::seconds(5));
        assert!(matches!(plan(&r, SETTLE), Plan::Hold(d, "backoff") if d > Duration::from_secs(4)));
        let mut r = row("queued");
        r.next_attempt_at = Some(r.db_now - TimeDelta::seconds(5));
        assert_eq!(plan(&r, SETTLE), Plan::Send);
        let mut r = row("queued");
        r.direction = "inbound".into();
        assert_eq!(plan(&r, SETTLE), Plan::Done("not_outbound"));
    }

    #[test]
    fn a_send_in_flight_is_never_repeated() {
        let mut r = row("sending");
        r.lease_until = Some(r.db_now + TimeDelta::seconds(30));
        assert!(matches!(plan(&r, SETTLE), Plan::Hold(_, "in_flight")));
    }

    #[test]
    fn a_dead_claim_waits_for_its_webhook_then_is_resent() {
        let mut r = row("sending");
        r.claimed_at = r.db_now - TimeDelta::seconds(61);
        r.lease_until = Some(r.db_now - TimeDelta::seconds(1));
        match plan(&r, SETTLE) {
            Plan::Hold(d, "outcome_unknown") => {
                assert!(d > Duration::from_secs(28) && d <= SETTLE.settle, "{d:?}")
            }
            other => panic!("{other:?}"),
        }
        // Settle period over, webhooks lagging behind the claim: wait for them.
        r.lease_until = Some(r.db_now - TimeDelta::seconds(31));
        assert!(matches!(
            plan(&r, SETTLE),
            Plan::Hold(_, "awaiting_webhooks")
        ));
        r.webhooks_through = Some(r.claimed_at + TimeDelta::seconds(2));
        assert!(
            matches!(plan(&r, SETTLE), Plan::Hold(_, "awaiting_webhooks")),
            "within the margin is not evidence"
        );
        // Statuses emitted after the claim but before its lease ended: the call may have
        // reached the platform late in its lease. Not evidence.
        r.webhooks_through = Some(r.claimed_at + TimeDelta::seconds(20));
        assert!(matches!(
            plan(&r, SETTLE),
            Plan::Hold(_, "awaiting_webhooks")
        ));
        // Statuses emitted after the lease ended arrived, this one's did not: never reached.
        r.webhooks_through = Some(r.lease_until.unwrap() + WEBHOOK_EVIDENCE_MARGIN);
        assert_eq!(plan(&r, SETTLE), Plan::Resend(Why::Evidence));
        // No evidence ever (nothing was sent after it): resent after max_wait, not before.
        r.webhooks_through = None;
        r.lease_until = Some(r.db_now - TimeDelta::seconds(899));
        assert!(matches!(
            plan(&r, SETTLE),
            Plan::Hold(d, "awaiting_webhooks") if d <= Duration::from_millis(1200)
        ));
        r.lease_until = Some(r.db_now - TimeDelta::seconds(900));
        assert_eq!(plan(&r, SETTLE), Plan::Resend(Why::MaxWait));
        // Past the max wait while a webhook backlog drains (progress moved within the
        // settle period, not yet past the claim): its own status may still come.
        r.webhooks_through = Some(r.claimed_at - TimeDelta::seconds(60));
        r.webhooks_advanced_at = Some(r.db_now - TimeDelta::seconds(3));
        assert!(matches!(
            plan(&r, SETTLE),
            Plan::Hold(d, "awaiting_webhooks") if d > Duration::from_secs(29)
        ));
        // The backlog went quiet (WEBHOOKS_QUIET, the settle period here) without it: resent.
        r.webhooks_advanced_at = Some(r.db_now - TimeDelta::seconds(30));
        assert_eq!(plan(&r, SETTLE), Plan::Resend(Why::MaxWait));
        r.webhooks_advanced_at = None;
        r.lease_until = None;
        r.claimed_at = r.db_now - TimeDelta::seconds(60);
        r.webhooks_through = Some(r.db_now);
        assert_eq!(plan(&r, SETTLE), Plan::Resend(Why::Evidence));
    }

    #[test]
    fn campaign_state_gates_sending() {
        let mut r = row("queued");
        r.campaign_status = Some("paused".into());
        assert_eq!(plan(&r, SETTLE), Plan::Done("campaign_paused"));
        r.campaign_status = Some("cancelled".into());
        assert_eq!(plan(&r, SETTLE), Plan::CancelledCampaign);
        r.campaign_status = Some("running".into());
        assert_eq!(plan(&r, SETTLE), Plan::Send);
    }

    fn known(code: i32, handling: Handling) -> Explanation {
        Explanation {
            code,
            title: "t".into(),
            category: "c".into(),
            can_retry: handling == Handling::Retry,
            handling,
            human_explanation: "why.".into(),
            suggested_action: "do.".into(),
            known: true,
        }
    }

    fn api(http_status: u16, code: i64) -> PlatformError {
        PlatformError::Api {
            http_status,
            code,
            message: "m".into(),
            details: Some("d".into()),
        }
    }

    #[test]
    fn classes_follow_the_knowledge_base() {
        let f = classify(
            &api(400, 131050),
            Some(&known(131050, Handling::RecordState)),
        );
        assert_eq!(f.class, Handling::RecordState);
        assert_eq!(f.effect, SideEffect::OptOutMarketing);
        assert_eq!(f.info.code, 131050);
        assert!(f.info.human_explanation.contains("Platform said: m (d)"));
        let f = classify(
            &api(400, 131026),
            Some(&known(131026, Handling::RecordState)),
        );
        assert_eq!(f.effect, SideEffect::Undeliverable);
        let f = classify(
            &api(400, 131049),
            Some(&known(131049, Handling::RecordState)),
        );
        assert_eq!(f.effect, SideEffect::MarketingLimited);
        let f = classify(&api(400, 131048), Some(&known(131048, Handling::Halt)));
        assert!(matches!(f.effect, SideEffect::PauseCampaigns(ref r) if r.contains("131048")));
        let f = classify(&api(429, 130429), Some(&known(130429, Handling::Retry)));
        assert_eq!(f.class, Handling::Retry);
        assert!(!f.pair_rate);
        let f = classify(&api(400, 131056), Some(&known(131056, Handling::Retry)));
        assert!(f.pair_rate);
        let f = classify(
            &api(400, 132000),
            Some(&known(132000, Handling::FixRequest)),
        );
        assert_eq!(f.class, Handling::FixRequest);
    }

    #[test]
    fn unknown_codes_retry_only_on_server_errors() {
        let mut fallback = known(999, Handling::FixRequest);
        fallback.known = false;
        assert_eq!(
            classify(&api(503, 999), Some(&fallback)).class,
            Handling::Retry
        );
        assert!(classify(&api(503, 999), Some(&fallback)).info.can_retry);
        assert_eq!(
            classify(&api(400, 999), Some(&fallback)).class,
            Handling::FixRequest
        );
    }

    #[test]
    fn transport_errors_retry_and_flag_unknown_outcomes() {
        let t = classify(&PlatformError::Timeout, None);
        assert_eq!(t.class, Handling::Retry);
        assert!(t.outcome_unknown);
        let c = classify(&PlatformError::Connect("refused".into()), None);
        assert_eq!(c.class, Handling::Retry);
        assert!(!c.outcome_unknown);
        let h = classify(
            &PlatformError::Http {
                status: 502,
                body: "bad gateway".into(),
            },
            None,
        );
        assert_eq!(h.class, Handling::Retry);
        assert_eq!(h.info.code, 502);
        let h = classify(
            &PlatformError::Http {
                status: 404,
                body: String::new(),
            },
            None,
        );
        assert_eq!(h.class, Handling::FixRequest);
        for status in [408, 429] {
            let h = classify(
                &PlatformError::Http {
                    status,
                    body: String::new(),
                },
                None,
            );
            assert_eq!(h.class, Handling::Retry, "HTTP {status}");
            assert!(!h.outcome_unknown);
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let base = Duration::from_secs(1);
        let cap = Duration::from_secs(300);
        assert_eq!(backoff(1, base, cap, 0.0), Duration::from_millis(500));
        assert_eq!(backoff(1, base, cap, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(3, base, cap, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(20, base, cap, 1.0), cap);
        assert_eq!(backoff(20, base, cap, 0.0), cap / 2);
        for n in 1..12 {
            let d = backoff(n, base, cap, 0.37);
            assert!(d <= cap && d >= Duration::from_millis(500));
        }
    }
}
