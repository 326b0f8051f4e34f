//! Customers' messages: every sender's identifiers linked (`customers::identity::link`), the
//! messages stored per number in one statement each (`conversations::inbound_batch`: only
//! plausible customer messages open a window), a routed number's thread taken back
//! (`conversations::holder::routed_inbound`); then, in each message's place among the
//! batch's events, what it says: a changed number or BSUID, a STOP keyword. A Flow
//! submission (an interactive `nfm_reply`) is a customer message like any other, and besides
//! is indexed for get_flow_responses (`crate::flows::submissions`); what it says is never
//! refused: answers that are not JSON are kept raw, and a flow message or token not known
//! yet is resolved when read.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::Value;
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;

use super::{Body, CHANNEL, Context, Effects, Event, Origin, opt_outs};
use crate::conversations::inbound::NoWindow;
use crate::conversations::inbound_batch::{self, Inbound};
use crate::conversations::{holder, message_view};
use crate::customers::{identity, number_change};

/// A message a customer sent.
#[derive(Clone, Debug)]
pub struct InboundMessage<'a> {
    pub wamid: &'a str,
    /// The customer as the webhook names it: the phone when it carries one, else the BSUID.
    pub phone: &'a PhoneNumber,
    /// Every identifier the webhook carries for the sender.
    pub identity: &'a identity::Identity,
    /// Its own platform time (plausible), else arrival.
    pub at: DateTime<Utc>,
    /// When it opens or extends the care window, or why it opens none.
    pub window: Result<DateTime<Utc>, NoWindow>,
    /// `text`, `button`, `image`, ..., `system`.
    pub message_type: &'a str,
    /// The message as received, stored as the row's content.
    pub content: &'a Value,
    /// A stop / resume keyword it carries.
    pub keyword: Option<OptChange>,
    /// A flow submission it carries (`interactive.nfm_reply`).
    pub flow: Option<FlowReply<'a>>,
    /// The answer to a call permission request it carries (`call_permission_reply`).
    pub call_permission: Option<crate::calls::Reply>,
}

/// What the webhook read of a Flow submission (`warden-webhook`'s `events/flows.rs`).
#[derive(Clone, Copy, Debug)]
pub struct FlowReply<'a> {
    /// `nfm_reply.response_json` as received (normally a string holding JSON).
    pub response_json: Option<&'a Value>,
    /// `context.id`: the wamid of the flow message answered.
    pub context_wamid: Option<&'a str>,
}

/// Link the identifiers of every inbound message among `events` and store them all; returns
/// each message's customer key, in order.
pub async fn record(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    events: &[Event<'_>],
    effects: &mut Effects,
) -> QueryResult<Vec<PhoneNumber>> {
    let messages: Vec<(Origin, &InboundMessage)> = events
        .iter()
        .filter_map(|e| match &e.body {
            Body::Inbound(m) => Some((e.origin, m)),
            _ => None,
        })
        .collect();
    // A phone and a BSUID seen together name one customer (merging two records when both
    // exist), so everything below is keyed by the customer's key.
    let mut keys = Vec::with_capacity(messages.len());
    for (origin, m) in &messages {
        let portfolio = origin.portfolio(ctx.senders);
        let linked = identity::link(c, portfolio, m.identity, m.at, ctx.actor).await?;
        keys.push(linked.unwrap_or_else(|| m.phone.clone()));
    }
    // One statement per number written to (the window is the number's).
    let mut by_sender: BTreeMap<String, (StoreKeys, Vec<Inbound>)> = BTreeMap::new();
    for ((origin, m), key) in messages.iter().zip(&keys) {
        let keys = origin.keys(ctx.senders);
        by_sender
            .entry(keys.sender.clone())
            .or_insert_with(|| (keys, Vec::new()))
            .1
            .push(Inbound {
                phone: key,
                wamid: m.wamid,
                message_type: m.message_type,
                content: m.content,
                window: m.window,
            });
    }
    for (keys, inbound) in by_sender.values() {
        let recorded = inbound_batch::record(c, CHANNEL, keys, inbound).await?;
        // On a routed number a message that reached us means the thread is ours.
        let phones: Vec<&str> = inbound.iter().map(|i| i.phone.digits()).collect();
        let moved =
            holder::routed_inbound(c, CHANNEL, &keys.sender, &phones, ctx.actor, Utc::now())
                .await?;
        effects
            .hint_holder
            .extend(moved.into_iter().map(|phone| (phone, keys.sender.clone())));
        for (reason, n) in recorded.no_window {
            *effects.no_window.entry(reason).or_default() += n;
        }
        for conv in recorded.windows {
            effects
                .windows
                .insert((conv.customer_phone.clone(), conv.sender_id.clone()), conv);
        }
    }
    // Flow submissions, indexed once their message rows exist.
    for ((origin, m), key) in messages.iter().zip(&keys) {
        if let Some(reply) = &m.flow {
            let sender = origin.keys(ctx.senders).sender;
            let submission = crate::flows::submissions::Submission {
                wamid: m.wamid,
                sender: &sender,
                customer: key.digits(),
                context_wamid: reply.context_wamid,
                response_json: reply.response_json,
                at: m.at,
            };
            crate::flows::submissions::record(c, &submission).await?;
        }
    }
    Ok(keys)
}

/// What the message of the customer keyed `key` says, in its place among the batch's events.
pub async fn apply(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    origin: Origin<'_>,
    m: &InboundMessage<'_>,
    key: &PhoneNumber,
    effects: &mut Effects,
) -> QueryResult<()> {
    let keys = origin.keys(ctx.senders);
    effects
        .hint_inbound
        .insert((key.digits().to_string(), keys.sender.clone()));
    if m.message_type == "system" {
        changed_number(c, origin.portfolio(ctx.senders), m, key, ctx.actor).await?;
    }
    if let Some(change) = m.keyword {
        opt_outs::stop_keyword(c, &keys.business, key, change, m.at, ctx.actor).await?;
    }
    if let Some(reply) = &m.call_permission {
        super::calls::reply(c, &keys.sender, key, reply, (m.at, m.wamid), ctx.actor).await?;
    }
    Ok(())
}

/// A "user changed number" system message (sent from the old number, naming the new
/// one): the new number inherits the old one's opt-outs and continues its history.
/// A "user changed BSUID" system message (`user_changed_user_id`, naming the new BSUID
/// in `system.user_id`): the customer keeps its key and every opt-out, and takes the new
/// BSUID.
async fn changed_number(
    c: &mut AsyncPgConnection,
    portfolio: &str,
    m: &InboundMessage<'_>,
    key: &PhoneNumber,
    actor: &str,
) -> QueryResult<()> {
    let system = m.content.get("system");
    if system.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("user_changed_user_id") {
        let new = system
            .and_then(|s| s.get("user_id").or_else(|| s.get("new_user_id")))
            .and_then(Value::as_str)
            .and_then(|u| warden_rules::bsuid::parse(u).ok());
        match new {
            Some(new) => identity::change_bsuid(c, portfolio, key, &new, m.at, actor).await?,
            None => tracing::info!(wamid = %m.wamid, "BSUID change names no valid new BSUID"),
        }
        return Ok(());
    }
    let Some(new) = message_view::normalise(m.content).new_number else {
        return Ok(());
    };
    match warden_rules::phone::canonicalize(&new) {
        Ok(new) => {
            number_change::link(c, key, &new, m.at, actor).await?;
        }
        Err(_) => tracing::info!(wamid = %m.wamid, "number change names no valid new number"),
    }
    Ok(())
}
