//! Test harness: a fresh database, a private JetStream stream, a private Redis bucket
//! channel and an in-process platform-sim on port 0, per test; with [`Harness::with_senders`],
//! several numbers (a senders file, and the same numbers served by the sim).
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_dispatcher::DispatcherConfig;
use warden_service::Dependencies;
use warden_settings::{Senders, Settings, StoreKeys};
use warden_store::testing::TestDatabase;
use warden_stream::{DeliveryJob, DeliveryStream};

pub struct TestSim {
    pub url: String,
    pub state: Arc<warden_sim::Sim>,
    pub handle: actix_web::dev::ServerHandle,
}

/// platform-sim for the account `platform` names, or for the numbers of the `SIM_SENDERS`
/// file `senders`.
pub async fn start_sim(platform: &warden_settings::Platform, senders: Option<PathBuf>) -> TestSim {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = warden_sim::SimConfig {
        http_host: "127.0.0.1".into(),
        http_port: 0,
        webhook_url: None,
        access_token: platform.access_token.clone(),
        phone_number_id: platform.phone_number_id.clone(),
        waba_id: platform.account_id.clone(),
        workers: 2,
        senders,
        ..warden_sim::SimConfig::default()
    };
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let running = warden_sim::start(config, listener).expect("sim starts");
    let sim = TestSim {
        url: running.base_url(),
        state: running.state(),
        handle: running.handle(),
    };
    tokio::spawn(running.wait());
    sim
}

impl TestSim {
    /// Arm a fault: the next `times` sends to `recipient` fail with `code`.
    pub fn fault(&self, recipient: &str, code: i64, http_status: u16, times: u64) {
        self.state
            .set_fault(recipient.to_owned(), code, http_status, times, None);
    }

    pub fn stats(&self) -> warden_sim::state::Stats {
        self.state.stats()
    }

    /// How many times the sim accepted this message (by biz_opaque_callback_data).
    pub fn count(&self, id: Uuid) -> u64 {
        self.stats()
            .by_message
            .get(&id.to_string())
            .map(|m| m.count)
            .unwrap_or(0)
    }
}

/// One number of a [`Harness::with_senders`] deployment: in the senders file and served by
/// the sim with the same token.
#[derive(Clone, Debug)]
pub struct TestSender {
    pub id: &'static str,
    pub phone_number_id: &'static str,
    pub waba_id: &'static str,
    pub portfolio_id: &'static str,
    pub token: &'static str,
    /// `mps` in the senders file.
    pub mps: Option<u32>,
    pub default: bool,
    /// `marketing_messages: true` (and this `marketing_product_policy`) in the senders
    /// file: its MARKETING templates go through the Marketing Messages API.
    pub marketing_messages: Option<&'static str>,
}

impl TestSender {
    /// `a1` (default), `a2` of business A and `b1` of business B, as in
    /// examples/senders.yaml, each with a token of its own.
    pub fn three() -> [TestSender; 3] {
        let sender = |id, n, waba, portfolio, token, default| TestSender {
            id,
            phone_number_id: n,
            waba_id: waba,
            portfolio_id: portfolio,
            token,
            mps: None,
            default,
            marketing_messages: None,
        };
        [
            sender(
                "a1",
                "104000000000001",
                "204000000000001",
                "304000000000001",
                "token-of-a1",
                true,
            ),
            sender(
                "a2",
                "104000000000002",
                "204000000000001",
                "304000000000001",
                "token-of-a2",
                false,
            ),
            sender(
                "b1",
                "104000000000003",
                "204000000000002",
                "304000000000002",
                "token-of-b1",
                false,
            ),
        ]
    }

    fn token_env(&self) -> String {
        format!("SENDER_{}_TOKEN", self.id.to_uppercase())
    }

    fn secret_env(&self) -> String {
        format!("SENDER_{}_APP_SECRET", self.id.to_uppercase())
    }

    fn secret(&self) -> String {
        format!("secret-of-{}", self.waba_id)
    }
}

