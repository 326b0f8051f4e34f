//! MESSAGE_CONTENT_RETENTION: the scheduler's retention job redacts the content of settled
//! messages older than the retention; type, status and timestamps stay; messages still on
//! their way and newer ones keep theirs.

use crate::common;

use std::time::Duration;

use common::*;

/// A message row with `content` `{"text": {"body": "secret"}}`, created `days` ago.
async fn message(h: &Harness, phone: &str, direction: &str, status: &str, days: i64) -> String {
    let id = uuid::Uuid::new_v4();
    h.exec(&format!(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, content, created_at, updated_at)
         VALUES ('{id}', '{phone}', 'whatsapp', '{direction}', 'text', 'service', '{status}',
                 '{{\"text\": {{\"body\": \"secret\"}}}}'::jsonb, now() - interval '{days} days', now() - interval '{days} days')"
    ))
    .await;
    id.to_string()
}

async fn redacted(h: &Harness, id: &str) -> bool {
    h.count(&format!(
        "SELECT count(*) AS n FROM messages WHERE id = '{id}' AND redacted_at IS NOT NULL AND content = '{{}}'::jsonb"
    ))
    .await
        == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_past_the_retention_is_redacted_and_the_rest_kept() {
    let h = harness(false).await;
    let phone = "628120000555";
    h.exec(&format!(
        "INSERT INTO customers (phone, country) VALUES ('{phone}', 'ID')"
    ))
    .await;
    let old_inbound = message(&h, phone, "inbound", "received", 100).await;
    let old_read = message(&h, phone, "outbound", "read", 95).await;
    let old_failed = message(&h, phone, "outbound", "failed", 91).await;
    let old_queued = message(&h, phone, "outbound", "queued", 100).await;
    let recent = message(&h, phone, "inbound", "received", 89).await;

    let mut config = h.config("retention-test");
    config.content_retention = Duration::from_secs(90 * 86_400);
    config.retention_batch = 2;
    let s = warden_scheduler::Scheduler::new(h.core.clone(), config);

    // Batches of two: the first poll leaves work and says so; the next one finishes.
    let first = s.tick().await.expect("tick");
    assert_eq!(first.content_redacted, 2);
    assert!(first.more_work);
    let second = s.tick().await.expect("tick");
    assert_eq!(second.content_redacted, 1);

    for id in [&old_inbound, &old_read, &old_failed] {
        assert!(redacted(&h, id).await, "{id} redacted");
    }
    assert!(
        !redacted(&h, &old_queued).await,
        "a queued message keeps its content"
    );
    assert!(
        !redacted(&h, &recent).await,
        "a recent message keeps its content"
    );
    // Type, status and timestamps stay.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE id = '{old_read}' AND status = 'read' AND message_type = 'text' AND created_at < now() - interval '94 days'"
        ))
        .await,
        1
    );
    // One audit row per run that redacted something.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'message_content_redacted'")
            .await,
        2
    );
    // Ran within the last minute: the next poll does not scan again.
    let third = s.tick().await.expect("tick");
    assert_eq!(third.content_redacted, 0);
}
