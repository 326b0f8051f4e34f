//! Test harness: a fresh database per test and the real webhook server on 127.0.0.1:0.
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use diesel::sql_types::{BigInt, Text};
use diesel::{QueryableByName, sql_query};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_core::Core;
use warden_platform::signature;
use warden_rules::policy::PolicySet;
use warden_service::Dependencies;
use warden_store::testing::TestDatabase;
use warden_store::{PgConn, PgPool};
use warden_webhook::AppState;

pub use warden_test_support::platform::{
    ACCESS_TOKEN, APP_SECRET, PHONE_NUMBER_ID, VERIFY_TOKEN, WABA_ID,
};

/// One running webhook server over its own database.
pub struct Harness {
    pub url: String,
    pub pg: PgPool,
    pub core: Core,
    pub http: reqwest::Client,
    handle: ServerHandle,
    // Dropped last: the database goes away after the server.
    /// Held so the database lives as long as the harness (dropping it drops the database).
    _db: TestDatabase,
}

impl Harness {
    pub async fn start() -> Harness {
        Self::start_with(|_| {}).await
    }

    /// Like [`Harness::start`], with settings adjusted first (e.g. an unreachable Redis,
    /// for which a lazily connecting pool is still handed to the server).
    pub async fn start_with(adjust: impl FnOnce(&mut warden_settings::Settings)) -> Harness {
        Self::start_full(adjust, false).await
    }

    /// Like [`Harness::start_with`], with a private JetStream delivery stream (retries the
    /// webhook puts back in the queue are published there).
    pub async fn start_streaming(adjust: impl FnOnce(&mut warden_settings::Settings)) -> Harness {
        Self::start_full(
            |s| {
                s.delivery_stream = format!("T_{}", Uuid::new_v4().simple()).to_uppercase();
                adjust(s)
            },
            true,
        )
        .await
    }

    async fn start_full(
        adjust: impl FnOnce(&mut warden_settings::Settings),
        with_stream: bool,
    ) -> Harness {
        warden_service::install_crypto_provider();
        let db = tokio::task::spawn_blocking(TestDatabase::create)
            .await
            .unwrap();
        let mut settings = db.settings.clone();
        warden_test_support::platform::use_test_account(&mut settings);
        let default_redis = settings.redis.addr.clone();
        adjust(&mut settings);
        warden_store::prepare(&settings.database, vec![])
            .await
            .expect("migrate");
        let pg = warden_store::connect(&settings.database, 8, Duration::from_secs(5))
            .await
            .expect("pool");
        let redis = if settings.redis.addr == default_redis {
            warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(2))
                .await
                .ok()
        } else {
            // Handed over even though nothing answers there: connections are tried lazily.
            let manager = bb8_redis::RedisConnectionManager::new(settings.redis.url()).unwrap();
            Some(
                bb8::Pool::builder()
                    .connection_timeout(Duration::from_millis(500))
                    .build_unchecked(manager),
            )
        };
        let stream = if with_stream {
            Some(
                warden_stream::DeliveryStream::connect(&settings)
                    .await
                    .expect("nats"),
            )
        } else {
            None
        };
        let deps = Dependencies {
            settings: Arc::new(settings),
            pg: pg.clone(),
            redis,
            stream,
            policies: Arc::new(PolicySet::default()),
        };
        let (url, handle, core) = Self::serve(deps);
        Harness {
            url,
            pg,
            core,
            http: client(),
            handle,
            _db: db,
        }
    }

    /// Another replica over the same database (stateless servers).
    pub fn replica(&self) -> (String, ServerHandle) {
        let (url, handle, _) = Self::serve(self.core.dependencies().clone());
        (url, handle)
    }

    /// A server on dependencies given by the test (e.g. an unreachable Postgres).
    pub fn serve(deps: Dependencies) -> (String, ServerHandle, Core) {
        let core = Core::new(deps, "webhook");
        let state = AppState::new(core.clone()).expect("secret set");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = warden_webhook::server(listener, state).unwrap();
        let handle = server.handle();
        tokio::spawn(server);
        (url, handle, core)
    }

    pub async fn conn(&self) -> PgConn<'_> {
        self.pg.get().await.unwrap()
    }

    pub async fn post(&self, payload: &Value) -> reqwest::Response {
        post_signed(&self.http, &self.url, payload.to_string().as_bytes()).await
    }

    pub async fn post_bytes(&self, body: &[u8], signature: Option<&str>) -> reqwest::Response {
        post_raw(&self.http, &self.url, body, signature).await
    }

    /// POST a signed payload and insist on 200 EVENT_RECEIVED.
    pub async fn deliver(&self, payload: &Value) {
        let res = self.post(payload).await;
        let status = res.status().as_u16();
        let body = res.text().await.unwrap();
        assert_eq!(
            (status, body.as_str()),
            (200, "EVENT_RECEIVED"),
            "payload {payload}"
        );
    }

    pub async fn count(&self, sql: &str) -> i64 {
        count(&mut *self.conn().await, sql).await
    }

    /// Run a statement (test set-up).
    pub async fn exec(&self, sql: &str) {
        use diesel_async::RunQueryDsl;
        diesel::sql_query(sql)
            .execute(&mut *self.conn().await)
            .await
            .unwrap();
    }

    /// The server's `/metrics` text.
    pub async fn metrics(&self) -> String {
        self.http
            .get(format!("{}/metrics", self.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub async fn stop(&self) {
        self.handle.stop(false).await;
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

pub async fn post_signed(http: &reqwest::Client, url: &str, body: &[u8]) -> reqwest::Response {
    let sig = signature::sign(APP_SECRET.as_bytes(), body);
    post_raw(http, url, body, Some(&sig)).await
}

pub async fn post_raw(
    http: &reqwest::Client,
    url: &str,
    body: &[u8],
    signature: Option<&str>,
) -> reqwest::Response {
    let mut req = http
        .post(format!("{url}/webhook"))
        .header("content-type", "application/json")
        .body(body.to_vec());
    if let Some(sig) = signature {
        req = req.header("X-Hub-Signature-256", sig);
    }
    req.send().await.expect("request")
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// `sql` must select one bigint named `n`.
pub async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .n
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = Text)]
    v: String,
}

/// `sql` must select one row with one text column named `v` (use `::text` casts).
pub async fn text(conn: &mut AsyncPgConnection, sql: &str) -> String {
    sql_query(sql)
        .get_result::<One>(conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .v
}

/// A phone number no other test uses.
pub fn phone() -> String {
    format!("62811{:08}", rand::random::<u32>() % 100_000_000)
}

pub fn wamid() -> String {
    format!(
        "wamid.T{}",
        Uuid::new_v4().simple().to_string().to_uppercase()
    )
}

pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

// ----------------------------------------------------------------- payloads (platform shapes)

pub fn envelope(changes: Vec<Value>) -> Value {
    json!({"object": "whatsapp_business_account",
           "entry": [{"id": WABA_ID, "time": now(), "changes": changes}]})
}

pub fn metadata() -> Value {
    json!({"display_phone_number": "15550100000", "phone_number_id": PHONE_NUMBER_ID})
}

pub fn text_message(from: &str, text: &str, ts: i64, wamid: &str) -> Value {
    json!({"from": from, "id": wamid, "timestamp": ts.to_string(), "type": "text",
           "text": {"body": text}})
}

pub fn messages_change(messages: Vec<Value>) -> Value {
    let contacts: Vec<Value> = messages
        .iter()
        .map(|m| json!({"profile": {"name": "Test Customer"}, "wa_id": m["from"]}))
        .collect();
    json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata(),
                                          "contacts": contacts, "messages": messages}})
}

