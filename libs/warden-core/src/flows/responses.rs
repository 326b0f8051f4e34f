//! get_flow_responses: customers' flow submissions, newest first, filtered by flow token,
//! customer or flow message, within the caller's senders. Read-only: a token or a flow
//! message unknown when the submission arrived is resolved here, on every read.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Bool, Jsonb, Nullable, Text, Timestamptz};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::RunQueryDsl;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::{Core, CoreError};

/// The most responses one read returns.
pub const MAX_LIMIT: i64 = 100;

/// What to read: at least one filter (the tool refuses a read without).
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub flow_token: Option<String>,
    /// The customer's key.
    pub customer: Option<String>,
    /// The flow message answered (or a submission's own message id).
    pub message_id: Option<Uuid>,
    /// The sender named by `from` (its stored key); `None`: every sender in reach.
    pub sender: Option<String>,
}

/// One submission as get_flow_responses shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowResponse {
    /// The submission's own message id (an inbound message).
    pub message_id: Uuid,
    pub flow_token: Option<String>,
    /// The customer's key.
    pub customer: String,
    /// The stored key of the number it was written to.
    pub sender: String,
    pub received_at: DateTime<Utc>,
    /// The answers (`{"raw": text}` when they were not a JSON object); empty once the
    /// message's content was erased.
    pub response: Map<String, Value>,
    pub parse_error: bool,
    /// Our message id of the flow message it answers; `None` when it is not one we know.
    pub flow_message_id: Option<Uuid>,
}

#[derive(QueryableByName)]
struct Row {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    message_id: Uuid,
    #[diesel(sql_type = Nullable<Text>)]
    flow_token: Option<String>,
    #[diesel(sql_type = Text)]
    customer_phone: String,
    #[diesel(sql_type = Text)]
    sender_id: String,
    #[diesel(sql_type = Timestamptz)]
    received_at: DateTime<Utc>,
    #[diesel(sql_type = Jsonb)]
    content: Value,
    #[diesel(sql_type = Bool)]
    redacted: bool,
    #[diesel(sql_type = Nullable<diesel::sql_types::Uuid>)]
    flow_message_id: Option<Uuid>,
}

/// Every stored submission with its flow message and token resolved now: what was known
/// when it arrived, else the context wamid's message (its wamid may have been recorded
/// since), else this customer's newest flow message with the token.
const RESOLVED: &str = "\
    SELECT r.message_id, r.sender_id, r.received_at, r.context_wamid, m.customer_phone, \
           m.created_at, \
           m.content, (m.redacted_at IS NOT NULL) AS redacted, \
           COALESCE(r.flow_message_id, ctx.id, tok.message_id) AS flow_message_id, \
           COALESCE(r.flow_token, (SELECT fs.flow_token FROM flow_sends fs \
                                    WHERE fs.message_id = COALESCE(r.flow_message_id, ctx.id))) \
             AS flow_token \
    FROM flow_responses r \
    JOIN messages m ON m.id = r.message_id \
    LEFT JOIN LATERAL (SELECT o.id FROM messages o \
        WHERE r.flow_message_id IS NULL AND r.context_wamid IS NOT NULL \
          AND o.wamid = r.context_wamid AND o.direction = 'outbound' LIMIT 1) ctx ON true \
    LEFT JOIN LATERAL (SELECT fs.message_id FROM flow_sends fs JOIN messages o ON o.id = fs.message_id \
        WHERE r.flow_message_id IS NULL AND r.flow_token IS NOT NULL \
          AND fs.flow_token = r.flow_token AND o.customer_phone = m.customer_phone \
        ORDER BY fs.created_at DESC LIMIT 1) tok ON true";

