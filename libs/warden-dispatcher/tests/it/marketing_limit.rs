//! The platform's per-user marketing limit (error 131049), end to end against platform-sim:
//! the message answered 131049 is not retried; the customer is held
//! from marketing for 24 h (check_compliance says so, get_account_quality counts it); a
//! marketing message already queued for them waits out the hold instead of drawing another
//! 131049; after the 24 h (rows back-dated) it gets exactly one attempt.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use common::*;
use warden_core::{Core, SendKind, SendRequest, TemplateSend};
use warden_rules::compliance::ReasonCode;
use warden_rules::kinds::{ContentKind, MessageType, TemplateCategory};
use warden_rules::phone::canonicalize;

const WAIT: Duration = Duration::from_secs(60);

fn promo(to: &warden_rules::phone::PhoneNumber) -> SendRequest {
    SendRequest::from_tool(
        to.clone(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: "warden_promo".into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        }),
        MessageType::Template,
        "test",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_131049_holds_the_customer_for_24_hours_then_one_attempt() {
    let h = Harness::new(500).await;
    h.sql(
        "INSERT INTO templates (name, locale, category, status, body_text)
         VALUES ('warden_promo', 'en', 'marketing', 'APPROVED', 'Hi {{1}}, we have a new offer for you. Reply STOP to opt out.')",
    )
    .await;
    let core = Core::new(h.deps.clone(), "test");
    let digits = unique_phone();
    let phone = canonicalize(&digits).unwrap();
    h.sim.fault(&digits, 131049, 400, 1);
    let (d, stop) = h.dispatcher(h.config()).await;

    // 1. The platform answers 131049: failed after one attempt, never retried.
    let first = core.send(promo(&phone)).await.expect("accepted");
    let row = h.wait_status(first.message_id, &["failed"], WAIT).await;
    assert_eq!((row.error_code, row.attempt), (Some(131049), 1));
    assert_eq!(
        h.sim.count(first.message_id),
        0,
        "the sim refused the one call"
    );

    // 2. check_compliance explains the hold and when it ends.
    let decision = core
        .check(
            &phone,
            None,
            ContentKind::Template(TemplateCategory::Marketing),
            Utc::now(),
        )
        .await
        .unwrap();
    assert!(!decision.allowed);
    assert_eq!(decision.reason_code, ReasonCode::FrequencyCapExceeded);
    assert!(
        decision.human_explanation.contains("131049"),
        "{}",
        decision.human_explanation
    );
    let until = decision.retry_at.expect("the hold's end");
    assert!(until > Utc::now() + TimeDelta::hours(23));
    // Utility is not held.
    let utility = core
        .check(
            &phone,
            None,
            ContentKind::Template(TemplateCategory::Utility),
            Utc::now(),
        )
        .await
        .unwrap();
    assert!(utility.allowed, "{}", utility.human_explanation);
    // Counted where get_account_quality reads it.
    let usage = warden_core::account::portfolio::current_usage(&h.deps.pg, "default", Utc::now())
        .await
        .unwrap();
    assert_eq!(usage.marketing_limited, 1);

    // 3. A single marketing send is refused with the hold's end; a marketing message that
    //    was already queued (here: put back to queued, as one accepted before the 131049
    //    would be) is held by the dispatcher's last check, not sent.
    match core.send(promo(&phone)).await {
        Err(warden_core::SendError::Refused(d)) => assert_eq!(d.retry_at, Some(until)),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let second = h
        .insert_message(
            &digits,
            serde_json::json!({"type": "template", "template": {"name": "warden_promo", "locale": "en", "variables": ["Ana"]}}),
            None,
            "queued",
        )
        .await;
    // Published under another Nats-Msg-Id: the resend after the hold (24 h later in real
    // life, seconds here) must not fall inside the stream's duplicate window.
    h.republish_raw(second).await;
    warden_test_support::wait::until(WAIT, "the queued marketing message to be held", || async {
        h.row(second).await.status == "scheduled"
    })
    .await;
    assert_eq!(
        h.count_where(&format!(
            "id = '{second}' AND deliver_at = '{}'::timestamptz",
            until.to_rfc3339()
        ))
        .await,
        1
    );
    assert_eq!(h.sim.count(second), 0, "not sent during the hold");

    // 4. 24 h later (back-dated): the held message comes due and gets one attempt.
    h.sql(&format!(
        "UPDATE customers SET marketing_limited_at = marketing_limited_at - interval '24 hours 1 minute' WHERE phone = '{digits}'"
    ))
    .await;
    h.sql(&format!(
        "UPDATE messages SET deliver_at = now() WHERE id = '{second}'"
    ))
    .await;
    let due =
        warden_core::scheduling::due::claim_due(&h.deps.pg, "test", Duration::from_secs(60), 10)
            .await
            .unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(
        warden_core::scheduling::due::dispatch(&core, &due[0]).await,
        warden_core::scheduling::due::Dispatched::Queued
    );
    let row = h
        .wait_status(second, &["sent", "delivered", "read"], WAIT)
        .await;
    assert_eq!(row.attempt, 1);
    assert_eq!(h.sim.count(second), 1, "exactly one attempt after the hold");
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
