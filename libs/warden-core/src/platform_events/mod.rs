//! The platform's webhook events, applied: what each kind of event does to Warden's state,
//! one module per family, inside the caller's transaction (one per webhook POST). The
//! webhook crate verifies, parses and de-duplicates the events, hands them over as
//! [`Event`]s and acts on the [`Effects`] after its commit.
//!
//! - [`inbound`]: customers' messages (identities linked, messages stored per number, the
//!   care window; a changed number or BSUID; a STOP keyword).
//! - [`calls`]: a customer's answer to a call permission request.
//! - [`statuses`]: delivery statuses of outbound messages and what the platform charged.
//! - [`templates`]: a template's review decisions and the platform's later changes.
//! - [`account`]: display numbers, quality and messaging-limit updates (a flagged number's
//!   protection).
//! - [`opt_outs`]: STOP keywords and marketing preferences.
//! - [`shared_numbers`]: echoes, handovers and standby copies of a number shared with
//!   another app.
//! - [`kept`]: each event applied once (its key), quality updates as they came, how far
//!   status webhooks have got.
//!
//! [`apply`] runs a POST's new events in an order that matters: display numbers are learnt
//! first (a quality update later in the POST can already be matched by them); every inbound
//! sender's identifiers are linked before any message is stored (so every row is keyed by
//! the customer's key, whatever identifier the webhook carried); statuses that only move
//! messages forward are applied together; then each event in the order the platform sent
//! it; pricing and quality rows last, one statement each.

pub mod account;
pub mod calls;
pub mod inbound;
pub mod kept;
pub mod opt_outs;
pub mod shared_numbers;
pub mod statuses;
pub mod templates;

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, TimeDelta, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use uuid::Uuid;
use warden_settings::{Sender, Senders, StoreKeys};
use warden_store::models::Conversation;

use crate::Core;
use crate::conversations::inbound::NoWindow;
use crate::delivery::platform_errors::RetryPolicy;

pub use kept::{CAPABILITY_EVENT, claim_keys, record_status_progress};

/// The channel webhook events arrive on.
const CHANNEL: &str = warden_settings::DEFAULT_CHANNEL;

/// Where an event comes from: the business number it names (`metadata.phone_number_id`)
/// and its display number, and the business account of its entry.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    pub number: Option<&'a str>,
    pub account: &'a str,
    pub display: Option<&'a str>,
}

impl<'a> Origin<'a> {
    /// The sender it is about: its number's, else (events that name no number) the first
    /// sender of its business account, else the default.
    pub fn sender<'s>(&self, senders: &'s Senders) -> &'s Sender
    where
        'a: 's,
    {
        self.number
            .and_then(|n| senders.by_phone_number_id(n))
            .or_else(|| senders.of_business(self.account).next())
            .unwrap_or(senders.default())
    }

    /// The stored keys of [`Origin::sender`].
    pub fn keys(&self, senders: &Senders) -> StoreKeys {
        senders.key_of(self.sender(senders))
    }

    /// The stored key of the portfolio its sender belongs to.
    pub fn portfolio<'s>(&self, senders: &'s Senders) -> &'s str
    where
        'a: 's,
    {
        senders.portfolio_key(self.sender(senders))
    }
}

/// One event, as parsed by the webhook.
#[derive(Clone, Debug)]
pub struct Event<'a> {
    pub origin: Origin<'a>,
    pub body: Body<'a>,
}

