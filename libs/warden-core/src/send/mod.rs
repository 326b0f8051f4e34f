//! THE send path. Every outbound message passes here, in named steps:
//!
//! ```text
//! validate: channel, content, the customer's key, template (approved, variables)
//!   -> one transaction {
//!        compliance: lock the customer row (created on first sight) and, in the same
//!                    round trip, read consent, window + holder, frequency count;
//!                    decide (pure rules)
//!        policy:     content rules, the portfolio messaging limit, agent guardrails
//!        record:     insert/advance the message row `queued`, count it
//!      }
//!   -> publish: hand to JetStream (Nats-Msg-Id = message id) and answer; the stream's
//!      ack and the published mark follow the answer
//! ```
//! The customer row lock makes the check-and-count atomic: concurrent sends to one customer,
//! from any number of processes, cannot pass the frequency cap together. The reads go out
//! pipelined behind the lock on one connection: Postgres runs them in order after it, each
//! on a fresh snapshot, so they see what the lock's previous holder committed. The
//! transaction runs through `warden_store::tx::transact_on`: a deadlock or serialization
//! failure is retried whole (nothing half-written), and one that persists is
//! `SendError::Busy`. When the publish fails (NATS down) the row stays `queued` with
//! `published_at` NULL and the scheduler's relay publishes it later; the caller still gets
//! `queued`.
//!
//! The rest of the folder: what a send carries ([`kind`]) and how it fails ([`error`]),
//! the decision's facts (`decide`), who holds the conversation (`conversation_holder`),
//! refusals that wait (`message_holds`), the content rules (`safety`), the call permission
//! request's guard (`call_permission`), check_compliance (`check`), writing the row
//! (`record`) and publishing it (`publish`), the last look before the platform call
//! ([`recheck`]), [`idempotency`] keys, agent [`guardrails`], who asked for a message
//! ([`attribution`]) and the last refusal ([`refusals`]).

pub mod attribution;
pub mod batch;
mod call_permission;
mod check;
mod conversation_holder;
mod decide;
pub mod error;
pub mod guardrails;
pub mod idempotency;
pub mod kind;
mod message_holds;
mod publish;
pub mod recheck;
mod record;
pub mod refusals;
mod safety;

pub use publish::dedupe_id;
pub(crate) use record::insert_message;
use record::record;

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::AsyncPgConnection;
use futures::FutureExt;
use prometheus::{HistogramVec, IntCounterVec, register_int_counter_vec};
use serde_json::{Value, json};
use tracing::Instrument;
use uuid::Uuid;
use warden_rules::compliance::{Decision, ReasonCode};
use warden_rules::kinds::{Category, ContentKind, MessageType, TemplateCategory};
use warden_rules::message_status::MessageStatus;
use warden_rules::phone::PhoneNumber;
use warden_settings::StoreKeys;
use warden_store::tx::{Abort, transact_on};

use crate::{Core, conversations, customers, templates};
use decide::{CustomerFacts, decide};
use error::SendError;
use idempotency::{Claim, IdempotencyKey};
use kind::{SendKind, TemplateSend};

static DECISIONS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_send_decisions_total",
        "Send attempts through the compliance core, by outcome (OK or the refusal code)",
        &["outcome"]
    )
    .expect("metric registers once")
});
static POLICY_REFUSALS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    register_int_counter_vec!(
        "warden_policy_refusals_total",
        "Sends refused by a policy, by policy type and policy id (duplicate_guard, recipient_allowlist, content_filter, ...)",
        &["policy_type", "policy_id"]
    )
    .expect("metric registers once")
});
static SEND_LATENCY: LazyLock<HistogramVec> = LazyLock::new(|| {
    warden_telemetry::metrics::latency_histogram(
        "warden_send_duration_seconds",
        "Time to decide, record and publish one message",
        &["published"],
    )
});

/// What the send transaction decided: a decision (and the row's retry count), or the
/// stored result of an earlier call with the same idempotency key.
enum Outcome {
    Decided(Decision, i32),
    Replay(Value),
}

