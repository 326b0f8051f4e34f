//! What an agent reads of its conversations (docs/tools.md, the conversation loop):
//! [`history`] (one customer's messages, both directions, newest first, keyset-paginated)
//! and [`inbox`] (customers waiting for an answer). Read-only; the same serialisable
//! structs back the tools and the MCP resources, so both show the same JSON.

use std::collections::HashMap;

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;
use warden_rules::window::WindowState;
use warden_store::models::Message;
use warden_store::schema::messages;

use crate::CoreError;
use crate::conversations::holder::HolderView;
use crate::conversations::message_view::{Amend, InteractiveReply, Location, Media, normalise};
use crate::conversations::order_view::{OrderView, ReferredProduct};
use crate::flows::responses::FlowResponseView;
use crate::senders::SenderRef;

/// Statuses of rows that were never said (not yet due, or withdrawn): left out of history
/// and of the "who spoke last" question of the inbox.
const NOT_SAID: &[&str] = &["scheduled", "cancelled"];

/// One page of a customer's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPage {
    /// The customer's canonical phone number (digits).
    pub customer_id: String,
    pub channel: String,
    /// The business number of this conversation (sender id).
    pub from: String,
    /// Who holds the conversation now (agents, human, other_app, idle), since when, by
    /// whom and until when.
    pub holder: HolderView,
    /// Newest first, both directions.
    pub messages: Vec<HistoryMessage>,
    /// Pass as `before` for the next (older) page; null on the last page.
    pub next_before: Option<String>,
}

/// A reaction to a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Reaction {
    /// The emoji; empty when the customer removed their reaction.
    pub emoji: String,
    /// Our message_id of the message reacted to (null when it is not one we know).
    pub to_message_id: Option<String>,
}

/// The error of a failed outbound message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryError {
    pub code: Option<i32>,
    pub category: Option<String>,
    pub human_explanation: Option<String>,
}

/// One message of a history page, normalised (`crate::conversations::message_view`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMessage {
    pub message_id: String,
    /// The platform's id (null until an outbound message is sent).
    pub wamid: Option<String>,
    /// `inbound` (from the customer) or `outbound` (ours).
    pub direction: String,
    /// text, image, video, audio, document, sticker, location, contacts, interactive, button,
    /// reaction, order, system, unsupported, edit, revoke, flow_response (and template for ours).
    #[serde(rename = "type")]
    pub kind: String,
    /// Body, caption, or the chosen button/list title; the edited text after an edit;
    /// null when there is none or the message was deleted.
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<Media>,
    /// Our message_id of the message this one answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reaction: Option<Reaction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<InteractiveReply>,
    /// A customer's flow submission (type flow_response): its token, answers and flow message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_response: Option<FlowResponseView>,
    /// The ad or post the customer came from, as the platform described it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referral: Option<Value>,
    /// A `contacts` message: its contact cards in the platform's shape (`name`, `phones`,
    /// `emails`, `urls`, `org`, `addresses`, `birthday`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contacts: Option<Value>,
    /// type order: the customer's cart, its lines and exact totals per currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderView>,
    /// The catalog product the customer asked about (a message sent from its page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referred_product: Option<ReferredProduct>,
    /// The customer changed the text after sending it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub edited: bool,
    /// The customer deleted the message (text null).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Its content was erased (MESSAGE_CONTENT_RETENTION, or the customer was forgotten):
    /// text null; type, status and timestamps stay.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// received or read (inbound); queued, sent, delivered, read or failed (outbound).
    pub status: String,
    /// Outbound: the agent (or Warden service) that asked for it, `business_app` for a
    /// person's reply from the WhatsApp Business app; absent on inbound messages and on
    /// messages sent before attribution was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_by: Option<String>,
    /// When Warden stored the message (RFC 3339).
    pub created_at: String,
    /// The platform's own time of an inbound message (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_timestamp: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<HistoryError>,
}

/// Customers waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxPage {
    pub items: Vec<InboxItem>,
    /// Every waiting customer (all pages).
    pub total: i64,
    pub limit: i64,
    pub offset: i64,
}

