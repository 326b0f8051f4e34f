//! What the scheduling and campaign tools answer, the preview among them.

use schemars::JsonSchema;
use serde::Serialize;

use super::CostReport;

#[derive(Serialize, JsonSchema)]
pub struct ScheduleMessageOut {
    pub message_id: String,
    /// "scheduled".
    pub status: String,
    pub deliver_at: String,
    pub customer_id: String,
    pub message_type: String,
    pub channel: String,
    /// The sender (business number) it goes out from.
    pub from: String,
    /// True when an earlier call with the same idempotency_key created this and nothing
    /// new was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

#[derive(Serialize, JsonSchema)]
pub struct ScheduleCampaignOut {
    pub campaign_id: String,
    /// "scheduled"; "pending_approval" when the deployment requires an operator's approval
    /// (CAMPAIGN_APPROVAL=required): it sends nothing until approved in the console.
    pub status: String,
    pub name: String,
    #[serde(rename = "type")]
    pub campaign_type: String,
    pub deliver_at: String,
    pub template_name: String,
    pub locale: String,
    /// True when an earlier call with the same idempotency_key created this and nothing
    /// new was.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
    /// The sender (business number) it goes out from; the first of `senders` when several.
    pub from: String,
    /// The numbers of one business it spreads over, each recipient always getting the
    /// same one; absent when it goes out from one number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// What it would do if it ran now (preview_campaign's answer, as of scheduling);
    /// null when it could not be worked out then.
    pub preview: Option<CampaignPreviewOut>,
}

/// One country's share of a campaign preview.
#[derive(Serialize, JsonSchema)]
pub struct CountryPreviewOut {
    /// Recipients of that country who would be sent the message.
    pub recipients: u64,
    /// What sending them would cost (the rate card's rate for the template's category).
    pub estimated_cost: f64,
}

/// What a campaign would do if it ran now (preview_campaign).
#[derive(Serialize, JsonSchema)]
pub struct CampaignPreviewOut {
    /// The sender it would go out from (the first of several).
    pub from: String,
    /// Every sender when it spreads over several; absent for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// Customers the audience filter selects.
    pub audience: u64,
    /// Those the send path would accept now.
    pub would_send: u64,
    /// Refusals (and holds until a rule lifts) by reason code.
    pub refused_by: std::collections::BTreeMap<String, u64>,
    /// Refusals by the policy that refused.
    pub refused_by_policy: std::collections::BTreeMap<String, u64>,
    /// The recipients that would be sent, by country, with their cost.
    pub by_country: std::collections::BTreeMap<String, CountryPreviewOut>,
    pub estimated_cost: f64,
    /// The rate card's currency; null when none is installed (costs are then 0).
    pub currency: Option<String>,
    /// would_send at the senders' throughput together.
    pub estimated_duration_secs: f64,
}

impl CampaignPreviewOut {
    /// The preview of a campaign from `from` (and `senders` when several).
    pub fn of(
        p: warden_core::campaigns::preview::CampaignPreview,
        from: String,
        senders: Option<Vec<String>>,
    ) -> Self {
        CampaignPreviewOut {
            from,
            senders,
            audience: p.audience,
            would_send: p.would_send,
            refused_by: p.refused_by,
            refused_by_policy: p.refused_by_policy,
            by_country: p
                .by_country
                .into_iter()
                .map(|(cc, c)| {
                    (
                        cc,
                        CountryPreviewOut {
                            recipients: c.recipients,
                            estimated_cost: c.estimated_cost,
                        },
                    )
                })
                .collect(),
            estimated_cost: p.estimated_cost,
            currency: p.currency,
            estimated_duration_secs: p.estimated_duration_secs,
        }
    }
}

#[derive(Serialize, JsonSchema)]
pub struct CancelCampaignOut {
    pub campaign_id: String,
    /// "cancelled".
    pub status: String,
    pub from_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Serialize, JsonSchema)]
pub struct CampaignMoveOut {
    pub campaign_id: String,
    /// "paused" (pause_campaign) or "running" (resume_campaign).
    pub status: String,
    pub from_status: String,
    pub note: String,
}

#[derive(Serialize, JsonSchema)]
pub struct CampaignOut {
    pub campaign_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub campaign_type: String,
    /// scheduled, running, sending, paused, cancelled, completed, failed, pending_approval
    /// (waiting for an operator) or rejected (an operator refused it: see rejection_reason).
    pub status: String,
    pub deliver_at: String,
    pub template_name: String,
    pub locale: String,
    pub variables: serde_json::Map<String, serde_json::Value>,
    pub audience_filter: serde_json::Map<String, serde_json::Value>,
    /// Recipients whose message reached the platform (sent, delivered or read) and has
    /// not failed since; each recipient is counted once, in its latest state.
    pub sent_count: i32,
    /// The part of sent_count delivered or read.
    pub delivered_count: i32,
    /// Recipients refused by compliance or whose message failed.
    pub failed_count: i32,
    /// Recipients not sent because the campaign was cancelled.
    pub cancelled_count: i32,
    /// Recipients given a message with no final outcome yet.
    pub pending_count: i32,
    pub paused_at: Option<String>,
    /// sent + failed + cancelled + pending: the whole audience once it has been read to
    /// its end, the recipients reached so far before.
    pub total_recipients: i32,
    pub status_reason: Option<String>,
    /// Why an operator rejected it (status rejected); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// What the campaign cost: estimated from the rate card beside the platform's reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostReport>,
    /// The sender (business number) it goes out from; the first of `senders` when several.
    pub from: String,
    /// The numbers of one business it spreads over, each recipient always getting the
    /// same one; absent when it goes out from one number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub senders: Option<Vec<String>>,
    /// The real run's refusals so far by reason code (recipients whose message a
    /// compliance or policy rule refused), as preview_campaign counts them.
    pub refused_by: std::collections::BTreeMap<String, u64>,
}
