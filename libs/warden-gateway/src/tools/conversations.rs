//! Conversations with customers (docs/tools.md, The conversation loop): check_conversation,
//! list_conversations, list_inbox, get_conversation_history, mark_as_read and archive_chat.
//! The reads are `warden_core::conversations`; history and inbox results are its structs, as
//! the MCP resources serve them.

use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::finish;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::{Input, parse};
use crate::schema::{self, *};
use chrono::Utc;
use serde::Serialize;
use warden_core::conversations::archive::ArchiveError;
use warden_core::conversations::list::WindowFilter;
use warden_core::conversations::view::{self, HistoryPage, InboxPage};
use warden_platform::receipt::ReadReceipt;
use warden_rules::compliance::Decision;
use warden_rules::kinds::MessageType;

use crate::answer::{opt_ts, ts};
use crate::input::checks::{bounded, lower};
use crate::input::fields::{Customer, Flag, Id, Text, Whole, opt_string, opt_whole};
use crate::input::shared::OnChannel;
use crate::quoting::echo;
use crate::tools::customers::CustomerIn;
use crate::tools::page;

#[derive(Deserialize, JsonSchema)]
pub struct ListConversationsIn {
    #[serde(flatten)]
    pub on: OnChannel,
    /// "open" (care window open), "closed", or "expiring_soon" (open and closing within 2 hours). Empty means all. Archived conversations are never listed.
    pub status_filter: Option<Text>,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<Whole<u32>>,
    /// Number of conversations to skip; default 0.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub offset: Option<Whole<u32>>,
}

#[derive(Deserialize, JsonSchema)]
pub struct ArchiveChatIn {
    /// The conversation's id (a UUID), as list_conversations or check_conversation report it.
    pub conversation_id: Id,
}

#[derive(Deserialize, JsonSchema)]
pub struct HistoryIn {
    /// The customer: phone number with country code (e.g. "+6281234567890") or BSUID (e.g. "US.13491208655302741918").
    pub customer_id: Customer,
    #[serde(flatten)]
    pub on: OnChannel,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<Whole<u32>>,
    /// Only messages older than this message_id: pass the previous page's next_before.
    pub before: Option<Id>,
}

#[derive(Deserialize, JsonSchema)]
pub struct InboxIn {
    #[serde(flatten)]
    pub on: OnChannel,
    /// Page size, 1 to 500; default 50.
    #[schemars(range(min = 1, max = 500), extend("default" = 50))]
    pub limit: Option<Whole<u32>>,
    /// Number of customers to skip; default 0.
    #[schemars(range(min = 0), extend("default" = 0))]
    pub offset: Option<Whole<u32>>,
}

#[derive(Deserialize, JsonSchema)]
pub struct MarkReadIn {
    /// The message_id of the customer's (inbound) message, from get_conversation_history.
    pub message_id: Id,
    /// Also show the customer "typing…" (up to 25 s or until the reply); default false.
    #[schemars(extend("default" = false))]
    pub typing_indicator: Option<Flag>,
}

/// mark_as_read's answer.
#[derive(Serialize, JsonSchema)]
pub struct MarkReadOut {
    pub message_id: String,
    /// The sender (business number) the message arrived at.
    pub from: String,
    /// Always `read`.
    pub status: String,
    pub typing_indicator: bool,
}

