//! schedule_campaign: a template campaign recorded for a future time. The scheduler's
//! fan-out sends it at `deliver_at`, each recipient through the one send path.
//!
//! Customers named by `audience_filter.customer_ids` whom Warden has never seen are
//! created with the campaign, as a first `send_template` to them would create them
//! (opted in to both categories): the fan-out then checks them like anyone else instead
//! of silently finding nobody (see docs/operations.md, Campaigns).

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::{Map, Value, json};
use uuid::Uuid;
use warden_rules::campaign_status::CampaignStatus;
use warden_store::schema::campaigns;
use warden_store::tx::{Abort, TxError, transact};
use warden_store::{DbError, PgPool};

use crate::send::idempotency::{Created, IdempotencyKey};

/// What kind of campaign it is (stored in lower case).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CampaignType {
    Broadcast,
    Marketing,
    Utility,
}

impl CampaignType {
    pub fn as_str(self) -> &'static str {
        match self {
            CampaignType::Broadcast => "broadcast",
            CampaignType::Marketing => "marketing",
            CampaignType::Utility => "utility",
        }
    }
}

/// Not one of broadcast, marketing, utility.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown campaign type {0:?}")]
pub struct UnknownCampaignType(pub String);

impl std::str::FromStr for CampaignType {
    type Err = UnknownCampaignType;

    /// Any case, surrounding spaces ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "broadcast" => Ok(CampaignType::Broadcast),
            "marketing" => Ok(CampaignType::Marketing),
            "utility" => Ok(CampaignType::Utility),
            _ => Err(UnknownCampaignType(s.to_string())),
        }
    }
}

/// A campaign to schedule (arguments already checked for shape).
#[derive(Debug, Clone)]
pub struct NewCampaign {
    pub name: String,
    pub campaign_type: CampaignType,
    pub template_name: String,
    pub locale: String,
    /// One value per placeholder, `{{1}}` first; used for every recipient.
    pub variables: Vec<String>,
    /// Named body values (a named template); then `variables` is empty.
    pub named_variables: Vec<(String, String)>,
    /// Header and button parameters (platform shape); empty when none.
    pub components: Vec<Value>,
    /// A valid `warden_rules::audience::AudienceFilter` object.
    pub audience_filter: Value,
    pub deliver_at: DateTime<Utc>,
}

/// The numbers a campaign goes out from, as stored keys (`warden_settings::Senders::key_of`):
/// one, or several of one business among which each recipient always gets the same
/// (`fanout::recipients::sender_for`). The caller checks they are one business's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignSenders {
    /// The stored key of their business (whose template the campaign sends).
    pub business: String,
    /// `campaigns.sender_id`: the one number, or the first of several.
    pub sender: String,
    /// `campaigns.senders`: every number when there are several; `None` for one.
    pub several: Option<Vec<String>>,
}

impl Default for CampaignSenders {
    /// The default sender.
    fn default() -> Self {
        CampaignSenders {
            business: warden_settings::STORED_DEFAULT.to_string(),
            sender: warden_settings::STORED_DEFAULT.to_string(),
            several: None,
        }
    }
}

impl CampaignSenders {
    /// From the stored keys of the numbers of `business`, in order, without repeats; `None`
    /// when empty.
    pub fn of(business: String, keys: Vec<String>) -> Option<CampaignSenders> {
        let mut unique: Vec<String> = Vec::with_capacity(keys.len());
        for k in keys {
            if !unique.contains(&k) {
                unique.push(k);
            }
        }
        let sender = <[String]>::first(&unique)?.clone();
        Some(CampaignSenders {
            business,
            sender,
            several: (unique.len() > 1).then_some(unique),
        })
    }
}

