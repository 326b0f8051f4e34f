//! The delivery stream (docs/operations.md, Delivery).
//!
//! One JetStream stream (`DELIVERY_STREAM`, default `DELIVERY`) capturing
//! `<stream lower-case>.outbound.<channel>`: file storage, work-queue retention, and a
//! duplicate window so republishing a message (relay, retry) is harmless — the header
//! `Nats-Msg-Id` is the message id. Every process that publishes or consumes calls
//! [`DeliveryStream::connect`], which creates or updates the stream idempotently.

use std::collections::HashMap;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, stream};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use warden_settings::Settings;

pub mod hints;
pub use hints::{Hint, HintKind, Hints, HintsError};

/// How long JetStream remembers a `Nats-Msg-Id` (the relay's republish window is shorter).
pub const DUPLICATE_WINDOW: Duration = Duration::from_secs(10 * 60);

#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("cannot reach NATS at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("JetStream stream {stream}: {reason}")]
    Setup { stream: String, reason: String },
    #[error("publish to {subject} failed: {reason}")]
    Publish { subject: String, reason: String },
}

/// What travels on the stream: the id is enough (the row is the truth); the rest helps
/// operators reading the stream and lets the dispatcher skip a lookup of the channel.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DeliveryJob {
    pub message_id: Uuid,
    pub customer_id: String,
    pub channel: String,
    /// Which publish this is (1 = first, higher = a retry re-queue).
    #[serde(default)]
    pub attempt: i32,
}

#[derive(Clone)]
pub struct DeliveryStream {
    pub client: async_nats::Client,
    pub jetstream: jetstream::Context,
    pub stream_name: String,
    subject_prefix: String,
    /// Conversation hints on the same connection (NATS core, not the stream).
    pub hints: Hints,
}

