//! `mcp-gateway --http` as built: two replicas behind a client that alternates between
//! them, in both protocol revisions; the refusals (Origin, header/body mismatch,
//! unsupported version, authentication off only on loopback, no or bad credentials → 401
//! with nothing run); API keys acting within their scopes; OAuth mode's protected resource
//! metadata; `/health` and `/metrics`.

use crate::common;
use crate::http_support;

use std::process::{Command, Stdio};
use std::time::Duration;

use futures::StreamExt;
use http_support::*;
use serde_json::{Value, json};
use warden_test_support::procs;

fn check(phone: &str) -> Value {
    json!({"name": "check_compliance", "arguments": {"customer_id": phone, "message_type": "service"}})
}

/// The tool result's structured content (the call succeeded as a tool).
fn tool_ok(r: &Value) -> &Value {
    assert!(r["error"].is_null(), "JSON-RPC error: {r}");
    assert_ne!(r["result"]["isError"], json!(true), "tool error: {r}");
    &r["result"]["structuredContent"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_both_revisions_round_robin() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let a = GatewayProc::start(&settings, &[]);
    let b = GatewayProc::start(&settings, &[]);
    let replicas = [a.url(), b.url()];
    let phone = common::phone();

    // 2026-07-28: no handshake, no session; every request self-describing.
    let discover = post_new(&replicas[0], 1, "server/discover", json!({})).await;
    assert_eq!(discover.status, 200, "{}", discover.text);
    let d = discover.response(1);
    let versions = d["result"]["supportedVersions"].to_string();
    assert!(
        versions.contains(V_NEW) && versions.contains(V_LEGACY),
        "{d}"
    );
    assert!(discover.session().is_none());
    for (i, url) in replicas.iter().cycle().take(4).enumerate() {
        let id = 10 + i as i64;
        let list = post_new(url, id, "tools/list", json!({})).await;
        assert_eq!(list.status, 200, "{}", list.text);
        let r = list.response(id);
        let tools = r["result"]["tools"].as_array().expect("tools");
        assert!(tools.iter().any(|t| t["name"] == "check_compliance"), "{r}");
        assert!(r["result"]["ttlMs"].is_number(), "cache hint ttlMs: {r}");
        let call = post_new(url, id + 100, "tools/call", check(&phone)).await;
        let r = call.response(id + 100);
        assert!(tool_ok(&r).is_object(), "{r}");
    }

    // 2025-11-25: a session started on A keeps working on B and back (state in Redis).
    let session = initialize_legacy(&replicas[0]).await;
    let mut id = 200;
    for url in replicas.iter().cycle().skip(1).take(6) {
        id += 1;
        let ping = post_legacy(
            url,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        )
        .await;
        assert_eq!(ping.status, 200, "ping on {url}: {}", ping.text);
        assert_eq!(ping.response(id)["result"], json!({}));
        id += 1;
        let list = post_legacy(
            url,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        )
        .await;
        let r = list.response(id);
        assert!(
            r["result"]["tools"]
                .as_array()
                .is_some_and(|t| t.len() > 20),
            "{r}"
        );
        id += 1;
        let call = post_legacy(
            url,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": check(&phone)}),
        )
        .await;
        assert!(tool_ok(&call.response(id)).is_object());
        id += 1;
        let level = post_legacy(
            url,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel", "params": {"level": "warning"}}),
        )
        .await;
        let r = level.response(id);
        assert!(r["error"].is_null(), "logging/setLevel: {r}");
        id += 1;
        let sub = post_legacy(
            url,
            &session,
            json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": "warden://inbox"}}),
        )
        .await;
        let r = sub.response(id);
        assert!(r["error"].is_null(), "resources/subscribe: {r}");
    }
    // An unknown session is 404 on every replica (the MCP specification's "start a new session").
    for url in &replicas {
        let gone = post_legacy(
            url,
            "no-such-session",
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
        )
        .await;
        assert_eq!(gone.status, 404, "{}", gone.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_process_endpoints() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let gw = GatewayProc::start(
        &settings,
        &[("MCP_ALLOWED_ORIGINS", "https://agents.example")],
    );
    let url = gw.url();
    let list =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta_new()}});

    // DNS rebinding: a page from another origin is refused; the allowed one is served.
    let evil = post(
        &url,
        &[
            ("origin", "http://evil.example"),
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/list"),
        ],
        &list,
    )
    .await;
    assert_eq!(evil.status, 403, "{}", evil.text);
    let good = post(
        &url,
        &[
            ("origin", "https://agents.example"),
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/list"),
        ],
        &list,
    )
    .await;
    assert_eq!(good.status, 200, "{}", good.text);
    // A Host this server does not serve (rebinding through a resolver) is refused too.
    let host = post(
        &url,
        &[
            ("host", "attacker.example"),
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/list"),
        ],
        &list,
    )
    .await;
    assert_eq!(host.status, 403, "{}", host.text);

    // Header and body disagree: the MCP specification's header-mismatch error, nothing run.
    let mismatch = post(
        &url,
        &[
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/call"),
        ],
        &list,
    )
    .await;
    assert_eq!(mismatch.status, 400, "{}", mismatch.text);
    assert_eq!(
        mismatch.response(1)["error"]["code"],
        json!(-32020),
        "{}",
        mismatch.text
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": meta_new(), "name": "check_compliance", "arguments": {"customer_id": common::phone(), "message_type": "service"}}});
    let wrong_name = post(
        &url,
        &[
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/call"),
            ("mcp-name", "send_message"),
        ],
        &call,
    )
    .await;
    assert_eq!(wrong_name.status, 400, "{}", wrong_name.text);
    let version = post(
        &url,
        &[
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-method", "tools/list"),
        ],
        &list,
    )
    .await;
    assert_eq!(
        version.status, 400,
        "header version differs from _meta: {}",
        version.text
    );

    // An unsupported version: the MCP specification's error naming the supported ones.
    let mut old = list.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let unsupported = post(
        &url,
        &[
            ("mcp-protocol-version", "2099-01-01"),
            ("mcp-method", "tools/list"),
        ],
        &old,
    )
    .await;
    assert_eq!(unsupported.status, 400, "{}", unsupported.text);
    let err = &unsupported.response(1)["error"];
    assert!(
        err.to_string().contains(V_NEW),
        "supported versions listed: {err}"
    );

    // Process endpoints.
    let client = http_client();
    let health = client
        .get(format!("{}/health", gw.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let metrics = client
        .get(format!("{}/metrics", gw.base()))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("route=\"/mcp\""), "{metrics}");
    let missing = client
        .get(format!("{}/nope", gw.base()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}

/// A 2026-07-28 `tools/call` of `name` with `authorization` (when given).
async fn call_as(gw: &GatewayProc, authorization: Option<&str>, name: &str, args: Value) -> Answer {
    let mut headers = vec![
        ("mcp-protocol-version", V_NEW),
        ("mcp-method", "tools/call"),
        ("mcp-name", name),
    ];
    if let Some(a) = authorization {
        headers.push(("authorization", a));
    }
    let mut params = json!({"name": name, "arguments": args});
    params["_meta"] = meta_new();
    post(
        &gw.url(),
        &headers,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_authenticate_and_scope_every_request() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let pool = warden_store::connect(&settings.database, 1, Duration::from_secs(10))
        .await
        .unwrap();
    let reader = warden_core::agents::create(
        &pool,
        "reader-bot",
        vec!["read".into()],
        Default::default(),
        "test",
    )
    .await
    .unwrap();
    // The default (api_key), as an operator would start it.
    let gw = GatewayProc::start(&settings, &[("MCP_HTTP_AUTH", "api_key")]);
    let phone = common::phone();
    let send = json!({"to": phone, "text": "hello"});
    for auth in [None, Some("Bearer wdn_made_up"), Some("Basic Zm9vOmJhcg==")] {
        let r = call_as(&gw, auth, "send_message", send.clone()).await;
        assert_eq!(r.status, 401, "{auth:?}: {}", r.text);
        let challenge = r.headers.get("www-authenticate").unwrap().to_str().unwrap();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
    }
    let init = post(&gw.url(), &[], &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": V_LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(init.status, 401);
    // 1,000 unauthenticated sends, 16 at a time: every one 401 (counted below: nothing ran).
    let statuses: Vec<u16> = futures::stream::iter(0..1000)
        .map(|i| {
            let (gw, send) = (&gw, send.clone());
            async move {
                let bad = format!("Bearer wdn_{i:016x}");
                call_as(
                    gw,
                    (i % 2 == 0).then_some(bad.as_str()),
                    "send_message",
                    send,
                )
                .await
                .status
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");

    // A valid key acts as its agent, within its scopes.
    let bearer = format!("Bearer {}", reader.key);
    let checked = call_as(
        &gw,
        Some(&bearer),
        "check_compliance",
        check(&phone)["arguments"].clone(),
    )
    .await;
    assert_eq!(checked.status, 200, "{}", checked.text);
    assert!(tool_ok(&checked.response(1)).get("allowed").is_some());
    let refused = call_as(&gw, Some(&bearer), "send_message", send.clone()).await;
    assert_eq!(refused.status, 200, "{}", refused.text);
    let result = &refused.response(1)["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.to_string().contains("FORBIDDEN"), "{result}");
    // OAuth is not configured: no protected resource metadata.
    let metadata = http_client()
        .get(format!(
            "{}/.well-known/oauth-protected-resource",
            gw.base()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(metadata.status(), 404);

    // Nothing ran for the refused sends: no message row.
    let mut conn = pool.get().await.unwrap();
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    #[derive(QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let n: N = diesel::sql_query("SELECT count(*) AS n FROM messages")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(n.n, 0);
    let audits: N = diesel::sql_query(
        "SELECT count(*) AS n FROM audit_logs WHERE actor NOT IN ('test', 'reader-bot')",
    )
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        audits.n, 0,
        "only the agent's creation and its own calls are audited"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oauth_mode_serves_resource_metadata_and_refuses_api_keys() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let pool = warden_store::connect(&settings.database, 1, Duration::from_secs(10))
        .await
        .unwrap();
    let agent = warden_core::agents::create(
        &pool,
        "keyed-bot",
        vec!["read".into()],
        Default::default(),
        "test",
    )
    .await
    .unwrap();
    let gw = GatewayProc::start(
        &settings,
        &[
            ("MCP_HTTP_AUTH", "oauth"),
            ("MCP_OAUTH_ISSUER", "https://issuer.warden.test"),
            ("MCP_OAUTH_AUDIENCE", "https://warden.test/mcp"),
        ],
    );
    let metadata: Value = http_client()
        .get(format!(
            "{}/.well-known/oauth-protected-resource",
            gw.base()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], "https://warden.test/mcp");
    assert_eq!(
        metadata["authorization_servers"],
        json!(["https://issuer.warden.test"])
    );
    // Tokens only: even a valid API key is refused, and the challenge points at the metadata.
    let r = call_as(
        &gw,
        Some(&format!("Bearer {}", agent.key)),
        "check_compliance",
        check(&common::phone())["arguments"].clone(),
    )
    .await;
    assert_eq!(r.status, 401, "{}", r.text);
    let challenge = r.headers.get("www-authenticate").unwrap().to_str().unwrap();
    assert!(
        challenge.contains(
            "resource_metadata=\"https://warden.test/.well-known/oauth-protected-resource\""
        ),
        "{challenge}"
    );
}

#[tokio::test]
async fn no_authentication_is_refused_off_loopback() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let out = Command::new(procs::binary("mcp-gateway"))
        .arg("--http")
        .envs(env_for(&settings))
        .env("MCP_HTTP_ADDR", format!("0.0.0.0:{}", procs::free_port()))
        .env("MCP_HTTP_AUTH", "none")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP_HTTP_AUTH") && stderr.contains("loopback"),
        "{stderr}"
    );
}

/// 2025-11-25: a session subscribed on replica A opens its `GET /mcp` stream on replica B,
/// which never saw it; B restores the session and its subscriptions (Redis), so the
/// resource updates arrive on B's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sessions_subscriptions_follow_it_to_another_replica() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let (a, b) = (
        GatewayProc::start(&settings, &[]),
        GatewayProc::start(&settings, &[]),
    );
    let session = initialize_legacy(&a.url()).await;
    let sub = post_legacy(
        &a.url(),
        &session,
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "warden://inbox"}}),
    )
    .await;
    assert!(sub.response(2)["error"].is_null(), "{}", sub.text);

    let mut stream = http_client()
        .get(b.url())
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", V_LEGACY)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200, "{}", b.log());
    let hints = warden_stream::Hints::connect(&settings, Duration::from_secs(10))
        .await
        .unwrap();
    let customer = common::phone();
    // Hints until B's stream carries the update: B subscribes while it restores the
    // session, which may finish just after the stream opened.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    loop {
        hints
            .publish(&customer, None, warden_stream::HintKind::Inbound)
            .await;
        hints.flush(Duration::from_secs(5)).await.unwrap();
        match tokio::time::timeout(Duration::from_millis(500), stream.chunk()).await {
            Ok(Ok(Some(chunk))) => seen.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(Ok(None)) | Ok(Err(_)) => panic!("B's stream ended: {seen}\n{}", b.log()),
            Err(_) => {}
        }
        if seen.contains("notifications/resources/updated") && seen.contains("warden://inbox") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no update on B's stream within 30 s: {seen}\n{}",
            b.log()
        );
    }
}
