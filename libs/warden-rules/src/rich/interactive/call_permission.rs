//! `call_permission_request`: a body and the platform's own buttons asking the customer
//! whether the business may call them (`interactive.type "call_permission_request"`).
//! The answer arrives as an inbound `call_permission_reply`; whether a request may be
//! sent at all (a valid grant, how many were sent today) is the send path's guard, not a
//! rule of the body.

use crate::rich::RichError;

/// The action of a call permission request: always `{"name": "call_permission_request"}`,
/// so it holds nothing. The platform lets the business write only the body: no header, no
/// footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPermissionAction;

impl CallPermissionAction {
    /// The action `name` of a call permission request.
    pub const NAME: &'static str = "call_permission_request";

    /// Nothing of its own to check: the body is checked with every kind's.
    pub(super) fn validate(&self) -> Result<(), RichError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::rich::{InteractiveType, RichBody, RichMessage};

    #[test]
    fn a_body_and_the_platform_buttons_only() {
        let ok = json!({"type": "interactive", "interactive": {"type": "call_permission_request",
            "body": {"text": "May we call you?"}, "action": {"name": "call_permission_request"}}});
        let m = RichMessage::from_json(&ok).unwrap();
        assert_eq!(m.to_json(), ok);
        let RichBody::Interactive(i) = &m.body else {
            panic!("interactive")
        };
        assert_eq!(i.kind(), InteractiveType::CallPermissionRequest);
        assert_eq!(
            InteractiveType::parse("call_permission_request").unwrap(),
            i.kind()
        );
        let mut footer = ok.clone();
        footer["interactive"]["footer"] = json!({"text": "f"});
        let e = RichMessage::from_json(&footer).unwrap_err();
        assert_eq!(e.field, "footer");
        assert!(e.problem.contains("call_permission_request"), "{e}");
        let mut named = ok.clone();
        named["interactive"]["action"] = json!({"name": "send_location"});
        assert_eq!(
            RichMessage::from_json(&named).unwrap_err().field,
            "action.name"
        );
        let e = InteractiveType::parse("call").unwrap_err();
        assert!(e.problem.contains("call_permission_request"), "{e}");
    }
}
