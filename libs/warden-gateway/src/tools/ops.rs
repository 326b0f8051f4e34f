//! Group E, operational: create_template, sync_webhooks, archive_chat.

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use warden_core::conversations::archive::ArchiveError;
use warden_core::delivery::reconcile::SyncReport;
use warden_core::templates::{Submitted, SyncSource};
use warden_platform::template::CreateTemplateRequest;
use warden_rules::kinds::TemplateCategory;
use warden_rules::template_spec::{
    ParameterFormat, SpecError, TemplateSpec, parse_buttons, parse_header,
};
use warden_store::models::Template;
use warden_store::schema::templates;

use crate::args::{Args, check_language};
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::schema::{self, *};
use crate::text::{detail, echo, kind_message};
use crate::tools::actions::platform_template;
use crate::util::{finish, lower, ts};

#[tool_router(router = ops_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        name = "create_template",
        description = "Submit a new message template to the platform for approval. Validated locally first: name (lower-case \
letters, digits, underscores, at most 512), category (UTILITY, MARKETING, AUTHENTICATION), language code, body_text (at \
most 1024 characters, placeholders {{1}}, {{2}}, ... without gaps, or {{first_name}} names with parameter_format named), \
and the optional header ({format, text?}; text at most 60 characters with at most 1 variable), footer (at most 60) and \
buttons (at most 10; at most 2 URL, 1 PHONE_NUMBER, 1 COPY_CODE; quick replies together; OTP only for AUTHENTICATION). Returns template_name, locale, category, status \
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
        let spec = template_spec(&a, &body, category)?;
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
        let request = if spec.is_body_only() {
            CreateTemplateRequest::new(&name, &language, category.as_upper(), &body)
        } else {
            CreateTemplateRequest {
                name: name.clone(),
                language: language.clone(),
                category: category.as_upper().to_owned(),
                components: serde_json::from_value(serde_json::Value::Array(spec.to_components()))
                    .map_err(|e| {
                        ToolError::invalid(
                            format!("The template components are not usable: {e}."),
                            "Fix `header` or `buttons` and call again.",
                        )
                    })?,
                parameter_format: (spec.parameter_format == ParameterFormat::Named)
                    .then(|| spec.parameter_format.as_str().to_uppercase()),
            }
        };
        let created = match self.platform().submit_template(&request).await {
            Ok(c) => c,
            Err(e) => return Err(self.upstream_error("create the template", &e).await),
        };
        let platform_id = created.id.clone();
        let submitted = Submitted {
            name: name.clone(),
            language: language.clone(),
            category,
            body_text: body,
            status: created.status.clone(),
            platform_id: platform_id.clone(),
            components: (!spec.is_body_only())
                .then(|| serde_json::Value::Array(spec.to_components())),
            parameter_format: (!spec.is_body_only())
                .then(|| spec.parameter_format.as_str().to_owned()),
        };
        let stored =
            warden_core::templates::record_submitted(self.core().pg(), &submitted, self.actor())
                .await;
        let row = stored.map_err(|e| {
            let e = ToolError::from(e);
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
                for local in &locals {
                    let Some(info) = remote
                        .iter()
                        .map(platform_template)
                        .find(|r| r.describes(local))
                    else {
                        continue;
                    };
                    if !info.differs_from(local) {
                        continue;
                    }
                    warden_core::templates::sync_from_platform(
                        self.core().pg(),
                        &info,
                        &local.locale,
                        SyncSource::SyncWebhooks,
                        self.actor(),
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
        let expired =
            warden_core::delivery::reconcile::settle_expired_sends(self.core().pg(), now).await?;
        let mut reconciled = expired.settled;
        let awaiting = expired.awaiting_status;

        // 3. Accepted messages whose publish was lost (the relay's job, done now).
        let unpublished =
            warden_core::delivery::reconcile::unpublished_messages(self.core().pg(), now).await?;
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
        warden_core::delivery::reconcile::record_sync(
            self.core().pg(),
            &self.core().settings().platform.account_id,
            SyncReport {
                template_synced,
                templates_checked: locals.len() as i64,
                templates_updated,
                messages_reconciled: reconciled,
                messages_awaiting_status: awaiting,
            },
            self.actor(),
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
            status: "archived".into(),
            from_type: lower(&row.conversation_type),
            customer_id: row.customer_phone,
            archived_at: row.archived_at.map(ts).unwrap_or_default(),
        })
    }
}

/// create_template's header, footer, buttons and parameter_format, checked with the
/// platform's rules (each refusal names the field and the limit).
fn template_spec(a: &Args, body: &str, category: TemplateCategory) -> ToolResult<TemplateSpec> {
    let invalid = |e: SpecError| {
        let field = e.field.split(['.', '[']).next().unwrap_or("").to_owned();
        ToolError::invalid(
            format!("The template is not valid: {}.", detail(e)),
            format!("Fix `{field}` and call again."),
        )
    };
    let parameter_format =
        ParameterFormat::parse(a.opt_string("parameter_format")?.as_deref()).map_err(invalid)?;
    let header = a
        .opt_json(
            "header",
            "a JSON object such as {\"format\": \"TEXT\", \"text\": \"Your order\"}",
        )?
        .map(|h| parse_header(&h))
        .transpose()
        .map_err(invalid)?;
    let buttons = a
        .opt_json(
            "buttons",
            "a JSON array such as [{\"type\": \"QUICK_REPLY\", \"text\": \"Yes\"}]",
        )?
        .map(|b| parse_buttons(&b))
        .transpose()
        .map_err(invalid)?
        .unwrap_or_default();
    let spec = TemplateSpec {
        parameter_format,
        header,
        body: body.to_owned(),
        footer: a.opt_string("footer")?,
        buttons,
    };
    spec.validate(category).map_err(invalid)?;
    Ok(spec)
}
