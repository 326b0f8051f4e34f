//! A platform error has one consequence whichever way it arrives: a retryable code
//! reported by a `failed` status webhook puts the message back in the queue, exactly as the
//! dispatcher does when the same code answers its call (docs/operations.md, Webhook ingestion).

use crate::common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Int4, Nullable, Text};
use diesel_async::RunQueryDsl;
use serde_json::json;
use uuid::Uuid;
use warden_service::Dependencies;

#[derive(QueryableByName, Debug, PartialEq)]
struct RetryRow {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Int4)]
    retry_count: i32,
    #[diesel(sql_type = Nullable<Int4>)]
    error_code: Option<i32>,
    #[diesel(sql_type = Nullable<Bool>)]
    error_can_retry: Option<bool>,
    #[diesel(sql_type = Bool)]
    backing_off: bool,
    #[diesel(sql_type = Bool)]
    published: bool,
    #[diesel(sql_type = Nullable<Text>)]
    wamid: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    explanation: Option<String>,
}

async fn row(h: &Harness, id: Uuid) -> RetryRow {
    let mut c = h.conn().await;
    diesel::sql_query(
        "SELECT status, retry_count, error_code, error_can_retry,
                coalesce(next_attempt_at > now(), false) AS backing_off,
                published_at IS NOT NULL AS published, wamid, error_explanation AS explanation
         FROM messages WHERE id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .get_result(&mut c)
    .await
    .unwrap()
}

async fn set(h: &Harness, id: Uuid, sql: &str) {
    let mut c = h.conn().await;
    diesel::sql_query(format!("UPDATE messages SET {sql} WHERE id = $1"))
        .bind::<diesel::sql_types::Uuid, _>(id)
        .execute(&mut c)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retryable_failure_reported_by_webhook_puts_the_message_back_in_the_queue() {
    let h = Harness::start_streaming(|_| {}).await;
    let to = phone();
    let id = {
        let mut c = h.conn().await;
        outbound_message(&mut c, &to, "sent", Some("wamid.FIRST"), None).await
    };
    // One platform call so far, as the dispatcher's claim counts it.
    set(&h, id, "attempt = 1, sent_at = now()").await;

    let failed = status(
        "wamid.FIRST",
        "failed",
        &to,
        Some(&id.to_string()),
        Some(platform_error(131000)),
    );
    h.deliver(&failed).await;
    let r = row(&h, id).await;
    assert_eq!(
        (
            r.status.as_str(),
            r.retry_count,
            r.error_code,
            r.error_can_retry
        ),
        ("queued", 1, Some(131000), Some(true)),
        "{r:?}"
    );
    assert!(r.backing_off, "waits its backoff: {r:?}");
    assert_eq!(r.wamid.as_deref(), Some("wamid.FIRST"));
    // Published again once the POST is stored.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !row(&h, id).await.published {
        assert!(Instant::now() < deadline, "the retry was never published");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // On the stream under a retry's own de-duplication id (the first publish used the id).
    let stream = h.core.stream().unwrap();
    let js_stream = stream
        .jetstream
        .get_stream(&stream.stream_name)
        .await
        .unwrap();
    let last = js_stream
        .get_last_raw_message_by_subject(&stream.subject("whatsapp"))
        .await
        .unwrap();
    assert_eq!(
        last.headers
            .get("Nats-Msg-Id")
            .map(|v| v.as_str().to_string()),
        Some(format!("{id}:r1"))
    );
    let job: serde_json::Value = serde_json::from_slice(&last.payload).unwrap();
    assert_eq!(job["message_id"], json!(id.to_string()));

    // The dispatcher's own record of that attempt, when the webhook got there first, does
    // not undo the retry (the requeued row keeps the failed attempt's wamid).
    {
        let mut c = h.conn().await;
        let moved = warden_core::delivery::outcomes::apply_status(
            &mut c,
            id,
            "sent",
            chrono::Utc::now(),
            Some("wamid.FIRST"),
            None,
        )
        .await
        .unwrap();
        assert!(!moved);
    }
    // A replay of the webhook changes nothing; a late `sent` of the failed attempt neither.
    h.deliver(&failed).await;
    h.deliver(&status(
        "wamid.FIRST",
        "sent",
        &to,
        Some(&id.to_string()),
        None,
    ))
    .await;
    let again = row(&h, id).await;
    assert_eq!(
        (again.status.as_str(), again.retry_count),
        ("queued", 1),
        "{again:?}"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'retry_after_failed_status' AND entity_id = '{id}'"
        ))
        .await,
        1
    );

    // The next attempt is accepted and then fails the same way, with its attempts spent:
    // it ends failed, as the dispatcher ends it when the same code answers the last call.
    set(
        &h,
        id,
        "status = 'sent', attempt = 8, next_attempt_at = NULL, wamid = 'wamid.LAST'",
    )
    .await;
    h.deliver(&status(
        "wamid.LAST",
        "failed",
        &to,
        Some(&id.to_string()),
        Some(platform_error(131000)),
    ))
    .await;
    let last = row(&h, id).await;
    assert_eq!(
        (last.status.as_str(), last.retry_count, last.error_code),
        ("failed", 1, Some(131000)),
        "{last:?}"
    );
    assert!(
        last.explanation
            .as_deref()
            .is_some_and(|e| e.starts_with("Gave up after 8 attempts")),
        "{last:?}"
    );

    // A code that is not retryable still just fails the message.
    let other = {
        let mut c = h.conn().await;
        outbound_message(&mut c, &to, "sent", Some("wamid.OTHER"), None).await
    };
    h.deliver(&status(
        "wamid.OTHER",
        "failed",
        &to,
        None,
        Some(platform_error(132000)),
    ))
    .await;
    let r = row(&h, other).await;
    assert_eq!((r.status.as_str(), r.retry_count), ("failed", 0), "{r:?}");
}

