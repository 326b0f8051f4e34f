//! The process's Prometheus registry (the default one) and metrics every process shares.
//!
//! Names follow Prometheus conventions: `warden_` prefix, base units (seconds), `_total`
//! on counters. Each library registers its own metrics next to the code that moves them.

use std::sync::LazyLock;

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, TextEncoder,
    register_histogram_vec, register_int_counter_vec, register_int_gauge_vec,
};

/// Latency buckets from 0.1 ms to 10 s, fine enough for sub-millisecond tool calls.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

pub static HTTP_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        Opts::new(
            "warden_http_requests_total",
            "HTTP requests served, by route and status"
        ),
        &["method", "route", "status"]
    )
    .expect("metric registers once")
});

pub static HTTP_LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    register_histogram_vec!(
        HistogramOpts::new(
            "warden_http_request_duration_seconds",
            "HTTP request latency"
        )
        .buckets(LATENCY_BUCKETS.to_vec()),
        &["method", "route"]
    )
    .expect("metric registers once")
});

static PROCESS_INFO: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        Opts::new(
            "warden_process_info",
            "Which Warden process this is (value 1)"
        ),
        &["service", "version"]
    )
    .expect("metric registers once")
});

pub(crate) fn register_process_info(service: &str) {
    PROCESS_INFO
        .with_label_values(&[service, env!("CARGO_PKG_VERSION")])
        .set(1);
}

/// Record one served HTTP request.
pub fn observe_http(method: &str, route: &str, status: u16, seconds: f64) {
    HTTP_REQUESTS
        .with_label_values(&[method, route, &status.to_string()])
        .inc();
    HTTP_LATENCY
        .with_label_values(&[method, route])
        .observe(seconds);
}

/// Build a histogram with the shared latency buckets (for libraries' own metrics).
pub fn latency_histogram(name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    register_histogram_vec!(
        HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()),
        labels
    )
    .expect("metric registers once")
}

/// The text exposition of every registered metric.
pub fn render() -> String {
    let families = prometheus::gather();
    let mut buf = Vec::new();
    // Encoding into a Vec cannot fail for well-formed families.
    let _ = TextEncoder::new().encode(&families, &mut buf);
    String::from_utf8(buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observed_requests_show_in_the_scrape() {
        observe_http("GET", "/health", 200, 0.001);
        let text = render();
        assert!(text.contains(
            "warden_http_requests_total{method=\"GET\",route=\"/health\",status=\"200\"}"
        ));
        assert!(text.contains("warden_http_request_duration_seconds_bucket"));
    }
}
