//! The platform client every process builds the same way from its settings.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus::{IntGaugeVec, Opts, register_int_gauge_vec};
use warden_platform::{PlatformClient, PlatformConfig, PlatformError};
use warden_settings::Settings;

static API_VERSION_INFO: LazyLock<IntGaugeVec> = LazyLock::new(|| {
    register_int_gauge_vec!(
        Opts::new(
            "warden_platform_api_info",
            "The platform API version this process calls (value 1)"
        ),
        &["version"]
    )
    .expect("metric registers once")
});

/// A client of the default sender (its number, business account and token; without a
/// senders file the `PLATFORM_*` ones) for the configured base URL and API version;
/// `timeout` overrides the client's default whole-request limit. Logs the version and
/// exposes it as a metric label.
pub fn client(
    settings: &Settings,
    timeout: Option<Duration>,
) -> Result<PlatformClient, PlatformError> {
    let senders = settings.senders();
    let sender = senders.default();
    let settings = &settings.platform;
    let mut config = PlatformConfig::new(
        settings.api_url.clone(),
        sender.access_token.expose().to_string(),
        sender.phone_number_id.clone(),
        sender.waba_id.clone(),
    );
    config.api_version = settings.api_version.clone();
    if let Some(timeout) = timeout {
        config.timeout = timeout;
    }
    let client = PlatformClient::new(config)?;
    API_VERSION_INFO
        .with_label_values(&[settings.api_version.as_str()])
        .set(1);
    tracing::info!(
        api_url = %settings.api_url,
        api_version = %settings.api_version,
        "platform API"
    );
    Ok(client)
}