/// A customer whose latest message is theirs and unanswered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InboxItem {
    pub customer_id: String,
    /// The business number they wrote to (sender id).
    pub from: String,
    /// When they wrote their latest message: the platform's timestamp (RFC 3339), the
    /// time the care window counts from.
    pub last_inbound_at: String,
    /// The normalised text of their latest message (null for media without caption etc.).
    pub last_inbound_text: Option<String>,
    /// The type of their latest message, as history names it (text, image, flow_response,
    /// order, ...).
    pub last_inbound_kind: String,
    /// Their messages since our last outbound message.
    pub unanswered_count: i64,
    pub window_open: bool,
    pub time_remaining_secs: i64,
    /// Who holds the conversation now: answer only when it is `agents` or `idle`.
    pub holder: HolderView,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Statuses agents see: the dispatcher's internal `sending` is still `queued` to them.
fn public_status(status: &str) -> &str {
    if status == "sending" {
        "queued"
    } else {
        status
    }
}

/// One page of the history of `phone` on `channel`: at most `limit` messages older than
/// `before` (a message_id of this conversation), newest first. Keyset pagination on
/// `messages_history_idx` (customer, channel, created_at, id), so a deep page costs what
/// the first does. After a number change the earlier numbers' messages are part of it.
/// `before` unknown or of another customer: `NotFound`.
pub async fn history(
    c: &mut AsyncPgConnection,
    phone: &str,
    channel: &str,
    sender: &SenderRef,
    limit: i64,
    before: Option<Uuid>,
) -> Result<HistoryPage, CoreError> {
    // A customer who changed number: their history continues the earlier numbers'.
    let mut phones = crate::customers::number_change::earlier_numbers(c, phone).await?;
    phones.push(phone.to_string());
    let cursor = match before {
        None => None,
        Some(id) => {
            let at: Option<DateTime<Utc>> = messages::table
                .filter(messages::id.eq(id))
                .filter(messages::customer_phone.eq_any(&phones))
                .filter(messages::channel.eq(channel))
                .select(messages::created_at)
                .first(c)
                .await
                .optional()?;
            match at {
                Some(at) => Some((at, id)),
                None => {
                    return Err(CoreError::NotFound(format!(
                        "before {id} is not a message of customer {phone} on {channel}"
                    )));
                }
            }
        }
    };
    let mut q = if phones.len() == 1 {
        messages::table
            .filter(messages::customer_phone.eq(phone))
            .into_boxed()
    } else {
        messages::table
            .filter(messages::customer_phone.eq_any(&phones))
            .into_boxed()
    };
    q = q
        .filter(messages::channel.eq(channel))
        .filter(messages::status.ne_all(NOT_SAID));
    // The conversation with one number: its messages only.
    q = if crate::senders::is_default_key(&sender.key) {
        q.filter(diesel::dsl::sql::<Bool>(
            "NOT EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = messages.id)",
        ))
    } else {
        q.filter(
            diesel::dsl::sql::<Bool>(
                "EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = messages.id \
                 AND ms.sender_id = ",
            )
            .bind::<Text, _>(sender.key.clone())
            .sql(")"),
        )
    };
    if let Some((at, id)) = cursor {
        q = q.filter(
            diesel::dsl::sql::<Bool>("(messages.created_at, messages.id) < (")
                .bind::<Timestamptz, _>(at)
                .sql(", ")
                .bind::<diesel::sql_types::Uuid, _>(id)
                .sql(")"),
        );
    }
    let mut rows: Vec<Message> = q
        .order((messages::created_at.desc(), messages::id.desc()))
        .limit(limit + 1)
        .select(Message::as_select())
        .load(c)
        .await?;
    let more = rows.len() as i64 > limit;
    rows.truncate(limit as usize);
    let next_before = if more {
        rows.last().map(|m| m.id.to_string())
    } else {
        None
    };
    let messages = render(c, &rows).await?;
    let conv = super::find(c, phone, channel, &sender.key).await?;
    Ok(HistoryPage {
        customer_id: phone.to_string(),
        channel: channel.to_string(),
        from: sender.id.clone(),
        holder: HolderView::of(conv.as_ref(), Utc::now()),
        messages,
        next_before,
    })
}

