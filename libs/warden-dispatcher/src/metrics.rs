//! The dispatcher's Prometheus metrics (the process's default registry, served on /metrics).

use std::sync::LazyLock;

use prometheus::{
    HistogramVec, IntCounter, IntCounterVec, IntGauge, register_int_counter,
    register_int_counter_vec, register_int_gauge,
};

pub static SENT: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_dispatcher_sent_total",
        "Messages the platform accepted (status sent)"
    )
    .expect("metric registers once")
});

pub static FAILED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_failed_total",
        "Messages that ended failed at dispatch, by error code (0: not a platform code)",
        &["code"]
    )
    .expect("metric registers once")
});

pub static RETRIES: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_dispatcher_retries_total",
        "Retryable failures put back in the queue with backoff"
    )
    .expect("metric registers once")
});

pub static RESENT_UNKNOWN: LazyLock<IntCounter> = LazyLock::new(|| {
    register_int_counter!(
        "warden_dispatcher_resent_unknown_total",
        "Sends a stopped dispatcher had claimed, resent once later status webhooks arrived without theirs"
    )
    .expect("metric registers once")
});

pub static UNKNOWN_OUTCOMES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_unknown_outcomes_total",
        "Sends whose outcome was unknown (call timed out, or its dispatcher died), by event: held (the outcome became unknown), resolved_by_webhook, resent_on_evidence, resent_on_max_wait",
        &["event"]
    )
    .expect("metric registers once")
});

pub static UNKNOWN_HELD: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_dispatcher_unknown_outcomes_held",
        "Rows held `sending` with an unknown outcome now (as of this replica's last sweep)"
    )
    .expect("metric registers once")
});

pub static UNKNOWN_OLDEST: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_dispatcher_unknown_outcome_oldest_seconds",
        "Age of the oldest unknown outcome held now, from its lease's end (as of the last sweep)"
    )
    .expect("metric registers once")
});

pub static SWEEPS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_sweeps_total",
        "Runs of the unknown-outcome sweep, by result (ok, error)",
        &["result"]
    )
    .expect("metric registers once")
});

pub static HALTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_halts_total",
        "Halt-class platform errors (account, token, policy): campaigns were paused; needs an operator",
        &["code"]
    )
    .expect("metric registers once")
});

pub static HELD: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_held_total",
        "Stream messages put back for later without a platform call, by reason",
        &["reason"]
    )
    .expect("metric registers once")
});

pub static SKIPPED: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_dispatcher_skipped_total",
        "Stream messages acknowledged without a platform call, by reason",
        &["reason"]
    )
    .expect("metric registers once")
});

pub static IN_FLIGHT: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_dispatcher_in_flight",
        "Stream messages being processed now"
    )
    .expect("metric registers once")
});

pub static PLATFORM_LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    warden_telemetry::metrics::latency_histogram(
        "warden_platform_request_duration_seconds",
        "Platform send call latency, by outcome (ok, api_error, http_error, timeout, connect, io)",
        &["operation", "outcome"],
    )
});

/// Register everything so a scrape shows the names before the first message (the unknown
/// outcomes' series: `unknown_events::touch`).
pub fn touch() {
    LazyLock::force(&SENT);
    LazyLock::force(&FAILED);
    LazyLock::force(&RETRIES);
    LazyLock::force(&RESENT_UNKNOWN);
    LazyLock::force(&HALTS);
    LazyLock::force(&UNKNOWN_HELD);
    LazyLock::force(&UNKNOWN_OLDEST);
    SWEEPS.with_label_values(&["ok"]);
    SWEEPS.with_label_values(&["error"]);
    LazyLock::force(&HELD);
    LazyLock::force(&SKIPPED);
    LazyLock::force(&IN_FLIGHT);
    // A vector shows in a scrape once it has a series: start the common one at zero.
    PLATFORM_LATENCY.with_label_values(&["send_message", "ok"]);
}
