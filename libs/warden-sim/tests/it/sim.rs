//! End-to-end tests of platform-sim over HTTP: each test starts its own sim (and,
//! when it needs one, its own webhook receiver) on port 0.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use warden_platform::signature;
use warden_platform::webhook::{Change, StatusKind};

#[tokio::test]
async fn health_and_unknown_paths() {
    let sim = start_sim(config(None)).await;
    let r = sim
        .http
        .get(format!("{}/health", sim.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(r.text().await.unwrap(), "OK");

    let r = sim
        .http
        .get(format!("{}/v21.5/x", sim.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], 100);
}

#[tokio::test]
async fn bearer_token_is_checked_on_every_platform_path() {
    let sim = start_sim(config(None)).await;
    let paths = [
        ("POST", format!("{PHONE_NUMBER_ID}/messages")),
        ("POST", format!("{WABA_ID}/message_templates")),
        ("GET", format!("{WABA_ID}/message_templates")),
        ("GET", format!("{WABA_ID}/phone_numbers")),
        ("GET", format!("{PHONE_NUMBER_ID}?fields=quality_rating")),
    ];
    let basic = format!("Basic {ACCESS_TOKEN}");
    for (method, path) in &paths {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some(ACCESS_TOKEN),
            Some(basic.as_str()),
        ] {
            let url = format!("{}/{API}/{path}", sim.url);
            let mut req = if *method == "POST" {
                sim.http.post(&url).json(&text("628123456789", "hi", None))
            } else {
                sim.http.get(&url)
            };
            if let Some(a) = auth {
                req = req.header("authorization", a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.status().as_u16(), 401, "{method} {path} with {auth:?}");
            let body: Value = r.json().await.unwrap();
            assert_eq!(body["error"]["code"], 190, "{body}");
            assert_eq!(body["error"]["type"], "OAuthException");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("access token")
            );
            assert!(body["error"]["fbtrace_id"].is_string());
        }
    }
    // The scheme is case-insensitive, as for the real API.
    let r = sim
        .http
        .post(sim.messages_url())
        .header("authorization", format!("bearer {ACCESS_TOKEN}"))
        .json(&text("628123456789", "hi", None))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // Nothing refused was counted.
    assert_eq!(sim.stats().await["total_sends"], 1);
}

#[tokio::test]
async fn text_send_answers_the_platform_body() {
    let sim = start_sim(config(None)).await;
    let (status, body) = sim
        .send(&text("+62 812-3456-789", "hello", Some("msg-1")))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["messaging_product"], "whatsapp");
    assert_eq!(body["contacts"][0]["input"], "+62 812-3456-789");
    assert_eq!(body["contacts"][0]["wa_id"], "628123456789");
    let wamid = body["messages"][0]["id"].as_str().unwrap();
    assert!(wamid.starts_with("wamid."), "{wamid}");
    assert_eq!(body["messages"][0]["message_status"], "accepted");

    let (_, again) = sim
        .send(&text("628123456789", "hello", Some("msg-2")))
        .await;
    assert_ne!(again["messages"][0]["id"], body["messages"][0]["id"]);

    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 2);
    assert_eq!(stats["duplicates"], 0);
    assert_eq!(
        stats["by_message"]["msg-1"],
        json!({"count": 1, "wamid": wamid, "recipient": "628123456789", "type": "text",
               "phone_number_id": PHONE_NUMBER_ID, "endpoint": "messages"})
    );
    assert_eq!(stats["by_recipient"]["628123456789"], 2);
}

