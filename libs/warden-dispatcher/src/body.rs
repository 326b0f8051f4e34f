//! The platform request body of a stored message.
//!
//! `messages.content` is what warden-core wrote (`SendKind::to_content`):
//! `{"type":"text","text":{"body":..}}` or
//! `{"type":"template","template":{"name","locale","variables":[..]}}`, or a rich body
//! in the platform's own shape (`{"type":"image","image":{..},"context"?:{..}}`); it is read back
//! with `SendKind::from_content`, which also takes `language` for the locale and numbered
//! variable objects. The row's `template_name`/`template_locale` fill gaps.

use warden_core::{ContentError, SendKind, TemplateSend};
use warden_platform::SendRequest;

/// What the dispatcher needs of a message row to build its send.
pub struct Stored<'a> {
    pub message_id: &'a str,
    pub to: &'a str,
    /// A BSUID or parent BSUID for a customer whose phone is unknown: sent as `recipient`
    /// instead of `to`.
    pub recipient: Option<&'a str>,
    pub content: &'a serde_json::Value,
    pub template_name: Option<&'a str>,
    pub template_locale: Option<&'a str>,
}

/// The platform body, with `biz_opaque_callback_data` = message id (status webhooks echo
/// it, which is how an unknown outcome is settled). `Err` says why the content is unusable.
pub fn build(m: &Stored<'_>) -> Result<SendRequest, ContentError> {
    let kind = match SendKind::from_content(m.content) {
        Ok(kind) => kind,
        // A template row whose content lacks the template object: use the columns.
        Err(reason) => match (
            m.template_name,
            m.content.get("type").and_then(|t| t.as_str()),
        ) {
            (Some(name), None | Some("template")) => SendKind::Template(TemplateSend {
                name: name.to_owned(),
                locale: m.template_locale.unwrap_or("en").to_owned(),
                ..Default::default()
            }),
            _ => return Err(reason),
        },
    };
    let req = match kind {
        SendKind::Text { body } => SendRequest::text(m.to, body),
        SendKind::Template(TemplateSend {
            name,
            locale,
            variables,
            components,
            ..
        }) if components.is_empty() => SendRequest::template(m.to, name, locale, variables),
        // Stored as the checked platform components (header, body, buttons in order).
        SendKind::Template(TemplateSend {
            name,
            locale,
            components,
            ..
        }) => {
            let components = components
                .into_iter()
                .map(serde_json::from_value)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| ContentError::Components)?;
            SendRequest::template_with_components(m.to, name, locale, components)
        }
        // Stored in the platform's shape already: only `to` is added.
        SendKind::Rich(rich) => SendRequest::rich(m.to, &rich.to_json()),
    };
    let req = match m.recipient {
        Some(bsuid) => req.to_recipient(bsuid),
        None => req,
    };
    Ok(req.with_callback_data(m.message_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored<'a>(content: &'a serde_json::Value) -> Stored<'a> {
        Stored {
            message_id: "m-1",
            to: "628123456789",
            recipient: None,
            content,
            template_name: None,
            template_locale: None,
        }
    }

    #[test]
    fn text_content_becomes_a_text_send() {
        let c = json!({"type": "text", "text": {"body": "hello"}});
        let body = serde_json::to_value(build(&stored(&c)).unwrap()).unwrap();
        assert_eq!(
            body,
            json!({"messaging_product": "whatsapp", "recipient_type": "individual",
                   "to": "628123456789", "type": "text",
                   "text": {"preview_url": false, "body": "hello"},
                   "biz_opaque_callback_data": "m-1"})
        );
    }

    #[test]
    fn template_variables_become_body_parameters() {
        let c = json!({"type": "template",
                       "template": {"name": "order_update", "locale": "id", "variables": ["A1", 7]}});
        let body = serde_json::to_value(build(&stored(&c)).unwrap()).unwrap();
        assert_eq!(
            body["template"],
            json!({"name": "order_update", "language": {"code": "id"},
                   "components": [{"type": "body", "parameters": [
                       {"type": "text", "text": "A1"}, {"type": "text", "text": "7"}]}]})
        );
        assert_eq!(body["biz_opaque_callback_data"], "m-1");
    }

    #[test]
    fn numbered_variables_and_language_are_accepted() {
        let c = json!({"type": "template",
                       "template": {"name": "promo", "language": {"code": "en"},
                                    "variables": {"2": "b", "1": "a"}}});
        let req = build(&stored(&c)).unwrap();
        let t = req.template.unwrap();
        assert_eq!(t.language.code, "en");
        let params: Vec<_> = t
            .body_parameters()
            .iter()
            .map(|p| p.text.clone().unwrap())
            .collect();
        assert_eq!(params, ["a", "b"]);
    }

    #[test]
    fn stored_components_are_sent_as_they_are() {
        let components = json!([
            {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.example/a.jpg"}}]},
            {"type": "body", "parameters": [{"type": "text", "parameter_name": "first_name", "text": "Ana"}]},
            {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]},
            {"type": "button", "sub_type": "copy_code", "index": "1", "parameters": [{"type": "coupon_code", "coupon_code": "SAVE"}]}
        ]);
        let c = json!({"type": "template",
                       "template": {"name": "promo", "locale": "en", "variables": [], "components": components}});
        let body = serde_json::to_value(build(&stored(&c)).unwrap()).unwrap();
        assert_eq!(body["template"]["components"], components);
        assert_eq!(body["template"]["language"]["code"], "en");
    }

    #[test]
    fn template_columns_fill_a_bare_content() {
        let c = json!({});
        let mut s = stored(&c);
        s.template_name = Some("welcome");
        s.template_locale = Some("en");
        let t = build(&s).unwrap().template.unwrap();
        assert_eq!(t.name, "welcome");
        assert!(t.components.is_empty());
    }

    #[test]
    fn unusable_content_is_an_error() {
        let c = json!({"type": "text", "text": {}});
        assert!(build(&stored(&c)).is_err());
        let c = json!({"type": "image"});
        assert!(build(&stored(&c)).is_err());
        let c = json!({"type": "contacts", "contacts": []});
        assert!(build(&stored(&c)).is_err());
    }

    #[test]
    fn rich_content_is_the_platform_body() {
        for c in [
            json!({"type": "image", "image": {"link": "https://x.io/a.jpg", "caption": "c"},
                   "context": {"message_id": "wamid.Q"}}),
            json!({"type": "interactive", "interactive": {"type": "button", "body": {"text": "b"},
                   "action": {"buttons": [{"type": "reply", "reply": {"id": "y", "title": "Yes"}}]}}}),
            json!({"type": "location", "location": {"latitude": -6.2, "longitude": 106.8}}),
            json!({"type": "reaction", "reaction": {"message_id": "wamid.I", "emoji": ""}}),
        ] {
            let mut body = serde_json::to_value(build(&stored(&c)).unwrap()).unwrap();
            let obj = body.as_object_mut().unwrap();
            assert_eq!(obj.remove("messaging_product").unwrap(), "whatsapp");
            assert_eq!(obj.remove("recipient_type").unwrap(), "individual");
            assert_eq!(obj.remove("to").unwrap(), "628123456789");
            assert_eq!(obj.remove("biz_opaque_callback_data").unwrap(), "m-1");
            assert_eq!(body, c);
        }
    }
}
