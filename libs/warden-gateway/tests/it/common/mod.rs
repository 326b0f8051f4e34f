//! Test harness: a fresh database, a JetStream stream of its own, optionally a platform-sim,
//! and the gateway served in process over `tokio::io::duplex` to an rmcp client.
pub mod stack;
pub mod webhook;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_gateway::Gateway;
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_service::Dependencies;
use warden_settings::{Settings, Tier};
use warden_store::testing::TestDatabase;
use warden_stream::DeliveryStream;

pub use warden_test_support::platform::{ACCESS_TOKEN, APP_SECRET, PHONE_NUMBER_ID, WABA_ID};
use warden_test_support::policies_path;

/// A random customer number (Indonesia, 13 digits).
pub fn phone() -> String {
    let n: u64 = rand_u64() % 1_000_000_000;
    format!("6281{n:09}")
}

fn rand_u64() -> u64 {
    let u = Uuid::new_v4();
    let b = u.as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

pub struct Opts {
    pub tier: Tier,
    pub sim: bool,
    pub nats: bool,
    /// Last word on the settings (after the sim's URL is set).
    pub adjust: fn(&mut Settings),
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            tier: Tier::Pro,
            sim: false,
            nats: true,
            adjust: |_| {},
        }
    }
}

pub struct Sim {
    pub url: String,
    pub handle: actix_web::dev::ServerHandle,
    pub http: reqwest::Client,
}

impl Sim {
    /// Decide a template on the sim (APPROVED / REJECTED with a reason).
    pub async fn decide(&self, name: &str, language: &str, status: &str, reason: &str) {
        let resp = self
            .http
            .post(format!(
                "{}/sim/templates/{name}/{language}/decision",
                self.url
            ))
            .json(&json!({"status": status, "reason": reason}))
            .send()
            .await
            .unwrap();
        assert!(
            resp.status().is_success(),
            "sim decision: {}",
            resp.status()
        );
    }

    /// Create a template directly on the sim (as if made outside Warden).
    pub async fn create_upstream(&self, name: &str, language: &str, category: &str, body: &str) {
        let resp = self
            .http
            .post(format!(
                "{}/{}/{WABA_ID}/message_templates",
                self.url,
                warden_platform::API_VERSION
            ))
            .bearer_auth(ACCESS_TOKEN)
            .json(
                &json!({"name": name, "language": language, "category": category,
                          "components": [{"type": "BODY", "text": body}]}),
            )
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "sim create: {}", resp.status());
    }
}

pub struct Harness {
    /// Held so the database lives as long as the harness (dropping it drops the database).
    _db: TestDatabase,
    pub deps: Dependencies,
    pub client: RunningService<RoleClient, ()>,
    pub sim: Option<Sim>,
    stream: Option<(String, String)>,
}

pub async fn settings_for(db: &TestDatabase, opts: &Opts) -> Settings {
    let mut settings = db.settings.clone();
    settings.tier = opts.tier;
    settings.mcp_name = "warden-gateway-test".into();
    settings.mcp_version = "9.9.9-test".into();
    settings.delivery_stream = format!("TGW_{}", Uuid::new_v4().simple()).to_uppercase();
    settings.policies_path = policies_path();
    settings.platform.api_url = "http://127.0.0.1:9".into();
    warden_test_support::platform::use_test_account(&mut settings);
    settings
}

/// Migrate and seed the test database with the test policy file.
pub async fn prepared_db() -> TestDatabase {
    let db = TestDatabase::create();
    let (_, seeds) = warden_service::policies::load(&policies_path()).expect("test policies");
    warden_store::prepare(&db.settings.database, seeds)
        .await
        .expect("migrate + seed");
    db
}

pub async fn deps_for(settings: Settings, nats: bool) -> Dependencies {
    let (policies, _) = warden_service::policies::load(&settings.policies_path).unwrap();
    let pg = warden_store::connect(&settings.database, 16, Duration::from_secs(10))
        .await
        .expect("pool");
    let redis = warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(5))
        .await
        .ok();
    let stream = if nats {
        Some(DeliveryStream::connect(&settings).await.expect("NATS"))
    } else {
        None
    };
    Dependencies {
        settings: Arc::new(settings),
        pg,
        redis,
        stream,
        policies: Arc::new(policies),
    }
}

