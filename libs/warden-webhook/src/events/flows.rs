//! A customer's flow submission: an `interactive` message of type `nfm_reply`, whose
//! `nfm_reply.response_json` holds the answers (a JSON string, normally) and whose
//! `context.id` names the flow message. Read from the stored (cleaned) content; nothing
//! here refuses a submission: what it says is judged by `warden_core::platform_events`.

use serde_json::Value;

use super::{MAX_ID_LEN, clip};

/// What a flow submission carries besides being a customer's message.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowReplyEvent {
    /// `nfm_reply.response_json` as received; `None` when absent.
    pub response_json: Option<Value>,
    /// `context.id`: the wamid of the flow message answered.
    pub context_wamid: Option<String>,
}

/// The submission a stored inbound content carries, if it is one.
pub fn flow_reply(content: &Value) -> Option<FlowReplyEvent> {
    let interactive = content.get("interactive")?;
    let is_flow = interactive.get("type").and_then(Value::as_str) == Some("nfm_reply")
        || interactive.get("nfm_reply").is_some();
    if content.get("type").and_then(Value::as_str) != Some("interactive") || !is_flow {
        return None;
    }
    let context_wamid = content
        .pointer("/context/id")
        .and_then(Value::as_str)
        .map(|w| clip(w.trim(), MAX_ID_LEN))
        .filter(|w| !w.is_empty());
    Some(FlowReplyEvent {
        response_json: interactive.pointer("/nfm_reply/response_json").cloned(),
        context_wamid,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_submission_is_read_with_its_context() {
        let c = json!({"type": "interactive", "context": {"id": "wamid.F"},
            "interactive": {"type": "nfm_reply", "nfm_reply": {"name": "flow", "body": "Sent",
                "response_json": "{\"flow_token\":\"t\"}"}}});
        let r = flow_reply(&c).unwrap();
        assert_eq!(r.context_wamid.as_deref(), Some("wamid.F"));
        assert_eq!(r.response_json, Some(json!("{\"flow_token\":\"t\"}")));
        let reply = json!({"type": "interactive",
            "interactive": {"type": "button_reply", "button_reply": {"id": "a"}}});
        assert_eq!(flow_reply(&reply), None);
        assert_eq!(flow_reply(&json!({"type": "text"})), None);
        // No context, no answers: still a submission.
        let bare = json!({"type": "interactive", "interactive": {"type": "nfm_reply"}});
        assert_eq!(
            flow_reply(&bare),
            Some(FlowReplyEvent {
                response_json: None,
                context_wamid: None
            })
        );
    }

    proptest! {
        /// Any content is read without panicking.
        #[test]
        fn any_content_is_read(raw in "\\PC{0,60}", ctx in proptest::option::of("\\PC{0,40}")) {
            let mut c = json!({"type": "interactive",
                "interactive": {"type": "nfm_reply", "nfm_reply": {"response_json": raw}}});
            if let Some(ctx) = ctx {
                c["context"] = json!({"id": ctx});
            }
            let r = flow_reply(&c).unwrap();
            prop_assert_eq!(r.response_json, Some(json!(raw)));
        }
    }
}
