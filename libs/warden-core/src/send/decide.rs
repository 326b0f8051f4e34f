//! The compliance decision's facts: what the pure rules (`warden_rules::compliance::decide`)
//! read of a known customer ([`CustomerFacts`]), how many messages of a category it was
//! sent inside the policy's window ([`recent_count`], a platform 131049 counting as a
//! full marketing cap), the decision itself ([`decide`]) and the count of an accepted
//! message ([`count_accepted`]). Used by the send path and check_compliance.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use uuid::Uuid;
use warden_rules::compliance::{ComplianceInput, Decision, ReasonCode};
use warden_rules::kinds::Category;
use warden_rules::phone::PhoneNumber;
use warden_rules::policy::PolicySet;
use warden_store::models::Customer;
use warden_store::schema::message_frequencies;

/// Messages of `category` the business stored as `business` had accepted for this customer
/// inside the policy's window (caps count across the business's numbers), and the oldest of
/// them. A platform 131049 in the last 24 h counts as a full marketing cap.
pub(super) async fn recent_count(
    conn: &AsyncPgConnection,
    policies: &PolicySet,
    (business, phone): (&str, &str),
    category: Category,
    customer: Option<&Customer>,
    now: DateTime<Utc>,
    exclude: Option<Uuid>,
) -> QueryResult<(u32, Option<DateTime<Utc>>)> {
    let counted = counted(conn, policies, (business, phone), category, now, exclude).await?;
    let customer = customer.map(CustomerFacts::from);
    Ok(counting_platform_hold(
        policies,
        category,
        customer.as_ref(),
        counted,
        now,
    ))
}

/// [`recent_count`]'s read alone (no platform hold): it needs nothing of the customer row,
/// so the send path reads it in the same round trip as the customer's lock.
pub(super) async fn counted(
    mut conn: &AsyncPgConnection,
    policies: &PolicySet,
    (business, phone): (&str, &str),
    category: Category,
    now: DateTime<Utc>,
    exclude: Option<Uuid>,
) -> QueryResult<(u32, Option<DateTime<Utc>>)> {
    let Some(limit) = policies.frequency_limit(category) else {
        return Ok((0, None));
    };
    let since = now - limit.window;
    let (count, oldest): (i64, Option<DateTime<Utc>>) = message_frequencies::table
        .filter(message_frequencies::customer_phone.eq(phone))
        .filter(message_frequencies::business.eq(business))
        .filter(message_frequencies::category.eq(category.as_str()))
        .filter(message_frequencies::counted_at.gt(since))
        // A retried message was counted when first accepted: don't count it against itself.
        .filter(message_frequencies::message_id.ne(exclude.unwrap_or_else(Uuid::nil)))
        .select((
            diesel::dsl::count_star(),
            diesel::dsl::min(message_frequencies::counted_at),
        ))
        .first(&mut conn)
        .await?;
    Ok((count as u32, oldest))
}

/// A platform 131049 (marketing limited for this user) in the last 24 h counts as a full
/// marketing cap.
pub(super) fn counting_platform_hold(
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
pub(super) struct CustomerFacts<'a> {
    pub(super) opt_in_marketing: bool,
    pub(super) opt_in_utility: bool,
    pub(super) tags: &'a [String],
    pub(super) marketing_limited_at: Option<DateTime<Utc>>,
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

impl<'a> CustomerFacts<'a> {
    /// The customer as one business sees them: its consent, the rest the customer's.
    pub(super) fn with_consent(
        c: &'a Customer,
        consent: &crate::customers::consent::Consent,
    ) -> Self {
        CustomerFacts {
            opt_in_marketing: consent.marketing,
            opt_in_utility: consent.utility,
            ..CustomerFacts::from(c)
        }
    }
}

pub(super) fn decide(
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
    ) && let Some(refusal) = warden_rules::platform_limits::marketing_limit_refusal(
        category,
        customer.and_then(|c| c.marketing_limited_at),
        now,
    ) {
        return refusal;
    }
    decision
}

/// Record one accepted message against its business's frequency count (inside the send
/// transaction).
pub(super) async fn count_accepted(
    mut conn: &AsyncPgConnection,
    business: &str,
    phone: &str,
    category: Category,
    message_id: Uuid,
) -> QueryResult<()> {
    diesel::insert_into(message_frequencies::table)
        .values((
            message_frequencies::customer_phone.eq(phone),
            message_frequencies::business.eq(business),
            message_frequencies::category.eq(category.as_str()),
            message_frequencies::message_id.eq(message_id),
        ))
        .on_conflict(message_frequencies::message_id)
        .do_nothing()
        .execute(&mut conn)
        .await
        .map(|_| ())
}
