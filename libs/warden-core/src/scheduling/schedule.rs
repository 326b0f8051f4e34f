//! schedule_message: one message recorded `scheduled` for later. Only opt-out is checked
//! now; the scheduler sends it at `deliver_at` through the one send path, which runs the
//! full compliance decision again, from the number it was recorded with
//! (`message_senders`, as the send path records a send's number).

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::kinds::{ContentKind, MessageType, TemplateCategory};
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;
use warden_store::models::message_status;
use warden_store::schema::messages;
use warden_store::tx::{Abort, TxError};
use warden_store::{DbError, PgPool};

use crate::send::idempotency::{Created, IdempotencyKey};
use crate::{SendKind, TemplateSend};

/// A message to schedule (arguments already checked for shape).
#[derive(Debug, Clone)]
pub struct ScheduleMessage {
    pub phone: PhoneNumber,
    pub channel: String,
    pub kind: SendKind,
    /// The caller's label, stored as given; the content decides the rules.
    pub message_type: MessageType,
    pub deliver_at: DateTime<Utc>,
    /// The stored keys of the sender it goes out from (`Core::sender_keys`).
    pub sender: StoreKeys,
}

/// Why a message was not scheduled. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleMessageError {
    #[error("there is no template {name} in locale {locale}")]
    TemplateNotFound { name: String, locale: String },
    #[error("the variables do not match template {name}: {reason}")]
    Variables { name: String, reason: String },
    /// The customer opted out of what the content is (the refusal says what to do).
    #[error("{}", .0.human_explanation)]
    OptedOut(Decision),
    /// The idempotency key was used with other arguments (names `idempotency_key`).
    #[error("{0}")]
    Idempotency(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// schedule_message: a template must exist in its locale with variables that fit it; the
/// content's category (text is free-form whatever `message_type` says, a template counts
/// by its stored category) must not be one the customer opted out of. Then the customer
/// (created on first sight), the `scheduled` message and its audit row are written in one
/// transaction. Returns the message id.
pub async fn schedule_message(
    pg: &PgPool,
    req: ScheduleMessage,
    actor: &'static str,
) -> Result<Uuid, ScheduleMessageError> {
    Ok(schedule_message_keyed(pg, req, actor, None).await?.id)
}

/// [`schedule_message`] under an idempotency key (`crate::send::idempotency`): the same key and
/// arguments answer the first call's message again, scheduling nothing.
pub async fn schedule_message_keyed(
    pg: &PgPool,
    mut req: ScheduleMessage,
    actor: &'static str,
    key: Option<IdempotencyKey>,
) -> Result<Created, ScheduleMessageError> {
    let mut conn = pg.get().await.map_err(DbError::from)?;
    let mut canonical = None;
    let template_category = match &req.kind {
        SendKind::Text { .. } | SendKind::Rich(_) => None,
        SendKind::Template(TemplateSend {
            name,
            locale,
            variables,
            components,
            ..
        }) => {
            let Some(t) = crate::templates::find(&mut conn, &req.sender.business, name, locale)
                .await
                .map_err(DbError::from)?
            else {
                return Err(ScheduleMessageError::TemplateNotFound {
                    name: name.clone(),
                    locale: locale.clone(),
                });
            };
            let spec =
                crate::templates::spec_of(&t).map_err(|e| ScheduleMessageError::Variables {
                    name: name.clone(),
                    reason: e.to_string(),
                })?;
            let resolved = warden_rules::template_params::resolve(&spec, variables, components)
                .map_err(|e| ScheduleMessageError::Variables {
                    name: name.clone(),
                    reason: e.to_string(),
                })?;
            // Stored as the checked platform components (see `Core::send`).
            if !components.is_empty() {
                canonical = Some(resolved);
            }
            t.category.parse::<TemplateCategory>().ok()
        }
    };
    if let Some(resolved) = canonical {
        req.kind.use_checked_components(resolved);
    }
    let category = match template_category {
        Some(t) => ContentKind::Template(t),
        None => ContentKind::FreeForm,
    }
    .category();
    // Opt-out (of the sender's business) is the one check at scheduling time; the rest
    // runs at dispatch.
    if let Some(customer) = crate::customers::find(&mut conn, &req.phone)
        .await
        .map_err(DbError::from)?
    {
        let consent = crate::customers::consent::of(&conn, &req.sender.business, &customer)
            .await
            .map_err(DbError::from)?;
        if let Some(refusal) = warden_rules::compliance::opt_out_refusal(
            category,
            !consent.marketing,
            !consent.utility,
        ) {
            return Err(ScheduleMessageError::OptedOut(refusal));
        }
    }
    let id = Uuid::now_v7();
    let req = Arc::new(req);
    let key = Arc::new(key);
    let written = warden_store::tx::transact_on(&mut conn, "schedule_message", move |c| {
        let req = Arc::clone(&req);
        let key = Arc::clone(&key);
        async move {
            if let Some(earlier) =
                crate::send::idempotency::claim_id(c, key.as_ref().as_ref(), "message_id", id)
                    .await?
            {
                return Ok(Created {
                    id: earlier,
                    replayed: true,
                });
            }
            let (template_name, template_locale) = match &req.kind {
                SendKind::Template(TemplateSend { name, locale, .. }) => (Some(name), Some(locale)),
                SendKind::Text { .. } | SendKind::Rich(_) => (None, None),
            };
            crate::customers::ensure(c, &req.phone).await?;
            diesel::insert_into(messages::table)
                .values((
                    messages::id.eq(id),
                    messages::customer_phone.eq(req.phone.digits()),
                    messages::channel.eq(&req.channel),
                    messages::direction.eq("outbound"),
                    messages::message_type.eq(req.message_type.as_str()),
                    messages::category.eq(category.as_str()),
                    messages::status.eq(message_status::SCHEDULED),
                    messages::content.eq(req.kind.to_content()),
                    messages::template_name.eq(template_name),
                    messages::template_locale.eq(template_locale),
                    messages::deliver_at.eq(req.deliver_at),
                ))
                .execute(c)
                .await?;
            crate::send::attribution::record(c, id, actor).await?;
            // The default sender's messages have no row (as `send::insert_message` writes).
            if !crate::senders::is_default_key(&req.sender.sender) {
                use warden_store::schema::message_senders;
                diesel::insert_into(message_senders::table)
                    .values((
                        message_senders::message_id.eq(id),
                        message_senders::sender_id.eq(&req.sender.sender),
                        message_senders::business.eq(&req.sender.business),
                    ))
                    .execute(c)
                    .await?;
            }
            warden_store::audit::record(
                c,
                actor,
                "message_scheduled",
                "message",
                &id.to_string(),
                json!({
                    "customer": req.phone.digits(),
                    "message_type": req.message_type.as_str(),
                    "deliver_at": req.deliver_at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
                    "template": template_name,
                    "sender": req.sender.sender,
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
    written.map_err(|e| match e {
        TxError::App(m) => ScheduleMessageError::Idempotency(m),
        TxError::Db(e) => ScheduleMessageError::Db(e),
    })
}
