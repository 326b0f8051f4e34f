//! The Marketing Messages API: the same send body as `/messages`, posted to
//! `/{phone-number-id}/marketing_messages` with `product_policy`. One call path serves
//! both ([`crate::PlatformClient::send_at`]); only the path differs.

use serde_json::Value;

use crate::SendRequest;

/// Where a send is posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendEndpoint {
    /// `POST /{phone-number-id}/messages`.
    Messages,
    /// `POST /{phone-number-id}/marketing_messages`.
    MarketingMessages,
}

impl SendEndpoint {
    /// The last segment of the path (`messages`, `marketing_messages`).
    pub fn path(self) -> &'static str {
        match self {
            Self::Messages => "messages",
            Self::MarketingMessages => "marketing_messages",
        }
    }
}

impl SendRequest {
    /// The same request with the Marketing Messages API's `product_policy`
    /// (`CLOUD_API_FALLBACK` or `STRICT`).
    pub fn with_product_policy(mut self, policy: &str) -> Self {
        self.other.insert(
            "product_policy".to_owned(),
            Value::String(policy.to_owned()),
        );
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_travels_beside_the_template() {
        let req = SendRequest::template("15550001", "promo", "en", Vec::<String>::new())
            .with_product_policy("STRICT");
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(v["product_policy"], "STRICT");
        assert_eq!(v["type"], "template");
        assert_eq!(SendEndpoint::MarketingMessages.path(), "marketing_messages");
    }
}
