//! Who holds a conversation on a shared number (docs/compliance.md, "Shared numbers").
//!
//! The holder is stored on the conversation row (`holder`, `holder_since`, `holder_by`,
//! `holder_until`), so the send path reads it in the statement that reads the care window;
//! `warden_rules::holder` says what it is now and what it refuses. Every change of holder
//! goes through [`set`]: the row, its history (`conversation_holder_changes`) and an audit
//! row (who, from, to, why) in the caller's transaction; the caller hints gateways after
//! the commit (`HintKind::Holder`), which tell MCP subscribers the conversation changed.
//!
//! What changes it: message echoes and the platform's handovers and standby copies (the
//! webhook), the hand-off and release tools ([`Core::hand_off`], [`Core::release`]), and
//! operators. A number is *routed* (conversation routing is on for it) once a handover or
//! standby webhook arrived for it ([`mark_routed`]); thread control is called only then.

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use warden_rules::holder::{Holder, HolderKind, Stored, effective};
use warden_rules::phone::PhoneNumber;
use warden_store::models::Conversation;
use warden_store::schema::{conversation_holder_changes, conversations, routed_numbers};
use warden_store::tx::{Abort, transact};

use crate::{Core, CoreError, HintKind};

/// A conversation's holder as tools show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HolderView {
    /// `agents` (Warden's tools may reply), `human` (a person answers: a reply from the
    /// WhatsApp Business app, a hand-off, an operator), `other_app` (another app or the
    /// platform's AI agent owns the thread) or `idle` (nobody holds it).
    pub kind: String,
    /// Since when (RFC 3339); null when the customer never wrote and nobody took it.
    pub since: Option<String>,
    /// What made it so: `business_app`, `handover`, `standby`, the agent or operator who
    /// handed it off or released it, `customer`, `expired` (a takeover ran out), `idle`.
    pub by: String,
    /// When it returns by itself (RFC 3339), if it does.
    pub until: Option<String>,
}

impl From<&Holder> for HolderView {
    fn from(h: &Holder) -> Self {
        let at = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Secs, true);
        HolderView {
            kind: h.kind.as_str().to_string(),
            since: h.since.map(at),
            by: h.by.clone(),
            until: h.until.map(at),
        }
    }
}

impl HolderView {
    /// The holder of a conversation row (None: there is none yet) now.
    pub fn of(conv: Option<&Conversation>, now: DateTime<Utc>) -> Self {
        HolderView::from(&of(conv, now))
    }

    /// True while a person or another app holds it.
    pub fn held(&self) -> bool {
        self.kind.parse::<HolderKind>().is_ok_and(|k| k.held())
    }
}

/// The holder of a conversation row (None: there is none yet) at `now`.
pub fn of(conv: Option<&Conversation>, now: DateTime<Utc>) -> Holder {
    match conv {
        Some(c) => from_columns(
            c.holder.as_deref(),
            c.holder_since,
            c.holder_by.clone(),
            c.holder_until,
            c.last_inbound_at,
            now,
        ),
        None => effective(None, None, now),
    }
}

/// The holder from the four stored columns and the last inbound time, as a statement
/// that read them in place of a conversation row gives them.
pub fn from_columns(
    kind: Option<&str>,
    since: Option<DateTime<Utc>>,
    by: Option<String>,
    until: Option<DateTime<Utc>>,
    last_inbound_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Holder {
    let stored = match (kind.and_then(|k| k.parse().ok()), since) {
        (Some(kind), Some(since)) => Some(Stored {
            kind,
            since,
            by: by.unwrap_or_default(),
            until,
        }),
        _ => None,
    };
    effective(stored.as_ref(), last_inbound_at, now)
}

/// One change of holder.
#[derive(Clone, Debug)]
pub struct Change<'a> {
    pub to: HolderKind,
    /// When it returns by itself (a Business-app reply's `HUMAN_TAKEOVER_TTL`).
    pub until: Option<DateTime<Utc>>,
    /// Shown as the holder's `by`: `business_app`, `handover`, `standby`, an agent's name.
    pub by: &'a str,
    /// Why, for the history and the audit log (never message content).
    pub reason: &'a str,
    /// Who the audit log names.
    pub actor: &'a str,
}

