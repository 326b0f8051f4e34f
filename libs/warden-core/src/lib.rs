//! The compliance core: every outbound message — tool sends, retries, scheduled messages,
//! campaign recipients — goes through [`Core::send`] (compliance -> policy -> record ->
//! publish). The decision itself is pure (`warden_rules::compliance::decide`); this crate
//! gathers the state it needs (customer, care window, frequency count) and commits the
//! outcome atomically.

pub mod agents;
pub mod attribution;
pub mod campaign_create;
pub mod campaigns;
mod compliance_check;
pub mod conversation_archive;
pub mod conversation_view;
pub mod conversations;
pub mod customer_identity;
pub mod customer_import;
pub mod customers;
mod db;
pub mod delivery;
pub mod deps;
pub mod fanout;
pub mod gauges;
pub mod guardrails;
pub mod idempotency;
pub mod inbound;
pub mod inbound_batch;
pub mod knowledge;
pub mod message_pricing;
pub mod message_schedule;
pub mod message_view;
pub mod number_change;
pub mod outbox;
pub mod outcomes;
pub mod platform_errors;
pub mod platform_events;
pub mod policy_file;
pub mod portfolio;
pub mod pricing_file;
pub mod privacy;
pub mod quote;
pub mod read_receipts;
pub mod recheck;
pub mod reconcile;
pub mod refusals;
pub mod retries;
pub mod scheduled;
pub mod send;
mod send_hold;
pub mod send_kind;
mod send_safety;
pub mod sql;
pub mod statuses;
pub mod template_changes;
pub mod templates;
pub mod throughput;

use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::compliance::{ComplianceInput, Decision, FrequencyStatus, ReasonCode};
use warden_rules::kinds::Category;
use warden_rules::phone::PhoneNumber;
use warden_rules::policy::PolicySet;
use warden_settings::Settings;
use warden_store::models::{Conversation, Customer};
use warden_store::schema::message_frequencies;
use warden_store::tx::TxError;
use warden_store::{DbError, PgPool};
use warden_stream::DeliveryStream;

pub use conversations::{ConversationView, WindowCache};
pub use deps::{Dependencies, RedisPool};
pub use recheck::Recheck;
pub use send::{Accepted, ContentError, RefusalMode, SendError, SendKind, SendRequest};
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
    windows: WindowCache,
    clock: Clock,
}

/// Where the send path reads the time (tests move it; see [`Core::with_clock`]).
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The app state every process shares (cheap to clone).
#[derive(Clone)]
pub struct Core {
    inner: Arc<Inner>,
    /// Who this view's writes are attributed to.
    actor: &'static str,
}

