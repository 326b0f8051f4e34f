//! Group E, operational: create_template, sync_webhooks, archive_chat.

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use serde_json::json;
use uuid::Uuid;
use warden_rules::kinds::TemplateCategory;
use warden_rules::window::WindowState;
use warden_store::models::message_status::{QUEUED, SENDING, SENT};
use warden_store::models::{Conversation, Template};
use warden_store::schema::{conversations, messages, templates};

use crate::args::{Args, check_language};
use crate::error::{ToolError, ToolResult, code};
use crate::schema::{self, *};
use crate::server::{ACTOR, Gateway};
use crate::tools::actions::upsert_from_platform;
use crate::util::{detail, echo, finish, kind_message, lower, ts};

/// A queued row this old without a publish lost its publish (the send path publishes at once).
const UNPUBLISHED_AFTER: TimeDelta = TimeDelta::seconds(30);
/// Rows one sync_webhooks call settles at most (it can be called again).
const RECONCILE_BATCH: i64 = 500;

#[tool_router(router = ops_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "create_template",
        description = "Submit a new message template to the platform for approval. Validated locally first: name (lower-case \
letters, digits, underscores, at most 512), category (UTILITY, MARKETING, AUTHENTICATION), language code, body_text (at \
most 1024 characters, placeholders {{1}}, {{2}}, ... without gaps). Returns template_name, locale, category, status \
\"PENDING\", platform_id and a note: approval (or rejection) arrives later by webhook; list_templates or \
sync_template_status show it, and only APPROVED templates can be sent. Errors: INVALID_ARGUMENT (fix the field named; \
also when the name already exists in that language), UPSTREAM_ERROR (the platform refused; the message explains its \
code), UNAVAILABLE.",
        input_schema = schema::input::<CreateTemplateIn>(),
        output_schema = schema::output::<CreateTemplateOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn create_template(&self, args: JsonObject) -> CallToolResult {
        finish(
            "create_template",
            self.create_template_impl(Args::new(args)).await,
        )
    }

    #[tool(
        name = "sync_webhooks",
        description = "Manual, idempotent recovery when webhook events may have been missed: re-reads every local template's \
status from the platform, settles sends stuck mid-delivery whose platform acceptance is on record, and re-publishes \
accepted messages whose hand-off to delivery was lost. Returns template_synced (statuses re-read), messages_reconciled \
(messages actually settled by this call), messages_awaiting_status (sends with an unknown outcome that the platform's \
status webhook will settle; they are never blindly resent). Errors: UNAVAILABLE (database down).",
        input_schema = schema::input::<NoParams>(),
        output_schema = schema::output::<SyncWebhooksOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn sync_webhooks(&self, _args: JsonObject) -> CallToolResult {
        finish("sync_webhooks", self.sync_webhooks_impl().await)
    }

    #[tool(
        name = "archive_chat",
        description = "Archive a conversation whose care window is closed (or never opened), so it leaves list_conversations. \
A new message from the customer brings it back. Returns conversation_id, status \"archived\" and from_type (its \
conversation type). Errors: CONVERSATION_ACTIVE (the window is still open: reply first or wait until it closes; \
check_conversation tells when), NOT_FOUND (unknown conversation_id), INVALID_ARGUMENT (not a UUID), UNAVAILABLE.",
        input_schema = schema::input::<ArchiveChatIn>(),
        output_schema = schema::output::<ArchiveOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn archive_chat(&self, args: JsonObject) -> CallToolResult {
        finish(
            "archive_chat",
            self.archive_chat_impl(Args::new(args)).await,
        )
    }
}

