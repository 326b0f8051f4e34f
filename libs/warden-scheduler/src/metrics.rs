//! The scheduler's Prometheus metrics (default registry, rendered by `/metrics`).

use std::sync::LazyLock;

use prometheus::{
    HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, register_int_counter,
    register_int_counter_vec, register_int_gauge, register_int_gauge_vec,
};

/// Scheduled messages that were due (deliver_at reached, still `scheduled`) at the last poll.
pub static DUE_ROWS: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_scheduler_due_rows",
        "Scheduled messages due for dispatch at the last poll"
    )
    .expect("metric registers once")
});

/// Rows this process claimed (lease taken), by kind: `message` or `campaign`.
pub static CLAIMED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_scheduler_claimed_total",
        "Rows claimed by this scheduler (lease taken), by kind",
        &["kind"]
    )
    .expect("metric registers once")
});

/// Outcomes of scheduled messages at dispatch: queued, refused, invalid, retry.
pub static DISPATCHED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_scheduler_dispatched_total",
        "Scheduled messages dispatched through the send path, by outcome",
        &["outcome"]
    )
    .expect("metric registers once")
});

/// Campaign recipients passed through the send path: enqueued, refused, error.
pub static RECIPIENTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_campaign_recipients_total",
        "Campaign recipients checked by the send path, by outcome",
        &["outcome"]
    )
    .expect("metric registers once")
});

/// 1 while a sender is protected (no marketing from it), else 0; by sender id.
pub static SENDER_PROTECTED: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "warden_sender_protected",
        "1 while the sender sends no marketing (quality RED or a halt-class platform error), at the last poll",
        &["sender"]
    )
    .expect("metric registers once")
});

/// Campaigns not yet in a terminal state, by status.
pub static CAMPAIGNS: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        "warden_scheduler_campaigns",
        "Campaigns not in a terminal state, by status, at the last poll",
        &["status"]
    )
    .expect("metric registers once")
});

/// Campaign messages failed because their campaign was cancelled before they were sent.
pub static CANCELLED_MESSAGES: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_campaign_cancelled_messages_total",
        "Queued messages of cancelled campaigns ended failed (never sent)"
    )
    .expect("metric registers once")
});

/// Queued messages never published (NATS was down when they were accepted).
pub static RELAY_BACKLOG: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_relay_backlog",
        "Queued messages not yet published to the delivery stream"
    )
    .expect("metric registers once")
});

/// Messages the relay published (first publishes and republishes of lost ones).
pub static RELAY_PUBLISHED: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_relay_published_total",
        "Messages published by the relay"
    )
    .expect("metric registers once")
});

/// Duration of one poll cycle.
pub static TICK_SECONDS: LazyLock<HistogramVec> = LazyLock::new(|| {
    warden_telemetry::metrics::latency_histogram(
        "warden_scheduler_tick_duration_seconds",
        "Time of one scheduler poll cycle",
        &["busy"],
    )
});

/// Register every metric so `/metrics` lists them from the start (at zero).
pub fn init() {
    LazyLock::force(&DUE_ROWS);
    for kind in ["message", "campaign"] {
        CLAIMED.with_label_values(&[kind]);
    }
    for outcome in ["queued", "refused", "invalid", "retry"] {
        DISPATCHED.with_label_values(&[outcome]);
    }
    for outcome in ["enqueued", "refused", "error"] {
        RECIPIENTS.with_label_values(&[outcome]);
    }
    LazyLock::force(&CAMPAIGNS);
    LazyLock::force(&CANCELLED_MESSAGES);
    LazyLock::force(&RELAY_BACKLOG);
    LazyLock::force(&RELAY_PUBLISHED);
    LazyLock::force(&TICK_SECONDS);
}
