//! A customer's consent belongs to a business: a STOP to one number of a business stops
//! marketing from all its numbers, not from another business's. The default sender's
//! business keeps it on the customer row (as before there were several); another
//! business's lives in `business_consent`, where no row means opted in, as for a customer
//! seen for the first time.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_store::models::Customer;
use warden_store::schema::{business_consent, customers};

use warden_settings::is_stored_default as is_default_key;

/// One business's consent of one customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consent {
    pub marketing: bool,
    pub utility: bool,
    pub changed_at: Option<DateTime<Utc>>,
    pub reason: Option<String>,
}

impl Consent {
    fn of_customer(c: &Customer) -> Consent {
        Consent {
            marketing: c.opt_in_marketing,
            utility: c.opt_in_utility,
            changed_at: c.opt_changed_at,
            reason: c.opt_change_reason.clone(),
        }
    }
}

/// The consent `customer` gave the business stored as `business`.
pub async fn of(
    conn: &AsyncPgConnection,
    business: &str,
    customer: &Customer,
) -> QueryResult<Consent> {
    let stored = stored(conn, business, &customer.phone).await?;
    Ok(resolve(business, customer, stored))
}

/// The `business_consent` row of a business other than the default one (none for the
/// default business: its consent is on the customer row). Reads nothing but that row, so
/// the send path can read it in the same round trip as the customer's lock.
pub async fn stored(
    mut conn: &AsyncPgConnection,
    business: &str,
    phone: &str,
) -> QueryResult<Option<Consent>> {
    if is_default_key(business) {
        return Ok(None);
    }
    Ok(business_consent::table
        .find((business, phone))
        .select(Stored::as_select())
        .first::<Stored>(&mut conn)
        .await
        .optional()?
        .map(Consent::from))
}

/// The consent of `customer` to `business` from its [`stored`] row: the customer row's
/// for the default business, the stored row's or (none stored) opted in for another.
pub fn resolve(business: &str, customer: &Customer, stored: Option<Consent>) -> Consent {
    if is_default_key(business) {
        return Consent::of_customer(customer);
    }
    stored.unwrap_or(Consent {
        marketing: true,
        utility: true,
        changed_at: None,
        reason: None,
    })
}

/// [`of`] for many customers in one query (the batched send path): each customer's
/// consent to the business stored as `business`, by phone.
pub async fn of_many(
    conn: &mut AsyncPgConnection,
    business: &str,
    customers: &[&Customer],
) -> QueryResult<std::collections::HashMap<String, Consent>> {
    let mut out: std::collections::HashMap<String, Consent> = customers
        .iter()
        .map(|c| {
            let consent = if is_default_key(business) {
                Consent::of_customer(c)
            } else {
                Consent {
                    marketing: true,
                    utility: true,
                    changed_at: None,
                    reason: None,
                }
            };
            (c.phone.clone(), consent)
        })
        .collect();
    if is_default_key(business) || customers.is_empty() {
        return Ok(out);
    }
    let phones: Vec<&str> = customers.iter().map(|c| c.phone.as_str()).collect();
    let rows: Vec<(String, Stored)> = business_consent::table
        .filter(business_consent::business.eq(business))
        .filter(business_consent::customer_phone.eq_any(&phones))
        .select((business_consent::customer_phone, Stored::as_select()))
        .load(conn)
        .await?;
    for (phone, stored) in rows {
        out.insert(phone, Consent::from(stored));
    }
    Ok(out)
}

/// A `business_consent` row.
#[derive(Queryable, Selectable)]
#[diesel(table_name = business_consent)]
struct Stored {
    opt_in_marketing: bool,
    opt_in_utility: bool,
    opt_changed_at: Option<DateTime<Utc>>,
    opt_change_reason: Option<String>,
}

impl From<Stored> for Consent {
    fn from(s: Stored) -> Self {
        Consent {
            marketing: s.opt_in_marketing,
            utility: s.opt_in_utility,
            changed_at: s.opt_changed_at,
            reason: s.opt_change_reason,
        }
    }
}

/// Write the consent of `phone` for the business stored as `business` (the customer row
/// exists and is locked by the caller).
pub async fn write(
    conn: &mut AsyncPgConnection,
    business: &str,
    phone: &str,
    consent: &Consent,
) -> QueryResult<()> {
    if is_default_key(business) {
        diesel::update(customers::table.find(phone))
            .set((
                customers::opt_in_marketing.eq(consent.marketing),
                customers::opt_in_utility.eq(consent.utility),
                customers::opt_changed_at.eq(consent.changed_at),
                customers::opt_change_reason.eq(&consent.reason),
                customers::updated_at.eq(diesel::dsl::now),
            ))
            .execute(conn)
            .await?;
        return Ok(());
    }
    diesel::insert_into(business_consent::table)
        .values((
            business_consent::business.eq(business),
            business_consent::customer_phone.eq(phone),
            business_consent::opt_in_marketing.eq(consent.marketing),
            business_consent::opt_in_utility.eq(consent.utility),
            business_consent::opt_changed_at.eq(consent.changed_at),
            business_consent::opt_change_reason.eq(&consent.reason),
        ))
        .on_conflict((business_consent::business, business_consent::customer_phone))
        .do_update()
        .set((
            business_consent::opt_in_marketing.eq(consent.marketing),
            business_consent::opt_in_utility.eq(consent.utility),
            business_consent::opt_changed_at.eq(consent.changed_at),
            business_consent::opt_change_reason.eq(&consent.reason),
        ))
        .execute(conn)
        .await?;
    Ok(())
}

/// The stored key of the business a message was sent from or to (`default` for the
/// default sender's messages, which have no `message_senders` row).
pub async fn business_of_message(
    conn: &mut AsyncPgConnection,
    message_id: uuid::Uuid,
) -> QueryResult<String> {
    use warden_store::schema::message_senders;
    Ok(message_senders::table
        .find(message_id)
        .select(message_senders::business)
        .first::<String>(conn)
        .await
        .optional()?
        .unwrap_or_else(|| warden_settings::STORED_DEFAULT.to_string()))
}

/// The stored key of the sender a message was sent from or to (`default` when it has no
/// `message_senders` row).
pub async fn sender_of_message(
    conn: &mut AsyncPgConnection,
    message_id: uuid::Uuid,
) -> QueryResult<String> {
    use warden_store::schema::message_senders;
    Ok(message_senders::table
        .find(message_id)
        .select(message_senders::sender_id)
        .first::<String>(conn)
        .await
        .optional()?
        .unwrap_or_else(|| warden_settings::STORED_DEFAULT.to_string()))
}
