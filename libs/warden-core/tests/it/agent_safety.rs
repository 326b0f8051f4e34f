//! Agent safety against real Postgres and NATS: idempotency keys (a retry after a
//! timeout, 20 concurrent identical calls, a key reused for another text), the duplicate
//! guard at its window's edge (injectable clock), the recipient allowlist by phone and by
//! tag, and the content filter on a caption and on a template's URL parameter.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::json;
use warden_core::send::idempotency::IdempotencyKey;
use warden_core::{RefusalMode, SendError, SendKind, SendRequest, TemplateSend, conversations};
use warden_rules::compliance::ReasonCode;
use warden_rules::kinds::{ContentKind, MessageType};
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_rules::safety::idempotency::fingerprint;
use warden_store::schema::{customers, idempotency_keys, messages, templates};

use crate::common::TestCore;

const POLICIES: &str = r#"
version: 1
policies:
  - id: no_repeats
    type: duplicate_guard
    window: 10m
    message_types: [service, utility, marketing]
  - id: staging_only
    type: recipient_allowlist
    phones: ["+15550100001"]
    tags: [qa]
    enabled: false
  - id: safe_content
    type: content_filter
    deny_patterns: ["(?i)\\bpassword\\b"]
    link_domains: [example.com]
"#;

async fn harness(policies: &str) -> TestCore {
    TestCore::builder()
        .pool_size(24)
        .policies_yaml(policies)
        .stream_if_up()
        .settable_clock()
        .build()
        .await
}

// This module's own steps, on the crate's harness.
impl TestCore {
    async fn open_window(&self, p: &PhoneNumber) {
        let mut conn = self.core.pg().get().await.unwrap();
        warden_core::customers::ensure(&mut conn, p).await.unwrap();
        conversations::record_inbound(
            &mut conn,
            p,
            "whatsapp",
            "default",
            Utc::now() - TimeDelta::minutes(1),
        )
        .await
        .unwrap();
    }

    async fn messages_to(&self, p: &PhoneNumber) -> Vec<(uuid::Uuid, DateTime<Utc>)> {
        let mut conn = self.core.pg().get().await.unwrap();
        messages::table
            .filter(messages::customer_phone.eq(p.digits()))
            .order(messages::created_at.asc())
            .select((messages::id, messages::created_at))
            .load(&mut conn)
            .await
            .unwrap()
    }

    async fn text(
        &self,
        p: &PhoneNumber,
        body: &str,
        key: Option<&str>,
    ) -> Result<warden_core::Accepted, SendError> {
        self.send(p, SendKind::Text { body: body.into() }, key)
            .await
    }

    async fn send(
        &self,
        p: &PhoneNumber,
        kind: SendKind,
        key: Option<&str>,
    ) -> Result<warden_core::Accepted, SendError> {
        let key = key.map(|k| IdempotencyKey {
            actor: "agent-a".into(),
            key: k.into(),
            tool: "send_message".into(),
            args_hash: fingerprint("send_message", &kind.to_content()),
        });
        self.core
            .send_keyed(
                SendRequest::from_tool(p.clone(), "whatsapp", kind, MessageType::Service, "test"),
                key,
            )
            .await
    }
}

fn phone() -> PhoneNumber {
    let id = uuid::Uuid::new_v4().as_u128();
    canonicalize(&format!("62{}", 8_000_000_000 + (id % 999_999_999) as u64)).unwrap()
}

