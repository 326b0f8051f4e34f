//! The webhooks of a shared number (`crate::conversations::{echoes, holder}`): a message
//! echo is stored in the history and makes the person the holder until
//! `HUMAN_TAKEOVER_TTL` after it; a handover gives the thread to the agents
//! (`control_passed`) or to another app (`control_taken`); a standby copy says another app
//! owns it. A handover or a standby copy marks its number as routed. None of them opens a
//! window or is read for STOP.

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::Value;
use warden_rules::holder::{HolderKind, IDLE_AFTER};
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;

use super::{CHANNEL, Context, Effects, Hints, Origin};
use crate::conversations::echoes::{self, Echo};
use crate::conversations::holder::{self, Change, Changed};
use crate::customers::identity;

/// A person's message from the WhatsApp Business app.
#[derive(Clone, Debug)]
pub struct EchoReport<'a> {
    /// The customer it went to (the phone, else the BSUID).
    pub phone: &'a PhoneNumber,
    pub wamid: &'a str,
    /// `text`, `image`, ..., `edit`, `revoke`.
    pub message_type: &'a str,
    /// The echo as received, stored as the message row's content.
    pub content: &'a Value,
    pub at: DateTime<Utc>,
}

/// Who owns a thread now, as a handover says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handover {
    /// Passed to us: the agents hold it.
    Passed,
    /// Taken from us: another app holds it.
    Taken,
}

impl Handover {
    pub fn as_str(self) -> &'static str {
        match self {
            Handover::Passed => "control_passed",
            Handover::Taken => "control_taken",
        }
    }
}

/// A `messaging_handovers` notification.
#[derive(Clone, Debug)]
pub struct HandoverReport<'a> {
    pub phone: &'a PhoneNumber,
    pub handover: Handover,
    /// The roles the platform names (e.g. `ai_agent`, `app`), for the audit log.
    pub previous_role: Option<&'a str>,
    pub new_role: Option<&'a str>,
    pub at: DateTime<Utc>,
}

/// A standby copy: another app owns the thread with this customer.
#[derive(Clone, Debug)]
pub struct StandbyReport<'a> {
    pub phone: &'a PhoneNumber,
    pub at: DateTime<Utc>,
}

fn note(changed: &Changed, phone: &str, keys: &StoreKeys, hints: &mut Hints) {
    if changed.moved() || changed.from.until != changed.to.until {
        hints.insert((phone.to_string(), keys.sender.clone()));
    }
}

pub async fn echo(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    origin: Origin<'_>,
    e: &EchoReport<'_>,
    now: DateTime<Utc>,
    effects: &mut Effects,
) -> QueryResult<bool> {
    let keys = origin.keys(ctx.senders);
    let phone = identity::resolve(c, e.phone).await?;
    let echo = Echo {
        phone: &phone,
        wamid: e.wamid,
        message_type: e.message_type,
        content: e.content,
        at: e.at,
    };
    let changed =
        echoes::record(c, CHANNEL, &keys, &echo, ctx.takeover_ttl, ctx.actor, now).await?;
    // The history changed whatever the holder did.
    let hints = &mut effects.hint_holder;
    hints.insert((phone.digits().to_string(), keys.sender.clone()));
    note(&changed, phone.digits(), &keys, hints);
    Ok(true)
}

pub async fn handover(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    origin: Origin<'_>,
    h: &HandoverReport<'_>,
    now: DateTime<Utc>,
    effects: &mut Effects,
) -> QueryResult<bool> {
    let keys = origin.keys(ctx.senders);
    holder::mark_routed(c, &keys.sender, "messaging_handovers").await?;
    let phone = identity::resolve(c, h.phone).await?;
    let to = match h.handover {
        Handover::Passed => HolderKind::Agents,
        Handover::Taken => HolderKind::OtherApp,
    };
    let reason = format!(
        "{} (previous role {}, new role {})",
        h.handover.as_str(),
        h.previous_role.unwrap_or("not named"),
        h.new_role.unwrap_or("not named"),
    );
    let change = Change {
        to,
        until: None,
        by: "handover",
        reason: &reason,
        actor: ctx.actor,
    };
    let changed = holder::set(c, &phone, CHANNEL, &keys.sender, &change, h.at.min(now)).await?;
    note(&changed, phone.digits(), &keys, &mut effects.hint_holder);
    Ok(true)
}

pub async fn standby(
    c: &mut AsyncPgConnection,
    ctx: &Context<'_>,
    origin: Origin<'_>,
    s: &StandbyReport<'_>,
    now: DateTime<Utc>,
    effects: &mut Effects,
) -> QueryResult<bool> {
    let keys = origin.keys(ctx.senders);
    holder::mark_routed(c, &keys.sender, "standby").await?;
    let phone = identity::resolve(c, s.phone).await?;
    // The other app's thread goes idle 24 h after its last activity, as the platform's do.
    let until = s.at + IDLE_AFTER;
    if until <= now {
        return Ok(false);
    }
    let change = Change {
        to: HolderKind::OtherApp,
        until: Some(until),
        by: "standby",
        reason: "a standby copy: another app owns the thread",
        actor: ctx.actor,
    };
    let changed = holder::set(c, &phone, CHANNEL, &keys.sender, &change, now).await?;
    note(&changed, phone.digits(), &keys, &mut effects.hint_holder);
    Ok(true)
}