/// The senders file of `senders` and the variables it names.
fn senders_file(senders: &[TestSender]) -> Senders {
    let mut yaml = String::from("version: 1\nsenders:\n");
    let mut env = HashMap::new();
    for s in senders {
        yaml.push_str(&format!(
            "  - id: {}\n    phone_number_id: \"{}\"\n    waba_id: \"{}\"\n    portfolio_id: \"{}\"\n    access_token_env: {}\n    app_secret_env: {}\n",
            s.id, s.phone_number_id, s.waba_id, s.portfolio_id, s.token_env(), s.secret_env()
        ));
        if let Some(mps) = s.mps {
            yaml.push_str(&format!("    mps: {mps}\n"));
        }
        if s.default {
            yaml.push_str("    default: true\n");
        }
        if let Some(policy) = s.marketing_messages {
            yaml.push_str(&format!(
                "    marketing_messages: true\n    marketing_product_policy: {policy}\n"
            ));
        }
        env.insert(s.token_env(), s.token.to_owned());
        env.insert(s.secret_env(), s.secret());
    }
    Senders::from_yaml(&yaml, &|name: &str| env.get(name).cloned())
        .unwrap_or_else(|problems| panic!("senders file: {problems:?}\n{yaml}"))
}

/// The `SIM_SENDERS` JSON of `senders`.
fn sim_senders_json(senders: &[TestSender]) -> Value {
    Value::Array(
        senders
            .iter()
            .enumerate()
            .map(|(i, s)| {
                json!({
                    "phone_number_id": s.phone_number_id,
                    "display_phone_number": format!("1555010000{i}"),
                    "waba_id": s.waba_id,
                    "portfolio_id": s.portfolio_id,
                    "access_token": s.token,
                    "app_secret": s.secret(),
                })
            })
            .collect(),
    )
}

pub struct Harness {
    /// Held so the database lives as long as the harness (dropping it drops the database).
    _db: TestDatabase,
    pub settings: Arc<Settings>,
    pub deps: Dependencies,
    pub stream: DeliveryStream,
    pub sim: TestSim,
    /// The bucket's (and pair slots') private channel.
    pub bucket_channel: String,
    /// A private directory of files the test wrote (the `SIM_SENDERS` file), removed at
    /// cleanup.
    files: Option<PathBuf>,
}

pub fn unique_phone() -> String {
    // 62 + 11 digits: a valid Indonesian-looking number, unique enough per test.
    let n: u64 = rand::random::<u64>() % 100_000_000_000;
    format!("62{n:011}")
}

impl Harness {
    pub async fn new(mps: u32) -> Self {
        Self::with_redis(mps, true).await
    }

    /// `redis: false` points the bucket at a closed port (Redis down).
    pub async fn with_redis(mps: u32, redis: bool) -> Self {
        Self::build(mps, redis, &[]).await
    }

    /// Several numbers: a senders file of `senders` (RATE_LIMIT_MPS `mps` for those
    /// without their own), and the sim serving each of them with its own token.
    pub async fn with_senders(mps: u32, senders: &[TestSender]) -> Self {
        Self::build(mps, true, senders).await
    }

    async fn build(mps: u32, redis: bool, senders: &[TestSender]) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let db = TestDatabase::create();
        let mut settings = db.settings.clone();
        let files = (!senders.is_empty()).then(|| {
            let dir =
                std::env::temp_dir().join(format!("warden-senders-{}", Uuid::new_v4().simple()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            let path = dir.join("sim-senders.json");
            std::fs::write(&path, sim_senders_json(senders).to_string()).expect("SIM_SENDERS file");
            settings.senders_file = Some(senders_file(senders));
            dir
        });
        // The sim serves the account the settings name, or the senders' numbers.
        let sim = start_sim(
            &settings.platform,
            files.as_ref().map(|d| d.join("sim-senders.json")),
        )
        .await;
        settings.delivery_stream = format!("T_{}", Uuid::new_v4().simple()).to_uppercase();
        settings.platform.api_url = sim.url.clone();
        settings.rate_limit_mps = mps;
        if !redis {
            settings.redis.addr = "127.0.0.1:1".into();
        }
        let settings = Arc::new(settings);
        let pg = warden_store::connect(&settings.database, 24, Duration::from_secs(10))
            .await
            .expect("postgres");
        warden_store::prepare(&settings.database, vec![])
            .await
            .expect("migrations and seeds");
        let redis_pool = if redis {
            Some(
                warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(5))
                    .await
                    .expect("redis"),
            )
        } else {
            Some(warden_ratelimit::lazy_pool(&settings.redis.url()).unwrap())
        };
        let stream = DeliveryStream::connect(&settings).await.expect("nats");
        let deps = Dependencies {
            settings: Arc::clone(&settings),
            pg,
            redis: redis_pool,
            stream: Some(stream.clone()),
            policies: Arc::new(warden_rules::policy::PolicySet::default()),
        };
        Harness {
            _db: db,
            settings,
            deps,
            stream,
            sim,
            bucket_channel: format!("t-{}", Uuid::new_v4().simple()),
            files,
        }
    }

