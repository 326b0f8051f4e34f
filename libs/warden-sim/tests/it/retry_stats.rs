//! `/sim/stats` counts a send again after the sim failed it by status webhook as the retry
//! the failure asks for, not as a duplicate; any other resend is a duplicate.

use crate::common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn a_resend_after_a_failure_reported_by_webhook_is_not_a_duplicate() {
    let sim = start_sim(config(None)).await;
    // HTTP 200: accepted, then failed by status webhook (as the platform does with 131000).
    let (status, _) = sim
        .control(
            "faults",
            &json!({"recipient": "62811777", "code": 131000, "http_status": 200, "times": 1}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        sim.send(&text("62811777", "x", Some("m-retry"))).await.0,
        200
    );
    assert_eq!(
        sim.send(&text("62811777", "x", Some("m-retry"))).await.0,
        200
    );
    let stats = sim.stats().await;
    assert_eq!(stats["by_message"]["m-retry"]["count"], 2);
    assert_eq!(stats["duplicates"], 0, "{stats}");

    // That retry got through: sending it once more is a duplicate.
    assert_eq!(
        sim.send(&text("62811777", "x", Some("m-retry"))).await.0,
        200
    );
    let stats = sim.stats().await;
    assert_eq!(stats["by_message"]["m-retry"]["count"], 3);
    assert_eq!(stats["duplicates"], 1, "{stats}");
}
