//! Every step of an unknown outcome, counted and logged in one place (a send whose call
//! timed out, or whose dispatcher died holding the claim). The rule itself is
//! `warden_core::delivery::next_step`; the dispatcher applies it to the stream messages it
//! holds and [`crate::sweep`] to rows no stream message drives any more.

use uuid::Uuid;
use warden_core::delivery::Why;

use crate::metrics::{RESENT_UNKNOWN, UNKNOWN_OUTCOMES};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The outcome became unknown; the row is held `sending` for its status webhook.
    Held,
    /// Its status webhook settled it; nothing was resent.
    ResolvedByWebhook,
    /// Resent: later statuses arrived without its own.
    Resent(Why),
}

const EVENTS: [Event; 4] = [
    Event::Held,
    Event::ResolvedByWebhook,
    Event::Resent(Why::Evidence),
    Event::Resent(Why::MaxWait),
];

impl Event {
    pub fn label(self) -> &'static str {
        match self {
            Event::Held => "held",
            Event::ResolvedByWebhook => "resolved_by_webhook",
            Event::Resent(why) => why.label(),
        }
    }
}

/// Start every event's series at zero, so a scrape shows them before the first one.
pub fn touch() {
    for event in EVENTS {
        UNKNOWN_OUTCOMES.with_label_values(&[event.label()]);
    }
}

/// Count and log one event. `by` names who saw it (`dispatcher` or `sweep`), `cause` what
/// made the outcome unknown or what settled it.
pub fn record(event: Event, id: Uuid, by: &'static str, cause: &str) {
    UNKNOWN_OUTCOMES.with_label_values(&[event.label()]).inc();
    let event_label = event.label();
    match event {
        Event::Held => tracing::warn!(message_id = %id, event = event_label, by, cause,
            "unknown outcome: held `sending` for its status webhook; resent only on evidence it never arrived or after DISPATCH_UNKNOWN_MAX_WAIT"),
        Event::ResolvedByWebhook => {
            tracing::info!(message_id = %id, event = event_label, by, cause,
            "unknown outcome resolved by its status webhook; not resent")
        }
        Event::Resent(Why::Evidence) => {
            RESENT_UNKNOWN.inc();
            tracing::warn!(message_id = %id, event = event_label, by, cause,
                "unknown outcome: later status webhooks arrived without this one's; sending it again")
        }
        Event::Resent(Why::MaxWait) => {
            RESENT_UNKNOWN.inc();
            tracing::warn!(message_id = %id, event = event_label, by, cause,
                "unknown outcome: no status webhook within DISPATCH_UNKNOWN_MAX_WAIT; sending it again")
        }
    }
}
