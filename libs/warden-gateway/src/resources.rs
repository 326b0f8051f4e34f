//! MCP resources: `warden://inbox` and the template `warden://conversations/{customer_id}`,
//! their listing, and subscribing to them (live updates: [`crate::subscriptions`]).

use std::fmt;

use chrono::Utc;
use rmcp::model::{
    ErrorData as McpError, ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    Resource, ResourceContents, ResourceTemplate,
};
use warden_core::conversations::view;
use warden_core::{Core, CoreError};

pub const INBOX_URI: &str = "warden://inbox";
const CONVERSATIONS_PREFIX: &str = "warden://conversations/";
pub const CONVERSATION_TEMPLATE: &str = "warden://conversations/{customer_id}";
const JSON: &str = "application/json";

/// A resource the gateway serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceUri {
    Inbox,
    /// One customer's conversation (canonical phone digits).
    Conversation(String),
}

impl ResourceUri {
    /// Parse a URI a client sent. The customer may be written in any accepted phone
    /// form (`+62 812-...`, percent-encoded `%2B62...`); it is kept canonical.
    pub fn parse(uri: &str) -> Result<Self, McpError> {
        if uri == INBOX_URI {
            return Ok(ResourceUri::Inbox);
        }
        let Some(customer) = uri.strip_prefix(CONVERSATIONS_PREFIX) else {
            return Err(McpError::resource_not_found(
                format!(
                    "unknown resource {uri}: this server has {INBOX_URI} and {CONVERSATION_TEMPLATE}"
                ),
                None,
            ));
        };
        let customer = percent_decode(customer);
        match warden_rules::bsuid::customer_key(&customer) {
            Ok(p) => Ok(ResourceUri::Conversation(p.digits().to_string())),
            Err(e) => Err(McpError::invalid_params(
                format!("customer_id in {uri}: {e}"),
                None,
            )),
        }
    }

    /// Is this resource changed by a hint about the customer with this subject token?
    /// The inbox lists every customer; a conversation only its own.
    pub fn woken_by(&self, token: &str) -> bool {
        match self {
            ResourceUri::Inbox => true,
            ResourceUri::Conversation(c) => warden_stream::hints::token(c) == token,
        }
    }
}

impl fmt::Display for ResourceUri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceUri::Inbox => f.write_str(INBOX_URI),
            ResourceUri::Conversation(c) => write!(f, "{CONVERSATIONS_PREFIX}{c}"),
        }
    }
}

/// `%XX` escapes to bytes (a client may encode the `+` of a phone number); anything
/// malformed stays as written and fails the phone check.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
            out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The first page the tools answer by default (list_inbox, get_conversation_history).
const FIRST_PAGE: i64 = 50;

/// `resources/read`: the JSON the tools answer with their defaults (the same core calls),
/// as one `application/json` text content.
pub async fn read(
    core: &Core,
    uri: &str,
    target: &ResourceUri,
) -> Result<ReadResourceResult, McpError> {
    let channel = warden_settings::DEFAULT_CHANNEL;
    let mut conn = core
        .pg()
        .get()
        .await
        .map_err(|e| unavailable(CoreError::from(e)))?;
    let json = match target {
        ResourceUri::Inbox => {
            // Every number in the caller's reach (a limited agent's own).
            let only = core.keys_to_read(None);
            let page = view::inbox(
                &mut conn,
                channel,
                core.senders(),
                only.as_deref(),
                FIRST_PAGE,
                0,
                Utc::now(),
            )
            .await
            .map_err(unavailable)?;
            serde_json::to_string(&page)
        }
        ResourceUri::Conversation(customer) => {
            // The conversation with the default number, or a limited caller's first own.
            let sender = core.sender_ref(None).map_err(unavailable)?;
            let page = view::history(&mut conn, customer, channel, &sender, FIRST_PAGE, None)
                .await
                .map_err(unavailable)?;
            serde_json::to_string(&page)
        }
    }
    .map_err(|e| McpError::internal_error(e.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: uri.to_string(),
            mime_type: Some(JSON.into()),
            text: json,
            meta: None,
        },
    ]))
}

fn unavailable(e: CoreError) -> McpError {
    McpError::internal_error(format!("cannot read the resource now: {e}"), None)
}

/// `resources/list`: the inbox (conversations are reached through the template).
pub fn list() -> ListResourcesResult {
    ListResourcesResult::with_all_items(vec![
        Resource::new(INBOX_URI, "inbox")
            .with_title("Inbox")
            .with_description(
                "Customers waiting for an answer, window closing soonest first: the list_inbox \
                 JSON (first page). Subscribe to hear of every new inbound message and status change.",
            )
            .with_mime_type(JSON),
    ])
}

/// `resources/templates/list`.
pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(CONVERSATION_TEMPLATE, "conversation")
            .with_title("Conversation with one customer")
            .with_description(
                "The first page of get_conversation_history for customer_id (phone number with \
                 country code), newest first. Subscribe to hear of that customer's new inbound \
                 messages and outbound status changes.",
            )
            .with_mime_type(JSON),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse_to_canonical_customers() {
        assert_eq!(ResourceUri::parse(INBOX_URI).unwrap(), ResourceUri::Inbox);
        for uri in [
            "warden://conversations/628123456789",
            "warden://conversations/+628123456789",
            "warden://conversations/%2B628123456789",
            "warden://conversations/+62 812-345-6789",
        ] {
            assert_eq!(
                ResourceUri::parse(uri).unwrap(),
                ResourceUri::Conversation("628123456789".into()),
                "{uri}"
            );
        }
        assert_eq!(
            ResourceUri::Conversation("628123456789".into()).to_string(),
            "warden://conversations/628123456789"
        );
    }

    #[test]
    fn bad_uris_are_refused() {
        for uri in [
            "warden://inbox/",
            "warden://conversations/",
            "warden://conversations/abc",
            "file:///etc/passwd",
            "warden://conversations/%2",
        ] {
            assert!(ResourceUri::parse(uri).is_err(), "{uri}");
        }
    }

    #[test]
    fn the_inbox_wakes_for_everyone_a_conversation_for_its_customer() {
        let conv = ResourceUri::Conversation("628123456789".into());
        assert!(conv.woken_by("628123456789"));
        assert!(!conv.woken_by("628123456780"));
        assert!(ResourceUri::Inbox.woken_by("628123456780"));
    }
}
