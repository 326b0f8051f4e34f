//! A customer's flow submission (an inbound `nfm_reply`), indexed when the webhook stores
//! it: which number, which token, which flow message. Called from the inbound rule
//! (`platform_events::inbound`) in the webhook's transaction, after the message rows.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;

/// One submission of a webhook batch.
pub struct Submission<'a> {
    /// The inbound message's wamid (its row is already stored).
    pub wamid: &'a str,
    /// The stored key of the number it was written to.
    pub sender: &'a str,
    /// The customer's key.
    pub customer: &'a str,
    /// `context.id`: the wamid of the flow message it answers.
    pub context_wamid: Option<&'a str>,
    /// `nfm_reply.response_json` as received (a JSON string, normally).
    pub response_json: Option<&'a Value>,
    pub at: DateTime<Utc>,
}

/// Index `s`: its token (from the answers, else the flow message's) and its flow message
/// (by the context wamid, else by the token among this customer's flow messages), each
/// null when not known yet. Once per inbound message: a replayed webhook changes nothing.
pub async fn record(c: &mut AsyncPgConnection, s: &Submission<'_>) -> QueryResult<()> {
    let token = warden_rules::rich::flow::read_submission(s.response_json).flow_token;
    diesel::sql_query(format!(
        "WITH m AS (SELECT id FROM messages WHERE wamid = $1 AND direction = 'inbound' LIMIT 1), \
              flow AS ({FLOW_MESSAGE}) \
         INSERT INTO flow_responses \
             (message_id, sender_id, flow_token, context_wamid, flow_message_id, received_at) \
         SELECT m.id, $2, COALESCE($3, (SELECT fs.flow_token FROM flow_sends fs, flow \
                                         WHERE fs.message_id = flow.id)), \
                $4, (SELECT id FROM flow), $6 \
         FROM m \
         ON CONFLICT (message_id) DO NOTHING"
    ))
    .bind::<Text, _>(s.wamid)
    .bind::<Text, _>(s.sender)
    .bind::<Nullable<Text>, _>(token.as_deref())
    .bind::<Nullable<Text>, _>(s.context_wamid)
    .bind::<Text, _>(s.customer)
    .bind::<Timestamptz, _>(s.at)
    .execute(c)
    .await?;
    Ok(())
}

/// The flow message a submission answers, from `$4` (context wamid), `$3` (token) and `$5`
/// (customer): ours by its wamid, else this customer's newest flow message with the token.
pub(super) const FLOW_MESSAGE: &str = "\
    SELECT id FROM ( \
        (SELECT o.id, 0 AS pick FROM messages o \
          WHERE $4::text IS NOT NULL AND o.wamid = $4 AND o.direction = 'outbound' LIMIT 1) \
        UNION ALL \
        (SELECT fs.message_id, 1 FROM flow_sends fs JOIN messages o ON o.id = fs.message_id \
          WHERE $3::text IS NOT NULL AND fs.flow_token = $3 AND o.customer_phone = $5 \
          ORDER BY fs.created_at DESC LIMIT 1)) found \
    ORDER BY pick LIMIT 1";
