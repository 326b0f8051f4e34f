//! The tool catalogue: names, input schemas (required params, types), annotations,
//! output schemas, server info, protocol versions, and the error envelope for missing
//! parameters.

use crate::common;

use std::collections::{BTreeSet, HashMap};

use common::Harness;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, Tool};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

/// name -> (required, optional), as docs/tools.md lists each tool's parameters.
fn spec() -> HashMap<&'static str, (Vec<&'static str>, Vec<&'static str>)> {
    HashMap::from([
        (
            "check_compliance",
            (vec!["customer_id", "message_type"], vec!["channel"]),
        ),
        ("send_message", (vec!["to", "text"], vec!["channel"])),
        (
            "send_template",
            (
                vec!["to", "template_name"],
                vec!["locale", "variables", "channel", "flow_token", "flow_data"],
            ),
        ),
        ("explain_error", (vec!["code"], vec![])),
        ("check_conversation", (vec!["customer_id"], vec!["channel"])),
        (
            "check_frequency_cap",
            (vec!["customer_id"], vec!["channel"]),
        ),
        (
            "get_customer_context",
            (vec!["customer_id"], vec!["channel"]),
        ),
        ("get_delivery_status", (vec!["message_id"], vec![])),
        ("get_rate_limit", (vec![], vec!["channel"])),
        (
            "list_conversations",
            (vec![], vec!["channel", "status_filter", "limit", "offset"]),
        ),
        (
            "list_templates",
            (
                vec![],
                vec![
                    "status_filter",
                    "category_filter",
                    "locale_filter",
                    "limit",
                    "offset",
                ],
            ),
        ),
        (
            "reply_customer",
            (vec!["customer_id", "message_text"], vec!["channel"]),
        ),
        ("retry_failed_messages", (vec!["message_ids"], vec![])),
        (
            "sync_template_status",
            (vec!["template_name"], vec!["locale"]),
        ),
        (
            "schedule_message",
            (
                vec!["customer_id", "message_type", "content", "deliver_at"],
                vec!["channel"],
            ),
        ),
        (
            "schedule_campaign",
            (
                vec!["name", "type", "template_name", "deliver_at"],
                vec!["locale", "variables", "audience_filter", "from", "senders"],
            ),
        ),
        ("cancel_campaign", (vec!["campaign_id"], vec!["reason"])),
        ("pause_campaign", (vec!["campaign_id"], vec![])),
        ("get_account_quality", (vec![], vec![])),
        ("list_senders", (vec![], vec![])),
        ("resume_sender", (vec!["from"], vec![])),
        // Shared numbers: who holds a conversation.
        (
            "hand_off_conversation",
            (vec!["customer_id", "to"], vec!["note", "from"]),
        ),
        ("release_conversation", (vec!["customer_id"], vec!["from"])),
        ("get_spend", (vec![], vec!["since", "until"])),
        (
            "estimate_cost",
            (vec!["message_type"], vec!["recipient_country", "quantity"]),
        ),
        (
            "estimate_pricing",
            (vec!["conversation_type"], vec!["recipient_country"]),
        ),
        (
            "create_template",
            (vec!["name", "category", "language"], vec![]),
        ),
        ("sync_webhooks", (vec![], vec![])),
        ("archive_chat", (vec!["conversation_id"], vec![])),
        ("get_campaign", (vec!["campaign_id"], vec![])),
        (
            "preview_campaign",
            (
                vec!["name", "type", "template_name"],
                vec!["locale", "variables", "audience_filter", "from", "senders"],
            ),
        ),
        ("resume_campaign", (vec!["campaign_id"], vec![])),
        (
            "get_conversation_history",
            (vec!["customer_id"], vec!["channel", "limit", "before"]),
        ),
        ("list_inbox", (vec![], vec!["channel", "limit", "offset"])),
        (
            "mark_as_read",
            (vec!["message_id"], vec!["typing_indicator"]),
        ),
        // Rich messages and media.
        (
            "send_media",
            (
                vec!["to", "media_type"],
                vec![
                    "link", "media_id", "caption", "filename", "channel", "reply_to",
                ],
            ),
        ),
        (
            "upload_media",
            (vec!["data", "mime_type"], vec!["filename"]),
        ),
        (
            "send_interactive",
            (
                vec!["to", "kind"],
                vec![
                    "body",
                    "catalog_id",
                    "product_retailer_id",
                    "thumbnail_product_retailer_id",
                    "buttons",
                    "sections",
                    "button_label",
                    "url",
                    "display_text",
                    "header",
                    "footer",
                    "channel",
                    "reply_to",
                    "flow_id",
                    "flow_name",
                    "flow_cta",
                    "flow_token",
                    "flow_action",
                    "screen",
                    "data",
                    "mode",
                ],
            ),
        ),
        // Flows.
        (
            "get_flow_responses",
            (
                vec![],
                vec!["flow_token", "customer_id", "message_id", "limit", "from"],
            ),
        ),
        ("list_flows", (vec![], vec!["from"])),
        ("react_to_message", (vec!["message_id", "emoji"], vec![])),
        (
            "send_location",
            (
                vec!["to", "latitude", "longitude"],
                vec!["name", "address", "channel", "reply_to"],
            ),
        ),
        ("get_media", (vec!["media_id"], vec![])),
        (
            "send_contacts",
            (vec!["to", "contacts"], vec!["channel", "reply_to"]),
        ),
    ])
}

