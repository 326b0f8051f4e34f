//! Templates in full: create_template with header, footer, buttons and named parameters
//! (checked locally at every limit, stored, listed), then send_template, schedule_message
//! and schedule_campaign with components checked against the stored template, and the
//! stored platform components accepted by platform-sim (which refuses wrong ones with
//! 132000 / 132012 as the platform does).

use crate::common;

use chrono::{TimeDelta, Utc};
use common::{ACCESS_TOKEN, Harness, Opts, PHONE_NUMBER_ID, phone};
use serde_json::{Value, json};

fn with_sim() -> Opts {
    Opts {
        sim: true,
        ..Opts::default()
    }
}

/// An approved template with an IMAGE header, a URL button with a suffix and a quick reply.
async fn approved_order_template(h: &Harness) {
    let c = h
        .ok(
            "create_template",
            json!({"name": "order_shipped", "category": "UTILITY", "language": "en",
                   "body_text": "Order {{1}} ships {{2}}",
                   "header": "{\"format\": \"IMAGE\"}",
                   "footer": "Reply STOP to opt out",
                   "buttons": json!([
                       {"type": "URL", "text": "Track", "url": "https://shop.example/t/{{1}}"},
                       {"type": "QUICK_REPLY", "text": "Thanks"}
                   ]).to_string()}),
        )
        .await;
    assert_eq!(c["status"], "PENDING");
    h.sim().decide("order_shipped", "en", "APPROVED", "").await;
    let s = h
        .ok(
            "sync_template_status",
            json!({"template_name": "order_shipped"}),
        )
        .await;
    assert_eq!(s["status"], "APPROVED");
}

fn image_header() -> Value {
    json!({"type": "header", "parameters": [{"type": "image", "image": {"link": "https://shop.example/p.jpg"}}]})
}

