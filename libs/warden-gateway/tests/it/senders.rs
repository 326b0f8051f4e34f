//! Several numbers at the gateway, with the example senders file (examples/senders.yaml:
//! a1, the default, and a2 of business A; b1 of business B): an unknown `from`, agents
//! limited to some senders (over HTTP, with API keys), list_senders, schedule_message from
//! another number, campaigns over several numbers of one business.

use crate::common;
use crate::http_support;

use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};
use warden_core::agents::{self, Guardrails};
use warden_settings::{Senders, Settings};

use common::{Harness, Opts, phone};
use http_support::{GatewayProc, V_NEW, meta_new, post};

const SENDERS_YAML: &str = include_str!("../../../../examples/senders.yaml");

/// The variables the example names (dummy values: nothing here reaches the platform).
const SENDER_ENV: [(&str, &str); 5] = [
    ("SENDER_A1_TOKEN", "tok-a1"),
    ("SENDER_A2_TOKEN", "tok-a2"),
    ("SENDER_B1_TOKEN", "tok-b1"),
    ("SENDER_A_APP_SECRET", "app-a"),
    ("SENDER_B_APP_SECRET", "app-b"),
];

pub(crate) fn example_senders() -> Senders {
    Senders::from_yaml(SENDERS_YAML, &|name| {
        SENDER_ENV
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    })
    .unwrap()
}

pub(crate) fn with_senders(settings: &mut Settings) {
    settings.senders_file = Some(example_senders());
}