const NUMBER_PARAMS: &[(&str, &str)] = &[
    ("list_conversations", "limit"),
    ("list_conversations", "offset"),
    ("list_templates", "limit"),
    ("list_templates", "offset"),
    ("estimate_cost", "quantity"),
    ("get_conversation_history", "limit"),
    ("list_inbox", "limit"),
    ("list_inbox", "offset"),
    ("get_flow_responses", "limit"),
    ("send_location", "latitude"),
    ("send_location", "longitude"),
];

const BOOL_PARAMS: &[(&str, &str)] = &[("mark_as_read", "typing_indicator")];

const READ_ONLY: &[&str] = &[
    "get_media",
    "preview_campaign",
    "list_senders",
    "get_account_quality",
    "get_spend",
    "check_compliance",
    "explain_error",
    "check_conversation",
    "check_frequency_cap",
    "get_customer_context",
    "get_delivery_status",
    "get_rate_limit",
    "list_conversations",
    "list_templates",
    "estimate_cost",
    "estimate_pricing",
    "get_campaign",
    "get_conversation_history",
    "list_inbox",
    "get_flow_responses",
    "list_flows",
];

fn types_of(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match &schema["type"] {
        Value::String(t) => {
            out.insert(t.clone());
        }
        Value::Array(ts) => out.extend(ts.iter().filter_map(|t| t.as_str().map(String::from))),
        _ => {}
    }
    out.remove("null");
    out
}

