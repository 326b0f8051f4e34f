//! Prometheus metrics of the limiters (registered in the process's default registry).

use std::sync::LazyLock;

use prometheus::{Histogram, HistogramOpts, IntGauge, register_histogram, register_int_gauge};

/// Waits from a few milliseconds (one token at 80 MPS is 12.5 ms) to minutes (backlogs).
const WAIT_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

pub(crate) static WAIT_SECONDS: LazyLock<Histogram> = LazyLock::new(|| {
    register_histogram!(
        HistogramOpts::new(
            "warden_ratelimit_wait_seconds",
            "Time spent waiting for a token of the channel's bucket (never counted as a delivery attempt)"
        )
        .buckets(WAIT_BUCKETS.to_vec())
    )
    .expect("metric registers once")
});

pub(crate) static FALLBACK: LazyLock<IntGauge> = LazyLock::new(|| {
    register_int_gauge!(
        "warden_ratelimit_fallback",
        "Rate limiters of this process running on the local in-process fallback because Redis is unreachable (0 when all use Redis)"
    )
    .expect("metric registers once")
});

/// Make both metrics show in a scrape from the start (at zero).
pub(crate) fn touch() {
    LazyLock::force(&WAIT_SECONDS);
    LazyLock::force(&FALLBACK);
}
