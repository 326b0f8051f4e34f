//! Conversation hints: "something changed for this customer" on NATS core (not JetStream).
//!
//! Whoever changes what a conversation shows (the webhook storing an inbound message or a
//! status, the dispatcher recording an outcome, a send being accepted) publishes a hint on
//! `<stream lower-case>.hints.conversations.<customer token>`; gateways subscribed to the
//! wildcard tell their MCP subscribers `notifications/resources/updated`. A hint carries no
//! content (only the kind of change) and may be lost: it is a wake-up, the database stays
//! the truth, and readers always read it again. Namespacing by the stream name keeps
//! deployments (and test runs) sharing one NATS apart, like the delivery subjects.

use futures::StreamExt;
use warden_settings::Settings;

/// What kind of change a hint announces (its payload; no message content ever).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HintKind {
    /// A new inbound message was stored.
    Inbound,
    /// An outbound message moved (accepted, sent, delivered, read, failed).
    Status,
    /// Content was erased (`warden-admin customers forget`).
    Redacted,
    /// Who holds the conversation changed (a person, another app, the agents, idle).
    Holder,
}

impl HintKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HintKind::Inbound => "inbound",
            HintKind::Status => "status",
            HintKind::Redacted => "redacted",
            HintKind::Holder => "holder",
        }
    }

    fn parse(s: &[u8]) -> Option<Self> {
        match s {
            b"inbound" => Some(HintKind::Inbound),
            b"status" => Some(HintKind::Status),
            b"redacted" => Some(HintKind::Redacted),
            b"holder" => Some(HintKind::Holder),
            _ => None,
        }
    }
}

/// One received hint: the customer's subject token, the kind, and the number whose
/// conversation changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    pub token: String,
    pub kind: Option<HintKind>,
    /// The stored key of the business number whose conversation with the customer
    /// changed; `None` for a change to every number's (content erased), which wakes every
    /// subscriber of the customer. A gateway wakes only subscribers that reach it.
    pub sender: Option<String>,
}

/// A hint's payload: its kind, then the sender's stored key after a space when known.
fn payload(kind: HintKind, sender: Option<&str>) -> Vec<u8> {
    match sender {
        Some(s) => format!("{} {s}", kind.as_str()).into_bytes(),
        None => kind.as_str().as_bytes().to_vec(),
    }
}

fn parse_payload(payload: &[u8]) -> (Option<HintKind>, Option<String>) {
    match payload.iter().position(|b| *b == b' ') {
        Some(i) => (
            HintKind::parse(&payload[..i]),
            std::str::from_utf8(&payload[i + 1..])
                .ok()
                .filter(|s| !s.is_empty())
                .map(str::to_string),
        ),
        None => (HintKind::parse(payload), None),
    }
}

/// The subject token for a customer id. Phone numbers (digits) are their own token; any
/// character NATS gives a meaning to (`.`, `*`, `>`, spaces) becomes `_`. Two customers
/// sharing a token only cost each other a spurious wake-up.
pub fn token(customer: &str) -> String {
    let t: String = customer
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if t.is_empty() { "_".into() } else { t }
}

