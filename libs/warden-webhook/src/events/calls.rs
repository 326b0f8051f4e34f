//! A customer's answer to a call permission request: an inbound `interactive` message of
//! type `call_permission_reply` (`{response: accept | reject, is_permanent,
//! expiration_timestamp, response_source}`). The message itself is stored like any other
//! (`inbound`); this reads what it says for `warden_core::platform_events::calls`.

use chrono::{DateTime, Utc};
use serde_json::Value;
use warden_core::calls::Reply;
use warden_platform::webhook::InboundMessage;
use warden_rules::call_permission::Response;

use super::{clean, clip, value_int};

/// The interactive type of an answer.
pub const REPLY_TYPE: &str = "call_permission_reply";

/// The answer `msg` carries, when it is a call permission reply that says `accept` or
/// `reject`; anything else (another message, an unknown response) carries none.
pub fn reply_of(msg: &InboundMessage) -> Option<Reply> {
    if msg.kind != "interactive" {
        return None;
    }
    let interactive = msg.other.get("interactive")?;
    if interactive.get("type").and_then(Value::as_str) != Some(REPLY_TYPE) {
        return None;
    }
    let r = interactive.get(REPLY_TYPE)?;
    let response = Response::parse(r.get("response")?.as_str()?)?;
    let permanent = match r.get("is_permanent") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    };
    let expires_at = r
        .get("expiration_timestamp")
        .and_then(value_int)
        .and_then(|t| DateTime::<Utc>::from_timestamp(t, 0));
    let source = r
        .get("response_source")
        .and_then(Value::as_str)
        .map(|s| clip(clean(s).trim(), 32))
        .filter(|s| !s.is_empty());
    Some(Reply {
        response,
        permanent,
        expires_at: expires_at.filter(|_| response == Response::Accept && !permanent),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(interactive: Value) -> InboundMessage {
        serde_json::from_value(serde_json::json!({
            "from": "628110001", "id": "wamid.C", "timestamp": "1800000000",
            "type": "interactive", "interactive": interactive,
        }))
        .unwrap()
    }

    #[test]
    fn an_answer_is_read() {
        let m = msg(
            serde_json::json!({"type": "call_permission_reply", "call_permission_reply": {
            "response": "accept", "is_permanent": false, "expiration_timestamp": 1800003600,
            "response_source": "user_action"}}),
        );
        let r = reply_of(&m).unwrap();
        assert_eq!(r.response, Response::Accept);
        assert!(!r.permanent);
        assert_eq!(r.expires_at.unwrap().timestamp(), 1_800_003_600);
        assert_eq!(r.source.as_deref(), Some("user_action"));
        let m = msg(
            serde_json::json!({"type": "call_permission_reply", "call_permission_reply": {
            "response": "reject", "is_permanent": true, "expiration_timestamp": "1800003600",
            "response_source": "automatic"}}),
        );
        let r = reply_of(&m).unwrap();
        assert_eq!(r.response, Response::Reject);
        assert_eq!(r.expires_at, None);
    }

    #[test]
    fn other_messages_carry_none() {
        let m = msg(
            serde_json::json!({"type": "button_reply", "button_reply": {"id": "a", "title": "A"}}),
        );
        assert_eq!(reply_of(&m), None);
        let m = msg(serde_json::json!({"type": "call_permission_reply",
            "call_permission_reply": {"response": "maybe"}}));
        assert_eq!(reply_of(&m), None);
    }
}
