//! The compliance core, the only writer of domain state: every outbound message — tool
//! sends, retries, scheduled messages, campaign recipients — goes through [`Core::send`]
//! (validate -> compliance -> policy -> record -> publish). The decision itself is pure
//! (`warden_rules::compliance::decide`); this crate gathers the state it needs and commits
//! the outcome atomically. One folder per domain, one module per use case:
//!
//! - [`send`]: the one send path, what a send carries ([`send::kind`]), the compliance
//!   decision's facts, holds, safety rules, the last look before the platform call
//!   ([`send::recheck`]), check_compliance, idempotency keys, agent guardrails, who sent
//!   what ([`send::attribution`]), the last refusal.
//! - [`customers`]: customers and opt-outs, identity (phone, BSUID, merge), bulk import,
//!   privacy (retention, forgetting), number changes.
//! - [`conversations`]: the care window and its cache, inbound messages (one and a webhook
//!   batch), history and inbox, the conversation list, archive, read receipts, the message
//!   view, quotes.
//! - [`templates`]: template records and statuses, the platform's changes to them, the
//!   filtered list.
//! - [`campaigns`]: campaign state and control, creation, the fan-out.
//! - [`scheduling`]: scheduled messages (recorded, coming due), the scheduler's gauges.
//! - [`delivery`]: a message's delivery life (claim, record, sweep, unknown outcomes),
//!   the outbox, status webhooks and outcomes, platform errors, the error knowledge base,
//!   reconcile, retries, a message's delivery status.
//! - [`platform_events`]: what each of the platform's webhook events does, one module per
//!   family (inbound messages, statuses, templates, account and quality, opt-outs, shared
//!   numbers), applied in the webhook's transaction; each event applied once.
//! - [`flows`]: the tokens of flow messages sent, customers' flow submissions, and
//!   get_flow_responses.
//! - [`account`]: the business account's limits and costs: portfolio messaging limit,
//!   throughput, per-message pricing, the rate card.
//! - [`calls`]: a customer's permission to be called, and the guards on asking for it.
//! - [`agents`]: remote agents, their keys, scopes and guardrail settings.
//! - [`reach`]: what a caller limited to some senders may reach (one check for every
//!   resource read by id).
//! - [`operators`]: the console's operators, their sessions and the login throttle.
//! - [`reports`]: read models of the operator console (overview, search, audit, outcomes).
//! - Plumbing: [`deps`] (the connected dependencies), [`policy_file`], [`sql`] (prepared
//!   hot-path statements), `db` (transaction glue).

pub mod account;
pub mod agents;
pub mod calls;
pub mod campaigns;
pub mod conversations;
pub mod customers;
mod db;
pub mod delivery;
pub mod deps;
pub mod flows;
pub mod operators;
pub mod platform_events;
pub mod policy_file;
pub mod reach;
pub mod reports;
pub mod scheduling;
pub mod send;
pub mod senders;
pub mod sql;
pub mod templates;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use warden_rules::policy::PolicySet;
use warden_settings::Settings;
use warden_store::tx::TxError;
use warden_store::{DbError, PgPool};
use warden_stream::DeliveryStream;

pub use conversations::{ConversationView, WindowCache};
pub use deps::{Dependencies, RedisPool};
pub use reach::Reach;
pub use send::error::SendError;
pub use send::kind::{ContentError, SendKind, TemplateSend};
pub use send::recheck::Recheck;
pub use send::{Accepted, RefusalMode, SendRequest};
pub use warden_stream::HintKind;

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    InvalidArgument(String),
    /// The change collides with an existing row (a unique key); nothing was written.
    #[error("{0}")]
    Conflict(String),
    /// A database conflict persisted after the store's retries; nothing was written.
    #[error("{message}")]
    Busy {
        message: String,
        retry_after_secs: u64,
    },
    #[error("{0}")]
    Unavailable(String),
}

impl From<DbError> for CoreError {
    fn from(err: DbError) -> Self {
        match err {
            DbError::Conflict { .. } => CoreError::Conflict(err.to_string()),
            DbError::Busy {
                retry_after_secs, ..
            } => CoreError::Busy {
                message: err.to_string(),
                retry_after_secs,
            },
            DbError::NotFound => CoreError::NotFound(err.to_string()),
            DbError::Unavailable(_) | DbError::Rejected(_) => {
                CoreError::Unavailable(err.to_string())
            }
        }
    }
}

