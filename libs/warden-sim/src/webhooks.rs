//! Asynchronous, bounded, retrying delivery of signed webhooks.
//!
//! Handlers push changes into a bounded queue and return at once; one sender task
//! drains it, batching up to `batch` changes into one POST envelope. A POST that fails
//! (connection refused, non-2xx) is retried with exponential backoff while newer
//! changes wait behind it, so the receiver sees them in order. When the queue is full
//! the oldest change is dropped and counted: memory stays bounded however long the
//! receiver is down.
//!
//! Each change carries its origin (the number whose account and app secret it belongs
//! to): a POST holds changes of one origin only, with that account as `entry[].id` and
//! signed with that number's `app_secret`, as the platform signs per app.

use bytes::Bytes;
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use warden_platform::signature::{self, Signer};
use warden_platform::webhook::{Change, WebhookEnvelope};

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A receiver answering 4xx (other than 408/429) is refusing the payload itself, not
/// down; retrying for the whole window would stall everything behind one batch.
const MAX_ATTEMPTS_ON_REFUSAL: u32 = 5;

#[derive(Debug, Default)]
pub struct Counters {
    pub enqueued: AtomicU64,
    pub delivered: AtomicU64,
    pub dropped: AtomicU64,
    pub posts: AtomicU64,
    pub failed_posts: AtomicU64,
}

/// Counters as `GET /sim/webhooks` reports them.
#[derive(Debug, Clone, Serialize)]
pub struct QueueStats {
    pub enabled: bool,
    pub queued: usize,
    pub in_flight: u64,
    pub enqueued: u64,
    pub delivered: u64,
    pub webhooks_dropped: u64,
    pub posts: u64,
    pub failed_posts: u64,
}

pub struct WebhookQueue {
    /// (origin, change): the origin is an index into [`Sender::origins`].
    queue: Mutex<VecDeque<(usize, Change)>>,
    notify: Notify,
    capacity: usize,
    in_flight: AtomicU64,
    pub counters: Counters,
}

impl WebhookQueue {
    pub fn new(capacity: usize) -> Self {
        Self {
            queue: Mutex::new(VecDeque::with_capacity(capacity.min(4096))),
            notify: Notify::new(),
            capacity: capacity.max(1),
            in_flight: AtomicU64::new(0),
            counters: Counters::default(),
        }
    }

    /// Queues changes of `origin` in order, dropping the oldest ones when full.
    pub fn push(&self, origin: usize, changes: impl IntoIterator<Item = Change>) {
        let mut dropped = 0;
        let mut added = 0;
        {
            let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
            for c in changes {
                if q.len() >= self.capacity {
                    q.pop_front();
                    dropped += 1;
                }
                q.push_back((origin, c));
                added += 1;
            }
        }
        self.counters.enqueued.fetch_add(added, Ordering::Relaxed);
        if dropped > 0 {
            self.counters.dropped.fetch_add(dropped, Ordering::Relaxed);
            tracing::warn!(dropped, "webhook queue full; dropped the oldest changes");
        }
        self.notify.notify_one();
    }

    /// Takes the next batch: up to `max` changes of the origin at the front, in order; it
    /// counts as in flight until `done`.
    fn take(&self, max: usize) -> (usize, Vec<Change>) {
        let mut q = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        let origin = q.front().map_or(0, |(o, _)| *o);
        let n = q.iter().take(max).take_while(|(o, _)| *o == origin).count();
        // Set under the lock so queued + in_flight + delivered + dropped always adds up.
        self.in_flight.store(n as u64, Ordering::Relaxed);
        (origin, q.drain(..n).map(|(_, c)| c).collect())
    }

    fn done(&self) {
        self.in_flight.store(0, Ordering::Relaxed);
    }

    pub fn len(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stats(&self) -> QueueStats {
        let c = &self.counters;
        QueueStats {
            enabled: true,
            queued: self.len(),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            enqueued: c.enqueued.load(Ordering::Relaxed),
            delivered: c.delivered.load(Ordering::Relaxed),
            webhooks_dropped: c.dropped.load(Ordering::Relaxed),
            posts: c.posts.load(Ordering::Relaxed),
            failed_posts: c.failed_posts.load(Ordering::Relaxed),
        }
    }
}

/// Where a change's POST says it comes from, and the secret it is signed with.
pub struct Origin {
    pub waba_id: String,
    pub signer: Signer,
}

pub struct Sender {
    pub queue: std::sync::Arc<WebhookQueue>,
    pub url: String,
    /// One per served number, in the same order (a change's origin indexes it).
    pub origins: Vec<Origin>,
    pub batch: usize,
    pub retry_for: Duration,
}

impl Sender {
    /// Runs until the task is aborted.
    pub async fn run(self) {
        let http = match reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(4)
            .build()
        {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(error = %e, "cannot build webhook client; webhooks disabled");
                return;
            }
        };
        loop {
            let (origin, batch) = self.queue.take(self.batch.max(1));
            if batch.is_empty() {
                self.queue.notify.notified().await;
                continue;
            }
            let n = batch.len() as u64;
            let Some(from) = self.origins.get(origin) else {
                // Cannot happen: origins come from the same list as the numbers.
                tracing::error!(origin, "webhook change of an unknown number; dropped");
                self.queue.counters.dropped.fetch_add(n, Ordering::Relaxed);
                self.queue.done();
                continue;
            };
            let envelope = WebhookEnvelope::new(from.waba_id.clone(), unix_now(), batch);
            match serde_json::to_vec(&envelope) {
                Ok(body) => {
                    self.deliver(&http, &from.signer, Bytes::from(body), n)
                        .await
                }
                Err(e) => {
                    // Cannot happen with these types; count it rather than loop on it.
                    tracing::error!(error = %e, "cannot serialize webhook batch");
                    self.queue.counters.dropped.fetch_add(n, Ordering::Relaxed);
                }
            }
            self.queue.done();
        }
    }

    async fn deliver(&self, http: &reqwest::Client, signer: &Signer, body: Bytes, n: u64) {
        let sig = signer.sign(&body);
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 0u32;
        let counters = &self.queue.counters;
        loop {
            attempt += 1;
            counters.posts.fetch_add(1, Ordering::Relaxed);
            let result = http
                .post(&self.url)
                .header("content-type", "application/json")
                .header(signature::HEADER, &sig)
                .body(body.clone())
                .send()
                .await;
            let refused = match result {
                Ok(resp) if resp.status().is_success() => {
                    // Drain the body so the connection goes back to the pool.
                    let _ = resp.bytes().await;
                    counters.delivered.fetch_add(n, Ordering::Relaxed);
                    if attempt > 1 {
                        tracing::info!(attempt, changes = n, "webhook delivered after retries");
                    }
                    return;
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let text = resp.text().await.unwrap_or_default();
                    tracing::warn!(status, attempt, body = %truncate(&text, 200), url = %self.url,
                        "webhook receiver refused a batch; will retry");
                    (400..500).contains(&status) && status != 408 && status != 429
                }
                Err(e) => {
                    tracing::warn!(error = %warden_platform::client::error_chain(&e), attempt, url = %self.url,
                        "webhook receiver unreachable; will retry");
                    false
                }
            };
            counters.failed_posts.fetch_add(1, Ordering::Relaxed);
            let out_of_time = started.elapsed() + backoff > self.retry_for;
            if out_of_time || (refused && attempt >= MAX_ATTEMPTS_ON_REFUSAL) {
                counters.dropped.fetch_add(n, Ordering::Relaxed);
                tracing::error!(attempt, changes = n, "giving up on a webhook batch");
                return;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
