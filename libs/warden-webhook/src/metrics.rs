//! The webhook's own metrics (request latency comes from `warden_service::admin::track_requests`
//! as `warden_http_request_duration_seconds{route="/webhook"}`).

use std::sync::LazyLock;

use prometheus::{
    HistogramVec, IntCounter, IntCounterVec, Opts, register_int_counter, register_int_counter_vec,
};

use warden_core::conversations::inbound::NoWindow;

use crate::events::EventKind;

/// New events applied, by kind; `ignored` counts parts of bodies skipped on purpose
/// (unknown fields, statuses of unknown messages, ...), `failed` events that could not be
/// applied and were set aside.
pub static EVENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        Opts::new(
            "warden_webhook_events_total",
            "Webhook events applied, by kind (ignored: skipped on purpose; failed: set aside)"
        ),
        &["kind"]
    )
    .expect("metric registers once")
});

pub static SIGNATURE_FAILURES: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_webhook_signature_failures_total",
        "POSTs refused because X-Hub-Signature-256 was missing or wrong"
    )
    .expect("metric registers once")
});

pub static REPLAYS: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_webhook_replays_total",
        "Events received again (already applied) and not applied twice"
    )
    .expect("metric registers once")
});

/// Inbound messages stored without opening or extending a care window, by reason
/// (`implausible_timestamp`, `not_from_customer`).
pub static NO_WINDOW: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        Opts::new(
            "warden_webhook_inbound_without_window_total",
            "Inbound messages stored that opened no care window, by reason"
        ),
        &["reason"]
    )
    .expect("metric registers once")
});

/// Events for a business number that is no sender: acknowledged, not stored.
pub static FOREIGN: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_webhook_unknown_sender_total",
        "Messages, statuses and preferences for a business number that is no sender (metadata.phone_number_id): acknowledged, not stored"
    )
    .expect("metric registers once")
});

/// Failed statuses whose retryable error put the message back in the queue.
pub static RETRIED: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_webhook_retries_total",
        "Messages put back in the queue because a status webhook reported a retryable error"
    )
    .expect("metric registers once")
});

/// Time from a verified body to the commit, by outcome.
pub static INGEST_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    warden_telemetry::metrics::latency_histogram(
        "warden_webhook_ingest_duration_seconds",
        "Time to store one webhook POST's events (one transaction), by outcome",
        &["outcome"],
    )
});

pub const IGNORED: &str = "ignored";
pub const FAILED: &str = "failed";

/// Make every series visible at zero from the start (a scrape shows them before traffic).
pub fn init() {
    for kind in EventKind::ALL {
        EVENTS.with_label_values(&[kind.as_str()]);
    }
    EVENTS.with_label_values(&[IGNORED]);
    EVENTS.with_label_values(&[FAILED]);
    for reason in [NoWindow::ImplausibleTimestamp, NoWindow::NotFromCustomer] {
        NO_WINDOW.with_label_values(&[reason.as_str()]);
    }
    LazyLock::force(&FOREIGN);
    LazyLock::force(&RETRIED);
    LazyLock::force(&SIGNATURE_FAILURES);
    LazyLock::force(&REPLAYS);
    LazyLock::force(&INGEST_SECONDS);
}

pub fn applied(kind: EventKind, n: u64) {
    if n > 0 {
        EVENTS.with_label_values(&[kind.as_str()]).inc_by(n);
    }
}

pub fn ignored(n: u64) {
    if n > 0 {
        EVENTS.with_label_values(&[IGNORED]).inc_by(n);
    }
}

pub fn failed(n: u64) {
    if n > 0 {
        EVENTS.with_label_values(&[FAILED]).inc_by(n);
    }
}

pub fn no_window(reason: NoWindow, n: u64) {
    if n > 0 {
        NO_WINDOW.with_label_values(&[reason.as_str()]).inc_by(n);
    }
}