#[tool_router(router = conversation_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Read a customer's conversation state: whether the 24-hour care window is open, seconds left, when it \
closes, last inbound/outbound times, and whether marketing and utility templates could be sent now (\"eligible\" or the \
reason, e.g. user_opted_out). A customer who never wrote is a normal answer (window_open false, time_remaining_secs 0, \
timestamps null). The conversation is the one with the number `from` (default: the default sender), which the answer \
names, and who holds it: holder {kind, since, by, until}, where kind human (a person, e.g. replying from the WhatsApp \
Business app) or other_app (another app or the platform's AI agent) means do not reply. Reads the cache and falls back to \
the database. Errors: INVALID_ARGUMENT (bad phone or channel, unknown from), UNAVAILABLE (retry shortly).",
        input_schema = schema::input::<CustomerIn>(),
        output_schema = schema::output::<ConversationOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check_conversation(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.check_conversation_impl(args).await)
    }

    #[tool(
        description = "List conversations page by page (archived ones are left out). status_filter: open (care window open), \
closed, expiring_soon (open and closing within 2 hours: reply before it closes), or empty for all. Returns conversations \
(id, customer_id, from: the number it is with, window state, timestamps; every number's without `from`), total (all matches), limit and offset; page with offset += limit while \
offset < total. Errors: INVALID_ARGUMENT (unknown status_filter, limit outside 1..500, negative offset), UNAVAILABLE.",
        input_schema = schema::input::<ListConversationsIn>(),
        output_schema = schema::output::<ConversationsPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_conversations(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.list_conversations_impl(args).await)
    }

    #[tool(
        description = "List the customers waiting for an answer: those whose latest message is theirs (no outbound message \
accepted since). Most urgent first: open care windows closing soonest, then closed ones. Each item: customer_id, \
last_inbound_at, last_inbound_text, unanswered_count, window_open, time_remaining_secs, holder {kind, since, by, until} (skip \
those held by human or other_app: someone else is answering). A customer leaves the inbox when \
a message to them is accepted. Read their messages with get_conversation_history; answer with reply_customer (window open) \
or send_template (closed). Errors: INVALID_ARGUMENT (limit outside 1..500, negative offset), UNAVAILABLE.",
        input_schema = schema::input::<InboxIn>(),
        output_schema = schema::output::<InboxPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_inbox(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.inbox_impl(args).await)
    }

    #[tool(
        description = "Read what a customer and we wrote, newest first, both directions: message_id, wamid, direction \
(inbound = the customer), type (text, image, video, audio, document, sticker, location, contacts, interactive, button, \
reaction, order, system, unsupported, edit, revoke, template), text (body, caption or chosen button/list title; the edited \
text after an edit; null after the customer deleted it, with deleted: true), media {media_id, mime_type, sha256, ...}, \
reply_to (our message_id it answers), reaction, location, interactive, status, sent_by (business_app: a person replying \
from the WhatsApp Business app), created_at, error; and holder {kind, since, by, until}. Page with \
before = next_before until next_before is null. Errors: INVALID_ARGUMENT (bad customer_id, limit outside 1..500, before not \
a UUID), NOT_FOUND (before is not a message of this customer), UNAVAILABLE.",
        input_schema = schema::input::<HistoryIn>(),
        output_schema = schema::output::<HistoryPage>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_conversation_history(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.history_impl(args).await)
    }

    #[tool(
        description = "Tell the customer their message was read (blue ticks; the platform also marks their earlier \
messages read), optionally with a \"typing…\" indicator while you prepare the answer (typing_indicator: true; it shows up to \
25 s or until your reply). The message's status becomes read. Returns {message_id, status: \"read\"}. Errors: \
INVALID_ARGUMENT (not a UUID, or one of our outbound messages), NOT_FOUND (no such message), UPSTREAM_ERROR (the platform \
refused), UNAVAILABLE.",
        input_schema = schema::input::<MarkReadIn>(),
        output_schema = schema::output::<MarkReadOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn mark_as_read(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.mark_read_impl(args).await)
    }

    #[tool(
        description = "Archive a conversation whose care window is closed (or never opened), so it leaves list_conversations. \
A new message from the customer brings it back. Returns conversation_id, status \"archived\" and from_type (its \
conversation type). Errors: CONVERSATION_ACTIVE (the window is still open: reply first or wait until it closes; \
check_conversation tells when), NOT_FOUND (unknown conversation_id), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<ArchiveChatIn>(),
        output_schema = schema::output::<ArchiveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn archive_chat(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.archive_chat_impl(args).await)
    }
}