fn url_button() -> Value {
    json!({"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]})
}

/// Sends a template body to the sim as the dispatcher does (the stored components as
/// they are) and answers (HTTP status, body).
async fn send_to_sim(h: &Harness, to: &str, template: Value) -> (u16, Value) {
    let sim = h.sim();
    let resp = sim
        .http
        .post(format!(
            "{}/{}/{PHONE_NUMBER_ID}/messages",
            sim.url,
            warden_platform::API_VERSION
        ))
        .bearer_auth(ACCESS_TOKEN)
        .json(&json!({"messaging_product": "whatsapp", "to": to, "type": "template", "template": template}))
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_with_components_is_created_listed_checked_and_sent_in_full() {
    let h = Harness::with(with_sim()).await;
    approved_order_template(&h).await;

    let listed = h
        .ok("list_templates", json!({"status_filter": "APPROVED"}))
        .await;
    let t = &listed["templates"][0];
    assert_eq!(t["name"], "order_shipped");
    assert_eq!(t["parameter_format"], "positional");
    let kinds: Vec<&str> = t["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["HEADER", "BODY", "FOOTER", "BUTTONS"], "{t}");
    assert_eq!(t["components"][0]["format"], "IMAGE");
    assert_eq!(
        t["components"][3]["buttons"][0]["url"],
        "https://shop.example/t/{{1}}"
    );

    // What is missing is named.
    let to = phone();
    let base =
        json!({"to": to, "template_name": "order_shipped", "variables": "[\"A1\", \"today\"]"});
    let with = |components: Value| {
        let mut a = base.clone();
        a["components"] = json!(components.to_string());
        a
    };
    let e = h
        .err("INVALID_ARGUMENT", "send_template", base.clone())
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("header is IMAGE"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            with(json!([image_header()])),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("button 0 (URL)"),
        "{e}"
    );
    let text_header =
        json!({"type": "header", "parameters": [{"type": "text", "text": "not an image"}]});
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            with(json!([text_header, url_button()])),
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("\"type\": \"image\""),
        "{e}"
    );

    // The full send: stored as the checked platform components.
    let sent = h
        .ok("send_template", with(json!([url_button(), image_header()])))
        .await;
    assert_eq!(sent["status"], "queued");
    let row = h.message(sent["message_id"].as_str().unwrap()).await;
    assert_eq!(row.category, "utility", "the stored template's category");
    let stored = row.content["template"]["components"].clone();
    assert_eq!(
        stored,
        json!([
            image_header(),
            {"type": "body", "parameters": [{"type": "text", "text": "A1"}, {"type": "text", "text": "today"}]},
            url_button(),
        ])
    );

    // The sim takes exactly that body, and refuses it without the header or with text for
    // the image, as the platform does.
    let template =
        json!({"name": "order_shipped", "language": {"code": "en"}, "components": stored});
    let (status, body) = send_to_sim(&h, &to, template.clone()).await;
    assert_eq!(status, 200, "{body}");
    let mut no_header = template.clone();
    no_header["components"].as_array_mut().unwrap().remove(0);
    let (status, body) = send_to_sim(&h, &to, no_header).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(132000)),
        "{body}"
    );
    let mut text_for_image = template.clone();
    text_for_image["components"][0]["parameters"][0] = json!({"type": "text", "text": "x"});
    let (status, body) = send_to_sim(&h, &to, text_for_image).await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (400, Some(132012)),
        "{body}"
    );
    let mut no_suffix = template.clone();
    no_suffix["components"].as_array_mut().unwrap().remove(2);
    let (_, body) = send_to_sim(&h, &to, no_suffix).await;
    assert_eq!(body["error"]["code"].as_i64(), Some(132000), "{body}");

    // schedule_message takes the platform's own template body.
    let deliver_at = (Utc::now() + TimeDelta::hours(2)).to_rfc3339();
    let content = json!({"type": "template", "template": template});
    let s = h
        .ok(
            "schedule_message",
            json!({"customer_id": to, "message_type": "template", "deliver_at": deliver_at,
                   "content": content.to_string()}),
        )
        .await;
    let row = h.message(s["message_id"].as_str().unwrap()).await;
    assert_eq!(row.content["template"]["components"], stored);
    let mut missing = content.clone();
    missing["template"]["components"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "schedule_message",
            json!({"customer_id": to, "message_type": "template", "deliver_at": deliver_at,
                   "content": missing.to_string()}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("IMAGE"), "{e}");

    // A campaign carries the same components for every recipient.
    let campaign = json!({"name": "ship", "type": "utility", "template_name": "order_shipped",
                          "deliver_at": deliver_at, "variables": "{\"1\": \"A1\", \"2\": \"today\"}"});
    h.err("INVALID_ARGUMENT", "schedule_campaign", campaign.clone())
        .await;
    let mut full = campaign.clone();
    full["components"] = json!(json!([image_header(), url_button()]).to_string());
    h.ok("schedule_campaign", full).await;
    assert_eq!(
        h.count("SELECT count(*) AS n FROM campaigns WHERE jsonb_array_length(components) = 2")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_template_refuses_every_limit_at_its_edge() {
    let h = Harness::with(with_sim()).await;
    let make = |name: &str, extra: Value| {
        let mut a = json!({"name": name, "category": "MARKETING", "language": "en", "body_text": "Hi {{1}}"});
        for (k, v) in extra.as_object().unwrap() {
            a[k] = v.clone();
        }
        a
    };
    let qr = |n: usize| -> String {
        json!(
            (0..n)
                .map(|i| json!({"type": "QUICK_REPLY", "text": format!("q{i}")}))
                .collect::<Vec<_>>()
        )
        .to_string()
    };
    let urls = |n: usize| -> String {
        json!((0..n)
            .map(|i| json!({"type": "URL", "text": "Go", "url": format!("https://x.example/{i}")}))
            .collect::<Vec<_>>())
        .to_string()
    };
    let refused = |e: Value, needle: &str| {
        let m = e["message"].as_str().unwrap().to_owned();
        assert!(m.contains(needle), "{needle:?} not in {m}");
    };

    h.ok(
        "create_template",
        make("ten_buttons", json!({"buttons": qr(10)})),
    )
    .await;
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make("eleven_buttons", json!({"buttons": qr(11)})),
        )
        .await,
        "buttons has 11 buttons; at most 10",
    );
    h.ok(
        "create_template",
        make("two_urls", json!({"buttons": urls(2)})),
    )
    .await;
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make("three_urls", json!({"buttons": urls(3)})),
        )
        .await,
        "3 URL buttons; at most 2",
    );
    let header = |n: usize| json!({"format": "TEXT", "text": "h".repeat(n)}).to_string();
    h.ok(
        "create_template",
        make("header_60", json!({"header": header(60)})),
    )
    .await;
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make("header_61", json!({"header": header(61)})),
        )
        .await,
        "header.text has 61 characters; at most 60",
    );
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make(
                "two_vars",
                json!({"header": json!({"format": "TEXT", "text": "{{1}} {{1}}"}).to_string()}),
            ),
        )
        .await,
        "at most 1",
    );
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make(
                "split_replies",
                json!({"buttons": json!([
                {"type": "QUICK_REPLY", "text": "a"},
                {"type": "URL", "text": "b", "url": "https://x.example"},
                {"type": "QUICK_REPLY", "text": "c"}]).to_string()}),
            ),
        )
        .await,
        "together",
    );
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make(
                "otp_marketing",
                json!({"buttons": json!([{"type": "OTP", "otp_type": "COPY_CODE"}]).to_string()}),
            ),
        )
        .await,
        "AUTHENTICATION",
    );
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            make("footer_61", json!({"footer": "f".repeat(61)})),
        )
        .await,
        "footer has 61 characters; at most 60",
    );
    let named = |body: &str| {
        let mut a = make("named_bad", json!({"parameter_format": "named"}));
        a["body_text"] = json!(body);
        a
    };
    refused(
        h.err(
            "INVALID_ARGUMENT",
            "create_template",
            named("Hi {{First_Name}}"),
        )
        .await,
        "lower-case",
    );
    refused(
        h.err("INVALID_ARGUMENT", "create_template", named("Hi {{1}}"))
            .await,
        "named",
    );
    // Nothing refused reached the platform or the store.
    assert_eq!(h.count("SELECT count(*) AS n FROM templates").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_templates_take_named_values_only() {
    let h = Harness::with(with_sim()).await;
    h.ok(
        "create_template",
        json!({"name": "welcome_named", "category": "MARKETING", "language": "en",
               "parameter_format": "named", "body_text": "Hi {{first_name}}, your code is {{code}}"}),
    )
    .await;
    h.sim().decide("welcome_named", "en", "APPROVED", "").await;
    h.ok(
        "sync_template_status",
        json!({"template_name": "welcome_named"}),
    )
    .await;
    let listed = h.ok("list_templates", json!({})).await;
    assert_eq!(listed["templates"][0]["parameter_format"], "named");

    let to = phone();
    let send = |variables: Value| json!({"to": to, "template_name": "welcome_named", "variables": variables.to_string()});
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            send(json!(["Ana", "42"])),
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("named parameters ({{first_name}}, {{code}})"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            send(json!({"first_name": "Ana"})),
        )
        .await;
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("\"code\" is missing"),
        "{e}"
    );
    let ok = h
        .ok(
            "send_template",
            send(json!({"code": "42", "first_name": "Ana"})),
        )
        .await;
    let row = h.message(ok["message_id"].as_str().unwrap()).await;
    assert_eq!(row.category, "marketing", "the stored template's category");
    let components = row.content["template"]["components"].clone();
    assert_eq!(
        components,
        json!([{"type": "body", "parameters": [
            {"type": "text", "parameter_name": "first_name", "text": "Ana"},
            {"type": "text", "parameter_name": "code", "text": "42"}]}])
    );
    let template =
        json!({"name": "welcome_named", "language": {"code": "en"}, "components": components});
    let (status, body) = send_to_sim(&h, &to, template).await;
    assert_eq!(status, 200, "{body}");
    // Positional values for a named template: the sim answers 132012.
    let positional = json!({"name": "welcome_named", "language": {"code": "en"}, "components": [
        {"type": "body", "parameters": [{"type": "text", "text": "Ana"}, {"type": "text", "text": "42"}]}]});
    let (_, body) = send_to_sim(&h, &to, positional).await;
    assert_eq!(body["error"]["code"].as_i64(), Some(132012), "{body}");

    // A positional template refuses named values.
    h.ok(
        "create_template",
        json!({"name": "plain_positional", "category": "UTILITY", "language": "en", "body_text": "Hi {{1}}"}),
    )
    .await;
    h.sim()
        .decide("plain_positional", "en", "APPROVED", "")
        .await;
    h.ok(
        "sync_template_status",
        json!({"template_name": "plain_positional"}),
    )
    .await;
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "send_template",
            json!({"to": to, "template_name": "plain_positional", "variables": "{\"name\": \"Ana\"}"}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("positional"), "{e}");
}
