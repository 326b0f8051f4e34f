//! Through the real scheduler: a scheduled message is judged by its content (free
//! text needs the window; a template by its stored category), never by the `message_type`
//! the caller stored with it.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_scheduler_judges_by_content_not_the_stored_label() {
    let h = harness(true).await;
    h.add_template("promo", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    let past = Utc::now() - TimeDelta::seconds(1);
    // Free text labelled utility, no care window.
    let text = h
        .schedule("628110000200", "utility", text_content("hello"), past)
        .await;
    // A marketing template labelled utility, to a customer who opted out of marketing ...
    let opted = h
        .schedule(
            "628110000201",
            "utility",
            template_content("promo", &["50%"]),
            past,
        )
        .await;
    h.exec("UPDATE customers SET opt_in_marketing = false WHERE phone = '628110000201'")
        .await;
    // ... and to a customer tagged VIP (any case) under the marketing-only skip_vip policy.
    let vip = h
        .schedule(
            "628110000202",
            "utility",
            template_content("promo", &["50%"]),
            past,
        )
        .await;
    h.exec("UPDATE customers SET tags = '{VIP}' WHERE phone = '628110000202'")
        .await;

    let report = h.scheduler("s1").tick().await.expect("tick");
    assert_eq!(report.messages_refused, 3, "{report:?}");
    for (id, reason) in [
        (text, "TEMPLATE_REQUIRED"),
        (opted, "USER_OPTED_OUT"),
        (vip, "skip_vip"),
    ] {
        let m = h.message_row(id).await;
        assert_eq!(m.status, "failed", "{reason}");
        assert_eq!(m.error_category.as_deref(), Some("compliance"));
        assert_eq!(m.error_can_retry, Some(false));
        let why = m.error_explanation.unwrap_or_default();
        assert!(why.contains(reason), "{reason} not in {why:?}");
    }
    assert_eq!(h.stream_messages().await, 0, "nothing reached the stream");
}
