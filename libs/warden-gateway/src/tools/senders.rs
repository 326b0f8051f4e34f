//! The business numbers (senders) of the deployment: list_senders and resume_sender, and
//! which ones the calling agent may use.
//!
//! An agent limited to some senders (`warden-admin agents create NAME --senders a1,a2`) may
//! only send from and read them. The senders a call names (its `from`, the `senders` it
//! lists) are checked once per call, before the tool runs ([`Gateway::sender_refusal`]:
//! FORBIDDEN); a call that names none is about the caller's own numbers, and what it reaches
//! by id is checked by the core (`warden_core::reach`: NOT_FOUND outside them).

use chrono::Utc;
use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::answer::{finish, opt_ts, ts};
use crate::caller::Caller;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::shared::SenderName;
use crate::input::{Input, parse};
use crate::quoting::echo;
use crate::schema::{
    self, MessagingLimitOut, NoParams, ProtectionOut, SenderOut, SendersOut, ThroughputOut,
};

#[tool_router(router = sender_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "List the business numbers (senders) this deployment sends from, each with what Warden knows of it: \
id (what `from` takes), phone_number_id, display_phone_number, waba_id (one business: numbers sharing it share consent, \
frequency caps and templates), portfolio_id, default (the number used without `from`), quality_rating (RED while the \
platform flagged it, else null), protection (why it sends no marketing now, else null), throughput (mps and what set it) \
and messaging_limit (its portfolio's limit, used, resets_at). An agent limited to some senders sees only those. From \
what Warden stored: no platform call, never a token or a secret. Errors: UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<NoParams>(),
        output_schema = schema::output::<SendersOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_senders(&self, tool: ToolName, _args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.list_senders_impl().await)
    }

    #[tool(
        description = "Let a protected number send marketing again. A number is protected (list_senders shows \
`protection`) when the platform flagged its quality RED or answered one of its messages with a halt-class error \
(131048 spam rate limit, 131031 account locked, 368 policy block): its marketing is refused and its campaigns pause \
with reason sender_protection. Resuming lifts that and runs again the campaigns it paused; check the number's \
standing with the platform first. Returns from and resumed (false when it was not protected). Audited. Errors: \
INVALID_ARGUMENT (unknown from: the ids are listed), FORBIDDEN (needs the admin scope, or a number outside the \
agent's senders), UNAVAILABLE.",
        input_schema = schema::input::<ResumeSenderIn>(),
        output_schema = schema::output::<ResumeSenderOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn resume_sender(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.resume_sender_impl(args).await)
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct ResumeSenderIn {
    /// The number to resume: a sender id or its phone_number_id (list_senders lists them).
    pub from: SenderName,
}

#[derive(Serialize, JsonSchema)]
pub struct ResumeSenderOut {
    /// The sender id.
    pub from: String,
    /// True when it was protected and now sends marketing again.
    pub resumed: bool,
}

impl Gateway {
    async fn resume_sender_impl(&self, args: JsonObject) -> ToolResult<ResumeSenderOut> {
        let a: Input<ResumeSenderIn> = parse(args)?;
        let sender = self.core().sender(Some(a.from.0.as_str()))?.id.clone();
        let resumed = self
            .core()
            .as_actor(self.actor())
            .resume_sender(&sender)
            .await?;
        Ok(ResumeSenderOut {
            from: sender,
            resumed,
        })
    }

    async fn list_senders_impl(&self) -> ToolResult<SendersOut> {
        let caller = self.caller();
        let core = self.core();
        let senders = core.senders();
        let numbers = core.numbers(Utc::now()).await?;
        let listed = numbers
            .into_iter()
            .filter(|n| caller.may_use(&n.id))
            .filter_map(|n| {
                let sender = senders.by_id(&n.id)?;
                Some(SenderOut {
                    id: n.id,
                    phone_number_id: sender.phone_number_id.clone(),
                    display_phone_number: n.display_phone_number,
                    waba_id: sender.waba_id.clone(),
                    portfolio_id: sender.portfolio_id.clone(),
                    default: sender.default,
                    quality_rating: n.quality_rating.map(str::to_string),
                    name_status: n.name_status,
                    protection: n.protection.map(|p| ProtectionOut {
                        reason: p.reason,
                        source: p.source,
                        since: ts(p.since),
                    }),
                    throughput: ThroughputOut {
                        mps: n.capacity.mps,
                        source: n.capacity.source.as_str().to_string(),
                        detail: n.capacity.detail.unwrap_or(n.configured_by),
                        updated_at: opt_ts(n.capacity.updated_at),
                    },
                    messaging_limit: MessagingLimitOut::of(&n.usage),
                })
            })
            .collect();
        Ok(SendersOut {
            senders: listed,
            default: senders.default().id.clone(),
        })
    }
}

/// A sender-naming argument's text as the tool would read it (`null` and blank: absent); a
/// value of another type is left for the tool to refuse.
fn named(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether the tool's parameters include `name`.
fn takes(schema: &JsonObject, name: &str) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.contains_key(name))
}

/// The sender a `from` parameter names, as given (None: the default sender).
pub(crate) fn sender_arg(from: &Option<SenderName>) -> Option<&str> {
    from.as_ref().map(|f| f.0.as_str())
}

impl Gateway {
    /// The stored keys and the platform client of the sender `from` names (the default
    /// sender without it); INVALID_ARGUMENT listing the ids when it names none.
    pub(crate) fn sender_platform(
        &self,
        from: Option<&str>,
    ) -> ToolResult<(warden_settings::StoreKeys, &warden_platform::PlatformClient)> {
        let keys = self.core().sender_keys(from)?;
        let platform = self.platform_of(&keys.sender);
        Ok((keys, platform))
    }

    /// FORBIDDEN when the call names a sender that `caller` is not allowed; `None` when it
    /// may go on. An unknown sender is left to the tool, which answers INVALID_ARGUMENT
    /// listing the ids.
    pub(crate) fn sender_refusal(
        &self,
        caller: &Caller,
        request: &CallToolRequestParams,
    ) -> Option<ToolError> {
        let allowed = caller.senders.as_ref()?;
        let schema = &self.tool_router.get(&request.name)?.input_schema;
        let args = request.arguments.as_ref();
        let arg = |name: &str| args.and_then(|a| a.get(name));
        let mut named_ids: Vec<String> = Vec::new();
        if let Some(from) = named(arg("from")).filter(|_| takes(schema, "from")) {
            named_ids.push(from);
        }
        if takes(schema, "senders") {
            // A JSON parameter: the array itself or a string holding it.
            let list = match arg("senders") {
                Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok(),
                other => other.cloned(),
            };
            if let Some(Value::Array(list)) = list {
                named_ids.extend(list.iter().filter_map(|v| named(Some(v))));
            }
        }
        // Without `from` a call is about a number in the caller's reach (warden_core::reach):
        // only the senders it names can be refused.
        let core = self.core();
        let senders = core.senders();
        let refused = named_ids
            .iter()
            .filter_map(|given| senders.get(given))
            .map(|s| s.id.as_str())
            .find(|id| !caller.may_use(id))?;
        tracing::info!(agent = %caller.agent, tool = %request.name, sender = refused, "call outside the agent's senders");
        Some(ToolError::new(
            code::FORBIDDEN,
            format!(
                "Agent {} may not use sender `{refused}`: it may use {}.",
                echo(&caller.agent),
                allowed.join(", ")
            ),
            format!(
                "Pass `from` with one of {} (list_senders shows them), or ask an operator to allow `{refused}` (warden-admin agents update {} --senders ...).",
                allowed.join(", "),
                caller.agent
            ),
        ))
    }
}
