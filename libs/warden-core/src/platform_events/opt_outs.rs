//! What a customer says about the messages they want, through the webhook: a STOP (or
//! START) keyword in a message, or the platform's marketing preference
//! (`user_preferences`). Both go through `crate::customers::apply_opt_change`, the one
//! place consent changes, by the event's own time.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;

use crate::customers::{self, OptScope, identity};

/// A marketing stop / resume preference.
#[derive(Clone, Debug)]
pub struct Preference<'a> {
    /// The customer as the webhook names it (the phone, else the BSUID).
    pub phone: &'a PhoneNumber,
    pub change: OptChange,
    pub at: DateTime<Utc>,
}

/// A keyword of the customer keyed `key` to the number of the business stored as
/// `business`: a STOP to one number of a business stops all its numbers, and every kind
/// of message (a START resumes them).
pub async fn stop_keyword(
    c: &mut AsyncPgConnection,
    business: &str,
    key: &PhoneNumber,
    change: OptChange,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<()> {
    customers::apply_opt_change(
        c,
        business,
        key,
        change,
        OptScope::All,
        "stop_keyword",
        actor,
        at,
    )
    .await?;
    Ok(())
}

/// A marketing preference: only marketing stops or resumes, utility messages are untouched.
pub async fn preference(
    c: &mut AsyncPgConnection,
    business: &str,
    p: &Preference<'_>,
    actor: &str,
) -> QueryResult<bool> {
    let key = identity::resolve(c, p.phone).await?;
    customers::apply_opt_change(
        c,
        business,
        &key,
        p.change,
        OptScope::Marketing,
        "user_preferences",
        actor,
        p.at,
    )
    .await?;
    Ok(true)
}
