//! Remote agents in process: scopes (tools/list filtered, FORBIDDEN), guardrails exact
//! under concurrency, and attribution (`sent_by`, audit actor). The gateway acts as the
//! caller the HTTP transport would attach (`Gateway::acting_as`).

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{Timelike, Utc};
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use warden_core::agents::{self, Guardrails};
use warden_gateway::Gateway;
use warden_gateway::caller::{Caller, Scope};
use warden_rules::kinds::Category;

use common::{Harness, check_envelope, connect, phone};

fn caller(agent: &str, scopes: &[Scope]) -> Caller {
    Caller {
        agent: agent.into(),
        scopes: scopes.iter().copied().collect(),
        senders: None,
    }
}

async fn client_as(h: &Harness, c: Caller) -> RunningService<RoleClient, ()> {
    connect(Gateway::new(h.deps.clone()).unwrap().acting_as(c)).await
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, Value) {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap());
    let res = client.call_tool(params).await.expect("tools/call");
    check_envelope(name, &res);
    (res.is_error == Some(true), res.structured_content.unwrap())
}

async fn tool_names(client: &RunningService<RoleClient, ()>) -> BTreeSet<String> {
    client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_scope_shows_and_allows_only_its_tools() {
    let h = Harness::start().await;
    let everything = tool_names(&h.client).await;
    assert!(everything.contains("send_message") && everything.contains("archive_chat"));
    for scope in Scope::ALL {
        let client = client_as(&h, caller("scoped", &[scope])).await;
        let shown = tool_names(&client).await;
        assert!(!shown.is_empty(), "{scope}: no tools");
        for tool in &everything {
            let needed = warden_gateway::tool_scope(tool);
            assert_eq!(shown.contains(tool), needed == scope, "{scope}: {tool}");
        }
        // A tool outside the scope is FORBIDDEN, naming the scope it needs; nothing runs.
        let outside = if scope == Scope::Send {
            ("check_compliance", "read")
        } else {
            ("send_message", "send")
        };
        let (is_error, v) = call(
            &client,
            outside.0,
            json!({"to": phone(), "message_type": "service", "text": "hi"}),
        )
        .await;
        assert!(is_error, "{scope}: {} ran: {v}", outside.0);
        assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(&format!("`{}`", outside.1)), "{message}");
    }
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);
    // Every tool has its scope written down (none falls to the admin default unnoticed).
    for tool in &everything {
        assert!(
            warden_gateway::tool_scope_listed(tool),
            "{tool} has no scope"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_need_read() {
    let h = Harness::start().await;
    let reader = client_as(&h, caller("reader", &[Scope::Read])).await;
    let listed = reader.list_all_resources().await.unwrap();
    assert!(!listed.is_empty());
    let sender = client_as(&h, caller("sender", &[Scope::Send])).await;
    let refused = sender.list_all_resources().await.unwrap_err();
    assert!(refused.to_string().contains("FORBIDDEN"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_limit_holds_exactly_under_twenty_concurrent_sends() {
    let h = Harness::start().await;
    const LIMIT: i32 = 5;
    agents::create(
        &h.deps.pg,
        "burst-bot",
        vec!["read".into(), "send".into()],
        Guardrails {
            max_sends_per_minute: Some(LIMIT),
            ..Guardrails::default()
        },
        "test",
    )
    .await
    .unwrap();
    let phones: Vec<String> = (0..20).map(|_| phone()).collect();
    for p in &phones {
        h.inbound(p, Utc::now()).await;
    }
    // The limit is per calendar minute: start early in one so all 20 land in it.
    while Utc::now().second() >= 40 {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let client = client_as(&h, caller("burst-bot", &[Scope::Read, Scope::Send])).await;
    let client = std::sync::Arc::new(client);
    let mut tasks = Vec::new();
    for p in phones {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            call(
                &client,
                "send_message",
                json!({"to": p, "message_type": "service", "text": "hello"}),
            )
            .await
        }));
    }
    let mut accepted = 0;
    let mut limited = 0;
    for t in tasks {
        let (is_error, v) = t.await.unwrap();
        if !is_error {
            accepted += 1;
            continue;
        }
        assert_eq!(v["error"]["code"], "RATE_LIMITED", "{v}");
        let after = v["error"]["retry_after_secs"].as_u64().unwrap();
        assert!((1..=60).contains(&after), "{v}");
        limited += 1;
    }
    assert_eq!((accepted, limited), (LIMIT, 20 - LIMIT));
    assert_eq!(
        h.count("SELECT count(*) AS n FROM message_actors WHERE actor = 'burst-bot'")
            .await,
        i64::from(LIMIT)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_type_outside_the_allowed_ones_is_forbidden() {
    let h = Harness::start().await;
    agents::create(
        &h.deps.pg,
        "utility-bot",
        vec!["send".into()],
        Guardrails {
            allowed_message_types: Some(vec![Category::Utility]),
            ..Guardrails::default()
        },
        "test",
    )
    .await
    .unwrap();
    let p = phone();
    h.inbound(&p, Utc::now()).await;
    let client = client_as(&h, caller("utility-bot", &[Scope::Send])).await;
    let (is_error, v) = call(
        &client,
        "send_message",
        json!({"to": p, "message_type": "service", "text": "hi"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("service"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_and_audit_rows_name_the_agent() {
    let h = Harness::start().await;
    let p = phone();
    h.inbound(&p, Utc::now()).await;
    let client = client_as(&h, caller("support-bot", &Scope::ALL)).await;
    let (is_error, sent) = call(
        &client,
        "send_message",
        json!({"to": p, "message_type": "service", "text": "your order shipped"}),
    )
    .await;
    assert!(!is_error, "{sent}");
    let id = sent["message_id"].as_str().unwrap();
    let (_, status) = call(&client, "get_delivery_status", json!({"message_id": id})).await;
    assert_eq!(status["sent_by"], "support-bot", "{status}");
    let (_, history) = call(
        &client,
        "get_conversation_history",
        json!({"customer_id": p}),
    )
    .await;
    let ours = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["message_id"] == id)
        .unwrap();
    assert_eq!(ours["sent_by"], "support-bot", "{history}");
    // A refusal is audited as the agent too (free-form text to a closed window).
    let q = phone();
    let (is_error, _) = call(
        &client,
        "send_message",
        json!({"to": q, "message_type": "service", "text": "hi"}),
    )
    .await;
    assert!(is_error);
    assert!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE actor = 'support-bot' AND action = 'send_refused'")
            .await
            >= 1
    );
    // stdio acts as MCP_AGENT, `stdio` by default.
    let (is_error, sent) = h
        .call(
            "send_message",
            json!({"to": p, "message_type": "service", "text": "from stdio"}),
        )
        .await;
    assert!(!is_error, "{sent}");
    let (_, status) = h
        .call(
            "get_delivery_status",
            json!({"message_id": sent["message_id"]}),
        )
        .await;
    assert_eq!(status["sent_by"], "stdio", "{status}");
}
