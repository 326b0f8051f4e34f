//! The built `webhook` binary as a separate process on the test's database and stream, and
//! signed platform payloads to POST to it (live updates cross processes over NATS).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_settings::Settings;
use warden_test_support::platform::APP_SECRET;
use warden_test_support::procs;

pub struct WebhookProc {
    child: Option<Child>,
    pub port: u16,
    log: PathBuf,
    http: reqwest::Client,
}

impl WebhookProc {
    /// Start `webhook` and wait until `/health` answers.
    pub fn start(settings: &Settings) -> WebhookProc {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let port = warden_test_support::free_port();
        let log = std::env::temp_dir().join(format!(
            "warden-live-webhook-{}.log",
            uuid::Uuid::new_v4().simple()
        ));
        let mut cmd = Command::new(warden_test_support::binary("webhook"));
        cmd.envs(procs::env_of(settings))
            .env("SERVER_HTTP_PORT", port.to_string())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("webhook log file"));
        let mut child = cmd.spawn().expect("spawn webhook");
        let tail = {
            let log = log.clone();
            move || std::fs::read_to_string(&log).unwrap_or_default()
        };
        warden_test_support::procs::wait_healthy(&mut child, port, Duration::from_secs(60), tail);
        WebhookProc {
            child: Some(child),
            port,
            log,
            http: reqwest::Client::new(),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/webhook", self.port)
    }

    /// POST a signed body; returns when the 200 arrived (panics on any other answer).
    pub async fn post(&self, body: &Value) -> Instant {
        let bytes = body.to_string().into_bytes();
        let signature = warden_platform::signature::sign(APP_SECRET.as_bytes(), &bytes);
        let resp = self
            .http
            .post(self.url())
            .header("content-type", "application/json")
            .header(warden_platform::signature::HEADER, signature)
            .body(bytes)
            .send()
            .await
            .expect("POST /webhook");
        let at = Instant::now();
        let status = resp.status();
        assert_eq!(
            status,
            200,
            "webhook answered {status}: {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
        at
    }
}

impl Drop for WebhookProc {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            warden_test_support::procs::stop(child, Duration::from_secs(10));
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

fn envelope(value: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "200000000000777",
        "time": chrono::Utc::now().timestamp(),
        "changes": [{"field": "messages", "value": value}]}]})
}

fn metadata(phone_number_id: &str) -> Value {
    json!({"display_phone_number": "15550100000", "phone_number_id": phone_number_id})
}

/// A customer's text message, timestamped now.
pub fn inbound_text(phone_number_id: &str, from: &str, text: &str) -> Value {
    let wamid = format!("wamid.LIVE{}", uuid::Uuid::new_v4().simple());
    envelope(
        json!({"messaging_product": "whatsapp", "metadata": metadata(phone_number_id),
            "contacts": [{"profile": {"name": "Live"}, "wa_id": from}],
            "messages": [{"from": from, "id": wamid, "timestamp": chrono::Utc::now().timestamp().to_string(),
                          "type": "text", "text": {"body": text}}]}),
    )
}

/// A status of our message `message_id` (matched by `biz_opaque_callback_data`).
pub fn status(phone_number_id: &str, to: &str, message_id: &str, status: &str) -> Value {
    let wamid = format!("wamid.LIVE{}", uuid::Uuid::new_v4().simple());
    envelope(
        json!({"messaging_product": "whatsapp", "metadata": metadata(phone_number_id),
            "statuses": [{"id": wamid, "status": status, "timestamp": chrono::Utc::now().timestamp().to_string(),
                          "recipient_id": to, "biz_opaque_callback_data": message_id}]}),
    )
}
