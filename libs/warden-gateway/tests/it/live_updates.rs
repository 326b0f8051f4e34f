//! MCP resources with live updates, end to end across processes: the built `webhook`
//! binary stores signed platform POSTs and publishes conversation hints on NATS; the
//! gateway (in process, real rmcp clients) turns them into `notifications/resources/updated`.
//!
//! Needs `cargo build --bins` (the webhook binary) and Postgres, Redis, NATS.

#![allow(deprecated)] // resources/subscribe is the 2025-11-25 way, tested on purpose

use crate::common;

use std::time::{Duration, Instant};

use rmcp::model::{
    ProtocolVersion, ReadResourceRequestParams, ResourceContents, ResourceUpdatedNotificationParam,
    ServerNotification, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::json;
use tokio::sync::mpsc;
use warden_gateway::Gateway;

use common::webhook::{self, WebhookProc};

/// Records every `notifications/resources/updated` with the time it arrived.
#[derive(Clone)]
struct Listener {
    tx: mpsc::UnboundedSender<(String, Instant)>,
}

impl ClientHandler for Listener {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.tx.send((params.uri, Instant::now()));
    }
}

type Updates = mpsc::UnboundedReceiver<(String, Instant)>;

async fn legacy_client(gateway: Gateway) -> (RunningService<RoleClient, Listener>, Updates) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(service) = gateway.serve(server_io).await {
            let _ = service.waiting().await;
        }
    });
    let client = Listener { tx }
        .serve(client_io)
        .await
        .expect("client connects");
    (client, rx)
}

