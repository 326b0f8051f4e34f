//! Inbound messages of a webhook batch, recorded for every customer at once.
//!
//! [`record_inbound`] does, for every customer of a batch at once, what these do
//! for one customer per call: `customers::ensure`, `customers::touch_interaction` and
//! `conversations::record_inbound` (plus storing the inbound message rows).
//!
//! A 100-event batch from 100 customers costs one statement here instead of 400 round
//! trips through the one-customer functions; that is what lets batched ingestion keep up
//! with the platform. The rules are the one-customer functions', statement for
//! statement: customers start opted in with their pricing country, `last_interaction_at`
//! only moves forward, the window opens from the message's own timestamp and never
//! shrinks, and a message newer than an archive un-archives. The webhook's
//! `tests/it/core_batch.rs` runs both versions side by side on the same inputs and requires
//! identical rows, so a change to one that is not mirrored in the other fails the tests.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;
use warden_rules::phone::PhoneNumber;
use warden_rules::window::CARE_WINDOW;
use warden_settings::StoreKeys;
use warden_store::models::Conversation;

use crate::conversations::inbound::NoWindow;
use crate::sql::{Bind, Stmt};

/// One inbound message of a batch.
pub struct Inbound<'a> {
    pub phone: &'a PhoneNumber,
    pub wamid: &'a str,
    /// `text`, `button`, `image`, ...
    pub message_type: &'a str,
    /// The message as received, stored as the row's content.
    pub content: &'a Value,
    /// When it opens or extends the care window, or why it opens none
    /// (`crate::conversations::inbound::window_opened_at`).
    pub window: Result<DateTime<Utc>, NoWindow>,
}

/// What [`record`] wrote.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The conversation row of each customer whose window opened or moved (for the cache).
    pub windows: Vec<Conversation>,
    /// Messages stored without opening or extending a window, by reason.
    pub no_window: HashMap<NoWindow, u64>,
}

/// Store `inbound`, written to the sender stored as `sender`, on `channel`: customers (created on first sight), their last
/// interaction and care window, and every message row, in one statement. The window and
/// last interaction only depend on each customer's newest message that opens a window; a
/// customer whose messages open none is still created.
pub async fn record(
    c: &mut AsyncPgConnection,
    channel: &str,
    sender: &StoreKeys,
    inbound: &[Inbound<'_>],
) -> QueryResult<Recorded> {
    let mut out = Recorded::default();
    if inbound.is_empty() {
        return Ok(out);
    }
    let mut newest: Vec<(&PhoneNumber, Option<DateTime<Utc>>)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for i in inbound {
        let opens = match i.window {
            Ok(at) => Some(at),
            Err(reason) => {
                tracing::info!(wamid = %i.wamid, reason = reason.as_str(),
                    "inbound message stored; it opens no care window");
                *out.no_window.entry(reason).or_default() += 1;
                None
            }
        };
        match index.get(i.phone.digits()) {
            Some(&n) => newest[n].1 = newest[n].1.max(opens),
            None => {
                index.insert(i.phone.digits(), newest.len());
                newest.push((i.phone, opens));
            }
        }
    }
    let rows: Vec<InboundRow> = inbound
        .iter()
        .map(|i| InboundRow {
            phone: i.phone.digits(),
            message_type: i.message_type,
            content: i.content,
            wamid: i.wamid,
        })
        .collect();
    out.windows = record_inbound(c, channel, sender, &newest, &rows).await?;
    Ok(out)
}

/// The inbound message rows of a batch (`direction` inbound, `status` received).
pub struct InboundRow<'a> {
    pub phone: &'a str,
    pub message_type: &'a str,
    pub content: &'a Value,
    pub wamid: &'a str,
}

type ConversationRow = (
    diesel::sql_types::Uuid,
    Text,
    Text,
    Text,
    Nullable<Timestamptz>,
    Nullable<Timestamptz>,
    Nullable<Timestamptz>,
    Nullable<Timestamptz>,
    Timestamptz,
    Timestamptz,
    Text,
    Nullable<Text>,
    Nullable<Timestamptz>,
    Nullable<Text>,
    Nullable<Timestamptz>,
);