#[derive(QueryableByName)]
struct WamidId {
    #[diesel(sql_type = Text)]
    wamid: String,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: Uuid,
}

#[derive(QueryableByName)]
struct AmendRow {
    #[diesel(sql_type = Text)]
    target: String,
    #[diesel(sql_type = Jsonb)]
    content: Value,
    #[diesel(sql_type = Text)]
    direction: String,
}

/// Normalise `rows` and resolve their references: `context.id` and reactions to our
/// message ids, and the latest edit or a revoke of each inbound message applied.
async fn render(
    c: &mut AsyncPgConnection,
    rows: &[Message],
) -> Result<Vec<HistoryMessage>, CoreError> {
    let views: Vec<_> = rows.iter().map(|m| normalise(&m.content)).collect();
    let mut refs: Vec<String> = views
        .iter()
        .flat_map(|v| {
            v.context_wamid
                .iter()
                .chain(v.reaction.as_ref().and_then(|r| r.1.as_ref()))
                .cloned()
        })
        .collect();
    refs.sort();
    refs.dedup();
    let ids: HashMap<String, Uuid> = if refs.is_empty() {
        HashMap::new()
    } else {
        diesel::sql_query("SELECT wamid, id FROM messages WHERE wamid = ANY($1)")
            .bind::<Array<Text>, _>(&refs)
            .load::<WamidId>(c)
            .await?
            .into_iter()
            .map(|r| (r.wamid, r.id))
            .collect()
    };
    // The customer's messages and the echoes of a person's replies from the Business app
    // can be edited or revoked.
    let amendable: Vec<&str> = rows.iter().filter_map(|m| m.wamid.as_deref()).collect();
    // Edits and revokes of the page's messages, oldest first so the latest edit wins; an
    // amend counts only in its target's direction (the customer edits theirs, the person
    // in the app theirs). The expression matches `messages_amends_idx`.
    let directions: HashMap<&str, &str> = rows
        .iter()
        .filter_map(|m| Some((m.wamid.as_deref()?, m.direction.as_str())))
        .collect();
    let mut amends: HashMap<String, Amend> = HashMap::new();
    if !amendable.is_empty() {
        let found = diesel::sql_query(
            "SELECT COALESCE(content->'edit'->>'original_message_id', \
                             content->'revoke'->>'original_message_id') AS target, content, \
                    direction \
             FROM messages \
             WHERE message_type IN ('edit', 'revoke') \
               AND COALESCE(content->'edit'->>'original_message_id', \
                            content->'revoke'->>'original_message_id') = ANY($1) \
             ORDER BY created_at, id",
        )
        .bind::<Array<Text>, _>(&amendable)
        .load::<AmendRow>(c)
        .await?;
        for a in found {
            if directions.get(a.target.as_str()) != Some(&a.direction.as_str()) {
                continue;
            }
            if let Some((_, how)) = normalise(&a.content).amends {
                // A revoke is final; an edit after it changes nothing.
                if !matches!(amends.get(&a.target), Some(Amend::Revoke)) {
                    amends.insert(a.target, how);
                }
            }
        }
    }
    let outbound: Vec<Uuid> = rows
        .iter()
        .filter(|m| m.direction == "outbound")
        .map(|m| m.id)
        .collect();
    let mut sent_by = crate::send::attribution::sent_by(c, &outbound).await?;
    // Flow submissions: their token and flow message, resolved now.
    let submissions: Vec<Uuid> = rows
        .iter()
        .zip(&views)
        .filter(|(m, v)| v.flow.is_some() && m.direction == "inbound")
        .map(|(m, _)| m.id)
        .collect();
    let mut flows = crate::flows::responses::resolved(c, &submissions).await?;
    let our_id = |w: &Option<String>| w.as_ref().and_then(|w| ids.get(w)).map(|id| id.to_string());
    Ok(rows
        .iter()
        .zip(views)
        .map(|(m, v)| {
            let amend = m.wamid.as_ref().and_then(|w| amends.get(w));
            let (text, media, edited, deleted) = match amend {
                Some(Amend::Revoke) => (None, None, false, true),
                Some(Amend::Edit { text }) => (text.clone(), v.media, true, false),
                None => (v.text, v.media, false, false),
            };
            let failed = m.status == "failed";
            HistoryMessage {
                message_id: m.id.to_string(),
                wamid: m.wamid.clone(),
                direction: m.direction.clone(),
                kind: if v.kind == "unsupported" && m.direction == "outbound" {
                    // Ours always has a known kind; keep the stored one.
                    m.message_type.clone()
                } else {
                    v.kind.to_string()
                },
                text,
                media,
                reply_to: our_id(&v.context_wamid),
                reaction: v.reaction.map(|(emoji, to)| Reaction {
                    emoji,
                    to_message_id: our_id(&to),
                }),
                location: if deleted { None } else { v.location },
                interactive: v.interactive,
                flow_response: v.flow.map(|f| {
                    let (token, flow_message) = flows.remove(&m.id).unwrap_or_default();
                    FlowResponseView {
                        flow_token: token.or(f.flow_token),
                        response: if m.redacted_at.is_some() {
                            Default::default()
                        } else {
                            f.response
                        },
                        parse_error: f.parse_error && m.redacted_at.is_none(),
                        flow_message_id: flow_message
                            .map(|id| id.to_string())
                            .or_else(|| our_id(&v.context_wamid)),
                    }
                }),
                referral: v.referral,
                contacts: if deleted { None } else { v.contacts },
                order: if deleted { None } else { v.order },
                referred_product: v.referred_product,
                edited,
                deleted,
                redacted: m.redacted_at.is_some(),
                status: public_status(&m.status).to_string(),
                sent_by: sent_by.remove(&m.id),
                created_at: rfc3339(m.created_at),
                platform_timestamp: (m.direction == "inbound")
                    .then_some(v.timestamp)
                    .flatten()
                    .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0))
                    .map(rfc3339),
                error: failed.then(|| HistoryError {
                    code: m.error_code,
                    category: m.error_category.clone(),
                    human_explanation: m.error_explanation.clone(),
                }),
            }
        })
        .collect())
}

