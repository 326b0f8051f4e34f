//! The console's policy tester: what a send of this type and text to this customer would
//! decide now, and the rule that decided it. Nothing is sent or written: the same checks
//! check_compliance runs ([`Core::check`], then the content policies on the text).

use chrono::Utc;
use warden_rules::compliance::Decision;
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;

use crate::{Core, CoreError, SendKind};

/// The decision for a `message_type` send of `text` (if any) to `phone` from the default
/// sender, now.
pub async fn decide(
    core: &Core,
    phone: &PhoneNumber,
    message_type: MessageType,
    text: Option<&str>,
) -> Result<Decision, CoreError> {
    let content = message_type.described_content();
    let decision = core.check(phone, None, content, Utc::now()).await?;
    let body = text.map(str::trim).filter(|t| !t.is_empty());
    if let Some(body) = body.filter(|_| decision.allowed) {
        let content = SendKind::Text {
            body: body.to_string(),
        }
        .to_content();
        if let Some(refusal) = core
            .check_content(phone, content_category(message_type), &content)
            .await?
        {
            return Ok(refusal);
        }
    }
    Ok(decision)
}

fn content_category(t: MessageType) -> warden_rules::kinds::Category {
    t.described_content().category()
}
