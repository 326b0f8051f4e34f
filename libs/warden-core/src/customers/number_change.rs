//! A customer changed their number (the platform's `system` message of type
//! `user_changed_number`, sent from the old number with `new_wa_id`): the new number
//! inherits every opt-out of the old one (never less strict, a forgotten number's
//! suppression included) and its tags, and the link is
//! recorded so the history of the new number continues the old one's
//! (`conversations::view::history`).

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use warden_rules::phone::PhoneNumber;
use warden_store::schema::customers;

use crate::customers::ensure_locked;

/// Link `old` to `new` as of `at`. Both customers are created if missing and locked in
/// phone order (as every batch locks customers). Returns false when `old` is `new`.
pub async fn link(
    c: &mut AsyncPgConnection,
    old: &PhoneNumber,
    new: &PhoneNumber,
    at: DateTime<Utc>,
    actor: &str,
) -> QueryResult<bool> {
    if old.digits() == new.digits() {
        return Ok(false);
    }
    let (before_old, before_new) = if old.digits() < new.digits() {
        let o = ensure_locked(c, old).await?;
        (o, ensure_locked(c, new).await?)
    } else {
        let n = ensure_locked(c, new).await?;
        (ensure_locked(c, old).await?, n)
    };
    let marketing = before_new.opt_in_marketing && before_old.opt_in_marketing;
    let utility = before_new.opt_in_utility && before_old.opt_in_utility;
    let mut tags = before_new.tags.clone();
    for t in &before_old.tags {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    let stricter = marketing != before_new.opt_in_marketing || utility != before_new.opt_in_utility;
    let reason = if stricter {
        Some(format!("inherited from {} (number changed)", old.digits()))
    } else {
        before_new.opt_change_reason.clone()
    };
    diesel::update(customers::table.find(new.digits()))
        .set((
            customers::opt_in_marketing.eq(marketing),
            customers::opt_in_utility.eq(utility),
            customers::opt_change_reason.eq(reason),
            customers::opt_changed_at.eq(if stricter {
                before_old.opt_changed_at.max(before_new.opt_changed_at)
            } else {
                before_new.opt_changed_at
            }),
            customers::tags.eq(&tags),
            customers::marketing_limited_at.eq(before_new
                .marketing_limited_at
                .max(before_old.marketing_limited_at)),
            customers::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
    // A forgotten number's suppression is the strictest opt-out: the new number keeps it,
    // so not even a START from the new number lifts it.
    let suppressed = diesel::sql_query(
        "INSERT INTO suppressions (phone, reason) \
         SELECT $2, 'inherited from a forgotten number (number changed)' \
         FROM suppressions WHERE phone = $1 ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(old.digits())
    .bind::<Text, _>(new.digits())
    .execute(c)
    .await?;
    diesel::sql_query(
        "INSERT INTO customer_number_changes (old_phone, new_phone, changed_at) \
         VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
    )
    .bind::<Text, _>(old.digits())
    .bind::<Text, _>(new.digits())
    .bind::<Timestamptz, _>(at)
    .execute(c)
    .await?;
    warden_store::audit::record(
        c,
        actor,
        "customer_number_changed",
        "customer",
        new.digits(),
        json!({"old_phone": old.digits(), "new_phone": new.digits(),
               "opt_in_marketing": marketing, "opt_in_utility": utility,
               "suppression_inherited": suppressed > 0, "changed_at": at}),
    )
    .await?;
    Ok(true)
}

/// Every earlier number of `phone` (following changes back), oldest links included;
/// empty when it never changed.
pub async fn earlier_numbers(c: &mut AsyncPgConnection, phone: &str) -> QueryResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Old {
        #[diesel(sql_type = Text)]
        old_phone: String,
    }
    Ok(diesel::sql_query(
        "WITH RECURSIVE back(phone, depth) AS ( \
             SELECT old_phone, 1 FROM customer_number_changes WHERE new_phone = $1 \
             UNION \
             SELECT n.old_phone, b.depth + 1 FROM customer_number_changes n \
             JOIN back b ON n.new_phone = b.phone WHERE b.depth < 16) \
         SELECT DISTINCT phone AS old_phone FROM back WHERE phone <> $1",
    )
    .bind::<Text, _>(phone)
    .load::<Old>(c)
    .await?
    .into_iter()
    .map(|o| o.old_phone)
    .collect())
}
