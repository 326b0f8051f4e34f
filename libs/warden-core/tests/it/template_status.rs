//! The one template-status upsert against real Postgres: status webhooks and live reads
//! (sync) find a template by one locale rule, and neither lets an older report overwrite a
//! newer one.

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_core::templates::{
    PlatformTemplate, StatusChange, StatusEvent, SyncSource, record_status_event,
    sync_from_platform,
};
use warden_store::PgPool;
use warden_store::schema::{audit_logs, templates};

use crate::common::TestCore;

const ACTOR: &str = "test";

fn live(name: &str, language: &str, status: &str) -> PlatformTemplate {
    PlatformTemplate {
        name: name.into(),
        language: language.into(),
        status: status.into(),
        category: "MARKETING".into(),
        rejected_reason: Some("NONE".into()),
        id: "42".into(),
        body_text: Some("Oi {{1}}".into()),
        components: None,
        parameter_format: None,
    }
}

/// A status webhook's event for `name` in `language`, decided `ago` before now.
async fn webhook(pg: &PgPool, name: &str, language: &str, status: &str, ago: TimeDelta) -> usize {
    let locales = [language];
    let event = StatusEvent {
        event: status,
        language,
        reported_reason: None,
        reported_template_id: "42",
        change: StatusChange {
            business: "default",
            name,
            locales: &locales,
            status: Some(status),
            reason: Some(None),
            category: None,
            platform_id: None,
            body_text: None,
            only_from: None,
            at: Utc::now() - ago,
        },
    };
    let mut c = pg.get().await.unwrap();
    record_status_event(&mut c, &event, ACTOR)
        .await
        .unwrap()
        .len()
}

async fn rows(pg: &PgPool, name: &str) -> Vec<(String, String)> {
    let mut c = pg.get().await.unwrap();
    templates::table
        .filter(templates::name.eq(name))
        .select((templates::locale, templates::status))
        .load(&mut c)
        .await
        .unwrap()
}

async fn audits(pg: &PgPool, action: &str) -> i64 {
    let mut c = pg.get().await.unwrap();
    audit_logs::table
        .filter(audit_logs::action.eq(action))
        .count()
        .get_result(&mut c)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_and_sync_share_one_locale_rule_and_one_ordering_rule() {
    let h = TestCore::builder().pool_size(4).build().await;
    let pg = h.pg().clone();
    {
        let mut c = pg.get().await.unwrap();
        diesel::sql_query(
            "INSERT INTO templates (name, locale, category, status, body_text)
             VALUES ('promo', 'pt_BR', 'marketing', 'PENDING', 'Oi {{1}}')",
        )
        .execute(&mut c)
        .await
        .unwrap();
    }
    // A webhook spelled another way finds the stored template.
    assert_eq!(
        webhook(&pg, "promo", "pt-br", "APPROVED", TimeDelta::minutes(10)).await,
        1
    );
    assert_eq!(
        rows(&pg, "promo").await,
        [("pt_BR".into(), "APPROVED".into())]
    );

    // A live read, asked for and answered in other spellings, updates that row (no second
    // row) and says what it was before.
    let synced = sync_from_platform(
        &pg,
        "default",
        &live("promo", "PT_br", "paused"),
        "pt-BR",
        SyncSource::SyncTemplateStatus,
        ACTOR,
    )
    .await
    .unwrap();
    assert_eq!(synced.previous_status.as_deref(), Some("APPROVED"));
    assert_eq!(synced.template.status, "PAUSED");
    assert_eq!(synced.template.platform_id.as_deref(), Some("42"));
    assert_eq!(
        rows(&pg, "promo").await,
        [("pt_BR".into(), "PAUSED".into())]
    );
    assert_eq!(audits(&pg, "template_status_synced").await, 1);

    // A webhook decided before the read arrives late: the read is newer, it stays.
    assert_eq!(
        webhook(&pg, "promo", "pt_BR", "APPROVED", TimeDelta::minutes(1)).await,
        0
    );
    assert_eq!(
        rows(&pg, "promo").await,
        [("pt_BR".into(), "PAUSED".into())]
    );
    // A decision after the read applies.
    assert_eq!(
        webhook(&pg, "promo", "pt_BR", "APPROVED", -TimeDelta::seconds(5)).await,
        1
    );
    assert_eq!(
        rows(&pg, "promo").await,
        [("pt_BR".into(), "APPROVED".into())]
    );
    assert_eq!(audits(&pg, "template_status_updated").await, 2);

    // ... and a live read stamped before that newer decision leaves it alone.
    let synced = sync_from_platform(
        &pg,
        "default",
        &live("promo", "pt_BR", "PAUSED"),
        "pt_BR",
        SyncSource::SyncWebhooks,
        ACTOR,
    )
    .await
    .unwrap();
    assert_eq!(synced.template.status, "APPROVED");
    assert_eq!(
        audits(&pg, "template_status_synced").await,
        1,
        "nothing changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_read_imports_a_template_stored_nowhere_once() {
    let h = TestCore::builder().pool_size(4).build().await;
    let pg = h.pg().clone();
    let report = live("welcome", "id", "APPROVED");
    let first = sync_from_platform(
        &pg,
        "default",
        &report,
        "id",
        SyncSource::SyncTemplateStatus,
        ACTOR,
    )
    .await
    .unwrap();
    assert_eq!(first.previous_status, None);
    assert_eq!(first.template.locale, "id");
    assert_eq!(first.template.category, "marketing");
    assert_eq!(first.template.body_text, "Oi {{1}}");
    assert_eq!(first.template.rejection_reason, None, "NONE is no reason");
    let again = sync_from_platform(
        &pg,
        "default",
        &report,
        "id",
        SyncSource::SyncTemplateStatus,
        ACTOR,
    )
    .await
    .unwrap();
    assert_eq!(again.previous_status.as_deref(), Some("APPROVED"));
    assert_eq!(rows(&pg, "welcome").await.len(), 1);
    assert_eq!(
        audits(&pg, "template_status_synced").await,
        1,
        "an unchanged re-read is not audited"
    );
}
