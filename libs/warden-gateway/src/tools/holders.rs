//! Who holds a conversation on a shared number (docs/compliance.md, "Shared numbers"):
//! hand_off_conversation (scope send) and release_conversation (scope admin). Each changes
//! the holder in the core (`conversations::holder`, audited, a resource update) and, on a
//! number under the platform's conversation routing, calls thread control with that
//! number's own client first: a refusal there changes nothing.

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use warden_core::conversations::holder::{HandOffTo, HolderMoved, HolderView};
use warden_platform::thread_control::{ControlPass, ThreadAction, ThreadControlRequest};
use warden_rules::phone::PhoneNumber;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::fields::{Customer, Text};
use crate::input::shared::OnChannel;
use crate::input::{Input, parse};
use crate::quoting::echo;
use crate::schema;

/// The longest note a hand-off carries (the platform hands at most 2,000 characters on).
const MAX_NOTE: usize = 2000;

#[tool_router(router = holder_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Hand a conversation over when it needs someone else: to a person (to: \"human\"; holder human \
until an operator releases it) or to the platform's own AI agent (to: \"platform_agent\"; holder other_app). From then on \
agents' replies, free-form messages and marketing templates to this customer are refused CONVERSATION_HELD (utility and \
authentication templates still go through). On a number under the platform's conversation routing the thread is passed \
with thread control. note (optional) says why, for the person taking over and the audit log. Returns from, customer_id, \
previous and holder {kind, since, by, until} and thread_control (passed, or not_routed). Audited. Errors: INVALID_ARGUMENT \
(bad customer_id, to not human or platform_agent, note too long, unknown from), UPSTREAM_ERROR (the platform refused the \
pass: nothing changed), FORBIDDEN, UNAVAILABLE.",
        input_schema = schema::input::<HandOffIn>(),
        output_schema = schema::output::<HolderMovedOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn hand_off_conversation(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.hand_off_impl(args).await)
    }

    #[tool(
        description = "Give a held conversation back to the agents (holder agents): after a hand-off, an operator's \
takeover, or a thread another app held. On a number under the platform's conversation routing the thread is released \
with thread control (the platform then routes the customer's next message by its entry point). Returns from, \
customer_id, previous and holder {kind, since, by, until} and thread_control (released, or not_routed). Audited. Errors: \
INVALID_ARGUMENT (bad customer_id, unknown from), UPSTREAM_ERROR (the platform refused: nothing changed), FORBIDDEN \
(needs the admin scope), UNAVAILABLE.",
        input_schema = schema::input::<ReleaseIn>(),
        output_schema = schema::output::<HolderMovedOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn release_conversation(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.release_impl(args).await)
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct HandOffIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    /// Who takes over: "human" (a person; agents stay out until an operator releases it) or
    /// "platform_agent" (the platform's own AI agent).
    pub to: Text,
    /// Why, for whoever takes over and the audit log (at most 2,000 characters).
    pub note: Option<Text>,
    #[serde(flatten)]
    pub on: OnChannel,
}

#[derive(Deserialize, JsonSchema)]
pub struct ReleaseIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    #[serde(flatten)]
    pub on: OnChannel,
}

#[derive(Serialize, JsonSchema)]
pub struct HolderMovedOut {
    /// The business number of the conversation (sender id).
    pub from: String,
    pub customer_id: String,
    /// Who held it before.
    pub previous: HolderView,
    /// Who holds it now.
    pub holder: HolderView,
    /// What thread control did: passed, released, or not_routed (the number is not under
    /// the platform's conversation routing, so only Warden's holder changed).
    pub thread_control: String,
}

impl Gateway {
    async fn hand_off_impl(&self, args: JsonObject) -> ToolResult<HolderMovedOut> {
        let a: Input<HandOffIn> = parse(args)?;
        let to = match a.to.as_str().trim().to_ascii_lowercase().as_str() {
            "human" => HandOffTo::Human,
            "platform_agent" => HandOffTo::PlatformAgent,
            other => {
                return Err(ToolError::invalid(
                    format!("to {} is not human or platform_agent.", echo(other)),
                    "Pass to as \"human\" (a person takes over) or \"platform_agent\" (the platform's AI agent).",
                ));
            }
        };
        let note = a.note.as_ref().map(|n| n.as_str().trim().to_string());
        if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE) {
            return Err(ToolError::invalid(
                format!("note is longer than {MAX_NOTE} characters."),
                "Shorten the note to at most 2000 characters.",
            ));
        }
        let phone = self.resolve(&a.customer_id).await?;
        let from = a.on.from();
        let mut call = ThreadControlRequest::new(ThreadAction::Pass, None, None);
        call.metadata = note.clone();
        if to == HandOffTo::PlatformAgent {
            call.control_pass = Some(ControlPass {
                target_role: "ai_agent".into(),
            });
        }
        let thread = self
            .thread_control(&phone, from, call, "pass the thread")
            .await?;
        let moved = self
            .core()
            .as_actor(self.actor())
            .hand_off(&phone, from, to, note.as_deref().filter(|n| !n.is_empty()))
            .await?;
        Ok(out(moved, if thread { "passed" } else { "not_routed" }))
    }

    async fn release_impl(&self, args: JsonObject) -> ToolResult<HolderMovedOut> {
        let a: Input<ReleaseIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let from = a.on.from();
        let call = ThreadControlRequest::new(ThreadAction::Release, None, None);
        let thread = self
            .thread_control(&phone, from, call, "release the thread")
            .await?;
        let moved = self
            .core()
            .as_actor(self.actor())
            .release(&phone, from)
            .await?;
        Ok(out(moved, if thread { "released" } else { "not_routed" }))
    }

    /// Thread control on the conversation's number, with that number's client, when the
    /// number is routed; false when it is not (nothing to call).
    async fn thread_control(
        &self,
        phone: &PhoneNumber,
        from: Option<&str>,
        mut call: ThreadControlRequest,
        what: &str,
    ) -> ToolResult<bool> {
        if !self.core().number_routed(from).await? {
            return Ok(false);
        }
        let keys = self.core().sender_keys(from)?;
        let platform = self.platform_of(&keys.sender);
        // The platform takes the phone in `to`, a BSUID in `recipient`.
        if phone.is_bsuid() {
            call.recipient = Some(phone.digits().to_string());
        } else {
            call.to = Some(phone.digits().to_string());
        }
        match platform.thread_control(&call).await {
            Ok(_) => Ok(true),
            Err(e) => Err(self.upstream_error(what, &e).await),
        }
    }
}

fn out(moved: HolderMoved, thread_control: &str) -> HolderMovedOut {
    HolderMovedOut {
        from: moved.from,
        customer_id: moved.customer.digits().to_string(),
        previous: moved.previous,
        holder: moved.holder,
        thread_control: thread_control.to_string(),
    }
}
