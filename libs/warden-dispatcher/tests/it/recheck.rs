//! Right before the platform call the dispatcher re-checks opt-out, the care
//! window (free-form) and the template's status; a message refused there ends `failed`
//! with a compliance error and is never handed to the platform.

use crate::common;

use std::time::Duration;

use common::{Harness, unique_phone};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_after_acceptance_stops_the_message_before_the_platform_call() {
    let h = Harness::new(500).await;
    let stopped = unique_phone();
    let paused_to = unique_phone();
    let fine = unique_phone();
    // Accepted while allowed (open window, approved template) ...
    let text = h.insert_text(&stopped).await;
    let tpl = h
        .insert_message(
            &paused_to,
            json!({"type": "template",
                   "template": {"name": "recheck_paused", "locale": "en", "variables": []}}),
            None,
            "queued",
        )
        .await;
    let ok = h.insert_text(&fine).await;
    // ... then the customer wrote STOP and the template was paused, before dispatch.
    let phone = warden_rules::phone::canonicalize(&stopped).unwrap();
    let mut c = h.deps.pg.get().await.unwrap();
    warden_core::customers::apply_opt_change(
        &mut c,
        "default",
        &phone,
        warden_rules::keywords::OptChange::Stop,
        warden_core::customers::OptScope::All,
        "keyword",
        "test",
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    drop(c);
    h.sql("UPDATE templates SET status = 'PAUSED' WHERE name = 'recheck_paused'")
        .await;

    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(text, &stopped).await;
    h.publish(tpl, &paused_to).await;
    h.publish(ok, &fine).await;

    for (id, code) in [(text, "USER_OPTED_OUT"), (tpl, "TEMPLATE_NOT_APPROVED")] {
        let row = h.wait_status(id, &["failed"], WAIT).await;
        assert_eq!(row.error_category.as_deref(), Some("compliance"), "{row:?}");
        assert_eq!(row.error_can_retry, Some(false));
        let why = row.error_explanation.clone().unwrap_or_default();
        assert!(why.starts_with(code), "{code}: {why}");
        assert_eq!(h.sim.count(id), 0, "never handed to the platform");
    }
    h.wait_status(ok, &["sent"], WAIT).await;
    assert_eq!(h.sim.count(ok), 1, "a message still allowed goes out");
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
