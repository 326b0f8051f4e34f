//! The platform account every test plays: the numbers, token and secrets platform-sim is
//! started with and Warden's settings point at, so the two agree.

use warden_settings::Settings;

/// The business phone number (`phone_number_id`) messages are sent from.
pub const PHONE_NUMBER_ID: &str = "100000000000777";
/// The WhatsApp Business Account (WABA) of that number.
pub const WABA_ID: &str = "200000000000777";
/// The bearer token the platform (the sim) accepts.
pub const ACCESS_TOKEN: &str = "test-access-token";
/// The app secret webhooks are signed with (`X-Hub-Signature-256`).
pub const APP_SECRET: &str = "test-app-secret";
/// The token of the webhook subscription handshake (`hub.verify_token`).
pub const VERIFY_TOKEN: &str = "test-verify-token";

/// Point `settings` at the test account (the platform's URL, e.g. a sim's, is the
/// caller's to set).
pub fn use_test_account(settings: &mut Settings) {
    let p = &mut settings.platform;
    p.access_token = ACCESS_TOKEN.into();
    p.phone_number_id = PHONE_NUMBER_ID.into();
    p.account_id = WABA_ID.into();
    p.webhook_verify_token = VERIFY_TOKEN.into();
    p.app_secret = Some(APP_SECRET.into());
}
