//! Step 5, publish: a recorded message handed to the delivery stream (`Nats-Msg-Id` =
//! its de-duplication id). A send answers once NATS has the message; the stream's
//! acknowledgement and the published mark come behind it (`delivery::outbox::Marks`), so
//! the send's one commit is the only wait on the database. The relay, retries and campaign
//! resumes publish through [`Core::publish`], which waits for both.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::json;
use uuid::Uuid;
use warden_rules::message_status::MessageStatus;
use warden_rules::phone::PhoneNumber;
use warden_store::models::Message;
use warden_store::schema::messages;
use warden_stream::DeliveryJob;

use super::{Accepted, SendRequest};
use crate::{Core, CoreError};

impl Core {
    /// Step 5, publish: the accepted message handed to the delivery stream (when NATS
    /// cannot take it now the row stays unpublished and the relay publishes it later), and
    /// a hint that the customer's conversation changed. The answer does not wait for the
    /// stream's acknowledgement: the published mark follows it (`delivery::outbox::Marks`).
    pub(super) async fn publish_accepted(
        &self,
        req: &SendRequest,
        message_id: Uuid,
        retry_count: i32,
        trace: &HashMap<String, String>,
    ) -> Accepted {
        let outgoing = Outgoing {
            message_id,
            retry_count,
            dedupe_id: dedupe_id(message_id, retry_count, None),
            phone: &req.phone,
            channel: &req.channel,
            trace,
        };
        let published = self.publish_with(outgoing, AckWait::Behind).await;
        // A new outbound message shows in the history and takes the customer out of the inbox.
        let sender = self.keys_for(req).sender;
        self.hint(
            [(req.phone.digits(), Some(sender.as_str()))],
            warden_stream::HintKind::Status,
        )
        .await;
        Accepted {
            message_id,
            status: MessageStatus::Queued,
            published,
            replayed: false,
            from: req.sender.clone().unwrap_or_default(),
        }
    }

    /// Publish an already-recorded `queued` message (relay, retries, campaign resume).
    /// Returns false when NATS could not take it (the row stays unpublished).
    pub async fn publish(&self, message_id: Uuid) -> Result<bool, CoreError> {
        let mut conn = self.pg().get().await?;
        let Some(row) = Message::find(&mut conn, message_id).await? else {
            return Err(CoreError::NotFound(format!(
                "no message with id {message_id}"
            )));
        };
        drop(conn);
        let phone = warden_rules::bsuid::customer_key(&row.customer_phone)
            .map_err(|e| CoreError::InvalidArgument(e.to_string()))?;
        let trace: HashMap<String, String> = row
            .trace_context
            .as_ref()
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let outgoing = Outgoing {
            message_id,
            retry_count: row.retry_count,
            dedupe_id: dedupe_id(message_id, row.retry_count, row.published_at),
            phone: &phone,
            channel: &row.channel,
            trace: &trace,
        };
        Ok(self.publish_with(outgoing, AckWait::Await).await)
    }

    /// Hand a recorded message to the stream. With [`AckWait::Await`] the stream's
    /// acknowledgement and the published mark come before the return; with
    /// [`AckWait::Behind`] a task waits for them. Returns false when NATS could not take
    /// the message now (the row stays unpublished for the relay).
    async fn publish_with(&self, out: Outgoing<'_>, wait: AckWait) -> bool {
        let Some(stream) = self.stream() else {
            return false;
        };
        let message_id = out.message_id;
        // Don't wait for a reconnect while NATS is down: the relay publishes later.
        if stream.client.connection_state() != async_nats::connection::State::Connected {
            tracing::warn!(%message_id, "NATS is not connected; message stays queued for the relay");
            return false;
        }
        let job = DeliveryJob {
            message_id,
            customer_id: out.phone.digits().to_string(),
            channel: out.channel.to_string(),
            attempt: 1,
        };
        let pending = match stream
            .publish_pending(&job, &out.dedupe_id, out.trace)
            .await
        {
            Ok(pending) => pending,
            Err(err) => {
                self.publish_failed(message_id, &err).await;
                return false;
            }
        };
        if matches!(wait, AckWait::Behind) {
            self.marks().add_pending();
        }
        let core = self.clone();
        let settle = async move {
            match pending.acknowledged().await {
                Ok(_) => {
                    match wait {
                        // A republish moves the mark on (it names the stream copy it made).
                        AckWait::Await => core.mark_published(message_id).await,
                        AckWait::Behind => {
                            core.marks().mark(core.pg(), message_id, out.retry_count)
                        }
                    }
                    true
                }
                Err(err) => {
                    core.publish_failed(message_id, &err).await;
                    if matches!(wait, AckWait::Behind) {
                        core.marks().no_mark(1);
                    }
                    false
                }
            }
        };
        match wait {
            AckWait::Await => settle.await,
            AckWait::Behind => {
                tokio::spawn(settle);
                true
            }
        }
    }

    async fn mark_published(&self, message_id: Uuid) {
        if let Ok(mut conn) = self.pg().get().await {
            let _ = diesel::update(messages::table.find(message_id))
                .set(messages::published_at.eq(diesel::dsl::now))
                .execute(&mut conn)
                .await;
        }
    }

    /// A publish NATS did not take: logged and audited; the row stays for the relay.
    async fn publish_failed(&self, message_id: Uuid, err: &warden_stream::StreamError) {
        tracing::warn!(%message_id, error = %err, "publish failed; message stays queued for the relay");
        if let Ok(mut conn) = self.pg().get().await {
            let _ = warden_store::audit::record(
                &mut conn,
                self.actor(),
                "publish_failed",
                "message",
                &message_id.to_string(),
                json!({"error": err.to_string()}),
            )
            .await;
        }
    }
}

/// A recorded message on its way to the stream.
struct Outgoing<'a> {
    message_id: Uuid,
    retry_count: i32,
    dedupe_id: String,
    phone: &'a PhoneNumber,
    channel: &'a str,
    trace: &'a HashMap<String, String>,
}

/// Whether a publish returns before or after the stream's acknowledgement.
#[derive(Clone, Copy)]
enum AckWait {
    /// Wait for it (and the published mark): callers that count what the stream took.
    Await,
    /// Return once NATS has the message; a task reads the ack and writes the mark.
    Behind,
}

/// The stream's de-duplication id of a publish. The first publish of a message uses its id
/// (the stream de-duplicates on it), so racing publishers of the same row collapse into one
/// stream message.
/// A retry gets a new id per retry; a republish of a row the stream already took (campaign
/// resume, a lost stream message) one per previous publish time — still shared by racers.
pub fn dedupe_id(
    message_id: Uuid,
    retry_count: i32,
    published_at: Option<DateTime<Utc>>,
) -> String {
    match (retry_count, published_at) {
        (0, None) => message_id.to_string(),
        (n, None) => format!("{message_id}:r{n}"),
        (n, Some(at)) => format!("{message_id}:r{n}:{}", at.timestamp_micros()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_publish_uses_the_message_id_and_republishes_get_new_ids() {
        let id = Uuid::now_v7();
        let at = Utc::now();
        assert_eq!(dedupe_id(id, 0, None), id.to_string());
        assert_ne!(dedupe_id(id, 1, None), dedupe_id(id, 0, None));
        assert_ne!(dedupe_id(id, 1, None), dedupe_id(id, 2, None));
        assert_ne!(dedupe_id(id, 0, Some(at)), dedupe_id(id, 0, None));
        // Two publishers racing on the same row state share the id (the stream keeps one).
        assert_eq!(dedupe_id(id, 0, Some(at)), dedupe_id(id, 0, Some(at)));
    }
}
