//! Which scope each tool needs (docs/remote-agents.md, Scopes). `tools/list` shows a caller only
//! the tools its scopes allow; calling any other answers `FORBIDDEN` naming the scope.
//!
//! The table names each tool by its router entry (the `_tool_attr` function rmcp writes for
//! a `#[tool]` handler), so a tool's name is written once, on its handler: a renamed or
//! removed tool fails to compile here instead of falling silently to `admin`.

use std::collections::HashMap;
use std::sync::LazyLock;

use rmcp::model::Tool;

use crate::caller::Scope;
use crate::gateway::Gateway as G;

type Entry = fn() -> Tool;

/// Each scope's tools.
const TABLE: &[(Scope, &[Entry])] = &[
    (
        Scope::Read,
        &[
            G::check_compliance_tool_attr,
            G::check_conversation_tool_attr,
            G::check_frequency_cap_tool_attr,
            G::estimate_cost_tool_attr,
            G::estimate_pricing_tool_attr,
            G::explain_error_tool_attr,
            G::get_account_quality_tool_attr,
            G::get_campaign_tool_attr,
            G::get_conversation_history_tool_attr,
            G::get_customer_context_tool_attr,
            G::get_delivery_status_tool_attr,
            G::get_flow_responses_tool_attr,
            G::get_media_tool_attr,
            G::get_rate_limit_tool_attr,
            G::get_spend_tool_attr,
            G::list_conversations_tool_attr,
            G::list_flows_tool_attr,
            G::list_inbox_tool_attr,
            G::list_senders_tool_attr,
            G::list_templates_tool_attr,
        ],
    ),
    (
        Scope::Send,
        &[
            G::send_message_tool_attr,
            G::send_template_tool_attr,
            G::send_media_tool_attr,
            G::send_interactive_tool_attr,
            G::send_location_tool_attr,
            G::send_contacts_tool_attr,
            G::reply_customer_tool_attr,
            G::react_to_message_tool_attr,
            G::mark_as_read_tool_attr,
            G::retry_failed_messages_tool_attr,
            // A hand-off only steps the agents aside; giving it back is an operator's call.
            G::hand_off_conversation_tool_attr,
            // Uploading is the first half of sending media.
            G::upload_media_tool_attr,
        ],
    ),
    (Scope::Schedule, &[G::schedule_message_tool_attr]),
    (
        Scope::Campaigns,
        &[
            G::schedule_campaign_tool_attr,
            G::cancel_campaign_tool_attr,
            G::pause_campaign_tool_attr,
            G::resume_campaign_tool_attr,
            G::preview_campaign_tool_attr,
        ],
    ),
    (
        Scope::Templates,
        &[
            G::create_template_tool_attr,
            G::sync_template_status_tool_attr,
        ],
    ),
    (
        Scope::Admin,
        &[
            G::archive_chat_tool_attr,
            G::sync_webhooks_tool_attr,
            G::resume_sender_tool_attr,
            G::release_conversation_tool_attr,
        ],
    ),
];

/// [`TABLE`] by tool name, built once (each entry builds its tool's definition).
static BY_NAME: LazyLock<HashMap<String, Scope>> = LazyLock::new(|| {
    TABLE
        .iter()
        .flat_map(|(scope, entries)| {
            entries
                .iter()
                .map(|entry| (entry().name.to_string(), *scope))
        })
        .collect()
});

/// The scope `tool` needs. A tool missing from this table needs `admin`, so a new tool is
/// never open to every agent by mistake (a test checks every tool is listed).
pub(crate) fn required(tool: &str) -> Scope {
    listed(tool).unwrap_or(Scope::Admin)
}

pub(crate) fn listed(tool: &str) -> Option<Scope> {
    BY_NAME.get(tool).copied()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn every_served_tool_has_a_scope_and_every_scope_entry_is_served() {
        let served: BTreeSet<String> = G::all_tools()
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        let listed: BTreeSet<String> = BY_NAME.keys().cloned().collect();
        assert_eq!(served, listed);
        let entries: usize = TABLE.iter().map(|(_, e)| e.len()).sum();
        assert_eq!(entries, listed.len(), "a tool is listed under two scopes");
    }

    #[test]
    fn a_tool_outside_the_table_needs_admin() {
        assert_eq!(required("no_such_tool"), Scope::Admin);
        assert_eq!(required("check_compliance"), Scope::Read);
        assert_eq!(required("schedule_message"), Scope::Schedule);
    }
}