/// What [`set`] did.
#[derive(Clone, Debug)]
pub struct Changed {
    pub from: Holder,
    pub to: Holder,
}

impl Changed {
    /// Whether the holder is another than before (not just held for longer).
    pub fn moved(&self) -> bool {
        self.from.kind != self.to.kind
    }
}

/// Make `change.to` the holder of the conversation of `phone` with the sender stored as
/// `sender` on `channel`, in the caller's transaction: the customer and the conversation
/// row are created when new (a person may answer a customer who never wrote to Warden),
/// the row is locked, and a change of holder is recorded in the history and the audit log.
/// The same holder again keeps its `since` and takes the new `until` (a second
/// Business-app reply holds the conversation for longer).
pub async fn set(
    c: &mut AsyncPgConnection,
    phone: &PhoneNumber,
    channel: &str,
    sender: &str,
    change: &Change<'_>,
    now: DateTime<Utc>,
) -> QueryResult<Changed> {
    crate::customers::ensure(c, phone).await?;
    diesel::insert_into(conversations::table)
        .values((
            conversations::customer_phone.eq(phone.digits()),
            conversations::channel.eq(channel),
            conversations::sender_id.eq(sender),
        ))
        .on_conflict_do_nothing()
        .execute(c)
        .await?;
    let row: Conversation = conversations::table
        .filter(conversations::customer_phone.eq(phone.digits()))
        .filter(conversations::channel.eq(channel))
        .filter(conversations::sender_id.eq(sender))
        .for_update()
        .select(Conversation::as_select())
        .first(c)
        .await?;
    let from = of(Some(&row), now);
    let since = match from.since {
        Some(since) if from.kind == change.to => since,
        _ => now,
    };
    diesel::update(conversations::table.find(row.id))
        .set((
            conversations::holder.eq(change.to.as_str()),
            conversations::holder_since.eq(since),
            conversations::holder_by.eq(change.by),
            conversations::holder_until.eq(change.until),
            conversations::updated_at.eq(diesel::dsl::now),
        ))
        .execute(c)
        .await?;
    let to = Holder {
        kind: change.to,
        since: Some(since),
        by: change.by.to_string(),
        until: change.until,
    };
    let changed = Changed { from, to };
    if changed.moved() {
        diesel::insert_into(conversation_holder_changes::table)
            .values((
                conversation_holder_changes::customer_phone.eq(phone.digits()),
                conversation_holder_changes::channel.eq(channel),
                conversation_holder_changes::sender_id.eq(sender),
                conversation_holder_changes::from_kind.eq(changed.from.kind.as_str()),
                conversation_holder_changes::to_kind.eq(change.to.as_str()),
                conversation_holder_changes::changed_by.eq(change.by),
                conversation_holder_changes::reason.eq(change.reason),
                conversation_holder_changes::until.eq(change.until),
                conversation_holder_changes::changed_at.eq(now),
            ))
            .execute(c)
            .await?;
        warden_store::audit::record(
            c,
            change.actor,
            "holder_changed",
            "customer",
            phone.digits(),
            json!({
                "sender": sender,
                "channel": channel,
                "from": changed.from.kind.as_str(),
                "to": change.to.as_str(),
                "by": change.by,
                "why": change.reason,
                "until": change.until,
            }),
        )
        .await?;
    }
    Ok(changed)
}

/// One change of a conversation's holder, as history lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HolderChange {
    pub from: String,
    pub to: String,
    pub by: String,
    pub why: String,
    pub until: Option<DateTime<Utc>>,
    pub at: DateTime<Utc>,
}

type ChangeRow = (
    String,
    String,
    String,
    String,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
);

