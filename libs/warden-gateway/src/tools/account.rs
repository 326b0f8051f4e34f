//! Account and cost: get_account_quality, estimate_cost, estimate_pricing,
//! get_spend.

use chrono::Utc;
use rmcp::handler::server::tool::ToolName;
use rmcp::model::{CallToolResult, JsonObject};
use rmcp::{tool, tool_router};
use warden_core::delivery::reconcile::SyncReport;
use warden_core::templates::SyncSource;
use warden_rules::kinds::Category;
use warden_store::models::PricingEntry;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::answer::{finish, ts};
use crate::error::{ToolError, ToolResult};
use crate::gateway::Gateway;
use crate::input::checks::bounded;
use crate::input::fields::{Text, Timestamp, Whole, opt_string, opt_whole};
use crate::input::shared::SenderName;
use crate::input::{Input, parse};
use crate::quoting::{echo, kind_message};
use crate::schema::{self, *};
use crate::tools::platform_template;
use crate::tools::senders::sender_arg;

/// The most messages one estimate covers.
const MAX_QUANTITY: i64 = 1_000_000_000;
use warden_core::account::rate_card::DEFAULT_COUNTRY;

#[derive(Deserialize, JsonSchema)]
pub struct EstimateCostIn {
    /// "marketing", "utility", "authentication" or "service".
    pub message_type: Text,
    /// ISO 3166 two-letter country code of the recipients, e.g. "ID"; default "DEFAULT" (the fallback rate card).
    #[schemars(extend("default" = "DEFAULT"))]
    pub recipient_country: Option<Text>,
    /// How many messages (a positive whole number); default 1.
    #[schemars(range(min = 1), extend("default" = 1))]
    pub quantity: Option<Whole<u32>>,
}

#[derive(Deserialize, JsonSchema)]
pub struct EstimatePricingIn {
    /// "marketing", "utility", "authentication" or "service".
    pub conversation_type: Text,
    /// ISO 3166 two-letter country code, e.g. "ID"; default "DEFAULT" (the fallback rate card).
    #[schemars(extend("default" = "DEFAULT"))]
    pub recipient_country: Option<Text>,
}

#[derive(Deserialize, JsonSchema)]
pub struct SpendIn {
    /// Start of the period (RFC 3339, inclusive): messages accepted from then on. Default: 30 days before `until`.
    pub since: Option<Timestamp>,
    /// End of the period (RFC 3339, exclusive). Default: now.
    pub until: Option<Timestamp>,
}

#[derive(Deserialize, JsonSchema)]
pub struct AccountQualityIn {
    /// The number to read (a sender id or its phone_number_id; list_senders lists them).
    /// Default: the default sender.
    pub from: Option<SenderName>,
}

