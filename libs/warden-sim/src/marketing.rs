//! The Marketing Messages API: `POST /{phone_number_id}/marketing_messages` takes the
//! `/messages` body of a MARKETING template plus `product_policy` (`CLOUD_API_FALLBACK`
//! or `STRICT`), is answered like `/messages` (same limits, faults and webhooks), and its
//! messages are priced `marketing_lite`. `/sim/stats.by_message[id].endpoint` says which
//! endpoint a message came in at.

use warden_platform::message::SendRequest;

use crate::state::Refusal;

/// Where a send came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /{phone_number_id}/messages`.
    Messages,
    /// `POST /{phone_number_id}/marketing_messages`.
    Marketing,
}

impl Endpoint {
    /// As `/sim/stats` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Messages => "messages",
            Self::Marketing => "marketing_messages",
        }
    }
}

/// The pricing category of a send at `endpoint` whose body priced it `category`: at the
/// Marketing Messages API only a marketing template with a known `product_policy` (when
/// given) is taken, priced `marketing_lite`; `/messages` keeps `category`.
pub fn check<'a>(
    endpoint: Endpoint,
    send: &SendRequest,
    category: &'a str,
) -> Result<&'a str, Refusal> {
    if endpoint == Endpoint::Messages {
        return Ok(category);
    }
    if send.kind != "template" || category != "marketing" {
        return Err(Refusal::new(
            400,
            100,
            format!(
                "Invalid parameter: the Marketing Messages API sends marketing templates only (this is a {} {})",
                if send.kind.is_empty() {
                    "text"
                } else {
                    &send.kind
                },
                category
            ),
        ));
    }
    match send.other.get("product_policy").map(|p| p.as_str()) {
        None | Some(Some("CLOUD_API_FALLBACK" | "STRICT")) => Ok("marketing_lite"),
        Some(_) => Err(Refusal::new(
            400,
            100,
            "Invalid parameter: product_policy must be CLOUD_API_FALLBACK or STRICT",
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn send(v: serde_json::Value) -> SendRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn marketing_templates_only_priced_lite() {
        let t = send(
            json!({"messaging_product": "whatsapp", "to": "1", "type": "template",
            "template": {"name": "promo", "language": {"code": "en"}},
            "product_policy": "STRICT"}),
        );
        assert_eq!(
            check(Endpoint::Marketing, &t, "marketing").unwrap(),
            "marketing_lite"
        );
        assert_eq!(
            check(Endpoint::Messages, &t, "marketing").unwrap(),
            "marketing"
        );
        assert_eq!(
            check(Endpoint::Marketing, &t, "utility")
                .unwrap_err()
                .body
                .error
                .code,
            100
        );
        let bad = send(
            json!({"messaging_product": "whatsapp", "to": "1", "type": "template",
            "template": {"name": "promo", "language": {"code": "en"}},
            "product_policy": "LOOSE"}),
        );
        assert!(check(Endpoint::Marketing, &bad, "marketing").is_err());
        let text = send(
            json!({"messaging_product": "whatsapp", "to": "1", "type": "text",
            "text": {"body": "hi"}}),
        );
        assert!(check(Endpoint::Marketing, &text, "service").is_err());
    }
}
