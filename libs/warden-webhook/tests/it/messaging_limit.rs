//! The portfolio's messaging limit learnt from webhooks (docs/compliance.md):
//! `phone_number_quality_update.current_limit` and
//! `business_capability_update.max_daily_conversations_per_business` (or its older name)
//! set the limit the send path enforces; the last one received wins; a replay changes nothing.

use crate::common;

use common::*;
use serde_json::json;

async fn limit(h: &Harness) -> String {
    let mut c = h.conn().await;
    text(
        &mut c,
        "SELECT coalesce(tier, '-') || '|' || coalesce(unique_users::text, 'unlimited') || '|' || source AS v
         FROM portfolio_limit",
    )
    .await
}

fn capability(value: serde_json::Value) -> serde_json::Value {
    envelope(vec![
        json!({"field": "business_capability_update", "value": value}),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quality_and_capability_webhooks_set_the_limit() {
    let h = Harness::start().await;
    assert_eq!(limit(&h).await, "-|unlimited|unknown", "not known yet");
    h.deliver(&quality("UPGRADE", "TIER_10K")).await;
    assert_eq!(
        limit(&h).await,
        "TIER_10K|10000|phone_number_quality_update"
    );
    let cap = capability(json!({"max_daily_conversations_per_business": 2000,
                                "max_phone_numbers_per_business": 2}));
    h.deliver(&cap).await;
    assert_eq!(limit(&h).await, "TIER_2K|2000|business_capability_update");
    // The older field name, as a string; -1 is unlimited.
    h.deliver(&capability(
        json!({"max_daily_conversation_per_phone": "-1"}),
    ))
    .await;
    assert_eq!(
        limit(&h).await,
        "TIER_UNLIMITED|unlimited|business_capability_update"
    );
    // A capability update without a messaging limit changes nothing.
    h.deliver(&capability(json!({"max_phone_numbers_per_business": 20})))
        .await;
    assert_eq!(
        limit(&h).await,
        "TIER_UNLIMITED|unlimited|business_capability_update"
    );
    let mut c = h.conn().await;
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM account_quality_events WHERE event = 'BUSINESS_CAPABILITY_UPDATE'"
        )
        .await,
        2
    );
    assert_eq!(
        count(
            &mut c,
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'messaging_limit_changed'"
        )
        .await,
        3
    );
}