/// Every `format` in `schema` that JSON Schema 2020-12 does not define.
fn nonstandard_formats(schema: &Value, out: &mut Vec<String>) {
    const STANDARD: &[&str] = &[
        "date-time",
        "date",
        "time",
        "duration",
        "email",
        "idn-email",
        "hostname",
        "idn-hostname",
        "ipv4",
        "ipv6",
        "uri",
        "uri-reference",
        "iri",
        "iri-reference",
        "uuid",
        "uri-template",
        "json-pointer",
        "relative-json-pointer",
        "regex",
    ];
    match schema {
        Value::Object(o) => {
            if let Some(Value::String(f)) = o.get("format")
                && !STANDARD.contains(&f.as_str())
            {
                out.push(f.clone());
            }
            o.values().for_each(|v| nonstandard_formats(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| nonstandard_formats(v, out)),
        _ => {}
    }
}

fn by_name(tools: Vec<Tool>) -> HashMap<String, Value> {
    tools
        .into_iter()
        .map(|t| (t.name.to_string(), serde_json::to_value(&t).unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalogue_schemas_annotations_and_server_info() {
    let h = Harness::start().await;
    let info = h.client.peer_info().expect("server info");
    let server = info.server_info.clone().expect("serverInfo");
    assert_eq!(server.name, "warden-gateway-test");
    assert_eq!(server.version, "9.9.9-test");

    let tools = by_name(h.tools().await);
    let spec = spec();
    let names: BTreeSet<&str> = tools.keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = spec.keys().copied().collect();
    assert_eq!(
        names, expected,
        "exactly the 24 spec tools plus get_campaign, resume_campaign, the listen tools and the rich-message and media tools"
    );

    for (name, (req, opt)) in &spec {
        let t = &tools[*name];
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for p in req {
            assert!(required.contains(p), "{name}: {p} must be required");
        }
        for p in opt {
            assert!(!required.contains(p), "{name}: {p} must be optional");
        }
        for p in req.iter().chain(opt) {
            let prop = &schema["properties"][*p];
            assert!(prop.is_object(), "{name}: property {p} missing");
            assert!(
                prop["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{name}.{p} has no description"
            );
            let found = types_of(prop);
            if BOOL_PARAMS.contains(&(*name, *p)) {
                assert!(found.contains("boolean"), "{name}.{p}: {found:?}");
            } else if NUMBER_PARAMS.contains(&(*name, *p)) {
                assert!(
                    found.contains("integer") || found.contains("number"),
                    "{name}.{p}: {found:?}"
                );
            } else {
                assert!(found.contains("string"), "{name}.{p}: {found:?}");
            }
        }
        // outputSchema with an object root
        assert_eq!(t["outputSchema"]["type"], "object", "{name} outputSchema");
        // standard JSON Schema only: no `uint32`-style formats (the MCP Inspector warns)
        for key in ["inputSchema", "outputSchema"] {
            let mut bad = Vec::new();
            nonstandard_formats(&t[key], &mut bad);
            assert!(
                bad.is_empty(),
                "{name} {key} has non-standard formats {bad:?}"
            );
        }
        // descriptions written for an agent: when, what comes back, what to do on errors
        let d = t["description"].as_str().unwrap_or_default();
        assert!(d.len() > 120, "{name}: description too thin: {d}");
        let ro = t["annotations"]["readOnlyHint"].as_bool();
        if READ_ONLY.contains(name) {
            assert_eq!(ro, Some(true), "{name} readOnlyHint");
        } else {
            assert_ne!(ro, Some(true), "{name} must not claim readOnlyHint");
        }
    }
    assert_eq!(
        tools["cancel_campaign"]["annotations"]["destructiveHint"],
        true
    );
    for name in ["sync_template_status", "sync_webhooks"] {
        assert_eq!(tools[name]["annotations"]["idempotentHint"], true, "{name}");
    }
    for name in [
        "send_message",
        "send_template",
        "reply_customer",
        "create_template",
    ] {
        assert_eq!(
            tools[name]["annotations"]["destructiveHint"], false,
            "{name}"
        );
        assert_eq!(
            tools[name]["annotations"]["idempotentHint"], false,
            "{name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_empty_required_params_are_invalid_argument_envelopes() {
    let h = Harness::start().await;
    for (name, (req, _)) in spec() {
        if req.is_empty() {
            continue;
        }
        // every required param missing
        let e = h.err("INVALID_ARGUMENT", name, json!({})).await;
        assert!(e["message"].as_str().unwrap().contains('`'), "{name}: {e}");
        // each one empty in turn, the others filled with something plausible
        for empty in &req {
            // The one required parameter whose empty value means something: an empty
            // emoji removes the reaction (docs/tools.md, react_to_message).
            if (name, *empty) == ("react_to_message", "emoji") {
                continue;
            }
            let mut args = serde_json::Map::new();
            for p in &req {
                let v = if p == empty { "" } else { plausible(p) };
                args.insert(p.to_string(), json!(v));
            }
            let e = h.err("INVALID_ARGUMENT", name, Value::Object(args)).await;
            assert!(
                e["message"].as_str().unwrap().contains(empty),
                "{name}: empty {empty} should be named: {e}"
            );
        }
    }
    // null counts as missing, wrong JSON types are refused in the envelope too
    h.err("INVALID_ARGUMENT", "explain_error", json!({"code": null}))
        .await;
    h.err(
        "INVALID_ARGUMENT",
        "check_compliance",
        json!({"customer_id": ["x"], "message_type": "service"}),
    )
    .await;
    h.err(
        "INVALID_ARGUMENT",
        "check_compliance",
        json!({"customer_id": {"a": 1}, "message_type": "service"}),
    )
    .await;
}

fn plausible(param: &str) -> &'static str {
    match param {
        "customer_id" | "to" => "+62 812-3456-7890",
        "message_type" | "conversation_type" => "marketing",
        "message_id" | "campaign_id" | "conversation_id" => "00000000-0000-4000-8000-000000000000",
        "deliver_at" => "2099-01-01T00:00:00Z",
        "content" => "{\"type\":\"text\",\"text\":{\"body\":\"hi\"}}",
        "contacts" => "[{\"name\":{\"formatted_name\":\"Ana\"}}]",
        "message_ids" => "[\"00000000-0000-4000-8000-000000000000\"]",
        "code" => "131047",
        "category" => "UTILITY",
        "language" => "en",
        "type" => "marketing",
        _ => "some_value",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_accept_numeric_strings_and_strings_accept_numbers() {
    let h = Harness::start().await;
    let page = h
        .ok("list_templates", json!({"limit": "5", "offset": "0"}))
        .await;
    assert_eq!(page["limit"], 5);
    let page = h.ok("list_conversations", json!({"limit": 7.0})).await;
    assert_eq!(page["limit"], 7);
    let cost = h
        .ok(
            "estimate_cost",
            json!({"message_type": "utility", "quantity": "3"}),
        )
        .await;
    assert_eq!(cost["quantity"], 3);
    let e = h.ok("explain_error", json!({"code": 131047})).await;
    assert_eq!(e["code"], 131047);
    h.err(
        "INVALID_ARGUMENT",
        "list_templates",
        json!({"limit": "five"}),
    )
    .await;
    // `language` is taken for `locale` (and the two must agree).
    let e = h
        .err(
            "NOT_FOUND",
            "send_template",
            json!({"to": "+6281234567890", "template_name": "x", "language": "id"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("`id`"), "{e}");
    h.err(
        "INVALID_ARGUMENT",
        "send_template",
        json!({"to": "+6281234567890", "template_name": "x", "locale": "en", "language": "id"}),
    )
    .await;
}

#[derive(Clone)]
struct VersionedClient(ProtocolVersion);

impl ClientHandler for VersionedClient {
    fn get_info(&self) -> ClientConfig {
        let mut info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("version-test", "1.0"),
        );
        info.protocol_version = self.0.clone();
        info
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_with_protocol_versions_2025_06_18_2025_11_25_and_2026_07_28() {
    let h = Harness::start().await;
    for version in [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25] {
        let gateway = warden_gateway::Gateway::new(h.deps.clone()).unwrap();
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            if let Ok(s) = gateway.serve(server_io).await {
                let _ = s.waiting().await;
            }
        });
        let client = VersionedClient(version.clone())
            .serve(client_io)
            .await
            .expect("initialize");
        let info = client.peer_info().unwrap();
        assert_eq!(info.protocol_version, version);
        assert_eq!(
            info.server_info.clone().unwrap().name,
            "warden-gateway-test"
        );
        assert_eq!(client.list_all_tools().await.unwrap().len(), 44);
        let res = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("explain_error")
                    .with_arguments(json!({"code": "131047"}).as_object().cloned().unwrap()),
            )
            .await
            .unwrap();
        common::check_envelope("explain_error", &res);
        client.cancel().await.unwrap();
    }
    // 2026-07-28: no initialize handshake; per-request metadata (server/discover).
    let gateway = warden_gateway::Gateway::new(h.deps.clone()).unwrap();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(s) = gateway.serve(server_io).await {
            let _ = s.waiting().await;
        }
    });
    let client = VersionedClient(ProtocolVersion::V_2026_07_28)
        .serve_with_lifecycle(
            client_io,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("discover");
    let info = client.peer_info().expect("discover result");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert_eq!(
        info.server_info.clone().unwrap().name,
        "warden-gateway-test"
    );
    assert_eq!(client.list_all_tools().await.unwrap().len(), 44);
    let res = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("get_delivery_status")
                .with_arguments(json!({"message_id": "nope"}).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    common::check_envelope("get_delivery_status", &res);
    assert_eq!(res.is_error, Some(true));
    assert_eq!(
        res.structured_content.unwrap()["error"]["code"],
        "INVALID_ARGUMENT"
    );
    client.cancel().await.unwrap();
}

/// A valid value for every string parameter, so that one bad parameter is the only problem.
fn valid(param: &str) -> String {
    match param {
        "customer_id" | "to" => "+62 812-3456-7890".into(),
        "message_type" | "conversation_type" | "type" => "marketing".into(),
        "message_id" | "campaign_id" | "conversation_id" => {
            "00000000-0000-4000-8000-000000000000".into()
        }
        "deliver_at" => (chrono::Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339(),
        "content" => "{\"type\":\"text\",\"text\":{\"body\":\"hi\"}}".into(),
        "message_ids" => "[\"00000000-0000-4000-8000-000000000000\"]".into(),
        "code" => "131047".into(),
        "category" => "UTILITY".into(),
        "language" | "locale" | "locale_filter" => "en".into(),
        "channel" => "whatsapp".into(),
        "status_filter" => "open".into(),
        "category_filter" => "utility".into(),
        "recipient_country" => "ID".into(),
        "variables" => "[\"x\"]".into(),
        "audience_filter" => "{}".into(),
        "body_text" => "Hi {{1}}".into(),
        "contacts" => "[{\"name\":{\"formatted_name\":\"Ana\"}}]".into(),
        _ => "some_value".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_string_arguments_are_refused_in_one_short_sentence() {
    // The platform URL points at a closed port: a call that reached it would answer
    // UNAVAILABLE, so INVALID_ARGUMENT / NOT_FOUND also show nothing left the process.
    let h = Harness::start().await;
    let huge = "a".repeat(100_000);
    let mut checked = 0;
    for (name, (req, opt)) in spec() {
        for p in req.iter().chain(opt.iter()) {
            if NUMBER_PARAMS.contains(&(name, *p)) {
                continue;
            }
            let mut args = serde_json::Map::new();
            for q in req.iter() {
                args.insert(q.to_string(), json!(valid(q)));
            }
            args.insert(p.to_string(), json!(huge));
            let (is_error, v) = h.call(name, Value::Object(args)).await;
            assert!(
                is_error,
                "{name}.{p}: a 100,000-character value was taken: {v}"
            );
            let e = &v["error"];
            let code = e["code"].as_str().unwrap();
            assert!(
                code == "INVALID_ARGUMENT" || code == "NOT_FOUND",
                "{name}.{p}: {e}"
            );
            for k in ["message", "suggested_action"] {
                let text = e[k].as_str().unwrap();
                assert!(
                    text.chars().count() <= 400,
                    "{name}.{p}: {k} too long: {text}"
                );
                assert!(
                    !text.contains(&"a".repeat(65)),
                    "{name}.{p}: {k} echoes it: {text}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 50, "{checked}");
    // `language` disagreeing with `locale`, and an over-long JSON value inside an array.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            json!({"to": "+6281234567890", "template_name": "x", "locale": "en", "language": huge}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().chars().count() < 200, "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "retry_failed_messages",
            json!({"message_ids": [{"k": huge}]}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().chars().count() < 200, "{e}");
    // A non-id in message_ids is skipped and shown back bounded.
    let r = h
        .ok("retry_failed_messages", json!({"message_ids": [huge]}))
        .await;
    assert_eq!(r["results"][0]["status"], "skipped");
    assert!(
        r["results"][0]["message_id"]
            .as_str()
            .unwrap()
            .chars()
            .count()
            <= 65,
        "{r}"
    );
    // Control characters are refused naming the parameter and the character;
    // other unusual characters are shown escaped.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "get_rate_limit",
            json!({"channel": "sms\u{7}\u{202e}x"}),
        )
        .await;
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("`channel`") && msg.contains("U+0007"), "{e}");
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "get_rate_limit",
            json!({"channel": "sms\u{202e}x"}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("`sms\\u{202e}x`"),
        "{e}"
    );
    // Every stored table is still empty.
    for table in ["messages", "campaigns", "templates"] {
        assert_eq!(
            h.count(&format!("SELECT count(*) AS n FROM {table}")).await,
            0,
            "{table}"
        );
    }
}

/// The section of docs/tools.md about `tool`: from its `### tool` heading to the next heading.
fn doc_section<'a>(doc: &'a str, tool: &str) -> Option<&'a str> {
    let heading = format!("\n### {tool}\n");
    let start = doc.find(&heading)? + heading.len();
    let rest = &doc[start..];
    let end = rest.find("\n#").unwrap_or(rest.len());
    Some(&rest[..end])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_tool_and_parameter_is_documented() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tools.md");
    let doc = std::fs::read_to_string(&path).expect("docs/tools.md");
    let h = Harness::start().await;
    let mut missing = Vec::new();
    for tool in h.tools().await {
        let Some(section) = doc_section(&doc, &tool.name) else {
            missing.push(format!("tool {}", tool.name));
            continue;
        };
        let props = tool
            .input_schema
            .get("properties")
            .and_then(Value::as_object);
        for param in props.into_iter().flat_map(|p| p.keys()) {
            if !section.contains(&format!("`{param}`")) {
                missing.push(format!("{}.{param}", tool.name));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "served but not documented in docs/tools.md (a `### name` section listing each parameter as `name`): {missing:?}"
    );
}
