//! Parameters several tools share, written once and flattened into each tool's struct
//! (`#[serde(flatten)]`). A flattened field's error does not reach [`super::parse`] with
//! its name, so these types name themselves in their refusals.

use schemars::JsonSchema;
use serde::Deserialize as DeriveDeserialize;
use serde::de::{Deserialize, Deserializer};

use super::fields::Text;
use super::refuse;
use crate::error::{ToolError, ToolResult};
use crate::input::parsers::check_language;
use crate::quoting::{echo, kind_message};

/// `channel`: absent means `whatsapp`, the only channel; any case.
#[derive(Clone, Copy, Debug)]
pub struct Channel(pub &'static str);

schema_of!(Channel => String);

impl<'de> Deserialize<'de> for Channel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => s,
            other => {
                return Err(refuse(
                    format!(
                        "The parameter `channel` must be a string, not {}.",
                        kind(&other)
                    ),
                    "Leave `channel` out or pass \"whatsapp\".",
                ));
            }
        };
        warden_rules::text::check(&raw, warden_rules::text::TextKind::FreeText).map_err(|e| {
            refuse(
                format!("The parameter `channel` {e}."),
                "Remove control characters from `channel` and call again.",
            )
        })?;
        warden_rules::kinds::parse_channel(Some(&raw))
            .map(Channel)
            .map_err(|e| {
                refuse(
                    format!("{}.", kind_message(&e)),
                    "Leave `channel` out or pass \"whatsapp\".",
                )
            })
    }
}

/// The most characters a sender name (`from`, an item of `senders`) may have: ids are at
/// most 32, the platform's phone number ids are shorter than this.
pub const MAX_SENDER_CHARS: usize = 64;

/// `from`: a sender id or its phone_number_id (the core checks it names one), trimmed; a
/// longer one than any sender's is refused before it is looked up or quoted back.
#[derive(Clone, Debug)]
pub struct SenderName(pub String);

schema_of!(SenderName => String);

impl<'de> Deserialize<'de> for SenderName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Text::deserialize(d)?.0;
        check_sender_name("from", &text).map_err(super::lift)?;
        Ok(SenderName(text))
    }
}