/// Why a campaign was not scheduled. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleCampaignError {
    #[error("there is no template {name} in locale {locale}")]
    TemplateNotFound { name: String, locale: String },
    #[error("template {name} ({locale}) is {status}, not APPROVED")]
    TemplateNotApproved {
        name: String,
        locale: String,
        status: String,
    },
    #[error("the variables do not match template {name}: {reason}")]
    Variables { name: String, reason: String },
    /// The idempotency key was used with other arguments (names `idempotency_key`).
    #[error("{0}")]
    Idempotency(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// schedule_campaign: the template must exist in that locale and be APPROVED, and the
/// variables must fit its body; then the campaign is stored `scheduled` with its audit row,
/// in one transaction. Returns the new campaign's id.
pub async fn schedule_campaign(
    pg: &PgPool,
    new: NewCampaign,
    actor: &'static str,
) -> Result<Uuid, ScheduleCampaignError> {
    Ok(schedule_campaign_keyed(pg, new, actor, None).await?.id)
}

/// [`schedule_campaign`] under an idempotency key (`crate::send::idempotency`): the same key and
/// arguments answer the first call's campaign again, creating nothing.
pub async fn schedule_campaign_keyed(
    pg: &PgPool,
    new: NewCampaign,
    actor: &'static str,
    key: Option<IdempotencyKey>,
) -> Result<Created, ScheduleCampaignError> {
    schedule_campaign_from(pg, new, CampaignSenders::default(), actor, key).await
}

/// [`schedule_campaign_keyed`] going out from `senders` (stored in `campaigns.sender_id`
/// and `campaigns.senders`, which the fan-out reads).
pub async fn schedule_campaign_from(
    pg: &PgPool,
    new: NewCampaign,
    senders: CampaignSenders,
    actor: &'static str,
    key: Option<IdempotencyKey>,
) -> Result<Created, ScheduleCampaignError> {
    schedule_campaign_gated(pg, new, senders, actor, key, Approval::NotNeeded).await
}

/// Whether a new campaign waits for an operator (`CAMPAIGN_APPROVAL=required` for agents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Stored `scheduled`: it runs at its deliver_at.
    NotNeeded,
    /// Stored `pending_approval`: it sends nothing until an operator approves it
    /// (`campaigns::approve`) or rejects it (`campaigns::reject`).
    Required,
}

impl Approval {
    /// The status a new campaign is stored with.
    pub fn initial_status(self) -> CampaignStatus {
        match self {
            Approval::NotNeeded => CampaignStatus::Scheduled,
            Approval::Required => CampaignStatus::PendingApproval,
        }
    }
}

/// [`schedule_campaign_from`], stored `pending_approval` when `approval` requires it (in the
/// same transaction as the row, so the scheduler never sees it `scheduled` first).
pub async fn schedule_campaign_gated(
    pg: &PgPool,
    new: NewCampaign,
    senders: CampaignSenders,
    actor: &'static str,
    key: Option<IdempotencyKey>,
    approval: Approval,
) -> Result<Created, ScheduleCampaignError> {
    let template = {
        let mut conn = pg.get().await.map_err(DbError::from)?;
        crate::templates::find(
            &mut conn,
            &senders.business,
            &new.template_name,
            &new.locale,
        )
        .await
        .map_err(DbError::from)?
    };
    let Some(template) = template else {
        return Err(ScheduleCampaignError::TemplateNotFound {
            name: new.template_name,
            locale: new.locale,
        });
    };
    if template.status != crate::templates::APPROVED {
        return Err(ScheduleCampaignError::TemplateNotApproved {
            name: new.template_name,
            locale: new.locale,
            status: template.status,
        });
    }
    let spec =
        crate::templates::spec_of(&template).map_err(|e| ScheduleCampaignError::Variables {
            name: new.template_name.clone(),
            reason: e.to_string(),
        })?;
    let mut all = new.components.clone();
    if !new.named_variables.is_empty() {
        all.push(warden_rules::template_params::named_body_component(
            &new.named_variables,
        ));
    }
    warden_rules::template_params::resolve(&spec, &new.variables, &all).map_err(|e| {
        ScheduleCampaignError::Variables {
            name: new.template_name.clone(),
            reason: e.to_string(),
        }
    })?;
    let id = Uuid::now_v7();
    let new = Arc::new(new);
    let key = Arc::new(key);
    let senders = Arc::new(senders);
    let written = transact(pg, "schedule_campaign", move |c| {
        let new = Arc::clone(&new);
        let key = Arc::clone(&key);
        let senders = Arc::clone(&senders);
        async move {
            if let Some(earlier) =
                crate::send::idempotency::claim_id(c, key.as_ref().as_ref(), "campaign_id", id)
                    .await?
            {
                return Ok(Created {
                    id: earlier,
                    replayed: true,
                });
            }
            let mut variables: Map<String, Value> = new
                .variables
                .iter()
                .enumerate()
                .map(|(i, v)| ((i + 1).to_string(), Value::String(v.clone())))
                .collect();
            // A named template's values keep their names (get_campaign shows them so).
            variables.extend(
                new.named_variables
                    .iter()
                    .map(|(n, v)| (n.clone(), Value::String(v.clone()))),
            );
            let created = ensure_named_customers(c, &new.audience_filter).await?;
            let components =
                (!new.components.is_empty()).then(|| Value::Array(new.components.clone()));
            diesel::insert_into(campaigns::table)
                .values((
                    campaigns::id.eq(id),
                    campaigns::name.eq(&new.name),
                    campaigns::campaign_type.eq(new.campaign_type.as_str()),
                    campaigns::status.eq(approval.initial_status().as_str()),
                    campaigns::deliver_at.eq(new.deliver_at),
                    campaigns::template_name.eq(&new.template_name),
                    campaigns::locale.eq(&new.locale),
                    campaigns::variables.eq(Value::Object(variables)),
                    campaigns::audience_filter.eq(&new.audience_filter),
                    campaigns::components.eq(components),
                    campaigns::sender_id.eq(&senders.sender),
                    campaigns::senders.eq(&senders.several),
                ))
                .execute(c)
                .await?;
            warden_store::audit::record(
                c,
                actor,
                "campaign_scheduled",
                "campaign",
                &id.to_string(),
                json!({
                    "name": new.name,
                    "type": new.campaign_type.as_str(),
                    "template": new.template_name,
                    "locale": new.locale,
                    "deliver_at": new.deliver_at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
                    "audience_filter": new.audience_filter,
                    "customers_created": created,
                    "sender": senders.sender,
                    "senders": senders.several,
                    "status": approval.initial_status().as_str(),
                }),
            )
            .await?;
            Ok::<_, Abort<String>>(Created {
                id,
                replayed: false,
            })
        }
        .boxed()
    })
    .await;
    let created = written.map_err(|e| match e {
        TxError::App(m) => ScheduleCampaignError::Idempotency(m),
        TxError::Db(e) => ScheduleCampaignError::Db(e),
    })?;
    if !created.replayed {
        tracing::info!(campaign_id = %id, "campaign scheduled");
    }
    Ok(created)
}

