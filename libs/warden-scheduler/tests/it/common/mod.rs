//! Shared test harness: a fresh database, real Redis and NATS (a stream of its own), and
//! helpers that write rows the way the gateway would.
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Jsonb, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_core::Core;
use warden_scheduler::{Config, Scheduler};
use warden_service::Dependencies;
use warden_store::testing::TestDatabase;

pub struct Harness {
    pub core: Core,
    /// Held so the database lives as long as the harness (dropping it drops the database).
    _db: TestDatabase,
    pub stream_name: String,
    pub deps: Dependencies,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(stream) = self.core.stream().cloned() {
            let name = self.stream_name.clone();
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async move {
                    let _ = tokio::time::timeout(
                        Duration::from_secs(10),
                        stream.jetstream.delete_stream(&name),
                    )
                    .await;
                });
            })
            .join();
        }
    }
}

/// A harness under the tests' policy file ([`warden_test_support::POLICIES`]).
pub async fn harness(with_nats: bool) -> Harness {
    harness_with(with_nats, warden_test_support::POLICIES).await
}

pub async fn harness_with(with_nats: bool, policies: &str) -> Harness {
    warden_service::install_crypto_provider();
    let db = TestDatabase::create();
    let mut settings = db.settings.clone();
    let stream_name = format!("T_{}", Uuid::new_v4().simple()).to_uppercase();
    settings.delivery_stream = stream_name.clone();
    let policies = warden_rules::policy::PolicySet::from_yaml(policies).expect("policies");
    warden_store::prepare(&settings.database, vec![])
        .await
        .expect("prepare");
    let pg = warden_store::connect(&settings.database, 16, Duration::from_secs(5))
        .await
        .expect("pg");
    let redis = warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(2))
        .await
        .ok();
    let stream = if with_nats {
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
        pg,
        redis,
        stream,
        policies: Arc::new(policies),
    };
    Harness {
        core: Core::new(deps.clone(), "scheduler"),
        _db: db,
        stream_name,
        deps,
    }
}

impl Harness {
    /// A second Core over the same database, with or without the stream.
    pub async fn core_with_stream(&self, with_nats: bool) -> Core {
        let mut deps = self.deps.clone();
        deps.stream = if with_nats {
            Some(
                warden_stream::DeliveryStream::connect(&self.deps.settings)
                    .await
                    .expect("nats"),
            )
        } else {
            None
        };
        Core::new(deps, "scheduler")
    }

    pub fn config(&self, owner: &str) -> Config {
        test_config(owner)
    }

    pub fn scheduler(&self, owner: &str) -> Scheduler {
        Scheduler::new(self.core.clone(), self.config(owner))
    }