/// A sender name given as `param`: at most [`MAX_SENDER_CHARS`] characters.
pub fn check_sender_name(param: &str, name: &str) -> ToolResult<()> {
    let n = name.chars().count();
    if n > MAX_SENDER_CHARS {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{param}` has {n} characters; a sender id or phone_number_id has at most {MAX_SENDER_CHARS}."
            ),
            "Pass a sender id or its phone_number_id (list_senders lists them).",
        ));
    }
    Ok(())
}

/// Where a conversation happens: the `channel` and the business number (`from`) of a tool
/// that sends to, reads or checks one customer's conversation.
#[derive(DeriveDeserialize, JsonSchema, Clone, Debug, Default)]
pub struct OnChannel {
    /// Messaging channel; only "whatsapp" exists and it is the default.
    #[schemars(extend("default" = "whatsapp"))]
    channel: Option<Channel>,
    /// The business number to send from or read: a sender id or its phone_number_id
    /// (list_senders lists them). Default: the default sender.
    from: Option<SenderName>,
}

impl OnChannel {
    pub fn channel(&self) -> &'static str {
        self.channel
            .map_or(warden_rules::kinds::DEFAULT_CHANNEL, |c| c.0)
    }

    /// The default channel from the sender stored as `sender`.
    pub fn from_sender(sender: String) -> OnChannel {
        OnChannel {
            channel: None,
            from: Some(SenderName(sender)),
        }
    }

    /// The sender `from` names, as given (the core checks it names one).
    pub fn from(&self) -> Option<&str> {
        self.from.as_ref().map(|t| t.0.as_str())
    }
}

/// `idempotency_key`: 1..128 printable ASCII characters.
#[derive(Clone, Debug)]
pub struct IdempotencyKey(pub String);

schema_of!(IdempotencyKey => String);

impl<'de> Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let key = match serde_json::Value::deserialize(d)? {
            serde_json::Value::String(s) => s,
            other => {
                return Err(refuse(
                    format!(
                        "The parameter `idempotency_key` must be a string, not {}.",
                        kind(&other)
                    ),
                    "Pass `idempotency_key` as 1 to 128 printable ASCII characters, e.g. \"order-1234-reminder\".",
                ));
            }
        };
        warden_rules::safety::idempotency::check_key(&key).map_err(|e| {
            refuse(
                format!("{e}."),
                "Pass `idempotency_key` as 1 to 128 printable ASCII characters, e.g. \"order-1234-reminder\", or leave it out.",
            )
        })?;
        Ok(IdempotencyKey(key))
    }
}

/// The `idempotency_key` of a tool that sends or schedules
/// ([`super::Input::idempotency`] turns it into the key the core enforces).
#[derive(DeriveDeserialize, JsonSchema, Clone, Debug, Default)]
pub struct Keyed {
    /// Optional: 1..128 printable ASCII characters naming this call, taken exactly as given (a space, line break or other control character is refused, never trimmed). Repeating the call with the same key and the same arguments within 24 h returns the first result (the same id, replayed true) and sends or creates nothing; the same key with other arguments is INVALID_ARGUMENT. Use one key per intended message, e.g. when retrying after a timeout.
    pub idempotency_key: Option<IdempotencyKey>,
}

/// A template's language from `locale` (default `en`) or `language`, as create_template and
/// the platform call it (accepted, not published); either must be a language code.
pub fn template_locale(locale: &Option<Text>, language: &Option<Text>) -> ToolResult<String> {
    let (key, value) = match (locale, language) {
        (Some(l), Some(g)) if !l.0.eq_ignore_ascii_case(&g.0) => {
            return Err(ToolError::invalid(
                format!(
                    "`locale` ({}) and `language` ({}) disagree.",
                    echo(&l.0),
                    echo(&g.0)
                ),
                "Pass only `locale`, e.g. \"en\".",
            ));
        }
        (Some(l), _) => ("locale", l),
        (None, Some(g)) => ("language", g),
        (None, None) => return Ok("en".into()),
    };
    check_language(key, &value.0)?;
    Ok(value.0.clone())
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::input::parse;

    #[derive(DeriveDeserialize, JsonSchema)]
    struct Probe {
        #[serde(flatten)]
        on: OnChannel,
        #[serde(flatten)]
        keyed: Keyed,
    }

    fn refusal(v: serde_json::Value) -> String {
        match parse::<Probe>(v.as_object().cloned().unwrap()) {
            Ok(_) => panic!("accepted"),
            Err(e) => format!("{} | {}", e.message, e.suggested_action),
        }
    }

    #[test]
    fn flattened_fields_name_themselves() {
        let ok = parse::<Probe>(json!({"channel": "WhatsApp"}).as_object().cloned().unwrap());
        assert_eq!(ok.ok().unwrap().on.channel(), "whatsapp");
        let absent = parse::<Probe>(json!({}).as_object().cloned().unwrap())
            .ok()
            .unwrap();
        assert_eq!(absent.on.channel(), "whatsapp");
        assert!(absent.keyed.idempotency_key.is_none());
        assert!(refusal(json!({"channel": "sms"})).contains("`channel`"));
        assert!(refusal(json!({"channel": 5})).contains("`channel` must be a string"));
        assert!(refusal(json!({"idempotency_key": 5})).contains("`idempotency_key`"));
        assert!(refusal(json!({"idempotency_key": "a b"})).contains("`idempotency_key`"));
    }

    #[test]
    fn a_blank_idempotency_key_is_refused_not_ignored() {
        let input = parse::<Probe>(
            json!({"idempotency_key": " "})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .ok()
        .unwrap();
        let e = input
            .idempotency(&input.keyed, "send_message", "agent")
            .unwrap_err();
        assert_eq!(e.code, "INVALID_ARGUMENT");
        assert!(e.message.contains("`idempotency_key`"), "{}", e.message);
    }

    #[test]
    fn locale_or_language() {
        let t = |s: &str| Some(Text(s.into()));
        assert_eq!(template_locale(&None, &None).unwrap(), "en");
        assert_eq!(template_locale(&None, &t("id")).unwrap(), "id");
        assert_eq!(template_locale(&t("pt_BR"), &t("PT_br")).unwrap(), "pt_BR");
        assert!(
            template_locale(&t("en"), &t("id"))
                .unwrap_err()
                .message
                .contains("disagree")
        );
        let long = "x".repeat(100_000);
        let e = template_locale(&t(&long), &None).unwrap_err();
        assert!(e.message.len() < 300, "{}", e.message);
    }
}
