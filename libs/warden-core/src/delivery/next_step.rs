//! The pure rule of delivery: what to do with a stream message given its row. No I/O
//! here, so the rule is unit-tested; [`super::stale_claims`] applies the same rule to rows
//! no stream message drives any more.

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use warden_rules::message_status::MessageStatus;

use super::DeliveryRow;

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

/// What a stream message for `row` calls for.
pub fn plan(row: &DeliveryRow, unknown: UnknownOutcome) -> Plan {
    let now = row.db_now;
    if row.direction != "outbound" {
        return Plan::Done("not_outbound");
    }
    match row.status {
        Some(MessageStatus::Sent | MessageStatus::Delivered | MessageStatus::Read) => {
            Plan::Done("already_sent")
        }
        Some(MessageStatus::Failed) => Plan::Done("already_failed"),
        // The scheduler publishes it again at deliver_at (after the full checks).
        Some(MessageStatus::Scheduled) => Plan::Done("scheduled"),
        Some(MessageStatus::Sending) => match row.lease_until {
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
        Some(MessageStatus::Queued) => match row.campaign_status.as_deref() {
            // Stays queued; the scheduler republishes it when the campaign resumes. A
            // campaign a rule paused (`paused_by_rule`: the messaging limit) is not this:
            // what it accepted was admitted within the limit and goes out.
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
        Some(MessageStatus::Received) | None => Plan::Done("unknown_status"),
    }
}

fn to_delta(d: Duration) -> TimeDelta {
    TimeDelta::from_std(d).unwrap_or(TimeDelta::MAX)
}

fn until_after(now: DateTime<Utc>, t: DateTime<Utc>) -> Duration {
    let d = (t - now).to_std().unwrap_or_default() + Duration::from_millis(200);
    d.min(MAX_HOLD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SETTLE: UnknownOutcome = UnknownOutcome {
        settle: Duration::from_secs(30),
        max_wait: Duration::from_secs(900),
    };

    fn row(status: MessageStatus) -> DeliveryRow {
        DeliveryRow {
            id: uuid::Uuid::new_v4(),
            customer_phone: "628123".into(),
            channel: "whatsapp".into(),
            sender_id: "default".into(),
            category: "service".into(),
            direction: "outbound".into(),
            status: Some(status),
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
        assert_eq!(plan(&row(MessageStatus::Queued), SETTLE), Plan::Send);
        for s in [
            MessageStatus::Sent,
            MessageStatus::Delivered,
            MessageStatus::Read,
        ] {
            assert_eq!(plan(&row(s), SETTLE), Plan::Done("already_sent"));
        }
        assert_eq!(
            plan(&row(MessageStatus::Failed), SETTLE),
            Plan::Done("already_failed")
        );
        assert_eq!(
            plan(&row(MessageStatus::Scheduled), SETTLE),
            Plan::Done("scheduled")
        );
        let mut r = row(MessageStatus::Queued);
        r.next_attempt_at = Some(r.db_now + TimeDelta::seconds(5));
        assert!(matches!(plan(&r, SETTLE), Plan::Hold(d, "backoff") if d > Duration::from_secs(4)));
        let mut r = row(MessageStatus::Queued);
        r.next_attempt_at = Some(r.db_now - TimeDelta::seconds(5));
        assert_eq!(plan(&r, SETTLE), Plan::Send);
        let mut r = row(MessageStatus::Queued);
        r.direction = "inbound".into();
        assert_eq!(plan(&r, SETTLE), Plan::Done("not_outbound"));
    }

    #[test]
    fn a_send_in_flight_is_never_repeated() {
        let mut r = row(MessageStatus::Sending);
        r.lease_until = Some(r.db_now + TimeDelta::seconds(30));
        assert!(matches!(plan(&r, SETTLE), Plan::Hold(_, "in_flight")));
    }

    #[test]
    fn a_dead_claim_waits_for_its_webhook_then_is_resent() {
        let mut r = row(MessageStatus::Sending);
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
        let mut r = row(MessageStatus::Queued);
        r.campaign_status = Some("paused".into());
        assert_eq!(plan(&r, SETTLE), Plan::Done("campaign_paused"));
        r.campaign_status = Some("paused_by_rule".into());
        assert_eq!(
            plan(&r, SETTLE),
            Plan::Send,
            "a rule's pause lets accepted messages go"
        );
        r.campaign_status = Some("cancelled".into());
        assert_eq!(plan(&r, SETTLE), Plan::CancelledCampaign);
        r.campaign_status = Some("running".into());
        assert_eq!(plan(&r, SETTLE), Plan::Send);
    }
}