    /// Where the rows of sender `id` are stored (its key, business and portfolio).
    pub fn keys_of(&self, id: &str) -> StoreKeys {
        let senders = self.settings.senders();
        let sender = senders.by_id(id).expect("a sender of the harness");
        senders.key_of(sender)
    }

    /// A queued text from the sender stored as `keys` (its row in `message_senders`
    /// unless it is the default sender), with the customer's care window open with that
    /// number.
    pub async fn insert_text_as(&self, phone: &str, keys: &StoreKeys) -> Uuid {
        self.insert_customer(phone).await;
        self.sql(&format!(
            "INSERT INTO conversations (customer_phone, channel, sender_id, last_inbound_at, window_expires_at)
             VALUES ('{phone}', 'whatsapp', '{}', now() - interval '1 hour', now() + interval '23 hours')
             ON CONFLICT DO NOTHING",
            keys.sender
        ))
        .await;
        let id = self
            .insert_message(
                phone,
                json!({"type": "text", "text": {"body": "hello from one of several numbers"}}),
                None,
                "queued",
            )
            .await;
        if !warden_settings::is_stored_default(&keys.sender) {
            self.sql(&format!(
                "INSERT INTO message_senders (message_id, sender_id, business) VALUES ('{id}', '{}', '{}')",
                keys.sender, keys.business
            ))
            .await;
        }
        id
    }

    /// Test-friendly knobs: quick backoff, no pair pacing, private bucket.
    pub fn config(&self) -> DispatcherConfig {
        let mut c = DispatcherConfig::defaults(&self.settings);
        c.bucket_channel = Some(self.bucket_channel.clone());
        c.dispatch.pair_interval = Duration::ZERO;
        c.dispatch.backoff_base = Duration::from_millis(200);
        c.dispatch.backoff_cap = Duration::from_secs(2);
        c.dispatch.unknown_settle = Duration::from_secs(1);
        c.dispatch.ack_wait = Duration::from_secs(5);
        c.dispatch.drain_timeout = Duration::from_secs(10);
        c
    }

