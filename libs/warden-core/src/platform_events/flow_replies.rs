//! A customer's flow submission (an inbound `interactive.type "nfm_reply"`): a customer
//! message like any other (stored, and opening the window, by [`super::inbound`]), and
//! besides indexed for get_flow_responses (`crate::flows::submissions`). What it says is
//! never refused: answers that are not JSON are kept raw, and a flow message or token that
//! is not known yet is resolved when read.

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::Value;
use warden_rules::phone::PhoneNumber;

use super::inbound::InboundMessage;
use crate::flows::submissions::{self, Submission};

/// What the webhook read of a submission (`warden-webhook`'s `events/flows.rs`).
#[derive(Clone, Copy, Debug)]
pub struct FlowReply<'a> {
    /// `nfm_reply.response_json` as received (normally a string holding JSON).
    pub response_json: Option<&'a Value>,
    /// `context.id`: the wamid of the flow message answered.
    pub context_wamid: Option<&'a str>,
}

/// Index the submission `m` carries, written to the number stored as `sender` by the
/// customer keyed `key`.
pub async fn record(
    c: &mut AsyncPgConnection,
    sender: &str,
    key: &PhoneNumber,
    m: &InboundMessage<'_>,
    reply: &FlowReply<'_>,
) -> QueryResult<()> {
    submissions::record(
        c,
        &Submission {
            wamid: m.wamid,
            sender,
            customer: key.digits(),
            context_wamid: reply.context_wamid,
            response_json: reply.response_json,
            at: m.at,
        },
    )
    .await
}
