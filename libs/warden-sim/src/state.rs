//! The sim's in-memory state: counters, faults, templates, phone number, and the
//! webhooks each event produces.

mod limits;
pub mod media;

use crate::config::SimConfig;
use crate::templates::{Registry, Seed, Template};
use crate::webhooks::{QueueStats, WebhookQueue, unix_now};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use warden_platform::ErrorData;
use warden_platform::error::ErrorBody;
use warden_platform::webhook::{
    Change, Contact, ErrorDetail, InboundMessage, MessagesValue, Metadata,
    PhoneNumberQualityUpdate, Pricing, Profile, Status, TemplateStatusUpdate, TextBody,
    UserPreference, UserPreferencesValue,
};

/// What an inbound message says: its platform type, the text body of a `text` message,
/// and every other field of the platform's message object (`image`, `context`, ...).
#[derive(Debug, Clone, Default)]
pub struct InboundContent {
    pub kind: String,
    pub text: Option<String>,
    pub other: serde_json::Map<String, serde_json::Value>,
}

impl From<&str> for InboundContent {
    /// A plain `text` message with this body.
    fn from(body: &str) -> Self {
        InboundContent {
            kind: "text".to_owned(),
            text: Some(body.to_owned()),
            other: serde_json::Map::new(),
        }
    }
}

/// Key of a fault that applies to every recipient.
pub const ANY_RECIPIENT: &str = "*";

/// A platform refusal, ready to answer with.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub http_status: u16,
    /// Boxed: refusals are rare, and a small Err keeps the send path's Result small.
    pub body: Box<ErrorBody>,
}

impl Refusal {
    pub fn new(http_status: u16, code: i64, details: impl Into<String>) -> Self {
        let mut body = ErrorBody::new(code, message_for(code), Some(details.into()));
        body.error.fbtrace_id = Some(fbtrace_id());
        Self {
            http_status,
            body: Box::new(body),
        }
    }

    pub fn with_subcode(mut self, subcode: i64) -> Self {
        self.body.error.error_subcode = Some(subcode);
        self
    }
}

/// The platform's message for a code, `(#code) Title` like the real API.
pub fn message_for(code: i64) -> String {
    format!("(#{code}) {}", title_for(code))
}

pub fn title_for(code: i64) -> &'static str {
    match code {
        0 => "AuthException",
        4 => "Too many calls",
        10 => "Permission denied",
        100 => "Invalid parameter",
        190 => "Invalid OAuth access token - Cannot parse access token",
        200 => "Permission error",
        368 => "Temporarily blocked for policies violations",
        470 => {
            "Message failed to send because more than 24 hours have passed since the customer last replied to this number"
        }
        80007 => "Rate limit issues",
        130429 => "Rate limit hit",
        130472 => "User's number is part of an experiment",
        131000 => "Something went wrong",
        131005 => "Access denied",
        131008 => "Required parameter is missing",
        131009 => "Parameter value is not valid",
        131016 => "Service unavailable",
        131021 => "Recipient cannot be sender",
        131026 => "Message undeliverable",
        131031 => "Account has been locked",
        131042 => "Business eligibility payment issue",
        131045 => "Incorrect certificate",
        131047 => "Re-engagement message",
        131048 => "Spam rate limit hit",
        131049 => "This message was not delivered to maintain healthy ecosystem engagement",
        131050 => {
            "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business"
        }
        131051 => "Unsupported message type",
        131052 => "Media download error",
        131053 => "Media upload error",
        131056 => "(Business Account, Consumer Account) pair rate limit hit",
        131057 => "Account in maintenance mode",
        132000 => "Number of parameters does not match the expected number of params",
        132001 => "Template name does not exist in the translation",
        132005 => "Translated text too long",
        132007 => "Template Format Character Policy Violated",
        132012 => "Parameter format does not match format in the created template",
        132015 => "Template is Paused",
        132016 => "Template is Disabled",
        133010 => "Phone number Not Registered",
        135000 => "Generic user error",
        _ => "Error",
    }
}

fn fbtrace_id() -> String {
    let n: u64 = rand::random();
    format!("A{n:016x}")
}