/// Serve `gateway` in process and connect an rmcp client to it.
pub async fn connect(gateway: Gateway) -> RunningService<RoleClient, ()> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(service) = gateway.serve(server_io).await {
            let _ = service.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

impl Harness {
    pub async fn start() -> Harness {
        Self::with(Opts::default()).await
    }

    pub async fn with(opts: Opts) -> Harness {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let db = prepared_db().await;
        let mut settings = settings_for(&db, &opts).await;
        let sim = if opts.sim {
            let config = warden_sim::SimConfig {
                http_host: "127.0.0.1".into(),
                http_port: 0,
                webhook_url: None,
                access_token: ACCESS_TOKEN.into(),
                phone_number_id: PHONE_NUMBER_ID.into(),
                waba_id: WABA_ID.into(),
                approval_delay: Duration::from_secs(3600),
                workers: 1,
                ..warden_sim::SimConfig::default()
            };
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let running = warden_sim::start(config, listener).expect("sim starts");
            let url = running.base_url();
            let handle = running.handle();
            tokio::spawn(running.wait());
            settings.platform.api_url = url.clone();
            Some(Sim {
                url,
                handle,
                http: reqwest::Client::new(),
            })
        } else {
            None
        };
        (opts.adjust)(&mut settings);
        let stream = opts
            .nats
            .then(|| (settings.delivery_stream.clone(), settings.nats_url.clone()));
        let deps = deps_for(settings, opts.nats).await;
        let gateway = Gateway::new(deps.clone()).expect("gateway");
        let client = connect(gateway).await;
        Harness {
            _db: db,
            deps,
            client,
            sim,
            stream,
        }
    }

    pub fn sim(&self) -> &Sim {
        self.sim.as_ref().expect("harness started with a sim")
    }

    pub async fn tools(&self) -> Vec<Tool> {
        self.client.list_all_tools().await.expect("tools/list")
    }

    pub async fn raw(&self, name: &str, args: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_string())
            .with_arguments(args.as_object().cloned().expect("arguments object"));
        self.client.call_tool(params).await.expect("tools/call")
    }

    /// (is_error, structuredContent), checking the envelope invariants on the way.
    pub async fn call(&self, name: &str, args: Value) -> (bool, Value) {
        let res = self.raw(name, args).await;
        check_envelope(name, &res);
        (
            res.is_error == Some(true),
            res.structured_content.clone().unwrap(),
        )
    }

    pub async fn ok(&self, name: &str, args: Value) -> Value {
        let (is_error, v) = self.call(name, args.clone()).await;
        assert!(!is_error, "{name}({args}) failed: {v}");
        v
    }

    /// Expect an error with `code`; returns the error object.
    pub async fn err(&self, code: &str, name: &str, args: Value) -> Value {
        let (is_error, v) = self.call(name, args.clone()).await;
        assert!(is_error, "{name}({args}) succeeded, expected {code}: {v}");
        assert_eq!(v["error"]["code"], code, "{name}({args}): {v}");
        v["error"].clone()
    }

    pub async fn conn(&self) -> warden_store::PgConn<'_> {
        self.deps.pg.get().await.unwrap()
    }

    /// An inbound customer message at `at` (opens the care window).
    pub async fn inbound(
        &self,
        phone: &str,
        at: DateTime<Utc>,
    ) -> warden_store::models::Conversation {
        let p = canonicalize(phone).unwrap();
        let mut c = self.conn().await;
        warden_core::customers::ensure(&mut c, &p).await.unwrap();
        let conv =
            warden_core::conversations::record_inbound(&mut c, &p, "whatsapp", "default", at)
                .await
                .unwrap();
        drop(c);
        // Keep the cache in step (the webhook does the same after its commit).
        let core = warden_core::Core::new(self.deps.clone(), "test");
        core.windows()
            .forget(p.digits(), "whatsapp", "default")
            .await;
        core.refresh_window_cache(&conv).await;
        conv
    }

    pub async fn opt_out(&self, phone: &str, all: bool) {
        let p = canonicalize(phone).unwrap();
        let mut c = self.conn().await;
        warden_core::customers::apply_opt_change(
            &mut c,
            "default",
            &p,
            warden_rules::keywords::OptChange::Stop,
            if all {
                warden_core::customers::OptScope::All
            } else {
                warden_core::customers::OptScope::Marketing
            },
            "test",
            "test",
            Utc::now(),
        )
        .await
        .unwrap();
    }

    pub async fn tag(&self, phone: &str, tags: &[&str]) {
        use warden_store::schema::customers;
        let p = canonicalize(phone).unwrap();
        let mut c = self.conn().await;
        warden_core::customers::ensure(&mut c, &p).await.unwrap();
        let tags: Vec<String> = tags.iter().map(|t| t.to_string()).collect();
        diesel::update(customers::table.find(p.digits()))
            .set(customers::tags.eq(tags))
            .execute(&mut c)
            .await
            .unwrap();
    }

    pub async fn insert_template(
        &self,
        name: &str,
        locale: &str,
        category: &str,
        status: &str,
        body: &str,
    ) {
        use warden_store::schema::templates;
        let mut c = self.conn().await;
        diesel::insert_into(templates::table)
            .values((
                templates::name.eq(name),
                templates::locale.eq(locale),
                templates::category.eq(category),
                templates::status.eq(status),
                templates::body_text.eq(body),
            ))
            .execute(&mut c)
            .await
            .unwrap();
    }

    /// Move a message to failed with a platform error code (as the dispatcher would).
    pub async fn fail(&self, message_id: &str, code: i32) {
        let id = Uuid::parse_str(message_id).unwrap();
        let mut c = self.conn().await;
        let e = warden_core::delivery::knowledge::explain(&mut c, code)
            .await
            .unwrap();
        let info = warden_core::delivery::knowledge::ErrorInfo::from(&e);
        assert!(
            warden_core::delivery::outcomes::apply_status(
                &mut c,
                id,
                "failed",
                Utc::now(),
                None,
                Some(&info)
            )
            .await
            .unwrap()
        );
    }

    pub async fn message(&self, message_id: &str) -> warden_store::models::Message {
        use warden_store::schema::messages;
        let mut c = self.conn().await;
        messages::table
            .find(Uuid::parse_str(message_id).unwrap())
            .select(warden_store::models::Message::as_select())
            .first(&mut c)
            .await
            .unwrap()
    }

    /// The message once its published mark is written (it follows the send's answer).
    pub async fn published(&self, message_id: &str) -> warden_store::models::Message {
        warden_test_support::wait::until_some(
            std::time::Duration::from_secs(10),
            "the published mark",
            || async {
                let row = self.message(message_id).await;
                row.published_at.is_some().then_some(row)
            },
        )
        .await
    }

    pub async fn count(&self, sql: &str) -> i64 {
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut c = self.conn().await;
        diesel::sql_query(sql)
            .get_result::<N>(&mut c)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .n
    }

    pub async fn audits(&self, action: &str) -> i64 {
        self.count(&format!(
            "SELECT count(*) AS n FROM audit_logs WHERE action = '{action}'"
        ))
        .await
    }

    /// Messages in this test's stream.
    pub async fn stream_messages(&self) -> u64 {
        let stream = self.deps.stream.as_ref().expect("NATS");
        let mut s = stream
            .jetstream
            .get_stream(&stream.stream_name)
            .await
            .unwrap();
        s.info().await.unwrap().state.messages
    }

    pub fn phone_number(&self, raw: &str) -> PhoneNumber {
        canonicalize(raw).unwrap()
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(sim) = &self.sim {
            let handle = sim.handle.clone();
            drop(handle.stop(false));
        }
        if let Some((name, url)) = self.stream.take() {
            // Delete the test's stream on a runtime of its own (Drop cannot await).
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    if let Ok(client) = async_nats::connect(&url).await {
                        let js = async_nats::jetstream::new(client);
                        let _ = js.delete_stream(&name).await;
                    }
                });
            })
            .join();
        }
    }
}

/// The tools' envelope (docs/tools.md): structuredContent present, the same JSON as the one text block;
/// on error `{"error": {code, message, suggested_action}}` with non-empty strings.
pub fn check_envelope(name: &str, res: &CallToolResult) {
    let sc = res
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("{name}: no structuredContent: {res:?}"));
    assert!(sc.is_object(), "{name}: structuredContent not an object");
    let texts: Vec<&str> = res
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    assert_eq!(texts.len(), 1, "{name}: expected one text block: {res:?}");
    let parsed: Value = serde_json::from_str(texts[0]).unwrap();
    assert_eq!(&parsed, sc, "{name}: text differs from structuredContent");
    if res.is_error == Some(true) {
        let e = &sc["error"];
        for k in ["code", "message", "suggested_action"] {
            assert!(
                e[k].as_str().is_some_and(|s| !s.is_empty()),
                "{name}: error.{k} missing: {sc}"
            );
        }
    }
}