/// What compliance decided, and the customer's last inbound message (policy reads the
/// care window too).
struct Compliance {
    decision: Decision,
    last_inbound_at: Option<DateTime<Utc>>,
    /// The sending number's protection, read for a marketing message only.
    protection: Option<crate::account::protection::Protection>,
    /// The portfolio's reach of the customer, read for a template only.
    reach: Option<crate::account::portfolio::ReachFacts>,
    /// The agent's guardrails, read for a new message only (`None` inside: no agent row).
    agent_limits: Option<Option<guardrails::Limits>>,
}

/// How a refusal is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusalMode {
    /// Tools: nothing is written but an audit row; the caller gets the refusal.
    Error,
    /// Scheduler and campaigns: the message row ends `failed` with a `compliance` error.
    RecordFailed,
}

#[derive(Clone, Debug)]
pub struct SendRequest {
    pub phone: PhoneNumber,
    pub channel: String,
    pub kind: SendKind,
    /// As the caller named it: text/service, template, marketing, utility.
    pub message_type: MessageType,
    pub campaign_id: Option<Uuid>,
    /// Advance this existing row (`scheduled` at dispatch, `failed` on retry) instead of inserting.
    pub existing_message_id: Option<Uuid>,
    pub refusal: RefusalMode,
    pub actor: &'static str,
    /// The sender (an id or a phone number id) it goes out from; `None`: the default.
    /// The send path resolves it to the sender's id.
    pub sender: Option<String>,
}

impl SendRequest {
    /// The same request from the sender `from` names (`None`: the default sender).
    pub fn from_sender(mut self, from: Option<&str>) -> Self {
        self.sender = from.map(str::to_string);
        self
    }

