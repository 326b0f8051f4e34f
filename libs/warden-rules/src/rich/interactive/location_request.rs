//! `location_request`: a body and the platform's own "Send location" button
//! (`interactive.type "location_request_message"`). The customer's answer is an inbound
//! `location` message.

use crate::rich::RichError;

/// The action of a location request: always `{"name": "send_location"}`, so it holds
/// nothing. The platform shows only the body: no header, no footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationRequestAction;

impl LocationRequestAction {
    /// The action `name` of a location request.
    pub const NAME: &'static str = "send_location";

    /// Nothing of its own to check: the body is checked with every kind's.
    pub(super) fn validate(&self) -> Result<(), RichError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::rich::RichMessage;

    fn field_of(v: serde_json::Value) -> String {
        RichMessage::from_json(&v).unwrap_err().field
    }

    #[test]
    fn a_body_and_the_button_only() {
        let ok = json!({"type": "interactive", "interactive": {"type": "location_request_message",
            "body": {"text": "Where should we deliver?"}, "action": {"name": "send_location"}}});
        let m = RichMessage::from_json(&ok).unwrap();
        assert_eq!(m.to_json(), ok);
        let with = |k: &str, v: serde_json::Value| {
            let mut x = ok.clone();
            x["interactive"][k] = v;
            x
        };
        assert_eq!(field_of(with("footer", json!({"text": "f"}))), "footer");
        assert_eq!(
            field_of(with("header", json!({"type": "text", "text": "h"}))),
            "header"
        );
        assert_eq!(
            field_of(with("action", json!({"name": "cta_url"}))),
            "action.name"
        );
        assert_eq!(field_of(with("action", json!({}))), "action.name");
        assert_eq!(
            field_of(with(
                "action",
                json!({"name": "send_location", "buttons": []})
            )),
            "buttons"
        );
        assert_eq!(field_of(with("body", json!({"text": " "}))), "body");
    }
}
