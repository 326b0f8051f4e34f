//! preview_campaign: what a campaign would do if it ran now, with nothing written. Its
//! audience is read in pages as the fan-out reads it (`fanout::audience`) and every page
//! is judged by the batched send path's own decisions ([`Core::preview_batch`]: the same
//! facts, the same pure rules, no lock and no row written), the portfolio's reach carried
//! from page to page as the real run would use it up. The answer counts the recipients
//! that would be sent and the refusals by code and by policy, the sends and their cost
//! by country (the installed rate card, the template's stored category) and how long the
//! senders' throughput needs for them. `schedule_campaign` answers the same numbers;
//! [`refused_by`] counts the real run's refusals for get_campaign.

use std::collections::{BTreeMap, HashMap};

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use serde::Serialize;
use uuid::Uuid;
use warden_rules::audience::AudienceFilter;
use warden_rules::kinds::Category;
use warden_store::PgPool;

use super::fanout::{RecipientPlan, load_page};
use crate::send::batch::Previewed;
use crate::{Core, CoreError, SendError};

/// Recipients judged per page.
const PAGE: i64 = 2_000;

/// One country's share of a preview.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CountryPreview {
    /// Recipients of that country who would be sent the message.
    pub recipients: u64,
    /// What sending them would cost (the rate card's rate × recipients).
    pub estimated_cost: f64,
}

/// What a campaign would do now.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CampaignPreview {
    /// Customers the audience filter selects.
    pub audience: u64,
    /// Those the send path would accept now.
    pub would_send: u64,
    /// Refusals (and holds) by reason code.
    pub refused_by: BTreeMap<String, u64>,
    /// Refusals by the policy that refused (a subset of `refused_by`).
    pub refused_by_policy: BTreeMap<String, u64>,
    /// The recipients that would be sent, by country, with their cost.
    pub by_country: BTreeMap<String, CountryPreview>,
    pub estimated_cost: f64,
    /// The rate card's currency (None: no rate card installed, costs are 0).
    pub currency: Option<String>,
    /// `would_send` at the senders' throughput together (messages per second).
    pub estimated_duration_secs: f64,
}

/// Judge `plan`'s audience (`filter`) now, writing nothing. `plan.campaign_id` may be a
/// campaign's (its recipients already given a message are left out) or any new id.
pub async fn preview(
    core: &Core,
    plan: &RecipientPlan,
    filter: &AudienceFilter,
) -> Result<CampaignPreview, SendError> {
    let now = core.now();
    // The template is checked before anything (also for an audience of nobody).
    let category = template_category(core, plan).await?;
    let mut out = CampaignPreview::default();
    let mut reaches = HashMap::new();
    let mut sent_by_country: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = load_page(
            core.pg(),
            plan.campaign_id,
            cursor.as_deref(),
            filter,
            now,
            PAGE,
        )
        .await?;
        let Some(last) = page.last.clone() else {
            break;
        };
        out.audience += page.recipients.len() as u64;
        let batch = plan.batch(page.recipients.clone(), core.actor());
        let judged = core.preview_batch(&batch, &mut reaches).await?;
        for (phone, j) in page.recipients.iter().zip(judged) {
            match j {
                Previewed::Send => {
                    out.would_send += 1;
                    *sent_by_country.entry(phone.pricing_country()).or_default() += 1;
                }
                Previewed::Refuse(d) => {
                    *out.refused_by
                        .entry(d.reason_code.as_str().to_string())
                        .or_default() += 1;
                    if let Some(p) = d.policy_id {
                        *out.refused_by_policy.entry(p).or_default() += 1;
                    }
                }
                Previewed::Skip(Some((code, _))) => {
                    *out.refused_by.entry(code.to_string()).or_default() += 1;
                }
                Previewed::Skip(None) => {}
            }
        }
        if page.fetched < PAGE as usize {
            break;
        }
        cursor = Some(last);
    }
    for (country, n) in sent_by_country {
        let rate = crate::account::rate_card::rate(core.pg(), country, category).await?;
        let cost = rate.as_ref().map_or(0.0, |r| r.cost_e4 as f64 / 10_000.0) * n as f64;
        if out.currency.is_none() {
            out.currency = rate.map(|r| r.currency);
        }
        out.estimated_cost += cost;
        out.by_country.insert(
            country.to_string(),
            CountryPreview {
                recipients: n,
                estimated_cost: cost,
            },
        );
    }
    out.estimated_cost = (out.estimated_cost * 10_000.0).round() / 10_000.0;
    let mps = throughput(core, plan).await?;
    out.estimated_duration_secs = if mps == 0 {
        0.0
    } else {
        (out.would_send as f64 / f64::from(mps) * 10.0).round() / 10.0
    };
    Ok(out)
}

