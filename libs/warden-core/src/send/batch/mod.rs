//! The batched send path: one chunk of new recipients of one message (a campaign's
//! template) judged and recorded together, beside the one send path ([`Core::send`]) and
//! reaching the same decisions:
//!
//! ```text
//! validate once: channel, content, each number's template (approved, variables)
//!   -> one transaction per business {
//!        facts:  lock the chunk's customers in phone order, read consent, windows (and
//!                holders), frequency counts, protection, portfolio reach and who already
//!                has a message of the campaign: a few set-based queries (`facts`)
//!        judge:  each recipient, in phone order, through the single path's own pure
//!                functions (`judge`: decide, holder, content rules, protection, limit)
//!        record: every message, count, reach, hold and audit row set-based (`write`)
//!      }
//!   -> hand the accepted ones to the stream (Nats-Msg-Id = message id; acks and published
//!      marks follow; the relay when NATS is down)
//! ```
//!
//! Why the decisions are the single path's: the same locks (customer rows, then the
//! portfolio limit row) order a chunk against single sends and other chunks exactly as
//! one-at-a-time sends are ordered; inside the chunk every customer appears once, so no
//! recipient's decision reads another's writes, except the portfolio reach, which
//! [`judge::Reach`] carries from one recipient to the next in phone order. The property
//! test (`tests/it/batch.rs`) checks batch == single on random populations.
//!
//! What the batch does not judge itself goes through [`Core::send`] one at a time: a
//! recipient known only by a BSUID (its portfolio's address is checked per customer),
//! every recipient when the actor has agent guardrails (their counts are per send), and
//! a number whose template check fails (the refusal is recorded per recipient).

mod facts;
mod judge;
pub mod preview;
mod write;

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use uuid::Uuid;
use warden_rules::compliance::Decision;
use warden_rules::kinds::{Category, ContentKind, MessageType};
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;
use warden_store::tx::{Abort, transact_on};

use super::error::SendError;
use super::kind::{SendKind, TemplateSend};
use super::{DECISIONS, POLICY_REFUSALS, RefusalMode, SendRequest, safety};
use crate::Core;
pub use judge::Reach;
pub use preview::Previewed;

/// A chunk of new messages, one per recipient, sharing their content.
#[derive(Clone, Debug)]
pub struct Batch {
    pub channel: String,
    /// A template (a campaign's), with its variables and components.
    pub kind: SendKind,
    pub message_type: MessageType,
    pub campaign_id: Option<Uuid>,
    pub actor: &'static str,
    /// Each recipient (customer keys, each once) and the sender it goes out from (an id
    /// or a stored key; None: the default).
    pub recipients: Vec<(PhoneNumber, Option<String>)>,
}

/// What one recipient's message came to (in the order of [`Batch::recipients`]).
#[derive(Debug, Clone, PartialEq)]
pub enum BatchOutcome {
    /// Accepted, `queued`; `published` when the stream took it already.
    Enqueued { message_id: Uuid, published: bool },
    /// Refused: recorded `failed` with the decision.
    Refused {
        message_id: Uuid,
        decision: Decision,
    },
    /// Refused by a rule that lifts by itself: recorded `scheduled` until then.
    Held {
        message_id: Uuid,
        decision: Decision,
    },
    /// The portfolio messaging limit: nothing recorded, the campaign is paused.
    CampaignPaused(Decision),
    /// Not attempted: after the campaign paused in this chunk, or the customer already
    /// has a message of the campaign (another run of the same page).
    NotAttempted,
    /// Not sendable (an invalid request, a database failure); nothing recorded.
    Error { code: &'static str, message: String },
}

impl BatchOutcome {
    fn from_single(result: Result<super::Accepted, SendError>) -> Self {
        match result {
            Ok(a) => BatchOutcome::Enqueued {
                message_id: a.message_id,
                published: a.published,
            },
            Err(SendError::RefusedRecorded {
                message_id,
                decision,
            }) => BatchOutcome::Refused {
                message_id,
                decision,
            },
            Err(SendError::Held {
                message_id,
                decision,
            }) => BatchOutcome::Held {
                message_id,
                decision,
            },
            Err(SendError::CampaignPaused(d)) => BatchOutcome::CampaignPaused(d),
            Err(e) => BatchOutcome::error(&e),
        }
    }

    fn error(e: &SendError) -> Self {
        BatchOutcome::Error {
            code: e.code(),
            message: e.to_string(),
        }
    }

