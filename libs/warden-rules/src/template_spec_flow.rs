//! A template's FLOW button: how it is created (`{type: "FLOW", text, flow_id | flow_name,
//! flow_action?, navigate_screen?}`) and what a send gives it (the platform's `button`
//! component, `sub_type "flow"`, parameter `{type: "action", action: {flow_token,
//! flow_action_data?}}`). Every refusal names the field.

use serde_json::{Map, Value, json};

use super::SpecError;
use crate::rich::flow::{check_data, check_token};

/// Most FLOW buttons on one template (platform).
pub const MAX_FLOW_BUTTONS: usize = 1;
/// Longest flow id, flow name or screen name kept.
const MAX_REF_CHARS: usize = 200;

/// The keys only a FLOW button has.
pub const FLOW_KEYS: [&str; 4] = ["flow_id", "flow_name", "flow_action", "navigate_screen"];

/// What a FLOW button opens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlowButton {
    /// The flow's id (exactly one of flow_id and flow_name).
    pub flow_id: Option<String>,
    /// The flow's name.
    pub flow_name: Option<String>,
    /// `navigate` (default) or `data_exchange`.
    pub flow_action: Option<String>,
    /// The first screen (navigate only).
    pub navigate_screen: Option<String>,
}

fn err(field: impl Into<String>, problem: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// A string, or a number written as one (the platform lists flow ids as either).
fn key(o: &Map<String, Value>, k: &str, field: &str) -> Result<Option<String>, SpecError> {
    match o.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(err(format!("{field}.{k}"), "must be a string")),
    }
}

/// The FLOW keys of button object `o` (`field`: `buttons[i]`): `Some` for a FLOW button,
/// and refused on any other kind.
pub fn read(
    o: &Map<String, Value>,
    is_flow: bool,
    field: &str,
) -> Result<Option<FlowButton>, SpecError> {
    if !is_flow {
        return match FLOW_KEYS.iter().find(|k| o.contains_key(**k)) {
            Some(k) => Err(err(format!("{field}.{k}"), "is only for a FLOW button")),
            None => Ok(None),
        };
    }
    Ok(Some(FlowButton {
        flow_id: key(o, "flow_id", field)?,
        flow_name: key(o, "flow_name", field)?,
        flow_action: key(o, "flow_action", field)?,
        navigate_screen: key(o, "navigate_screen", field)?,
    }))
}

fn reference(field: String, value: &str) -> Result<(), SpecError> {
    let n = value.chars().count();
    if value.trim().is_empty() || n > MAX_REF_CHARS {
        return Err(err(
            field,
            format!("must have 1 to {MAX_REF_CHARS} characters"),
        ));
    }
    crate::text::check(value, crate::text::TextKind::Plain).map_err(|e| err(field, e.to_string()))
}

impl FlowButton {
    /// The platform's rules for a FLOW button (`field`: `buttons[i]`).
    pub fn validate(&self, field: &str) -> Result<(), SpecError> {
        match (&self.flow_id, &self.flow_name) {
            (Some(_), Some(_)) => {
                return Err(err(
                    format!("{field}.flow_name"),
                    "and flow_id were both given; give exactly one",
                ));
            }
            (None, None) => {
                return Err(err(
                    format!("{field}.flow_id"),
                    "or flow_name is required for a FLOW button",
                ));
            }
            (Some(id), None) => reference(format!("{field}.flow_id"), id)?,
            (None, Some(name)) => reference(format!("{field}.flow_name"), name)?,
        }
        match self.flow_action.as_deref().unwrap_or("navigate") {
            "navigate" => {
                if let Some(s) = &self.navigate_screen {
                    reference(format!("{field}.navigate_screen"), s)?;
                }
            }
            "data_exchange" => {
                if self.navigate_screen.is_some() {
                    return Err(err(
                        format!("{field}.navigate_screen"),
                        "is only for flow_action navigate",
                    ));
                }
            }
            other => {
                return Err(err(
                    format!("{field}.flow_action"),
                    format!("must be navigate or data_exchange, not {other:?}"),
                ));
            }
        }
        Ok(())
    }

    /// Its keys in the create request's button object.
    pub fn write(&self, o: &mut Value) {
        for (k, v) in [
            ("flow_id", &self.flow_id),
            ("flow_name", &self.flow_name),
            ("flow_action", &self.flow_action),
            ("navigate_screen", &self.navigate_screen),
        ] {
            if let Some(v) = v {
                o[k] = json!(v);
            }
        }
    }
}

