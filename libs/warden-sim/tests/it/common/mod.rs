//! Test harness: a sim on port 0 and a webhook receiver on port 0, per test.

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use bytes::Bytes;
use serde_json::Value;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use warden_platform::signature;
use warden_platform::webhook::{Change, Status, WebhookEnvelope};
use warden_sim::SimConfig;

pub use warden_test_support::free_port;
pub use warden_test_support::platform::{ACCESS_TOKEN, APP_SECRET, PHONE_NUMBER_ID, WABA_ID};
/// The version prefix Warden calls by default.
pub const API: &str = warden_platform::API_VERSION;

pub fn init() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

pub fn config(webhook_url: Option<String>) -> SimConfig {
    SimConfig {
        http_host: "127.0.0.1".into(),
        http_port: 0,
        webhook_url,
        access_token: ACCESS_TOKEN.into(),
        app_secret: APP_SECRET.into(),
        phone_number_id: PHONE_NUMBER_ID.into(),
        waba_id: WABA_ID.into(),
        approval_delay: Duration::from_millis(200),
        workers: 1,
        ..SimConfig::default()
    }
}

pub struct TestSim {
    pub url: String,
    pub http: reqwest::Client,
}

pub async fn start_sim(config: SimConfig) -> TestSim {
    init();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let running = warden_sim::start(config, listener).expect("sim starts");
    let url = running.base_url();
    tokio::spawn(running.wait());
    TestSim {
        url,
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
    }
}

impl TestSim {
    pub fn messages_url(&self) -> String {
        format!("{}/{API}/{PHONE_NUMBER_ID}/messages", self.url)
    }

    /// POST a send with the right token; (HTTP status, JSON body).
    pub async fn send(&self, body: &Value) -> (u16, Value) {
        let r = self
            .http
            .post(self.messages_url())
            .bearer_auth(ACCESS_TOKEN)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }

    pub async fn get_api(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}/{API}/{path}", self.url))
            .bearer_auth(ACCESS_TOKEN)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }

    pub async fn post_api(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}/{API}/{path}", self.url))
            .bearer_auth(ACCESS_TOKEN)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    }

    /// POST to a /sim control endpoint; (HTTP status, JSON body).
    pub async fn control(&self, path: &str, body: &Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}/sim/{path}", self.url))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    pub async fn stats(&self) -> Value {
        self.get("/sim/stats").await
    }
}

pub fn text(to: &str, body: &str, callback: Option<&str>) -> Value {
    let mut v = serde_json::json!({
        "messaging_product": "whatsapp", "recipient_type": "individual",
        "to": to, "type": "text", "text": {"preview_url": false, "body": body}
    });
    if let Some(cb) = callback {
        v["biz_opaque_callback_data"] = cb.into();
    }
    v
}

pub fn template(
    to: &str,
    name: &str,
    lang: &str,
    params: &[&str],
    callback: Option<&str>,
) -> Value {
    let parameters: Vec<Value> = params
        .iter()
        .map(|p| serde_json::json!({"type": "text", "text": p}))
        .collect();
    let mut v = serde_json::json!({
        "messaging_product": "whatsapp", "to": to, "type": "template",
        "template": {"name": name, "language": {"code": lang},
                     "components": [{"type": "body", "parameters": parameters}]}
    });
    if let Some(cb) = callback {
        v["biz_opaque_callback_data"] = cb.into();
    }
    v
}

#[derive(Clone, Debug)]
pub struct Received {
    pub signature: Option<String>,
    pub body: Bytes,
}

impl Received {
    pub fn envelope(&self) -> WebhookEnvelope {
        WebhookEnvelope::from_slice(&self.body).expect("webhook body parses")
    }
}

#[derive(Default)]
struct RecvState {
    hits: AtomicUsize,
    fail_first: AtomicUsize,
    got: Mutex<Vec<Received>>,
}

/// A webhook receiver that answers 503 to its first `fail_first` POSTs, then 200.
pub struct Receiver {
    pub url: String,
    state: Arc<RecvState>,
}

pub async fn receiver(fail_first: usize) -> Receiver {
    receiver_on(TcpListener::bind("127.0.0.1:0").unwrap(), fail_first)
}

pub fn receiver_on(listener: TcpListener, fail_first: usize) -> Receiver {
    let state = Arc::new(RecvState::default());
    state.fail_first.store(fail_first, Ordering::SeqCst);
    let port = listener.local_addr().unwrap().port();
    let data = web::Data::from(Arc::clone(&state));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(hook))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .unwrap()
    .run();
    tokio::spawn(server);
    Receiver {
        url: format!("http://127.0.0.1:{port}/webhook"),
        state,
    }
}

async fn hook(state: web::Data<RecvState>, req: HttpRequest, body: Bytes) -> HttpResponse {
    let n = state.hits.fetch_add(1, Ordering::SeqCst);
    if n < state.fail_first.load(Ordering::SeqCst) {
        return HttpResponse::ServiceUnavailable().body("receiver is down");
    }
    let signature = req
        .headers()
        .get(signature::HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    state.got.lock().unwrap().push(Received { signature, body });
    HttpResponse::Ok().body("EVENT_RECEIVED")
}

impl Receiver {
    pub fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.got.lock().unwrap().clone()
    }

    pub fn changes(&self) -> Vec<Change> {
        self.received()
            .iter()
            .flat_map(|r| r.envelope().changes().cloned().collect::<Vec<_>>())
            .collect()
    }

    pub fn statuses(&self) -> Vec<Status> {
        self.changes()
            .into_iter()
            .filter_map(|c| match c {
                Change::Messages(v) => Some(v.statuses),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Waits until `pred` holds over the changes received so far.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&[Change]) -> bool) -> Vec<Change> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let changes = self.changes();
            if pred(&changes) {
                return changes;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; got {changes:#?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