pub fn inbound(from: &str, text: &str, ts: i64, wamid: &str) -> Value {
    envelope(vec![messages_change(vec![text_message(
        from, text, ts, wamid,
    )])])
}

pub fn status_item(
    wamid: &str,
    status: &str,
    recipient: &str,
    callback: Option<&str>,
    errors: Option<Value>,
) -> Value {
    let mut st = json!({"id": wamid, "status": status, "timestamp": now().to_string(),
                        "recipient_id": recipient});
    if let Some(cb) = callback {
        st["biz_opaque_callback_data"] = json!(cb);
    }
    if matches!(status, "sent" | "delivered") {
        st["pricing"] = json!({"billable": true, "pricing_model": "PMP", "category": "marketing"});
    }
    if let Some(errors) = errors {
        st["errors"] = errors;
    }
    st
}

pub fn statuses_change(statuses: Vec<Value>) -> Value {
    json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": metadata(),
                                          "statuses": statuses}})
}

pub fn status(
    wamid: &str,
    status: &str,
    recipient: &str,
    callback: Option<&str>,
    errors: Option<Value>,
) -> Value {
    envelope(vec![statuses_change(vec![status_item(
        wamid, status, recipient, callback, errors,
    )])])
}

pub fn platform_error(code: i64) -> Value {
    json!([{"code": code, "title": "Error", "message": "Error",
            "error_data": {"details": format!("platform error {code}")}}])
}

pub fn template_update(name: &str, language: &str, event: &str, reason: &str) -> Value {
    envelope(vec![
        json!({"field": "message_template_status_update", "value": {
        "event": event, "message_template_id": 1_689_556_908_129_832_u64,
        "message_template_name": name, "message_template_language": language, "reason": reason}}),
    ])
}

pub fn preference(wa_id: &str, value: &str, ts: i64) -> Value {
    envelope(vec![json!({"field": "user_preferences", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"profile": {"name": "Test"}, "wa_id": wa_id}],
        "user_preferences": [{"wa_id": wa_id, "detail": "User requested", "category": "marketing_messages",
                              "value": value, "timestamp": ts}]}})])
}

pub fn quality(event: &str, limit: &str) -> Value {
    envelope(vec![
        json!({"field": "phone_number_quality_update", "value": {
        "display_phone_number": "15550100000", "event": event, "current_limit": limit}}),
    ])
}

// ----------------------------------------------------------------- rows the other processes write

/// An outbound message as the gateway + dispatcher leave it (`status`, optional wamid).
pub async fn outbound_message(
    conn: &mut AsyncPgConnection,
    phone: &str,
    status: &str,
    wamid: Option<&str>,
    campaign: Option<Uuid>,
) -> Uuid {
    let id = Uuid::now_v7();
    sql_query("INSERT INTO customers (phone) VALUES ($1) ON CONFLICT DO NOTHING")
        .bind::<Text, _>(phone)
        .execute(conn)
        .await
        .unwrap();
    sql_query(
        "INSERT INTO messages (id, customer_phone, direction, message_type, category, status, wamid, campaign_id, trace_context)
         VALUES ($1, $2, 'outbound', 'template', 'marketing', $3, $4, $5,
                 '{\"traceparent\": \"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\"}')",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .bind::<Text, _>(phone)
    .bind::<Text, _>(status)
    .bind::<diesel::sql_types::Nullable<Text>, _>(wamid)
    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Uuid>, _>(campaign)
    .execute(conn)
    .await
    .unwrap();
    id
}