/// For each customer of `windows` (one item per phone, with the timestamp of their newest
/// message that opens a window, or None when none of theirs does): create them if new
/// (opted in, pricing country), and with a timestamp move `last_interaction_at` forward
/// and open or extend their window; and store the inbound message `rows`. One statement; customers are written in phone order so concurrent
/// batches lock rows in the same order. Returns the conversation rows, for the cache.
pub async fn record_inbound(
    c: &mut AsyncPgConnection,
    channel: &str,
    sender: &StoreKeys,
    windows: &[(&PhoneNumber, Option<DateTime<Utc>>)],
    rows: &[InboundRow<'_>],
) -> QueryResult<Vec<Conversation>> {
    let mut sorted: Vec<_> = windows.to_vec();
    sorted.sort_by(|a, b| a.0.digits().cmp(b.0.digits()));
    let phones: Vec<&str> = sorted.iter().map(|(p, _)| p.digits()).collect();
    let countries = sorted.iter().map(|(p, _)| p.pricing_country()).collect();
    let ats: Vec<Option<DateTime<Utc>>> = sorted.iter().map(|(_, at)| *at).collect();
    let expires = ats.iter().map(|at| at.map(|at| at + CARE_WINDOW)).collect();
    Stmt::<ConversationRow>::new(
        &[
            // customers::ensure + customers::touch_interaction
            "WITH people AS ( \
                INSERT INTO customers (phone, country, last_interaction_at) \
                SELECT * FROM unnest(",
            "::text[], ",
            "::text[], ",
            "::timestamptz[]) \
                ON CONFLICT (phone) DO UPDATE SET last_interaction_at = \
                    GREATEST(customers.last_interaction_at, excluded.last_interaction_at)), \
             stored AS ( \
                INSERT INTO messages (id, customer_phone, channel, direction, message_type, \
                                      category, status, content, wamid) \
                SELECT m.id, m.phone, ",
            ", 'inbound', m.mtype, 'service', 'received', m.content, m.wamid \
                FROM unnest(",
            "::uuid[], ",
            "::text[], ",
            "::text[], ",
            "::jsonb[], ",
            "::text[]) AS m(id, phone, mtype, content, wamid) \
                ON CONFLICT DO NOTHING RETURNING id), \
             /* the number written to, when it is not the default sender */ \
             numbered AS ( \
                INSERT INTO message_senders (message_id, sender_id, business) \
                SELECT id, s.sender, s.business FROM stored, (SELECT ",
            "::text AS sender, ",
            "::text AS business) s WHERE s.sender <> 'default') \
             /* conversations::record_inbound; its foreign key sees the customers above \
                (constraint checks run at the end of the statement) */ \
             INSERT INTO conversations (customer_phone, channel, sender_id, last_inbound_at, \
                                        window_expires_at) \
             SELECT w.phone, ",
            ", ",
            ", w.at, w.expires FROM unnest(",
            "::text[], ",
            "::timestamptz[], ",
            "::timestamptz[]) AS w(phone, at, expires) WHERE w.at IS NOT NULL \
             ON CONFLICT (customer_phone, channel, sender_id) DO UPDATE SET \
                 last_inbound_at = GREATEST(conversations.last_inbound_at, excluded.last_inbound_at), \
                 window_expires_at = GREATEST(conversations.window_expires_at, excluded.window_expires_at), \
                 archived_at = CASE WHEN conversations.archived_at IS NOT NULL \
                                     AND excluded.last_inbound_at > conversations.archived_at \
                                    THEN NULL ELSE conversations.archived_at END, \
                 updated_at = excluded.updated_at \
             RETURNING id, customer_phone, channel, conversation_type, last_inbound_at, \
                       last_outbound_at, window_expires_at, archived_at, created_at, updated_at, \
                       sender_id, holder, holder_since, holder_by, holder_until",
        ],
        vec![
            Bind::Texts(phones.clone()),
            Bind::Texts(countries),
            Bind::OptTimes(ats.clone()),
            Bind::Text(channel),
            Bind::Uuids(rows.iter().map(|_| Uuid::now_v7()).collect()),
            Bind::Texts(rows.iter().map(|r| r.phone).collect()),
            Bind::Texts(rows.iter().map(|r| r.message_type).collect()),
            Bind::Jsons(rows.iter().map(|r| r.content).collect()),
            Bind::Texts(rows.iter().map(|r| r.wamid).collect()),
            Bind::Text(&sender.sender),
            Bind::Text(&sender.business),
            Bind::Text(channel),
            Bind::Text(&sender.sender),
            Bind::Texts(phones),
            Bind::OptTimes(ats),
            Bind::OptTimes(expires),
        ],
    )
    .load::<Conversation>(c)
    .await
}
