//! Which endpoint a message goes to: a MARKETING template from a sender with the
//! Marketing Messages API (`marketing_messages: true` in the senders file) goes to
//! `/{phone_number_id}/marketing_messages` with the sender's `product_policy`; every
//! other message to `/messages`. Only the URL and that one field differ: the rate limit,
//! retries, error classification and fences around the call are the same code
//! (`deliver::send`).

use std::collections::HashMap;

use warden_platform::{SendEndpoint, SendRequest};
use warden_settings::{ProductPolicy, Senders};

/// The product policy of each sender with the Marketing Messages API, by stored key.
pub fn policies(senders: &Senders) -> HashMap<String, ProductPolicy> {
    senders
        .all()
        .iter()
        .filter(|s| s.marketing_messages)
        .map(|s| (senders.key_of(s).sender, s.marketing_product_policy))
        .collect()
}

/// Where `req` (a message of `category`, from a sender whose Marketing Messages API
/// policy is `policy`, `None` without it) goes, and the body it goes with.
pub fn route(
    policy: Option<ProductPolicy>,
    category: &str,
    req: SendRequest,
) -> (SendEndpoint, SendRequest) {
    match policy {
        Some(p) if req.kind == "template" && category == "marketing" => (
            SendEndpoint::MarketingMessages,
            req.with_product_policy(p.as_str()),
        ),
        _ => (SendEndpoint::Messages, req),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> SendRequest {
        SendRequest::template("15550001", "promo", "en", Vec::<String>::new())
    }

    #[test]
    fn marketing_templates_of_a_marketing_sender_take_the_marketing_api() {
        let (endpoint, req) = route(Some(ProductPolicy::Strict), "marketing", template());
        assert_eq!(endpoint, SendEndpoint::MarketingMessages);
        assert_eq!(req.other["product_policy"], "STRICT");
    }

    #[test]
    fn everything_else_takes_messages_unchanged() {
        for (policy, category, req) in [
            (None, "marketing", template()),
            (Some(ProductPolicy::CloudApiFallback), "utility", template()),
            (
                Some(ProductPolicy::CloudApiFallback),
                "marketing",
                SendRequest::text("15550001", "hi"),
            ),
        ] {
            let before = serde_json::to_value(&req).unwrap();
            let (endpoint, after) = route(policy, category, req);
            assert_eq!(endpoint, SendEndpoint::Messages);
            assert_eq!(serde_json::to_value(&after).unwrap(), before);
        }
    }
}
