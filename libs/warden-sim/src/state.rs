//! The sim's in-memory state: counters, faults, templates per business account, the
//! numbers it serves, and the webhooks each event produces.

mod decisions;
mod events;
pub mod flows;
mod limits;
pub mod media;
pub mod numbers;
mod refusal;
pub mod thread_control;

pub use numbers::{Number, Numbers, PhoneState};
pub use refusal::{Refusal, message_for, title_for};

use crate::config::SimConfig;
use crate::senders::SenderSpec;
use crate::templates::{Registry, Seed, Template};
use crate::webhooks::{QueueStats, WebhookQueue, unix_now};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use warden_platform::ErrorData;
use warden_platform::webhook::{Change, ErrorDetail, MessagesValue, Pricing, Status};

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
    /// The number that sent it (of the latest send).
    pub phone_number_id: String,
    /// The `template` object of the latest template send, as received (tests check the body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template: Option<serde_json::Value>,
    /// The send's `type` (text, template, image, interactive, ...), of the latest send.
    #[serde(rename = "type")]
    pub kind: String,
    /// The kind's own object (`interactive`, `contacts`, `image`, ...) of the latest send
    /// other than text and template, as received (tests check the body).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<serde_json::Value>,
    /// Where the latest send came in: `messages` or `marketing_messages`.
    pub endpoint: String,
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

/// `GET /sim/stats`, in the shape docs/platform-sim.md gives.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub total_sends: u64,
    pub duplicates: u64,
    pub by_message: HashMap<String, MessageStat>,
    pub by_recipient: HashMap<String, u64>,
    /// Platform calls per API version, accepted or not.
    pub by_version: HashMap<String, u64>,
    /// Read receipts accepted (`status: "read"`, with or without a typing indicator).
    pub marked_read: u64,
}

/// What a send should do after validation: its pricing category and whether it is
/// billable (templates are; free-form service messages are not).
pub struct Accepted<'a> {
    /// The sending number.
    pub number: &'a Number,
    pub to_digits: String,
    pub callback: Option<String>,
    pub pricing_category: &'a str,
    pub billable: bool,
    /// The template object of a template send.
    pub template: Option<serde_json::Value>,
    /// The send's `type`.
    pub kind: &'a str,
    /// The kind's own object of a send other than text and template, as received.
    pub body: Option<serde_json::Value>,
    /// `messages` or `marketing_messages`.
    pub endpoint: &'a str,
}

/// The outcome of an accepted send.
pub struct SendOutcome {
    pub wamid: String,
}

pub struct Sim {
    pub config: SimConfig,
    /// `Bearer <token>` of the first number, compared as a whole.
    pub expected_auth: String,
    /// The numbers served (`SIM_SENDERS`, or the one of the settings).
    pub numbers: Numbers,
    counters: Mutex<Counters>,
    /// The templates of the first number's business account (the only account when
    /// `SIM_SENDERS` is unset); [`Sim::registry`] finds any account's.
    pub templates: RwLock<Registry>,
    /// The templates of every other account, by `waba_id`.
    more_templates: HashMap<String, RwLock<Registry>>,
    latency_ms: AtomicU64,
    wamid_nonce: u64,
    wamid_seq: AtomicU64,
    template_seq: AtomicU64,
    pub webhooks: Option<Arc<WebhookQueue>>,
    /// Uploaded media (`POST /{phone}/media`, `POST /sim/media`).
    pub media: media::MediaStore,
    /// Users known by BSUID (`crate::users`).
    pub users: crate::users::Users,
    /// Thread control on a shared number (`thread_control`, answered by `crate::routing`).
    pub routing: thread_control::Routing,
    /// The registered flows (`crate::flows`).
    pub flows: flows::Flows,
    /// Runtime for timers, so they outlive the HTTP worker that scheduled them.
    runtime: tokio::runtime::Handle,
}

impl Sim {
    /// Every account starts with the same template set; a seed's own `id` is kept in the
    /// first account only (template ids are unique platform-wide).
    pub fn new(
        config: SimConfig,
        senders: Vec<SenderSpec>,
        seeds: Vec<Seed>,
        webhooks: Option<Arc<WebhookQueue>>,
        runtime: tokio::runtime::Handle,
    ) -> Self {
        let numbers = Numbers::new(senders);
        let more_templates = numbers
            .wabas()
            .into_iter()
            .skip(1)
            .map(|w| (w.to_owned(), RwLock::new(Registry::default())))
            .collect();
        let sim = Self {
            expected_auth: numbers.first().expected_auth.clone(),
            numbers,
            config,
            counters: Mutex::new(Counters::default()),
            templates: RwLock::new(Registry::default()),
            more_templates,
            latency_ms: AtomicU64::new(0),
            wamid_nonce: rand::random::<u64>() & 0xFFFF_FFFF_FFFF,
            wamid_seq: AtomicU64::new(1),
            template_seq: AtomicU64::new(1),
            webhooks,
            media: media::MediaStore::default(),
            users: crate::users::Users::default(),
            routing: thread_control::Routing::default(),
            flows: flows::Flows::default(),
            runtime,
        };
        for (i, waba) in sim.numbers.wabas().into_iter().enumerate() {
            let Some(registry) = sim.registry(waba) else {
                continue;
            };
            let mut reg = registry.write().unwrap_or_else(|p| p.into_inner());
            for s in seeds.iter().cloned() {
                let id =
                    s.id.filter(|_| i == 0)
                        .unwrap_or_else(|| sim.next_template_id());
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

    pub(crate) fn next_wamid(&self) -> String {
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

    /// Records an accepted send (unless the number's throughput or a fault refuses it) and queues its status
    /// webhooks. A fault with HTTP 200 accepts the send and fails it by webhook, as
    /// the platform does for e.g. 131050.
    pub fn accept_send(&self, a: Accepted<'_>) -> Result<SendOutcome, Refusal> {
        // The number's throughput comes first: past it the platform takes nothing.
        if !a.number.take_send() {
            return Err(Refusal::throughput(a.number));
        }
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
                        m.body.clone_from(&a.body);
                        a.endpoint.clone_into(&mut m.endpoint);
                        a.number.id().clone_into(&mut m.phone_number_id);
                        true
                    }
                    None => {
                        c.by_message.insert(
                            cb.clone(),
                            MessageStat {
                                count: 1,
                                wamid: wamid.clone(),
                                recipient: a.to_digits.clone(),
                                phone_number_id: a.number.id().to_owned(),
                                template: a.template.clone(),
                                kind: a.kind.to_owned(),
                                body: a.body.clone(),
                                endpoint: a.endpoint.to_owned(),
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
                    status_change(a.number, status("sent", Vec::new())),
                    status_change(a.number, status("delivered", Vec::new())),
                    status_change(a.number, status("read", Vec::new())),
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
                        status_change(a.number, status("sent", Vec::new())),
                        status_change(a.number, status("failed", vec![err])),
                    ]
                }
            };
            q.push(a.number.origin, changes);
        }
        Ok(SendOutcome { wamid })
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

    /// Clears counters, faults, latency and every number's quality and throughput; keeps
    /// templates (the service under test has them on record).
    pub fn reset(&self) {
        {
            let mut c = self.lock();
            *c = Counters::default();
        }
        self.set_latency_ms(0);
        self.numbers.reset();
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
}

/// A `messages` change holding one status of a send by `number`.
fn status_change(number: &Number, status: Status) -> Change {
    Change::Messages(MessagesValue {
        messaging_product: Some("whatsapp".to_owned()),
        metadata: Some(number.metadata()),
        statuses: vec![status],
        ..Default::default()
    })
}
