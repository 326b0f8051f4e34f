//! send_contacts: contact cards in the platform's shape, checked card by card
//! (`warden_rules::rich::contacts`: every key, each fault named by its path), then sent
//! like every rich message through the one send path (free-form: the care window, opt-outs,
//! policies, holders, idempotency).

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use warden_rules::rich::RichBody;

use crate::answer::finish;
use crate::error::ToolResult;
use crate::gateway::Gateway;
use crate::input::fields::{Customer, Id, Json};
use crate::input::shared::{Keyed, OnChannel};
use crate::input::{Input, parse};
use crate::schema::{self, SendOut};

#[derive(Deserialize, JsonSchema)]
pub struct SendContactsIn {
    /// Recipient: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub to: Customer,
    /// JSON array (as a string, or the array itself) of 1 to 10 contact cards in the platform's shape; each needs name.formatted_name, the other parts (phones, emails, urls, org, addresses, birthday YYYY-MM-DD) are optional and any other key is refused, e.g. [{"name":{"formatted_name":"Ana Lima"},"phones":[{"phone":"+62 811 000 111","type":"CELL"}]}].
    pub contacts: Json,
    #[serde(flatten)]
    pub on: OnChannel,
    /// message_id of an earlier message in this conversation to quote.
    pub reply_to: Option<Id>,
    #[serde(flatten)]
    pub keyed: Keyed,
}

#[tool_router(router = contacts_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Send 1 to 10 contact cards (name, phones, emails, urls, org, addresses, birthday) inside the \
customer's open care window. Each card needs name.formatted_name; any key the platform does not define is refused. Goes \
through the same compliance and policy checks as every send. Returns status \"queued\" and message_id. Errors: \
TEMPLATE_REQUIRED (care window closed: only templates may be sent), USER_OPTED_OUT, POLICY_RESTRICTION, CONVERSATION_HELD, \
INVALID_ARGUMENT (names the field's path, e.g. contacts[1].phones[0].phone, and the rule), NOT_FOUND (reply_to names no \
message), UNAVAILABLE.",
        input_schema = schema::input::<SendContactsIn>(),
        output_schema = schema::output::<SendOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn send_contacts(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.send_contacts_impl(args).await)
    }
}

impl Gateway {
    async fn send_contacts_impl(&self, args: JsonObject) -> ToolResult<SendOut> {
        let a: Input<SendContactsIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "send_contacts", self.actor())?;
        let phone = self.resolve(&a.to).await?;
        let Json(cards) = &a.contacts;
        let body = warden_rules::rich::contacts::parse(cards, "contacts").map(RichBody::Contacts);
        let reply_to = a.reply_to.map(|id| id.0);
        self.send_rich(phone, &a.on, body, reply_to, key).await
    }
}
