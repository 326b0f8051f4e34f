//! Test harness: a fresh database, a private JetStream stream, a private Redis bucket
//! channel and an in-process platform-sim on port 0, per test.
use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{Bool, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_dispatcher::DispatcherConfig;
use warden_service::Dependencies;
use warden_settings::Settings;
use warden_store::testing::TestDatabase;
use warden_stream::{DeliveryJob, DeliveryStream};

pub struct TestSim {
    pub url: String,
    pub state: Arc<warden_sim::Sim>,
    pub handle: actix_web::dev::ServerHandle,
}

/// platform-sim for the account `platform` names (token, number, WABA).
pub async fn start_sim(platform: &warden_settings::Platform) -> TestSim {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = warden_sim::SimConfig {
        http_host: "127.0.0.1".into(),
        http_port: 0,
        webhook_url: None,
        access_token: platform.access_token.clone(),
        phone_number_id: platform.phone_number_id.clone(),
        waba_id: platform.account_id.clone(),
        workers: 2,
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

pub struct Harness {
    /// Held so the database lives as long as the harness (dropping it drops the database).
    _db: TestDatabase,
    pub settings: Arc<Settings>,
    pub deps: Dependencies,
    pub stream: DeliveryStream,
    pub sim: TestSim,
    /// The bucket's (and pair slots') private channel.
    pub bucket_channel: String,
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
        let _ = rustls::crypto::ring::default_provider().install_default();
        let db = TestDatabase::create();
        let mut settings = db.settings.clone();
        // The sim serves the account the settings name.
        let sim = start_sim(&settings.platform).await;
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
        }
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
            "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
             SELECT '62' || ({base} + i)::text, 'whatsapp', now() - interval '1 hour',
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
