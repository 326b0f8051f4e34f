//! Customers: created on first sight, and the one place opt-outs and opt-ins land (a
//! suppressed, forgotten number is never opted back in: [`is_suppressed`]).
//!
//! In this folder: who a customer is (phone, BSUID, username; [`identity`]), bulk
//! [`import`], [`privacy`] (content retention, forgetting a customer) and a changed number
//! inheriting the old one's opt-outs ([`number_change`]).

pub mod consent;
pub mod identity;
pub mod import;
pub mod number_change;
pub mod privacy;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;
use warden_store::models::Customer;
use warden_store::schema::{customers, suppressions};

/// Which consents an opt change touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptScope {
    /// Marketing only (user_preferences, platform 131050).
    Marketing,
    /// Marketing and utility (a STOP keyword).
    All,
}

/// Create the customer if this is the first time we see them. Race-free: concurrent first
/// sights insert one row (`ON CONFLICT DO NOTHING`) and all read it back.
pub async fn ensure(conn: &mut AsyncPgConnection, phone: &PhoneNumber) -> QueryResult<Customer> {
    diesel::insert_into(customers::table)
        .values((
            customers::phone.eq(phone.digits()),
            customers::country.eq(phone.pricing_country()),
        ))
        .on_conflict(customers::phone)
        .do_nothing()
        .execute(conn)
        .await?;
    customers::table
        .find(phone.digits())
        .select(Customer::as_select())
        .first(conn)
        .await
}

/// Create if missing and lock the row for the rest of the transaction: serialises
/// concurrent sends to one customer so the frequency cap cannot be passed together.
pub async fn ensure_locked(
    mut conn: &AsyncPgConnection,
    phone: &PhoneNumber,
) -> QueryResult<Customer> {
    // Both statements go out at once (pipelined on the connection, run in this order), so
    // a caller can pipeline its reads behind the lock: they run after it, on fresh
    // snapshots (read committed), and so see what the lock's previous holder committed.
    let insert = diesel::insert_into(customers::table)
        .values((
            customers::phone.eq(phone.digits().to_string()),
            customers::country.eq(phone.pricing_country().to_string()),
        ))
        .on_conflict(customers::phone)
        .do_nothing()
        .execute(&mut conn);
    let lock = customers::table
        .find(phone.digits().to_string())
        .select(Customer::as_select())
        .for_update()
        .first(&mut conn);
    let (_, customer) = futures::try_join!(insert, lock)?;
    Ok(customer)
}

pub async fn find(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
) -> QueryResult<Option<Customer>> {
    customers::table
        .find(phone.digits())
        .select(Customer::as_select())
        .first(conn)
        .await
        .optional()
}

/// THE one place an opt-out or opt-in is applied, whatever its source (stop keyword,
/// user_preferences, platform error 131050), to the consent the customer gave the business
/// stored as `business` ([`consent`]). Records who, when and why in the audit log.
/// Returns true when a consent flag changed.
#[allow(clippy::too_many_arguments)]
pub async fn apply_opt_change(
    conn: &mut AsyncPgConnection,
    business: &str,
    phone: &PhoneNumber,
    change: OptChange,
    scope: OptScope,
    source: &str,
    actor: &str,
    at: DateTime<Utc>,
) -> QueryResult<bool> {
    let customer = ensure_locked(conn, phone).await?;
    let before = consent::of(conn, business, &customer).await?;
    // A forgotten number stays suppressed: not even the customer's own START lifts it.
    if matches!(change, OptChange::Resume) && is_suppressed(conn, phone).await? {
        tracing::info!(source, "opt-in of a forgotten (suppressed) number ignored");
        return Ok(false);
    }
    // Platform retries arrive out of order: an older stop/resume never overrides a newer one.
    if before.changed_at.is_some_and(|last| last > at) {
        return Ok(false);
    }
    let opt_in = matches!(change, OptChange::Resume);
    let marketing = opt_in;
    let utility = match scope {
        OptScope::All => opt_in,
        OptScope::Marketing => before.utility,
    };
    if before.marketing == marketing && before.utility == utility {
        // Nothing changes, but remember the newest event so an older one arriving later
        // cannot undo it.
        let newest = consent::Consent {
            changed_at: Some(at),
            ..before
        };
        consent::write(conn, business, phone.digits(), &newest).await?;
        return Ok(false);
    }
    let reason = warden_rules::keywords::opt_change_reason(change, source);
    let after = consent::Consent {
        marketing,
        utility,
        changed_at: Some(at),
        reason: Some(reason),
    };
    consent::write(conn, business, phone.digits(), &after).await?;
    warden_store::audit::record(
        conn,
        actor,
        if opt_in { "customer_opted_in" } else { "customer_opted_out" },
        "customer",
        phone.digits(),
        json!({
            "source": source,
            "scope": match scope { OptScope::Marketing => "marketing", OptScope::All => "marketing+utility" },
            "at": at,
            "business": business,
            "before": {"marketing": before.marketing, "utility": before.utility},
            "after": {"marketing": marketing, "utility": utility},
        }),
    )
    .await?;
    tracing::info!(
        customer = phone.digits(),
        source,
        change = change.as_str(),
        "consent changed"
    );
    Ok(true)
}

/// A fact the platform told us about a customer, kept on the customer row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PlatformMark {
    /// 131026: the number cannot receive messages.
    Undeliverable,
    /// 131049: the platform's per-user marketing limit; no marketing for 24 h.
    MarketingLimited,
}

async fn mark(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    what: PlatformMark,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<()> {
    ensure(conn, phone).await?;
    let row = customers::table.find(phone.digits());
    let (action, code) = match what {
        PlatformMark::Undeliverable => {
            diesel::update(row)
                .set((
                    customers::undeliverable_at.eq(at),
                    customers::updated_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?;
            ("customer_undeliverable", 131026)
        }
        PlatformMark::MarketingLimited => {
            diesel::update(row)
                .set((
                    customers::marketing_limited_at.eq(at),
                    customers::updated_at.eq(diesel::dsl::now),
                ))
                .execute(conn)
                .await?;
            ("customer_marketing_limited", 131049)
        }
    };
    warden_store::audit::record(
        conn,
        actor,
        action,
        "customer",
        phone.digits(),
        json!({"code": code, "at": at}),
    )
    .await
}

/// Platform 131026: the number cannot receive messages.
pub async fn mark_undeliverable(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<()> {
    mark(conn, phone, PlatformMark::Undeliverable, at, actor).await
}

/// Platform 131049: the platform's per-user marketing limit; no marketing for 24 h.
pub async fn mark_marketing_limited(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<()> {
    mark(conn, phone, PlatformMark::MarketingLimited, at, actor).await
}

/// The customer did something (sent a message): keep last_interaction current.
pub async fn touch_interaction(
    conn: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    at: DateTime<Utc>,
) -> QueryResult<()> {
    diesel::update(customers::table.find(phone.digits()))
        .set(
            customers::last_interaction_at.eq(diesel::dsl::sql::<
                diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
            >("GREATEST(last_interaction_at, ")
            .bind::<diesel::sql_types::Timestamptz, _>(at)
            .sql(")")),
        )
        .execute(conn)
        .await
        .map(|_| ())
}

/// Is this number suppressed (forgotten)? An opt-in never lifts a suppression.
pub async fn is_suppressed(c: &mut AsyncPgConnection, phone: &PhoneNumber) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        suppressions::table.find(phone.digits()),
    ))
    .get_result(c)
    .await
}
