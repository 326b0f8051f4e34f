//! The HTTP contract of the webhook: handshake, signature, status codes, health, metrics.
//! Real server on 127.0.0.1:0, real Postgres (a fresh database per test).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::json;
use warden_rules::policy::PolicySet;
use warden_service::Dependencies;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handshake_echoes_the_challenge_only_for_the_right_token() {
    let h = Harness::start().await;
    let get = |query: String| {
        let http = h.http.clone();
        let url = format!("{}/webhook{query}", h.url);
        async move {
            let res = http.get(url).send().await.unwrap();
            let status = res.status().as_u16();
            let ctype = res
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string());
            (status, res.text().await.unwrap(), ctype)
        }
    };
    let (status, body, ctype) = get(format!(
        "?hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1158201444"
    ))
    .await;
    assert_eq!((status, body.as_str()), (200, "1158201444"));
    assert!(ctype.unwrap().starts_with("text/plain"));

    // The challenge comes back byte for byte, whatever it holds.
    let (status, body, _) = get(format!(
        "?hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=a%20b%26c%3D%E2%9C%93"
    ))
    .await;
    assert_eq!((status, body.as_str()), (200, "a b&c=✓"));

    for query in [
        "?hub.mode=subscribe&hub.verify_token=wrong&hub.challenge=1".to_string(),
        format!("?hub.mode=unsubscribe&hub.verify_token={VERIFY_TOKEN}&hub.challenge=1"),
        format!("?hub.verify_token={VERIFY_TOKEN}&hub.challenge=1"),
        "?hub.mode=subscribe&hub.challenge=1".to_string(),
        String::new(),
        "?hub.mode=%ZZ".to_string(),
    ] {
        let (status, body, _) = get(query.clone()).await;
        assert_eq!((status, body.as_str()), (403, "Forbidden"), "{query}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signature_missing_or_wrong_is_401_and_writes_nothing() {
    let h = Harness::start().await;
    let from = phone();
    let payload = inbound(&from, "hello", now(), &wamid());
    let body = payload.to_string();

    let res = h.post_bytes(body.as_bytes(), None).await;
    assert_eq!(res.status().as_u16(), 401);

    let wrong_secret = warden_platform::signature::sign(b"not-the-secret", body.as_bytes());
    let other_body = warden_platform::signature::sign(APP_SECRET.as_bytes(), b"{}");
    for sig in [
        wrong_secret.as_str(),
        other_body.as_str(),
        "sha256=",
        "sha256=zz",
        "garbage",
        "",
    ] {
        let res = h.post_bytes(body.as_bytes(), Some(sig)).await;
        assert_eq!(res.status().as_u16(), 401, "{sig:?}");
    }
    assert_eq!(h.count("SELECT count(*) AS n FROM webhook_events").await, 0);
    assert_eq!(h.count("SELECT count(*) AS n FROM customers").await, 0);
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);

    // The same body, correctly signed, goes through (upper-case hex accepted too).
    let sig = warden_platform::signature::sign(APP_SECRET.as_bytes(), body.as_bytes());
    let upper = format!("sha256={}", sig[7..].to_uppercase());
    let res = h.post_bytes(body.as_bytes(), Some(&upper)).await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "EVENT_RECEIVED");
    assert_eq!(h.count("SELECT count(*) AS n FROM customers").await, 1);

    let metrics = h.metrics().await;
    let failures = metrics
        .lines()
        .find(|l| l.starts_with("warden_webhook_signature_failures_total "))
        .expect("signature failure counter");
    assert!(
        failures.ends_with(" 7"),
        "7 refused POSTs counted: {failures}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_that_are_not_platform_events_are_400() {
    let h = Harness::start().await;
    for body in [
        "not json at all".to_string(),
        String::new(),
        "[1,2,3]".to_string(),
        "{\"object\": \"page\", \"entry\": []}".to_string(),
        "{\"entry\": []}".to_string(),
        "{\"object\": \"whatsapp_business_account\"}".to_string(),
        "{\"object\": \"whatsapp_business_account\", \"entry\": {}}".to_string(),
        "{\"object\": \"whatsapp_business_account\", \"entry\": [".to_string(),
    ] {
        let sig = warden_platform::signature::sign(APP_SECRET.as_bytes(), body.as_bytes());
        let res = h.post_bytes(body.as_bytes(), Some(&sig)).await;
        assert_eq!(res.status().as_u16(), 400, "{body:?}");
    }
    // An empty batch and unknown kinds are fine.
    h.deliver(&json!({"object": "whatsapp_business_account", "entry": []}))
        .await;
    h.deliver(&envelope(vec![
        json!({"field": "account_alerts", "value": {"anything": 1}}),
        json!({"field": "messages", "value": {"statuses": [{"id": "w", "status": 5}]}}),
    ]))
    .await;
    assert_eq!(h.count("SELECT count(*) AS n FROM webhook_events").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_over_one_mebibyte_are_413() {
    let h = Harness::start().await;
    // A real envelope padded past the limit, correctly signed.
    let pad = "x".repeat(warden_webhook::MAX_BODY_BYTES);
    let mut payload = inbound(&phone(), "hello", now(), &wamid());
    payload["padding"] = json!(pad);
    let res = h.post(&payload).await;
    assert_eq!(res.status().as_u16(), 413);
    assert_eq!(h.count("SELECT count(*) AS n FROM webhook_events").await, 0);

    // Just under the limit is accepted.
    let mut payload = inbound(&phone(), "hello", now(), &wamid());
    let base = payload.to_string().len();
    payload["padding"] = json!("y".repeat(warden_webhook::MAX_BODY_BYTES - base - 20));
    assert!(payload.to_string().len() <= warden_webhook::MAX_BODY_BYTES);
    h.deliver(&payload).await;

    // Chunked (no Content-Length) is held to the same limit.
    let body = vec![b' '; warden_webhook::MAX_BODY_BYTES + 1];
    let sig = warden_platform::signature::sign(APP_SECRET.as_bytes(), &body);
    let status = chunked_post(&h.url, &sig, &body).await;
    assert_eq!(status, 413);
    assert_eq!(h.count("SELECT count(*) AS n FROM webhook_events").await, 1);
}

/// POST with `Transfer-Encoding: chunked` over a raw connection; the response status.
async fn chunked_post(url: &str, signature: &str, body: &[u8]) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         X-Hub-Signature-256: {signature}\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    s.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.chunks(64 * 1024) {
        // The server may answer and close before the whole body is sent.
        if s.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .await
            .is_err()
            || s.write_all(chunk).await.is_err()
            || s.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let _ = s.write_all(b"0\r\n\r\n").await;
    let mut buf = vec![0u8; 1024];
    let n = s.read(&mut buf).await.unwrap();
    let line = String::from_utf8_lossy(&buf[..n]);
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_metrics() {
    let h = Harness::start().await;
    let res = h
        .http
        .get(format!("{}/health", h.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.text().await.unwrap(), "OK");

    h.deliver(&inbound(&phone(), "hi", now(), &wamid())).await;
    let payload = quality("FLAGGED", "TIER_1K");
    h.deliver(&payload).await;
    h.deliver(&payload).await; // replay

    let res = h
        .http
        .get(format!("{}/metrics", h.url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let text = res.text().await.unwrap();
    for needle in [
        "warden_webhook_events_total{kind=\"inbound\"} 1",
        "warden_webhook_events_total{kind=\"quality\"} 1",
        "warden_webhook_events_total{kind=\"status\"} 0",
        "warden_webhook_replays_total 1",
        "warden_webhook_signature_failures_total 0",
        "warden_http_request_duration_seconds_bucket{method=\"POST\",route=\"/webhook\"",
        "warden_webhook_ingest_duration_seconds_bucket",
    ] {
        assert!(text.contains(needle), "{needle} missing from:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_down_is_503_and_health_says_so() {
    warden_service::install_crypto_provider();
    // Settings pointing at a port where no Postgres listens; the pool is built lazily.
    let mut settings = warden_settings::Settings::load(None).unwrap();
    warden_test_support::platform::use_test_account(&mut settings);
    settings.database.port = warden_test_support::free_port();
    let manager = diesel_async::pooled_connection::AsyncDieselConnectionManager::<
        diesel_async::AsyncPgConnection,
    >::new(settings.database.url());
    let pg = diesel_async::pooled_connection::bb8::Pool::builder()
        .connection_timeout(Duration::from_millis(500))
        .build_unchecked(manager);
    let deps = Dependencies {
        settings: Arc::new(settings),
        pg,
        redis: None,
        stream: None,
        policies: Arc::new(PolicySet::default()),
    };
    let (url, handle, _core) = Harness::serve(deps);
    let http = client();
    let payload = inbound(&phone(), "hello", now(), &wamid());
    let res = post_signed(&http, &url, payload.to_string().as_bytes()).await;
    assert_eq!(res.status().as_u16(), 503);
    assert!(res.headers().contains_key("retry-after"));
    // Signature and parsing still come first.
    let res = post_raw(&http, &url, b"{}", None).await;
    assert_eq!(res.status().as_u16(), 401);
    let res = post_signed(&http, &url, b"nope").await;
    assert_eq!(res.status().as_u16(), 400);
    let res = http.get(format!("{url}/health")).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 503);
    handle.stop(false).await;
}