/// Submissions matching `filter` in the caller's reach, newest first, at most `limit`.
/// A `message_id` outside the reach answers `NotFound`, as a missing one does.
pub async fn read(
    core: &Core,
    filter: &Filter,
    limit: i64,
) -> Result<Vec<FlowResponse>, CoreError> {
    let mut conn = core.pg().get().await?;
    if let Some(id) = filter.message_id {
        // A message that does not exist answers as one outside the reach does.
        let exists = warden_store::models::Message::find(&mut conn, id)
            .await?
            .is_some();
        if !exists {
            return Err(CoreError::NotFound(format!(
                "there is no message with id {id}"
            )));
        }
        core.admit_message(&mut conn, id).await?;
    }
    let keys = core.keys_to_read(filter.sender.as_deref());
    // The filters narrow the stored rows first (by their indexes), then hold on the
    // resolved values: a token or flow message may be known only now.
    let rows: Vec<Row> = diesel::sql_query(format!(
        "SELECT * FROM ({RESOLVED} \
            WHERE ($1::text[] IS NULL OR r.sender_id = ANY($1)) \
              AND ($2::text IS NULL OR r.flow_token = $2 \
                   OR (r.flow_token IS NULL AND r.context_wamid IN ( \
                        SELECT o.wamid FROM flow_sends fs JOIN messages o ON o.id = fs.message_id \
                        WHERE fs.flow_token = $2 AND o.wamid IS NOT NULL))) \
              AND ($3::text IS NULL OR r.message_id IN ( \
                        SELECT i.id FROM messages i WHERE i.customer_phone = $3 \
                          AND i.direction = 'inbound')) \
              AND ($4::uuid IS NULL OR r.message_id = $4 OR r.flow_message_id = $4 \
                   OR r.flow_message_id IS NULL)) x \
         WHERE ($2::text IS NULL OR x.flow_token = $2) \
           AND ($4::uuid IS NULL OR x.message_id = $4 OR x.flow_message_id = $4) \
         ORDER BY x.received_at DESC, x.created_at DESC, x.message_id DESC \
         LIMIT $5"
    ))
    .bind::<Nullable<Array<Text>>, _>(keys)
    .bind::<Nullable<Text>, _>(filter.flow_token.as_deref())
    .bind::<Nullable<Text>, _>(filter.customer.as_deref())
    .bind::<Nullable<diesel::sql_types::Uuid>, _>(filter.message_id)
    .bind::<BigInt, _>(limit.clamp(1, MAX_LIMIT))
    .load(&mut conn)
    .await?;
    Ok(rows.into_iter().map(response_of).collect())
}

fn response_of(r: Row) -> FlowResponse {
    let (response, parse_error) = if r.redacted {
        (Map::new(), false)
    } else {
        let s = warden_rules::rich::flow::read_submission(response_json(&r.content));
        (s.response, s.parse_error)
    };
    FlowResponse {
        message_id: r.message_id,
        flow_token: r.flow_token,
        customer: r.customer_phone,
        sender: r.sender_id,
        received_at: r.received_at,
        response,
        parse_error,
        flow_message_id: r.flow_message_id,
    }
}

/// `interactive.nfm_reply.response_json` of a stored inbound message.
pub fn response_json(content: &Value) -> Option<&Value> {
    content.pointer("/interactive/nfm_reply/response_json")
}

/// The flow token and flow message of each submission among `ids` (inbound message ids),
/// resolved now: what history shows beside each flow response.
pub async fn resolved(
    conn: &mut diesel_async::AsyncPgConnection,
    ids: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, (Option<String>, Option<Uuid>)>, CoreError> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let rows: Vec<Row> = diesel::sql_query(format!("{RESOLVED} WHERE r.message_id = ANY($1)"))
        .bind::<Array<diesel::sql_types::Uuid>, _>(ids)
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.message_id, (r.flow_token, r.flow_message_id)))
        .collect())
}

/// The flow token stored for message `message_id` (what an idempotent replay of a flow
/// send answers).
pub async fn token_of_message(core: &Core, message_id: Uuid) -> Result<Option<String>, CoreError> {
    #[derive(QueryableByName)]
    struct Token {
        #[diesel(sql_type = Text)]
        flow_token: String,
    }
    let mut conn = core.pg().get().await?;
    let found: Option<Token> =
        diesel::sql_query("SELECT flow_token FROM flow_sends WHERE message_id = $1")
            .bind::<diesel::sql_types::Uuid, _>(message_id)
            .get_result(&mut conn)
            .await
            .optional()?;
    Ok(found.map(|t| t.flow_token))
}

/// A flow submission as history, the inbox's resource and get_flow_responses show it
/// beside the message.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct FlowResponseView {
    /// The token the flow message carried (from the answers, else from the flow message).
    pub flow_token: Option<String>,
    /// The answers: the flow's response_json parsed; {"raw": "..."} when it was not a JSON object.
    pub response: Map<String, Value>,
    /// True when response_json was not a JSON object (kept raw in `response.raw`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parse_error: bool,
    /// Our message_id of the flow message answered; null when it is not one Warden sent.
    pub flow_message_id: Option<String>,
}