impl Gateway {
    async fn check_conversation_impl(&self, args: JsonObject) -> ToolResult<ConversationOut> {
        let a: Input<CustomerIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let channel = a.on.channel();
        let from = a.on.from();
        let core = self.core();
        let sender = core.sender(from)?;
        let (from_id, key) = (sender.id.clone(), core.senders().key_of(sender).sender);
        let view = core.conversation(&phone, channel, &key).await?;
        let now = Utc::now();
        let marketing = self
            .core()
            .check(
                &phone,
                from,
                MessageType::Marketing.described_content(),
                now,
            )
            .await?;
        let utility = self
            .core()
            .check(&phone, from, MessageType::Utility.described_content(), now)
            .await?;
        let ids = core.customer_identifiers(&phone).await?.into();
        let holder = core.holder(&phone, from).await?;
        let call_permission = core.call_permission(&phone, from).await?;
        Ok(ConversationOut {
            customer_id: phone.digits().to_string(),
            ids,
            channel: channel.to_string(),
            from: from_id,
            conversation_id: view.id.map(|id| id.to_string()),
            window_open: view.window_open,
            time_remaining_secs: view.time_remaining_secs,
            conversation_type: view.conversation_type,
            last_inbound_at: opt_ts(view.last_inbound_at),
            last_outbound_at: opt_ts(view.last_outbound_at),
            window_expires_at: opt_ts(view.window_expires_at),
            marketing_eligibility: eligibility_word(&marketing),
            utility_eligibility: eligibility_word(&utility),
            archived: view.archived,
            holder,
            call_permission,
        })
    }