/// Why a hints connection could not be made, flushed or checked.
#[derive(Debug, thiserror::Error)]
pub enum HintsError {
    /// No answer from NATS in time (connect or round trip).
    #[error("NATS did not answer within {0:?}")]
    NoAnswer(std::time::Duration),
    /// The published hints were not taken in time.
    #[error("NATS did not take the hints within {0:?}")]
    NotTaken(std::time::Duration),
    #[error(transparent)]
    Connect(#[from] async_nats::ConnectError),
    #[error(transparent)]
    Flush(#[from] async_nats::client::FlushError),
    #[error(transparent)]
    Request(#[from] async_nats::RequestError),
}

/// Publishes and subscribes conversation hints on one NATS connection.
#[derive(Clone)]
pub struct Hints {
    client: async_nats::Client,
    prefix: String,
}

impl Hints {
    pub fn new(client: async_nats::Client, settings: &Settings) -> Self {
        Hints {
            client,
            prefix: format!(
                "{}.hints.conversations",
                settings.delivery_stream.to_lowercase()
            ),
        }
    }

    /// A connection of its own, for a process that only announces changes (warden-admin):
    /// no JetStream, one bounded attempt.
    pub async fn connect(
        settings: &Settings,
        within: std::time::Duration,
    ) -> Result<Self, HintsError> {
        let options = async_nats::ConnectOptions::new()
            .name("warden-hints")
            .connection_timeout(within);
        match tokio::time::timeout(within, options.connect(&settings.nats_url)).await {
            Err(_) => Err(HintsError::NoAnswer(within)),
            Ok(Err(e)) => Err(e.into()),
            Ok(Ok(client)) => Ok(Hints::new(client, settings)),
        }
    }

    /// Wait until everything published so far reached the server (before a short-lived
    /// process exits).
    pub async fn flush(&self, within: std::time::Duration) -> Result<(), HintsError> {
        match tokio::time::timeout(within, self.client.flush()).await {
            Err(_) => Err(HintsError::NotTaken(within)),
            Ok(r) => Ok(r?),
        }
    }

    /// The subject of one customer's hints.
    pub fn subject(&self, customer: &str) -> String {
        format!("{}.{}", self.prefix, token(customer))
    }

    /// The wildcard a gateway subscribes to.
    pub fn wildcard(&self) -> String {
        format!("{}.*", self.prefix)
    }

    /// Publish one hint. Fire and forget: a lost hint delays a notification, never
    /// loses data, so a NATS problem is logged and not returned.
    pub async fn publish(&self, customer: &str, sender: Option<&str>, kind: HintKind) {
        let subject = self.subject(customer);
        if let Err(e) = self
            .client
            .publish(subject, payload(kind, sender).into())
            .await
        {
            tracing::warn!(error = %e, "conversation hint not published");
        }
    }

    /// Publish a hint for each (customer, sender) (once each).
    pub async fn publish_all<'a>(
        &self,
        changed: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
        kind: HintKind,
    ) {
        // No explicit flush: the client writes buffered publishes out as soon as its
        // connection task runs, and a flush per call would add a wait to every send.
        let mut seen = std::collections::HashSet::new();
        for (customer, sender) in changed {
            if seen.insert((customer, sender)) {
                self.publish(customer, sender, kind).await;
            }
        }
    }

    /// One round trip to the NATS server: when it returns, the server has processed
    /// everything this connection sent before (a subscription is in place). A request
    /// nobody answers comes back at once as "no responders".
    pub async fn round_trip(&self, within: std::time::Duration) -> Result<(), HintsError> {
        use async_nats::RequestErrorKind;
        let subject = format!("_warden.ping.{}", uuid::Uuid::new_v4().simple());
        match tokio::time::timeout(within, self.client.request(subject, "".into())).await {
            Err(_) => Err(HintsError::NoAnswer(within)),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.kind() == RequestErrorKind::NoResponders => Ok(()),
            Ok(Err(e)) => Err(e.into()),
        }
    }

    /// Every hint from now on, as a stream of [`Hint`]s.
    pub async fn subscribe(
        &self,
    ) -> Result<impl futures::Stream<Item = Hint> + Send + 'static, async_nats::SubscribeError>
    {
        let prefix_len = self.prefix.len() + 1;
        let sub = self.client.subscribe(self.wildcard()).await?;
        Ok(sub.map(move |m| {
            let (kind, sender) = parse_payload(&m.payload);
            Hint {
                token: m
                    .subject
                    .as_str()
                    .get(prefix_len..)
                    .unwrap_or("")
                    .to_string(),
                kind,
                sender,
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip_with_and_without_a_sender() {
        for kind in [
            HintKind::Inbound,
            HintKind::Status,
            HintKind::Redacted,
            HintKind::Holder,
        ] {
            assert_eq!(parse_payload(&payload(kind, None)), (Some(kind), None));
            assert_eq!(
                parse_payload(&payload(kind, Some("a1"))),
                (Some(kind), Some("a1".to_string()))
            );
        }
        // What a gateway of the previous release published: a kind only.
        assert_eq!(parse_payload(b"status"), (Some(HintKind::Status), None));
    }

    #[test]
    fn tokens_are_single_subject_tokens() {
        assert_eq!(token("628123456789"), "628123456789");
        assert_eq!(token("US.ENT.abc"), "US_ENT_abc");
        assert_eq!(token("a*b>c d"), "a_b_c_d");
        assert_eq!(token(""), "_");
    }
}