#[tokio::test]
async fn bad_requests_get_code_100() {
    let sim = start_sim(config(None)).await;
    let raw = |body: &'static str| {
        sim.http
            .post(sim.messages_url())
            .bearer_auth(ACCESS_TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for body in ["{not json", "", "[1,2]", "\"text\""] {
        let r = raw(body).await.unwrap();
        assert_eq!(r.status().as_u16(), 400, "{body:?}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], 100, "{body:?}: {v}");
        assert_eq!(v["error"]["message"], "(#100) Invalid parameter");
    }
    let cases = [
        json!({"to": "628123", "type": "text", "text": {"body": "x"}}),
        json!({"messaging_product": "whatsapp", "type": "text", "text": {"body": "x"}}),
        json!({"messaging_product": "whatsapp", "to": "628123", "type": "text", "text": {"body": ""}}),
        json!({"messaging_product": "whatsapp", "to": "628123", "type": "template"}),
    ];
    for c in &cases {
        let (status, v) = sim.send(c).await;
        assert_eq!(
            (status, v["error"]["code"].clone()),
            (400, json!(100)),
            "{c}: {v}"
        );
    }
    // Wrong phone number id in the path.
    let r = sim
        .http
        .post(format!("{}/{API}/999/messages", sim.url))
        .bearer_auth(ACCESS_TOKEN)
        .json(&text("628123", "x", None))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], 100);
    assert_eq!(sim.stats().await["total_sends"], 0);
}

#[tokio::test]
async fn template_sends_check_name_and_parameter_count() {
    let sim = start_sim(config(None)).await;
    let (status, v) = sim
        .send(&template("628123", "no_such_template", "en", &["a"], None))
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!(132001)),
        "{v}"
    );
    // Right name, wrong language.
    let (_, v) = sim
        .send(&template("628123", "warden_otp", "fr", &["1"], None))
        .await;
    assert_eq!(v["error"]["code"], 132001);
    // warden_payment_reminder has {{1}} {{2}} {{3}}.
    for params in [&[][..], &["a"][..], &["a", "b", "c", "d"][..]] {
        let (status, v) = sim
            .send(&template(
                "628123",
                "warden_payment_reminder",
                "en",
                params,
                None,
            ))
            .await;
        assert_eq!(
            (status, v["error"]["code"].clone()),
            (400, json!(132000)),
            "{v}"
        );
        assert!(
            v["error"]["error_data"]["details"]
                .as_str()
                .unwrap()
                .contains("(3)")
        );
    }
    let (status, v) = sim
        .send(&template(
            "628123",
            "warden_payment_reminder",
            "en",
            &["Ana", "$5", "Monday"],
            None,
        ))
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(sim.stats().await["total_sends"], 1);
}

#[tokio::test]
async fn status_webhooks_are_signed_and_echo_the_callback_data() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let (_, body) = sim
        .send(&template(
            "628111222333",
            "warden_promo",
            "en",
            &["Ana"],
            Some("msg-42"),
        ))
        .await;
    let wamid = body["messages"][0]["id"].as_str().unwrap().to_owned();
    let (_, _) = sim
        .send(&text("628111222334", "free form", Some("msg-43")))
        .await;

    rx.wait_for("6 statuses", |c| c.len() >= 6).await;
    for r in rx.received() {
        let sig = r.signature.as_deref().expect("signature header");
        assert!(signature::verify(APP_SECRET.as_bytes(), &r.body, sig));
        assert!(!signature::verify(b"other-secret", &r.body, sig));
        let env = r.envelope();
        assert_eq!(env.object, "whatsapp_business_account");
        assert_eq!(env.entry[0].id, WABA_ID);
        let raw: Value = serde_json::from_slice(&r.body).unwrap();
        // The wire shape: field + value, string timestamps.
        let change = &raw["entry"][0]["changes"][0];
        assert_eq!(change["field"], "messages");
        assert!(change["value"]["statuses"][0]["timestamp"].is_string());
        assert_eq!(
            change["value"]["metadata"]["phone_number_id"],
            PHONE_NUMBER_ID
        );
    }
    let statuses = rx.statuses();
    let of = |cb: &str| -> Vec<_> {
        statuses
            .iter()
            .filter(|s| s.biz_opaque_callback_data.as_deref() == Some(cb))
            .collect()
    };
    let promo = of("msg-42");
    let kinds: Vec<_> = promo.iter().map(|s| s.kind()).collect();
    assert_eq!(
        kinds,
        [StatusKind::Sent, StatusKind::Delivered, StatusKind::Read]
    );
    for s in &promo {
        assert_eq!(s.id, wamid);
        assert_eq!(s.recipient_id, "628111222333");
        let p = s.pricing.as_ref().unwrap();
        assert_eq!(p.pricing_model.as_deref(), Some("PMP"));
        assert_eq!(p.category.as_deref(), Some("marketing"));
        assert_eq!(p.billable, Some(true));
        assert!(s.errors.is_empty());
    }
    let service = of("msg-43");
    assert_eq!(service.len(), 3);
    let p = service[0].pricing.as_ref().unwrap();
    assert_eq!(
        (p.category.as_deref(), p.billable),
        (Some("service"), Some(false))
    );
}

