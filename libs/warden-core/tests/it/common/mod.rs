//! The crate's one test harness: a [`TestCore`] on a fresh database (migrated and seeded,
//! dropped with it), with Redis, a delivery stream of its own, several senders, a clock the
//! test sets and a policy set when the test asks for them ([`Builder`]). What a test seeds
//! beyond that (templates, customers) stays in its own module.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel_async::RunQueryDsl;
use warden_core::{Core, Dependencies};
use warden_rules::policy::PolicySet;
use warden_settings::Senders;
use warden_store::testing::TestDatabase;

/// A core on a database of its own. Dropping it deletes its stream (if it has one) and
/// then its database.
pub struct TestCore {
    pub core: Core,
    /// Set by [`TestCore::set_clock`]; `None` reads the wall clock. Only consulted when the
    /// builder asked for a clock ([`Builder::settable_clock`], [`Builder::clock_at`]).
    clock: Arc<Mutex<Option<DateTime<Utc>>>>,
    stream_name: Option<String>,
    /// Held so the database lives as long as the core (dropping it drops the database).
    _db: TestDatabase,
}

/// Where the core's delivery stream comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    /// No stream: accepted messages stay queued for the relay.
    None,
    /// NATS must be up (the test fails naming the set-up step otherwise).
    Required,
    /// A stream when NATS answers, none otherwise.
    IfUp,
}

/// How a [`TestCore`] is made. The defaults are the smallest core: no Redis, no stream, no
/// policies, the default sender, the wall clock, acting as `test`.
pub struct Builder {
    pool_size: u32,
    policies: PolicySet,
    redis: Option<Option<String>>,
    stream: Stream,
    senders: Option<Senders>,
    clock: Option<Option<DateTime<Utc>>>,
    actor: &'static str,
}

impl TestCore {
    pub fn builder() -> Builder {
        Builder {
            pool_size: 12,
            policies: PolicySet::default(),
            redis: None,
            stream: Stream::None,
            senders: None,
            clock: None,
            actor: "test",
        }
    }

    pub fn pg(&self) -> &warden_store::PgPool {
        self.core.pg()
    }

    /// The time the core reads from now on (a builder with a clock only).
    pub fn set_clock(&self, at: DateTime<Utc>) {
        *self.clock.lock().unwrap() = Some(at);
    }

    /// Run one SQL statement (test seeding), panicking with it on error.
    pub async fn sql(&self, statement: &str) {
        let mut conn = self.core.pg().get().await.unwrap();
        diesel::sql_query(statement)
            .execute(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

impl Drop for TestCore {
    fn drop(&mut self) {
        // Streams are per test and NATS keeps them; the database goes with `_db`.
        if let (Some(name), Some(stream)) = (self.stream_name.clone(), self.core.stream().cloned())
        {
            let _ = futures::executor::block_on(async move {
                tokio::time::timeout(
                    Duration::from_secs(2),
                    stream.jetstream.delete_stream(&name),
                )
                .await
            });
        }
    }
}

impl Builder {
    /// Connections in the core's pool (12 unless set).
    pub fn pool_size(mut self, size: u32) -> Self {
        self.pool_size = size;
        self
    }

    /// The tests' policy file ([`warden_test_support::POLICIES`]).
    pub fn test_policies(self) -> Self {
        self.policies_yaml(warden_test_support::POLICIES)
    }

    pub fn policies_yaml(self, yaml: &str) -> Self {
        self.policies(PolicySet::from_yaml(yaml).unwrap())
    }

    pub fn policies(mut self, policies: PolicySet) -> Self {
        self.policies = policies;
        self
    }

    /// Redis at the settings' address, when it answers (the core falls back to Postgres).
    pub fn redis(mut self) -> Self {
        self.redis = Some(None);
        self
    }

    /// Redis at `addr` (a private one a test may stop).
    pub fn redis_at(mut self, addr: &str) -> Self {
        self.redis = Some(Some(addr.to_string()));
        self
    }

    /// A delivery stream of the core's own; NATS must be up.
    pub fn stream(mut self) -> Self {
        self.stream = Stream::Required;
        self
    }

    /// A delivery stream of the core's own when NATS answers, none otherwise.
    pub fn stream_if_up(mut self) -> Self {
        self.stream = Stream::IfUp;
        self
    }

    /// The senders file (several numbers and businesses).
    pub fn senders(mut self, senders: Senders) -> Self {
        self.senders = Some(senders);
        self
    }

    /// A clock the test moves with [`TestCore::set_clock`] (the wall clock until then).
    pub fn settable_clock(mut self) -> Self {
        self.clock = Some(None);
        self
    }

    /// A clock that reads `at` (until [`TestCore::set_clock`]).
    pub fn clock_at(mut self, at: DateTime<Utc>) -> Self {
        self.clock = Some(Some(at));
        self
    }

    pub fn actor(mut self, actor: &'static str) -> Self {
        self.actor = actor;
        self
    }

    pub async fn build(self) -> TestCore {
        warden_telemetry::install_crypto_provider();
        let db = TestDatabase::create();
        let mut settings = db.settings.clone();
        // A stream name per test, so tests never read each other's messages.
        let stream_name = format!("T_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
        settings.delivery_stream = stream_name.clone();
        if let Some(Some(addr)) = &self.redis {
            settings.redis.addr = addr.clone();
        }
        if let Some(senders) = self.senders {
            settings.senders_file = Some(senders);
        }
        let pg = warden_test_support::migrated_pool(&db, self.pool_size).await;
        let redis = match self.redis {
            Some(_) => {
                warden_core::deps::connect_redis(&settings.redis, Duration::from_millis(100))
                    .await
                    .ok()
            }
            None => None,
        };
        let stream = match self.stream {
            Stream::None => None,
            Stream::Required => Some(
                warden_stream::DeliveryStream::connect(&settings)
                    .await
                    .expect("NATS with JetStream (scripts/services.sh starts it)"),
            ),
            Stream::IfUp => warden_stream::DeliveryStream::connect(&settings).await.ok(),
        };
        let deps = Dependencies {
            settings: Arc::new(settings),
            pg,
            redis,
            stream,
            policies: Arc::new(self.policies),
        };
        let clock: Arc<Mutex<Option<DateTime<Utc>>>> = Arc::new(Mutex::new(self.clock.flatten()));
        let mut core = Core::new(deps, self.actor);
        if self.clock.is_some() {
            let read = Arc::clone(&clock);
            core = core.with_clock(Arc::new(move || {
                read.lock().unwrap().unwrap_or_else(Utc::now)
            }));
        }
        TestCore {
            stream_name: core.stream().is_some().then_some(stream_name),
            core,
            clock,
            _db: db,
        }
    }
}