#[derive(Debug, Clone)]
struct Fault {
    code: i64,
    http_status: u16,
    remaining: u64,
    details: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MessageStat {
    pub count: u64,
    pub wamid: String,
    pub recipient: String,
    /// The `template` object of the latest template send, as received (tests check the body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<serde_json::Value>,
    /// The send's `type` (text, template, image, interactive, ...), of the latest send.
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Default)]
struct Counters {
    total_sends: u64,
    duplicates: u64,
    by_message: HashMap<String, MessageStat>,
    by_recipient: HashMap<String, u64>,
    /// Platform calls per API version prefix (`v25.0` -> N), accepted or not.
    by_version: HashMap<String, u64>,
    /// Read receipts (`status: "read"` calls) accepted.
    marked_read: u64,
    faults: HashMap<String, Fault>,
    /// Callback data whose latest send the sim failed by status webhook: sending it
    /// again is the retry the failure asks for, not a duplicate.
    failed_by_webhook: HashSet<String>,
}

/// `GET /sim/stats`, exactly the contract's shape.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub total_sends: u64,
    pub duplicates: u64,
    pub by_message: HashMap<String, MessageStat>,
    pub by_recipient: HashMap<String, u64>,
    /// Platform calls per API version (an addition beyond the contract's keys).
    pub by_version: HashMap<String, u64>,
    /// Read receipts accepted (`status: "read"`, with or without a typing indicator).
    pub marked_read: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PhoneState {
    pub quality_rating: String,
    pub messaging_limit_tier: String,
    pub throughput_level: String,
    /// In coexistence with the WhatsApp Business app (`is_on_biz_app`).
    pub is_on_biz_app: bool,
}

impl Default for PhoneState {
    fn default() -> Self {
        Self {
            quality_rating: "GREEN".to_owned(),
            messaging_limit_tier: "TIER_1K".to_owned(),
            throughput_level: "STANDARD".to_owned(),
            is_on_biz_app: false,
        }
    }
}

/// What a send should do after validation: its pricing category and whether it is
/// billable (templates are; free-form service messages are not).
pub struct Accepted<'a> {
    pub to_digits: String,
    pub callback: Option<String>,
    pub pricing_category: &'a str,
    pub billable: bool,
    /// The template object of a template send.
    pub template: Option<serde_json::Value>,
    /// The send's `type`.
    pub kind: &'a str,
}

/// The outcome of an accepted send.
pub struct SendOutcome {
    pub wamid: String,
}

pub struct Sim {
    pub config: SimConfig,
    /// `Bearer <token>`, compared as a whole.
    pub expected_auth: String,
    counters: Mutex<Counters>,
    pub templates: RwLock<Registry>,
    phone: Mutex<PhoneState>,
    latency_ms: AtomicU64,
    wamid_nonce: u64,
    wamid_seq: AtomicU64,
    template_seq: AtomicU64,
    pub webhooks: Option<Arc<WebhookQueue>>,
    /// Uploaded media (`POST /{phone}/media`, `POST /sim/media`).
    pub media: media::MediaStore,
    /// Users known by BSUID (`crate::users`).
    pub users: crate::users::Users,
    /// Runtime for timers, so they outlive the HTTP worker that scheduled them.
    runtime: tokio::runtime::Handle,
}

impl Sim {
    pub fn new(
        config: SimConfig,
        seeds: Vec<Seed>,
        webhooks: Option<Arc<WebhookQueue>>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        let sim = Self {
            expected_auth: format!("Bearer {}", config.access_token),
            config,
            counters: Mutex::new(Counters::default()),
            templates: RwLock::new(Registry::default()),
            phone: Mutex::new(PhoneState::default()),
            latency_ms: AtomicU64::new(0),
            wamid_nonce: rand::random::<u64>() & 0xFFFF_FFFF_FFFF,
            wamid_seq: AtomicU64::new(1),
            template_seq: AtomicU64::new(1),
            webhooks,
            media: media::MediaStore::default(),
            users: crate::users::Users::default(),
            runtime,
        };
        {
            let mut reg = sim.templates.write().unwrap_or_else(|p| p.into_inner());
            for s in seeds {
                let id = s.id.unwrap_or_else(|| sim.next_template_id());
                reg.insert(Template {
                    id,
                    name: s.name,
                    language: s.language,
                    category: s.category,
                    status: s.status,
                    body: s.body,
                    params: s.params,
                    reason: None,
                    components: Vec::new(),
                    named: None,
                });
            }
        }
        sim
    }

    pub fn next_template_id(&self) -> String {
        (900_000_000_000_000u64 + self.template_seq.fetch_add(1, Ordering::Relaxed)).to_string()
    }

    fn next_wamid(&self) -> String {
        // A per-process nonce plus a counter: unique across resets and restarts
        // without a random draw per message.
        let seq = self.wamid_seq.fetch_add(1, Ordering::Relaxed);
        format!("wamid.HBgM{:012X}{seq:016X}", self.wamid_nonce)
    }

