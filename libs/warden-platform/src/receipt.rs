//! Read receipts and the typing indicator: `POST /{phone-number-id}/messages` with
//! `status: "read"` for a received message's wamid.

use serde::{Deserialize, Serialize};

/// The body that marks a received message read (and optionally shows "typing…").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadReceipt {
    pub messaging_product: String,
    /// Always `read`.
    pub status: String,
    /// The wamid of the customer's message.
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typing_indicator: Option<TypingIndicator>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TypingIndicator {
    /// Always `text`.
    #[serde(rename = "type")]
    pub kind: String,
}

impl ReadReceipt {
    pub fn new(wamid: impl Into<String>, typing: bool) -> Self {
        ReadReceipt {
            messaging_product: "whatsapp".into(),
            status: "read".into(),
            message_id: wamid.into(),
            typing_indicator: typing.then(|| TypingIndicator {
                kind: "text".into(),
            }),
        }
    }
}

/// The platform's answer: `{"success": true}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceiptResponse {
    #[serde(default)]
    pub success: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_platform_shape() {
        assert_eq!(
            serde_json::to_value(ReadReceipt::new("wamid.X", false)).unwrap(),
            json!({"messaging_product": "whatsapp", "status": "read", "message_id": "wamid.X"})
        );
        assert_eq!(
            serde_json::to_value(ReadReceipt::new("wamid.X", true)).unwrap()["typing_indicator"],
            json!({"type": "text"})
        );
    }
}