async fn harness() -> Harness {
    Harness::with(Opts {
        adjust: with_senders,
        ..Opts::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_from_lists_the_senders() {
    let h = harness().await;
    let p = phone();
    for (tool, args) in [
        (
            "check_compliance",
            json!({"customer_id": p, "message_type": "service", "from": "c9"}),
        ),
        ("send_message", json!({"to": p, "text": "hi", "from": "c9"})),
        (
            "schedule_message",
            json!({"customer_id": p, "message_type": "service", "from": "c9",
                   "content": {"type": "text", "text": {"body": "later"}},
                   "deliver_at": (Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339()}),
        ),
    ] {
        let e = h.err("INVALID_ARGUMENT", tool, args).await;
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("`c9`"), "{tool}: {message}");
        assert!(message.contains("a1, a2, b1"), "{tool}: {message}");
    }
    assert_eq!(h.count("SELECT count(*) AS n FROM messages").await, 0);
}

/// The HTTP gateway with API keys and the example senders file on disk, as an operator
/// deploys it (the folder holding the file lives as long as the returned guard).
pub(crate) fn http_gateway_with_senders(settings: &Settings) -> (GatewayProc, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("senders.yaml");
    std::fs::write(&path, SENDERS_YAML).unwrap();
    let path = path.display().to_string();
    let mut extra = vec![
        ("MCP_HTTP_AUTH", "api_key"),
        ("SENDERS_PATH", path.as_str()),
    ];
    extra.extend(SENDER_ENV);
    (GatewayProc::start(settings, &extra), dir)
}

/// A 2026-07-28 `tools/call` with a Bearer credential; the JSON-RPC response.
pub(crate) async fn call_as(gw: &GatewayProc, bearer: &str, name: &str, args: Value) -> Value {
    let mut params = json!({"name": name, "arguments": args});
    params["_meta"] = meta_new();
    let answer = post(
        &gw.url(),
        &[
            ("mcp-protocol-version", V_NEW),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
            ("authorization", bearer),
        ],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .await;
    assert_eq!(answer.status, 200, "{name}: {}", answer.text);
    answer.response(1)["result"].clone()
}

fn refused(result: &Value, code: &str) -> String {
    assert_eq!(result["isError"], true, "{result}");
    let error = &result["structuredContent"]["error"];
    assert_eq!(error["code"], code, "{result}");
    format!("{} {}", error["message"], error["suggested_action"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_limited_to_a1_sends_from_a1_only_over_http() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &Opts::default()).await;
    let pg = warden_store::connect(&settings.database, 2, Duration::from_secs(10))
        .await
        .unwrap();
    let limited = |senders: &[&str]| Guardrails {
        senders: Some(senders.iter().map(|s| s.to_string()).collect()),
        ..Guardrails::default()
    };
    let scopes = || vec!["read".to_string(), "send".to_string()];
    let a1_bot = agents::create(&pg, "a1-bot", scopes(), limited(&["a1"]), "test")
        .await
        .unwrap();
    let b1_bot = agents::create(&pg, "b1-bot", scopes(), limited(&["b1"]), "test")
        .await
        .unwrap();
    assert_eq!(a1_bot.agent.guardrails.senders, Some(vec!["a1".into()]));

    let (gw, _dir) = http_gateway_with_senders(&settings);

    // The customer wrote to a1 (the default sender, stored as `default`): its window is open.
    let p = phone();
    let key = warden_rules::phone::canonicalize(&p).unwrap();
    {
        let mut c = pg.get().await.unwrap();
        warden_core::customers::ensure(&mut c, &key).await.unwrap();
        warden_core::conversations::record_inbound(&mut c, &key, "whatsapp", "default", Utc::now())
            .await
            .unwrap();
    }
    let a1 = format!("Bearer {}", a1_bot.key);
    for from in ["b1", "104000000000003", "a2"] {
        let r = call_as(
            &gw,
            &a1,
            "send_message",
            json!({"to": p, "text": "hello", "from": from}),
        )
        .await;
        let text = refused(&r, "FORBIDDEN");
        let named = if from == "a2" { "a2" } else { "b1" };
        assert!(text.contains(&format!("sender `{named}`")), "{text}");
        assert!(
            text.contains("a1-bot") && text.contains("may use a1"),
            "{text}"
        );
        assert!(text.contains("Pass `from` with one of a1"), "{text}");
    }
    let sent = call_as(
        &gw,
        &a1,
        "send_message",
        json!({"to": p, "text": "hello", "from": "a1"}),
    )
    .await;
    assert_ne!(sent["isError"], true, "{sent}");
    assert_eq!(sent["structuredContent"]["from"], "a1", "{sent}");
    assert_eq!(sent["structuredContent"]["status"], "queued", "{sent}");
    // No `from`: the default sender, a1, which it may use.
    let checked = call_as(
        &gw,
        &a1,
        "check_compliance",
        json!({"customer_id": p, "message_type": "service"}),
    )
    .await;
    assert_ne!(checked["isError"], true, "{checked}");

    // list_inbox without `from` reads the numbers it may use (a1), never all of them.
    let r = call_as(&gw, &a1, "list_inbox", json!({})).await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call_as(&gw, &a1, "list_inbox", json!({"from": "a1"})).await;
    assert_ne!(r["isError"], true, "{r}");

    // An agent limited to b1, naming no number, is about b1 (not the default, a1).
    let b1 = format!("Bearer {}", b1_bot.key);
    let r = call_as(
        &gw,
        &b1,
        "check_compliance",
        json!({"customer_id": p, "message_type": "service"}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["from"], "b1", "{r}");
    // The customer wrote to a1 only: b1's window is closed, so service is refused there.
    assert_eq!(r["structuredContent"]["allowed"], false, "{r}");
    let r = call_as(
        &gw,
        &b1,
        "check_compliance",
        json!({"customer_id": p, "message_type": "service", "from": "a1"}),
    )
    .await;
    let text = refused(&r, "FORBIDDEN");
    assert!(text.contains("sender `a1`"), "{text}");
    assert!(text.contains("Pass `from` with one of b1"), "{text}");
    // Templates belong to a business: without `from`, b1's (business B's).
    let r = call_as(&gw, &b1, "list_templates", json!({})).await;
    assert_ne!(r["isError"], true, "{r}");
    let r = call_as(&gw, &b1, "list_templates", json!({"from": "a1"})).await;
    refused(&r, "FORBIDDEN");
    // A tool that names no sender is not limited.
    let r = call_as(&gw, &b1, "explain_error", json!({"code": "131047"})).await;
    assert_ne!(r["isError"], true, "{r}");

    // Only the one allowed send was written.
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    let mut c = pg.get().await.unwrap();
    let n: i64 = warden_store::schema::messages::table
        .count()
        .get_result(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

/// What warden-scheduler does with a due row: its stored request through the send path.
async fn dispatch_due(h: &Harness, id: &str) -> warden_core::send::Accepted {
    let row = h.message(id).await;
    let due = warden_core::scheduling::due::DueMessage {
        id: row.id,
        customer_phone: row.customer_phone,
        channel: row.channel,
        message_type: row.message_type,
        content: row.content,
        campaign_id: row.campaign_id,
    };
    warden_core::Core::new(h.deps.clone(), "scheduler")
        .send(due.request("scheduler").unwrap())
        .await
        .unwrap()
}

async fn sender_row(h: &Harness, id: &str) -> Option<(String, String)> {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use warden_store::schema::message_senders as ms;
    let mut c = h.conn().await;
    ms::table
        .find(uuid::Uuid::parse_str(id).unwrap())
        .select((ms::sender_id, ms::business))
        .first(&mut c)
        .await
        .optional()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_scheduled_from_a2_goes_out_from_a2() {
    let h = harness().await;
    let p = phone();
    let key = warden_rules::phone::canonicalize(&p).unwrap();
    {
        // The customer wrote to a2 only: a2's window is open, a1's is not.
        let mut c = h.conn().await;
        warden_core::customers::ensure(&mut c, &key).await.unwrap();
        warden_core::conversations::record_inbound(&mut c, &key, "whatsapp", "a2", Utc::now())
            .await
            .unwrap();
    }
    let later = (Utc::now() + chrono::TimeDelta::minutes(30)).to_rfc3339();
    let text = json!({"type": "text", "text": {"body": "Your order shipped"}});
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": p, "message_type": "service", "deliver_at": later,
                   "content": text, "from": "a2"}),
        )
        .await;
    assert_eq!(v["from"], "a2", "{v}");
    let id = v["message_id"].as_str().unwrap();
    // Stored with its number (a2 is of the default sender's business, stored `default`).
    assert_eq!(
        sender_row(&h, id).await,
        Some(("a2".to_string(), "default".to_string()))
    );
    let sent = dispatch_due(&h, id).await;
    assert_eq!(sent.from, "a2");
    assert_eq!(h.message(id).await.status, "queued");

    // Without `from`: the default sender, a1, with no row; at dispatch a1 has no window.
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": p, "message_type": "service", "deliver_at": later,
                   "content": text}),
        )
        .await;
    assert_eq!(v["from"], "a1", "{v}");
    let id = v["message_id"].as_str().unwrap();
    assert_eq!(sender_row(&h, id).await, None);
    let _ = warden_core::Core::new(h.deps.clone(), "scheduler")
        .send(
            warden_core::scheduling::due::DueMessage {
                id: uuid::Uuid::parse_str(id).unwrap(),
                customer_phone: key.digits().to_string(),
                channel: "whatsapp".into(),
                message_type: "service".into(),
                content: text.clone(),
                campaign_id: None,
            }
            .request("scheduler")
            .unwrap(),
        )
        .await;
    assert_eq!(h.message(id).await.status, "failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduling_checks_the_opt_out_of_the_senders_business() {
    let h = harness().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    business_template(&h, BUSINESS_B, "promo", "APPROVED").await;
    let p = phone();
    // A STOP to business A (the default sender's): a1 and a2 may not schedule marketing.
    h.opt_out(&p, false).await;
    let later = (Utc::now() + chrono::TimeDelta::minutes(30)).to_rfc3339();
    let promo = json!({"type": "template", "template": {"name": "promo", "language": "en", "variables": ["20%"]}});
    for from in ["a1", "a2"] {
        h.err(
            "USER_OPTED_OUT",
            "schedule_message",
            json!({"customer_id": p, "message_type": "marketing", "deliver_at": later,
                   "content": promo, "from": from}),
        )
        .await;
    }
    // Business B was never told STOP.
    let v = h
        .ok(
            "schedule_message",
            json!({"customer_id": p, "message_type": "marketing", "deliver_at": later,
                   "content": promo, "from": "b1"}),
        )
        .await;
    assert_eq!(v["from"], "b1");
    assert_eq!(
        sender_row(&h, v["message_id"].as_str().unwrap()).await,
        Some(("b1".to_string(), "204000000000002".to_string()))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_stdio_mcp_agent_naming_a_limited_agent_limits_it() {
    let h = Harness::with(Opts {
        adjust: |s| {
            with_senders(s);
            s.identity.agent = "desk-a1".into();
        },
        ..Opts::default()
    })
    .await;
    let p = phone();
    // No such agent yet: every sender.
    let gateway = warden_gateway::Gateway::new(h.deps.clone())
        .unwrap()
        .with_stored_agent_senders()
        .await
        .unwrap();
    assert_eq!(gateway.local_caller().senders, None);
    let limited = Guardrails {
        senders: Some(vec!["a1".into()]),
        ..Guardrails::default()
    };
    agents::create(&h.deps.pg, "desk-a1", vec!["read".into()], limited, "test")
        .await
        .unwrap();
    let gateway = warden_gateway::Gateway::new(h.deps.clone())
        .unwrap()
        .with_stored_agent_senders()
        .await
        .unwrap();
    // Still every scope (stdio is local), but only a1.
    assert_eq!(gateway.local_caller().senders, Some(vec!["a1".to_string()]));
    let client = common::connect(gateway).await;
    let call = |args: Value| {
        let params = rmcp::model::CallToolRequestParams::new("check_compliance")
            .with_arguments(args.as_object().cloned().unwrap());
        client.call_tool(params)
    };
    let r = call(json!({"customer_id": p, "message_type": "service", "from": "b1"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let v = r.structured_content.unwrap();
    assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
    let r = call(json!({"customer_id": p, "message_type": "service"}))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
}

async fn campaign_row(h: &Harness, id: &str) -> (String, Option<Vec<String>>) {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use warden_store::schema::campaigns;
    let mut c = h.conn().await;
    campaigns::table
        .find(uuid::Uuid::parse_str(id).unwrap())
        .select((campaigns::sender_id, campaigns::senders))
        .first(&mut c)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_spreads_over_numbers_of_one_business_only() {
    let h = harness().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    business_template(&h, BUSINESS_B, "promo", "APPROVED").await;
    let later = (Utc::now() + chrono::TimeDelta::hours(2)).to_rfc3339();
    let campaign = |extra: Value| {
        let mut args = json!({"name": "spring", "type": "marketing", "template_name": "promo",
                              "deliver_at": later, "variables": {"1": "20%"}});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };

    // a1 (the default, stored `default`) and a2 of business A: both stored.
    let v = h
        .ok(
            "schedule_campaign",
            campaign(json!({"senders": ["a1", "104000000000002", "a1"]})),
        )
        .await;
    assert_eq!(v["from"], "a1", "{v}");
    assert_eq!(v["senders"], json!(["a1", "a2"]), "{v}");
    let id = v["campaign_id"].as_str().unwrap();
    assert_eq!(
        campaign_row(&h, id).await,
        (
            "default".to_string(),
            Some(vec!["default".to_string(), "a2".to_string()])
        )
    );
    let got = h.ok("get_campaign", json!({"campaign_id": id})).await;
    assert_eq!(got["from"], "a1", "{got}");
    assert_eq!(got["senders"], json!(["a1", "a2"]), "{got}");

    // One number, by `from` or by a one-element `senders` (given as a JSON string).
    let v = h
        .ok("schedule_campaign", campaign(json!({"from": "b1"})))
        .await;
    assert_eq!(v["from"], "b1");
    assert!(v.get("senders").is_none(), "{v}");
    let id = v["campaign_id"].as_str().unwrap();
    assert_eq!(campaign_row(&h, id).await, ("b1".to_string(), None));
    let got = h.ok("get_campaign", json!({"campaign_id": id})).await;
    assert_eq!(got["from"], "b1");
    assert!(got.get("senders").is_none(), "{got}");
    let v = h
        .ok(
            "schedule_campaign",
            campaign(json!({"senders": "[\"a2\"]"})),
        )
        .await;
    assert_eq!(v["from"], "a2");
    // Neither: the default sender.
    let v = h.ok("schedule_campaign", campaign(json!({}))).await;
    assert_eq!(v["from"], "a1");
    assert_eq!(
        campaign_row(&h, v["campaign_id"].as_str().unwrap()).await,
        ("default".to_string(), None)
    );

    // Numbers of two businesses: refused, naming them; nothing stored.
    let before = h.count("SELECT count(*) AS n FROM campaigns").await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "schedule_campaign",
            campaign(json!({"senders": ["a1", "b1"]})),
        )
        .await;
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("different businesses"), "{message}");
    assert!(
        message.contains("a1 (business 204000000000001)")
            && message.contains("b1 (business 204000000000002)"),
        "{message}"
    );
    for (extra, named) in [
        (json!({"senders": ["a1", "c9"]}), "`c9`"),
        (json!({"senders": []}), "empty"),
        (json!({"senders": ["a1"], "from": "a2"}), "Both"),
        (json!({"senders": "a1"}), "not valid JSON"),
    ] {
        let e = h
            .err(
                "INVALID_ARGUMENT",
                "schedule_campaign",
                campaign(extra.clone()),
            )
            .await;
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(named), "{extra}: {message}");
    }
    assert_eq!(h.count("SELECT count(*) AS n FROM campaigns").await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_limited_to_a1_may_not_spread_a_campaign_over_a2() {
    use warden_gateway::caller::{Caller, Scope};
    let h = harness().await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Sale {{1}}")
        .await;
    let caller = Caller {
        agent: "a1-campaigns".into(),
        scopes: [Scope::Campaigns].into_iter().collect(),
        senders: Some(vec!["a1".into()]),
    };
    let client = common::connect(
        warden_gateway::Gateway::new(h.deps.clone())
            .unwrap()
            .acting_as(caller),
    )
    .await;
    let later = (Utc::now() + chrono::TimeDelta::hours(2)).to_rfc3339();
    let call = |senders: Value| {
        let args = json!({"name": "spring", "type": "marketing", "template_name": "promo",
                          "deliver_at": later, "variables": {"1": "20%"}, "senders": senders});
        client.call_tool(
            rmcp::model::CallToolRequestParams::new("schedule_campaign")
                .with_arguments(args.as_object().cloned().unwrap()),
        )
    };
    for senders in [json!(["a1", "a2"]), json!("[\"a1\", \"a2\"]")] {
        let r = call(senders).await.unwrap();
        let v = r.structured_content.unwrap();
        assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains("`a2`"),
            "{v}"
        );
    }
    let r = call(json!(["a1"])).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(h.count("SELECT count(*) AS n FROM campaigns").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversation_reads_say_which_number_they_are_about() {
    let h = harness().await;
    let p = phone();
    let key = warden_rules::phone::canonicalize(&p).unwrap();
    {
        let mut c = h.conn().await;
        warden_core::customers::ensure(&mut c, &key).await.unwrap();
        warden_core::conversations::record_inbound(&mut c, &key, "whatsapp", "a2", Utc::now())
            .await
            .unwrap();
    }
    // A STOP to business A: a1 and a2 see it, b1 does not.
    h.opt_out(&p, false).await;
    for (from, open, marketing) in [
        (None, false, false),
        (Some("a2"), true, false),
        (Some("b1"), false, true),
    ] {
        let mut args = json!({"customer_id": p});
        if let Some(f) = from {
            args["from"] = json!(f);
        }
        let shown = from.unwrap_or("a1");
        let v = h.ok("check_conversation", args.clone()).await;
        assert_eq!(v["from"], shown, "{v}");
        assert_eq!(v["window_open"], open, "{shown}: {v}");
        let v = h.ok("get_customer_context", args).await;
        assert_eq!(v["from"], shown, "{v}");
        assert_eq!(v["conversation"]["window_open"], open, "{shown}: {v}");
        assert_eq!(v["opt_in"]["marketing"], marketing, "{shown}: {v}");
        assert_eq!(v["opt_in"]["utility"], true, "{shown}: {v}");
    }
    // list_conversations: every number's without `from`, each saying which; one with it.
    {
        let mut c = h.conn().await;
        warden_core::conversations::record_inbound(&mut c, &key, "whatsapp", "b1", Utc::now())
            .await
            .unwrap();
    }
    let mine = |v: &Value| -> Vec<String> {
        let mut from: Vec<String> = v["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["customer_id"] == key.digits())
            .map(|c| c["from"].as_str().unwrap().to_string())
            .collect();
        from.sort();
        from
    };
    let all = h.ok("list_conversations", json!({})).await;
    assert_eq!(mine(&all), ["a2", "b1"], "{all}");
    let b = h.ok("list_conversations", json!({"from": "b1"})).await;
    assert_eq!(mine(&b), ["b1"], "{b}");
    assert_eq!(b["total"], 1, "{b}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_senders_shows_what_is_known_of_each_number_and_no_secret() {
    let h = harness().await;
    {
        // What the platform told Warden: a2's number read (high throughput), b1 flagged,
        // business A's portfolio limit.
        warden_core::account::throughput::record_number(
            &h.deps.pg,
            "a2",
            true,
            false,
            Some("15550100002"),
        )
        .await
        .unwrap();
        let mut c = h.conn().await;
        warden_core::account::protection::protect(
            &mut c,
            "b1",
            "quality RED (FLAGGED)",
            warden_core::account::numbers::QUALITY_FLAGGED,
            "test",
        )
        .await
        .unwrap();
        warden_core::account::portfolio::learn(&mut c, "default", "TIER_1K", "test", "test")
            .await
            .unwrap();
    }
    let v = h.ok("list_senders", json!({})).await;
    assert_eq!(v["default"], "a1", "{v}");
    let listed = v["senders"].as_array().unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["a1", "a2", "b1"]);
    let (a1, a2, b1) = (&listed[0], &listed[1], &listed[2]);

    assert_eq!(a1["phone_number_id"], "104000000000001");
    assert_eq!(a1["waba_id"], "204000000000001");
    assert_eq!(a1["portfolio_id"], "304000000000001");
    assert_eq!(a1["default"], true);
    assert_eq!(a1["display_phone_number"], Value::Null);
    assert_eq!(a1["quality_rating"], Value::Null);
    assert_eq!(a1["protection"], Value::Null);
    assert_eq!(a1["throughput"]["mps"], 80);
    assert_eq!(a1["throughput"]["source"], "setting");
    assert_eq!(
        a1["throughput"]["detail"],
        "senders file: mps 80 of sender a1"
    );
    assert!(a1["messaging_limit"]["limit"].is_i64(), "{a1}");
    assert_eq!(a1["messaging_limit"]["known"], true, "{a1}");
    assert_eq!(a1["messaging_limit"]["used"], 0);
    assert_eq!(a1["messaging_limit"]["resets_at"], Value::Null);

    assert_eq!(a2["default"], false);
    assert_eq!(a2["display_phone_number"], "15550100002");
    assert_eq!(a2["throughput"]["source"], "throughput_upgrade", "{a2}");
    assert!(a2["throughput"]["updated_at"].is_string(), "{a2}");
    // One portfolio, one limit.
    assert_eq!(a2["messaging_limit"], a1["messaging_limit"]);

    assert_eq!(b1["waba_id"], "204000000000002");
    assert_eq!(b1["quality_rating"], "RED", "{b1}");
    assert_eq!(b1["protection"]["source"], "quality_flagged", "{b1}");
    assert_eq!(b1["throughput"]["source"], "setting");
    assert!(
        b1["throughput"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("RATE_LIMIT_MPS="),
        "{b1}"
    );
    assert_eq!(b1["messaging_limit"]["known"], false, "{b1}");
    assert_eq!(b1["messaging_limit"]["limit"], Value::Null);

    // Never a token or a secret (nor the names of the variables holding them).
    let text = v.to_string();
    for (name, value) in SENDER_ENV {
        assert!(!text.contains(value) && !text.contains(name), "{text}");
    }

    // An agent limited to b1 sees b1 only.
    use warden_gateway::caller::{Caller, Scope};
    let caller = Caller {
        agent: "b1-reader".into(),
        scopes: [Scope::Read].into_iter().collect(),
        senders: Some(vec!["b1".into()]),
    };
    let client = common::connect(
        warden_gateway::Gateway::new(h.deps.clone())
            .unwrap()
            .acting_as(caller),
    )
    .await;
    let r = client
        .call_tool(rmcp::model::CallToolRequestParams::new("list_senders"))
        .await
        .unwrap();
    let v = r.structured_content.unwrap();
    let ids: Vec<&str> = v["senders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b1"], "{v}");
    assert_eq!(v["default"], "a1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_sender_lifts_a_protection() {
    let h = harness().await;
    {
        let mut c = h.conn().await;
        warden_core::account::protection::protect(
            &mut c,
            "b1",
            "platform error 131048 (Spam rate limit hit)",
            "platform_error",
            "test",
        )
        .await
        .unwrap();
    }
    let listed = h.ok("list_senders", json!({})).await;
    assert_ne!(listed["senders"][2]["protection"], Value::Null, "{listed}");
    // By phone number id too.
    let v = h
        .ok("resume_sender", json!({"from": "104000000000003"}))
        .await;
    assert_eq!(v, json!({"from": "b1", "resumed": true}));
    let listed = h.ok("list_senders", json!({})).await;
    assert_eq!(listed["senders"][2]["protection"], Value::Null, "{listed}");
    let v = h.ok("resume_sender", json!({"from": "b1"})).await;
    assert_eq!(v["resumed"], false, "nothing left to lift: {v}");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'sender_resumed' AND entity_id = 'b1'")
            .await,
        1
    );
    let e = h
        .err("INVALID_ARGUMENT", "resume_sender", json!({"from": "c9"}))
        .await;
    assert!(e["message"].as_str().unwrap().contains("a1, a2, b1"), "{e}");
}

/// A template stored for the business of `waba` (`default`: the default sender's).
pub(crate) async fn business_template(h: &Harness, business: &str, name: &str, status: &str) {
    use diesel::prelude::*;
    use diesel_async::RunQueryDsl;
    use warden_store::schema::templates;
    let mut c = h.conn().await;
    diesel::insert_into(templates::table)
        .values((
            templates::business.eq(business),
            templates::name.eq(name),
            templates::locale.eq("en"),
            templates::category.eq("marketing"),
            templates::status.eq(status),
            templates::body_text.eq("Sale {{1}}"),
        ))
        .execute(&mut c)
        .await
        .unwrap();
}

pub(crate) const BUSINESS_B: &str = "204000000000002";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_belong_to_the_business_of_the_number() {
    let h = harness().await;
    // Both businesses have a `promo`: A's approved, B's paused; only B has `b_only`.
    business_template(&h, "default", "promo", "APPROVED").await;
    business_template(&h, BUSINESS_B, "promo", "PAUSED").await;
    business_template(&h, BUSINESS_B, "b_only", "APPROVED").await;
    let p = phone();
    let send = |name: &str, from: &str| {
        json!({"to": p, "template_name": name, "locale": "en",
               "variables": ["20%"], "from": from})
    };
    for from in ["a1", "a2"] {
        let v = h.ok("send_template", send("promo", from)).await;
        assert_eq!(v["from"], from, "{v}");
        h.err("NOT_FOUND", "send_template", send("b_only", from))
            .await;
    }
    h.err(
        "TEMPLATE_NOT_APPROVED",
        "send_template",
        send("promo", "b1"),
    )
    .await;
    let v = h.ok("send_template", send("b_only", "b1")).await;
    assert_eq!(v["from"], "b1", "{v}");

    // list_templates lists one business's: the default's without `from`.
    let names = |v: &Value| -> Vec<(String, String)> {
        v["templates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let a = h.ok("list_templates", json!({})).await;
    assert_eq!(names(&a), [("promo".to_string(), "APPROVED".to_string())]);
    let b = h.ok("list_templates", json!({"from": "b1"})).await;
    assert_eq!(
        names(&b),
        [
            ("b_only".to_string(), "APPROVED".to_string()),
            ("promo".to_string(), "PAUSED".to_string())
        ]
    );
    assert_eq!(b["total"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_look_before_the_platform_reads_the_numbers_business() {
    let h = harness().await;
    business_template(&h, "default", "promo", "APPROVED").await;
    business_template(&h, BUSINESS_B, "promo", "APPROVED").await;
    let p = phone();
    let key = warden_rules::phone::canonicalize(&p).unwrap();
    let send = |from: &str| {
        json!({"to": p, "template_name": "promo", "locale": "en",
               "variables": ["20%"], "from": from})
    };
    let from_a = h.ok("send_template", send("a1")).await;
    let from_b = h.ok("send_template", send("b1")).await;
    // After both were queued, the customer stops business B's marketing.
    {
        let mut c = h.conn().await;
        warden_core::customers::apply_opt_change(
            &mut c,
            BUSINESS_B,
            &key,
            warden_rules::keywords::OptChange::Stop,
            warden_core::customers::OptScope::Marketing,
            "test",
            "test",
            Utc::now(),
        )
        .await
        .unwrap();
    }
    let recheck = |v: &Value| {
        let id = uuid::Uuid::parse_str(v["message_id"].as_str().unwrap()).unwrap();
        let pg = h.deps.pg.clone();
        async move {
            warden_core::send::recheck::before_send(&pg, id, "dispatcher")
                .await
                .unwrap()
        }
    };
    assert_eq!(
        recheck(&from_a).await,
        warden_core::send::recheck::Recheck::Send
    );
    match recheck(&from_b).await {
        warden_core::send::recheck::Recheck::Refused(d) => {
            assert_eq!(d.reason_code.as_str(), "USER_OPTED_OUT", "{d:?}")
        }
        other => panic!("b1's message to a customer who stopped B went on: {other:?}"),
    }
    assert_eq!(
        h.message(from_b["message_id"].as_str().unwrap())
            .await
            .status,
        "failed"
    );

    // B's template paused after queueing: only B's message is stopped.
    let again_a = h.ok("send_template", send("a2")).await;
    {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        use warden_store::schema::templates;
        let mut c = h.conn().await;
        diesel::update(templates::table.filter(templates::business.eq("default")))
            .set(templates::status.eq("PAUSED"))
            .execute(&mut c)
            .await
            .unwrap();
    }
    assert!(matches!(
        recheck(&again_a).await,
        warden_core::send::recheck::Recheck::Refused(_)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_rate_limit_reads_the_bucket_of_the_number_it_names() {
    let h = harness().await;
    let setting = h.deps.settings.rate_limit_mps;
    // a1 (the default) has mps 80 in the file; b1 none: RATE_LIMIT_MPS.
    for (from, mps) in [(None, 80), (Some("a1"), 80), (Some("b1"), setting)] {
        let mut args = json!({});
        if let Some(f) = from {
            args["from"] = json!(f);
        }
        let v = h.ok("get_rate_limit", args).await;
        assert_eq!(v["from"], from.unwrap_or("a1"), "{v}");
        assert_eq!(v["capacity_mps"], mps, "{v}");
    }
    h.err("INVALID_ARGUMENT", "get_rate_limit", json!({"from": "c9"}))
        .await;
}
