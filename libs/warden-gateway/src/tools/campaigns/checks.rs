//! schedule_campaign's (and preview_campaign's) arguments checked into the campaign to
//! store: its time, template, audience and the numbers it goes out from.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Value, json};
use warden_core::campaigns::create::{CampaignSenders, CampaignType, NewCampaign};
use warden_rules::audience::AudienceFilter;

use warden_rules::template_params::Variables;

use crate::answer::ts;
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::Input;
use crate::input::checks::check_len;
use crate::input::shared::{check_sender_name, template_locale};
use crate::quoting::{detail, echo};

use super::*;

/// A campaign's arguments, checked (`Gateway::checked_campaign`).
pub(crate) struct CheckedCampaign {
    pub(crate) new: NewCampaign,
    /// The sender id it goes out from (the first of several).
    pub(crate) from: String,
    /// Every sender id when several.
    pub(crate) senders: Option<Vec<String>>,
    pub(crate) stored: CampaignSenders,
}

/// deliver_at must be in the future (and within a year).
pub(super) fn future_time(
    key: &str,
    at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> ToolResult<DateTime<Utc>> {
    if at <= now {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{key}` ({}) is not in the future (it is now {}).",
                ts(at),
                ts(now)
            ),
            format!(
                "Pass `{key}` as a future RFC 3339 time, e.g. {}.",
                ts(now + TimeDelta::hours(1))
                    .split('.')
                    .next()
                    .unwrap_or_default()
            ),
        ));
    }
    if at > now + MAX_AHEAD {
        return Err(ToolError::invalid(
            format!(
                "The parameter `{key}` ({}) is more than a year ahead.",
                ts(at)
            ),
            format!("Pass `{key}` within the next 12 months."),
        ));
    }
    Ok(at)
}

impl Gateway {
    /// The arguments of schedule_campaign (and preview_campaign) checked: the campaign to
    /// store at `deliver_at`, the numbers it goes out from as tools name them and as
    /// stored.
    pub(crate) fn checked_campaign(
        &self,
        a: &Input<ScheduleCampaignIn>,
        deliver_at: DateTime<Utc>,
    ) -> ToolResult<CheckedCampaign> {
        let name = a.name.0.clone();
        if name.chars().count() > MAX_CAMPAIGN_NAME {
            return Err(ToolError::invalid(
                format!(
                    "The campaign name has {} characters; at most {MAX_CAMPAIGN_NAME} are allowed.",
                    name.chars().count()
                ),
                "Use a shorter name.",
            ));
        }
        let raw_type = a.campaign_type.0.clone();
        let campaign_type = raw_type.parse::<CampaignType>().map_err(|_| {
            ToolError::invalid(
                format!(
                    "type {} is not one of broadcast, marketing, utility.",
                    echo(&raw_type)
                ),
                "Pass type as broadcast, marketing or utility.",
            )
        })?;
        let template_name = a.template_name.0.clone();
        let (from, senders, stored) = self.campaign_senders(a)?;
        let locale = template_locale(&a.locale, &a.language)?;
        let mut components = components_of(&a.components)?;
        components.extend(a.formats.components(Utc::now())?);
        let variables = match a.variables.as_ref().map(|j| &j.0) {
            None => Variables::Positional(Vec::new()),
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                warden_rules::template_params::parse_any_variables(v).map_err(|e| {
                    ToolError::invalid(
                        format!("The parameter `variables` is not usable: {}.", detail(e)),
                        "Pass variables as a JSON object keyed by placeholder number, e.g. {\"1\": \"friend\", \"2\": \"20%\"}.",
                    )
                })?
            }
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `variables` must be a JSON object, got {}.",
                        echo(&other.to_string())
                    ),
                    "Pass variables as a JSON object keyed by placeholder number, e.g. {\"1\": \"friend\"}.",
                ));
            }
        };
        // Only `{}` or no audience_filter means everyone: a blank string is refused.
        let audience_hint = "Leave audience_filter out (or pass {}) for every customer, or give a JSON object such as {\"include_tags\": [\"vip\"]}.";
        if a.blank("audience_filter") {
            return Err(ToolError::invalid(
                "The parameter `audience_filter` is an empty string, which selects nobody.",
                audience_hint,
            ));
        }
        let audience = a
            .audience_filter
            .as_ref()
            .map_or_else(|| json!({}), |j| j.0.clone());
        let (variables, named_variables) = match variables {
            Variables::Positional(v) => (v, Vec::new()),
            Variables::Named(n) => (Vec::new(), n),
        };
        check_variables("variables", &variables)?;
        let named_values: Vec<String> = named_variables.iter().map(|(_, v)| v.clone()).collect();
        check_variables("variables", &named_values)?;
        check_len(
            "audience_filter",
            &audience.to_string(),
            MAX_AUDIENCE_CHARS,
            "Pass a shorter audience_filter: select by tags rather than long customer_ids lists, or split the campaign.",
        )?;
        AudienceFilter::from_value(&audience).map_err(|e| {
            ToolError::invalid(
                format!("{}.", detail(e)),
                "Pass audience_filter as a JSON object with only include_tags, exclude_tags, customer_ids, opt_in and active_within_days, or {} for every customer.",
            )
        })?;

        Ok(CheckedCampaign {
            new: NewCampaign {
                name,
                campaign_type,
                template_name,
                locale,
                variables,
                named_variables,
                components,
                audience_filter: audience,
                deliver_at,
            },
            from,
            senders,
            stored,
        })
    }

    /// The numbers `from` or `senders` name: (the one it goes out from or the first of
    /// several, every one when several, their stored keys). Several must be one business's
    /// (they share its templates, consent and limits).
    pub(super) fn campaign_senders(
        &self,
        a: &ScheduleCampaignIn,
    ) -> ToolResult<(String, Option<Vec<String>>, CampaignSenders)> {
        let core = self.core();
        let hint = "Pass senders as a JSON array of sender ids of one business, e.g. [\"a1\", \"a2\"] (list_senders shows each one's waba_id).";
        let list: Vec<String> = match a.senders.as_ref().map(|j| &j.0) {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
                    Value::Number(n) => Ok(n.to_string()),
                    other => Err(ToolError::invalid(
                        format!(
                            "The parameter `senders` must hold sender ids, found {}.",
                            echo(&other.to_string())
                        ),
                        hint,
                    )),
                })
                .collect::<ToolResult<_>>()?,
            Some(other) => {
                return Err(ToolError::invalid(
                    format!(
                        "The parameter `senders` must be a JSON array, got {}.",
                        echo(&other.to_string())
                    ),
                    hint,
                ));
            }
        };
        if a.senders.is_some() && list.is_empty() {
            return Err(ToolError::invalid(
                "The parameter `senders` is an empty list, which names no number.",
                "Leave senders out for the default sender, or list at least one sender id.",
            ));
        }
        if a.from.is_some() && !list.is_empty() {
            return Err(ToolError::invalid(
                "Both `from` and `senders` were given; a campaign takes one of them.",
                "Pass `from` for one number, or `senders` for several numbers of one business.",
            ));
        }
        for given in &list {
            check_sender_name("senders", given)?;
        }
        let named: Vec<&warden_settings::Sender> = if list.is_empty() {
            vec![core.sender(a.from.as_ref().map(|t| t.0.as_str()))?]
        } else {
            list.iter()
                .map(|given| core.sender(Some(given)))
                .collect::<Result<_, _>>()?
        };
        let first = named[0];
        let others: Vec<&&warden_settings::Sender> = named
            .iter()
            .filter(|s| s.waba_id != first.waba_id)
            .collect();
        if !others.is_empty() {
            let shown = |s: &warden_settings::Sender| format!("{} (business {})", s.id, s.waba_id);
            let mut all = vec![shown(first)];
            all.extend(others.iter().map(|s| shown(s)));
            return Err(ToolError::invalid(
                format!(
                    "The parameter `senders` names numbers of different businesses: {}. A campaign spreads over the numbers of one business only.",
                    all.join(", ")
                ),
                format!(
                    "Pass senders of one business (e.g. only those of business {}), or schedule one campaign per business.",
                    first.waba_id
                ),
            ));
        }
        let mut ids: Vec<String> = Vec::new();
        let mut keys: Vec<String> = Vec::new();
        for s in named {
            if !ids.contains(&s.id) {
                ids.push(s.id.clone());
                keys.push(core.senders().key_of(s).sender);
            }
        }
        let business = core.senders().key_of(first).business;
        let stored = CampaignSenders::of(business, keys).unwrap_or_default();
        let several = (ids.len() > 1).then(|| ids.clone());
        Ok((ids.swap_remove(0), several, stored))
    }
}