#[derive(QueryableByName)]
struct InboxRow {
    #[diesel(sql_type = Text)]
    customer_phone: String,
    #[diesel(sql_type = Text)]
    sender_id: String,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    last_inbound_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Timestamptz)]
    latest_at: DateTime<Utc>,
    #[diesel(sql_type = Jsonb)]
    latest_content: Value,
    #[diesel(sql_type = BigInt)]
    unanswered: i64,
    #[diesel(sql_type = Nullable<Text>)]
    holder: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    holder_since: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    holder_by: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    holder_until: Option<DateTime<Utc>>,
    /// Every row of the inbox, not only this page's.
    #[diesel(sql_type = BigInt)]
    total: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Customers (not archived) of conversations on `channel` whose latest message that was
/// said is theirs: the newest inbound rows since our last accepted outbound message.
/// The platform's own `system` messages (e.g. a number change) wait for no answer.
/// Most urgent first: open windows closing soonest, then closed ones, newest first.
/// With `$3` senders' stored keys, those numbers' conversations only.
static INBOX_FROM: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "FROM conversations c \
    CROSS JOIN LATERAL ( \
        SELECT m.direction, m.created_at, m.content FROM messages m \
        WHERE m.customer_phone = c.customer_phone AND m.channel = c.channel \
          AND m.status <> ALL($2) AND m.message_type <> 'system' AND {} \
        ORDER BY m.created_at DESC, m.id DESC LIMIT 1) latest \
    WHERE c.channel = $1 AND c.archived_at IS NULL AND latest.direction = 'inbound' \
      AND ($3::text[] IS NULL OR c.sender_id = ANY($3))",
        crate::senders::message_of_sender("m", "c.sender_id")
    )
});

