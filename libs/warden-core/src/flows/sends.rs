//! The flow token of a flow message Warden sends, recorded with the message row (in the
//! send path's own statement pipeline), so a submission arriving before the message's
//! wamid is known still finds it by its token.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::Value;
use uuid::Uuid;
use warden_store::schema::flow_sends;

/// The flow token a stored outbound content carries: a flow message's
/// `interactive.action.parameters.flow_token`, or the token of a template's FLOW button
/// (`components[] {type: button, sub_type: flow, parameters[] {action {flow_token}}}`).
pub fn token_of_content(content: &Value) -> Option<String> {
    let interactive = content
        .get("interactive")
        .filter(|i| i.get("type").and_then(Value::as_str) == Some("flow"))
        .and_then(|i| i.pointer("/action/parameters/flow_token"))
        .and_then(Value::as_str);
    let template = || {
        content
            .pointer("/template/components")
            .and_then(Value::as_array)?
            .iter()
            .filter(|c| {
                c.get("type").and_then(Value::as_str) == Some("button")
                    && c.get("sub_type").and_then(Value::as_str) == Some("flow")
            })
            .flat_map(|c| {
                c.get("parameters")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .find_map(|p| p.pointer("/action/flow_token").and_then(Value::as_str))
    };
    interactive
        .or_else(template)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Record the token of message `message_id` when its content carries one (nothing
/// otherwise, so other sends pay nothing).
pub async fn record(
    mut conn: &AsyncPgConnection,
    message_id: Uuid,
    content: &Value,
) -> QueryResult<usize> {
    let Some(token) = token_of_content(content) else {
        return Ok(0);
    };
    diesel::insert_into(flow_sends::table)
        .values((
            flow_sends::message_id.eq(message_id),
            flow_sends::flow_token.eq(token),
        ))
        .on_conflict_do_nothing()
        .execute(&mut conn)
        .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::token_of_content;

    #[test]
    fn the_token_of_a_flow_message_or_a_flow_button() {
        let flow = json!({"type": "interactive", "interactive": {"type": "flow",
            "action": {"name": "flow", "parameters": {"flow_token": "t1"}}}});
        assert_eq!(token_of_content(&flow).as_deref(), Some("t1"));
        let template = json!({"type": "template", "template": {"name": "n", "components": [
            {"type": "body", "parameters": []},
            {"type": "button", "sub_type": "flow", "index": "0",
             "parameters": [{"type": "action", "action": {"flow_token": "t2"}}]}]}});
        assert_eq!(token_of_content(&template).as_deref(), Some("t2"));
        let other = json!({"type": "interactive", "interactive": {"type": "cta_url",
            "action": {"name": "cta_url", "parameters": {"flow_token": "no"}}}});
        assert_eq!(token_of_content(&other), None);
        assert_eq!(token_of_content(&json!({"type": "text"})), None);
    }
}
