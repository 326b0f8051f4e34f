//! The webhook's batch forms of warden-core functions (`core_batch`) must leave exactly
//! the rows the core's one-customer functions leave. Same inputs, two customers, compare.

use crate::common;

use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use common::text;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_core::conversations::inbound_batch as core_batch;
use warden_core::{conversations, customers};
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_store::testing::TestDatabase;

async fn via_core(c: &mut AsyncPgConnection, p: &PhoneNumber, at: DateTime<Utc>) {
    customers::ensure(c, p).await.unwrap();
    conversations::record_inbound(c, p, "whatsapp", "default", at)
        .await
        .unwrap();
    customers::touch_interaction(c, p, at).await.unwrap();
}

async fn via_batch(c: &mut AsyncPgConnection, p: &PhoneNumber, at: DateTime<Utc>) {
    let conv = core_batch::record_inbound(c, "whatsapp", &default_keys(), &[(p, Some(at))], &[])
        .await
        .unwrap();
    assert_eq!(conv.len(), 1);
    assert_eq!(conv[0].customer_phone, p.digits());
}

/// Everything about a customer and their conversation except identities and clocks.
async fn state(c: &mut AsyncPgConnection, p: &PhoneNumber) -> String {
    text(
        c,
        &format!(
            "SELECT json_build_object(
                'customer', (SELECT to_jsonb(x) - 'phone' - 'created_at' - 'updated_at' FROM customers x WHERE phone = '{0}'),
                'conversation', (SELECT to_jsonb(x) - 'id' - 'customer_phone' - 'created_at' - 'updated_at'
                                 FROM conversations x WHERE customer_phone = '{0}'))::text AS v",
            p.digits()
        ),
    )
    .await
}

async fn archive(c: &mut AsyncPgConnection, p: &PhoneNumber, at: DateTime<Utc>) {
    diesel::sql_query("UPDATE conversations SET archived_at = $1 WHERE customer_phone = $2")
        .bind::<diesel::sql_types::Timestamptz, _>(at)
        .bind::<diesel::sql_types::Text, _>(p.digits())
        .execute(c)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_forms_leave_the_same_rows_as_the_core() {
    let db = tokio::task::spawn_blocking(TestDatabase::create)
        .await
        .unwrap();
    warden_store::prepare(&db.settings.database, vec![])
        .await
        .unwrap();
    let pg = warden_store::connect(&db.settings.database, 2, Duration::from_secs(5))
        .await
        .unwrap();
    let mut c = pg.get().await.unwrap();
    let t = Utc::now() - TimeDelta::hours(2);
    let s = TimeDelta::seconds;
    for (a, b) in [
        ("628111000001", "628111000002"),
        ("+1 415 555 0101", "14155550102"),
    ] {
        let (a, b) = (canonicalize(a).unwrap(), canonicalize(b).unwrap());
        // First sight, an older message, an archive, a message older than the archive
        // (stays archived), a newer one (un-archives), one more than a day old.
        for step in [
            Step::Inbound(t),
            Step::Inbound(t - s(600)),
            Step::Archive(t + s(10)),
            Step::Inbound(t + s(5)),
            Step::Inbound(t + s(60)),
            Step::Inbound(t - TimeDelta::hours(30)),
        ] {
            match step {
                Step::Inbound(at) => {
                    via_core(&mut c, &a, at).await;
                    via_batch(&mut c, &b, at).await;
                }
                Step::Archive(at) => {
                    archive(&mut c, &a, at).await;
                    archive(&mut c, &b, at).await;
                }
            }
            assert_eq!(
                state(&mut c, &a).await,
                state(&mut c, &b).await,
                "after {step:?}"
            );
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Inbound(DateTime<Utc>),
    Archive(DateTime<Utc>),
}

/// The default sender's stored keys (no senders file).
fn default_keys() -> warden_settings::StoreKeys {
    warden_settings::StoreKeys {
        sender: "default".into(),
        business: "default".into(),
        portfolio: "default".into(),
    }
}