#[tool_router(router = account_tools, vis = "pub(crate)")]
impl Gateway {
    #[tool(
        description = "Read the business account's standing live from the platform (not cached): quality_rating (GREEN, \
YELLOW, RED), quality_tier, the messaging limit tier and current_limit (unique customers reached by business-initiated \
messages per rolling 24 hours, shared by every number), and messaging_limit: how many of them were used (Warden refuses \
a business-initiated send beyond it and pauses campaigns), with the customers held after error 131049. Check it before large campaigns; a falling rating means pause marketing. Read-only: it changes nothing \
but Warden's copy of the limit the platform reports (the same the platform's webhooks update). Errors: UPSTREAM_ERROR (the platform refused; the \
message explains its code), UNAVAILABLE (the platform cannot be reached: retry later).",
        input_schema = schema::input::<AccountQualityIn>(),
        output_schema = schema::output::<AccountQualityOut>(),
        annotations(read_only_hint = true, open_world_hint = true)
    )]
    async fn get_account_quality(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_account_quality_impl(args).await)
    }

    #[tool(
        description = "Estimate what sending quantity messages of a type to one country costs, from the stored rate card (no \
platform call). Unknown countries use the DEFAULT rates (rate_country says which row was used). Returns \
cost_per_conversation and total_estimated_cost as decimal strings with 4 places, currency, pricing_category and \
pricing_model_version. Errors: INVALID_ARGUMENT (unknown message_type, country not a 2-letter code, quantity not a \
positive whole number), UNAVAILABLE.",
        input_schema = schema::input::<EstimateCostIn>(),
        output_schema = schema::output::<CostOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn estimate_cost(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.estimate_cost_impl(args).await)
    }

    #[tool(
        description = "Look up the price of one conversation of a type in a country from the stored rate card (no platform \
call). Unknown countries use the DEFAULT rates (country then reads DEFAULT). Returns country, conversation_type, \
cost_per_conversation (a number), currency, pricing_category and effective_date (YYYY-MM-DD). Errors: INVALID_ARGUMENT \
(unknown conversation_type, country not a 2-letter code), UNAVAILABLE.",
        input_schema = schema::input::<EstimatePricingIn>(),
        output_schema = schema::output::<PricingOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn estimate_pricing(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.estimate_pricing_impl(args).await)
    }

    #[tool(
        description = "What the business's messages cost over a period: Warden's estimate from the rate card beside \
the actual cost the platform reported in its status webhooks (per-message pricing), in total and by category. \
Covers outbound messages accepted from since (default 30 days before until) to until (default now). No platform \
call. Returns since, until, currency, estimated and actual (decimal strings, 4 places) and by_category (delivered, \
estimated_billable, estimated, reported, actual_billable, actual, free_customer_service, free_entry_point). Errors: \
INVALID_ARGUMENT (a timestamp that is not RFC 3339, since not before until, a period over 366 days), UNAVAILABLE.",
        input_schema = schema::input::<SpendIn>(),
        output_schema = schema::output::<SpendOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn get_spend(&self, tool: ToolName, args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.get_spend_impl(args).await)
    }

    #[tool(
        description = "Manual, idempotent recovery when webhook events may have been missed: re-reads every local template's \
status from the platform, settles sends stuck mid-delivery whose platform acceptance is on record, and re-publishes \
accepted messages whose publication to delivery was lost. Returns template_synced (statuses re-read), messages_reconciled \
(messages actually settled by this call), messages_awaiting_status (sends with an unknown outcome that the platform's \
status webhook will settle; they are never blindly resent). Errors: UNAVAILABLE (database down).",
        input_schema = schema::input::<NoParams>(),
        output_schema = schema::output::<SyncWebhooksOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn sync_webhooks(&self, tool: ToolName, _args: JsonObject) -> CallToolResult {
        finish(&tool.0, self.sync_webhooks_impl().await)
    }

    async fn sync_webhooks_impl(&self) -> ToolResult<SyncWebhooksOut> {
        let now = Utc::now();
        // 1. Template statuses, live from the platform.
        let locals = {
            let mut conn = self.conn().await?;
            warden_core::templates::all_stored(&mut conn)
                .await
                .map_err(warden_core::CoreError::from)?
        };
        let mut notes = Vec::new();
        // Each business's templates, read with one of its numbers.
        let (mut template_synced, mut templates_updated) = (true, 0i64);
        let core = self.core();
        let senders = core.senders();
        let mut businesses: Vec<String> = Vec::new();
        for sender in senders.all() {
            let keys = senders.key_of(sender);
            if businesses.contains(&keys.business) {
                continue;
            }
            businesses.push(keys.business.clone());
            let remote = match self.platform_of(&keys.sender).list_templates().await {
                Ok(remote) => remote,
                Err(e) => {
                    let err = self.upstream_error("list the templates", &e).await;
                    notes.push(format!(
                        "Template statuses of business {} were not re-read: {}",
                        sender.waba_id, err.message
                    ));
                    template_synced = false;
                    continue;
                }
            };
            for local in locals.iter().filter(|t| t.business == keys.business) {
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
                    core.pg(),
                    &keys.business,
                    &info,
                    &local.locale,
                    SyncSource::SyncWebhooks,
                    self.actor(),
                )
                .await?;
                templates_updated += 1;
            }
        }

        // 2. Sends stuck in `sending` after their lease ran out.
        let expired =
            warden_core::delivery::reconcile::settle_expired_sends(core.pg(), now).await?;
        let mut reconciled = expired.settled;
        let awaiting = expired.awaiting_status;

        // 3. Accepted messages whose publish was lost (the relay's job, done now).
        let unpublished =
            warden_core::delivery::reconcile::unpublished_messages(core.pg(), now).await?;
        let mut publish_failed = 0;
        for id in unpublished {
            match core.publish(id).await {
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
            core.pg(),
            &core.settings().platform.account_id,
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
}

/// The longest period one spend report covers.
const MAX_SPEND_DAYS: i64 = 366;
/// The period when `since` is not given.
const DEFAULT_SPEND_DAYS: i64 = 30;

/// `1234` (1/10000 units) -> "0.1234".
pub(crate) fn decimal_e4(value: i128) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let v = value.unsigned_abs();
    format!("{sign}{}.{:04}", v / 10_000, v % 10_000)
}