    /// A new message asked for by an agent tool: a refusal is reported to the caller (not
    /// recorded as a failed row), and it belongs to no campaign.
    pub fn from_tool(
        phone: PhoneNumber,
        channel: &str,
        kind: SendKind,
        message_type: MessageType,
        actor: &'static str,
    ) -> Self {
        SendRequest {
            phone,
            channel: channel.to_string(),
            kind,
            message_type,
            campaign_id: None,
            existing_message_id: None,
            refusal: RefusalMode::Error,
            actor,
            sender: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Accepted {
    pub message_id: Uuid,
    /// Always `queued`.
    pub status: MessageStatus,
    /// False when the publish failed; the relay will publish it.
    pub published: bool,
    /// An earlier call with the same idempotency key created this message; nothing new was.
    pub replayed: bool,
    /// The id of the sender it goes out from.
    pub from: String,
}

/// A refusal that is not one of the rule engine's (template problems at dispatch). A
/// template that is not APPROVED carries its own code, as send_template and the
/// dispatcher's recheck report it.
fn local_refusal(code: &str, explanation: String, action: String) -> Decision {
    let (reason_code, human_explanation) = if code == ReasonCode::TemplateNotApproved.as_str() {
        (ReasonCode::TemplateNotApproved, explanation)
    } else {
        (
            ReasonCode::PolicyRestriction,
            format!("{code}: {explanation}"),
        )
    };
    Decision {
        allowed: false,
        reason_code,
        human_explanation,
        suggested_action: action,
        policy_id: None,
        retry_at: None,
        hold: false,
    }
}

impl Core {
    /// Send one message through compliance, policy, record and publish.
    pub async fn send(&self, req: SendRequest) -> Result<Accepted, SendError> {
        self.send_keyed(req, None).await
    }

    /// [`Core::send`] under an idempotency key (see [`idempotency`]): the same key
    /// and arguments answer the first call's message again (`replayed`), creating nothing.
    pub async fn send_keyed(
        &self,
        req: SendRequest,
        key: Option<IdempotencyKey>,
    ) -> Result<Accepted, SendError> {
        let span = tracing::info_span!(
            "warden.send",
            customer = req.phone.digits(),
            message_type = req.message_type.as_str(),
            message_id = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let started = Instant::now();
        let result = self
            .send_inner(req, key, &span)
            .instrument(span.clone())
            .await;
        if let Err(SendError::Refused(d) | SendError::RefusedRecorded { decision: d, .. }) = &result
            && let Some(policy_id) = &d.policy_id
        {
            let policy_type = self
                .policies()
                .get(policy_id)
                .map_or("frequency_limit", |p| p.policy_type().as_str());
            POLICY_REFUSALS
                .with_label_values(&[policy_type, policy_id.as_str()])
                .inc();
        }
        let outcome = match &result {
            Ok(_) => "OK",
            Err(e) => e.code(),
        };
        span.record("outcome", outcome);
        DECISIONS.with_label_values(&[outcome]).inc();
        let published = matches!(&result, Ok(a) if a.published);
        SEND_LATENCY
            .with_label_values(&[if published { "true" } else { "false" }])
            .observe(started.elapsed().as_secs_f64());
        result
    }

    /// The send path in its steps: [`Core::validate`], then one transaction of
    /// [`Core::compliance`], [`Core::policy`] and [`record`] ([`Core::decide_and_record`]),
    /// then [`Core::refused`] or [`Core::publish_accepted`].
    async fn send_inner(
        &self,
        mut req: SendRequest,
        key: Option<IdempotencyKey>,
        span: &tracing::Span,
    ) -> Result<Accepted, SendError> {
        let (mut conn, category) = self.validate(&mut req).await?;
        let message_id = req.existing_message_id.unwrap_or_else(Uuid::now_v7);
        span.record("message_id", tracing::field::display(message_id));
        let trace = Arc::new(warden_telemetry::inject_context(span));
        let req = Arc::new(req);
        let outcome = self
            .decide_and_record(&mut conn, &req, key, category, message_id, &trace)
            .await?;
        let (decision, retry_count) = match outcome {
            Outcome::Decided(decision, retry_count) => (decision, retry_count),
            Outcome::Replay(result) => return replayed(&result, &req, span),
        };
        if !decision.allowed {
            return Err(self.refused(&mut conn, &req, category, decision).await?);
        }
        drop(conn);
        Ok(self
            .publish_accepted(&req, message_id, retry_count, &trace)
            .await)
    }

    /// Step 1, validate: the channel and the content, the customer's key whatever
    /// identifier the caller used (every rule below applies to the customer), and for a
    /// template that it exists, is APPROVED and gets what its placeholders need. Returns a
    /// connection and the message's category, which the content decides. A template
    /// problem of a scheduled or campaign message is recorded on it.
    async fn validate(
        &self,
        req: &mut SendRequest,
    ) -> Result<(warden_store::PgConn<'_>, Category), SendError> {
        warden_rules::kinds::parse_channel(Some(&req.channel))
            .map_err(|e| SendError::InvalidArgument(e.to_string()))?;
        req.kind.check_text()?;
        let mut conn = self
            .pg()
            .get()
            .await
            .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
        // A recorded message (scheduled, retried) goes out from the number it was recorded with.
        if let (Some(id), None) = (req.existing_message_id, &req.sender) {
            let key = customers::consent::sender_of_message(&mut conn, id)
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
            req.sender = Some(self.sender_id_of_key(&key).to_string());
        }
        let sender = self
            .sender(req.sender.as_deref())
            .map_err(|e| SendError::InvalidArgument(e.to_string()))?;
        req.sender = Some(sender.id.clone());
        if req.phone.is_bsuid() {
            req.phone = crate::customers::identity::resolve(&mut conn, &req.phone)
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
            self.check_reachable(&mut conn, req).await?;
        }

        // Template checks come first: they are about the request, not the customer.
        let template_category = match self.check_template(&mut conn, req).await {
            Ok((cat, resolved)) => {
                if let Some(resolved) = resolved {
                    req.kind.use_checked_components(resolved);
                }
                cat
            }
            Err(err) if req.refusal == RefusalMode::RecordFailed => {
                let decision = local_refusal(err.code(), err.to_string(), err.suggested_action());
                let message_id = self.record_refusal(&mut conn, req, &decision).await?;
                return Err(SendError::RefusedRecorded {
                    message_id,
                    decision,
                });
            }
            Err(err) => return Err(err),
        };
        // The content decides the category (docs/compliance.md, Compliance decisions): free-form
        // needs the window and a template is judged by its stored category, whatever
        // `message_type` the caller gave.
        let category = match template_category {
            Some(t) => ContentKind::Template(t),
            None => ContentKind::FreeForm,
        }
        .category();
        Ok((conn, category))
    }

    /// Steps 2 to 4 in one transaction, retried whole on a conflict: the idempotency key
    /// claimed (a used key answers its first call's message), [`Core::compliance`],
    /// [`Core::policy`], and the [`record`] of an accepted message. A refusal creates
    /// nothing and frees the key.
    async fn decide_and_record(
        &self,
        conn: &mut AsyncPgConnection,
        req: &Arc<SendRequest>,
        key: Option<IdempotencyKey>,
        category: Category,
        message_id: Uuid,
        trace: &Arc<HashMap<String, String>>,
    ) -> Result<Outcome, SendError> {
        let now = self.now();
        // Shared, so each attempt of the transaction borrows nothing but its connection.
        let key = Arc::new(key);
        let (core, shared_req, shared_trace) = (self.clone(), Arc::clone(req), Arc::clone(trace));
        let outcome = transact_on(conn, "send", move |c| {
            let (core, req, trace, key) = (
                core.clone(),
                Arc::clone(&shared_req),
                Arc::clone(&shared_trace),
                Arc::clone(&key),
            );
            async move {
                if let Some(k) = key.as_ref() {
                    let result = json!({"message_id": message_id});
                    match idempotency::claim(c, k, &result, now).await? {
                        Claim::New => {}
                        Claim::Replay(v) => return Ok(Outcome::Replay(v)),
                        Claim::Mismatch { tool } => {
                            return Err(Abort::App(SendError::InvalidArgument(
                                idempotency::mismatch_message(k, &tool),
                            )));
                        }
                    }
                }
                // Which number, business and portfolio: read by every step below.
                let keys = core.keys_for(&req);
                let compliance = core.compliance(c, &req, &keys, category, now).await?;
                let decision = core
                    .policy(c, &req, &keys, category, message_id, compliance, now)
                    .await?;
                if !decision.allowed {
                    // Nothing is created: a retry with the key is judged afresh.
                    if let Some(k) = key.as_ref() {
                        idempotency::release(c, k).await?;
                    }
                    return Ok(Outcome::Decided(decision, 0));
                }
                let retry_count = record(c, &req, &keys, message_id, category, &trace).await?;
                Ok(Outcome::Decided(decision, retry_count))
            }
            .boxed()
        })
        .await?;
        Ok(outcome)
    }

    /// Step 2, compliance: the customer's row locked (created on first sight, so concurrent
    /// sends to one customer are judged one after the other), its care window and recent
    /// count read, and the pure rules' decision.
    async fn compliance(
        &self,
        c: &mut AsyncPgConnection,
        req: &SendRequest,
        keys: &StoreKeys,
        category: Category,
        now: DateTime<Utc>,
    ) -> QueryResult<Compliance> {
        // One round trip: the lock first, then the reads, which run after it (pipelined).
        let phone = req.phone.digits();
        let shared: &AsyncPgConnection = c;
        let protection = async {
            // A protected number sends no marketing (`account::protection`; judged in policy).
            if category == Category::Marketing {
                crate::account::protection::of(shared, &keys.sender).await
            } else {
                Ok(None)
            }
        };
        // Read when they may be needed, judged in policy: the portfolio's reach of the
        // customer (a template may be business-initiated) and the agent's guardrails (a new
        // message only: a retry or a scheduled row was counted when it was asked for).
        let reach = async {
            if category.is_free_form() {
                Ok(None)
            } else {
                crate::account::portfolio::reach_facts(shared, &keys.portfolio, &req.phone)
                    .await
                    .map(Some)
            }
        };
        let agent_limits = async {
            if req.existing_message_id.is_some() {
                Ok(None)
            } else {
                guardrails::limits_of(shared, req.actor).await.map(Some)
            }
        };
        let (customer, stored_consent, conv, counted, protection, reach, agent_limits) = futures::try_join!(
            customers::ensure_locked(shared, &req.phone),
            customers::consent::stored(shared, &keys.business, phone),
            conversations::find(shared, phone, &req.channel, &keys.sender),
            decide::counted(
                shared,
                self.policies(),
                (&keys.business, phone),
                category,
                now,
                req.existing_message_id,
            ),
            protection,
            reach,
            agent_limits,
        )?;
        let consent = customers::consent::resolve(&keys.business, &customer, stored_consent);
        let last_inbound_at = conv.as_ref().and_then(|c| c.last_inbound_at);
        let (recent, _) = decide::counting_platform_hold(
            self.policies(),
            category,
            Some(&CustomerFacts::from(&customer)),
            counted,
            now,
        );
        let facts = CustomerFacts::with_consent(&customer, &consent);
        let decision = decide(
            self.policies(),
            &req.phone,
            Some(&facts),
            last_inbound_at,
            category,
            recent,
            now,
        );
        // Read with the window: who holds the conversation (`conversation_holder`).
        let decision =
            conversation_holder::apply(decision, conv.as_ref(), category, req.actor, now);
        Ok(Compliance {
            decision,
            last_inbound_at,
            protection,
            reach,
            agent_limits,
        })
    }

    /// Step 3, policy: what may still refuse a message compliance allowed. The content
    /// rules (`content_filter`, `duplicate_guard`), then the portfolio messaging limit for a
    /// business-initiated message (`account::portfolio`): their refusal is the decision.
    /// Then the calling agent's guardrails, whose refusal aborts the transaction.
    #[allow(clippy::too_many_arguments)] // the send's facts, each read once by the caller
    async fn policy(
        &self,
        c: &mut AsyncPgConnection,
        req: &SendRequest,
        keys: &StoreKeys,
        category: Category,
        message_id: Uuid,
        Compliance {
            decision,
            last_inbound_at,
            protection,
            reach,
            agent_limits,
        }: Compliance,
        now: DateTime<Utc>,
    ) -> Result<Decision, Abort<SendError>> {
        let decision = if decision.allowed && safety::reads_content(self.policies(), category) {
            safety::check(
                c,
                self.policies(),
                req.phone.digits(),
                category,
                &req.kind.to_content(),
                now,
                req.existing_message_id,
            )
            .await?
            .unwrap_or(decision)
        } else {
            decision
        };
        if !decision.allowed {
            return Ok(decision);
        }
        // A protected number sends no marketing (`account::protection`).
        if let Some(p) = protection.filter(|_| category == Category::Marketing) {
            let id = req.sender.as_deref().unwrap_or_default();
            return Ok(crate::account::protection::refusal(id, &p));
        }
        let window_open = warden_rules::window::window_open(
            warden_rules::window::usable_inbound(last_inbound_at, now),
            now,
        );
        // `reach` was read for every template, the only business-initiated messages.
        if let Some(facts) = reach
            .filter(|_| warden_rules::platform_limits::business_initiated(category, window_open))
            && let Some(refusal) = crate::account::portfolio::admit(
                c,
                &keys.portfolio,
                &req.phone,
                message_id,
                now,
                facts,
            )
            .await?
        {
            return Ok(refusal);
        }
        // A call permission request: not while a grant is valid, at most two a day.
        if let Some(refusal) = call_permission::guard(c, req, keys, message_id, now).await? {
            return Ok(refusal);
        }
        // A retry or a scheduled row coming due was counted when it was asked for.
        if let Some(limits) = agent_limits
            && let Err(refusal) =
                guardrails::check_and_count(c, req.actor, limits, category, now).await?
        {
            return Err(Abort::App(SendError::Guardrail(refusal)));
        }
        Ok(decision)
    }

    /// A refusal, answered: to a tool, reported (with an audit row); for the scheduler and
    /// campaigns, recorded: a new campaign recipient at the portfolio limit pauses the
    /// campaign and records nothing, a rule that lifts by itself holds the message
    /// (`send::message_holds`), any other ends it `failed`. Returns the error to answer; an error
    /// here is a failure to write it.
    async fn refused(
        &self,
        conn: &mut AsyncPgConnection,
        req: &SendRequest,
        category: Category,
        decision: Decision,
    ) -> Result<SendError, SendError> {
        match req.refusal {
            RefusalMode::Error => {
                // The number and business refused, for the audit page.
                let (from, business) = match self.sender(req.sender.as_deref()) {
                    Ok(s) => (Some(s.id.clone()), Some(self.senders().key_of(s).business)),
                    Err(_) => (None, None),
                };
                warden_store::audit::record(
                    conn,
                    req.actor,
                    "send_refused",
                    "customer",
                    req.phone.digits(),
                    json!({
                        "from": from,
                        "business": business,
                        "reason_code": decision.reason_code.as_str(),
                        "policy_id": decision.policy_id,
                        "message_type": req.message_type.as_str(),
                        "explanation": decision.human_explanation,
                    }),
                )
                .await?;
                Ok(SendError::Refused(decision))
            }
            RefusalMode::RecordFailed => {
                // A new campaign recipient at the portfolio limit: pause, record nothing.
                if let (Some(campaign), None) = (req.campaign_id, req.existing_message_id)
                    && crate::account::portfolio::is_messaging_limit(&decision)
                {
                    self.pause_for_limit(conn, campaign, &decision, req.actor)
                        .await?;
                    return Ok(SendError::CampaignPaused(decision));
                }
                // A rule that lifts by itself: the message waits (`send::message_holds`).
                if let Some(until) = decision.retry_at.filter(|_| decision.hold)
                    && (req.existing_message_id.is_some() || req.campaign_id.is_some())
                    && let Some(message_id) = self
                        .record_hold(conn, req, category, &decision, until)
                        .await?
                {
                    return Ok(SendError::Held {
                        message_id,
                        decision,
                    });
                }
                let message_id = self.record_refusal(conn, req, &decision).await?;
                Ok(SendError::RefusedRecorded {
                    message_id,
                    decision,
                })
            }
        }
    }

    /// For template sends: the template exists in that locale, is APPROVED, and the
    /// variables fill its placeholders. Returns the template's category.
    async fn check_template(
        &self,
        conn: &mut AsyncPgConnection,
        req: &SendRequest,
    ) -> Result<(Option<TemplateCategory>, Option<Vec<Value>>), SendError> {
        let SendKind::Template(TemplateSend {
            name,
            locale,
            variables,
            components,
            ..
        }) = &req.kind
        else {
            return Ok((None, None));
        };
        // Templates belong to the business of the number it goes out from.
        let business = self.keys_for(req).business;
        let Some(template) = templates::find(conn, &business, name, locale).await? else {
            return Err(SendError::TemplateNotFound {
                name: name.clone(),
                locale: locale.clone(),
            });
        };
        if template.status != templates::APPROVED {
            return Err(SendError::TemplateNotApproved {
                name: name.clone(),
                locale: locale.clone(),
                status: template.status,
            });
        }
        let spec = templates::spec_of(&template).map_err(|e| {
            SendError::InvalidArgument(format!("template `{name}` has unreadable components: {e}"))
        })?;
        let resolved = warden_rules::template_params::resolve(&spec, variables, components)
            .map_err(|e| {
                // A body-only template keeps its old answer; others point at the components.
                if spec.is_body_only() && components.is_empty() {
                    SendError::InvalidVariables(e.to_string())
                } else {
                    SendError::InvalidArgument(format!("template `{name}` ({locale}): {e}"))
                }
            })?;
        let category = template.category.parse::<TemplateCategory>().map_err(|e| {
            SendError::InvalidArgument(format!("template `{name}` has a bad category: {e}"))
        })?;
        kind::needs_phone(category, &req.phone)?;
        Ok((Some(category), (!components.is_empty()).then_some(resolved)))
    }

    /// A customer known by BSUID only must have one in the portfolio of the number it goes
    /// out from: a BSUID is scoped to its portfolio, so another's cannot be used.
    async fn check_reachable(
        &self,
        conn: &mut AsyncPgConnection,
        req: &SendRequest,
    ) -> Result<(), SendError> {
        if !req.phone.is_bsuid() {
            return Ok(());
        }
        let keys = self.keys_for(req);
        let address =
            crate::customers::identity::address_for(conn, &keys.portfolio, req.phone.digits())
                .await
                .map_err(|e| SendError::Unavailable(format!("database unavailable: {e}")))?;
        if address.is_some() {
            return Ok(());
        }
        let from = req.sender.as_deref().unwrap_or_default();
        Err(SendError::InvalidArgument(format!(
            "customer `{}` is known only by a BSUID of another business portfolio, which number `{from}` cannot use (a BSUID belongs to one portfolio); send from a number of the portfolio the customer wrote to, or by phone once it is known",
            req.phone.digits()
        )))
    }

    /// The stored keys of the sender a request goes out from (resolved by `validate`).
    pub(crate) fn keys_for(&self, req: &SendRequest) -> StoreKeys {
        let senders = self.senders();
        let sender = req
            .sender
            .as_deref()
            .and_then(|id| senders.get(id))
            .unwrap_or(senders.default());
        senders.key_of(sender)
    }
}

/// The answer to a call whose idempotency key was used before: the first call's message,
/// nothing new created.
fn replayed(
    result: &Value,
    req: &SendRequest,
    span: &tracing::Span,
) -> Result<Accepted, SendError> {
    let message_id = result
        .get("message_id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Uuid>().ok())
        .ok_or_else(|| {
            SendError::Unavailable("a stored idempotency result is unreadable".into())
        })?;
    span.record("message_id", tracing::field::display(message_id));
    Ok(Accepted {
        message_id,
        status: MessageStatus::Queued,
        published: true,
        replayed: true,
        from: req.sender.clone().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::kind::ContentError;
    use super::*;

    #[test]
    fn the_platforms_template_body_is_stored_as_it_came() {
        let components = json!([
            {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.example/a.jpg"}}]},
            {"type": "body", "parameters": [{"type": "text", "text": "A1"}]},
            {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]}
        ]);
        let content = json!({"type": "template", "template": {"name": "order_shipped",
                             "language": {"code": "en"}, "components": components}});
        let kind = SendKind::from_content(&content).unwrap();
        let SendKind::Template(TemplateSend {
            name,
            locale,
            variables,
            components: c,
            ..
        }) = &kind
        else {
            panic!("not a template: {kind:?}");
        };
        assert_eq!((name.as_str(), locale.as_str()), ("order_shipped", "en"));
        assert!(variables.is_empty());
        assert_eq!(json!(c), components);
        assert_eq!(SendKind::from_content(&kind.to_content()).unwrap(), kind);
        // Named values travel as a named body component.
        let named = json!({"type": "template", "template": {"name": "w", "locale": "en",
                           "variables": {"first_name": "Ana"}}});
        let SendKind::Template(TemplateSend { components, .. }) =
            SendKind::from_content(&named).unwrap()
        else {
            panic!("not a template");
        };
        assert_eq!(
            components[0]["parameters"][0]["parameter_name"],
            "first_name"
        );
        // A body-only send is stored exactly as before.
        let plain = SendKind::Template(TemplateSend {
            name: "t".into(),
            locale: "en".into(),
            variables: vec!["a".into()],
            ..Default::default()
        });
        assert_eq!(
            plain.to_content(),
            json!({"type": "template", "template": {"name": "t", "locale": "en", "variables": ["a"]}})
        );
        let bad = json!({"type": "template", "template": {"name": "t", "components": {}}});
        assert_eq!(SendKind::from_content(&bad), Err(ContentError::Components));
    }
}
