//! A customer's message (`messages[]` of a `messages` change): who sent it (every
//! identifier it carries), whether it opens the care window, and a STOP keyword in it.

use chrono::{DateTime, Utc};
use serde_json::Value;
use warden_core::conversations::inbound::NoWindow;
use warden_core::customers::identity::Identity;
use warden_platform::webhook::{Contact, InboundMessage};
use warden_rules::keywords::OptChange;
use warden_rules::phone::PhoneNumber;

use super::{Builder, EventBody, MAX_ID_LEN, clean, clean_json, clip};

/// A message a customer sent.
#[derive(Debug, Clone)]
pub struct InboundEvent {
    pub wamid: String,
    /// The customer as the webhook names it: the phone when it carries one, else the
    /// BSUID (`warden_core::customers::identity` maps it to the customer's key).
    pub phone: PhoneNumber,
    /// Every identifier the webhook carries for the sender (phone, BSUID, parent, username).
    pub identity: Identity,
    /// The message's own platform timestamp (clamped to `now`); `now` when implausible.
    pub at: DateTime<Utc>,
    /// `Ok(at)` when the message opens or extends the care window (a plausible customer
    /// message), else why it opens nothing (`warden_core::conversations::inbound`).
    pub window: Result<DateTime<Utc>, NoWindow>,
    /// `text`, `button`, `image`, ...
    pub message_type: String,
    /// The message as received (NUL-free), stored as the message row's content.
    pub content: Value,
    /// A stop / resume keyword (whole text, or the text of a quick-reply button).
    pub keyword: Option<OptChange>,
    /// A flow submission (`interactive.nfm_reply`).
    pub flow: Option<super::FlowReplyEvent>,
    /// The answer to a call permission request it carries.
    pub call_permission: Option<warden_core::calls::Reply>,
}

impl Builder<'_> {
    pub(super) fn inbound(
        &mut self,
        msg: InboundMessage,
        contacts: &[Contact],
        now: DateTime<Utc>,
    ) {
        let wamid = clean(&msg.id);
        if wamid.is_empty() || wamid.len() > MAX_ID_LEN {
            self.skip("bad_wamid", clip(&wamid, 64));
            return;
        }
        let identity = sender_identity(&msg, contacts);
        let Some(phone) = identity.key() else {
            let shown = if msg.from.is_empty() {
                msg.from_user_id.as_deref().unwrap_or("")
            } else {
                &msg.from
            };
            self.skip("bad_phone", clip(shown, 64));
            return;
        };
        let keyword = keyword_of(&msg);
        let call_permission = super::calls::reply_of(&msg);
        let message_type = clip(&clean(&msg.kind), 64);
        let window = warden_core::conversations::inbound::window_opened_at(
            &message_type,
            msg.timestamp,
            now,
        );
        // The stored time of a message that opens nothing: its plausible stamp, else now.
        let at =
            warden_core::conversations::inbound::plausible_time(msg.timestamp, now).unwrap_or(now);
        let content = clean_json(serde_json::to_value(&msg).unwrap_or(Value::Null));
        let flow = super::flows::flow_reply(&content);
        super::commerce::note(&message_type, &content);
        self.push(
            format!("msg:{wamid}"),
            EventBody::Inbound(InboundEvent {
                wamid,
                phone,
                identity,
                at,
                window,
                message_type: if message_type.is_empty() {
                    "unknown".into()
                } else {
                    message_type
                },
                content,
                keyword,
                flow,
                call_permission,
            }),
        );
    }
}

/// The sender's identifiers: the message's own (`from`, `from_user_id`,
/// `from_parent_user_id`) and those of its contact (matched by phone or BSUID, or the only
/// contact). A malformed identifier counts as absent.
fn sender_identity(msg: &InboundMessage, contacts: &[Contact]) -> Identity {
    let user_id = msg.from_user_id.as_deref().filter(|u| !u.is_empty());
    let contact = contacts
        .iter()
        .find(|c| {
            (!msg.from.is_empty() && c.wa_id == msg.from)
                || (user_id.is_some() && c.user_id.as_deref() == user_id)
        })
        .or(if contacts.len() == 1 {
            contacts.first()
        } else {
            None
        });
    let phone = [Some(msg.from.as_str()), contact.map(|c| c.wa_id.as_str())]
        .into_iter()
        .flatten()
        .filter(|p| !p.trim().is_empty())
        .find_map(|p| warden_rules::phone::canonicalize(p).ok());
    let bsuid = bsuid_of([user_id, contact.and_then(|c| c.user_id.as_deref())], false);
    let parent_bsuid = bsuid_of(
        [
            msg.from_parent_user_id.as_deref(),
            contact.and_then(|c| c.parent_user_id.as_deref()),
        ],
        true,
    );
    let username = contact
        .and_then(|c| c.profile.as_ref())
        .and_then(|p| p.username.as_deref())
        .map(|u| clip(clean(u).trim(), 64))
        .filter(|u| !u.is_empty());
    Identity {
        phone,
        bsuid,
        parent_bsuid,
        username,
    }
}

/// The first valid BSUID (or parent BSUID, with `parent`) of `ids`.
fn bsuid_of(ids: [Option<&str>; 2], parent: bool) -> Option<warden_rules::bsuid::Bsuid> {
    ids.into_iter()
        .flatten()
        .filter_map(|u| warden_rules::bsuid::parse(&clean(u)).ok())
        .find(|b| b.is_parent() == parent)
}

/// A stop / resume request in a text, or in the text of a quick-reply / interactive button
/// (the platform's "Stop promotions" button arrives that way).
fn keyword_of(msg: &InboundMessage) -> Option<OptChange> {
    use warden_rules::keywords::classify_inbound;
    match msg.kind.as_str() {
        "text" => msg.text_body().and_then(classify_inbound),
        "button" => msg
            .other
            .get("button")
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str)
            .and_then(classify_inbound),
        "interactive" => msg
            .other
            .get("interactive")
            .and_then(|i| i.get("button_reply"))
            .and_then(|b| b.get("title"))
            .and_then(Value::as_str)
            .and_then(classify_inbound),
        _ => None,
    }
}