    /// Start an in-process dispatcher; the returned sender stops it.
    pub async fn dispatcher(
        &self,
        config: DispatcherConfig,
    ) -> (
        warden_dispatcher::Dispatcher,
        tokio::sync::oneshot::Sender<()>,
    ) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let d = warden_dispatcher::start(self.deps.clone(), config, async move {
            let _ = rx.await;
        })
        .await
        .expect("dispatcher starts");
        (d, tx)
    }

    pub async fn sql(&self, sql: &str) {
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(sql).execute(&mut c).await.unwrap();
    }

    pub async fn insert_customer(&self, phone: &str) {
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(
            "INSERT INTO customers (phone, country) VALUES ($1, 'ID') ON CONFLICT DO NOTHING",
        )
        .bind::<Text, _>(phone)
        .execute(&mut c)
        .await
        .unwrap();
    }

    /// A queued outbound row the way warden-core writes it.
    pub async fn insert_message(
        &self,
        phone: &str,
        content: Value,
        campaign: Option<Uuid>,
        status: &str,
    ) -> Uuid {
        self.insert_customer(phone).await;
        // The dispatcher re-checks compliance right before the call: a text
        // needs an open care window and a template an APPROVED row, as accepted rows have.
        match content["type"].as_str() {
            Some("template") => {
                self.sql(&format!(
                    "INSERT INTO templates (name, locale, category, status, body_text)
                     VALUES ('{}', '{}', 'utility', 'APPROVED', 'test template')
                     ON CONFLICT DO NOTHING",
                    content["template"]["name"].as_str().unwrap_or_default(),
                    content["template"]["locale"].as_str().unwrap_or("en"),
                ))
                .await
            }
            _ => {
                self.sql(&format!(
                    "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
                     VALUES ('{phone}', 'whatsapp', now() - interval '1 hour', now() + interval '23 hours')
                     ON CONFLICT DO NOTHING"
                ))
                .await
            }
        }
        let id = Uuid::new_v4();
        let (kind, category, tname, tlocale) = match content["type"].as_str() {
            Some("template") => (
                "template",
                "utility",
                content["template"]["name"].as_str().map(str::to_owned),
                content["template"]["locale"].as_str().map(str::to_owned),
            ),
            _ => ("text", "service", None, None),
        };
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(
            "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category,
                                   status, content, template_name, template_locale, campaign_id,
                                   published_at)
             VALUES ($1, $2, 'whatsapp', 'outbound', $3, $4, $5, $6, $7, $8, $9, now())",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(phone)
        .bind::<Text, _>(kind)
        .bind::<Text, _>(category)
        .bind::<Text, _>(status)
        .bind::<diesel::sql_types::Jsonb, _>(content)
        .bind::<Nullable<Text>, _>(tname)
        .bind::<Nullable<Text>, _>(tlocale)
        .bind::<Nullable<SqlUuid>, _>(campaign)
        .execute(&mut c)
        .await
        .unwrap();
        id
    }

    pub async fn insert_text(&self, phone: &str) -> Uuid {
        self.insert_message(
            phone,
            json!({"type": "text", "text": {"body": "hello from the dispatcher test"}}),
            None,
            "queued",
        )
        .await
    }

    pub async fn insert_campaign(&self, status: &str) -> Uuid {
        let id = Uuid::new_v4();
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(
            "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name)
             VALUES ($1, 'test', 'marketing', $2, now(), 'warden_promo')",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(status)
        .execute(&mut c)
        .await
        .unwrap();
        id
    }

    /// Publish the job the way warden-core does (Nats-Msg-Id = message id) with a
    /// W3C traceparent header.
    pub async fn publish(&self, id: Uuid, phone: &str) {
        let job = DeliveryJob {
            message_id: id,
            customer_id: phone.to_owned(),
            channel: "whatsapp".into(),
            attempt: 1,
        };
        let trace = HashMap::from([(
            "traceparent".to_owned(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
        )]);
        self.stream.publish(&job, &trace).await.expect("publish");
    }

    /// Publish a copy with another Nats-Msg-Id (a redelivery the duplicate window lets in).
    pub async fn republish_raw(&self, id: Uuid) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", format!("{id}-again").as_str());
        let payload = serde_json::to_vec(&json!({"message_id": id})).unwrap();
        self.stream
            .jetstream
            .publish_with_headers(self.stream.subject("whatsapp"), headers, payload.into())
            .await
            .unwrap()
            .await
            .unwrap();
    }

    pub async fn row(&self, id: Uuid) -> MsgRow {
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(
            "SELECT status, wamid, attempt, retry_count, error_code, error_category,
                    error_can_retry, error_explanation, error_suggested_action,
                    lease_owner, sent_at
             FROM messages WHERE id = $1",
        )
        .bind::<SqlUuid, _>(id)
        .get_result::<MsgRow>(&mut c)
        .await
        .unwrap()
    }

    /// Poll until the row's status is one of `want`.
    pub async fn wait_status(&self, id: Uuid, want: &[&str], within: Duration) -> MsgRow {
        let deadline = Instant::now() + within;
        loop {
            let row = self.row(id).await;
            if want.contains(&row.status.as_str()) {
                return row;
            }
            if Instant::now() > deadline {
                panic!(
                    "message {id} still {} after {within:?} (wanted {want:?}): {row:?}",
                    row.status
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn count_where(&self, sql_condition: &str) -> i64 {
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            n: i64,
        }
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(format!(
            "SELECT count(*) AS n FROM messages WHERE {sql_condition}"
        ))
        .get_result::<N>(&mut c)
        .await
        .unwrap()
        .n
    }

    /// `n` queued text messages to distinct recipients in two statements, as warden-core
    /// writes them (customers first). Returns (id, phone) pairs.
    pub async fn insert_bulk(&self, n: usize) -> Vec<(Uuid, String)> {
        self.insert_bulk_as(n, None).await
    }

    /// [`Harness::insert_bulk`] from the sender stored as `keys` (`None`: the default).
    pub async fn insert_bulk_as(&self, n: usize, keys: Option<&StoreKeys>) -> Vec<(Uuid, String)> {
        let sender = keys.map_or(warden_settings::STORED_DEFAULT, |k| k.sender.as_str());
        #[derive(QueryableByName)]
        struct Inserted {
            #[diesel(sql_type = SqlUuid)]
            id: Uuid,
            #[diesel(sql_type = Text)]
            customer_phone: String,
        }
        let base: u64 = 10_000_000_000 + rand::random::<u64>() % 80_000_000_000;
        let mut c = self.deps.pg.get().await.unwrap();
        diesel::sql_query(format!(
            "INSERT INTO customers (phone, country)
             SELECT '62' || ({base} + i)::text, 'ID' FROM generate_series(1, {n}) i
             ON CONFLICT DO NOTHING"
        ))
        .execute(&mut c)
        .await
        .unwrap();
        // Open care windows: the dispatcher re-checks them before each text.
        diesel::sql_query(format!(
            "INSERT INTO conversations (customer_phone, channel, sender_id, last_inbound_at, window_expires_at)
             SELECT '62' || ({base} + i)::text, 'whatsapp', '{sender}', now() - interval '1 hour',
                    now() + interval '23 hours'
             FROM generate_series(1, {n}) i
             ON CONFLICT DO NOTHING"
        ))
        .execute(&mut c)
        .await
        .unwrap();
        let rows: Vec<Inserted> = diesel::sql_query(format!(
            "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category,
                                   status, content, published_at)
             SELECT gen_random_uuid(), '62' || ({base} + i)::text, 'whatsapp', 'outbound', 'text',
                    'service', 'queued',
                    jsonb_build_object('type', 'text', 'text', jsonb_build_object('body', 'message ' || i)),
                    now()
             FROM generate_series(1, {n}) i
             RETURNING id, customer_phone"
        ))
        .get_results(&mut c)
        .await
        .unwrap();
        if let Some(keys) = keys.filter(|k| !warden_settings::is_stored_default(&k.sender)) {
            let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
            diesel::sql_query(
                "INSERT INTO message_senders (message_id, sender_id, business)
                 SELECT id, $2, $3 FROM unnest($1) AS id",
            )
            .bind::<diesel::sql_types::Array<SqlUuid>, _>(ids)
            .bind::<Text, _>(&keys.sender)
            .bind::<Text, _>(&keys.business)
            .execute(&mut c)
            .await
            .unwrap();
        }
        rows.into_iter().map(|r| (r.id, r.customer_phone)).collect()
    }

    /// Publish many jobs, `concurrency` at a time.
    pub async fn publish_all(&self, jobs: &[(Uuid, String)], concurrency: usize) {
        use futures::StreamExt;
        futures::stream::iter(jobs)
            .for_each_concurrent(concurrency, |(id, phone)| self.publish(*id, phone))
            .await;
    }

    /// Messages left in the stream (work queue: acked ones are gone).
    pub async fn stream_messages(&self) -> u64 {
        let mut s = self
            .stream
            .jetstream
            .get_stream(&self.stream.stream_name)
            .await
            .unwrap();
        s.info().await.unwrap().state.messages
    }

    /// Delete the stream and the Redis keys this test made.
    pub async fn cleanup(self) {
        let _ = self
            .stream
            .jetstream
            .delete_stream(&self.stream.stream_name)
            .await;
        if let Some(pool) = &self.deps.redis
            && let Ok(Ok(mut c)) = tokio::time::timeout(Duration::from_secs(1), pool.get()).await
        {
            let pattern = format!("warden:*:{}*", self.bucket_channel);
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(&pattern)
                .query_async(&mut *c)
                .await
                .unwrap_or_default();
            if !keys.is_empty() {
                let _: Result<i64, _> = redis::cmd("DEL").arg(&keys).query_async(&mut *c).await;
            }
        }
        self.sim.handle.stop(false).await;
        if let Some(dir) = &self.files {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[derive(Debug, QueryableByName)]
pub struct MsgRow {
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub wamid: Option<String>,
    #[diesel(sql_type = Int4)]
    pub attempt: i32,
    #[diesel(sql_type = Int4)]
    pub retry_count: i32,
    #[diesel(sql_type = Nullable<Int4>)]
    pub error_code: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    pub error_category: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    pub error_can_retry: Option<bool>,
    #[diesel(sql_type = Nullable<Text>)]
    pub error_explanation: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub error_suggested_action: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub lease_owner: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub sent_at: Option<chrono::DateTime<chrono::Utc>>,
}