/// The inbox page: `limit` customers from `offset`.
pub async fn inbox(
    c: &mut AsyncPgConnection,
    channel: &str,
    senders: &warden_settings::Senders,
    only: Option<&[String]>,
    limit: i64,
    offset: i64,
    now: DateTime<Utc>,
) -> Result<InboxPage, CoreError> {
    let not_said: Vec<&str> = NOT_SAID.to_vec();
    let only_key = only.map(<[String]>::to_vec);
    // The total comes with the page (a window count over the same rows): reading every
    // conversation's latest message twice, once to count and once for the page, was half
    // the console's inbox time with 10,000 waiting (console-bench).
    let rows: Vec<InboxRow> = diesel::sql_query(format!(
        "SELECT c.customer_phone, c.sender_id, c.last_inbound_at, latest.created_at AS latest_at, \
                latest.content AS latest_content, \
                (SELECT count(*) FROM messages u \
                  WHERE u.customer_phone = c.customer_phone AND u.channel = c.channel \
                    AND u.direction = 'inbound' AND u.message_type <> 'system' AND {u_of} \
                    AND u.created_at > COALESCE((SELECT max(o.created_at) FROM messages o \
                        WHERE o.customer_phone = c.customer_phone AND o.channel = c.channel \
                          AND o.direction = 'outbound' AND o.status <> ALL($2) AND {o_of}), \
                        '-infinity')) AS unanswered, \
                c.holder, c.holder_since, c.holder_by, c.holder_until, count(*) OVER () AS total \
         {from} \
         ORDER BY (c.window_expires_at > $4) DESC, c.window_expires_at ASC NULLS LAST, \
                  latest.created_at DESC, c.customer_phone \
         LIMIT $5 OFFSET $6",
        u_of = crate::senders::message_of_sender("u", "c.sender_id"),
        o_of = crate::senders::message_of_sender("o", "c.sender_id"),
        from = *INBOX_FROM,
    ))
    .bind::<Text, _>(channel)
    .bind::<Array<Text>, _>(&not_said)
    .bind::<Nullable<Array<Text>>, _>(only_key.clone())
    .bind::<Timestamptz, _>(now)
    .bind::<BigInt, _>(limit)
    .bind::<BigInt, _>(offset)
    .load(c)
    .await?;
    let total = match <[InboxRow]>::first(&rows) {
        Some(r) => r.total,
        // A page past the end (or an empty one): counted on its own; no row, nobody waits.
        None if offset > 0 || limit <= 0 => {
            diesel::sql_query(format!("SELECT count(*) AS n {}", *INBOX_FROM))
                .bind::<Text, _>(channel)
                .bind::<Array<Text>, _>(&not_said)
                .bind::<Nullable<Array<Text>>, _>(only_key)
                .get_result::<Count>(c)
                .await?
                .n
        }
        None => 0,
    };
    let items = rows
        .into_iter()
        .map(|r| {
            let state = WindowState::at(r.last_inbound_at, now);
            let holder = super::holder::from_columns(
                r.holder.as_deref(),
                r.holder_since,
                r.holder_by.clone(),
                r.holder_until,
                r.last_inbound_at,
                now,
            );
            let latest = normalise(&r.latest_content);
            // When the customer wrote: the platform's time (the window counts from it),
            // not when Warden stored the webhook (a retried webhook arrives minutes later).
            let wrote_at = latest
                .timestamp
                .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0))
                .unwrap_or(r.latest_at);
            InboxItem {
                customer_id: r.customer_phone,
                from: senders.id_of_key(&r.sender_id).to_string(),
                last_inbound_at: rfc3339(wrote_at),
                last_inbound_text: latest.text,
                last_inbound_kind: latest.kind.to_string(),
                unanswered_count: r.unanswered,
                window_open: state.open,
                time_remaining_secs: state.time_remaining_secs,
                holder: HolderView::from(&holder),
            }
        })
        .collect();
    Ok(InboxPage {
        items,
        total,
        limit,
        offset,
    })
}
