//! The business portfolio's messaging limit in the one send path, against
//! real Postgres: the limit at its edge, a customer already reached does not count again,
//! messages inside an open care window do not count, two concurrent sends at limit - 1
//! never both pass, and the 24 h window rolls (rows back-dated).

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_core::{Core, SendError, SendKind, SendRequest, TemplateSend};
use warden_rules::compliance::ReasonCode;
use warden_rules::kinds::MessageType;
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_rules::platform_limits::MessagingLimit;
use warden_store::schema::templates;

use crate::common::TestCore;

async fn harness() -> TestCore {
    let h = TestCore::builder().build().await;
    let core = &h.core;
    let mut conn = core.pg().get().await.unwrap();
    diesel::insert_into(templates::table)
        .values((
            templates::name.eq("order_update"),
            templates::locale.eq("en"),
            templates::category.eq("utility"),
            templates::status.eq("APPROVED"),
            templates::body_text.eq("Hello {{1}}"),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    drop(conn);
    h
}

fn phone(i: u64) -> PhoneNumber {
    let salt = (uuid::Uuid::new_v4().as_u128() % 1_000_000) as u64;
    canonicalize(&format!("6281{:06}{:04}", salt, i)).unwrap()
}

fn template(to: &PhoneNumber) -> SendRequest {
    SendRequest::from_tool(
        to.clone(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: "order_update".into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        }),
        MessageType::Template,
        "test",
    )
}

async fn set_limit(core: &Core, tier: &str) {
    assert!(
        warden_core::account::portfolio::learn_from_platform(
            core.pg(),
            "default",
            tier,
            "get_account_quality",
            "test"
        )
        .await
        .unwrap()
    );
}

fn refused_by_limit(result: Result<warden_core::Accepted, SendError>) -> warden_rules::Decision {
    match result {
        Err(SendError::Refused(d)) => {
            assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
            assert!(
                d.human_explanation.starts_with("messaging_limit:"),
                "{}",
                d.human_explanation
            );
            assert_eq!(d.policy_id.as_deref(), Some("messaging_limit"));
            d
        }
        other => panic!("expected a messaging_limit refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_sends_stop_exactly_at_the_limit() {
    let h = harness().await;
    // Unknown limit: nothing is enforced, but reach is counted.
    let first = phone(0);
    h.core.send(template(&first)).await.unwrap();
    // A limit of 3 unique customers (a number, as business_capability_update gives it).
    set_limit(&h.core, "3").await;
    let usage = warden_core::account::portfolio::current_usage(h.core.pg(), "default", Utc::now())
        .await
        .unwrap();
    assert_eq!(
        (usage.used, usage.limit),
        (1, Some(MessagingLimit::Users(3)))
    );
    let (second, third, fourth) = (phone(1), phone(2), phone(3));
    h.core.send(template(&second)).await.unwrap();
    h.core.send(template(&third)).await.unwrap(); // 3 of 3: the edge still passes
    let d = refused_by_limit(h.core.send(template(&fourth)).await);
    assert!(d.retry_at.is_some_and(|t| t > Utc::now()));
    // A customer already reached in the last 24 h does not count again.
    h.core.send(template(&second)).await.unwrap();
    // A template inside an open care window is not business-initiated.
    h.sql(&format!(
        "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
             VALUES ('{}', 'whatsapp', now() - interval '1 hour', now() + interval '23 hours')",
        fourth.digits()
    ))
    .await;
    h.core.send(template(&fourth)).await.unwrap();
    let fifth = phone(5);
    refused_by_limit(h.core.send(template(&fifth)).await);
    // The window rolls: the first customer was reached more than 24 h ago.
    h.sql(
        &format!(
            "UPDATE portfolio_reach SET reached_at = now() - interval '24 hours 1 minute' WHERE customer_phone = '{}'",
            first.digits()
        ),
    )
    .await;
    h.core.send(template(&fifth)).await.unwrap();
    let usage = warden_core::account::portfolio::current_usage(h.core.pg(), "default", Utc::now())
        .await
        .unwrap();
    assert_eq!(usage.used, 3);
    // Unlimited: nothing refused.
    set_limit(&h.core, "TIER_UNLIMITED").await;
    h.core.send(template(&phone(6))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_sends_at_limit_minus_one_never_both_pass() {
    let h = harness().await;
    set_limit(&h.core, "TIER_250").await;
    // 249 customers reached (back-filled, as earlier sends would have left them).
    h.sql(
        "INSERT INTO portfolio_reach (customer_phone, reached_at, message_id)
         SELECT '6289' || lpad(i::text, 8, '0'), now() - interval '1 hour', gen_random_uuid()
         FROM generate_series(1, 249) AS i",
    )
    .await;
    for round in 0..5 {
        if round > 0 {
            // Back to 249 for the next round.
            h.sql("DELETE FROM portfolio_reach WHERE customer_phone NOT LIKE '6289%'")
                .await;
        }
        let (a, b) = (phone(10 + round * 2), phone(11 + round * 2));
        let (ra, rb) = tokio::join!(h.core.send(template(&a)), h.core.send(template(&b)));
        let passed = [ra.is_ok(), rb.is_ok()];
        assert_eq!(
            passed.iter().filter(|p| **p).count(),
            1,
            "round {round}: exactly one of two sends at 249/250 passes: {ra:?} {rb:?}"
        );
        for r in [ra, rb] {
            if r.is_err() {
                refused_by_limit(r);
            }
        }
    }
    let usage = warden_core::account::portfolio::current_usage(h.core.pg(), "default", Utc::now())
        .await
        .unwrap();
    assert_eq!(usage.used, 250);
    assert!(
        usage
            .frees_at
            .is_some_and(|t| t > Utc::now() + TimeDelta::hours(22))
    );
}
