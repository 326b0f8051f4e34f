//! The webhooks of a shared number, applied in the batch's transaction
//! (`warden_core::conversations::{echoes, holder}`): a message echo is stored in the
//! history and makes the person the holder until `HUMAN_TAKEOVER_TTL` after it; a handover
//! gives the thread to the agents (`control_passed`) or to another app (`control_taken`);
//! a standby copy says another app owns it. A handover or a standby copy marks its number
//! as routed. None of them opens a window or is read for STOP.

use chrono::{DateTime, TimeDelta, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use warden_core::conversations::echoes::{self, Echo};
use warden_core::conversations::holder::{self, Change, Changed};
use warden_core::customers::identity;
use warden_rules::holder::{HolderKind, IDLE_AFTER};
use warden_settings::StoreKeys;

use super::{ACTOR, CHANNEL};
use crate::events::{EchoEvent, Handover, HandoverEvent, StandbyEvent};

/// Where the batch's holder changes go: the (customer, sender key) conversations to hint
/// after the commit.
pub(super) type Hints = std::collections::HashSet<(String, String)>;

fn note(changed: &Changed, phone: &str, keys: &StoreKeys, hints: &mut Hints) {
    if changed.moved() || changed.from.until != changed.to.until {
        hints.insert((phone.to_string(), keys.sender.clone()));
    }
}

pub(super) async fn echo(
    c: &mut AsyncPgConnection,
    keys: &StoreKeys,
    e: &EchoEvent,
    ttl: TimeDelta,
    now: DateTime<Utc>,
    hints: &mut Hints,
) -> QueryResult<bool> {
    let phone = identity::resolve(c, &e.phone).await?;
    let echo = Echo {
        phone: &phone,
        wamid: &e.wamid,
        message_type: &e.message_type,
        content: &e.content,
        at: e.at,
    };
    let changed = echoes::record(c, CHANNEL, keys, &echo, ttl, ACTOR, now).await?;
    // The history changed whatever the holder did.
    hints.insert((phone.digits().to_string(), keys.sender.clone()));
    note(&changed, phone.digits(), keys, hints);
    Ok(true)
}

pub(super) async fn handover(
    c: &mut AsyncPgConnection,
    keys: &StoreKeys,
    h: &HandoverEvent,
    now: DateTime<Utc>,
    hints: &mut Hints,
) -> QueryResult<bool> {
    holder::mark_routed(c, &keys.sender, "messaging_handovers").await?;
    let phone = identity::resolve(c, &h.phone).await?;
    let to = match h.handover {
        Handover::Passed => HolderKind::Agents,
        Handover::Taken => HolderKind::OtherApp,
    };
    let reason = format!(
        "{} (previous role {}, new role {})",
        h.handover.as_str(),
        h.previous_role.as_deref().unwrap_or("not named"),
        h.new_role.as_deref().unwrap_or("not named"),
    );
    let change = Change {
        to,
        until: None,
        by: "handover",
        reason: &reason,
        actor: ACTOR,
    };
    let changed = holder::set(c, &phone, CHANNEL, &keys.sender, &change, h.at.min(now)).await?;
    note(&changed, phone.digits(), keys, hints);
    Ok(true)
}

pub(super) async fn standby(
    c: &mut AsyncPgConnection,
    keys: &StoreKeys,
    s: &StandbyEvent,
    now: DateTime<Utc>,
    hints: &mut Hints,
) -> QueryResult<bool> {
    holder::mark_routed(c, &keys.sender, "standby").await?;
    let phone = identity::resolve(c, &s.phone).await?;
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
        actor: ACTOR,
    };
    let changed = holder::set(c, &phone, CHANNEL, &keys.sender, &change, now).await?;
    note(&changed, phone.digits(), keys, hints);
    Ok(true)
}