impl DeliveryStream {
    /// Connect (bounded wait) and create or update the stream.
    pub async fn connect(settings: &Settings) -> Result<Self, StreamError> {
        let url = settings.nats_url.clone();
        let client = tokio::time::timeout(
            Duration::from_secs(5),
            async_nats::ConnectOptions::new()
                .name("warden")
                .retry_on_initial_connect()
                .max_reconnects(None)
                .connection_timeout(Duration::from_secs(2))
                .connect(&url),
        )
        .await
        .map_err(|_| StreamError::Unreachable {
            url: url.clone(),
            reason: "no answer within 5s".into(),
        })?
        .map_err(|e| StreamError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        // retry_on_initial_connect returns before the first connection: wait for it.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while client.connection_state() != async_nats::connection::State::Connected {
            if tokio::time::Instant::now() >= deadline {
                return Err(StreamError::Unreachable {
                    url,
                    reason: "connection refused or not a NATS server".into(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let jetstream = jetstream::new(client.clone());
        let this = DeliveryStream {
            hints: Hints::new(client.clone(), settings),
            client,
            jetstream,
            stream_name: settings.delivery_stream.clone(),
            subject_prefix: format!("{}.outbound", settings.delivery_stream.to_lowercase()),
        };
        this.ensure_stream().await?;
        Ok(this)
    }

    pub fn subject(&self, channel: &str) -> String {
        format!("{}.{}", self.subject_prefix, channel)
    }

    /// The wildcard subject the stream captures.
    pub fn subjects(&self) -> String {
        format!("{}.>", self.subject_prefix)
    }

    async fn ensure_stream(&self) -> Result<stream::Stream, StreamError> {
        let config = stream::Config {
            name: self.stream_name.clone(),
            subjects: vec![self.subjects()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            duplicate_window: DUPLICATE_WINDOW,
            discard: stream::DiscardPolicy::Old,
            ..Default::default()
        };
        let setup_err = |reason: String| StreamError::Setup {
            stream: self.stream_name.clone(),
            reason,
        };
        match self.jetstream.get_or_create_stream(config.clone()).await {
            Ok(mut stream) => {
                // Bring an older stream's config up to date (idempotent when unchanged).
                let current = stream
                    .info()
                    .await
                    .map_err(|e| setup_err(e.to_string()))?
                    .config
                    .clone();
                if current.subjects != config.subjects
                    || current.duplicate_window != config.duplicate_window
                {
                    self.jetstream
                        .update_stream(config)
                        .await
                        .map_err(|e| setup_err(e.to_string()))?;
                }
                Ok(stream)
            }
            Err(e) => Err(setup_err(e.to_string())),
        }
    }

    /// Publish a job (`Nats-Msg-Id` = its message id) and wait for the stream's ack.
    /// `trace` is the W3C context to carry.
    pub async fn publish(
        &self,
        job: &DeliveryJob,
        trace: &HashMap<String, String>,
    ) -> Result<PublishOutcome, StreamError> {
        self.publish_as(job, &job.message_id.to_string(), trace)
            .await
    }

    /// Publish with an explicit de-duplication id: a deliberate republish of a message the
    /// stream already saw (retry, campaign resume, lost message) needs a new one, or
    /// JetStream drops it inside the duplicate window.
    pub async fn publish_as(
        &self,
        job: &DeliveryJob,
        dedupe_id: &str,
        trace: &HashMap<String, String>,
    ) -> Result<PublishOutcome, StreamError> {
        self.publish_pending(job, dedupe_id, trace)
            .await?
            .acknowledged()
            .await
    }

    /// [`DeliveryStream::publish_as`] without waiting for the stream: the job is handed to the
    /// client (written to NATS in order with everything published before it), and the
    /// returned [`PendingAck`] resolves when the stream has stored it.
    pub async fn publish_pending(
        &self,
        job: &DeliveryJob,
        dedupe_id: &str,
        trace: &HashMap<String, String>,
    ) -> Result<PendingAck, StreamError> {
        let subject = self.subject(&job.channel);
        let mut headers = HeaderMap::new();
        headers.insert("Nats-Msg-Id", dedupe_id);
        for (k, v) in trace {
            headers.insert(k.as_str(), v.as_str());
        }
        let payload = serde_json::to_vec(job).expect("job serialises");
        let handed = tokio::time::timeout(
            ACK_WAIT,
            self.jetstream
                .publish_with_headers(subject.clone(), headers, payload.into()),
        )
        .await;
        let ack = match handed {
            Ok(Ok(ack)) => ack,
            Ok(Err(e)) => return Err(publish_error(&subject, e.to_string())),
            Err(_) => {
                return Err(publish_error(
                    &subject,
                    "not handed to NATS within 5s".into(),
                ));
            }
        };
        Ok(PendingAck { subject, ack })
    }

    /// Trace context headers of a received message, as a map.
    pub fn trace_headers(headers: Option<&HeaderMap>) -> HashMap<String, String> {
        let mut out = HashMap::new();
        if let Some(h) = headers {
            for key in ["traceparent", "tracestate"] {
                if let Some(v) = h.get(key) {
                    out.insert(key.to_string(), v.as_str().to_string());
                }
            }
        }
        out
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublishOutcome {
    pub sequence: u64,
    /// JetStream recognised the `Nats-Msg-Id` inside the duplicate window.
    pub duplicate: bool,
}

/// How long a publish may wait for the stream (handing over, then acknowledgement).
const ACK_WAIT: Duration = Duration::from_secs(5);

fn publish_error(subject: &str, reason: String) -> StreamError {
    StreamError::Publish {
        subject: subject.to_string(),
        reason,
    }
}

/// A job handed to NATS whose stream acknowledgement has not been read yet.
pub struct PendingAck {
    subject: String,
    ack: async_nats::jetstream::context::PublishAckFuture,
}

impl PendingAck {
    /// Wait (at most 5 s) until the stream has stored the job, or says why it did not.
    pub async fn acknowledged(self) -> Result<PublishOutcome, StreamError> {
        let subject = self.subject;
        let ack = tokio::time::timeout(ACK_WAIT, self.ack.into_future())
            .await
            .map_err(|_| publish_error(&subject, "no ack within 5s".into()))?
            .map_err(|e| publish_error(&subject, e.to_string()))?;
        Ok(PublishOutcome {
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }
}