fn pricing_type(key: &str, raw: &str) -> ToolResult<Category> {
    raw.parse::<Category>().map_err(|e| {
        ToolError::invalid(
            format!("The parameter `{key}`: {}.", kind_message(&e)),
            format!("Pass `{key}` as marketing, utility, authentication or service."),
        )
    })
}

fn country(recipient_country: &Option<Text>) -> ToolResult<String> {
    let raw = opt_string(recipient_country);
    let Some(raw) = raw else {
        return Ok(DEFAULT_COUNTRY.into());
    };
    let up = raw.to_ascii_uppercase();
    if up == DEFAULT_COUNTRY || (up.len() == 2 && up.chars().all(|c| c.is_ascii_alphabetic())) {
        return Ok(up);
    }
    Err(ToolError::invalid(
        format!(
            "recipient_country {} is not an ISO 3166 two-letter country code.",
            echo(&raw)
        ),
        "Pass recipient_country like \"ID\", \"US\" or \"BR\", or leave it out for the DEFAULT rates.",
    ))
}

/// The rate in force today for (country, type), falling back to DEFAULT.
async fn rate(gateway: &Gateway, country: &str, category: Category) -> ToolResult<PricingEntry> {
    warden_core::account::rate_card::rate(gateway.core().pg(), country, category)
        .await?
        .ok_or_else(|| {
            ToolError::not_found(
                format!("No rate is stored for {} conversations.", category.as_str()),
                "Ask an operator to check the conversation_pricing seed.",
            )
        })
}

/// Spelled-out messaging limit of a platform tier.
fn limit_of_tier(tier: &str) -> String {
    match tier.to_ascii_uppercase().as_str() {
        "TIER_50" => "50".into(),
        "TIER_250" => "250".into(),
        "TIER_1K" => "1000".into(),
        "TIER_2K" => "2000".into(),
        "TIER_10K" => "10000".into(),
        "TIER_100K" => "100000".into(),
        "TIER_UNLIMITED" | "UNLIMITED" => "UNLIMITED".into(),
        "" => "UNKNOWN".into(),
        other => other.to_string(),
    }
}

fn tier_of_rating(rating: &str) -> &'static str {
    match rating.to_ascii_uppercase().as_str() {
        "GREEN" | "HIGH" => "HIGH",
        "YELLOW" | "MEDIUM" => "MEDIUM",
        "RED" | "LOW" => "LOW",
        _ => "UNKNOWN",
    }
}

impl Gateway {
    async fn get_account_quality_impl(&self, args: JsonObject) -> ToolResult<AccountQualityOut> {
        let a: Input<AccountQualityIn> = parse(args)?;
        let core = self.core();
        let sender = core.sender(sender_arg(&a.from))?;
        let keys = core.senders().key_of(sender);
        let platform = self.platform_of(&keys.sender);
        let phone = match platform.phone_number_quality().await {
            Ok(p) => p,
            Err(e) => return Err(self.upstream_error("read the account quality", &e).await),
        };
        let rating = phone
            .quality_rating
            .clone()
            .unwrap_or_else(|| "UNKNOWN".into())
            .to_ascii_uppercase();
        // What was read is what list_senders shows of the number from now on.
        self.core()
            .record_number_reads(&[(
                keys.sender.clone(),
                warden_core::account::number_facts::NumberFacts {
                    display_phone_number: phone.display_phone_number.clone(),
                    quality_rating: phone.quality_rating.clone(),
                    throughput_level: phone.throughput.as_ref().map(|t| t.level.clone()),
                    name_status: phone.name_status.clone(),
                    messaging_limit_tier: phone.messaging_limit_tier.clone(),
                },
            )])
            .await?;
        let limit_tier = phone.messaging_limit_tier.clone().unwrap_or_default();
        // The tier read now is the portfolio's limit from here on (core records it).
        if !limit_tier.is_empty() {
            warden_core::account::portfolio::learn_from_platform(
                core.pg(),
                &keys.portfolio,
                &limit_tier,
                "get_account_quality",
                "mcp-gateway",
            )
            .await?;
        }
        let usage =
            warden_core::account::portfolio::current_usage(core.pg(), &keys.portfolio, Utc::now())
                .await?;
        Ok(AccountQualityOut {
            from: sender.id.clone(),
            waba_id: sender.waba_id.clone(),
            name: phone
                .verified_name
                .clone()
                .or(phone.display_phone_number.clone())
                .unwrap_or_default(),
            quality_tier: tier_of_rating(&rating).to_string(),
            quality_rating: rating,
            current_limit: limit_of_tier(&limit_tier),
            limit_tier: if limit_tier.is_empty() {
                "UNKNOWN".into()
            } else {
                limit_tier
            },
            phone_number_id: if phone.id.is_empty() {
                sender.phone_number_id.clone()
            } else {
                phone.id.clone()
            },
            display_phone_number: phone.display_phone_number,
            throughput_level: phone.throughput.map(|t| t.level),
            messaging_limit: MessagingLimitOut::of(&usage),
        })
    }