/// The changes of holder of one conversation, oldest first.
pub async fn changes(
    c: &mut AsyncPgConnection,
    phone: &str,
    channel: &str,
    sender: &str,
) -> QueryResult<Vec<HolderChange>> {
    use conversation_holder_changes as h;
    let rows: Vec<ChangeRow> = h::table
        .filter(h::customer_phone.eq(phone))
        .filter(h::channel.eq(channel))
        .filter(h::sender_id.eq(sender))
        .order((h::changed_at.asc(), h::id.asc()))
        .select((
            h::from_kind,
            h::to_kind,
            h::changed_by,
            h::reason,
            h::until,
            h::changed_at,
        ))
        .load(c)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(from, to, by, why, until, at)| HolderChange {
            from,
            to,
            by,
            why,
            until,
            at,
        })
        .collect())
}

/// Under conversation routing only a thread's owner receives the customer's messages (the
/// others get standby copies): a customer message that reached Warden on a routed number
/// means the thread is ours again, so the conversations of `phones` held by `other_app` go
/// back to the agents (history, audit). One statement when nothing changes; returns the
/// customers whose holder moved.
pub async fn routed_inbound(
    c: &mut AsyncPgConnection,
    channel: &str,
    sender: &str,
    phones: &[&str],
    actor: &str,
    now: DateTime<Utc>,
) -> QueryResult<Vec<String>> {
    use diesel::sql_types::{Array, Text, Timestamptz};
    #[derive(QueryableByName)]
    struct Moved {
        #[diesel(sql_type = Text)]
        customer_phone: String,
    }
    if phones.is_empty() {
        return Ok(Vec::new());
    }
    let moved: Vec<Moved> = diesel::sql_query(
        "UPDATE conversations SET holder = 'agents', holder_since = $4, holder_by = 'routing', \
                holder_until = NULL, updated_at = now() \
          WHERE sender_id = $1 AND channel = $2 AND customer_phone = ANY($3) \
            AND holder = 'other_app' \
            AND EXISTS (SELECT 1 FROM routed_numbers r WHERE r.sender_id = $1) \
      RETURNING customer_phone",
    )
    .bind::<Text, _>(sender)
    .bind::<Text, _>(channel)
    .bind::<Array<Text>, _>(phones)
    .bind::<Timestamptz, _>(now)
    .load(c)
    .await?;
    let reason = "a customer message routed to Warden: the thread is ours";
    for m in &moved {
        diesel::insert_into(conversation_holder_changes::table)
            .values((
                conversation_holder_changes::customer_phone.eq(&m.customer_phone),
                conversation_holder_changes::channel.eq(channel),
                conversation_holder_changes::sender_id.eq(sender),
                conversation_holder_changes::from_kind.eq(HolderKind::OtherApp.as_str()),
                conversation_holder_changes::to_kind.eq(HolderKind::Agents.as_str()),
                conversation_holder_changes::changed_by.eq("routing"),
                conversation_holder_changes::reason.eq(reason),
                conversation_holder_changes::changed_at.eq(now),
            ))
            .execute(c)
            .await?;
        warden_store::audit::record(
            c,
            actor,
            "holder_changed",
            "customer",
            &m.customer_phone,
            json!({"sender": sender, "channel": channel, "from": "other_app", "to": "agents",
                   "by": "routing", "why": reason, "until": null}),
        )
        .await?;
    }
    Ok(moved.into_iter().map(|m| m.customer_phone).collect())
}

/// Conversation routing is on for the number stored as `sender`: a handover or standby
/// webhook arrived for it (the platform sends them only then). The first one says when.
pub async fn mark_routed(c: &mut AsyncPgConnection, sender: &str, source: &str) -> QueryResult<()> {
    diesel::insert_into(routed_numbers::table)
        .values((
            routed_numbers::sender_id.eq(sender),
            routed_numbers::source.eq(source),
        ))
        .on_conflict_do_nothing()
        .execute(c)
        .await
        .map(|_| ())
}

