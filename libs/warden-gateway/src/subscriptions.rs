//! Live resource updates: who is subscribed to which resource, and the NATS listener that
//! turns conversation hints (`warden_stream::hints`) into `notifications/resources/updated`.
//!
//! Two ways in, one registry:
//! - `resources/subscribe` / `resources/unsubscribe` (protocol 2025-11-25 and older): the
//!   notification goes to the session's peer.
//! - `subscriptions/listen` (2026-07-28): the notification goes through the listen request's
//!   sink (rmcp adds its subscription id); the entry lives as long as the request.
//!
//! The listener starts on the first subscription and ends with the registry. A hint for a
//! customer wakes `warden://inbox` and that customer's `warden://conversations/{id}`; a
//! subscriber then reads the resource again (the hint carries no content). A hint names
//! the number whose conversation changed: it wakes only subscribers whose reach covers
//! that number (an agent limited to business A's numbers never hears of business B's).

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::StreamExt;
use rmcp::RoleServer;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, SubscriptionSink};
use tokio::sync::OnceCell;
use warden_core::Reach;
use warden_stream::{Hint, Hints};

use crate::resources::ResourceUri;

/// Where one subscriber's notifications go.
#[derive(Clone)]
enum Sink {
    Session(Peer<RoleServer>),
    Listen(SubscriptionSink),
}

struct Entry {
    id: u64,
    /// As the client wrote it: notifications name the URI it subscribed to.
    uri: String,
    target: ResourceUri,
    sink: Sink,
    /// The subscriber's reach: hints about other numbers do not wake it.
    reach: Reach,
}

/// The subscriptions of one gateway (one MCP session over stdio).
pub(crate) struct Subscriptions {
    hints: Option<Hints>,
    entries: Mutex<Vec<Entry>>,
    next_id: std::sync::atomic::AtomicU64,
    listening: OnceCell<()>,
}

/// Why a subscription could not be served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubscribeError {
    #[error("live updates need NATS, and this gateway has no NATS connection")]
    NoNats,
    #[error("cannot listen for conversation hints on NATS: {0}")]
    Nats(String),
}

impl Subscriptions {
    pub fn new(hints: Option<Hints>) -> Arc<Self> {
        Arc::new(Subscriptions {
            hints,
            entries: Mutex::new(Vec::new()),
            next_id: std::sync::atomic::AtomicU64::new(1),
            listening: OnceCell::new(),
        })
    }

    /// `resources/subscribe`: notifications for `uri` go to `peer` until unsubscribed.
    /// Subscribing twice to one URI is one subscription.
    pub async fn subscribe(
        self: &Arc<Self>,
        uri: &str,
        target: ResourceUri,
        peer: Peer<RoleServer>,
        reach: Reach,
    ) -> Result<(), SubscribeError> {
        self.ensure_listening().await?;
        let mut entries = self.entries.lock().expect("subscriptions lock");
        if !entries
            .iter()
            .any(|e| e.uri == uri && matches!(e.sink, Sink::Session(_)))
        {
            let id = self.id();
            entries.push(Entry {
                id,
                uri: uri.to_string(),
                target,
                sink: Sink::Session(peer),
                reach,
            });
        }
        Ok(())
    }

    /// `resources/unsubscribe`: no more notifications for `uri` on this session.
    pub fn unsubscribe(&self, target: &ResourceUri) {
        self.entries
            .lock()
            .expect("subscriptions lock")
            .retain(|e| !(&e.target == target && matches!(e.sink, Sink::Session(_))));
    }

    /// `subscriptions/listen`: notifications for `uris` go to `sink` until [`Self::end`].
    pub async fn listen(
        self: &Arc<Self>,
        uris: Vec<(String, ResourceUri)>,
        sink: SubscriptionSink,
        reach: Reach,
    ) -> Result<Vec<u64>, SubscribeError> {
        self.ensure_listening().await?;
        let mut entries = self.entries.lock().expect("subscriptions lock");
        let mut ids = Vec::with_capacity(uris.len());
        for (uri, target) in uris {
            let id = self.id();
            ids.push(id);
            entries.push(Entry {
                id,
                uri,
                target,
                sink: Sink::Listen(sink.clone()),
                reach: reach.clone(),
            });
        }
        Ok(ids)
    }

    /// The end of a `subscriptions/listen` request.
    pub fn end(&self, ids: &[u64]) {
        self.entries
            .lock()
            .expect("subscriptions lock")
            .retain(|e| !ids.contains(&e.id));
    }

    /// How many subscriptions are active (tests).
    pub fn len(&self) -> usize {
        self.entries.lock().expect("subscriptions lock").len()
    }

    fn id(&self) -> u64 {
        self.next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Start the hint listener once. Returns only after NATS has registered the
    /// subscription, so a change committed after the client's subscribe is never missed.
    async fn ensure_listening(self: &Arc<Self>) -> Result<(), SubscribeError> {
        self.listening
            .get_or_try_init(|| async {
                let hints = self.hints.clone().ok_or(SubscribeError::NoNats)?;
                let stream = hints
                    .subscribe()
                    .await
                    .map_err(|e| SubscribeError::Nats(e.to_string()))?;
                hints
                    .round_trip(Duration::from_secs(2))
                    .await
                    .map_err(|e| SubscribeError::Nats(e.to_string()))?;
                tokio::spawn(listen_loop(Arc::downgrade(self), stream));
                tracing::info!(
                    subject = hints.wildcard(),
                    "listening for conversation hints"
                );
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// The sinks to wake for one hint (each URI once per sink).
    fn targets(&self, hint: &Hint) -> Vec<(u64, String, Sink)> {
        self.entries
            .lock()
            .expect("subscriptions lock")
            .iter()
            .filter(|e| e.target.woken_by(&hint.token))
            .filter(|e| hint.sender.as_deref().is_none_or(|s| e.reach.covers(s)))
            .map(|e| (e.id, e.uri.clone(), e.sink.clone()))
            .collect()
    }
}

async fn listen_loop(
    registry: Weak<Subscriptions>,
    mut hints: impl futures::Stream<Item = Hint> + Unpin,
) {
    while let Some(hint) = hints.next().await {
        let Some(registry) = registry.upgrade() else {
            return;
        };
        let mut gone = Vec::new();
        for (id, uri, sink) in registry.targets(&hint) {
            let sent = match &sink {
                Sink::Session(peer) => peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                    .await
                    .map_err(|e| e.to_string()),
                Sink::Listen(sink) => sink
                    .notify_resource_updated(uri.clone())
                    .await
                    .map_err(|e| e.to_string()),
            };
            match sent {
                Ok(()) => tracing::debug!(uri, "resource updated notification sent"),
                Err(e) => {
                    // The session or the listen request ended: drop the subscription.
                    tracing::debug!(uri, error = %e, "subscriber gone");
                    gone.push(id);
                }
            }
        }
        if !gone.is_empty() {
            registry.end(&gone);
        }
    }
    tracing::warn!("conversation hint subscription ended");
}
