//! Template status events are applied by their own time, never by arrival order, and every
//! path that stores a platform-reported status matches locales one way.

use crate::common;

use common::*;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};

/// A template status webhook whose entry carries `time`.
fn decided_at(name: &str, language: &str, event: &str, time: i64) -> Value {
    json!({"object": "whatsapp_business_account",
           "entry": [{"id": WABA_ID, "time": time, "changes": [
               {"field": "message_template_status_update", "value": {
                   "event": event, "message_template_id": 1_689_556_908_129_832_u64,
                   "message_template_name": name, "message_template_language": language,
                   "reason": "NONE"}}]}]})
}

async fn status_of(h: &Harness, name: &str) -> String {
    text(
        &mut *h.conn().await,
        &format!("SELECT status AS v FROM templates WHERE name = '{name}'"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_older_template_status_never_overrides_a_newer_one() {
    let h = Harness::start().await;
    {
        let mut c = h.conn().await;
        diesel::sql_query(
            "INSERT INTO templates (name, locale, category, status, body_text)
             VALUES ('order_update', 'en_US', 'utility', 'PENDING', 'Hi {{1}}')",
        )
        .execute(&mut c)
        .await
        .unwrap();
    }
    let t = now();
    h.deliver(&decided_at("order_update", "en_US", "APPROVED", t - 600))
        .await;
    assert_eq!(status_of(&h, "order_update").await, "APPROVED");
    h.deliver(&decided_at("order_update", "en_US", "PAUSED", t - 60))
        .await;
    assert_eq!(status_of(&h, "order_update").await, "PAUSED");

    // Retried by the platform, an APPROVED from before the pause arrives late (and spelled
    // another way): it is older, so the template stays paused.
    h.deliver(&decided_at("order_update", "en-us", "APPROVED", t - 300))
        .await;
    assert_eq!(status_of(&h, "order_update").await, "PAUSED");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM templates WHERE name = 'order_update'
             AND extract(epoch FROM status_event_at)::bigint = {}",
            t - 60
        ))
        .await,
        1,
        "the pause's time stays the stored one"
    );

    // A newer decision does apply.
    h.deliver(&decided_at("order_update", "en_US", "REINSTATED", t - 10))
        .await;
    assert_eq!(status_of(&h, "order_update").await, "APPROVED");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM templates WHERE name = 'order_update'
             AND extract(epoch FROM status_event_at)::bigint = {}",
            t - 10
        ))
        .await,
        1,
        "the stored status remembers when it was decided"
    );
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'template_status_updated'")
            .await,
        3,
        "the stale event changed nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_and_sync_find_a_template_by_one_locale_rule() {
    let h = Harness::start().await;
    let mut c = h.conn().await;
    diesel::sql_query(
        "INSERT INTO templates (name, locale, category, status, body_text)
         VALUES ('promo', 'pt_BR', 'marketing', 'PENDING', 'Oi')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    // The lookup sync_template_status uses (warden-gateway) ...
    for spelling in ["pt_BR", "pt-BR", "PT_br", " pt-br "] {
        let found =
            warden_core::templates::find_for_locales(&mut c, "default", "promo", &[spelling])
                .await
                .unwrap();
        assert_eq!(
            found.map(|t| t.locale).as_deref(),
            Some("pt_BR"),
            "{spelling}"
        );
        assert!(warden_core::templates::same_locale("pt_BR", spelling));
    }
    assert!(
        warden_core::templates::find_for_locales(&mut c, "default", "promo", &["pt"])
            .await
            .unwrap()
            .is_none()
    );
    // ... and the one status webhooks use agree.
    h.deliver(&decided_at("promo", "PT-br", "REJECTED", now()))
        .await;
    let row: Vec<(String,)> = diesel::sql_query("SELECT status AS v FROM templates")
        .load::<StatusOnly>(&mut c)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.v,))
        .collect();
    assert_eq!(row, vec![("REJECTED".to_string(),)]);
}

#[derive(diesel::QueryableByName)]
struct StatusOnly {
    #[diesel(sql_type = Text)]
    v: String,
}