impl Gateway {
    async fn create_template_impl(&self, a: Args) -> ToolResult<CreateTemplateOut> {
        let name = a.string(
            "name",
            "lower-case letters, digits and underscores, e.g. order_update_2.",
        )?;
        let raw_category = a.string("category", "UTILITY, MARKETING or AUTHENTICATION.")?;
        // `locale`, as the other template tools call it, is accepted too.
        let (language_key, language) = match a.opt_string("locale")? {
            Some(l) if a.opt_string("language")?.is_none() => ("locale", l),
            _ => (
                "language",
                a.string("language", "a language code such as en or en_US.")?,
            ),
        };
        let body = a.string(
            "body_text",
            "the template text with placeholders {{1}}, {{2}}, ...",
        )?;
        warden_rules::templates::validate_template_name(&name).map_err(|e| {
            ToolError::invalid(
                format!("The template name is not valid: {}.", detail(e)),
                "Fix `name` and call again.",
            )
        })?;
        let category = raw_category.parse::<TemplateCategory>().map_err(|e| {
            ToolError::invalid(
                format!("{}.", kind_message(&e)),
                "Pass category as UTILITY, MARKETING or AUTHENTICATION.",
            )
        })?;
        check_language(language_key, &language)?;
        warden_rules::templates::validate_template_body(&body).map_err(|e| {
            ToolError::invalid(
                format!("The template body is not valid: {}.", detail(e)),
                "Fix `body_text` and call again.",
            )
        })?;
        {
            let mut conn = self.conn().await?;
            if let Some(t) = warden_core::templates::find(&mut conn, &name, &language).await? {
                return Err(ToolError::invalid(
                    format!(
                        "A template named {} already exists in language {} (status {}).",
                        echo(&name),
                        echo(&language),
                        detail(&t.status)
                    ),
                    "Use that template (sync_template_status shows its latest status) or choose another name.",
                ));
            }
        }
        let created = match self
            .platform()
            .create_template(&name, &language, category.as_upper(), &body)
            .await
        {
            Ok(c) => c,
            Err(e) => return Err(self.upstream_error("create the template", &e).await),
        };
        let status = Some(created.status.trim().to_ascii_uppercase())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "PENDING".into());
        let platform_id = created.id.clone();
        let (name_ref, lang_ref, body_ref, status_ref, pid_ref) =
            (&name, &language, &body, &status, &platform_id);
        let stored: ToolResult<Template> = async {
            let mut conn = self.conn().await?;
            conn.transaction::<_, ToolError, _>(async |c| {
                // A decision webhook may have landed first: keep its status.
                let row = diesel::insert_into(templates::table)
                    .values((
                        templates::name.eq(name_ref),
                        templates::locale.eq(lang_ref),
                        templates::category.eq(category.as_lower()),
                        templates::status.eq(status_ref),
                        templates::body_text.eq(body_ref),
                        templates::platform_id.eq(pid_ref),
                    ))
                    .on_conflict((templates::name, templates::locale))
                    .do_update()
                    .set((
                        templates::platform_id.eq(pid_ref),
                        templates::body_text.eq(body_ref),
                        templates::category.eq(category.as_lower()),
                        templates::updated_at.eq(diesel::dsl::now),
                    ))
                    .returning(Template::as_returning())
                    .get_result(c)
                    .await?;
                warden_store::audit::record(
                    c,
                    ACTOR,
                    "template_created",
                    "template",
                    &format!("{name_ref}/{lang_ref}"),
                    json!({"platform_id": pid_ref, "category": category.as_upper(), "status": row.status}),
                )
                .await?;
                Ok(row)
            })
            .await
        }
        .await;
        let row = stored.map_err(|e| {
            if e.code == code::UNAVAILABLE {
                ToolError::new(
                    code::UNAVAILABLE,
                    format!(
                        "The platform accepted template {} (platform id {}), but the local record could not be written because the database is unavailable.",
                        echo(&name),
                        echo(&platform_id)
                    ),
                    "Once the database is back, call sync_template_status with this name and language to record it.",
                )
            } else {
                e
            }
        })?;
        Ok(CreateTemplateOut {
            template_name: row.name,
            locale: row.locale,
            category: category.as_upper().to_string(),
            status: row.status,
            platform_id,
            note: "Submitted for review: the platform's decision (APPROVED or REJECTED) arrives later by webhook, usually within minutes. list_templates or sync_template_status show it; only APPROVED templates can be sent.".into(),
        })
    }

    async fn sync_webhooks_impl(&self) -> ToolResult<SyncWebhooksOut> {
        let now = Utc::now();
        // 1. Template statuses, live from the platform.
        let locals: Vec<Template> = {
            let mut conn = self.conn().await?;
            templates::table
                .select(Template::as_select())
                .load(&mut conn)
                .await?
        };
        let mut notes = Vec::new();
        let (template_synced, templates_updated) = match self.platform().list_templates().await {
            Ok(remote) => {
                let mut updated = 0i64;
                let mut conn = self.conn().await?;
                for local in &locals {
                    let Some(info) = remote.iter().find(|r| {
                        r.name == local.name && r.language.eq_ignore_ascii_case(&local.locale)
                    }) else {
                        continue;
                    };
                    let reason_changed = info
                        .rejected_reason
                        .as_deref()
                        .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("none"))
                        != local.rejection_reason.as_deref();
                    if info.status.eq_ignore_ascii_case(&local.status)
                        && info.category.eq_ignore_ascii_case(&local.category)
                        && !reason_changed
                    {
                        continue;
                    }
                    let (previous, row) =
                        upsert_from_platform(&mut conn, info, &local.locale).await?;
                    warden_store::audit::record(
                        &mut conn,
                        ACTOR,
                        "template_status_synced",
                        "template",
                        &format!("{}/{}", row.name, row.locale),
                        json!({"from": previous, "to": row.status, "source": "sync_webhooks"}),
                    )
                    .await?;
                    updated += 1;
                }
                (true, updated)
            }
            Err(e) => {
                let err = self.upstream_error("list the templates", &e).await;
                notes.push(format!(
                    "Template statuses were not re-read: {}",
                    err.message
                ));
                (false, 0)
            }
        };

        // 2. Sends stuck in `sending` after their lease ran out.
        let stuck: Vec<(Uuid, Option<String>)> = {
            let mut conn = self.conn().await?;
            messages::table
                .filter(messages::status.eq(SENDING))
                .filter(messages::lease_until.lt(now))
                .order(messages::lease_until.asc())
                .limit(RECONCILE_BATCH)
                .select((messages::id, messages::wamid))
                .load(&mut conn)
                .await?
        };
        let mut reconciled = 0i64;
        let mut awaiting = 0i64;
        for (id, wamid) in stuck {
            match wamid {
                // The platform accepted it (its id is on record): at least sent.
                Some(w) => {
                    let mut conn = self.conn().await?;
                    if warden_core::outcomes::apply_status(&mut conn, id, SENT, now, Some(&w), None)
                        .await?
                    {
                        reconciled += 1;
                    }
                }
                // Outcome unknown: never resend blindly; the status webhook settles it.
                None => awaiting += 1,
            }
        }

        // 3. Accepted messages whose publish was lost (the relay's job, done now).
        let unpublished: Vec<Uuid> = {
            let mut conn = self.conn().await?;
            messages::table
                .filter(messages::status.eq(QUEUED))
                .filter(messages::published_at.is_null())
                .filter(messages::created_at.lt(now - UNPUBLISHED_AFTER))
                .order(messages::created_at.asc())
                .limit(RECONCILE_BATCH)
                .select(messages::id)
                .load(&mut conn)
                .await?
        };
        let mut publish_failed = 0;
        for id in unpublished {
            match self.core().publish(id).await {
                Ok(true) => reconciled += 1,
                Ok(false) => publish_failed += 1,
                Err(warden_core::CoreError::Unavailable(m)) => {
                    return Err(ToolError::unavailable(m));
                }
                Err(_) => {}
            }
        }
        if publish_failed > 0 {
            notes.push(format!(
                "{publish_failed} queued message(s) could not be handed to delivery (the message broker is unreachable); they stay queued and will be published when it is back."
            ));
        }
        if awaiting > 0 {
            notes.push(format!(
                "{awaiting} send(s) have an unknown outcome; they settle when the platform's status webhook arrives and are never resent blindly."
            ));
        }
        let mut conn = self.conn().await?;
        warden_store::audit::record(
            &mut conn,
            ACTOR,
            "webhooks_synced",
            "account",
            &self.core().settings().platform.account_id,
            json!({
                "template_synced": template_synced,
                "templates_checked": locals.len(),
                "templates_updated": templates_updated,
                "messages_reconciled": reconciled,
                "messages_awaiting_status": awaiting,
            }),
        )
        .await?;
        let note = if notes.is_empty() {
            "Everything is in step with the platform.".to_string()
        } else {
            notes.join(" ")
        };
        Ok(SyncWebhooksOut {
            template_synced,
            messages_reconciled: reconciled,
            templates_checked: locals.len() as i64,
            templates_updated,
            messages_awaiting_status: awaiting,
            note,
        })
    }

    async fn archive_chat_impl(&self, a: Args) -> ToolResult<ArchiveOut> {
        let id = a.uuid("conversation_id", "conversation id from list_conversations")?;
        let mut conn = self.conn().await?;
        let (row, already) = conn
            .transaction::<_, ToolError, _>(async |c| {
                let Some(current) = conversations::table
                    .find(id)
                    .select(Conversation::as_select())
                    .for_update()
                    .first(c)
                    .await
                    .optional()?
                else {
                    return Err(ToolError::not_found(
                        format!("There is no conversation with id {id}."),
                        "Take the id from list_conversations or check_conversation.",
                    ));
                };
                let now = Utc::now();
                let window = WindowState::at(current.last_inbound_at, now);
                if window.open {
                    let until = window.expires_at.map(ts).unwrap_or_default();
                    return Err(ToolError::new(
                        code::CONVERSATION_ACTIVE,
                        format!(
                            "The conversation's care window is still open for {} more seconds (until {until}), so it cannot be archived.",
                            window.time_remaining_secs
                        ),
                        format!("Reply while the window is open, or archive it after {until}."),
                    ));
                }
                if current.archived_at.is_some() {
                    return Ok((current, true));
                }
                let row = diesel::update(conversations::table.find(id))
                    .set((
                        conversations::archived_at.eq(now),
                        conversations::updated_at.eq(now),
                    ))
                    .returning(Conversation::as_returning())
                    .get_result(c)
                    .await?;
                warden_store::audit::record(
                    c,
                    ACTOR,
                    "conversation_archived",
                    "conversation",
                    &id.to_string(),
                    json!({"customer": row.customer_phone, "from_type": row.conversation_type, "channel": row.channel}),
                )
                .await?;
                Ok((row, false))
            })
            .await?;
        drop(conn);
        if !already {
            self.core()
                .windows()
                .forget(&row.customer_phone, &row.channel)
                .await;
        }
        Ok(ArchiveOut {
            conversation_id: row.id.to_string(),
            status: "archived".into(),
            from_type: lower(&row.conversation_type),
            customer_id: row.customer_phone,
            archived_at: row.archived_at.map(ts).unwrap_or_default(),
        })
    }
}