    /// The decision a recorded or pausing outcome carries (None: accepted or none).
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            BatchOutcome::Refused { decision, .. }
            | BatchOutcome::Held { decision, .. }
            | BatchOutcome::CampaignPaused(decision) => Some(decision),
            _ => None,
        }
    }
}

/// One recipient the batch judges itself.
pub(super) struct Target {
    /// Its place in [`Batch::recipients`].
    pub(super) index: usize,
    pub(super) phone: PhoneNumber,
    /// The sender's id (as tools name it).
    pub(super) sender_id: String,
    pub(super) keys: StoreKeys,
}

/// One judged recipient (before anything is written).
pub(super) enum Judged {
    Accept {
        reach: bool,
    },
    Refuse(Decision),
    /// The messaging limit stopped the chunk here.
    Limit(Decision),
    /// Already has a message of the campaign, or after the limit.
    Skip,
}

/// The template's category and checked kind, per business.
struct Checked {
    category: Category,
    kind: SendKind,
}

impl Core {
    /// Send a chunk of new messages through the batched path (module docs). Never fails
    /// as a whole: each recipient gets its outcome.
    pub async fn send_batch(&self, batch: Batch) -> Vec<BatchOutcome> {
        let mut out: Vec<Option<BatchOutcome>> = vec![None; batch.recipients.len()];
        let (groups, single) = match self.plan_batch(&batch, &mut out, false).await {
            Ok(plan) => plan,
            Err(e) => {
                return batch
                    .recipients
                    .iter()
                    .map(|_| BatchOutcome::error(&e))
                    .collect();
            }
        };
        for (checked, targets) in groups {
            self.send_group(&batch, checked, targets, &mut out).await;
        }
        for i in single {
            let (phone, sender) = batch.recipients[i].clone();
            let req = single_request(&batch, phone, sender);
            out[i] = Some(BatchOutcome::from_single(self.send(req).await));
        }
        let outcomes: Vec<BatchOutcome> = out
            .into_iter()
            .map(|o| o.unwrap_or(BatchOutcome::NotAttempted))
            .collect();
        count_metrics(self, &outcomes);
        outcomes
    }

    /// Validate the chunk once and split it: groups of targets per business (with their
    /// checked template) and the indexes that go through the single path. Outcomes decided
    /// here (an unknown sender) are put in `out`. A `preview` goes through no single path:
    /// a BSUID recipient is judged when its portfolio can reach it (an error otherwise),
    /// a failing template check is the preview's error, guardrails are not counted.
    async fn plan_batch(
        &self,
        batch: &Batch,
        out: &mut [Option<BatchOutcome>],
        preview: bool,
    ) -> Result<(Vec<(Checked, Vec<Target>)>, Vec<usize>), SendError> {
        warden_rules::kinds::parse_channel(Some(&batch.channel))
            .map_err(|e| SendError::InvalidArgument(e.to_string()))?;
        batch.kind.check_text()?;
        let mut conn = self
            .pg()
            .get()
            .await
            .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
        let mut single = Vec::new();
        if !preview
            && guarded(&mut conn, batch.actor)
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?
        {
            return Ok((Vec::new(), (0..batch.recipients.len()).collect()));
        }
        let mut checked: HashMap<String, Option<Checked>> = HashMap::new();
        let mut groups: HashMap<String, Vec<Target>> = HashMap::new();
        for (index, (phone, from)) in batch.recipients.iter().enumerate() {
            let sender = match self.sender(from.as_deref()) {
                Ok(s) => s,
                Err(e) => {
                    out[index] = Some(BatchOutcome::error(&SendError::InvalidArgument(
                        e.to_string(),
                    )));
                    continue;
                }
            };
            let keys = self.senders().key_of(sender);
            if phone.is_bsuid() && !preview {
                single.push(index);
                continue;
            }
            if phone.is_bsuid() {
                let address = crate::customers::identity::address_for(
                    &mut conn,
                    &keys.portfolio,
                    phone.digits(),
                )
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
                if address.is_none() {
                    out[index] = Some(BatchOutcome::error(&SendError::InvalidArgument(format!(
                        "customer `{}` is known only by a BSUID of another business portfolio",
                        phone.digits()
                    ))));
                    continue;
                }
            }
            if !checked.contains_key(&keys.business) {
                let req = single_request(batch, phone.clone(), Some(sender.id.clone()));
                let found = match self.check_template(&mut conn, &req).await {
                    Ok((template, resolved)) => {
                        let mut kind = batch.kind.clone();
                        if let Some(resolved) = resolved {
                            kind.use_checked_components(resolved);
                        }
                        let category = match template {
                            Some(t) => ContentKind::Template(t),
                            None => ContentKind::FreeForm,
                        }
                        .category();
                        Some(Checked { category, kind })
                    }
                    Err(e) if preview => return Err(e),
                    // Recorded per recipient by the single path.
                    Err(_) => None,
                };
                checked.insert(keys.business.clone(), found);
            }
            if checked[&keys.business].is_none() {
                single.push(index);
                continue;
            }
            groups
                .entry(keys.business.clone())
                .or_default()
                .push(Target {
                    index,
                    phone: phone.clone(),
                    sender_id: sender.id.clone(),
                    keys,
                });
        }
        let mut plan = Vec::new();
        for (business, mut targets) in groups {
            let Some(Some(c)) = checked.remove(&business) else {
                continue;
            };
            targets.sort_by(|a, b| a.phone.digits().cmp(b.phone.digits()));
            targets.dedup_by(|a, b| a.phone.digits() == b.phone.digits());
            plan.push((c, targets));
        }
        Ok((plan, single))
    }

