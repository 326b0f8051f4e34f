//! warden_platform::PlatformClient against the sim: the client the services use
//! speaks the same wire format the sim serves.

use crate::common;

use common::*;
use serde_json::json;
use std::time::{Duration, Instant};
use warden_platform::{PlatformClient, PlatformConfig, PlatformError, SendRequest};

fn client(base: &str, token: &str) -> PlatformClient {
    PlatformClient::new(PlatformConfig::new(base, token, PHONE_NUMBER_ID, WABA_ID)).unwrap()
}

#[tokio::test]
async fn sends_text_and_templates() {
    let sim = start_sim(config(None)).await;
    let c = client(&sim.url, ACCESS_TOKEN);
    let r = c
        .send_message(&SendRequest::text("+62 811 222", "hi").with_callback_data("m-1"))
        .await
        .unwrap();
    let first = r.wamid().unwrap().to_owned();
    assert!(first.starts_with("wamid."));
    assert_eq!(r.contacts[0].wa_id, "62811222");
    let r = c
        .send_message(&SendRequest::template(
            "62811222",
            "warden_order_update",
            "en",
            ["A-1"],
        ))
        .await
        .unwrap();
    assert!(r.wamid().is_some());
    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 2);
    assert_eq!(stats["by_message"]["m-1"]["wamid"], json!(first));
}

#[tokio::test]
async fn platform_errors_are_parsed() {
    let sim = start_sim(config(None)).await;
    let c = client(&sim.url, ACCESS_TOKEN);
    let err = c
        .send_message(&SendRequest::template("62811", "nope", "en", ["x"]))
        .await
        .unwrap_err();
    match &err {
        PlatformError::Api {
            http_status,
            code,
            message,
            details,
        } => {
            assert_eq!((*http_status, *code), (404, 132001));
            assert!(message.contains("132001"));
            assert!(details.as_deref().unwrap().contains("nope"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!err.is_transport());

    let err = c
        .send_message(&SendRequest::template(
            "62811",
            "warden_otp",
            "en",
            Vec::<String>::new(),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(132000));

    sim.control(
        "faults",
        &json!({"recipient": "62811", "code": 131056, "http_status": 400}),
    )
    .await;
    let err = c
        .send_message(&SendRequest::text("62811", "x"))
        .await
        .unwrap_err();
    assert_eq!((err.code(), err.http_status()), (Some(131056), Some(400)));

    let bad = client(&sim.url, "wrong-token");
    let err = bad.phone_number_quality().await.unwrap_err();
    assert_eq!((err.code(), err.http_status()), (Some(190), Some(401)));
}

#[tokio::test]
async fn templates_round_trip() {
    let mut cfg = config(None);
    cfg.approval_delay = Duration::from_millis(1000);
    let sim = start_sim(cfg).await;
    let c = client(&sim.url, ACCESS_TOKEN);
    let created = c
        .create_template("welcome_back", "en", "utility", "Welcome back {{1}}!")
        .await
        .unwrap();
    assert_eq!(
        (created.status.as_str(), created.category.as_str()),
        ("PENDING", "UTILITY")
    );
    assert!(!created.id.is_empty());

    let t = c.get_template("welcome_back", "en").await.unwrap().unwrap();
    assert_eq!(t.status, "PENDING");
    assert_eq!(t.id, created.id);
    assert_eq!(t.body_text(), Some("Welcome back {{1}}!"));
    assert_eq!(c.get_template("welcome_back", "id").await.unwrap(), None);
    assert_eq!(c.get_template("never_made", "en").await.unwrap(), None);

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let t = c.get_template("welcome_back", "en").await.unwrap().unwrap();
        if t.status == "APPROVED" {
            break;
        }
        assert!(Instant::now() < deadline, "never approved");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let err = c
        .create_template("welcome_back", "en", "utility", "again {{1}}")
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(100));

    let all = c.list_templates().await.unwrap();
    assert_eq!(all.len(), 8);
    assert!(
        all.iter()
            .any(|t| t.name == "warden_otp" && t.category == "AUTHENTICATION")
    );
}

#[tokio::test]
async fn phone_numbers_and_quality() {
    let sim = start_sim(config(None)).await;
    let c = client(&sim.url, ACCESS_TOKEN);
    let numbers = c.phone_numbers().await.unwrap();
    assert_eq!(numbers.len(), 1);
    assert_eq!(numbers[0].id, PHONE_NUMBER_ID);
    let q = c.phone_number_quality().await.unwrap();
    assert_eq!(q.quality_rating.as_deref(), Some("GREEN"));
    assert_eq!(q.messaging_limit_tier.as_deref(), Some("TIER_1K"));
    assert_eq!(q.throughput.unwrap().level, "STANDARD");
}

#[tokio::test]
async fn slow_platform_is_a_timeout() {
    let sim = start_sim(config(None)).await;
    sim.control("faults", &json!({"latency_ms": 1500})).await;
    let mut cfg = PlatformConfig::new(&sim.url, ACCESS_TOKEN, PHONE_NUMBER_ID, WABA_ID);
    cfg.timeout = Duration::from_millis(300);
    let c = PlatformClient::new(cfg).unwrap();
    let err = c
        .send_message(&SendRequest::text("62811", "x"))
        .await
        .unwrap_err();
    assert_eq!(err, PlatformError::Timeout);
    assert!(err.is_transport() && err.outcome_unknown());
}

#[tokio::test]
async fn closed_port_is_a_connect_error() {
    init();
    let c = client(&format!("http://127.0.0.1:{}", free_port()), ACCESS_TOKEN);
    let err = c
        .send_message(&SendRequest::text("62811", "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, PlatformError::Connect(_)), "{err:?}");
    assert!(err.is_transport() && !err.outcome_unknown());
}

#[tokio::test]
async fn non_platform_bodies_are_http_errors() {
    // A receiver that always answers 503 with a plain-text body stands in for a proxy.
    let rx = receiver(usize::MAX).await;
    let base = rx.url.trim_end_matches("/webhook").to_owned();
    let c = client(&base, ACCESS_TOKEN);
    let err = c
        .send_message(&SendRequest::text("62811", "x"))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        PlatformError::Http {
            status: 503,
            body: "receiver is down".into()
        }
    );
    assert!(!err.is_transport());
}
