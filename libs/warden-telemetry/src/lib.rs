//! Telemetry for every Warden process.
//!
//! Logs are JSON lines on stderr, filtered by `RUST_LOG` (default `info`): stdout belongs
//! to the MCP protocol in `mcp-gateway`, so nothing here ever writes there. Traces are
//! exported over OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and W3C trace context
//! is carried across NATS and HTTP with [`inject_context`] / [`set_parent_from`].

pub mod metrics;

use std::collections::HashMap;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// Keeps the trace exporter alive; dropping it flushes the spans not yet sent.
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown();
        }
    }
}

/// rustls needs exactly one process-wide crypto provider; reqwest (the OTLP exporter, the
/// platform client) and async-nats would each bring one. Idempotent.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Install the global subscriber. `otlp_endpoint` enables trace export (the exporter reads
/// `OTEL_EXPORTER_OTLP_ENDPOINT` itself and appends `/v1/traces`).
pub fn init(service: &'static str, otlp_endpoint: Option<&str>) -> anyhow::Result<TelemetryGuard> {
    init_with_default_filter(service, otlp_endpoint, "info")
}

/// [`init`] with another log filter when `RUST_LOG` is unset (benches log `warn`).
pub fn init_with_default_filter(
    service: &'static str,
    otlp_endpoint: Option<&str>,
    default_filter: &str,
) -> anyhow::Result<TelemetryGuard> {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_target(true)
        .with_writer(std::io::stderr)
        .with_filter(filter);

    let provider = match otlp_endpoint {
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(traces_url(endpoint))
                .build()?;
            let resource = opentelemetry_sdk::Resource::builder()
                .with_service_name(service)
                .build();
            Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(exporter)
                    .with_resource(resource)
                    .build(),
            )
        }
        None => None,
    };
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let registry = tracing_subscriber::registry().with(logs);
    match &provider {
        Some(provider) => {
            let tracer = provider.tracer(service);
            // Spans go to OTLP at info and above regardless of the log filter. rmcp wraps a
            // whole stdio session in one span: left in, every message an agent sends in a
            // session would share one trace, so each tool call starts its own instead.
            let otel = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_filter(EnvFilter::new("info,rmcp=off"));
            registry.with(otel).try_init()?;
            opentelemetry::global::set_tracer_provider(provider.clone());
        }
        None => registry.try_init()?,
    }
    metrics::register_process_info(service);
    Ok(TelemetryGuard { provider })
}

fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

struct MapInjector<'a>(&'a mut HashMap<String, String>);
impl Injector for MapInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_string(), value);
    }
}

struct MapExtractor<'a>(&'a HashMap<String, String>);
impl Extractor for MapExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The W3C trace context (`traceparent`, `tracestate`) of `span`, for message headers.
pub fn inject_context(span: &tracing::Span) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let cx = span.context();
    TraceContextPropagator::new().inject_context(&cx, &mut MapInjector(&mut out));
    out
}

/// Make `span` a child of the trace context found in `headers`, if any.
pub fn set_parent_from(span: &tracing::Span, headers: &HashMap<String, String>) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&MapExtractor(headers));
    let _ = span.set_parent(cx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_url_appends_the_signal_path_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }

    #[test]
    fn no_context_means_no_headers() {
        let headers = inject_context(&tracing::Span::none());
        assert!(!headers.contains_key("traceparent"));
    }
}
