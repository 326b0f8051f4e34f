//! `warden-admin customers forget PHONE` (the built binary) against the gateway's send
//! paths: content and profile erased, a suppression kept, every later send
//! `USER_OPTED_OUT` (send, template, schedule, the dispatcher's recheck), nothing lifts it,
//! one audit row.
//!
//! Needs `cargo build --bins` (warden-admin).

use crate::common;

use std::process::Command;
use std::time::Duration;

use futures::StreamExt;

use chrono::{TimeDelta, Utc};
use common::Harness;
use serde_json::json;
use uuid::Uuid;
use warden_core::Recheck;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_customer_is_erased_and_never_messaged_again() {
    let h = Harness::start().await;
    let phone = common::phone();
    h.insert_template("order_update", "en", "utility", "APPROVED", "Order {{1}}")
        .await;
    h.inbound(&phone, Utc::now()).await;
    h.tag(&phone, &["vip"]).await;
    // A message accepted before the forget, still waiting for a dispatcher.
    let queued = h
        .ok(
            "send_message",
            json!({"to": phone, "text": "your secret code"}),
        )
        .await["message_id"]
        .as_str()
        .unwrap()
        .to_string();

    // A gateway watching this conversation hears of the erasure.
    let watcher = warden_stream::Hints::connect(&h.deps.settings, Duration::from_secs(5))
        .await
        .expect("NATS");
    let mut hints = Box::pin(watcher.subscribe().await.expect("subscribe"));
    watcher.round_trip(Duration::from_secs(5)).await.unwrap();

    let out = Command::new(warden_test_support::binary("warden-admin"))
        .args(["customers", "forget", &format!("+{phone}")])
        .envs(warden_test_support::procs::env_of(&h.deps.settings))
        .output()
        .expect("run warden-admin");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("forgotten"), "{stderr}");
    assert!(
        stderr.contains("subscribers of this conversation were told"),
        "{stderr}"
    );
    let heard = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(hint) = hints.next().await {
            if hint.token == phone && hint.kind == Some(warden_stream::HintKind::Redacted) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        heard,
        Ok(true),
        "no redacted hint for the forgotten customer"
    );

    // Content and profile are gone; the row and its status stay.
    let row = h.message(&queued).await;
    assert!(row.redacted_at.is_some());
    assert!(
        !row.content.to_string().contains("secret"),
        "{}",
        row.content
    );
    assert_eq!(row.status, "queued");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{phone}' AND tags = '{{}}' \
             AND NOT opt_in_marketing AND NOT opt_in_utility"
        ))
        .await,
        1
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM suppressions WHERE phone = '{phone}'"
        ))
        .await,
        1
    );
    assert_eq!(h.audits("customer_forgotten").await, 1);

    // Every path refuses.
    let check = h
        .ok(
            "check_compliance",
            json!({"customer_id": phone, "message_type": "service"}),
        )
        .await;
    assert_eq!(check["allowed"], false);
    assert_eq!(check["reason_code"], "USER_OPTED_OUT");
    h.err(
        "USER_OPTED_OUT",
        "send_message",
        json!({"to": phone, "text": "hello?"}),
    )
    .await;
    h.err(
        "USER_OPTED_OUT",
        "send_template",
        json!({"to": phone, "template_name": "order_update", "locale": "en", "variables": "[\"1\"]"}),
    )
    .await;
    let later = (Utc::now() + TimeDelta::hours(2)).to_rfc3339();
    h.err(
        "USER_OPTED_OUT",
        "schedule_message",
        json!({"customer_id": phone, "message_type": "template",
               "content": json!({"type": "template", "template": {"name": "order_update", "language": "en", "variables": ["1"]}}).to_string(),
               "deliver_at": later}),
    )
    .await;
    // The message accepted before: the dispatcher's last check refuses it.
    let recheck = warden_core::send::recheck::before_send(
        &h.deps.pg,
        Uuid::parse_str(&queued).unwrap(),
        "test",
    )
    .await
    .expect("recheck");
    assert!(matches!(recheck, Recheck::Refused(_)), "{recheck:?}");

    // Not even the customer's own START lifts a suppression.
    let mut c = h.conn().await;
    let lifted = warden_core::customers::apply_opt_change(
        &mut c,
        "default",
        &h.phone_number(&phone),
        warden_rules::keywords::OptChange::Resume,
        warden_core::customers::OptScope::All,
        "stop_keyword",
        "test",
        Utc::now() + TimeDelta::seconds(1),
    )
    .await
    .unwrap();
    drop(c);
    assert!(!lifted);
    h.err(
        "USER_OPTED_OUT",
        "send_message",
        json!({"to": phone, "text": "hello again"}),
    )
    .await;

    // Forgetting again is harmless; a bad number is a usage error (exit 2).
    let again = Command::new(warden_test_support::binary("warden-admin"))
        .args(["customers", "forget", &phone])
        .envs(warden_test_support::procs::env_of(&h.deps.settings))
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already"));
    let bad = Command::new(warden_test_support::binary("warden-admin"))
        .args(["customers", "forget", "not-a-phone"])
        .envs(warden_test_support::procs::env_of(&h.deps.settings))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
