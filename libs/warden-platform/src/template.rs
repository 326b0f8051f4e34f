//! Message templates: create/read bodies and placeholder rules.

use crate::lenient;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /{waba-id}/message_templates`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateTemplateRequest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub language: String,
    /// MARKETING, UTILITY or AUTHENTICATION.
    #[serde(default)]
    pub category: String,
    #[serde(default)]
    pub components: Vec<TemplateComponent>,
    /// `positional` (the platform's default when absent) or `named`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameter_format: Option<String>,
}

impl CreateTemplateRequest {
    /// A template with one BODY component. When the body has placeholders an example
    /// value is supplied for each, as the platform requires.
    pub fn new(name: &str, language: &str, category: &str, body_text: &str) -> Self {
        let n = placeholders(body_text).map(|p| p.len()).unwrap_or(0);
        let example = (n > 0).then(|| {
            let values: Vec<String> = (1..=n).map(|i| format!("example{i}")).collect();
            serde_json::json!({ "body_text": [values] })
        });
        Self {
            name: name.to_owned(),
            language: language.to_owned(),
            category: category.to_ascii_uppercase(),
            components: vec![TemplateComponent {
                kind: "BODY".to_owned(),
                format: None,
                text: Some(body_text.to_owned()),
                example,
                buttons: None,
                extra: Default::default(),
            }],
            parameter_format: None,
        }
    }

    /// The text of the BODY component.
    pub fn body_text(&self) -> Option<&str> {
        body_of(&self.components)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateComponent {
    /// BODY, HEADER, FOOTER, BUTTONS.
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    /// BUTTONS: `[{type, text, url?, phone_number?, example?, otp_type?}]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buttons: Option<Value>,
    /// The other formats' fields, kept as they came: CAROUSEL `cards`,
    /// LIMITED_TIME_OFFER `limited_time_offer`, an authentication BODY's
    /// `add_security_recommendation` and FOOTER's `code_expiration_minutes`.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// The answer to a template creation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateTemplateResponse {
    #[serde(deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub category: String,
}

/// One template as `GET /{waba-id}/message_templates` lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TemplateInfo {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub language: String,
    /// APPROVED, PENDING, REJECTED, PAUSED, DISABLED, ...
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub category: String,
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(default)]
    pub components: Vec<TemplateComponent>,
    /// NONE, or the reason of a rejection.
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub rejected_reason: Option<String>,
    /// `POSITIONAL` or `NAMED` (absent: positional).
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub parameter_format: Option<String>,
}

impl TemplateInfo {
    /// The text of the BODY component.
    pub fn body_text(&self) -> Option<&str> {
        body_of(&self.components)
    }
}

fn body_of(components: &[TemplateComponent]) -> Option<&str> {
    components
        .iter()
        .find(|c| c.kind.eq_ignore_ascii_case("body"))
        .and_then(|c| c.text.as_deref())
}

/// `{"data": [...], "paging": {...}}`, the platform's list shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListResponse<T> {
    #[serde(default = "Vec::new")]
    pub data: Vec<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paging: Option<Paging>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Paging {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursors: Option<Value>,
    /// Full URL of the next page, absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Why a body's placeholders are not usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceholderError {
    #[error("placeholder {{{{{0}}}}} is not a positive number")]
    NotANumber(String),
    #[error("placeholders must be numbered 1..n without gaps; {{{{{0}}}}} is missing")]
    Gap(u32),
}

/// The distinct placeholder numbers of a template body, sorted: `"Hi {{1}}, {{2}} {{1}}"`
/// gives `[1, 2]`. A send must carry exactly that many body parameters.
pub fn placeholders(body: &str) -> Result<Vec<u32>, PlaceholderError> {
    let mut found = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let inner = after[..end].trim();
        match inner.parse::<u32>() {
            Ok(n) if n > 0 => found.push(n),
            _ => return Err(PlaceholderError::NotANumber(inner.to_owned())),
        }
        rest = &after[end + 2..];
    }
    found.sort_unstable();
    found.dedup();
    for (i, n) in found.iter().enumerate() {
        let want = i as u32 + 1;
        if *n != want {
            return Err(PlaceholderError::Gap(want));
        }
    }
    Ok(found)
}

/// Fills `{{n}}` with `values[n-1]`; unknown numbers are left as written.
pub fn render(body: &str, values: &[impl AsRef<str>]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let value = after[..end]
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| values.get(i));
        match value {
            Some(v) => out.push_str(v.as_ref()),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_distinct_placeholders() {
        assert_eq!(placeholders("no vars").unwrap(), Vec::<u32>::new());
        assert_eq!(
            placeholders("Hi {{1}}, {{2}} and {{1}}").unwrap(),
            vec![1, 2]
        );
        assert_eq!(placeholders("{{ 1 }}").unwrap(), vec![1]);
        assert_eq!(placeholders("{{2}}"), Err(PlaceholderError::Gap(1)));
        assert!(matches!(
            placeholders("{{name}}"),
            Err(PlaceholderError::NotANumber(_))
        ));
        assert_eq!(placeholders("dangling {{1").unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn renders_values() {
        assert_eq!(render("Hi {{1}}, {{2}}!", &["Ana", "bye"]), "Hi Ana, bye!");
        assert_eq!(render("{{3}} {{1", &["x"]), "{{3}} {{1");
    }

    #[test]
    fn create_request_carries_examples() {
        let r = CreateTemplateRequest::new("order_update", "en", "utility", "Order {{1}} {{2}}");
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["category"], "UTILITY");
        assert_eq!(v["components"][0]["type"], "BODY");
        assert_eq!(
            v["components"][0]["example"],
            json!({"body_text": [["example1", "example2"]]})
        );
        assert_eq!(r.body_text(), Some("Order {{1}} {{2}}"));
    }

    #[test]
    fn parses_template_list() {
        let l: ListResponse<TemplateInfo> = serde_json::from_value(json!({
            "data": [{"name": "t", "language": "en_US", "status": "REJECTED", "category": "MARKETING",
                      "id": 123, "rejected_reason": "PROMOTIONAL",
                      "components": [{"type": "BODY", "text": "Hi {{1}}"}]}],
            "paging": {"cursors": {"before": "a", "after": "b"}}
        }))
        .unwrap();
        assert_eq!(l.data[0].id, "123");
        assert_eq!(l.data[0].body_text(), Some("Hi {{1}}"));
        assert_eq!(l.paging.unwrap().next, None);
    }
}