/// The stored category of the campaign's template (of its senders' business); NOT_FOUND
/// or TEMPLATE_NOT_APPROVED as the send path answers them.
async fn template_category(core: &Core, plan: &RecipientPlan) -> Result<Category, SendError> {
    let business = match <[String]>::first(&plan.senders) {
        Some(key) => core
            .senders()
            .by_key(key)
            .map(|s| core.senders().key_of(s).business)
            .unwrap_or_else(|| warden_settings::STORED_DEFAULT.to_string()),
        None => core.senders().key_of(core.senders().default()).business,
    };
    let mut conn = core.pg().get().await.map_err(CoreError::from)?;
    let template =
        crate::templates::find(&mut conn, &business, &plan.template_name, &plan.locale).await?;
    let Some(template) = template else {
        return Err(SendError::TemplateNotFound {
            name: plan.template_name.clone(),
            locale: plan.locale.clone(),
        });
    };
    if template.status != crate::templates::APPROVED {
        return Err(SendError::TemplateNotApproved {
            name: plan.template_name.clone(),
            locale: plan.locale.clone(),
            status: template.status,
        });
    }
    Ok(template
        .category
        .parse::<warden_rules::kinds::TemplateCategory>()
        .map_or(Category::Marketing, |t| {
            warden_rules::kinds::ContentKind::Template(t).category()
        }))
}

/// The senders' throughput together, in messages per second (each number's recorded
/// capacity, else its configured rate).
async fn throughput(core: &Core, plan: &RecipientPlan) -> Result<u32, CoreError> {
    let senders = core.senders();
    let keys: Vec<String> = if plan.senders.is_empty() {
        vec![senders.key_of(senders.default()).sender]
    } else {
        plan.senders.clone()
    };
    let mut total = 0u32;
    for key in keys {
        let sender = senders.by_key(&key).unwrap_or(senders.default());
        let (configured, _) = core.settings().configured_mps_of(sender);
        let capacity = crate::account::throughput::current_for(core.pg(), &key, configured).await?;
        total = total.saturating_add(capacity.mps);
    }
    Ok(total)
}

#[derive(diesel::QueryableByName)]
struct CodeCount {
    #[diesel(sql_type = Text)]
    code: String,
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The real run's refusals of a campaign by reason code (its recipients' messages ended
/// `failed` by a compliance or policy refusal, whose explanation starts with the code).
pub async fn refused_by(
    pg: &PgPool,
    campaign_id: Uuid,
) -> Result<BTreeMap<String, u64>, CoreError> {
    let mut conn = pg.get().await?;
    let rows: Vec<CodeCount> = diesel::sql_query(
        "SELECT split_part(error_explanation, ':', 1) AS code, count(*) AS n FROM messages
         WHERE campaign_id = $1 AND status = 'failed' AND error_category = 'compliance'
         GROUP BY 1",
    )
    .bind::<SqlUuid, _>(campaign_id)
    .load(&mut conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.code, u64::try_from(r.n).unwrap_or(0)))
        .collect())
}