fn refused(r: Result<warden_core::Accepted, SendError>) -> warden_rules::compliance::Decision {
    match r {
        Err(SendError::Refused(d)) => d,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_the_same_key_after_a_timeout_sends_one_message() {
    let h = Arc::new(harness(POLICIES).await);
    let p = phone();
    h.open_window(&p).await;
    // The host gives up on the first call before it answers (it still runs to the end)...
    let mut first = {
        let (h, p) = (Arc::clone(&h), p.clone());
        tokio::spawn(async move { h.text(&p, "Your order shipped", Some("order-1")).await })
    };
    // (Waiting on `&mut first` leaves the task running when the wait times out.)
    let _ = tokio::time::timeout(Duration::from_millis(1), &mut first).await;
    // ...and retries with the same key.
    let retry = h
        .text(&p, "Your order shipped", Some("order-1"))
        .await
        .unwrap();
    let first = first.await.unwrap().unwrap();
    assert_eq!(first.message_id, retry.message_id);
    assert!(
        first.replayed != retry.replayed,
        "exactly one of them created it"
    );
    // A third retry after both finished: still the same message, replayed.
    let again = h
        .text(&p, "Your order shipped", Some("order-1"))
        .await
        .unwrap();
    assert_eq!((again.message_id, again.replayed), (first.message_id, true));
    assert_eq!(h.messages_to(&p).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_concurrent_identical_calls_make_one_message_and_nineteen_replays() {
    let h = Arc::new(harness(POLICIES).await);
    let p = phone();
    h.open_window(&p).await;
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let (h, p) = (Arc::clone(&h), p.clone());
            tokio::spawn(async move { h.text(&p, "On its way", Some("k-20")).await })
        })
        .collect();
    let mut results = Vec::new();
    for c in calls {
        results.push(c.await.unwrap().expect("every call answers the message"));
    }
    let ids: std::collections::HashSet<_> = results.iter().map(|a| a.message_id).collect();
    assert_eq!(ids.len(), 1, "{results:?}");
    assert_eq!(results.iter().filter(|a| a.replayed).count(), 19);
    assert_eq!(h.messages_to(&p).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_with_other_text_is_invalid_argument_naming_the_key() {
    let h = harness(POLICIES).await;
    let p = phone();
    h.open_window(&p).await;
    h.text(&p, "first text", Some("k")).await.unwrap();
    let e = h.text(&p, "another text", Some("k")).await.unwrap_err();
    assert_eq!(e.code(), "INVALID_ARGUMENT");
    assert!(e.to_string().contains("`idempotency_key`"), "{e}");
    assert_eq!(h.messages_to(&p).await.len(), 1);
    // Another agent's same key is its own.
    let other = h
        .core
        .send_keyed(
            SendRequest::from_tool(
                p.clone(),
                "whatsapp",
                SendKind::Text { body: "x y".into() },
                MessageType::Service,
                "test",
            ),
            Some(IdempotencyKey {
                actor: "agent-b".into(),
                key: "k".into(),
                tool: "send_message".into(),
                args_hash: "other".into(),
            }),
        )
        .await
        .unwrap();
    assert!(!other.replayed);
    // A refused call keeps no key: the same key is judged afresh (and refused again).
    let bad = h.text(&p, "your password is 1", Some("k2")).await;
    assert_eq!(refused(bad).policy_id.as_deref(), Some("safe_content"));
    let mut conn = h.core.pg().get().await.unwrap();
    let keys: i64 = idempotency_keys::table
        .filter(idempotency_keys::key.eq("k2"))
        .count()
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(keys, 0);
    // Keys older than 24 h are purged.
    let purged = warden_core::send::idempotency::purge_expired(
        h.core.pg(),
        Utc::now() + TimeDelta::hours(25),
        100,
    )
    .await
    .unwrap();
    assert_eq!(purged, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_duplicate_guard_refuses_at_9m59s_and_allows_at_10m1s() {
    let h = harness(POLICIES).await;
    let p = phone();
    h.open_window(&p).await;
    let first = h.text(&p, "Your code is ready", None).await.unwrap();
    let (_, at) = h.messages_to(&p).await[0];
    h.set_clock(at + TimeDelta::minutes(9) + TimeDelta::seconds(59));
    let d = refused(h.text(&p, "  your CODE is\nready ", None).await);
    assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
    assert_eq!(d.policy_id.as_deref(), Some("no_repeats"));
    assert!(
        d.human_explanation.contains(&first.message_id.to_string()),
        "{d:?}"
    );
    // Other text is not a duplicate.
    h.text(&p, "Your code is ready!", None).await.unwrap();
    h.set_clock(at + TimeDelta::minutes(10) + TimeDelta::seconds(1));
    h.text(&p, "your code is ready", None).await.unwrap();
    // check_compliance with a text judges it the same way (a minute after the last send).
    let (_, last) = *h.messages_to(&p).await.last().unwrap();
    h.set_clock(last + TimeDelta::minutes(1));
    let d = h
        .core
        .check_content(
            &p,
            ContentKind::FreeForm.category(),
            &SendKind::Text {
                body: "Your code is READY".into(),
            }
            .to_content(),
        )
        .await
        .unwrap()
        .expect("a duplicate of the last send");
    assert_eq!(d.policy_id.as_deref(), Some("no_repeats"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_allowlist_admits_listed_phones_and_tagged_customers_only() {
    let h = harness(&POLICIES.replace("    enabled: false\n", "")).await;
    let listed = canonicalize("+15550100001").unwrap();
    let tagged = phone();
    let other = phone();
    for p in [&listed, &tagged, &other] {
        h.open_window(p).await;
    }
    {
        let mut conn = h.core.pg().get().await.unwrap();
        diesel::update(customers::table.find(tagged.digits()))
            .set(customers::tags.eq(vec!["QA".to_string()]))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    h.text(&listed, "hello", None).await.unwrap();
    h.text(&tagged, "hello", None).await.unwrap();
    let d = refused(h.text(&other, "hello", None).await);
    assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
    assert_eq!(d.policy_id.as_deref(), Some("staging_only"));
    // check_compliance shows the same decision.
    let c = h
        .core
        .check(&other, None, ContentKind::FreeForm, Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (c.allowed, c.policy_id.as_deref()),
        (false, Some("staging_only"))
    );
    // The refusal is what get_customer_context shows.
    let mut conn = h.core.pg().get().await.unwrap();
    let last = warden_core::send::refusals::last_refusal(&mut conn, other.digits(), "default")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last.policy_id.as_deref(), Some("staging_only"));
    assert_eq!(last.reason_code, "POLICY_RESTRICTION");
}

/// A scheduled or campaign message refused when it comes due is recorded as a failed row,
/// not answered to a caller: it is still the customer's last refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_recorded_when_a_message_came_due_is_the_customers_last_refusal() {
    let h = harness(&POLICIES.replace("    enabled: false\n", "")).await;
    let other = phone();
    h.open_window(&other).await;
    let mut req = SendRequest::from_tool(
        other.clone(),
        "whatsapp",
        SendKind::Text {
            body: "hello".into(),
        },
        MessageType::Service,
        "scheduler",
    );
    req.refusal = RefusalMode::RecordFailed;
    let r = h.core.send(req).await;
    assert!(matches!(r, Err(SendError::RefusedRecorded { .. })));
    let mut conn = h.core.pg().get().await.unwrap();
    let last = warden_core::send::refusals::last_refusal(&mut conn, other.digits(), "default")
        .await
        .unwrap()
        .expect("the recorded refusal");
    assert_eq!(last.policy_id.as_deref(), Some("staging_only"));
    assert_eq!(last.reason_code, "POLICY_RESTRICTION");
    assert!(!last.explanation.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_unlisted_domains_are_refused_in_captions_and_template_url_parameters() {
    let h = harness(POLICIES).await;
    let p = phone();
    h.open_window(&p).await;
    let image = |caption: &str| {
        SendKind::from_content(&json!({"type": "image", "image": {
            "link": "https://cdn.elsewhere.net/a.jpg", "caption": caption}}))
        .unwrap()
    };
    let d = refused(
        h.send(&p, image("Deal at https://evil.net/x today"), None)
            .await,
    );
    assert_eq!(d.policy_id.as_deref(), Some("safe_content"));
    assert!(d.human_explanation.contains("evil.net"), "{d:?}");
    assert!(
        !d.human_explanation.contains("Deal at"),
        "never echoes the message"
    );
    h.send(&p, image("Deal at https://shop.example.com/x."), None)
        .await
        .unwrap();

    // A template whose URL button takes a parameter.
    {
        let mut conn = h.core.pg().get().await.unwrap();
        diesel::insert_into(templates::table)
            .values((
                templates::name.eq("track"),
                templates::locale.eq("en"),
                templates::category.eq("utility"),
                templates::status.eq("APPROVED"),
                templates::body_text.eq("Order {{1}}"),
                templates::components.eq(json!([
                    {"type": "BODY", "text": "Order {{1}}"},
                    {"type": "BUTTONS", "buttons": [{"type": "URL", "text": "Track", "url": "https://example.com/{{1}}"}]}
                ])),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    // Every field is set; the update keeps this literal as it is when a field is added.
    #[allow(clippy::needless_update)]
    let template = |param: &str| {
        SendKind::Template(TemplateSend {
            name: "track".into(),
            locale: "en".into(),
            variables: vec!["A1".into()],
            components: vec![json!({"type": "button", "sub_type": "url", "index": "0",
                                "parameters": [{"type": "text", "text": param}]})],
            ..Default::default()
        })
    };
    let req = |kind| {
        let mut r =
            SendRequest::from_tool(p.clone(), "whatsapp", kind, MessageType::Template, "test");
        r.message_type = MessageType::Template;
        r
    };
    let d = match h.core.send(req(template("https://evil.net/t/1"))).await {
        Err(SendError::Refused(d)) => d,
        other => panic!("{other:?}"),
    };
    assert_eq!(d.policy_id.as_deref(), Some("safe_content"));
    assert!(d.human_explanation.contains("evil.net"), "{d:?}");
    h.core.send(req(template("t/1"))).await.unwrap();
}