#[derive(Clone, Debug)]
pub enum Body<'a> {
    Inbound(inbound::InboundMessage<'a>),
    Status(statuses::StatusReport<'a>),
    TemplateStatus(templates::TemplateReview<'a>),
    Preference(opt_outs::Preference<'a>),
    Quality(account::QualityReport<'a>),
    TemplateChange(templates::TemplateChanged<'a>),
    Echo(shared_numbers::EchoReport<'a>),
    Handover(shared_numbers::HandoverReport<'a>),
    Standby(shared_numbers::StandbyReport<'a>),
}

/// What a batch needs besides its events.
pub struct Context<'a> {
    pub senders: &'a Senders,
    /// How long a person's echo makes them the holder (`HUMAN_TAKEOVER_TTL`).
    pub takeover_ttl: TimeDelta,
    /// The dispatcher's retry bound and backoff: a failed status's retry follows it.
    pub retry: &'a RetryPolicy,
    /// Who the audit log names.
    pub actor: &'a str,
}

impl<'a> Context<'a> {
    pub fn new(core: &'a Core, retry: &'a RetryPolicy, actor: &'a str) -> Self {
        Context {
            senders: core.senders(),
            takeover_ttl: TimeDelta::from_std(core.settings().human_takeover_ttl)
                .unwrap_or(TimeDelta::minutes(30)),
            retry,
            actor,
        }
    }
}

/// (customer, sender key) conversations whose gateways to wake after the commit.
pub type Hints = HashSet<(String, String)>;

/// What a batch's events ask of the caller once the transaction committed.
#[derive(Debug, Default)]
pub struct Effects {
    /// The newest conversation row per (customer, sender key), for the window cache.
    pub windows: HashMap<(String, String), Conversation>,
    /// Inbound messages stored without opening or extending a window, by reason.
    pub no_window: HashMap<NoWindow, u64>,
    /// The newest platform timestamp among the batch's status events.
    pub status_through: Option<DateTime<Utc>>,
    /// Messages put back in the queue by a failed status: to publish.
    pub requeued: Vec<Uuid>,
    /// Conversations with a new inbound message, an outbound message that moved, a holder
    /// (or history, by an echo) that changed.
    pub hint_inbound: Hints,
    pub hint_status: Hints,
    pub hint_holder: Hints,
    /// Business accounts with quality updates kept until the platform says whose number
    /// they are, and senders whose rating to read again.
    pub ask_accounts: HashSet<String>,
    pub ask_senders: HashSet<String>,
}

impl Effects {
    pub fn merge(&mut self, other: Effects) {
        self.windows.extend(other.windows);
        for (reason, n) in other.no_window {
            *self.no_window.entry(reason).or_default() += n;
        }
        self.status_through = self.status_through.max(other.status_through);
        self.requeued.extend(other.requeued);
        self.hint_inbound.extend(other.hint_inbound);
        self.hint_status.extend(other.hint_status);
        self.hint_holder.extend(other.hint_holder);
        self.ask_accounts.extend(other.ask_accounts);
        self.ask_senders.extend(other.ask_senders);
    }
}

/// Apply a POST's new events (in the order the platform sent them) in the caller's
/// transaction; returns, per event, whether it changed anything (false: acknowledged
/// without effect, e.g. the status of an unknown message).
pub async fn apply<'a>(
    c: &mut AsyncPgConnection,
    ctx: &Context<'a>,
    events: &'a [Event<'a>],
    effects: &mut Effects,
) -> QueryResult<Vec<bool>> {
    account::learn_displays(c, ctx.senders, events).await?;
    let mut keys = inbound::record(c, ctx, events, effects).await?.into_iter();
    let mut statuses = statuses::Batch::load(c, events, effects).await?;
    let mut quality = account::Quality::default();
    let mut applied = Vec::with_capacity(events.len());
    for event in events {
        let origin = event.origin;
        let business = || origin.keys(ctx.senders).business;
        applied.push(match &event.body {
            Body::Inbound(m) => {
                let key = keys.next().expect("one key per inbound message");
                inbound::apply(c, ctx, origin, m, &key, effects).await?;
                true
            }
            Body::Status(s) => statuses.apply_next(c, ctx, origin, s, effects).await?,
            Body::TemplateStatus(t) => {
                templates::apply_status(c, &business(), t, ctx.actor).await?
            }
            Body::Preference(p) => opt_outs::preference(c, &business(), p, ctx.actor).await?,
            Body::TemplateChange(t) => {
                templates::apply_change(c, &business(), t, ctx.actor).await?
            }
            Body::Echo(e) => shared_numbers::echo(c, ctx, origin, e, Utc::now(), effects).await?,
            Body::Handover(h) => {
                shared_numbers::handover(c, ctx, origin, h, Utc::now(), effects).await?
            }
            Body::Standby(s) => {
                shared_numbers::standby(c, ctx, origin, s, Utc::now(), effects).await?
            }
            Body::Quality(q) => quality.apply(c, ctx, origin, q, effects).await?,
        });
    }
    statuses.finish(c).await?;
    quality.finish(c).await?;
    Ok(applied)
}