/// The next update, within `within` (panics naming what was awaited).
async fn next(updates: &mut Updates, within: Duration, what: &str) -> (String, Instant) {
    tokio::time::timeout(within, updates.recv())
        .await
        .unwrap_or_else(|_| panic!("no notification within {within:?}: {what}"))
        .expect("client alive")
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_hear_of_inbound_messages_and_status_changes_from_another_process() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let phone_id = settings.platform.phone_number_id.clone();
    let hook = WebhookProc::start(&settings);
    let deps = common::deps_for(settings, true).await;
    let gateway = Gateway::new(deps.clone()).expect("gateway");
    let (client, mut updates) = legacy_client(gateway.clone()).await;

    // The catalogue.
    let info = client.peer_info().expect("server info");
    let resources_cap = info.capabilities.resources.clone().expect("resources");
    assert_eq!(resources_cap.subscribe, Some(true));
    let listed = client.list_all_resources().await.expect("resources/list");
    assert_eq!(
        listed.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        ["warden://inbox"]
    );
    let templates = client
        .list_all_resource_templates()
        .await
        .expect("resources/templates/list");
    assert_eq!(
        templates
            .iter()
            .map(|t| t.uri_template.as_str())
            .collect::<Vec<_>>(),
        ["warden://conversations/{customer_id}"]
    );

    // Bad URIs are refused.
    for uri in ["warden://conversations/not-a-phone", "file:///etc/passwd"] {
        assert!(
            client
                .subscribe(SubscribeRequestParams::new(uri))
                .await
                .is_err(),
            "{uri}"
        );
    }

    let (ana, ben) = (common::phone(), common::phone());
    let ana_uri = format!("warden://conversations/+{ana}");
    client
        .subscribe(SubscribeRequestParams::new("warden://inbox"))
        .await
        .expect("subscribe inbox");
    client
        .subscribe(SubscribeRequestParams::new(ana_uri.clone()))
        .await
        .expect("subscribe conversation");
    assert_eq!(gateway.subscription_count(), 2);

    // Ben writes: only the inbox changes. Ana writes: the inbox and her conversation.
    // One NATS connection delivers hints in order, so Ana's updates come after Ben's.
    let ben_at = hook
        .post(&webhook::inbound_text(&phone_id, &ben, "hello from ben"))
        .await;
    let (uri, at) = next(&mut updates, WAIT, "inbox after Ben's message").await;
    assert_eq!(uri, "warden://inbox");
    eprintln!("inbound -> notification: {:?}", at.duration_since(ben_at));
    let ana_at = hook
        .post(&webhook::inbound_text(&phone_id, &ana, "hello from ana"))
        .await;
    let mut got = [
        next(&mut updates, WAIT, "first update after Ana's message").await,
        next(&mut updates, WAIT, "second update after Ana's message").await,
    ];
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got.iter().map(|(u, _)| u.as_str()).collect::<Vec<_>>(),
        [ana_uri.as_str(), "warden://inbox"],
        "the conversation URI is named as the client wrote it"
    );
    let latency = got[0].1.duration_since(ana_at);
    eprintln!("inbound -> notification: {latency:?}");

    // Reading the resources gives what the tools answer (same core calls, same JSON).
    let read = |uri: String| {
        let client = &client;
        async move {
            let res = client
                .read_resource(ReadResourceRequestParams::new(uri.clone()))
                .await
                .unwrap_or_else(|e| panic!("resources/read {uri}: {e}"));
            let [
                ResourceContents::TextResourceContents {
                    text, mime_type, ..
                },
            ] = res.contents.as_slice()
            else {
                panic!("one text content expected: {res:?}");
            };
            assert_eq!(mime_type.as_deref(), Some("application/json"));
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        }
    };
    let tool = |name: &'static str, args: serde_json::Value| {
        let client = &client;
        async move {
            let res = client
                .call_tool(
                    rmcp::model::CallToolRequestParams::new(name)
                        .with_arguments(args.as_object().cloned().unwrap()),
                )
                .await
                .unwrap();
            res.structured_content.unwrap()
        }
    };
    let history = read(ana_uri.clone()).await;
    assert_eq!(history["messages"][0]["text"], "hello from ana");
    assert_eq!(
        history,
        tool("get_conversation_history", json!({"customer_id": ana})).await
    );
    let inbox = read("warden://inbox".into()).await;
    let listed = tool("list_inbox", json!({})).await;
    let customers = |v: &serde_json::Value| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["customer_id"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(customers(&inbox), customers(&listed));
    assert_eq!(inbox["total"], 2);
    assert!(
        client
            .read_resource(ReadResourceRequestParams::new("warden://nope"))
            .await
            .is_err()
    );

    // An outbound message to Ana (her window is open) and its status webhook.
    let sent = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("send_message").with_arguments(
                json!({"to": ana, "text": "hi Ana"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .expect("send_message");
    assert_ne!(sent.is_error, Some(true), "{sent:?}");
    let message_id = sent.structured_content.as_ref().unwrap()["message_id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut accepted = [
        next(&mut updates, WAIT, "update after the send").await.0,
        next(&mut updates, WAIT, "update after the send").await.0,
    ];
    accepted.sort();
    assert_eq!(accepted, [ana_uri.clone(), "warden://inbox".to_string()]);
    let status_at = hook
        .post(&webhook::status(&phone_id, &ana, &message_id, "delivered"))
        .await;
    let mut moved = [
        next(&mut updates, WAIT, "update after the status").await,
        next(&mut updates, WAIT, "update after the status").await,
    ];
    moved.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(moved[0].0, ana_uri);
    eprintln!(
        "status -> notification: {:?}",
        moved[0].1.duration_since(status_at)
    );

    // Unsubscribed from Ana's conversation: her next message wakes only the inbox. Ben's
    // message after it proves every update of Ana's has arrived by then.
    client
        .unsubscribe(UnsubscribeRequestParams::new(ana_uri.clone()))
        .await
        .expect("unsubscribe");
    assert_eq!(gateway.subscription_count(), 1);
    hook.post(&webhook::inbound_text(&phone_id, &ana, "still there?"))
        .await;
    hook.post(&webhook::inbound_text(&phone_id, &ben, "me too"))
        .await;
    let after = [
        next(&mut updates, WAIT, "inbox after Ana's third message")
            .await
            .0,
        next(&mut updates, WAIT, "inbox after Ben's second message")
            .await
            .0,
    ];
    assert_eq!(after, ["warden://inbox", "warden://inbox"]);
    assert!(updates.try_recv().is_err(), "nothing else arrived");

    client.cancel().await.ok();
    drop(hook);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_listens_with_subscriptions_listen() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let phone_id = settings.platform.phone_number_id.clone();
    let hook = WebhookProc::start(&settings);
    let deps = common::deps_for(settings, true).await;
    let gateway = Gateway::new(deps.clone()).expect("gateway");
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn({
        let gateway = gateway.clone();
        async move {
            if let Ok(service) = gateway.serve(server_io).await {
                let _ = service.waiting().await;
            }
        }
    });
    let client = ()
        .serve_with_lifecycle(
            client_io,
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover");

    let cleo = common::phone();
    let cleo_uri = format!("warden://conversations/{cleo}");
    let filter = SubscriptionFilter::builder()
        .resource_subscriptions([cleo_uri.clone(), "warden://nothing".to_string()])
        .build();
    let mut sub = client.peer().listen(filter).await.expect("listen");
    assert_eq!(
        sub.acknowledged().resource_subscriptions.as_deref(),
        Some(&[cleo_uri.clone()][..]),
        "only the URIs this server serves are accepted"
    );
    // The registration follows the acknowledgment: wait for it before writing.
    warden_test_support::wait::until(WAIT, "listen registered", || {
        let n = gateway.subscription_count();
        async move { n == 1 }
    })
    .await;

    hook.post(&webhook::inbound_text(&phone_id, &cleo, "hi"))
        .await;
    let note = tokio::time::timeout(WAIT, sub.next())
        .await
        .expect("an update within the deadline")
        .expect("subscription healthy")
        .expect("subscription open");
    let ServerNotification::ResourceUpdatedNotification(n) = note else {
        panic!("unexpected notification {note:?}");
    };
    assert_eq!(n.params.uri, cleo_uri);

    // Cancelling the listen request ends the subscription.
    sub.cancel().await.ok();
    warden_test_support::wait::until(WAIT, "listen ended", || {
        let n = gateway.subscription_count();
        async move { n == 0 }
    })
    .await;
    client.cancel().await.ok();
}

/// An agent limited to a1 (the example senders file) is woken only by changes to a1's
/// conversations. A hint about b1's conversation with one customer is published first, then
/// one about a1's with another (the sentinel): hints of one publisher arrive in order and
/// one listener turns them into notifications in order, so everything b1's hint caused
/// would arrive before the sentinel's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_agent_hears_only_of_its_own_numbers() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = common::prepared_db().await;
    let mut settings = common::settings_for(&db, &common::Opts::default()).await;
    crate::senders::with_senders(&mut settings);
    let deps = common::deps_for(settings, true).await;
    let a1_only = warden_gateway::caller::Caller {
        agent: "a1-bot".into(),
        scopes: warden_gateway::caller::Scope::ALL.into_iter().collect(),
        senders: Some(vec!["a1".into()]),
    };
    let gateway = Gateway::new(deps.clone())
        .expect("gateway")
        .acting_as(a1_only);
    let (client, mut updates) = legacy_client(gateway).await;
    let (of_b, sentinel) = ("6281234500011", "6281234500022");
    let conversation = |c: &str| format!("warden://conversations/{c}");
    for uri in [
        "warden://inbox".to_string(),
        conversation(of_b),
        conversation(sentinel),
    ] {
        client
            .subscribe(SubscribeRequestParams::new(uri))
            .await
            .expect("subscribe");
    }
    let hints = &deps.stream.as_ref().expect("NATS").hints;
    // b1 is stored under its id, a1 (the default sender) as `default`.
    hints
        .publish(of_b, Some("b1"), warden_stream::HintKind::Inbound)
        .await;
    hints
        .publish(sentinel, Some("default"), warden_stream::HintKind::Inbound)
        .await;
    // The sentinel's hint wakes its conversation and the inbox; the client may hand the two
    // notifications on in either order, so both are awaited. b1's were sent before them.
    let mut woken = Vec::new();
    while !(woken.contains(&conversation(sentinel)) && woken.iter().any(|u| u == "warden://inbox"))
    {
        woken.push(next(&mut updates, WAIT, "the sentinel").await.0);
    }
    assert!(
        !woken.contains(&conversation(of_b)),
        "b1's hint woke a1's agent: {woken:?}"
    );
    assert_eq!(
        woken.iter().filter(|u| *u == "warden://inbox").count(),
        1,
        "{woken:?}"
    );
    // A change to every number's conversation (content erased) wakes it.
    hints
        .publish(of_b, None, warden_stream::HintKind::Redacted)
        .await;
    let mut erased = vec![next(&mut updates, WAIT, "the erasure").await.0];
    erased.push(
        next(&mut updates, WAIT, "the erasure, second resource")
            .await
            .0,
    );
    erased.sort();
    assert_eq!(erased, [conversation(of_b), "warden://inbox".to_string()]);
}