/// A FLOW button's send-time parameter from its component's `parameters` (`what`: "button
/// 1 (FLOW)"): exactly one `{type: "action", action: {flow_token?, flow_action_data?}}`.
pub fn send_parameter(parameters: &[Value], what: &str) -> Result<Value, String> {
    let [p] = parameters else {
        return Err(format!(
            "{what} takes exactly 1 parameter {{\"type\": \"action\", \"action\": {{\"flow_token\": \"...\"}}}}, but {} were given",
            parameters.len()
        ));
    };
    let action = match (p.get("type").and_then(Value::as_str), p.get("action")) {
        (Some("action"), Some(Value::Object(a))) => a,
        _ => {
            return Err(format!(
                "{what} takes a parameter {{\"type\": \"action\", \"action\": {{\"flow_token\": \"...\", \"flow_action_data\"?: {{...}}}}}}"
            ));
        }
    };
    let mut out = Map::new();
    for (k, v) in action {
        match (k.as_str(), v) {
            ("flow_token", Value::String(t)) => {
                check_token("flow_token", t).map_err(|e| e.to_string())?;
            }
            ("flow_token", _) => return Err("`flow_token` must be a string".into()),
            ("flow_action_data", d) => {
                check_data("flow_data", d).map_err(|e| e.to_string())?;
            }
            (other, _) => {
                return Err(format!(
                    "{what}'s action has an unknown key {other:?}; use flow_token and flow_action_data"
                ));
            }
        }
        out.insert(k.clone(), v.clone());
    }
    Ok(json!({"type": "action", "action": out}))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::kinds::TemplateCategory;
    use crate::template_spec::{ButtonKind, TemplateSpec, parse_buttons};

    fn spec(buttons: Value) -> Result<TemplateSpec, SpecError> {
        let spec = TemplateSpec {
            body: "Book your table".into(),
            buttons: parse_buttons(&buttons)?,
            ..Default::default()
        };
        spec.validate(TemplateCategory::Utility)?;
        Ok(spec)
    }

    fn field(buttons: Value) -> String {
        spec(buttons).map_or_else(|e| e.field, |_| String::new())
    }

    #[test]
    fn a_flow_button_is_created_and_read_back() {
        let s = spec(json!([{"type": "FLOW", "text": "Book", "flow_id": "123",
            "flow_action": "navigate", "navigate_screen": "WELCOME"}]))
        .unwrap();
        assert_eq!(s.buttons[0].kind, ButtonKind::Flow);
        let components = s.to_components();
        let button = &components.last().unwrap()["buttons"][0];
        assert_eq!(
            button,
            &json!({"type": "FLOW", "text": "Book", "flow_id": "123",
                "flow_action": "navigate", "navigate_screen": "WELCOME"})
        );
        let back = TemplateSpec::from_components(&json!(components), None, "").unwrap();
        assert_eq!(back.buttons, s.buttons);
        // The platform lists ids as numbers too.
        let listed = json!([{"type": "BUTTONS", "buttons": [{"type": "FLOW", "text": "Go", "flow_id": 99}]}]);
        let back = TemplateSpec::from_components(&listed, None, "b").unwrap();
        assert_eq!(
            back.buttons[0].flow.as_ref().unwrap().flow_id.as_deref(),
            Some("99")
        );
    }

    #[test]
    fn each_refusal_names_its_field() {
        let cases = [
            (
                json!([{"type": "FLOW", "text": "Book"}]),
                "buttons[0].flow_id",
            ),
            (
                json!([{"type": "FLOW", "text": "Book", "flow_id": "1", "flow_name": "n"}]),
                "buttons[0].flow_name",
            ),
            (
                json!([{"type": "FLOW", "text": "Book", "flow_id": "1", "flow_action": "jump"}]),
                "buttons[0].flow_action",
            ),
            (
                json!([{"type": "FLOW", "text": "Book", "flow_id": "1",
                    "flow_action": "data_exchange", "navigate_screen": "A"}]),
                "buttons[0].navigate_screen",
            ),
            (json!([{"type": "FLOW", "flow_id": "1"}]), "buttons[0].text"),
            (
                json!([{"type": "URL", "text": "Go", "url": "https://x.example", "flow_id": "1"}]),
                "buttons[0].flow_id",
            ),
            (
                json!([{"type": "FLOW", "text": "A", "flow_id": "1"},
                       {"type": "FLOW", "text": "B", "flow_id": "2"}]),
                "buttons",
            ),
            (
                json!([{"type": "FLOW", "text": "A", "flow_id": ""}]),
                "buttons[0].flow_id",
            ),
        ];
        for (buttons, want) in cases {
            assert_eq!(field(buttons.clone()), want, "{buttons}");
        }
        assert_eq!(
            field(
                json!([{"type": "FLOW", "text": "Book", "flow_name": "booking",
                "flow_action": "data_exchange"}])
            ),
            ""
        );
    }

    #[test]
    fn the_send_parameter_is_checked() {
        let ok = send_parameter(
            &[json!({"type": "action", "action": {"flow_token": "t", "flow_action_data": {"a": 1}}})],
            "button 0 (FLOW)",
        )
        .unwrap();
        assert_eq!(ok["action"]["flow_token"], "t");
        assert!(send_parameter(&[], "b").is_err());
        let e = send_parameter(
            &[json!({"type": "action", "action": {"flow_token": ""}})],
            "b",
        )
        .unwrap_err();
        assert!(e.contains("flow_token"), "{e}");
        let e = send_parameter(
            &[json!({"type": "action", "action": {"flow_action_data": {}}})],
            "b",
        )
        .unwrap_err();
        assert!(e.contains("flow_data"), "{e}");
    }

    proptest! {
        /// Any FLOW button with a reference and a known action is accepted and survives
        /// the trip through the stored components.
        #[test]
        fn any_valid_flow_button_round_trips(
            by_id in any::<bool>(),
            reference in "[a-zA-Z0-9_]{1,40}",
            exchange in any::<bool>(),
            screen in proptest::option::of("[A-Z_]{1,20}"),
            text in "[a-zA-Z][a-zA-Z ]{0,24}",
        ) {
            let mut b = json!({"type": "FLOW", "text": text});
            b[if by_id { "flow_id" } else { "flow_name" }] = json!(reference);
            if exchange {
                b["flow_action"] = json!("data_exchange");
            } else if let Some(s) = screen {
                b["navigate_screen"] = json!(s);
            }
            let s = spec(json!([b])).unwrap();
            let back = TemplateSpec::from_components(&json!(s.to_components()), None, "").unwrap();
            prop_assert_eq!(back.buttons, s.buttons);
        }
    }
}