    pub fn latency(&self) -> Option<Duration> {
        match self.latency_ms.load(Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    pub fn set_latency_ms(&self, ms: u64) {
        self.latency_ms.store(ms, Ordering::Relaxed);
    }

    /// Arms a fault for `recipient` (digits, or [`ANY_RECIPIENT`]); `times == 0` clears it.
    pub fn set_fault(
        &self,
        recipient: String,
        code: i64,
        http_status: u16,
        times: u64,
        details: Option<String>,
    ) {
        let mut c = self.lock();
        if times == 0 {
            c.faults.remove(&recipient);
        } else {
            c.faults.insert(
                recipient,
                Fault {
                    code,
                    http_status,
                    remaining: times,
                    details,
                },
            );
        }
    }

    pub fn clear_faults(&self) {
        self.lock().faults.clear();
        self.set_latency_ms(0);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A panic while holding the lock cannot leave counters half-updated in a way
        // that matters for a test double; keep serving.
        self.counters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an accepted send (unless a fault refuses it) and queues its status
    /// webhooks. A fault with HTTP 200 accepts the send and fails it by webhook, as
    /// the platform does for e.g. 131050.
    pub fn accept_send(&self, a: Accepted<'_>) -> Result<SendOutcome, Refusal> {
        let wamid = self.next_wamid();
        let mut async_failure = None;
        {
            let mut c = self.lock();
            let fault_key = if c.faults.is_empty() {
                None
            } else if c.faults.contains_key(a.to_digits.as_str()) {
                Some(a.to_digits.clone())
            } else if c.faults.contains_key(ANY_RECIPIENT) {
                Some(ANY_RECIPIENT.to_owned())
            } else {
                None
            };
            if let Some(key) = fault_key {
                let fault = {
                    let f = c.faults.get_mut(&key).expect("fault key just seen");
                    f.remaining = f.remaining.saturating_sub(1);
                    f.clone()
                };
                if fault.remaining == 0 {
                    c.faults.remove(&key);
                }
                if fault.http_status != 200 {
                    drop(c);
                    let details = fault
                        .details
                        .unwrap_or_else(|| format!("fault injected for {}", a.to_digits));
                    return Err(Refusal::new(fault.http_status, fault.code, details));
                }
                async_failure = Some(fault);
            }
            c.total_sends += 1;
            match c.by_recipient.get_mut(a.to_digits.as_str()) {
                Some(n) => *n += 1,
                None => {
                    c.by_recipient.insert(a.to_digits.clone(), 1);
                }
            }
            if let Some(cb) = &a.callback {
                let retry_of_failure = c.failed_by_webhook.remove(cb.as_str());
                if async_failure.is_some() {
                    c.failed_by_webhook.insert(cb.clone());
                }
                let dup = match c.by_message.get_mut(cb.as_str()) {
                    Some(m) => {
                        m.count += 1;
                        m.wamid.clone_from(&wamid);
                        m.template.clone_from(&a.template);
                        a.kind.clone_into(&mut m.kind);
                        true
                    }
                    None => {
                        c.by_message.insert(
                            cb.clone(),
                            MessageStat {
                                count: 1,
                                wamid: wamid.clone(),
                                recipient: a.to_digits.clone(),
                                template: a.template.clone(),
                                kind: a.kind.to_owned(),
                            },
                        );
                        false
                    }
                };
                if dup && !retry_of_failure {
                    c.duplicates += 1;
                }
            }
        }
        if let Some(q) = &self.webhooks {
            let now = unix_now();
            let status = |kind: &str, errors: Vec<ErrorDetail>| Status {
                id: wamid.clone(),
                status: kind.to_owned(),
                timestamp: now,
                // A send by BSUID names no phone, as on the platform.
                recipient_id: if crate::users::is_bsuid(&a.to_digits) {
                    String::new()
                } else {
                    a.to_digits.clone()
                },
                recipient_user_id: if crate::users::is_bsuid(&a.to_digits) {
                    Some(a.to_digits.clone())
                } else {
                    self.users.bsuid_of_phone(&a.to_digits)
                },
                recipient_parent_user_id: None,
                biz_opaque_callback_data: a.callback.clone(),
                conversation: None,
                pricing: errors.is_empty().then(|| Pricing {
                    billable: Some(a.billable),
                    pricing_model: Some("PMP".to_owned()),
                    category: Some(a.pricing_category.to_owned()),
                    kind: Some(
                        if a.billable {
                            "regular"
                        } else {
                            "free_customer_service"
                        }
                        .to_owned(),
                    ),
                }),
                errors,
            };
            let changes = match async_failure {
                None => vec![
                    self.status_change(status("sent", Vec::new())),
                    self.status_change(status("delivered", Vec::new())),
                    self.status_change(status("read", Vec::new())),
                ],
                Some(f) => {
                    let title = title_for(f.code).to_owned();
                    let err = ErrorDetail {
                        code: f.code,
                        title: Some(title.clone()),
                        message: Some(title),
                        error_data: Some(ErrorData {
                            messaging_product: None,
                            details: Some(f.details.unwrap_or_else(|| {
                                format!("fault injected for {}", a.to_digits)
                            })),
                        }),
                        href: Some(
                            "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/"
                                .to_owned(),
                        ),
                    };
                    vec![
                        self.status_change(status("sent", Vec::new())),
                        self.status_change(status("failed", vec![err])),
                    ]
                }
            };
            q.push(changes);
        }
        Ok(SendOutcome { wamid })
    }

    fn metadata(&self) -> Metadata {
        Metadata {
            display_phone_number: self.config.display_phone_number.clone(),
            phone_number_id: self.config.phone_number_id.clone(),
        }
    }

    fn status_change(&self, status: Status) -> Change {
        Change::Messages(MessagesValue {
            messaging_product: Some("whatsapp".to_owned()),
            metadata: Some(self.metadata()),
            statuses: vec![status],
            ..Default::default()
        })
    }

    /// (total_sends, duplicates) without copying the maps.
    pub fn stats_counts(&self) -> (u64, u64) {
        let c = self.lock();
        (c.total_sends, c.duplicates)
    }

    pub fn stats(&self) -> Stats {
        let c = self.lock();
        Stats {
            total_sends: c.total_sends,
            duplicates: c.duplicates,
            by_message: c.by_message.clone(),
            by_recipient: c.by_recipient.clone(),
            by_version: c.by_version.clone(),
            marked_read: c.marked_read,
        }
    }

    /// Counts one accepted read receipt.
    pub fn count_marked_read(&self) {
        self.lock().marked_read += 1;
    }

    /// Counts one call to a platform path under API version `version` (`v25.0`).
    pub fn count_version_call(&self, version: &str) {
        let mut c = self.lock();
        match c.by_version.get_mut(version) {
            Some(n) => *n += 1,
            None => {
                c.by_version.insert(version.to_owned(), 1);
            }
        }
    }

    /// Clears counters, faults, latency and the phone number's quality; keeps
    /// templates (the service under test has them on record).
    pub fn reset(&self) {
        {
            let mut c = self.lock();
            *c = Counters::default();
        }
        self.set_latency_ms(0);
        *self.phone.lock().unwrap_or_else(|p| p.into_inner()) = PhoneState::default();
        self.users.clear();
    }

    pub fn webhook_stats(&self) -> QueueStats {
        match &self.webhooks {
            Some(q) => q.stats(),
            None => QueueStats {
                enabled: false,
                queued: 0,
                in_flight: 0,
                enqueued: 0,
                delivered: 0,
                webhooks_dropped: 0,
                posts: 0,
                failed_posts: 0,
            },
        }
    }

    /// Queues an inbound message webhook (any type); returns its wamid and whether a
    /// webhook will be sent.
    pub fn inbound(
        &self,
        from: crate::users::SimUser,
        message: InboundContent,
        name: Option<String>,
        timestamp: Option<i64>,
        wamid: Option<String>,
    ) -> (String, bool) {
        let wamid = wamid.unwrap_or_else(|| self.next_wamid());
        self.users.remember(&from);
        let Some(q) = &self.webhooks else {
            return (wamid, false);
        };
        // A username user without a phone arrives as the platform sends them: no `wa_id`,
        // no `from`, only the BSUIDs.
        let phone = from.phone.unwrap_or_default();
        let change = Change::Messages(MessagesValue {
            messaging_product: Some("whatsapp".to_owned()),
            metadata: Some(self.metadata()),
            contacts: vec![Contact {
                profile: Some(Profile {
                    name: Some(name.unwrap_or_else(|| "Sim Customer".to_owned())),
                    username: from.username,
                }),
                wa_id: phone.clone(),
                user_id: from.user_id.clone(),
                parent_user_id: from.parent_user_id.clone(),
            }],
            messages: vec![InboundMessage {
                from: phone,
                from_user_id: from.user_id,
                from_parent_user_id: from.parent_user_id,
                id: wamid.clone(),
                timestamp: timestamp.unwrap_or_else(unix_now),
                kind: message.kind,
                text: message.text.map(|body| TextBody { body }),
                other: message.other,
            }],
            ..Default::default()
        });
        q.push([change]);
        (wamid, true)
    }

    /// Queues a `user_preferences` webhook (`value`: stop or resume).
    pub fn user_preference(&self, wa_id: String, value: String, timestamp: Option<i64>) -> bool {
        let Some(q) = &self.webhooks else {
            return false;
        };
        let detail = format!("User requested to {value} marketing messages");
        q.push([Change::UserPreferences(UserPreferencesValue {
            messaging_product: Some("whatsapp".to_owned()),
            metadata: Some(self.metadata()),
            contacts: vec![Contact {
                profile: Some(Profile {
                    name: Some("Sim Customer".to_owned()),
                    username: None,
                }),
                wa_id: wa_id.clone(),
                ..Default::default()
            }],
            user_preferences: vec![UserPreference {
                wa_id,
                user_id: None,
                detail: Some(detail),
                category: "marketing_messages".to_owned(),
                value,
                timestamp: timestamp.unwrap_or_else(unix_now),
            }],
        })]);
        true
    }

    pub fn phone(&self) -> PhoneState {
        self.phone.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the number's quality/tier and queues a `phone_number_quality_update`.
    pub fn set_quality(
        &self,
        quality_rating: Option<String>,
        tier: Option<String>,
        event: Option<String>,
    ) -> PhoneState {
        let (state, old_tier) = {
            let mut p = self.phone.lock().unwrap_or_else(|p| p.into_inner());
            let old = p.messaging_limit_tier.clone();
            if let Some(q) = quality_rating {
                p.quality_rating = q;
            }
            if let Some(t) = tier {
                p.messaging_limit_tier = t;
            }
            (p.clone(), old)
        };
        if let Some(q) = &self.webhooks {
            let event = event.unwrap_or_else(|| {
                if state.quality_rating == "RED" || state.quality_rating == "YELLOW" {
                    "FLAGGED".to_owned()
                } else {
                    "UNFLAGGED".to_owned()
                }
            });
            q.push([Change::Quality(PhoneNumberQualityUpdate {
                display_phone_number: self.config.display_phone_number.clone(),
                event,
                current_limit: Some(state.messaging_limit_tier.clone()),
                old_limit: Some(old_tier),
            })]);
        }
        state
    }

    /// Sets a template's status and queues its `message_template_status_update`.
    /// `None` when the template does not exist.
    pub fn decide(
        &self,
        name: &str,
        language: &str,
        status: &str,
        reason: Option<String>,
    ) -> Option<Template> {
        self.decide_if(name, language, status, reason, None)
    }

    /// Like [`Sim::decide`], but only when the current status is `only_from` (checked
    /// under the same lock, so a concurrent manual decision is never overwritten).
    fn decide_if(
        &self,
        name: &str,
        language: &str,
        status: &str,
        reason: Option<String>,
        only_from: Option<&str>,
    ) -> Option<Template> {
        let t = {
            let mut reg = self.templates.write().unwrap_or_else(|p| p.into_inner());
            let t = reg.get_mut(name, language)?;
            if only_from.is_some_and(|from| t.status != from) {
                return None;
            }
            t.status = status.to_owned();
            t.reason = match status {
                "APPROVED" => None,
                _ => reason.clone(),
            };
            t.clone()
        };
        self.template_webhook(&t, reason.or_else(|| Some("NONE".to_owned())));
        Some(t)
    }

    fn template_webhook(&self, t: &Template, reason: Option<String>) {
        if let Some(q) = &self.webhooks {
            q.push([Change::TemplateStatus(TemplateStatusUpdate {
                event: t.status.clone(),
                message_template_id: t.id.clone(),
                message_template_name: t.name.clone(),
                message_template_language: t.language.clone(),
                reason,
                message_template_category: Some(t.category.clone()),
            })]);
        }
    }

    /// Approves the template after the configured delay, unless something decided
    /// it meanwhile (a manual REJECTED must stand).
    pub fn schedule_approval(self: &Arc<Self>, name: String, language: String) {
        let sim = Arc::clone(self);
        let delay = self.config.approval_delay;
        self.runtime.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if sim
                .decide_if(&name, &language, "APPROVED", None, Some("PENDING"))
                .is_some()
            {
                tracing::info!(template = %name, language = %language, "template approved");
            }
        });
    }
}