    /// One business's targets: judged and recorded in one transaction, then the limit's
    /// pause and the publish.
    async fn send_group(
        &self,
        batch: &Batch,
        checked: Checked,
        targets: Vec<Target>,
        out: &mut [Option<BatchOutcome>],
    ) {
        let span = tracing::info_span!("warden.send_batch", recipients = targets.len());
        let trace = serde_json::to_value(warden_telemetry::inject_context(&span)).ok();
        let shared = Arc::new((batch.clone(), checked, targets, trace));
        let (core, for_tx) = (self.clone(), Arc::clone(&shared));
        let mut conn = match self.pg().get().await {
            Ok(c) => c,
            Err(e) => {
                let e = SendError::Unavailable(format!("database unavailable: {e}"));
                for t in &shared.2 {
                    out[t.index] = Some(BatchOutcome::error(&e));
                }
                return;
            }
        };
        let result = transact_on(&mut conn, "send_batch", move |c| {
            let (core, shared) = (core.clone(), Arc::clone(&for_tx));
            async move {
                let (batch, checked, targets, trace) = &*shared;
                let ids: Vec<Uuid> = targets.iter().map(|_| Uuid::now_v7()).collect();
                if let Some(campaign) = batch.campaign_id
                    && !crate::campaigns::gate::enter(c, campaign).await?
                {
                    // Paused or cancelled since the chunk was planned: nothing written.
                    let skipped = targets.iter().map(|_| Judged::Skip).collect();
                    return Ok((skipped, ids));
                }
                let now = core.now();
                let judged = core
                    .judge_chunk(
                        c,
                        batch,
                        checked.category,
                        &checked.kind,
                        targets,
                        None,
                        now,
                        true,
                    )
                    .await?;
                let content = checked.kind.to_content();
                let template = match &checked.kind {
                    SendKind::Template(TemplateSend { name, locale, .. }) => {
                        Some((name.as_str(), locale.as_str()))
                    }
                    _ => None,
                };
                let shared_row = write::Shared {
                    channel: &batch.channel,
                    message_type: batch.message_type.as_str(),
                    category: checked.category.as_str(),
                    content: &content,
                    template,
                    campaign_id: batch.campaign_id,
                    actor: batch.actor,
                    trace: trace.clone(),
                };
                let rows: Vec<write::Write<'_>> = targets
                    .iter()
                    .zip(&judged)
                    .zip(&ids)
                    .filter_map(|((t, j), id)| {
                        let row = match j {
                            Judged::Accept { reach } => write::Row::Accepted { reach: *reach },
                            Judged::Refuse(d) => match d.retry_at.filter(|_| d.hold) {
                                Some(until) if batch.campaign_id.is_some() => {
                                    write::Row::Held(d.clone(), until)
                                }
                                _ => write::Row::Refused(d.clone()),
                            },
                            Judged::Limit(_) | Judged::Skip => return None,
                        };
                        Some(write::Write {
                            id: *id,
                            phone: t.phone.digits(),
                            sender: &t.keys.sender,
                            business: &t.keys.business,
                            portfolio: &t.keys.portfolio,
                            row,
                        })
                    })
                    .collect();
                write::write(c, &shared_row, &rows, now).await?;
                Ok::<_, Abort<SendError>>((judged, ids))
            }
            .boxed()
        })
        .await;
        drop(conn);
        let result = result.map_err(SendError::from);
        self.finish_group(batch, &shared.2, result, out).await;
    }