    pub async fn exec(&self, sql: &str) -> usize {
        let mut conn = self.core.pg().get().await.expect("conn");
        diesel::sql_query(sql)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// Messages the campaign has written so far (any state).
    pub async fn campaign_messages(&self, id: Uuid) -> i64 {
        self.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE campaign_id = '{id}'"
        ))
        .await
    }

    pub async fn count(&self, sql: &str) -> i64 {
        #[derive(diesel::QueryableByName)]
        struct N {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let mut conn = self.core.pg().get().await.expect("conn");
        let r: N = diesel::sql_query(sql)
            .get_result(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        r.n
    }

    pub async fn text(&self, sql: &str) -> Option<String> {
        #[derive(diesel::QueryableByName)]
        struct T {
            #[diesel(sql_type = Nullable<Text>)]
            t: Option<String>,
        }
        let mut conn = self.core.pg().get().await.expect("conn");
        let r: T = diesel::sql_query(sql)
            .get_result(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        r.t
    }

    /// Messages currently held by this test's stream.
    /// The stream's message count once every publish of the test's cores is acknowledged.
    pub async fn stream_messages(&self) -> u64 {
        self.core.flush_publishes().await;
        let stream = self.core.stream().expect("stream");
        let mut s = stream
            .jetstream
            .get_stream(&self.stream_name)
            .await
            .expect("stream");
        s.info().await.expect("info").state.messages
    }

    pub async fn purge_stream(&self) {
        let stream = self.core.stream().expect("stream");
        let s = stream
            .jetstream
            .get_stream(&self.stream_name)
            .await
            .expect("stream");
        s.purge().await.expect("purge");
    }

    pub async fn add_template(&self, name: &str, category: &str, status: &str, body: &str) {
        let mut conn = self.core.pg().get().await.expect("conn");
        diesel::sql_query(
            "INSERT INTO templates (name, locale, category, status, body_text) VALUES ($1, 'en', $2, $3, $4)",
        )
        .bind::<Text, _>(name)
        .bind::<Text, _>(category)
        .bind::<Text, _>(status)
        .bind::<Text, _>(body)
        .execute(&mut conn)
        .await
        .expect("template");
    }

    /// `n` customers `62811<8 digits>` starting at `first`: every `opt_out_every`-th opted
    /// out of marketing, every `churned_every`-th tagged `churned`, every `vip_every`-th
    /// tagged `vip` (0 = none).
    pub async fn add_customers(
        &self,
        first: i64,
        n: i64,
        opt_out_every: i64,
        churned_every: i64,
        vip_every: i64,
    ) {
        let sql = format!(
            "INSERT INTO customers (phone, country, opt_in_marketing, tags, last_interaction_at)
             SELECT '62811' || lpad(i::text, 8, '0'), 'ID',
                    NOT ({oo} > 0 AND i % greatest({oo}, 1) = 0),
                    ARRAY[]::text[]
                      || CASE WHEN {ch} > 0 AND i % greatest({ch}, 1) = 0 THEN ARRAY['churned'] ELSE ARRAY[]::text[] END
                      || CASE WHEN {vip} > 0 AND i % greatest({vip}, 1) = 0 THEN ARRAY['vip'] ELSE ARRAY[]::text[] END,
                    now() - (i % 30) * interval '1 day'
             FROM generate_series({first}, {last}) AS i",
            oo = opt_out_every,
            ch = churned_every,
            vip = vip_every,
            first = first,
            last = first + n - 1,
        );
        self.exec(&sql).await;
    }

    /// A scheduled message row as schedule_message writes it.
    pub async fn schedule(
        &self,
        phone: &str,
        message_type: &str,
        content: serde_json::Value,
        deliver_at: DateTime<Utc>,
    ) -> Uuid {
        let id = Uuid::now_v7();
        let mut conn = self.core.pg().get().await.expect("conn");
        diesel::sql_query("INSERT INTO customers (phone) VALUES ($1) ON CONFLICT DO NOTHING")
            .bind::<Text, _>(phone)
            .execute(&mut conn)
            .await
            .expect("customer");
        diesel::sql_query(
            "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, content, deliver_at)
             VALUES ($1, $2, 'whatsapp', 'outbound', $3, $4, 'scheduled', $5, $6)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(phone)
        .bind::<Text, _>(message_type)
        .bind::<Text, _>(if message_type == "template" { "utility" } else { message_type })
        .bind::<Jsonb, _>(content)
        .bind::<Timestamptz, _>(deliver_at)
        .execute(&mut conn)
        .await
        .expect("scheduled message");
        id
    }

    /// A campaigns row as schedule_campaign writes it.
    pub async fn campaign(
        &self,
        template: &str,
        variables: serde_json::Value,
        filter: serde_json::Value,
        status: &str,
        deliver_at: DateTime<Utc>,
    ) -> Uuid {
        let id = Uuid::new_v4();
        let mut conn = self.core.pg().get().await.expect("conn");
        diesel::sql_query(
            "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name, locale, variables, audience_filter)
             VALUES ($1, 'test campaign', 'marketing', $2, $3, $4, 'en', $5, $6)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(status)
        .bind::<Timestamptz, _>(deliver_at)
        .bind::<Text, _>(template)
        .bind::<Jsonb, _>(variables)
        .bind::<Jsonb, _>(filter)
        .execute(&mut conn)
        .await
        .expect("campaign");
        id
    }

    pub async fn campaign_row(&self, id: Uuid) -> warden_store::models::Campaign {
        use diesel::{QueryDsl, SelectableHelper};
        use warden_store::schema::campaigns;
        let mut conn = self.core.pg().get().await.expect("conn");
        campaigns::table
            .find(id)
            .select(warden_store::models::Campaign::as_select())
            .first(&mut conn)
            .await
            .expect("campaign row")
    }

    /// The message once its published mark is written (it follows the send's answer).
    pub async fn published_row(&self, id: Uuid) -> warden_store::models::Message {
        warden_test_support::wait::until_some(
            Duration::from_secs(10),
            "the published mark",
            || async {
                let row = self.message_row(id).await;
                row.published_at.is_some().then_some(row)
            },
        )
        .await
    }

    pub async fn message_row(&self, id: Uuid) -> warden_store::models::Message {
        use diesel::{QueryDsl, SelectableHelper};
        use warden_store::schema::messages;
        let mut conn = self.core.pg().get().await.expect("conn");
        messages::table
            .find(id)
            .select(warden_store::models::Message::as_select())
            .first(&mut conn)
            .await
            .expect("message row")
    }
}

/// The body of the `spring_sale` template most campaign tests send.
pub const SALE_BODY: &str = "Hi! {{1}} off everything this week";

impl Harness {
    /// The campaign most campaign tests run: the approved marketing template `spring_sale`,
    /// customers 1..=`customers` (every `opt_out_every`-th opted out of marketing; 0 = none)
    /// and a campaign of it ("20%") to all of them, due now, in `status`.
    pub async fn spring_sale(&self, customers: i64, opt_out_every: i64, status: &str) -> Uuid {
        self.add_template("spring_sale", "marketing", "APPROVED", SALE_BODY)
            .await;
        self.add_customers(1, customers, opt_out_every, 0, 0).await;
        self.campaign(
            "spring_sale",
            serde_json::json!({"1": "20%"}),
            serde_json::json!({}),
            status,
            Utc::now(),
        )
        .await
    }

    /// A scheduler polling in the background with `config` until [`Background::stop`].
    pub fn start(&self, config: Config) -> Background {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let running = warden_scheduler::start_with(self.core.clone(), config, async move {
            let _ = rx.await;
        });
        Background { tx, running }
    }

    /// Polls `n` more times with `s`, asserting that none of them enqueued a recipient
    /// (the later event after which "nothing more was sent" can be checked).
    pub async fn ticks_enqueue_nothing(&self, s: &Scheduler, n: usize) {
        for _ in 0..n {
            let r = s.tick().await.expect("tick");
            assert_eq!(r.recipients_enqueued, 0, "{r:?}");
        }
    }

    /// Wait until no statement other than this one runs in the test's database: every
    /// write in flight has committed (or failed).
    pub async fn wait_database_quiet(&self) {
        wait_for(
            Duration::from_secs(10),
            "the writes in flight to finish",
            || async {
                self.count(
                    "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database()
                     AND state <> 'idle' AND pid <> pg_backend_pid()",
                )
                .await
                    == 0
            },
        )
        .await;
    }

    /// Wait until the database says every message of the test was published at least
    /// `age` ago (an age the relay's checks measure).
    pub async fn wait_published_older_than(&self, age: Duration) {
        let q = format!(
            "SELECT count(*) AS n FROM messages WHERE published_at IS NULL
             OR published_at > now() - interval '{} milliseconds'",
            age.as_millis()
        );
        wait_for(
            Duration::from_secs(10),
            "the published messages to be old enough",
            || async { self.count(&q).await == 0 },
        )
        .await;
    }

    /// Wait until the campaign has written at least `n` messages.
    pub async fn wait_under_way(&self, id: Uuid, n: i64, timeout: Duration) {
        wait_for(timeout, "the campaign to be under way", || async {
            self.campaign_messages(id).await >= n
        })
        .await;
    }
}

/// A scheduler started by [`Harness::start`].
pub struct Background {
    tx: tokio::sync::oneshot::Sender<()>,
    running: warden_scheduler::Running,
}

impl Background {
    /// The polling scheduler itself, so a test can drive more polls of it with `tick()`.
    pub fn scheduler(&self) -> &Scheduler {
        &self.running.scheduler
    }

    /// Signal shutdown and wait for the loop to end.
    pub async fn stop(self) {
        let _ = self.tx.send(());
        self.running.task.await.expect("scheduler task");
    }

    /// [`Background::stop`], failing the test when the loop takes longer than `limit`.
    pub async fn stop_within(self, limit: Duration) {
        let _ = self.tx.send(());
        tokio::time::timeout(limit, self.running.task)
            .await
            .expect("stops within the sends in flight")
            .expect("scheduler task");
    }
}

pub fn test_config(owner: &str) -> Config {
    Config {
        poll_interval: Duration::from_millis(50),
        owner: owner.to_string(),
        lease: Duration::from_secs(60),
        message_batch: 50,
        max_message_batches: 50,
        page_size: 250,
        concurrency: 8,
        campaign_budget: Duration::from_secs(60),
        relay_batch: 1000,
        relay_min_age: Duration::from_millis(0),
        relay_stale_after: Duration::from_secs(120),
        batch_publish: true,
        content_retention: warden_settings::DEFAULT_CONTENT_RETENTION,
        retention_every: Duration::from_secs(60),
        retention_batch: 1000,
    }
}

/// Poll a condition until it holds, failing the test after a deadline.
pub use warden_test_support::wait::until as wait_for;

pub fn template_content(name: &str, vars: &[&str]) -> serde_json::Value {
    serde_json::json!({"type": "template", "template": {"name": name, "locale": "en", "variables": vars}})
}

pub fn text_content(body: &str) -> serde_json::Value {
    serde_json::json!({"type": "text", "text": {"body": body}})
}

impl Harness {
    /// The message ids the stream holds (read without consuming), in stream order, with
    /// the Nats-Msg-Id header of each.
    pub async fn stream_contents(&self) -> Vec<(Uuid, String)> {
        let stream = self.core.stream().expect("stream");
        let mut s = stream
            .jetstream
            .get_stream(&self.stream_name)
            .await
            .expect("stream");
        let state = s.info().await.expect("info").state.clone();
        let mut out = Vec::new();
        if state.messages == 0 {
            return out;
        }
        for seq in state.first_sequence..=state.last_sequence {
            let Ok(m) = s.get_raw_message(seq).await else {
                continue;
            };
            let job: warden_stream::DeliveryJob =
                serde_json::from_slice(&m.payload).expect("job payload");
            let id = m
                .headers
                .get("Nats-Msg-Id")
                .map(|v| v.as_str().to_string())
                .unwrap_or_default();
            out.push((job.message_id, id));
        }
        out
    }

    /// Assert the stream holds exactly `expected` messages, one per message id (with a
    /// diagnosis of any duplicates).
    pub async fn assert_stream_once_each(&self, expected: u64) {
        let n = self.stream_messages().await;
        if n == expected {
            return;
        }
        let contents = self.stream_contents().await;
        let mut seen = std::collections::HashMap::<Uuid, Vec<String>>::new();
        for (id, header) in &contents {
            seen.entry(*id).or_default().push(header.clone());
        }
        let dups: Vec<_> = seen.iter().filter(|(_, v)| v.len() > 1).take(5).collect();
        panic!(
            "stream holds {n} messages, expected {expected}: {} distinct ids; duplicates (first 5): {dups:?}",
            seen.len()
        );
    }
}
