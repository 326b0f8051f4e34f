//! A template's FLOW button as the platform checks it at create time (no state needed, so
//! the template checks use it without reaching the sim's state).

use serde_json::Value;

/// A template's FLOW button at create time (`i`: its position): its text, one of flow_id
/// and flow_name, and a known flow_action.
pub fn check_flow_button(i: usize, b: &Value) -> Result<(), String> {
    let s = |k: &str| {
        b.get(k).and_then(|v| {
            v.as_str()
                .map(str::to_owned)
                .or_else(|| v.as_u64().map(|n| n.to_string()))
        })
    };
    if s("text").is_none_or(|t| t.is_empty() || t.chars().count() > 25) {
        return Err(format!(
            "buttons[{i}].text is required and at most 25 characters"
        ));
    }
    match (s("flow_id"), s("flow_name")) {
        (Some(_), Some(_)) => {
            return Err(format!("buttons[{i}]: give flow_id or flow_name, not both"));
        }
        (None, None) => return Err(format!("buttons[{i}].flow_id or flow_name is required")),
        _ => {}
    }
    match s("flow_action").as_deref().unwrap_or("navigate") {
        "navigate" => Ok(()),
        "data_exchange" if s("navigate_screen").is_none() => Ok(()),
        "data_exchange" => Err(format!(
            "buttons[{i}].navigate_screen is only for flow_action navigate"
        )),
        _ => Err(format!(
            "buttons[{i}].flow_action must be navigate or data_exchange"
        )),
    }
}
