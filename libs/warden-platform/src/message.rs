//! `POST /{phone-number-id}/messages`: request and answer bodies.

use crate::lenient;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const MESSAGING_PRODUCT: &str = "whatsapp";

/// A send request. `kind` names which of the content fields is set; the objects of the
/// other kinds (`image`, `interactive`, `location`, `reaction`, ...) and `context` are
/// carried as JSON in `other`, in the platform's own shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SendRequest {
    #[serde(default)]
    pub messaging_product: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient_type: Option<String>,
    /// The phone number; empty (and not sent) when addressed by `recipient`.
    #[serde(
        default,
        deserialize_with = "lenient::string",
        skip_serializing_if = "String::is_empty"
    )]
    pub to: String,
    /// A BSUID or parent BSUID, for a user whose phone is unknown (`to` wins when both).
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub recipient: Option<String>,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextContent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateMessage>,
    /// Echoed in every status webhook of this message.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub biz_opaque_callback_data: Option<String>,
    /// Every other top-level field: the object named by `type` for kinds other than
    /// text and template, and `context` (`{"message_id": wamid}`) when quoting.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl SendRequest {
    fn base(to: impl Into<String>, kind: &str) -> Self {
        Self {
            messaging_product: MESSAGING_PRODUCT.to_owned(),
            recipient_type: Some("individual".to_owned()),
            to: to.into(),
            recipient: None,
            kind: kind.to_owned(),
            text: None,
            template: None,
            biz_opaque_callback_data: None,
            other: Map::new(),
        }
    }

    /// A message of any other kind from its body in the platform's shape minus
    /// `messaging_product`/`to`: `{"type": k, k: {...}, "context"?: {...}}`.
    pub fn rich(to: impl Into<String>, body: &Value) -> Self {
        let kind = body.get("type").and_then(Value::as_str).unwrap_or("");
        let mut req = Self::base(to, kind);
        if let Some(obj) = body.as_object() {
            for (k, v) in obj {
                if !matches!(
                    k.as_str(),
                    "type" | "messaging_product" | "to" | "recipient_type"
                ) {
                    req.other.insert(k.clone(), v.clone());
                }
            }
        }
        req
    }

    /// A free-form text message (no link preview).
    pub fn text(to: impl Into<String>, body: impl Into<String>) -> Self {
        Self {
            text: Some(TextContent {
                preview_url: Some(false),
                body: body.into(),
            }),
            ..Self::base(to, "text")
        }
    }

    /// A template message whose body placeholders `{{1}}..{{n}}` take `params` in order.
    /// No `components` are sent when `params` is empty.
    pub fn template<I, S>(
        to: impl Into<String>,
        name: impl Into<String>,
        language: impl Into<String>,
        params: I,
    ) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let parameters: Vec<Parameter> = params.into_iter().map(Parameter::text).collect();
        let components = if parameters.is_empty() {
            Vec::new()
        } else {
            vec![Component {
                kind: "body".to_owned(),
                sub_type: None,
                index: None,
                parameters,
                other: Default::default(),
            }]
        };
        Self::template_with_components(to, name, language, components)
    }

    /// A template message with its full `components` (header, body, buttons) in the
    /// platform's shape, as `warden_rules::template_params::resolve` builds them.
    pub fn template_with_components(
        to: impl Into<String>,
        name: impl Into<String>,
        language: impl Into<String>,
        components: Vec<Component>,
    ) -> Self {
        Self {
            template: Some(TemplateMessage {
                name: name.into(),
                language: Language {
                    code: language.into(),
                    policy: None,
                },
                components,
            }),
            ..Self::base(to, "template")
        }
    }

    /// Addressed by BSUID (`recipient`) instead of phone (`to`).
    pub fn to_recipient(mut self, bsuid: impl Into<String>) -> Self {
        self.to.clear();
        self.recipient = Some(bsuid.into());
        self
    }

    /// Sets `biz_opaque_callback_data` (Warden puts its message_id there).
    pub fn with_callback_data(mut self, data: impl Into<String>) -> Self {
        self.biz_opaque_callback_data = Some(data.into());
        self
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextContent {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_url: Option<bool>,
    #[serde(default)]
    pub body: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateMessage {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub language: Language,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
}

impl TemplateMessage {
    /// Parameters of the `body` component (case-insensitive), empty when none.
    pub fn body_parameters(&self) -> &[Parameter] {
        self.components
            .iter()
            .find(|c| c.kind.eq_ignore_ascii_case("body"))
            .map(|c| c.parameters.as_slice())
            .unwrap_or(&[])
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Language {
    #[serde(default)]
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// `body`, `header`, `button`.
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_type: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub index: Option<String>,
    #[serde(default)]
    pub parameters: Vec<Parameter>,
    /// Other fields, kept as they came: a carousel's `cards`.
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// One parameter. `text` (and a named template's `parameter_name`) is modelled; the
/// other kinds' fields (`image`, `coupon_code`, `payload`, `location`, ...) are kept as
/// they came in `other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl Parameter {
    pub fn text(value: impl Into<String>) -> Self {
        Self {
            kind: "text".to_owned(),
            text: Some(value.into()),
            ..Self::default()
        }
    }
}

/// The answer to an accepted send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SendResponse {
    #[serde(default)]
    pub messaging_product: String,
    #[serde(default)]
    pub contacts: Vec<SendContact>,
    #[serde(default)]
    pub messages: Vec<SentMessage>,
}

impl SendResponse {
    /// The wamid of the accepted message.
    pub fn wamid(&self) -> Option<&str> {
        self.messages.first().map(|m| m.id.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SendContact {
    #[serde(default, deserialize_with = "lenient::string")]
    pub input: String,
    #[serde(default, deserialize_with = "lenient::string")]
    pub wa_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SentMessage {
    pub id: String,
    /// `accepted`, `held_for_quality_assessment`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_status: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_request_has_the_platform_shape() {
        let req = SendRequest::text("628123456789", "hi").with_callback_data("m-1");
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            json!({"messaging_product": "whatsapp", "recipient_type": "individual",
                   "to": "628123456789", "type": "text",
                   "text": {"preview_url": false, "body": "hi"},
                   "biz_opaque_callback_data": "m-1"})
        );
    }

    #[test]
    fn template_request_has_the_platform_shape() {
        let req = SendRequest::template("628123456789", "order_update", "en", ["A1", "B2"]);
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            json!({"messaging_product": "whatsapp", "recipient_type": "individual",
                   "to": "628123456789", "type": "template",
                   "template": {"name": "order_update", "language": {"code": "en"},
                     "components": [{"type": "body", "parameters": [
                        {"type": "text", "text": "A1"}, {"type": "text", "text": "B2"}]}]}})
        );
        let back: SendRequest =
            serde_json::from_value(serde_json::to_value(&req).unwrap()).unwrap();
        assert_eq!(back, req);
        assert_eq!(back.template.unwrap().body_parameters().len(), 2);
        let none = SendRequest::template("1", "t", "en", Vec::<String>::new());
        assert!(none.template.unwrap().components.is_empty());
    }

    #[test]
    fn rich_request_carries_the_kind_object_and_context() {
        let body = json!({"type": "image", "image": {"id": "77", "caption": "hi"},
                          "context": {"message_id": "wamid.Q"}});
        let req = SendRequest::rich("628123456789", &body).with_callback_data("m-1");
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(
            v,
            json!({"messaging_product": "whatsapp", "recipient_type": "individual",
                   "to": "628123456789", "type": "image",
                   "image": {"id": "77", "caption": "hi"}, "context": {"message_id": "wamid.Q"},
                   "biz_opaque_callback_data": "m-1"})
        );
        let back: SendRequest = serde_json::from_value(v).unwrap();
        assert_eq!(back, req);
        assert_eq!(back.other["image"]["id"], "77");
    }

    #[test]
    fn parses_send_response() {
        let r: SendResponse = serde_json::from_value(json!({
            "messaging_product": "whatsapp",
            "contacts": [{"input": "+62 812", "wa_id": 62812}],
            "messages": [{"id": "wamid.HBg", "message_status": "accepted"}]
        }))
        .unwrap();
        assert_eq!(r.wamid(), Some("wamid.HBg"));
        assert_eq!(r.contacts[0].wa_id, "62812");
    }
}