    async fn list_conversations_impl(&self, args: JsonObject) -> ToolResult<ConversationsPage> {
        let a: Input<ListConversationsIn> = parse(args)?;
        let channel = a.on.channel();
        let filter = match opt_string(&a.status_filter).map(|s| lower(&s)).as_deref() {
            None | Some("all") => WindowFilter::All,
            Some("open") => WindowFilter::Open,
            Some("closed") => WindowFilter::Closed,
            Some("expiring_soon") | Some("expiring-soon") => WindowFilter::ExpiringSoon,
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "status_filter {} is not one of open, closed, expiring_soon.",
                        echo(other)
                    ),
                    "Pass status_filter as open, closed or expiring_soon, or leave it out for all conversations.",
                ));
            }
        };
        let (limit, offset) = page(&a.limit, &a.offset)?;
        // Without `from`, every number in the caller's reach, each saying which.
        let only = match a.on.from() {
            Some(from) => Some(self.core().sender_ref(Some(from))?),
            None => None,
        };
        let listed = warden_core::conversations::list::list(
            &self.core(),
            channel,
            only.as_ref().map(|s| s.key.as_str()),
            filter,
            limit,
            offset,
            Utc::now(),
        )
        .await?;
        let total = listed.total;
        let conversations = listed
            .conversations
            .into_iter()
            .map(|listed| {
                (
                    self.core().sender_id_of_key(&listed.sender).to_string(),
                    listed.view,
                )
            })
            .map(|(from, c)| ConversationItem {
                from,
                id: c.id.map(|id| id.to_string()).unwrap_or_default(),
                customer_id: c.customer_id,
                channel: c.channel,
                window_open: c.window_open,
                time_remaining_secs: c.time_remaining_secs,
                conversation_type: c.conversation_type,
                last_inbound_at: opt_ts(c.last_inbound_at),
                last_outbound_at: opt_ts(c.last_outbound_at),
                window_expires_at: opt_ts(c.window_expires_at),
            })
            .collect();
        Ok(ConversationsPage {
            conversations,
            total,
            limit,
            offset,
        })
    }

    async fn inbox_impl(&self, args: JsonObject) -> ToolResult<InboxPage> {
        let a: Input<InboxIn> = parse(args)?;
        let channel = a.on.channel();
        let (limit, offset) = page(&a.limit, &a.offset)?;
        // Without `from`, every number in the caller's reach, each item saying which.
        let core = self.core();
        let named = match a.on.from() {
            Some(from) => Some(core.sender_ref(Some(from))?.key),
            None => None,
        };
        let only = core.keys_to_read(named.as_deref());
        let mut conn = self.conn().await?;
        Ok(view::inbox(
            &mut conn,
            channel,
            core.senders(),
            only.as_deref(),
            limit,
            offset,
            Utc::now(),
        )
        .await?)
    }

    async fn history_impl(&self, args: JsonObject) -> ToolResult<HistoryPage> {
        let a: Input<HistoryIn> = parse(args)?;
        let phone = self.resolve(&a.customer_id).await?;
        let channel = a.on.channel();
        let limit = match opt_whole(&a.limit) {
            Some(l) => bounded("limit", l, 1, 500, "between 1 and 500 (default 50)")?,
            None => 50,
        };
        let before = a.before.map(|id| id.0);
        let sender = self.core().sender_ref(a.on.from())?;
        let mut conn = self.conn().await?;
        Ok(view::history(&mut conn, phone.digits(), channel, &sender, limit, before).await?)
    }

    async fn mark_read_impl(&self, args: JsonObject) -> ToolResult<MarkReadOut> {
        let a: Input<MarkReadIn> = parse(args)?;
        let id = a.message_id.0;
        let typing = a.typing_indicator.is_some_and(|f| f.0);
        let core = self.core();
        let target = core.read_target(id).await?;
        let receipt = ReadReceipt::new(target.wamid, typing);
        // Read on the number it arrived at, by an agent allowed to use it.
        let platform = self.platform_of(&target.sender);
        if let Err(e) = platform.mark_read(&receipt).await {
            return Err(self.upstream_error("mark the message read", &e).await);
        }
        self.core().record_read(id).await?;
        Ok(MarkReadOut {
            message_id: id.to_string(),
            from: core.sender_id_of_key(&target.sender).to_string(),
            status: "read".into(),
            typing_indicator: typing,
        })
    }

    async fn archive_chat_impl(&self, args: JsonObject) -> ToolResult<ArchiveOut> {
        let a: Input<ArchiveChatIn> = parse(args)?;
        let id = a.conversation_id.0;
        let row = match self
            .core()
            .as_actor(self.actor())
            .archive_conversation(id)
            .await
        {
            Ok(archived) => archived.conversation,
            Err(ArchiveError::NotFound(_)) => {
                return Err(ToolError::not_found(
                    format!("There is no conversation with id {id}."),
                    "Take the id from list_conversations or check_conversation.",
                ));
            }
            Err(ArchiveError::WindowOpen {
                remaining_secs,
                expires_at,
            }) => {
                let until = expires_at.map(ts).unwrap_or_default();
                return Err(ToolError::new(
                    code::CONVERSATION_ACTIVE,
                    format!(
                        "The conversation's care window is still open for {remaining_secs} more seconds (until {until}), so it cannot be archived."
                    ),
                    format!("Reply while the window is open, or archive it after {until}."),
                ));
            }
            Err(ArchiveError::Db(e)) => return Err(e.into()),
        };
        Ok(ArchiveOut {
            conversation_id: row.id.to_string(),
            from: self.core().sender_id_of_key(&row.sender_id).to_string(),
            status: "archived".into(),
            from_type: lower(&row.conversation_type),
            customer_id: row.customer_phone,
            archived_at: row.archived_at.map(ts).unwrap_or_default(),
        })
    }
}

/// "eligible", or the refusal's reason code in lower case.
fn eligibility_word(d: &Decision) -> String {
    if d.allowed {
        "eligible".into()
    } else {
        d.reason_code.as_str().to_ascii_lowercase()
    }
}
