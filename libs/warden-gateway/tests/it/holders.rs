//! Shared numbers end to end (docs/compliance.md, "Shared numbers"): platform-sim sends the
//! signed `smb_message_echoes`, `messaging_handovers` and `standby` webhooks to the webhook
//! server, the core keeps the holder, and the tools show it and obey it. Also the hand-off
//! and release tools (audited, scopes, thread control on a routed number), and the held
//! answer over the official Python MCP SDK.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use serde_json::{Value, json};
use warden_gateway::Gateway;
use warden_gateway::caller::{Caller, Scope};
use warden_sim::users::SimUser;
use warden_test_support::wait;

use common::stack::Stack;
use common::{check_envelope, connect, phone};

const WAIT: Duration = Duration::from_secs(20);

impl Stack {
    /// POST a control request to platform-sim; its JSON answer.
    async fn sim_post(&self, path: &str, body: Value) -> Value {
        let resp = self
            .http
            .post(format!("{}{path}", self.sim_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{path}: {}", resp.status());
        resp.json().await.unwrap()
    }

    async fn holder(&self, customer: &str) -> Value {
        self.ok("check_conversation", json!({"customer_id": customer}))
            .await["holder"]
            .clone()
    }

    /// Wait until check_conversation shows `kind` as the holder; the holder then.
    async fn holder_becomes(&self, customer: &str, kind: &str) -> Value {
        wait::until_some(WAIT, &format!("holder {kind}"), || async {
            let h = self.holder(customer).await;
            (h["kind"] == kind).then_some(h)
        })
        .await
    }

    /// A person answers `customer` from the WhatsApp Business app; waits until the echo is
    /// in the history.
    async fn echo(&self, customer: &str, text: &str) -> String {
        let r = self
            .sim_post("/sim/echo", json!({"to": customer, "text": text}))
            .await;
        let wamid = r["wamid"].as_str().unwrap().to_string();
        wait::until(WAIT, "echo stored", || async {
            let h = self
                .ok("get_conversation_history", json!({"customer_id": customer}))
                .await;
            h["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["wamid"] == wamid.as_str())
        })
        .await;
        wamid
    }

    async fn reply(&self, customer: &str) -> (bool, Value) {
        self.call(
            "reply_customer",
            json!({"customer_id": customer, "message_text": "How can I help?"}),
        )
        .await
    }

    async fn templates(&self) {
        self.insert_template("promo", "en", "marketing", "APPROVED", "Sale {{1}}")
            .await;
        self.insert_template("order_update", "en", "utility", "APPROVED", "Order {{1}}")
            .await;
    }

    async fn send_template(&self, customer: &str, name: &str) -> (bool, Value) {
        self.call(
            "send_template",
            json!({"to": customer, "template_name": name, "variables": ["A-1"]}),
        )
        .await
    }
}

fn held(v: &Value, kind: &str) {
    assert_eq!(v["error"]["code"], "CONVERSATION_HELD", "{v}");
    let action = v["error"]["suggested_action"].as_str().unwrap();
    assert!(action.contains(&format!("held by {kind}")), "{action}");
    assert!(action.contains("Do not reply"), "{action}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(kind) && message.contains("since"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_echo_holds_the_conversation_for_the_person_and_agents_stay_out() {
    let s = Stack::start(|_| {}).await;
    s.templates().await;
    let p = phone();
    s.inbound_text(SimUser::from(p.as_str()), "my order?").await;
    assert_eq!(s.holder(&p).await["kind"], "agents");
    assert!(!s.reply(&p).await.0, "the agents hold it before the echo");

    // A person answers from the Business app: history shows it, the holder is human.
    let wamid = s.echo(&p, "I'll look into it").await;
    let h = s.holder_becomes(&p, "human").await;
    assert_eq!(h["by"], "business_app", "{h}");
    let history = s
        .ok("get_conversation_history", json!({"customer_id": p}))
        .await;
    let m = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["wamid"] == wamid.as_str())
        .unwrap()
        .clone();
    assert_eq!(m["direction"], "outbound", "{m}");
    assert_eq!(m["sent_by"], "business_app", "{m}");
    assert_eq!(m["text"], "I'll look into it", "{m}");
    assert_eq!(history["holder"]["kind"], "human", "{history}");

    // Agents' replies, free-form messages and marketing templates are refused; a utility
    // template (a notification) goes through.
    let (e, v) = s.reply(&p).await;
    assert!(e, "{v}");
    held(&v, "human");
    let (e, v) = s
        .call("send_message", json!({"to": p, "text": "Hello again"}))
        .await;
    assert!(e, "{v}");
    held(&v, "human");
    let (e, v) = s.send_template(&p, "promo").await;
    assert!(e, "{v}");
    held(&v, "human");
    let (e, v) = s.send_template(&p, "order_update").await;
    assert!(!e, "{v}");
    assert_eq!(v["status"], "queued");
    let c = s
        .ok(
            "check_compliance",
            json!({"customer_id": p, "message_type": "service"}),
        )
        .await;
    assert_eq!(c["reason_code"], "CONVERSATION_HELD", "{c}");
    let ctx = s
        .ok("get_customer_context", json!({"customer_id": p}))
        .await;
    assert_eq!(ctx["holder"]["kind"], "human", "{ctx}");
    assert_eq!(ctx["eligibility"]["service"]["eligible"], false, "{ctx}");

    // A second echo, a second later, holds it for longer.
    let until = |h: &Value| {
        chrono::DateTime::parse_from_rfc3339(h["until"].as_str().unwrap())
            .unwrap()
            .timestamp()
    };
    let first = until(&h);
    let stamped = h["since"].as_str().unwrap().to_string();
    wait::until(WAIT, "the next second", || async {
        chrono::Utc::now().timestamp() > first - 30 * 60
    })
    .await;
    s.echo(&p, "Found it").await;
    let later = wait::until_some(WAIT, "until moved", || async {
        let h = s.holder(&p).await;
        (until(&h) > first).then_some(h)
    })
    .await;
    assert_eq!(later["kind"], "human");
    assert_eq!(
        later["since"],
        stamped.as_str(),
        "the same takeover: {later}"
    );

    // Agents' own tools see who holds it in the inbox too (the echo answered the customer,
    // so they leave the inbox; a new message brings them back, still held).
    s.inbound_text(SimUser::from(p.as_str()), "thanks").await;
    let inbox = s.ok("list_inbox", json!({})).await;
    let item = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["customer_id"] == p.as_str())
        .unwrap()
        .clone();
    assert_eq!(item["holder"]["kind"], "human", "{item}");
    // Exactly one change of holder so far (agents -> human), audited once.
    assert_eq!(s.audits("holder_changed").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_echo_opens_no_window_is_not_read_for_stop_and_costs_nothing() {
    let s = Stack::start(|_| {}).await;
    let p = phone();
    // A person writes first, to a customer who never wrote to Warden, and says STOP.
    s.echo(&p, "STOP").await;
    let c = s.ok("check_conversation", json!({"customer_id": p})).await;
    assert_eq!(c["window_open"], false, "{c}");
    assert_eq!(c["last_inbound_at"], Value::Null, "{c}");
    assert_eq!(c["holder"]["kind"], "human", "{c}");
    let ctx = s
        .ok("get_customer_context", json!({"customer_id": p}))
        .await;
    assert_eq!(
        ctx["opt_in"]["marketing"], true,
        "STOP in an echo is not the customer's: {ctx}"
    );
    assert_eq!(ctx["opt_in"]["utility"], true, "{ctx}");
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) AS n FROM message_frequencies WHERE customer_phone = '{p}'"
        ))
        .await,
        0
    );
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) AS n FROM portfolio_reach WHERE customer_phone = '{p}'"
        ))
        .await,
        0,
        "an echo reaches nobody on the messaging limit"
    );
    // The platform stats saw no send (the echo is not ours to send).
    assert!(s.sim.stats().by_message.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_the_takeover_ttl_the_agents_may_reply_again() {
    let s = Stack::start(|s| s.human_takeover_ttl = Duration::from_secs(3)).await;
    let p = phone();
    s.inbound_text(SimUser::from(p.as_str()), "hello").await;
    s.echo(&p, "On it").await;
    // The person held it (its history says so whether or not 3 s already passed).
    assert_eq!(
        s.count(&format!(
            "SELECT count(*) AS n FROM conversation_holder_changes
             WHERE customer_phone = '{p}' AND to_kind = 'human' AND changed_by = 'business_app'"
        ))
        .await,
        1
    );
    let h = s.holder_becomes(&p, "agents").await;
    assert_eq!(h["by"], "expired", "{h}");
    let (e, v) = s.reply(&p).await;
    assert!(!e, "{v}");
    assert_eq!(v["status"], "queued");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handovers_and_standby_copies_move_the_holder_both_ways() {
    let s = Stack::start(|_| {}).await;
    let p = phone();
    s.inbound_text(SimUser::from(p.as_str()), "hi").await;

    s.sim_post(
        "/sim/handover",
        json!({"customer": p, "type": "control_taken"}),
    )
    .await;
    let h = s.holder_becomes(&p, "other_app").await;
    assert_eq!(h["by"], "handover", "{h}");
    let (e, v) = s.reply(&p).await;
    assert!(e, "{v}");
    held(&v, "other_app");

    s.sim_post(
        "/sim/handover",
        json!({"customer": p, "type": "control_passed"}),
    )
    .await;
    s.holder_becomes(&p, "agents").await;
    assert!(!s.reply(&p).await.0, "passed back: the agents reply");

    // A standby copy: another app owns the thread again.
    s.sim_post("/sim/standby", json!({"from": p, "text": "hello?"}))
        .await;
    let h = s.holder_becomes(&p, "other_app").await;
    assert_eq!(h["by"], "standby", "{h}");
    assert!(h["until"].is_string(), "a standby thread goes idle: {h}");
    let (e, v) = s.reply(&p).await;
    assert!(e, "{v}");
    held(&v, "other_app");
    s.sim_post(
        "/sim/handover",
        json!({"customer": p, "type": "control_passed"}),
    )
    .await;
    s.holder_becomes(&p, "agents").await;

    // The number is routed now: a hand-off passes the thread with thread control.
    let v = s
        .ok(
            "hand_off_conversation",
            json!({"customer_id": p, "to": "platform_agent", "note": "billing question"}),
        )
        .await;
    assert_eq!(v["thread_control"], "passed", "{v}");
    assert_eq!(v["holder"]["kind"], "other_app", "{v}");
    let calls = s.sim.routing.calls();
    let call = calls.last().expect("a thread control call");
    assert_eq!(call.action, "pass");
    assert_eq!(call.to, p);
    assert_eq!(call.target_role.as_deref(), Some("ai_agent"));
    assert_eq!(call.metadata.as_deref(), Some("billing question"));
    let v = s
        .ok("release_conversation", json!({"customer_id": p}))
        .await;
    assert_eq!(v["thread_control"], "released", "{v}");
    assert_eq!(s.sim.routing.calls().last().unwrap().action, "release");
    // Six changes: agents -> other_app -> agents -> other_app -> agents -> other_app -> agents.
    assert_eq!(s.audits("holder_changed").await, 6);
}

async fn client_as(s: &Stack, agent: &str, scopes: &[Scope]) -> RunningService<RoleClient, ()> {
    let c = Caller {
        agent: agent.into(),
        scopes: scopes.iter().copied().collect(),
        senders: None,
    };
    connect(Gateway::new(s.deps.clone()).unwrap().acting_as(c)).await
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> (bool, Value) {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap());
    let res = client.call_tool(params).await.expect("tools/call");
    check_envelope(name, &res);
    (res.is_error == Some(true), res.structured_content.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hand_off_and_release_are_audited_and_release_needs_admin() {
    let s = Stack::start(|_| {}).await;
    let p = phone();
    s.inbound_text(SimUser::from(p.as_str()), "I want a person")
        .await;
    let agent = client_as(&s, "support-bot", &[Scope::Read, Scope::Send]).await;
    // Gateways watching the conversation hear of the change (a resource update).
    let watcher = warden_stream::Hints::connect(&s.deps.settings, Duration::from_secs(5))
        .await
        .expect("NATS");
    let mut hints = Box::pin(watcher.subscribe().await.expect("subscribe"));
    watcher.round_trip(Duration::from_secs(5)).await.unwrap();
    let (e, v) = call(
        &agent,
        "hand_off_conversation",
        json!({"customer_id": p, "to": "human", "note": "asked for a person"}),
    )
    .await;
    assert!(!e, "{v}");
    assert_eq!(v["previous"]["kind"], "agents", "{v}");
    assert_eq!(v["holder"]["kind"], "human", "{v}");
    assert_eq!(v["holder"]["by"], "support-bot", "{v}");
    assert_eq!(v["holder"]["until"], Value::Null, "until released: {v}");
    assert_eq!(v["thread_control"], "not_routed", "{v}");
    assert!(
        s.sim.routing.calls().is_empty(),
        "no routing: no thread control"
    );
    let heard = tokio::time::timeout(WAIT, async {
        use futures::StreamExt;
        while let Some(hint) = hints.next().await {
            if hint.token == p && hint.kind == Some(warden_stream::HintKind::Holder) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(heard, Ok(true), "no holder hint for the hand-off");
    let (e, v) = call(
        &agent,
        "reply_customer",
        json!({"customer_id": p, "message_text": "hi"}),
    )
    .await;
    assert!(e, "{v}");
    held(&v, "human");

    // Giving it back is an admin's call.
    let (e, v) = call(&agent, "release_conversation", json!({"customer_id": p})).await;
    assert!(e, "{v}");
    assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("`admin`"),
        "{v}"
    );
    assert_eq!(s.holder(&p).await["kind"], "human");
    let admin = client_as(&s, "ops", &[Scope::Admin]).await;
    let (e, v) = call(&admin, "release_conversation", json!({"customer_id": p})).await;
    assert!(!e, "{v}");
    assert_eq!(v["holder"]["kind"], "agents", "{v}");
    assert_eq!(v["holder"]["by"], "ops", "{v}");

    // Both audited: who, from, to and why.
    let rows = s
        .count(&format!(
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'holder_changed'
               AND entity_id = '{p}'
               AND ((actor = 'support-bot' AND details->>'from' = 'agents'
                     AND details->>'to' = 'human' AND details->>'why' LIKE '%asked for a person%')
                 OR (actor = 'ops' AND details->>'from' = 'human' AND details->>'to' = 'agents'))"
        ))
        .await;
    assert_eq!(rows, 2);
    let (e, v) = call(
        &agent,
        "reply_customer",
        json!({"customer_id": p, "message_text": "I'm back"}),
    )
    .await;
    assert!(!e, "{v}");
    // A bad `to` is refused before anything changes.
    let (e, v) = call(
        &agent,
        "hand_off_conversation",
        json!({"customer_id": p, "to": "robot"}),
    )
    .await;
    assert!(e);
    assert_eq!(v["error"]["code"], "INVALID_ARGUMENT", "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thread_control_take_is_refused_unless_allowed() {
    let s = Stack::start(|_| {}).await;
    let post = |take: bool| {
        let s = &s;
        async move {
            s.http
                .post(format!(
                    "{}/v25.0/{}/thread_control",
                    s.sim_url,
                    common::PHONE_NUMBER_ID
                ))
                .bearer_auth(common::ACCESS_TOKEN)
                .json(
                    &json!({"messaging_product": "whatsapp", "to": "6281234567890",
                              "action": if take { "take" } else { "release" }}),
                )
                .send()
                .await
                .unwrap()
        }
    };
    let r = post(true).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], 2494191, "{body}");
    assert_eq!(post(false).await.status(), 200);
    s.sim_post("/sim/thread_control", json!({"take_allowed": true}))
        .await;
    assert_eq!(post(true).await.status(), 200);
    let actions: Vec<String> = s
        .sim
        .routing
        .calls()
        .into_iter()
        .map(|c| c.action)
        .collect();
    assert_eq!(actions, ["release", "take"]);
}

/// The held answer is an instruction an LLM follows: over the official Python MCP SDK, the
/// built gateway answers a reply to a conversation a person holds with CONVERSATION_HELD,
/// naming the holder and what to do instead (`tests/python/held_session.py`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_held_answer_over_the_python_sdk_names_the_holder_and_what_to_do() {
    let python = crate::python_sdk::python_with_mcp();
    let binary = warden_test_support::binary("mcp-gateway");
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let d = settings.database.clone();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/held_session.py");
    let hook = common::webhook::WebhookProc::start(&settings);
    let webhook_url = hook.url();
    let output = tokio::task::spawn_blocking({
        let settings = settings.clone();
        move || {
            Command::new(&python)
                .arg(&script)
                .arg(&binary)
                .env("DB_HOST", &d.host)
                .env("DB_PORT", d.port.to_string())
                .env("DB_USER", &d.user)
                .env("DB_PASSWORD", &d.password)
                .env("DB_NAME", &d.name)
                .env("DB_SSLMODE", d.sslmode.as_str())
                .env("REDIS_ADDR", &settings.redis.addr)
                .env("REDIS_PASSWORD", &settings.redis.password)
                .env("REDIS_DB", settings.redis.db.to_string())
                .env("NATS_URL", &settings.nats_url)
                .env("DELIVERY_STREAM", &settings.delivery_stream)
                .env("POLICIES_PATH", &settings.policies_path)
                .env("PLATFORM_API_URL", &settings.platform.api_url)
                .env(
                    "PLATFORM_PHONE_NUMBER_ID",
                    &settings.platform.phone_number_id,
                )
                .env("WEBHOOK_URL", &webhook_url)
                .env("WEBHOOK_SECRET", common::APP_SECRET)
                .env("TIER", "pro")
                .env("RUST_LOG", "warn")
                .output()
                .expect("run the python session")
        }
    })
    .await
    .unwrap();
    drop(hook);
    if let Ok(client) = async_nats::connect(&settings.nats_url).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&settings.delivery_stream)
            .await;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python held session failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("held session: ok"), "{stdout}");
}