    /// After the chunk's commit: each target's outcome, the campaign paused when the
    /// messaging limit stopped the chunk, the accepted messages published (those the
    /// stream cannot take now stay for the relay), and one conversation hint.
    async fn finish_group(
        &self,
        batch: &Batch,
        targets: &[Target],
        result: Result<(Vec<Judged>, Vec<Uuid>), SendError>,
        out: &mut [Option<BatchOutcome>],
    ) {
        let (judged, ids) = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(campaign_id = ?batch.campaign_id, error = %e, "batch not recorded");
                for t in targets {
                    out[t.index] = Some(BatchOutcome::error(&e));
                }
                return;
            }
        };
        let accepted: Vec<Uuid> = judged
            .iter()
            .zip(&ids)
            .filter(|(j, _)| matches!(j, Judged::Accept { .. }))
            .map(|(_, id)| *id)
            .collect();
        let published = if accepted.is_empty() {
            true
        } else {
            match crate::delivery::outbox::publish_accepted(self, &accepted).await {
                Ok(n) => n == accepted.len(),
                Err(e) => {
                    tracing::warn!(error = %e, "batch publish failed; the relay publishes later");
                    false
                }
            }
        };
        let mut limit: Option<Decision> = None;
        for ((t, j), id) in targets.iter().zip(judged).zip(ids) {
            out[t.index] = Some(match j {
                Judged::Accept { .. } => BatchOutcome::Enqueued {
                    message_id: id,
                    published,
                },
                Judged::Refuse(decision) => {
                    if decision.hold && decision.retry_at.is_some() && batch.campaign_id.is_some() {
                        BatchOutcome::Held {
                            message_id: id,
                            decision,
                        }
                    } else {
                        BatchOutcome::Refused {
                            message_id: id,
                            decision,
                        }
                    }
                }
                Judged::Limit(decision) => {
                    limit = Some(decision.clone());
                    BatchOutcome::CampaignPaused(decision)
                }
                Judged::Skip => BatchOutcome::NotAttempted,
            });
        }
        if let (Some(decision), Some(campaign)) = (limit, batch.campaign_id) {
            match self.pg().get().await {
                Ok(mut conn) => {
                    if let Err(e) = self
                        .pause_for_limit(&mut conn, campaign, &decision, batch.actor)
                        .await
                    {
                        tracing::warn!(%campaign, error = %e, "campaign pause at the messaging limit not recorded");
                    }
                }
                Err(e) => {
                    tracing::warn!(%campaign, error = %e, "campaign pause at the messaging limit not recorded");
                }
            }
        }
        let changed: Vec<(&str, Option<&str>)> = targets
            .iter()
            .map(|t| (t.phone.digits(), Some(t.keys.sender.as_str())))
            .collect();
        self.hint(changed, warden_stream::HintKind::Status).await;
    }

    /// Judge `targets` (distinct, in phone order) for a message of `category` with
    /// `kind`'s content: the facts read set-based (`facts`), then each recipient through
    /// the single path's pure functions (`judge`); the content rules, when a policy has
    /// them, read each allowed recipient's recent messages. `carried`: the portfolios'
    /// reach carried over from earlier chunks (a preview; otherwise read here). With
    /// `lock` (a send) the rows are locked and the messaging limit stops the chunk at the
    /// first recipient it refuses (the campaign pauses); without (a preview) nothing is
    /// locked and every recipient is judged.
    #[allow(clippy::too_many_arguments)] // the chunk's shared facts, each given once
    pub(super) async fn judge_chunk(
        &self,
        c: &mut AsyncPgConnection,
        batch: &Batch,
        category: Category,
        kind: &SendKind,
        targets: &[Target],
        carried: Option<&mut HashMap<String, Reach>>,
        now: DateTime<Utc>,
        lock: bool,
    ) -> QueryResult<Vec<Judged>> {
        let policies = self.policies();
        let facts = facts::read(
            c,
            policies,
            targets,
            &batch.channel,
            category,
            batch.campaign_id,
            now,
            lock,
        )
        .await?;
        let mut local = HashMap::new();
        let reaches = carried.unwrap_or(&mut local);
        let mut portfolios: Vec<&str> = targets.iter().map(|t| t.keys.portfolio.as_str()).collect();
        portfolios.sort_unstable();
        portfolios.dedup();
        for portfolio in portfolios {
            let phones: Vec<&str> = targets
                .iter()
                .filter(|t| t.keys.portfolio == portfolio)
                .map(|t| t.phone.digits())
                .collect();
            match reaches.get_mut(portfolio) {
                Some(r) => facts::reached_among(c, portfolio, &phones, now, r).await?,
                None => {
                    let r = facts::reach(c, portfolio, &phones, now, lock).await?;
                    reaches.insert(portfolio.to_string(), r);
                }
            }
        }
        let content = kind.to_content();
        let reads_content = safety::reads_content(policies, category);
        let mut judged = Vec::with_capacity(targets.len());
        let mut stopped = false;
        for t in targets {
            let digits = t.phone.digits();
            let customer = facts.customers.get(digits);
            let (Some(customer), false, false) =
                (customer, stopped, facts.already.contains(digits))
            else {
                judged.push(Judged::Skip);
                continue;
            };
            let opted_in = crate::customers::consent::Consent {
                marketing: true,
                utility: true,
                changed_at: None,
                reason: None,
            };
            let consent = facts
                .consent
                .get(&(t.keys.business.clone(), digits.to_string()))
                .unwrap_or(&opted_in);
            let recipient = judge::RecipientFacts {
                customer,
                consent,
                conversation: facts
                    .conversations
                    .get(&(t.keys.sender.clone(), digits.to_string())),
                recent: facts
                    .recent
                    .get(&(t.keys.business.clone(), digits.to_string()))
                    .copied()
                    .unwrap_or((0, None)),
            };
            let (decision, last_inbound_at) =
                judge::compliance(policies, &t.phone, &recipient, category, batch.actor, now);
            let content_refusal = if decision.allowed && reads_content {
                safety::check(c, policies, digits, category, &content, now, None).await?
            } else {
                None
            };
            let reach = reaches
                .get_mut(t.keys.portfolio.as_str())
                .expect("every portfolio's reach is read above");
            let (decision, counts) = judge::policy(
                decision,
                last_inbound_at,
                content_refusal,
                facts.protection.get(&t.keys.sender),
                reach,
                &t.phone,
                category,
                now,
            );
            judged.push(if decision.allowed {
                Judged::Accept { reach: counts }
            } else if lock
                && batch.campaign_id.is_some()
                && crate::account::portfolio::is_messaging_limit(&decision)
            {
                stopped = true;
                Judged::Limit(decision)
            } else {
                Judged::Refuse(decision)
            });
        }
        Ok(judged)
    }
}

