//! A customer's `call_permission_reply`: their answer becomes the number's call permission
//! (`calls::permission`), unless a newer answer is stored already (webhooks arrive out of
//! order). The reply is also a customer message, stored and opening the window like any
//! other (`inbound`, which calls this in the message's place among the batch's events).

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use warden_rules::phone::PhoneNumber;

use crate::calls::{Reply, permission};

/// The answer `reply`, given at `at` by the customer keyed `key` to the number stored as
/// `sender`. Returns whether it changed the stored permission.
pub async fn reply(
    c: &mut AsyncPgConnection,
    sender: &str,
    key: &PhoneNumber,
    reply: &Reply,
    (at, wamid): (DateTime<Utc>, &str),
    actor: &str,
) -> QueryResult<bool> {
    permission::record(c, sender, key, reply, at, wamid, actor).await
}
