//! Businesses on one deployment keep apart (the example senders file: a1, the default, and
//! a2 of business A; b1 of business B). An agent limited to a1 reaches nothing of business
//! B by id: every served tool is classified below, and each one that takes an id answers
//! business B's ids exactly as ids that do not exist (NOT_FOUND), changing nothing and
//! sending nothing; the reads that name no number show only a1's. A tool added without a
//! class here fails the catalogue test.

use crate::common;
use crate::senders::{
    BUSINESS_B, business_template, call_as, http_gateway_with_senders, with_senders,
};

use chrono::Utc;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_core::agents::{self, Guardrails};
use warden_gateway::Gateway;
use warden_gateway::caller::{Caller, Scope};

use common::{Harness, Opts, phone};

/// A text only business B's data holds: no answer to a1's agent may carry it.
const B_SECRET: &str = "b-secret-7f3a";
const B_MEDIA: &str = "b-media-7f3a";

/// What business B has: a customer who wrote to b1 (a text and an image), a reply from b1
/// that failed with a retryable error, and a scheduled campaign from b1.
struct BusinessB {
    customer: String,
    inbound: Uuid,
    image: Uuid,
    failed: Uuid,
    campaign: String,
    conversation: Uuid,
    /// The customer's flow submission to b1.
    flow_reply: Uuid,
}

async fn seed_b(h: &Harness) -> BusinessB {
    let customer = phone();
    let key = warden_rules::phone::canonicalize(&customer).unwrap();
    let senders = h.deps.settings.senders();
    let keys = senders.key_of(senders.by_id("b1").unwrap());
    let text = |wamid: &str| {
        json!({"from": customer, "id": wamid, "timestamp": Utc::now().timestamp().to_string(),
               "type": "text", "text": {"body": B_SECRET}})
    };
    let image = json!({"from": customer, "id": "wamid.B2", "timestamp": Utc::now().timestamp().to_string(),
                       "type": "image", "image": {"id": B_MEDIA, "mime_type": "image/jpeg",
                       "sha256": "00", "caption": B_SECRET}});
    let write = |wamid: &'static str, message_type: &'static str, content: Value| {
        let (key, keys) = (key.clone(), keys.clone());
        async move {
            let mut c = h.conn().await;
            warden_core::conversations::inbound_batch::record(
                &mut c,
                "whatsapp",
                &keys,
                &[warden_core::conversations::inbound_batch::Inbound {
                    phone: &key,
                    wamid,
                    message_type,
                    content: &content,
                    window: Ok(Utc::now()),
                }],
            )
            .await
            .unwrap();
        }
    };
    write("wamid.B1", "text", text("wamid.B1")).await;
    write("wamid.B2", "image", image).await;
    let id_of = |wamid: &'static str| async move {
        use warden_store::schema::messages;
        let mut c = h.conn().await;
        messages::table
            .filter(messages::wamid.eq(wamid))
            .select(messages::id)
            .first::<Uuid>(&mut c)
            .await
            .unwrap()
    };
    let inbound = id_of("wamid.B1").await;
    let image = id_of("wamid.B2").await;
    let flow = json!({"from": customer, "id": "wamid.B4", "timestamp": Utc::now().timestamp().to_string(),
                      "type": "interactive", "interactive": {"type": "nfm_reply", "nfm_reply": {
                      "name": "flow", "body": "Sent",
                      "response_json": json!({"flow_token": "b-token", "note": B_SECRET}).to_string()}}});
    write("wamid.B4", "interactive", flow.clone()).await;
    {
        let mut c = h.conn().await;
        warden_core::flows::submissions::record(
            &mut c,
            &warden_core::flows::submissions::Submission {
                wamid: "wamid.B4",
                sender: &keys.sender,
                customer: key.digits(),
                context_wamid: None,
                response_json: flow.pointer("/interactive/nfm_reply/response_json"),
                at: Utc::now(),
            },
        )
        .await
        .unwrap();
    }
    let flow_reply = id_of("wamid.B4").await;
    let sent = h
        .ok(
            "send_message",
            json!({"to": customer, "text": B_SECRET, "from": "b1"}),
        )
        .await;
    let failed = sent["message_id"].as_str().unwrap().to_string();
    h.fail(&failed, 131000).await;
    // The customer wrote again: they wait in b1's inbox.
    write("wamid.B3", "text", text("wamid.B3")).await;
    business_template(h, BUSINESS_B, "promo", "APPROVED").await;
    let later = (Utc::now() + chrono::TimeDelta::hours(2)).to_rfc3339();
    let campaign = h
        .ok(
            "schedule_campaign",
            json!({"name": B_SECRET, "type": "marketing", "template_name": "promo",
                   "deliver_at": later, "variables": {"1": "20%"}, "from": "b1"}),
        )
        .await["campaign_id"]
        .as_str()
        .unwrap()
        .to_string();
    let conversation = {
        use warden_store::schema::conversations;
        let mut c = h.conn().await;
        conversations::table
            .filter(conversations::sender_id.eq("b1"))
            .select(conversations::id)
            .first::<Uuid>(&mut c)
            .await
            .unwrap()
    };
    BusinessB {
        customer,
        inbound,
        image,
        failed: Uuid::parse_str(&failed).unwrap(),
        campaign,
        conversation,
        flow_reply,
    }
}