impl Core {
    pub fn new(deps: Dependencies, actor: &'static str) -> Core {
        let windows = WindowCache::new(deps.redis.clone());
        Core {
            inner: Arc::new(Inner {
                deps,
                windows,
                clock: Arc::new(Utc::now),
            }),
            actor,
        }
    }
    /// The same core acting as `actor` (an agent): a cheap view sharing every connection.
    pub fn as_actor(&self, actor: &'static str) -> Core {
        Core {
            inner: Arc::clone(&self.inner),
            actor,
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

    /// Tell gateways that these customers' conversations changed (a wake-up on NATS
    /// core, no content; see `warden_stream::hints`). Call after the change committed.
    /// Without NATS there is nobody to tell.
    pub async fn hint<'a>(
        &self,
        customers: impl IntoIterator<Item = &'a str>,
        kind: warden_stream::HintKind,
    ) {
        if let Some(stream) = self.stream() {
            stream.hints.publish_all(customers, kind).await;
        }
    }

    /// check_frequency_cap: the marketing cap's status for a customer. Never writes.
    pub async fn frequency(
        &self,
        phone: &PhoneNumber,
        now: DateTime<Utc>,
    ) -> Result<FrequencyStatus, CoreError> {
        let phone = &self.customer(phone).await?;
        let mut conn = self.pg().get().await?;
        let customer = customers::find(&mut conn, phone).await?;
        let (count, oldest) = recent_count(
            &mut conn,
            self.policies(),
            phone.digits(),
            Category::Marketing,
            customer.as_ref(),
            now,
            None,
        )
        .await?;
        Ok(warden_rules::compliance::frequency_status(
            self.policies(),
            Category::Marketing,
            count,
            oldest,
            now,
        ))
    }

    /// The conversation of a customer on a channel: Redis first, Postgres when Redis misses
    /// or fails (a Redis outage never turns into an error here).
    pub async fn conversation(
        &self,
        phone: &PhoneNumber,
        channel: &str,
    ) -> Result<ConversationView, CoreError> {
        let now = Utc::now();
        if let Some(cached) = self.windows().get(phone.digits(), channel).await {
            return Ok(cached.view(phone.digits(), channel, now));
        }
        let mut conn = self.pg().get().await?;
        let row = conversations::find(&mut conn, phone.digits(), channel).await?;
        if let Some(conv) = &row {
            self.windows().put(conv).await;
        }
        Ok(ConversationView::from_row(
            row.as_ref(),
            phone.digits(),
            channel,
            now,
        ))
    }

    /// Write a committed conversation row through to the cache (never older than Postgres).
    pub async fn refresh_window_cache(&self, conv: &Conversation) {
        self.windows().put(conv).await;
    }
}

/// Messages of `category` accepted for this customer inside the policy's window, and the
/// oldest of them. A platform 131049 in the last 24 h counts as a full marketing cap.
async fn recent_count(
    conn: &mut AsyncPgConnection,
    policies: &PolicySet,
    phone: &str,
    category: Category,
    customer: Option<&Customer>,
    now: DateTime<Utc>,
    exclude: Option<Uuid>,
) -> QueryResult<(u32, Option<DateTime<Utc>>)> {
    let Some(limit) = policies.frequency_limit(category) else {
        return Ok((0, None));
    };
    let since = now - limit.window;
    let (count, oldest): (i64, Option<DateTime<Utc>>) = message_frequencies::table
        .filter(message_frequencies::customer_phone.eq(phone))
        .filter(message_frequencies::category.eq(category.as_str()))
        .filter(message_frequencies::counted_at.gt(since))
        // A retried message was counted when first accepted: don't count it against itself.
        .filter(message_frequencies::message_id.ne(exclude.unwrap_or_else(Uuid::nil)))
        .select((
            diesel::dsl::count_star(),
            diesel::dsl::min(message_frequencies::counted_at),
        ))
        .first(conn)
        .await?;
    let customer = customer.map(CustomerFacts::from);
    Ok(counting_platform_hold(
        policies,
        category,
        customer.as_ref(),
        (count as u32, oldest),
        now,
    ))
}

/// A platform 131049 (marketing limited for this user) in the last 24 h counts as a full
/// marketing cap.
fn counting_platform_hold(
    policies: &PolicySet,
    category: Category,
    customer: Option<&CustomerFacts>,
    (count, oldest): (u32, Option<DateTime<Utc>>),
    now: DateTime<Utc>,
) -> (u32, Option<DateTime<Utc>>) {
    let Some(limit) = policies.frequency_limit(category) else {
        return (count, oldest);
    };
    let held = category == Category::Marketing
        && customer
            .and_then(|c| c.marketing_limited_at)
            .is_some_and(|at| at > now - TimeDelta::hours(24));
    (if held { count.max(limit.max) } else { count }, oldest)
}

/// What the compliance rules read of a known customer.
struct CustomerFacts<'a> {
    opt_in_marketing: bool,
    opt_in_utility: bool,
    tags: &'a [String],
    marketing_limited_at: Option<DateTime<Utc>>,
}

impl<'a> From<&'a Customer> for CustomerFacts<'a> {
    fn from(c: &'a Customer) -> Self {
        CustomerFacts {
            opt_in_marketing: c.opt_in_marketing,
            opt_in_utility: c.opt_in_utility,
            tags: &c.tags,
            marketing_limited_at: c.marketing_limited_at,
        }
    }
}

fn decide(
    policies: &PolicySet,
    phone: &PhoneNumber,
    customer: Option<&CustomerFacts>,
    last_inbound_at: Option<DateTime<Utc>>,
    category: Category,
    recent_count: u32,
    now: DateTime<Utc>,
) -> Decision {
    // A customer seen for the first time starts opted in to both (docs/compliance.md).
    let input = ComplianceInput {
        category,
        opted_out_marketing: customer.is_some_and(|c| !c.opt_in_marketing),
        opted_out_utility: customer.is_some_and(|c| !c.opt_in_utility),
        tags: customer.map(|c| c.tags.to_vec()).unwrap_or_default(),
        phone: phone.clone(),
        last_inbound_at,
        recent_count,
        now,
    };
    let decision = warden_rules::compliance::decide(policies, &input);
    // A platform 131049 in the last 24 h (counted as a full cap by `recent_count`) is
    // reported as itself, with when it lifts, unless an opt-out or the window refused first.
    if matches!(
        decision.reason_code,
        ReasonCode::FrequencyCapExceeded | ReasonCode::Ok | ReasonCode::PolicyRestriction
    ) && let Some(hold) = warden_rules::platform_limits::marketing_hold(
        category,
        customer.and_then(|c| c.marketing_limited_at),
        now,
    ) {
        return hold;
    }
    decision
}

/// Record one accepted message against the frequency count (inside the send transaction).
async fn count_accepted(
    conn: &mut AsyncPgConnection,
    phone: &str,
    category: Category,
    message_id: Uuid,
) -> QueryResult<()> {
    diesel::insert_into(message_frequencies::table)
        .values((
            message_frequencies::customer_phone.eq(phone),
            message_frequencies::category.eq(category.as_str()),
            message_frequencies::message_id.eq(message_id),
        ))
        .on_conflict(message_frequencies::message_id)
        .do_nothing()
        .execute(conn)
        .await
        .map(|_| ())
}
