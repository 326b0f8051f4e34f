//! The platform as it is today, end to end against platform-sim posting its signed
//! webhooks to this webhook server: a number's throughput follows the platform (a
//! `THROUGHPUT_UPGRADE` raises a running dispatcher's bucket, coexistence caps it), and a
//! template the platform re-categorises obeys its new category from the effective time.

use crate::common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use common::*;
use diesel::QueryableByName;
use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_core::{RefusalMode, SendError, SendKind, SendRequest, TemplateSend};
use warden_rules::kinds::MessageType;
use warden_rules::throughput::CapacitySource;
use warden_service::Dependencies;

const TEMPLATE: &str = "warden_order_update";

/// platform-sim posting its signed webhooks to the harness's webhook server.
fn start_sim(h: &Harness) -> (String, Arc<warden_sim::Sim>) {
    let settings = h.core.dependencies().settings.clone();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = warden_sim::start(
        warden_sim::SimConfig {
            http_host: "127.0.0.1".into(),
            http_port: 0,
            webhook_url: Some(format!("{}/webhook", h.url)),
            access_token: ACCESS_TOKEN.into(),
            app_secret: APP_SECRET.into(),
            phone_number_id: settings.platform.phone_number_id.clone(),
            waba_id: settings.platform.account_id.clone(),
            workers: 2,
            ..warden_sim::SimConfig::default()
        },
        TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .expect("sim starts");
    let url = sim.base_url();
    let state = sim.state();
    tokio::spawn(sim.wait());
    (url, state)
}

/// A dispatcher on the harness's database and stream, calling the sim.
async fn start_dispatcher(
    h: &Harness,
    api_url: &str,
) -> (
    warden_dispatcher::Dispatcher,
    tokio::sync::oneshot::Sender<()>,
) {
    let mut settings = (*h.core.dependencies().settings).clone();
    settings.platform.api_url = api_url.to_string();
    settings.platform.access_token = ACCESS_TOKEN.into();
    let settings = Arc::new(settings);
    let deps = Dependencies {
        settings: settings.clone(),
        ..h.core.dependencies().clone()
    };
    let mut config = warden_dispatcher::DispatcherConfig::defaults(&settings);
    config.bucket_channel = Some(format!("t-{}", Uuid::new_v4().simple()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let d = warden_dispatcher::start(deps, config, async move {
        let _ = stopped.await;
    })
    .await
    .expect("dispatcher starts");
    (d, stop)
}

async fn wait_for<F: Fn() -> bool>(what: &str, ok: F) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ok() {
        assert!(Instant::now() < deadline, "{what}: not within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throughput_upgrade_raises_the_running_bucket_and_coexistence_caps_it_at_twenty() {
    let h = Harness::start_streaming(|_| {}).await;
    let setting = h.core.dependencies().settings.rate_limit_mps;
    let (sim_url, sim) = start_sim(&h);
    let (d, stop) = start_dispatcher(&h, &sim_url).await;
    // Nothing known from the platform yet: RATE_LIMIT_MPS.
    let before = warden_core::account::throughput::current(&h.pg, setting)
        .await
        .unwrap();
    assert_eq!(
        (before.mps, before.source),
        (setting, CapacitySource::Setting)
    );
    assert_eq!(d.bucket().mps(), setting);

    // The platform upgrades the number: its webhook reaches the running dispatcher's bucket.
    sim.set_throughput(Some("HIGH".into()), None);
    wait_for("bucket at 1,000 mps after THROUGHPUT_UPGRADE", || {
        d.bucket().mps() == 1000
    })
    .await;
    let now = warden_core::account::throughput::current(&h.pg, setting)
        .await
        .unwrap();
    assert_eq!(now.source, CapacitySource::ThroughputUpgrade);
    assert!(
        now.detail
            .as_deref()
            .unwrap_or("")
            .contains("THROUGHPUT_UPGRADE"),
        "{now:?}"
    );

    // The number is also used with the WhatsApp Business app: a dispatcher reading the
    // number caps it at 20, and the running one follows the recorded capacity.
    sim.set_throughput(None, Some(true));
    let (d2, stop2) = start_dispatcher(&h, &sim_url).await;
    wait_for("new dispatcher capped at 20 mps", || {
        d2.bucket().mps() == 20
    })
    .await;
    wait_for("running dispatcher follows to 20 mps", || {
        d.bucket().mps() == 20
    })
    .await;
    let now = warden_core::account::throughput::current(&h.pg, setting)
        .await
        .unwrap();
    assert_eq!((now.mps, now.source), (20, CapacitySource::Coexistence));

    let _ = stop.send(());
    let _ = stop2.send(());
    d.join().await.unwrap();
    d2.join().await.unwrap();
}

#[derive(QueryableByName, Debug)]
struct TemplateRow {
    #[diesel(sql_type = Text)]
    category: String,
    #[diesel(sql_type = Nullable<Text>)]
    pending_category: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pending_category_at: Option<chrono::DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    quality_score: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    rejection_reason: Option<String>,
}

async fn template_row(h: &Harness) -> TemplateRow {
    let mut c = h.conn().await;
    diesel::sql_query(
        "SELECT category, pending_category, pending_category_at, quality_score, rejection_reason
           FROM templates WHERE name = $1 AND locale = 'en'",
    )
    .bind::<Text, _>(TEMPLATE)
    .get_result(&mut c)
    .await
    .unwrap()
}

async fn wait_row(h: &Harness, what: &str, ok: impl Fn(&TemplateRow) -> bool) -> TemplateRow {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = template_row(h).await;
        if ok(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "{what}: {r:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn template_send(phone: &warden_rules::phone::PhoneNumber) -> SendRequest {
    let mut req = SendRequest::from_tool(
        phone.clone(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: TEMPLATE.into(),
            locale: "en".into(),
            variables: vec!["A-1".into(), "shipped".into()],
            ..Default::default()
        }),
        MessageType::Template,
        "test",
    );
    req.refusal = RefusalMode::Error;
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_recategorised_as_marketing_obeys_marketing_rules_from_its_effective_time() {
    let h = Harness::start_streaming(|_| {}).await;
    let (_sim_url, sim) = start_sim(&h);
    {
        let mut c = h.conn().await;
        diesel::sql_query(
            "INSERT INTO templates (name, locale, category, status, body_text)
             VALUES ($1, 'en', 'utility', 'APPROVED', 'Order {{1}} is {{2}}.')
             ON CONFLICT (business, name, locale) DO UPDATE SET category = 'utility', status = 'APPROVED'",
        )
        .bind::<Text, _>(TEMPLATE)
        .execute(&mut c)
        .await
        .unwrap();
    }
    // A customer who stopped marketing (utility still allowed).
    let phone = warden_rules::phone::canonicalize(&phone()).unwrap();
    {
        let mut c = h.conn().await;
        diesel::sql_query(
            "INSERT INTO customers (phone, country, opt_in_marketing) VALUES ($1, 'ID', false)",
        )
        .bind::<Text, _>(phone.digits())
        .execute(&mut c)
        .await
        .unwrap();
    }

    // 1. Announced for later: stored as pending, the template stays utility until then.
    let later = Utc::now().timestamp() + 3600;
    sim.recategorise_template(TEMPLATE, "en", "MARKETING", Some(later))
        .unwrap();
    let r = wait_row(&h, "pending category stored", |r| {
        r.pending_category.as_deref() == Some("marketing")
    })
    .await;
    assert_eq!(r.category, "utility");
    assert_eq!(r.pending_category_at.map(|t| t.timestamp()), Some(later));
    let accepted = h.core.send(template_send(&phone)).await;
    let queued = match accepted {
        Ok(a) => a.message_id,
        Err(e) => panic!("still utility before its effective time: {e:?}"),
    };

    // 2. The effective time comes (moved to now: the test does not wait an hour). From
    //    then on the stored template is marketing: the opted-out customer is refused,
    //    and the message accepted before is refused by the dispatcher's last check.
    {
        let mut c = h.conn().await;
        diesel::sql_query(
            "UPDATE templates SET pending_category_at = now() - interval '1 second' WHERE name = $1",
        )
        .bind::<Text, _>(TEMPLATE)
        .execute(&mut c)
        .await
        .unwrap();
    }
    match h.core.send(template_send(&phone)).await {
        Err(SendError::Refused(d)) => {
            assert_eq!(d.reason_code.as_str(), "USER_OPTED_OUT", "{d:?}")
        }
        other => panic!("marketing rules apply from the effective time: {other:?}"),
    }
    let recheck = warden_core::send::recheck::before_send(&h.pg, queued, "test")
        .await
        .unwrap();
    assert!(
        matches!(recheck, warden_core::Recheck::Refused(_)),
        "{recheck:?}"
    );

    // 3. The completed notice settles the stored category.
    sim.recategorise_template(TEMPLATE, "en", "MARKETING", None)
        .unwrap();
    let r = wait_row(&h, "category settled", |r| {
        r.category == "marketing" && r.pending_category.is_none()
    })
    .await;
    assert!(r.pending_category_at.is_none());

    // 4. Quality and the pause reason are stored (list_templates shows them).
    sim.template_quality(TEMPLATE, "en", "GREEN", "YELLOW")
        .unwrap();
    wait_row(&h, "quality stored", |r| {
        r.quality_score.as_deref() == Some("YELLOW")
    })
    .await;
    sim.decide(TEMPLATE, "en", "PAUSED", Some("LOW_QUALITY".into()))
        .unwrap();
    wait_row(&h, "pause reason stored", |r| {
        r.rejection_reason.as_deref() == Some("LOW_QUALITY")
    })
    .await;
}
