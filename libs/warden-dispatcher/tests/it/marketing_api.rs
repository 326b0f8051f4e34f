//! The Marketing Messages API: a sender with `marketing_messages: true` sends its MARKETING
//! templates to `/{phone_number_id}/marketing_messages` (platform-sim records the endpoint
//! per message), everything else of it and everything of other senders to `/messages`;
//! the rate limit, retries and error classification are the same at both endpoints.

use crate::common;

use std::time::Duration;

use common::*;
use warden_core::{Core, SendKind, SendRequest, TemplateSend};
use warden_rules::kinds::MessageType;
use warden_rules::phone::canonicalize;

const WAIT: Duration = Duration::from_secs(60);

fn template(to: &str, name: &str, from: &str) -> SendRequest {
    SendRequest::from_tool(
        canonicalize(to).unwrap(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: name.into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        }),
        MessageType::Template,
        "test",
    )
    .from_sender(Some(from))
}

/// a1 with the Marketing Messages API (`STRICT`), a2 of the same business without it.
async fn harness() -> Harness {
    let [mut a1, a2, _] = TestSender::three();
    a1.marketing_messages = Some("STRICT");
    let h = Harness::with_senders(100, &[a1, a2]).await;
    for (name, category) in [
        ("warden_promo", "marketing"),
        ("warden_order_update", "utility"),
    ] {
        // a1 and a2 are of the default sender's business: stored under `default`.
        h.sql(&format!(
            "INSERT INTO templates (name, locale, category, status, body_text)
             VALUES ('{name}', 'en', '{category}', 'APPROVED', 'Hi {{{{1}}}}')
             ON CONFLICT DO NOTHING"
        ))
        .await;
    }
    h
}

fn endpoint(h: &Harness, id: uuid::Uuid) -> String {
    h.sim.stats().by_message[&id.to_string()].endpoint.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marketing_templates_take_the_marketing_api_only_from_a_sender_that_has_it() {
    let h = harness().await;
    let core = Core::new(h.deps.clone(), "test");
    let (d, stop) = h.dispatcher(h.config()).await;
    let sends = [
        ("a1", "warden_promo", "marketing_messages"),
        ("a2", "warden_promo", "messages"),
        ("a1", "warden_order_update", "messages"),
    ];
    for (from, name, want) in sends {
        let to = unique_phone();
        let accepted = core
            .send(template(&to, name, from))
            .await
            .unwrap_or_else(|e| panic!("{from} {name}: {e:?}"));
        let row = h.wait_status(accepted.message_id, &["sent"], WAIT).await;
        assert_eq!(row.attempt, 1, "{from} {name}");
        assert_eq!(endpoint(&h, accepted.message_id), want, "{from} {name}");
        assert_eq!(h.sim.count(accepted.message_id), 1);
    }
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_error_at_the_marketing_endpoint_is_retried_as_at_messages() {
    let h = harness().await;
    let core = Core::new(h.deps.clone(), "test");
    let (d, stop) = h.dispatcher(h.config()).await;
    // The same fault at either endpoint: throttled twice, then sent, at the same endpoint.
    for (from, want) in [("a1", "marketing_messages"), ("a2", "messages")] {
        let to = unique_phone();
        h.sim.fault(&to, 130429, 429, 2);
        let accepted = core
            .send(template(&to, "warden_promo", from))
            .await
            .unwrap();
        let row = h.wait_status(accepted.message_id, &["sent"], WAIT).await;
        assert_eq!(
            row.attempt, 3,
            "{from}: two refused attempts, then the send"
        );
        assert_eq!(row.retry_count, 2, "{from}");
        assert!(row.error_code.is_none(), "{from}: cleared once sent");
        assert_eq!(endpoint(&h, accepted.message_id), want, "{from}");
        assert_eq!(h.sim.count(accepted.message_id), 1, "{from}");
    }
    // A permanent error is classified the same way too: failed after one attempt.
    for from in ["a1", "a2"] {
        let to = unique_phone();
        h.sim.fault(&to, 132000, 400, 1);
        let accepted = core
            .send(template(&to, "warden_promo", from))
            .await
            .unwrap();
        let row = h.wait_status(accepted.message_id, &["failed"], WAIT).await;
        assert_eq!(row.attempt, 1, "{from}");
        assert_eq!(row.error_code, Some(132000), "{from}");
        assert_eq!(row.error_can_retry, Some(false), "{from}");
    }
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