/// Whether conversation routing is on for the number stored as `sender`.
pub async fn is_routed(c: &mut AsyncPgConnection, sender: &str) -> QueryResult<bool> {
    diesel::select(diesel::dsl::exists(
        routed_numbers::table.filter(routed_numbers::sender_id.eq(sender)),
    ))
    .get_result(c)
    .await
}

/// Who `hand_off_conversation` gives a conversation to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandOffTo {
    /// A person (holder `human`, until released).
    Human,
    /// The platform's AI agent (holder `other_app`).
    PlatformAgent,
}

impl HandOffTo {
    pub fn as_str(self) -> &'static str {
        match self {
            HandOffTo::Human => "human",
            HandOffTo::PlatformAgent => "platform_agent",
        }
    }
}

/// What a hand-off or a release did.
#[derive(Clone, Debug)]
pub struct HolderMoved {
    /// The sender id of the conversation.
    pub from: String,
    pub customer: PhoneNumber,
    pub previous: HolderView,
    pub holder: HolderView,
}

impl Core {
    /// The holder of the conversation of `phone` with the sender `from` names, now.
    pub async fn holder(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
    ) -> Result<HolderView, CoreError> {
        let keys = self.sender_keys(from)?;
        let phone = self.customer(phone).await?;
        let conn = self.pg().get().await?;
        let conv = super::find(
            &conn,
            phone.digits(),
            warden_settings::DEFAULT_CHANNEL,
            &keys.sender,
        )
        .await?;
        Ok(HolderView::of(conv.as_ref(), self.now()))
    }

    /// Whether conversation routing is on for the number `from` names (thread control is
    /// called only then).
    pub async fn number_routed(&self, from: Option<&str>) -> Result<bool, CoreError> {
        let keys = self.sender_keys(from)?;
        let mut conn = self.pg().get().await?;
        Ok(is_routed(&mut conn, &keys.sender).await?)
    }

    /// hand_off_conversation: a person (`human`, until released) or the platform's AI
    /// agent (`other_app`) holds the conversation from now; audited with the note as why.
    pub async fn hand_off(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
        to: HandOffTo,
        note: Option<&str>,
    ) -> Result<HolderMoved, CoreError> {
        let kind = match to {
            HandOffTo::Human => HolderKind::Human,
            HandOffTo::PlatformAgent => HolderKind::OtherApp,
        };
        let why = match note {
            Some(n) => format!("hand_off_conversation to {}: {n}", to.as_str()),
            None => format!("hand_off_conversation to {}", to.as_str()),
        };
        self.move_holder(phone, from, kind, &why).await
    }

    /// release_conversation: the agents hold the conversation again; audited.
    pub async fn release(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
    ) -> Result<HolderMoved, CoreError> {
        self.move_holder(phone, from, HolderKind::Agents, "release_conversation")
            .await
    }

    async fn move_holder(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
        to: HolderKind,
        why: &str,
    ) -> Result<HolderMoved, CoreError> {
        let sender = self.sender_ref(from)?;
        let phone = self.customer(phone).await?;
        let now = self.now();
        let actor = self.actor();
        let (key, customer, why) = (sender.key.clone(), phone.clone(), why.to_string());
        let changed = transact(self.pg(), "holder", move |c| {
            let (key, customer, why) = (key.clone(), customer.clone(), why.clone());
            async move {
                let change = Change {
                    to,
                    until: None,
                    by: actor,
                    reason: &why,
                    actor,
                };
                let changed = set(
                    c,
                    &customer,
                    warden_settings::DEFAULT_CHANNEL,
                    &key,
                    &change,
                    now,
                )
                .await?;
                Ok::<_, Abort<std::convert::Infallible>>(changed)
            }
            .boxed()
        })
        .await?;
        self.hint(
            [(phone.digits(), Some(sender.key.as_str()))],
            HintKind::Holder,
        )
        .await;
        Ok(HolderMoved {
            from: sender.id,
            customer: phone,
            previous: HolderView::from(&changed.from),
            holder: HolderView::from(&changed.to),
        })
    }
}
