//! schedule_message and schedule_campaign, and the tier they need.

use chrono::Utc;
use rmcp::model::JsonObject;
use serde_json::Value;
use warden_core::campaigns::create::Approval;
use warden_core::scheduling::schedule::ScheduleMessage;
use warden_core::{SendKind, TemplateSend};
use warden_rules::kinds::MessageType;

use crate::answer::ts;
use crate::error::{ToolError, ToolResult, code};
use crate::gateway::Gateway;
use crate::input::checks::check_len;
use crate::input::parsers::check_language;
use crate::input::{Input, parse};
use crate::quoting::detail;
use crate::schema::*;

use super::checks::future_time;
use super::errors::{schedule_campaign_error, schedule_message_error};
use super::*;

impl Gateway {
    /// FEATURE_NOT_AVAILABLE below tier pro (spec: names the required and current tier and
    /// asks to upgrade).
    pub(crate) fn require_pro(&self, tool: &str) -> ToolResult<()> {
        let tier = self.core().settings().tier;
        if tier.is_pro_or_higher() {
            return Ok(());
        }
        Err(ToolError::new(
            code::FEATURE_NOT_AVAILABLE,
            format!(
                "{tool} needs tier pro or higher, but this deployment runs tier {}; please upgrade to pro to use campaigns.",
                tier.as_str()
            ),
            "Upgrade the deployment to tier pro (TIER=pro) to use campaign tools; until then send messages one by one with send_template or schedule_message.",
        ))
    }

    pub(super) async fn schedule_message_impl(
        &self,
        args: JsonObject,
    ) -> ToolResult<ScheduleMessageOut> {
        let a: Input<ScheduleMessageIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "schedule_message", self.actor())?;
        let phone = self.resolve(&a.customer_id).await?;
        let message_type = parse_message_type(a.message_type.as_str())?;
        let content_hint = "JSON such as {\"type\":\"text\",\"text\":{\"body\":\"Hello\"}}, {\"type\":\"template\",\"template\":{\"name\":\"order_update\",\"language\":\"en\",\"variables\":[\"#1234\"]}} or the platform's own body of any kind (template with components, image, interactive, location, ...)";
        let content = &a.content.0;
        let at = a.deliver_at.0;
        let channel = a.on.channel();
        // Checked first: an unknown `from` is named before anything else is judged.
        let core = self.core();
        let sender = core.sender(a.on.from())?;
        let (from, keys) = (sender.id.clone(), core.senders().key_of(sender));
        let now = Utc::now();
        let deliver_at = future_time("deliver_at", at, now)?;
        // An offer's countdown must still run when the message goes out.
        if let Some(expires) = content
            .pointer("/template/offer_expires_at")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            && expires.with_timezone(&Utc) <= deliver_at
        {
            return Err(ToolError::invalid(
                format!(
                    "The parameter `content.template.offer_expires_at` ({expires}) is not after deliver_at: the offer would have ended before the message goes out."
                ),
                "Pass content.template.offer_expires_at as an RFC 3339 time after deliver_at.",
            ));
        }
        let kind = SendKind::from_content(content).map_err(|e| {
            ToolError::invalid(
                format!("The parameter `content` is not a message: {}.", detail(e)),
                format!("Pass content as {content_hint}."),
            )
        })?;
        match &kind {
            SendKind::Template(TemplateSend {
                locale,
                variables,
                components,
                ..
            }) => {
                check_len(
                    "content.template.components",
                    &Value::Array(components.clone()).to_string(),
                    MAX_COMPONENTS_CHARS,
                    "Give only the header, body and button parameters the template takes.",
                )?;
                check_language("content.template.language", locale)?;
                check_variables("content.template.variables", variables)?;
            }
            SendKind::Text { body } => {
                check_text("content.text.body", body)?;
                if message_type == MessageType::Template {
                    return Err(ToolError::invalid(
                        "message_type template needs template content, but content is text.",
                        "Use message_type service for free-form text, or give content {\"type\":\"template\",\"template\":{...}}.",
                    ));
                }
            } // Validated against the platform's limits when read; free-form like text.
            SendKind::Rich(m) => {
                if message_type == MessageType::Template {
                    return Err(ToolError::invalid(
                        format!(
                            "message_type template needs template content, but content is {}.",
                            m.kind()
                        ),
                        "Use message_type service for free-form content, or give content {\"type\":\"template\",\"template\":{...}}.",
                    ));
                }
            }
        }
        let created = warden_core::scheduling::schedule::schedule_message_keyed(
            core.pg(),
            ScheduleMessage {
                phone: phone.clone(),
                channel: channel.to_string(),
                kind,
                message_type,
                deliver_at,
                sender: keys,
            },
            self.actor(),
            key,
        )
        .await
        .map_err(schedule_message_error)?;
        Ok(ScheduleMessageOut {
            message_id: created.id.to_string(),
            replayed: created.replayed,
            status: "scheduled".into(),
            deliver_at: ts(deliver_at),
            customer_id: phone.digits().to_string(),
            message_type: message_type.as_str().to_string(),
            channel: channel.to_string(),
            from,
        })
    }

    pub(super) async fn schedule_campaign_impl(
        &self,
        tool: &str,
        args: JsonObject,
    ) -> ToolResult<ScheduleCampaignOut> {
        self.require_pro(tool)?;
        let a: Input<ScheduleCampaignIn> = parse(args)?;
        let key = a.idempotency(&a.keyed, "schedule_campaign", self.actor())?;
        let deliver_at = future_time("deliver_at", a.deliver_at.0, Utc::now())?;
        let checked = self.checked_campaign(&a, deliver_at)?;
        let preview_of = CheckedCampaign {
            new: checked.new.clone(),
            from: checked.from.clone(),
            senders: checked.senders.clone(),
            stored: checked.stored.clone(),
        };
        let CheckedCampaign {
            new,
            from,
            senders,
            stored,
        } = checked;
        let (name, campaign_type, template_name, locale) = (
            new.name.clone(),
            new.campaign_type,
            new.template_name.clone(),
            new.locale.clone(),
        );
        // CAMPAIGN_APPROVAL=required: an agent's campaign waits for an operator (console).
        let approval = match self.core().settings().console.campaign_approval {
            warden_settings::CampaignApproval::Required => Approval::Required,
            warden_settings::CampaignApproval::Off => Approval::NotNeeded,
        };
        let created = warden_core::campaigns::create::schedule_campaign_gated(
            self.core().pg(),
            new,
            stored,
            self.actor(),
            key,
            approval,
        )
        .await
        .map_err(schedule_campaign_error)?;
        // The same numbers as preview_campaign, as of now (after the checks above, so its
        // errors stay schedule_campaign's); a preview that cannot be worked out is null.
        let preview = match self.preview_of(&preview_of, created.id).await {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(campaign_id = %created.id, error = ?e.code, "campaign preview not available");
                None
            }
        };
        Ok(ScheduleCampaignOut {
            campaign_id: created.id.to_string(),
            replayed: created.replayed,
            status: approval.initial_status().as_str().into(),
            name,
            campaign_type: campaign_type.as_str().to_string(),
            deliver_at: ts(deliver_at),
            template_name,
            locale,
            from,
            senders,
            preview,
        })
    }
}