impl<E: Into<CoreError>> From<TxError<E>> for CoreError {
    fn from(err: TxError<E>) -> Self {
        match err {
            TxError::App(e) => e.into(),
            TxError::Db(e) => e.into(),
        }
    }
}

impl From<std::convert::Infallible> for CoreError {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<diesel::result::Error> for CoreError {
    fn from(err: diesel::result::Error) -> Self {
        DbError::from(err).into()
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for CoreError {
    fn from(err: bb8::RunError<E>) -> Self {
        DbError::from(err).into()
    }
}

struct Inner {
    deps: Dependencies,
    senders: warden_settings::Senders,
    windows: WindowCache,
    clock: Clock,
    /// Published marks written behind the sends' answers.
    marks: delivery::outbox::Marks,
}

/// Where the send path reads the time (tests move it; see [`Core::with_clock`]).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The app state every process shares (cheap to clone).
#[derive(Clone)]
pub struct Core {
    inner: Arc<Inner>,
    /// Who this view's writes are attributed to.
    actor: &'static str,
    /// What this view's reads by id may reach ([`reach`]).
    reach: reach::Reach,
}

impl Core {
    pub fn new(deps: Dependencies, actor: &'static str) -> Core {
        let windows = WindowCache::new(deps.redis.clone());
        let senders = deps.settings.senders().into_owned();
        Core {
            inner: Arc::new(Inner {
                deps,
                senders,
                windows,
                clock: Arc::new(Utc::now),
                marks: Default::default(),
            }),
            actor,
            reach: reach::Reach::all(),
        }
    }
    /// The same core acting as `actor` (an agent): a cheap view sharing every connection.
    pub fn as_actor(&self, actor: &'static str) -> Core {
        Core {
            inner: Arc::clone(&self.inner),
            actor,
            reach: self.reach.clone(),
        }
    }

    /// This core with another clock for the send path's decisions (tests of windows such
    /// as `duplicate_guard`'s). Call before the core is cloned.
    pub fn with_clock(mut self, clock: Clock) -> Core {
        Arc::get_mut(&mut self.inner)
            .expect("set the clock before the core is shared")
            .clock = clock;
        self
    }

    /// The send path's now.
    pub fn now(&self) -> DateTime<Utc> {
        (self.inner.clock)()
    }
    pub fn pg(&self) -> &PgPool {
        &self.inner.deps.pg
    }
    pub(crate) fn marks(&self) -> &delivery::outbox::Marks {
        &self.inner.marks
    }
    /// Wait until every message this core handed to the stream without waiting (sends,
    /// campaign chunks) is acknowledged and marked published, or known not to be (then the
    /// relay publishes it). A process about to exit calls it so its marks are not left to
    /// the relay; tests call it before they look at the stream.
    pub async fn flush_publishes(&self) {
        self.inner.marks.flushed().await;
    }
    pub fn settings(&self) -> &Settings {
        &self.inner.deps.settings
    }
    pub fn policies(&self) -> &PolicySet {
        &self.inner.deps.policies
    }
    pub fn stream(&self) -> Option<&DeliveryStream> {
        self.inner.deps.stream.as_ref()
    }
    pub fn redis(&self) -> Option<&RedisPool> {
        self.inner.deps.redis.as_ref()
    }
    pub fn windows(&self) -> &WindowCache {
        &self.inner.windows
    }
    pub fn actor(&self) -> &'static str {
        self.actor
    }
    pub fn dependencies(&self) -> &Dependencies {
        &self.inner.deps
    }

    /// Tell gateways that these (customer, number's stored key) conversations changed (a
    /// wake-up on NATS core, no content; see `warden_stream::hints`); a `None` number is
    /// every number's. Call after the change committed. Without NATS nobody is told.
    pub async fn hint<'a>(
        &self,
        changed: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
        kind: warden_stream::HintKind,
    ) {
        if let Some(stream) = self.stream() {
            stream.hints.publish_all(changed, kind).await;
        }
    }
}