/// Create the customers `audience_filter.customer_ids` names that do not exist yet (a BSUID
/// that names a known customer is that customer). Returns how many were created.
async fn ensure_named_customers(
    c: &mut diesel_async::AsyncPgConnection,
    audience_filter: &Value,
) -> diesel::QueryResult<usize> {
    // The gateway checked the filter; an unparsable one names nobody here.
    let Ok(filter) = warden_rules::audience::AudienceFilter::from_value(audience_filter) else {
        return Ok(0);
    };
    let mut created = 0;
    for id in &filter.customer_ids {
        let key = crate::customers::identity::resolve(c, id).await?;
        created += diesel::insert_into(warden_store::schema::customers::table)
            .values((
                warden_store::schema::customers::phone.eq(key.digits()),
                warden_store::schema::customers::country.eq(key.pricing_country()),
            ))
            .on_conflict_do_nothing()
            .execute(c)
            .await?;
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn campaign_senders_are_one_or_several_without_repeats() {
        assert_eq!(CampaignSenders::of("a".into(), vec![]), None);
        assert_eq!(
            CampaignSenders::of("a".into(), vec!["a2".into(), "a2".into()]),
            Some(CampaignSenders {
                business: "a".into(),
                sender: "a2".into(),
                several: None
            })
        );
        assert_eq!(
            CampaignSenders::of(
                "default".into(),
                vec!["default".into(), "a2".into(), "default".into()]
            ),
            Some(CampaignSenders {
                business: "default".into(),
                sender: "default".into(),
                several: Some(vec!["default".into(), "a2".into()])
            })
        );
        assert_eq!(CampaignSenders::default().sender, "default");
    }

    #[test]
    fn campaign_types_parse_in_any_case() {
        assert_eq!(
            " Marketing ".parse::<CampaignType>(),
            Ok(CampaignType::Marketing)
        );
        assert_eq!(
            "BROADCAST".parse::<CampaignType>(),
            Ok(CampaignType::Broadcast)
        );
        assert!("promo".parse::<CampaignType>().is_err());
        for t in [
            CampaignType::Broadcast,
            CampaignType::Marketing,
            CampaignType::Utility,
        ] {
            assert_eq!(t.as_str().parse::<CampaignType>(), Ok(t));
        }
    }
}
