//! Listen: what customers wrote (docs/tools.md, The conversation loop):
//! get_conversation_history, list_inbox, mark_as_read. The reads are
//! `warden_core::conversations::view`; the results are its structs, as the MCP resources
//! serve them.

use chrono::Utc;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Serialize;
use warden_core::conversations::view::{self, HistoryPage, InboxPage};
use warden_platform::receipt::ReadReceipt;

use crate::args::Args;
use crate::error::ToolResult;
use crate::gateway::Gateway;
use crate::schema;
use crate::tools::read::page;
use crate::util::bounded;

/// Schema only: the arguments are read leniently by [`Args`].
#[allow(dead_code)]
#[derive(JsonSchema)]
pub struct HistoryIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: String,
    /// Messaging channel; only "whatsapp" exists and it is the default.
    #[schemars(extend("default" = "whatsapp"))]
    pub channel: Option<String>,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<u32>,
    /// Only messages older than this message_id: pass the previous page's next_before.
    pub before: Option<String>,
}

/// Schema only: the arguments are read leniently by [`Args`].
#[allow(dead_code)]
#[derive(JsonSchema)]
pub struct InboxIn {
    /// Messaging channel; only "whatsapp" exists and it is the default.
    #[schemars(extend("default" = "whatsapp"))]
    pub channel: Option<String>,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<u32>,
    /// Number of customers to skip; default 0.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub offset: Option<u32>,
}

/// Schema only: the arguments are read leniently by [`Args`].
#[allow(dead_code)]
#[derive(JsonSchema)]
pub struct MarkReadIn {
    /// The message_id of the customer's (inbound) message, from get_conversation_history.
    pub message_id: String,
    /// Also show the customer "typing…" (up to 25 s or until the reply); default false.
    #[schemars(extend("default" = false))]
    pub typing_indicator: Option<bool>,
}

/// mark_as_read's answer.
#[derive(Serialize, JsonSchema)]
pub struct MarkReadOut {
    pub message_id: String,
    /// Always `read`.
    pub status: String,
    pub typing_indicator: bool,
}

#[tool_router(router = listen_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "get_conversation_history",
        description = "Read what a customer and we wrote, newest first, both directions: message_id, wamid, direction \
(inbound = the customer), type (text, image, video, audio, document, sticker, location, contacts, interactive, button, \
reaction, order, system, unsupported, edit, revoke, template), text (body, caption or chosen button/list title; the edited \
text after an edit; null after the customer deleted it, with deleted: true), media {media_id, mime_type, sha256, ...}, \
reply_to (our message_id it answers), reaction, location, interactive, status, created_at, error. Page with \
before = next_before until next_before is null. Errors: INVALID_ARGUMENT (bad customer_id, limit outside 1..500, before not \
a UUID), NOT_FOUND (before is not a message of this customer), UNAVAILABLE.",
        input_schema = schema::input::<HistoryIn>(),
        output_schema = schema::output::<HistoryPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_conversation_history(&self, args: JsonObject) -> CallToolResult {
        crate::util::finish(
            "get_conversation_history",
            self.history_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "list_inbox",
        description = "List the customers waiting for an answer: those whose latest message is theirs (no outbound message \
accepted since). Most urgent first: open care windows closing soonest, then closed ones. Each item: customer_id, \
last_inbound_at, last_inbound_text, unanswered_count, window_open, time_remaining_secs. A customer leaves the inbox when \
a message to them is accepted. Read their messages with get_conversation_history; answer with reply_customer (window open) \
or send_template (closed). Errors: INVALID_ARGUMENT (limit outside 1..500, negative offset), UNAVAILABLE.",
        input_schema = schema::input::<InboxIn>(),
        output_schema = schema::output::<InboxPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_inbox(&self, args: JsonObject) -> CallToolResult {
        crate::util::finish("list_inbox", self.inbox_impl(Args::new(args)).await)
    }

    #[tool(
        name = "mark_as_read",
        description = "Tell the customer their message was read (blue ticks; the platform also marks their earlier \
messages read), optionally with a \"typing…\" indicator while you prepare the answer (typing_indicator: true; it shows up to \
25 s or until your reply). The message's status becomes read. Returns {message_id, status: \"read\"}. Errors: \
INVALID_ARGUMENT (not a UUID, or one of our outbound messages), NOT_FOUND (no such message), UPSTREAM_ERROR (the platform \
refused), UNAVAILABLE.",
        input_schema = schema::input::<MarkReadIn>(),
        output_schema = schema::output::<MarkReadOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn mark_as_read(&self, args: JsonObject) -> CallToolResult {
        crate::util::finish("mark_as_read", self.mark_read_impl(Args::new(args)).await)
    }
}

impl Gateway {
    async fn history_impl(&self, a: Args) -> ToolResult<HistoryPage> {
        let phone = self.customer(&a, "customer_id").await?;
        let channel = a.channel()?;
        let limit = match a.opt_int("limit")? {
            Some(l) => bounded("limit", l, 1, 500, "between 1 and 500 (default 50)")?,
            None => 50,
        };
        let before = match a.opt_string("before")? {
            Some(raw) => Some(crate::args::parse_uuid(
                "before",
                &raw,
                "message_id of the oldest message already read (next_before)",
            )?),
            None => None,
        };
        let mut conn = self.conn().await?;
        Ok(view::history(&mut conn, phone.digits(), channel, limit, before).await?)
    }

    async fn mark_read_impl(&self, a: Args) -> ToolResult<MarkReadOut> {
        let id = a.uuid("message_id", "message_id of the customer's message")?;
        let typing = a.opt_bool("typing_indicator")?.unwrap_or(false);
        let target = self.core().read_target(id).await?;
        let receipt = ReadReceipt::new(target.wamid, typing);
        if let Err(e) = self.platform().mark_read(&receipt).await {
            return Err(self.upstream_error("mark the message read", &e).await);
        }
        self.core().record_read(id).await?;
        Ok(MarkReadOut {
            message_id: id.to_string(),
            status: "read".into(),
            typing_indicator: typing,
        })
    }

    async fn inbox_impl(&self, a: Args) -> ToolResult<InboxPage> {
        let channel = a.channel()?;
        let (limit, offset) = page(&a)?;
        let mut conn = self.conn().await?;
        Ok(view::inbox(&mut conn, channel, limit, offset, Utc::now()).await?)
    }
}