    async fn get_spend_impl(&self, args: JsonObject) -> ToolResult<SpendOut> {
        let a: Input<SpendIn> = parse(args)?;
        let until = a.until.map_or_else(Utc::now, |t| t.0);
        let since = a
            .since
            .map_or(until - chrono::TimeDelta::days(DEFAULT_SPEND_DAYS), |t| t.0);
        if since >= until {
            return Err(ToolError::invalid(
                format!(
                    "The parameter `since` ({}) is not before `until` ({}).",
                    ts(since),
                    ts(until)
                ),
                "Pass since earlier than until, or leave since out for the 30 days before until.",
            ));
        }
        if until - since > chrono::TimeDelta::days(MAX_SPEND_DAYS) {
            return Err(ToolError::invalid(
                format!("The period from `since` to `until` is longer than {MAX_SPEND_DAYS} days."),
                "Ask for at most 366 days at a time and add the reports up.",
            ));
        }
        let scope = warden_core::account::pricing::ReportScope::Period { since, until };
        let report = self
            .cost_report(scope)
            .await
            .map_err(warden_core::CoreError::from)?;
        let core = self.core();
        let senders = core
            .senders()
            .all()
            .iter()
            .filter(|s| core.reach().covers(core.senders().sender_key(s)))
            .map(|s| s.id.clone())
            .collect();
        Ok(SpendOut {
            senders,
            since: ts(since),
            until: ts(until),
            report,
        })
    }

    async fn estimate_cost_impl(&self, args: JsonObject) -> ToolResult<CostOut> {
        let a: Input<EstimateCostIn> = parse(args)?;
        let category = pricing_type("message_type", a.message_type.as_str())?;
        let country = country(&a.recipient_country)?;
        let quantity = match opt_whole(&a.quantity) {
            Some(q) => bounded(
                "quantity",
                q,
                1,
                MAX_QUANTITY,
                "as a positive whole number (default 1)",
            )?,
            None => 1,
        };
        let r = rate(self, &country, category).await?;
        Ok(CostOut {
            message_type: category.as_str().to_string(),
            recipient_country: country,
            quantity,
            cost_per_conversation: decimal_e4(i128::from(r.cost_e4)),
            total_estimated_cost: decimal_e4(i128::from(r.cost_e4) * i128::from(quantity)),
            currency: r.currency,
            pricing_category: r.pricing_category,
            pricing_model_version: r.pricing_model_version,
            rate_country: r.country,
            effective_date: r.effective_date.format("%Y-%m-%d").to_string(),
        })
    }

    async fn estimate_pricing_impl(&self, args: JsonObject) -> ToolResult<PricingOut> {
        let a: Input<EstimatePricingIn> = parse(args)?;
        let category = pricing_type("conversation_type", a.conversation_type.as_str())?;
        let requested = country(&a.recipient_country)?;
        let r = rate(self, &requested, category).await?;
        Ok(PricingOut {
            country: r.country,
            requested_country: requested,
            conversation_type: category.as_str().to_string(),
            cost_per_conversation: r.cost_e4 as f64 / 10_000.0,
            currency: r.currency,
            pricing_category: r.pricing_category,
            effective_date: r.effective_date.format("%Y-%m-%d").to_string(),
            pricing_model_version: r.pricing_model_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_have_four_places() {
        assert_eq!(decimal_e4(411), "0.0411");
        assert_eq!(decimal_e4(0), "0.0000");
        assert_eq!(decimal_e4(12_345), "1.2345");
        assert_eq!(decimal_e4(411 * 3), "0.1233");
        assert_eq!(decimal_e4(-5), "-0.0005");
    }

    #[test]
    fn tiers() {
        assert_eq!(limit_of_tier("TIER_1K"), "1000");
        assert_eq!(limit_of_tier("TIER_UNLIMITED"), "UNLIMITED");
        assert_eq!(tier_of_rating("green"), "HIGH");
        assert_eq!(tier_of_rating("NA"), "UNKNOWN");
    }
}