/// Whether `actor` is an agent with guardrails (counted per send: the single path).
async fn guarded(conn: &mut AsyncPgConnection, actor: &str) -> QueryResult<bool> {
    use warden_store::schema::agents;
    let n: i64 = agents::table
        .filter(agents::name.eq(actor))
        .count()
        .get_result(conn)
        .await?;
    Ok(n > 0)
}

/// The single path's request for one recipient of `batch`.
fn single_request(batch: &Batch, phone: PhoneNumber, sender: Option<String>) -> SendRequest {
    SendRequest {
        phone,
        channel: batch.channel.clone(),
        kind: batch.kind.clone(),
        message_type: batch.message_type,
        campaign_id: batch.campaign_id,
        existing_message_id: None,
        refusal: RefusalMode::RecordFailed,
        actor: batch.actor,
        sender,
    }
}

/// The send path's metrics for the chunk's outcomes.
fn count_metrics(core: &Core, outcomes: &[BatchOutcome]) {
    for o in outcomes {
        let outcome = match o {
            BatchOutcome::Enqueued { .. } => "OK",
            BatchOutcome::NotAttempted => continue,
            BatchOutcome::Error { code, .. } => code,
            other => other
                .decision()
                .map_or("UNAVAILABLE", |d| d.reason_code.as_str()),
        };
        DECISIONS.with_label_values(&[outcome]).inc();
        if let Some(d) = o.decision()
            && let Some(policy_id) = &d.policy_id
        {
            let policy_type = core
                .policies()
                .get(policy_id)
                .map_or("frequency_limit", |p| p.policy_type().as_str());
            POLICY_REFUSALS
                .with_label_values(&[policy_type, policy_id.as_str()])
                .inc();
        }
    }
}