/// Everything of the database and the platform a call could change, in one value.
async fn snapshot(h: &Harness) -> Value {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        v: Value,
    }
    let mut c = h.conn().await;
    let row: Row = diesel::sql_query(
        "SELECT jsonb_build_object( \
           'messages', (SELECT jsonb_agg(jsonb_build_array(id, status, retry_count, read_at, updated_at) ORDER BY id) FROM messages), \
           'campaigns', (SELECT jsonb_agg(jsonb_build_array(id, status, updated_at) ORDER BY id) FROM campaigns), \
           'conversations', (SELECT jsonb_agg(jsonb_build_array(id, holder, archived_at, updated_at) ORDER BY id) FROM conversations), \
           'audit', (SELECT count(*) FROM audit_logs)) AS v",
    )
    .get_result(&mut c)
    .await
    .unwrap();
    drop(c);
    let sim: Value = reqwest::get(format!("{}/sim/stats", h.sim().url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    json!({"db": row.v, "sim": sim, "stream": h.stream_messages().await})
}

/// How a tool meets another business's resources.
enum Class {
    /// Takes an id of a message, campaign or media: B's answers NOT_FOUND, as a missing one.
    ById(fn(&BusinessB) -> Value, fn() -> Value),
    /// Takes a customer: about the caller's own number, showing nothing of B's.
    Customer(fn(&BusinessB) -> Value),
    /// Reads without an id: within the caller's numbers, nothing of B's.
    Listing(Value),
    /// Names only senders (`from`, `senders`): FORBIDDEN outside the caller's (tested in
    /// senders.rs), or reaches nothing of a business at all.
    NoResource,
}

fn classes() -> Vec<(&'static str, Class)> {
    use Class::*;
    vec![
        (
            "get_delivery_status",
            ById(
                |b| json!({"message_id": b.failed}),
                || json!({"message_id": Uuid::new_v4()}),
            ),
        ),
        (
            "get_campaign",
            ById(
                |b| json!({"campaign_id": b.campaign}),
                || json!({"campaign_id": Uuid::new_v4()}),
            ),
        ),
        (
            "pause_campaign",
            ById(
                |b| json!({"campaign_id": b.campaign}),
                || json!({"campaign_id": Uuid::new_v4()}),
            ),
        ),
        (
            "resume_campaign",
            ById(
                |b| json!({"campaign_id": b.campaign}),
                || json!({"campaign_id": Uuid::new_v4()}),
            ),
        ),
        (
            "cancel_campaign",
            ById(
                |b| json!({"campaign_id": b.campaign}),
                || json!({"campaign_id": Uuid::new_v4()}),
            ),
        ),
        (
            "react_to_message",
            ById(
                |b| json!({"message_id": b.inbound, "emoji": "👍"}),
                || json!({"message_id": Uuid::new_v4(), "emoji": "👍"}),
            ),
        ),
        (
            "mark_as_read",
            ById(
                |b| json!({"message_id": b.inbound}),
                || json!({"message_id": Uuid::new_v4()}),
            ),
        ),
        (
            "get_media",
            ById(
                |_| json!({"media_id": B_MEDIA}),
                || json!({"media_id": "no-such-media"}),
            ),
        ),
        (
            "send_media",
            ById(
                |b| json!({"to": b.customer, "media_type": "image", "link": "https://cdn.example/a.jpg", "reply_to": b.image}),
                || json!({"to": phone(), "media_type": "image", "link": "https://cdn.example/a.jpg", "reply_to": Uuid::new_v4()}),
            ),
        ),
        (
            "send_location",
            ById(
                |b| json!({"to": b.customer, "latitude": 1.0, "longitude": 2.0, "reply_to": b.inbound}),
                || json!({"to": phone(), "latitude": 1.0, "longitude": 2.0, "reply_to": Uuid::new_v4()}),
            ),
        ),
        (
            "send_contacts",
            ById(
                |b| json!({"to": b.customer, "contacts": [{"name": {"formatted_name": "Ana"}}], "reply_to": b.inbound}),
                || json!({"to": phone(), "contacts": [{"name": {"formatted_name": "Ana"}}], "reply_to": Uuid::new_v4()}),
            ),
        ),
        (
            "send_interactive",
            ById(
                |b| json!({"to": b.customer, "kind": "buttons", "body": "Pick", "buttons": [{"id": "y", "title": "Yes"}], "reply_to": b.inbound}),
                || json!({"to": phone(), "kind": "buttons", "body": "Pick", "buttons": [{"id": "y", "title": "Yes"}], "reply_to": Uuid::new_v4()}),
            ),
        ),
        (
            "retry_failed_messages",
            ById(
                |b| json!({"message_ids": [b.failed]}),
                || json!({"message_ids": [Uuid::new_v4()]}),
            ),
        ),
        (
            "get_customer_context",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        (
            "check_conversation",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        (
            "get_conversation_history",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        (
            "check_compliance",
            Customer(|b| json!({"customer_id": b.customer, "message_type": "service"})),
        ),
        (
            "check_frequency_cap",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        (
            "reply_customer",
            Customer(|b| json!({"customer_id": b.customer, "message_text": "hello"})),
        ),
        (
            "send_message",
            Customer(|b| json!({"to": b.customer, "text": "hello"})),
        ),
        (
            "send_template",
            Customer(
                |b| json!({"to": b.customer, "template_name": "promo", "variables": {"1": "x"}}),
            ),
        ),
        (
            "schedule_message",
            Customer(|b| {
                json!({"customer_id": b.customer, "message_type": "service",
            "content": {"type": "text", "text": {"body": "later"}},
            "deliver_at": (Utc::now() + chrono::TimeDelta::hours(1)).to_rfc3339()})
            }),
        ),
        (
            "hand_off_conversation",
            Customer(|b| json!({"customer_id": b.customer, "to": "human"})),
        ),
        (
            "release_conversation",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        (
            "archive_chat",
            ById(
                |b| json!({"conversation_id": b.conversation}),
                || json!({"conversation_id": Uuid::new_v4()}),
            ),
        ),
        (
            "get_flow_responses",
            ById(
                |b| json!({"message_id": b.flow_reply}),
                || json!({"message_id": Uuid::new_v4()}),
            ),
        ),
        // B's token and customer read as unknown ones: nothing.
        (
            "get_flow_responses",
            Listing(json!({"flow_token": "b-token"})),
        ),
        (
            "get_flow_responses",
            Customer(|b| json!({"customer_id": b.customer})),
        ),
        ("list_inbox", Listing(json!({}))),
        ("list_conversations", Listing(json!({}))),
        ("list_senders", Listing(json!({}))),
        ("list_templates", Listing(json!({}))),
        ("get_spend", Listing(json!({}))),
        ("get_account_quality", Listing(json!({}))),
        ("get_rate_limit", Listing(json!({}))),
        ("explain_error", NoResource),
        ("list_flows", NoResource),
        ("estimate_cost", NoResource),
        ("estimate_pricing", NoResource),
        ("preview_campaign", NoResource),
        ("schedule_campaign", NoResource),
        ("create_template", NoResource),
        ("sync_template_status", NoResource),
        ("sync_webhooks", NoResource),
        ("resume_sender", NoResource),
        ("upload_media", NoResource),
    ]
}

fn a1_only() -> Caller {
    Caller {
        agent: "a1-bot".into(),
        scopes: Scope::ALL.into_iter().collect(),
        senders: Some(vec!["a1".into()]),
    }
}

async fn call(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    name: &str,
    args: Value,
) -> (bool, Value) {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().cloned().unwrap());
    let res = client.call_tool(params).await.expect("tools/call");
    common::check_envelope(name, &res);
    (res.is_error == Some(true), res.structured_content.unwrap())
}

/// The answer with the ids that differ between two calls masked, to compare the wording.
fn masked(v: &Value, ids: &[String]) -> String {
    let mut s = v.to_string();
    for id in ids {
        s = s.replace(id.as_str(), "<id>");
    }
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_limited_to_a1_reaches_nothing_of_business_b_by_any_tool() {
    let h = Harness::with(Opts {
        sim: true,
        adjust: with_senders,
        ..Opts::default()
    })
    .await;
    let b = seed_b(&h).await;
    let limited = common::connect(Gateway::new(h.deps.clone()).unwrap().acting_as(a1_only())).await;

    // Every served tool has a class.
    let served: std::collections::BTreeSet<String> = h
        .tools()
        .await
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let classified: std::collections::BTreeSet<String> =
        classes().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        served, classified,
        "every tool must be classified here: how does it keep to the caller's numbers?"
    );

    let b_ids = [
        b.conversation.to_string(),
        b.inbound.to_string(),
        b.image.to_string(),
        b.failed.to_string(),
        b.campaign.clone(),
        b.flow_reply.to_string(),
    ];
    let shows_b = |v: &Value| {
        let s = v.to_string();
        s.contains(B_SECRET)
            || s.contains("\"b1\"")
            || b_ids.iter().any(|id| s.contains(id.as_str()))
    };
    for (name, class) in classes() {
        match class {
            Class::ById(of_b, missing) => {
                let before = snapshot(&h).await;
                let (b_err, b_answer) = call(&limited, name, of_b(&b)).await;
                assert_eq!(
                    snapshot(&h).await,
                    before,
                    "{name} changed something of B's"
                );
                let missing_args = missing();
                let (m_err, m_answer) = call(&limited, name, missing_args.clone()).await;
                assert_eq!(b_err, m_err, "{name}: {b_answer} / {m_answer}");
                if b_err {
                    assert_eq!(b_answer["error"]["code"], "NOT_FOUND", "{name}: {b_answer}");
                }
                // Word for word what a missing id answers: nothing confirms it exists.
                let mut ids: Vec<String> = b_ids.to_vec();
                ids.push(B_MEDIA.into());
                ids.push("no-such-media".into());
                ids.push(b.customer.clone());
                for v in missing_args.as_object().unwrap().values() {
                    match v {
                        Value::String(s) => ids.push(s.clone()),
                        Value::Array(a) => {
                            ids.extend(a.iter().filter_map(|x| x.as_str().map(String::from)))
                        }
                        _ => {}
                    }
                }
                assert_eq!(
                    masked(&b_answer, &ids),
                    masked(&m_answer, &ids),
                    "{name}: B's id answered differently from a missing one"
                );
            }
            Class::Customer(args) => {
                let (_, answer) = call(&limited, name, args(&b)).await;
                assert!(!shows_b(&answer), "{name} showed business B: {answer}");
            }
            Class::Listing(args) => {
                // (get_account_quality asks the platform with a1's dummy token: refused.)
                let (_, answer) = call(&limited, name, args).await;
                assert!(!shows_b(&answer), "{name} showed business B: {answer}");
            }
            Class::NoResource => {}
        }
    }
    // Nothing went out from b1: its one failed message is all it has.
    let from_b1 = h
        .count(
            "SELECT count(*) AS n FROM messages m JOIN message_senders s ON s.message_id = m.id \
             WHERE s.sender_id = 'b1' AND m.direction = 'outbound'",
        )
        .await;
    assert_eq!(from_b1, 1);
    // B's campaign is still scheduled, and its failed message not retried.
    let got = h
        .ok("get_campaign", json!({"campaign_id": b.campaign}))
        .await;
    assert_eq!(got["status"], "scheduled", "{got}");
    assert_eq!(h.message(&b.failed.to_string()).await.retry_count, 0);

    // The resources: the inbox lists a1's only, the conversation is a1's.
    let read = |uri: &str| {
        let uri = uri.to_string();
        let limited = &limited;
        async move {
            let r = limited
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .unwrap();
            serde_json::to_value(&r).unwrap()
        }
    };
    let inbox = read("warden://inbox").await;
    assert!(!shows_b(&inbox), "{inbox}");
    assert!(!inbox.to_string().contains(&b.customer), "{inbox}");
    let conversation = read(&format!("warden://conversations/{}", b.customer)).await;
    assert!(!shows_b(&conversation), "{conversation}");
    // The same reads by the deployment's own (unlimited) caller do show B.
    let all = h.ok("list_inbox", json!({})).await;
    assert!(all.to_string().contains(&b.customer), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_from_a_limited_agent_reads_and_sends_on_its_own_numbers() {
    let h = Harness::with(Opts {
        adjust: with_senders,
        ..Opts::default()
    })
    .await;
    let b = seed_b(&h).await;
    let b1_only = Caller {
        senders: Some(vec!["b1".into()]),
        ..a1_only()
    };
    let b_agent = common::connect(Gateway::new(h.deps.clone()).unwrap().acting_as(b1_only)).await;
    // Its inbox without `from` is b1's: B's customer waits there.
    let (is_error, inbox) = call(&b_agent, "list_inbox", json!({})).await;
    assert!(!is_error, "{inbox}");
    assert_eq!(
        inbox["items"][0]["customer_id"],
        b.customer.as_str(),
        "{inbox}"
    );
    assert_eq!(inbox["items"][0]["from"], "b1", "{inbox}");
    // A read about one number, without `from`, is about b1 (not the default, a1).
    let (_, history) = call(
        &b_agent,
        "get_conversation_history",
        json!({"customer_id": b.customer}),
    )
    .await;
    assert!(history.to_string().contains(B_SECRET), "{history}");
    let (_, status) = call(
        &b_agent,
        "get_delivery_status",
        json!({"message_id": b.failed}),
    )
    .await;
    assert_eq!(status["from"], "b1", "{status}");
    // And a reply without `from` goes out from b1, where the customer's window is open.
    let (is_error, sent) = call(
        &b_agent,
        "reply_customer",
        json!({"customer_id": b.customer, "message_text": "hello"}),
    )
    .await;
    assert!(!is_error, "{sent}");
    assert_eq!(sent["from"], "b1", "{sent}");
}

/// Over Streamable HTTP with real API keys, as an agency deploys it: a reaction, a retry,
/// a campaign control and a history read by the agent of business A on business B's ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_an_agent_key_of_business_a_cannot_touch_business_b() {
    let h = Harness::with(Opts {
        adjust: with_senders,
        ..Opts::default()
    })
    .await;
    let b = seed_b(&h).await;
    let pg = &h.deps.pg;
    let a1_bot = agents::create(
        pg,
        "a1-bot",
        vec!["read".into(), "send".into(), "campaigns".into()],
        Guardrails {
            senders: Some(vec!["a1".into()]),
            ..Guardrails::default()
        },
        "test",
    )
    .await
    .unwrap();
    let (gw, _dir) = http_gateway_with_senders(&h.deps.settings);
    let bearer = format!("Bearer {}", a1_bot.key);
    let messages_before = h.count("SELECT count(*) AS n FROM messages").await;

    let r = call_as(
        &gw,
        &bearer,
        "react_to_message",
        json!({"message_id": b.inbound, "emoji": "👍"}),
    )
    .await;
    assert_eq!(r["structuredContent"]["error"]["code"], "NOT_FOUND", "{r}");
    let r = call_as(
        &gw,
        &bearer,
        "retry_failed_messages",
        json!({"message_ids": [b.failed]}),
    )
    .await;
    assert_eq!(
        r["structuredContent"]["results"][0]["status"], "skipped",
        "{r}"
    );
    assert_eq!(
        r["structuredContent"]["results"][0]["reason"], "no message with this id",
        "{r}"
    );
    for tool in ["pause_campaign", "cancel_campaign", "get_campaign"] {
        let r = call_as(&gw, &bearer, tool, json!({"campaign_id": b.campaign})).await;
        assert_eq!(
            r["structuredContent"]["error"]["code"], "NOT_FOUND",
            "{tool}: {r}"
        );
    }
    let r = call_as(
        &gw,
        &bearer,
        "get_conversation_history",
        json!({"customer_id": b.customer}),
    )
    .await;
    assert_ne!(r["isError"], true, "{r}");
    assert!(!r.to_string().contains(B_SECRET), "{r}");
    let r = call_as(
        &gw,
        &bearer,
        "get_delivery_status",
        json!({"message_id": b.failed}),
    )
    .await;
    assert_eq!(r["structuredContent"]["error"]["code"], "NOT_FOUND", "{r}");

    // Nothing changed: no message queued, the campaign still scheduled, nothing retried.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM messages").await,
        messages_before
    );
    let got = h
        .ok("get_campaign", json!({"campaign_id": b.campaign}))
        .await;
    assert_eq!(got["status"], "scheduled", "{got}");
    assert_eq!(h.message(&b.failed.to_string()).await.retry_count, 0);
}

/// Tools whose answers are about no one number, or about several by their own ids, and why.
const NAMES_NO_NUMBER: &[(&str, &str)] = &[
    ("explain_error", "an error code's meaning"),
    ("estimate_cost", "a rate card's arithmetic"),
    ("estimate_pricing", "a rate card's arithmetic"),
    (
        "list_senders",
        "lists the numbers themselves, each by its id",
    ),
    ("sync_webhooks", "the deployment's app subscription"),
    (
        "retry_failed_messages",
        "per message id; get_delivery_status names each one's number",
    ),
    (
        "cancel_campaign",
        "per campaign id; get_campaign names its numbers",
    ),
    (
        "pause_campaign",
        "per campaign id; get_campaign names its numbers",
    ),
    (
        "resume_campaign",
        "per campaign id; get_campaign names its numbers",
    ),
    (
        "upload_media",
        "a media id for the number it was uploaded with",
    ),
    (
        "get_media",
        "a customer's file, fetched with the number it arrived at",
    ),
    ("sync_template_status", "a template of the business"),
    ("create_template", "a template of the business"),
];

/// Does this output schema carry `from` (or `senders`), at its top or in its list items?
fn names_its_number(schema: &Value) -> bool {
    let props = |s: &Value| s["properties"].as_object().cloned().unwrap_or_default();
    let top = props(schema);
    if top.contains_key("from") || top.contains_key("senders") {
        return true;
    }
    top.values().any(|p| {
        let items = &p["items"];
        // A list item named through $ref resolves in the schema's definitions.
        let item = match items["$ref"].as_str() {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or_default();
                schema["$defs"][name].clone()
            }
            None => items.clone(),
        };
        props(&item).contains_key("from")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_about_a_number_names_it() {
    let h = Harness::start().await;
    let mut unnamed = Vec::new();
    for tool in h.tools().await {
        let name = tool.name.to_string();
        if NAMES_NO_NUMBER.iter().any(|(n, _)| *n == name) {
            continue;
        }
        let schema = serde_json::to_value(tool.output_schema.as_deref()).unwrap();
        if !names_its_number(&schema) {
            unnamed.push(name);
        }
    }
    assert!(
        unnamed.is_empty(),
        "these answers do not say which number they are about (add `from`): {unnamed:?}"
    );
}
