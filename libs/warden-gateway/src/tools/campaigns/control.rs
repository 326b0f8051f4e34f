//! A stored campaign: cancel, pause and resume it, or read it back (get_campaign).

use chrono::Utc;
use rmcp::model::JsonObject;
use serde_json::{Map, Value};
use warden_rules::campaign_status::CampaignStatus;

use crate::answer::{opt_ts, ts};
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::checks::check_len;
use crate::input::fields::opt_string;
use crate::input::{Input, parse};
use crate::schema::*;

use super::errors::campaign_error;
use super::*;

impl Gateway {
    pub(super) async fn cancel_campaign_impl(
        &self,
        tool: &str,
        args: JsonObject,
    ) -> ToolResult<CancelCampaignOut> {
        self.require_pro(tool)?;
        let a: Input<CancelCampaignIn> = parse(args)?;
        let id = a.campaign_id.0;
        let reason = opt_string(&a.reason);
        if let Some(r) = &reason {
            check_len(
                "reason",
                r,
                MAX_REASON_CHARS,
                "Shorten the reason; it is a note for the audit trail.",
            )?;
        }
        let moved = self
            .core()
            .cancel_campaign(id, reason.as_deref())
            .await
            .map_err(campaign_error)?;
        Ok(CancelCampaignOut {
            campaign_id: id.to_string(),
            status: "cancelled".into(),
            from_status: moved.before.status,
            reason,
        })
    }

    pub(super) async fn pause_campaign_impl(
        &self,
        tool: &str,
        args: JsonObject,
    ) -> ToolResult<CampaignMoveOut> {
        self.require_pro(tool)?;
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let before = self
            .core()
            .pause_campaign(id)
            .await
            .map_err(campaign_error)?
            .before;
        let note = format!(
            "Paused: nothing more is queued until resume_campaign. Progress so far: {} sent, {} delivered, {} failed; messages already queued may still be delivered.",
            before.sent_count, before.delivered_count, before.failed_count
        );
        Ok(CampaignMoveOut {
            campaign_id: id.to_string(),
            status: "paused".into(),
            from_status: before.status,
            note,
        })
    }

    pub(super) async fn resume_campaign_impl(
        &self,
        tool: &str,
        args: JsonObject,
    ) -> ToolResult<CampaignMoveOut> {
        self.require_pro(tool)?;
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let before = self
            .core()
            .resume_campaign(id)
            .await
            .map_err(campaign_error)?
            .before;
        let note = if before.deliver_at > Utc::now() && before.enqueued_count == 0 {
            format!(
                "Resumed: the campaign continues where it stopped; its delivery time is {}.",
                ts(before.deliver_at)
            )
        } else {
            format!(
                "Resumed: the campaign continues with the recipients not yet sent ({} sent so far).",
                before.sent_count
            )
        };
        Ok(CampaignMoveOut {
            campaign_id: id.to_string(),
            status: "running".into(),
            from_status: before.status,
            note,
        })
    }

    pub(super) async fn get_campaign_impl(&self, args: JsonObject) -> ToolResult<CampaignOut> {
        let a: Input<CampaignIdIn> = parse(args)?;
        let id = a.campaign_id.0;
        let core = self.core();
        let view = core.campaign(id).await.map_err(campaign_error)?;
        let recipients = view.recipients();
        let pending_count = view.pending_count;
        let from = core.sender_id_of_key(&view.sender).to_string();
        let senders = view.senders.as_ref().map(|keys| {
            keys.iter()
                .map(|k| core.sender_id_of_key(k).to_string())
                .collect()
        });
        let c = view.campaign;
        let cost = self.campaign_cost(c.id).await;
        let object = |v: Value| match v {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        // A rejected campaign says why, as the operator wrote it.
        let rejection_reason = (c.status == CampaignStatus::Rejected.as_str())
            .then(|| c.status_reason.clone())
            .flatten();
        Ok(CampaignOut {
            campaign_id: c.id.to_string(),
            name: c.name,
            campaign_type: c.campaign_type,
            status: c.status,
            deliver_at: ts(c.deliver_at),
            template_name: c.template_name,
            locale: c.locale,
            variables: object(c.variables),
            audience_filter: object(c.audience_filter),
            sent_count: c.sent_count,
            delivered_count: c.delivered_count,
            failed_count: c.failed_count,
            cancelled_count: c.cancelled_count,
            pending_count,
            paused_at: opt_ts(c.paused_at),
            // Recipients reached so far until the audience has been read to its end.
            total_recipients: if c.audience_done {
                c.total_recipients
            } else {
                recipients
            },
            rejection_reason,
            refused_by: warden_core::campaigns::preview::refused_by(self.core().pg(), c.id)
                .await
                .map_err(ToolError::from)?,
            status_reason: c.status_reason,
            created_at: ts(c.created_at),
            updated_at: ts(c.updated_at),
            cost,
            from,
            senders,
        })
    }
}