#[tokio::test]
async fn inbound_sends_a_signed_message_webhook() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let (status, v) = sim
        .control("inbound", &json!({"from": "+62 811 000", "text": "STOP"}))
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["webhook_queued"], true);
    let changes = rx.wait_for("inbound message", |c| !c.is_empty()).await;
    let Change::Messages(m) = &changes[0] else {
        panic!("{changes:?}")
    };
    let msg = &m.messages[0];
    assert_eq!(msg.from, "62811000");
    assert_eq!(msg.kind, "text");
    assert_eq!(msg.text_body(), Some("STOP"));
    assert_eq!(msg.id, v["wamid"].as_str().unwrap());
    let now = warden_sim::webhooks::unix_now();
    assert!((now - msg.timestamp).abs() < 60);
    assert_eq!(m.contacts[0].wa_id, "62811000");
    let r = &rx.received()[0];
    assert!(signature::verify(
        APP_SECRET.as_bytes(),
        &r.body,
        r.signature.as_deref().unwrap()
    ));
    let raw: Value = serde_json::from_slice(&r.body).unwrap();
    assert!(raw["entry"][0]["changes"][0]["value"]["messages"][0]["timestamp"].is_string());

    // A chosen timestamp (e.g. to test an old care window) is passed through.
    sim.control(
        "inbound",
        &json!({"from": "62811000", "text": "hi", "timestamp": 1_700_000_000}),
    )
    .await;
    let changes = rx.wait_for("second inbound", |c| c.len() >= 2).await;
    let Change::Messages(m) = &changes[1] else {
        panic!()
    };
    assert_eq!(m.messages[0].timestamp, 1_700_000_000);

    let (status, _) = sim
        .control("inbound", &json!({"from": "abc", "text": "x"}))
        .await;
    assert_eq!(status, 400);
    let (status, _) = sim.control("inbound", &json!({"text": "x"})).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn inbound_of_any_type_and_read_receipts() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let (status, v) = sim
        .control(
            "inbound",
            &json!({"from": "62811000", "type": "image",
                    "image": {"id": "77", "mime_type": "image/jpeg", "sha256": "h", "caption": "c"},
                    "context": {"id": "wamid.OURS"}}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["type"], "image");
    let changes = rx.wait_for("typed inbound", |c| !c.is_empty()).await;
    let Change::Messages(m) = &changes[0] else {
        panic!("{changes:?}")
    };
    let msg = &m.messages[0];
    assert_eq!(msg.kind, "image");
    assert_eq!(msg.other["image"]["id"], "77");
    assert_eq!(msg.other["context"]["id"], "wamid.OURS");
    assert!(msg.text.is_none());
    // A type without its object is refused.
    let (status, _) = sim
        .control("inbound", &json!({"from": "62811000", "type": "location"}))
        .await;
    assert_eq!(status, 400);

    // Read receipts (with and without typing) are accepted and counted, not sends.
    let (status, v) = sim
        .send(&json!({"messaging_product": "whatsapp", "status": "read",
                      "message_id": msg.id}))
        .await;
    assert_eq!((status, v.clone()), (200, json!({"success": true})), "{v}");
    let (status, _) = sim
        .send(&json!({"messaging_product": "whatsapp", "status": "read",
                      "message_id": msg.id, "typing_indicator": {"type": "text"}}))
        .await;
    assert_eq!(status, 200);
    let (status, v) = sim
        .send(&json!({"messaging_product": "whatsapp", "status": "read"}))
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(100)),
        "{v}"
    );
    let stats = sim.stats().await;
    assert_eq!(stats["marked_read"], 2, "{stats}");
    assert_eq!(stats["total_sends"], 0, "{stats}");
}