#[derive(QueryableByName)]
struct Settled {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Int4)]
    retry_count: i32,
    #[diesel(sql_type = Nullable<Text>)]
    wamid: Option<String>,
    #[diesel(sql_type = BigInt)]
    errors: i64,
}

/// The whole chain: platform-sim accepts the first send and fails it by status webhook
/// with 131000; the webhook puts it back in the queue; the dispatcher sends it again; the
/// sim reports the second send as the retry it is, not a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_failed_by_webhook_with_a_retryable_code_is_sent_again_not_duplicated() {
    let token = ACCESS_TOKEN;
    let h = Harness::start_streaming(|_| {}).await;
    let settings = h.core.dependencies().settings.clone();

    // platform-sim, posting its signed webhooks to this webhook server.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sim = warden_sim::start(
        warden_sim::SimConfig {
            http_host: "127.0.0.1".into(),
            http_port: 0,
            webhook_url: Some(format!("{}/webhook", h.url)),
            access_token: token.into(),
            app_secret: APP_SECRET.into(),
            phone_number_id: settings.platform.phone_number_id.clone(),
            waba_id: settings.platform.account_id.clone(),
            workers: 2,
            ..warden_sim::SimConfig::default()
        },
        TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .expect("sim starts");
    let sim_url = sim.base_url();
    let sim_state = sim.state();
    tokio::spawn(sim.wait());

    let (dispatcher, stop) = start_dispatcher(&h, &sim_url, token).await;
    let (to, id) = answer_a_customer(&h).await;
    // The first send is accepted, then failed by status webhook with 131000.
    sim_state.set_fault(to.clone(), 131000, 200, 1, None);
    assert!(h.core.publish(id).await.unwrap(), "published");

    let deadline = Instant::now() + Duration::from_secs(60);
    let settled = loop {
        let s: Settled = {
            let mut c = h.conn().await;
            diesel::sql_query(
                "SELECT status, retry_count, wamid, (error_code IS NOT NULL)::int::int8 AS errors
                 FROM messages WHERE id = $1",
            )
            .bind::<diesel::sql_types::Uuid, _>(id)
            .get_result(&mut c)
            .await
            .unwrap()
        };
        let sends = sim_state
            .stats()
            .by_message
            .get(&id.to_string())
            .map_or(0, |m| m.count);
        if sends == 2 && s.status == "read" {
            break s;
        }
        assert!(
            s.status != "failed",
            "ended failed instead of being retried"
        );
        assert!(
            Instant::now() < deadline,
            "not retried in time: status {} after {sends} sends",
            s.status
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let stats = sim_state.stats();
    let by = &stats.by_message[&id.to_string()];
    assert_eq!(by.count, 2, "one send failed by webhook, one retry");
    assert_eq!(
        stats.duplicates, 0,
        "a retry after a failure is not a duplicate"
    );
    assert_eq!(settled.retry_count, 1);
    assert_eq!(
        settled.wamid.as_deref(),
        Some(by.wamid.as_str()),
        "the row names the attempt that got through"
    );
    assert_eq!(settled.errors, 0, "the failed attempt's error is cleared");

    let _ = stop.send(());
    dispatcher.join().await.unwrap();
}

/// A dispatcher on the harness's database and stream, calling the platform at `api_url`.
async fn start_dispatcher(
    h: &Harness,
    api_url: &str,
    token: &str,
) -> (
    warden_dispatcher::Dispatcher,
    tokio::sync::oneshot::Sender<()>,
) {
    let mut settings = (*h.core.dependencies().settings).clone();
    settings.platform.api_url = api_url.to_string();
    settings.platform.access_token = token.into();
    let settings = Arc::new(settings);
    let deps = Dependencies {
        settings: settings.clone(),
        ..h.core.dependencies().clone()
    };
    let mut config = warden_dispatcher::DispatcherConfig::defaults(&settings);
    config.bucket_channel = Some(format!("t-{}", Uuid::new_v4().simple()));
    config.dispatch.pair_interval = Duration::ZERO;
    config.dispatch.ack_wait = Duration::from_secs(5);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let dispatcher = warden_dispatcher::start(deps, config, async move {
        let _ = stopped.await;
    })
    .await
    .expect("dispatcher starts");
    (dispatcher, stop)
}

/// A customer writes (free-form needs the window), and an answer is accepted (`queued`,
/// not yet published). Returns (customer, message id).
async fn answer_a_customer(h: &Harness) -> (String, Uuid) {
    let to = phone();
    h.deliver(&inbound(&to, "hello?", now() - 5, &wamid()))
        .await;
    let id = Uuid::now_v7();
    let mut c = h.conn().await;
    diesel::sql_query(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, content)
         VALUES ($1, $2, 'whatsapp', 'outbound', 'text', 'service', 'queued',
                 '{\"type\": \"text\", \"text\": {\"body\": \"Your order shipped\"}}')",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .bind::<Text, _>(&to)
    .execute(&mut c)
    .await
    .unwrap();
    (to, id)
}

/// A platform stand-in that reports each send's outcome by status webhook *before* it
/// answers the call: the first send is failed with 131000, later ones are `sent`. This
/// pins the race in which the webhook requeues the message before the dispatcher records
/// the call's answer.
struct WebhookFirst {
    webhook_url: String,
    calls: std::sync::atomic::AtomicUsize,
    http: reqwest::Client,
}

async fn webhook_first(
    stub: actix_web::web::Data<WebhookFirst>,
    req: actix_web::HttpRequest,
    body: actix_web::web::Bytes,
) -> actix_web::HttpResponse {
    // The dispatcher reads the number at start (GET, its throughput): not a send.
    if req.method() != actix_web::http::Method::POST {
        return actix_web::HttpResponse::Ok().json(json!({"id": "stub"}));
    }
    let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let to = req["to"].as_str().unwrap_or_default().to_string();
    let callback = req["biz_opaque_callback_data"].as_str().map(str::to_string);
    let n = stub.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
    let wamid = format!("wamid.STUB{n}");
    let statuses = if n == 1 {
        vec![
            status_item(&wamid, "sent", &to, callback.as_deref(), None),
            status_item(
                &wamid,
                "failed",
                &to,
                callback.as_deref(),
                Some(platform_error(131000)),
            ),
        ]
    } else {
        vec![status_item(&wamid, "sent", &to, callback.as_deref(), None)]
    };
    let payload = envelope(vec![statuses_change(statuses)]);
    let res = post_signed(
        &stub.http,
        &stub.webhook_url,
        payload.to_string().as_bytes(),
    )
    .await;
    assert_eq!(
        res.status().as_u16(),
        200,
        "webhook stored the outcome first"
    );
    actix_web::HttpResponse::Ok().json(json!({
        "messaging_product": "whatsapp",
        "contacts": [{"input": to, "wa_id": to}],
        "messages": [{"id": wamid}]
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_reported_before_the_dispatcher_records_the_call_is_still_retried() {
    let h = Harness::start_streaming(|_| {}).await;
    let stub = actix_web::web::Data::new(WebhookFirst {
        webhook_url: h.url.clone(),
        calls: Default::default(),
        http: client(),
    });
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let stub_url = format!("http://{}", listener.local_addr().unwrap());
    let server = actix_web::HttpServer::new({
        let stub = stub.clone();
        move || {
            actix_web::App::new()
                .app_data(stub.clone())
                .default_service(actix_web::web::post().to(webhook_first))
        }
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .unwrap()
    .run();
    let server_handle = server.handle();
    tokio::spawn(server);

    let (dispatcher, stop) = start_dispatcher(&h, &stub_url, "stub-token").await;
    let (_, id) = answer_a_customer(&h).await;
    assert!(h.core.publish(id).await.unwrap(), "published");

    let deadline = Instant::now() + Duration::from_secs(60);
    let settled = loop {
        let s: Settled = {
            let mut c = h.conn().await;
            diesel::sql_query(
                "SELECT status, retry_count, wamid, (error_code IS NOT NULL)::int::int8 AS errors
                 FROM messages WHERE id = $1",
            )
            .bind::<diesel::sql_types::Uuid, _>(id)
            .get_result(&mut c)
            .await
            .unwrap()
        };
        let calls =
            std::sync::atomic::AtomicUsize::load(&stub.calls, std::sync::atomic::Ordering::SeqCst);
        if calls == 2 && s.status == "sent" && s.wamid.as_deref() == Some("wamid.STUB2") {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "the failed first attempt was not retried: status {} wamid {:?} after {calls} calls",
            s.status,
            s.wamid
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(settled.retry_count, 1);
    assert_eq!(settled.errors, 0);
    let _ = stop.send(());
    dispatcher.join().await.unwrap();
    // Nothing asked for a third call.
    assert_eq!(
        std::sync::atomic::AtomicUsize::load(&stub.calls, std::sync::atomic::Ordering::SeqCst),
        2
    );
    server_handle.stop(false).await;
}
