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
    client_for(settings, settings.senders().default(), timeout)
}

/// A client of every sender but the default, by the stored key of its rows
/// (`warden_settings::Senders::key_of`): its number, business account and token.
pub fn other_senders(
    settings: &Settings,
    timeout: Option<Duration>,
) -> Result<std::collections::HashMap<String, PlatformClient>, PlatformError> {
    let senders = settings.senders();
    senders
        .all()
        .iter()
        .filter(|s| !s.default)
        .map(|s| Ok((senders.key_of(s).sender, client_for(settings, s, timeout)?)))
        .collect()
}

/// A client that calls the platform as `sender`.
pub fn client_for(
    settings: &Settings,
    sender: &warden_settings::Sender,
    timeout: Option<Duration>,
) -> Result<PlatformClient, PlatformError> {
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