#[tokio::test]
async fn phone_numbers_and_quality_fields() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let (status, v) = sim.get_api(&format!("{WABA_ID}/phone_numbers")).await;
    assert_eq!(status, 200, "{v}");
    let p = &v["data"][0];
    assert_eq!(p["id"], PHONE_NUMBER_ID);
    assert_eq!(p["quality_rating"], "GREEN");
    assert!(p["display_phone_number"].is_string());

    let (status, v) = sim
        .get_api(&format!(
            "{PHONE_NUMBER_ID}?fields=quality_rating,messaging_limit_tier,throughput"
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        v,
        json!({"id": PHONE_NUMBER_ID, "quality_rating": "GREEN", "messaging_limit_tier": "TIER_1K",
               "throughput": {"level": "STANDARD"}})
    );
    let (status, v) = sim.get_api(&format!("{WABA_ID}?fields=name")).await;
    assert_eq!(status, 200);
    assert_eq!(v["id"], WABA_ID);
    assert!(v["name"].is_string());
    let (status, v) = sim.get_api("12345?fields=name").await;
    assert_eq!((status, v["error"]["code"].clone()), (400, json!(100)));

    // Quality changes are scriptable and announced by webhook.
    let (status, _) = sim
        .control(
            "quality",
            &json!({"quality_rating": "RED", "messaging_limit_tier": "TIER_250"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, v) = sim
        .get_api(&format!(
            "{PHONE_NUMBER_ID}?fields=quality_rating,messaging_limit_tier"
        ))
        .await;
    assert_eq!(
        (
            v["quality_rating"].as_str(),
            v["messaging_limit_tier"].as_str()
        ),
        (Some("RED"), Some("TIER_250"))
    );
    let changes = rx.wait_for("quality update", |c| !c.is_empty()).await;
    let Change::Quality(q) = &changes[0] else {
        panic!("{changes:?}")
    };
    assert_eq!(
        (q.event.as_str(), q.current_limit.as_deref()),
        ("FLAGGED", Some("TIER_250"))
    );
}

#[tokio::test]
async fn user_preferences_webhook() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    let (status, _) = sim
        .control(
            "user_preferences",
            &json!({"wa_id": "628555", "value": "stop"}),
        )
        .await;
    assert_eq!(status, 200);
    let changes = rx.wait_for("preference", |c| !c.is_empty()).await;
    let Change::UserPreferences(p) = &changes[0] else {
        panic!()
    };
    assert_eq!(p.user_preferences[0].wa_id, "628555");
    assert_eq!(p.user_preferences[0].value, "stop");
    assert_eq!(p.user_preferences[0].category, "marketing_messages");
    let (status, _) = sim
        .control(
            "user_preferences",
            &json!({"wa_id": "628555", "value": "maybe"}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn faults_fail_the_next_sends_with_code_and_status() {
    let sim = start_sim(config(None)).await;
    let (status, _) = sim
        .control(
            "faults",
            &json!({"recipient": "+62 811-999", "code": 131026, "http_status": 400, "times": 2}),
        )
        .await;
    assert_eq!(status, 200);
    for i in 0..2 {
        let (status, v) = sim.send(&text("62811999", "x", Some("m-fault"))).await;
        assert_eq!(status, 400, "attempt {i}: {v}");
        assert_eq!(v["error"]["code"], 131026);
        assert_eq!(v["error"]["message"], "(#131026) Message undeliverable");
        assert!(v["error"]["fbtrace_id"].is_string());
    }
    // Other recipients are unaffected, and the fault is spent after `times`.
    assert_eq!(sim.send(&text("62811998", "x", None)).await.0, 200);
    assert_eq!(
        sim.send(&text("62811999", "x", Some("m-fault"))).await.0,
        200
    );
    let stats = sim.stats().await;
    // Refused sends are not accepted sends: no duplicate for the retried message.
    assert_eq!(stats["total_sends"], 2);
    assert_eq!(stats["duplicates"], 0);
    assert_eq!(stats["by_message"]["m-fault"]["count"], 1);

    // A 5xx throughput fault for any recipient.
    sim.control("faults", &json!({"code": 130429, "http_status": 503}))
        .await;
    let (status, v) = sim.send(&text("62800001", "x", None)).await;
    assert_eq!((status, v["error"]["code"].clone()), (503, json!(130429)));
    assert_eq!(sim.send(&text("62800001", "x", None)).await.0, 200);

    // times: 0 clears an armed fault.
    sim.control(
        "faults",
        &json!({"recipient": "62800002", "code": 131047, "times": 5}),
    )
    .await;
    sim.control(
        "faults",
        &json!({"recipient": "62800002", "code": 131047, "times": 0}),
    )
    .await;
    assert_eq!(sim.send(&text("62800002", "x", None)).await.0, 200);

    let (status, _) = sim
        .control("faults", &json!({"recipient": "62800002"}))
        .await;
    assert_eq!(status, 400);
    let (status, _) = sim
        .control("faults", &json!({"code": 1, "http_status": 99}))
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn an_http_200_fault_accepts_then_fails_by_webhook() {
    let rx = receiver(0).await;
    let sim = start_sim(config(Some(rx.url.clone()))).await;
    sim.control(
        "faults",
        &json!({"recipient": "628777", "code": 131050, "http_status": 200}),
    )
    .await;
    let (status, v) = sim
        .send(&template(
            "628777",
            "warden_promo",
            "en",
            &["Ana"],
            Some("m-stop"),
        ))
        .await;
    assert_eq!(status, 200, "{v}");
    rx.wait_for("failed status", |c| c.len() >= 2).await;
    let statuses = rx.statuses();
    let kinds: Vec<_> = statuses.iter().map(|s| s.kind()).collect();
    assert_eq!(kinds, [StatusKind::Sent, StatusKind::Failed]);
    let failed = &statuses[1];
    assert_eq!(failed.biz_opaque_callback_data.as_deref(), Some("m-stop"));
    assert_eq!(failed.errors[0].code, 131050);
    assert!(failed.errors[0].title.is_some());
    assert!(failed.errors[0].details().is_some());
}

#[tokio::test]
async fn latency_slows_every_send_until_reset() {
    let sim = start_sim(config(None)).await;
    sim.control("faults", &json!({"latency_ms": 300})).await;
    let t = Instant::now();
    assert_eq!(sim.send(&text("628123", "x", None)).await.0, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    sim.control("reset", &json!({})).await;
    let t = Instant::now();
    assert_eq!(sim.send(&text("628123", "x", None)).await.0, 200);
    assert!(
        t.elapsed() < Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn counters_after_200_concurrent_sends_and_duplicates() {
    let sim = start_sim(config(None)).await;
    let mut tasks = Vec::new();
    for i in 0..200 {
        let http = sim.http.clone();
        let url = sim.messages_url();
        tasks.push(tokio::spawn(async move {
            let to = format!("62800000{:03}", i % 10);
            let r = http
                .post(url)
                .bearer_auth(ACCESS_TOKEN)
                .json(&text(&to, "x", Some(format!("msg-{i}").as_str())))
                .send()
                .await
                .unwrap();
            let v: Value = r.json().await.unwrap();
            v["messages"][0]["id"].as_str().unwrap().to_owned()
        }));
    }
    let mut wamids = HashSet::new();
    for t in tasks {
        wamids.insert(t.await.unwrap());
    }
    assert_eq!(wamids.len(), 200, "wamids are unique");
    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 200);
    assert_eq!(stats["duplicates"], 0);
    let by_message = stats["by_message"].as_object().unwrap();
    assert_eq!(by_message.len(), 200);
    assert!(by_message.values().all(|m| m["count"] == 1));
    assert!(
        by_message
            .values()
            .all(|m| wamids.contains(m["wamid"].as_str().unwrap()))
    );
    let by_recipient = stats["by_recipient"].as_object().unwrap();
    assert_eq!(by_recipient.len(), 10);
    assert!(by_recipient.values().all(|n| n == 20));

    // The same callback data sent again counts as a duplicate, each time.
    for i in 0..5 {
        assert_eq!(
            sim.send(&text("62800000000", "x", Some(format!("msg-{i}").as_str())))
                .await
                .0,
            200
        );
    }
    assert_eq!(
        sim.send(&text("62800000000", "x", Some("msg-0"))).await.0,
        200
    );
    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 206);
    assert_eq!(stats["duplicates"], 6);
    assert_eq!(stats["by_message"]["msg-0"]["count"], 3);
    assert_eq!(stats["by_message"]["msg-1"]["count"], 2);
    // Without callback data a send counts per recipient only.
    assert_eq!(sim.send(&text("62800000000", "x", None)).await.0, 200);
    let stats = sim.stats().await;
    assert_eq!(stats["by_message"].as_object().unwrap().len(), 200);
    assert_eq!(stats["by_recipient"]["62800000000"], 27);
}

#[tokio::test]
async fn stats_have_exactly_the_contract_shape_and_reset_clears_them() {
    let sim = start_sim(config(None)).await;
    sim.send(&text("628123", "x", Some("m1"))).await;
    sim.control("faults", &json!({"recipient": "628124", "code": 131026}))
        .await;
    let stats = sim.stats().await;
    let keys: HashSet<&str> = stats
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        HashSet::from([
            "total_sends",
            "duplicates",
            "by_message",
            "by_recipient",
            "by_version",
            "marked_read"
        ])
    );
    let entry = stats["by_message"]["m1"].as_object().unwrap();
    let entry_keys: HashSet<&str> = entry.keys().map(String::as_str).collect();
    assert_eq!(
        entry_keys,
        HashSet::from([
            "count",
            "wamid",
            "recipient",
            "type",
            "phone_number_id",
            "endpoint"
        ])
    );
    assert_eq!(entry["phone_number_id"], PHONE_NUMBER_ID);

    let (status, _) = sim.control("reset", &json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(
        sim.stats().await,
        json!({"total_sends": 0, "duplicates": 0, "by_message": {}, "by_recipient": {}, "by_version": {}, "marked_read": 0})
    );
    // Faults were cleared too; templates were kept.
    assert_eq!(sim.send(&text("628124", "x", None)).await.0, 200);
    assert_eq!(
        sim.send(&template("628124", "warden_otp", "en", &["1"], None))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn every_vnn_version_prefix_is_served_and_counted() {
    let sim = start_sim(config(None)).await;
    for version in ["v25.0", "v24.0", "v25.0"] {
        let r = sim
            .http
            .post(format!("{}/{version}/{PHONE_NUMBER_ID}/messages", sim.url))
            .bearer_auth(ACCESS_TOKEN)
            .json(&text("628123456789", "hi", None))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{version}");
    }
    // Not a version prefix: not a platform path at all.
    for bad in ["v25.1", "25.0", "vx.0"] {
        let r = sim
            .http
            .post(format!("{}/{bad}/{PHONE_NUMBER_ID}/messages", sim.url))
            .bearer_auth(ACCESS_TOKEN)
            .json(&text("628123456789", "hi", None))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404, "{bad}");
    }
    let stats = sim.stats().await;
    assert_eq!(stats["total_sends"], 3);
    assert_eq!(stats["by_version"], json!({"v25.0": 2, "v24.0": 1}));
}
