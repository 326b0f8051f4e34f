//! Several numbers of several businesses (`SIM_SENDERS`): two numbers of two accounts, each
//! with its own token, templates, secret, throughput and quality.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::time::Duration;
use warden_platform::signature;
use warden_platform::webhook::{Change, WebhookEnvelope};

const A: &str = "111000000000001";
const WABA_A: &str = "911000000000001";
const TOKEN_A: &str = "token-a";
const SECRET_A: &str = "secret-a";
const B: &str = "222000000000002";
const WABA_B: &str = "922000000000002";
const TOKEN_B: &str = "token-b";
const SECRET_B: &str = "secret-b";

/// A senders file of two numbers of two businesses; `mps_a` limits number A only.
fn senders_file(mps_a: u32) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    let senders = json!([
        {"phone_number_id": A, "display_phone_number": "15550001111", "waba_id": WABA_A,
         "portfolio_id": "811000000000001", "access_token": TOKEN_A, "app_secret": SECRET_A,
         "throughput_mps": mps_a, "quality": "GREEN"},
        {"phone_number_id": B, "display_phone_number": "15550002222", "waba_id": WABA_B,
         "portfolio_id": "822000000000002", "access_token": TOKEN_B, "app_secret": SECRET_B,
         "throughput_mps": 1000, "quality": "YELLOW"}
    ]);
    std::fs::write(file.path(), senders.to_string()).unwrap();
    file
}

async fn two_numbers(
    webhook_url: Option<String>,
    mps_a: u32,
) -> (TestSim, tempfile::NamedTempFile) {
    let file = senders_file(mps_a);
    let sim = start_sim(warden_sim::SimConfig {
        senders: Some(file.path().to_owned()),
        ..config(webhook_url)
    })
    .await;
    (sim, file)
}

/// A platform call with `token`; (HTTP status, JSON body).
async fn call(
    sim: &TestSim,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let url = format!("{}/{API}/{path}", sim.url);
    let req = match method {
        "POST" => sim.http.post(url).json(body.unwrap_or(&json!({}))),
        _ => sim.http.get(url),
    };
    let r = req.bearer_auth(token).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

fn assert_unauthorized(answer: &(u16, Value), what: &str) {
    assert_eq!(answer.0, 401, "{what}: {}", answer.1);
    assert_eq!(answer.1["error"]["code"], 190, "{what}: {}", answer.1);
    assert!(
        answer.1["error"]["message"].is_string(),
        "{what}: {}",
        answer.1
    );
    assert!(
        answer.1["error"]["fbtrace_id"].is_string(),
        "{what}: {}",
        answer.1
    );
}

#[tokio::test]
async fn each_token_works_only_for_its_own_number_and_account() {
    let (sim, _file) = two_numbers(None, 80).await;
    let send = text("628123", "hi", None);
    for (number, waba, token, other) in
        [(A, WABA_A, TOKEN_A, TOKEN_B), (B, WABA_B, TOKEN_B, TOKEN_A)]
    {
        let ok = call(
            &sim,
            "POST",
            &format!("{number}/messages"),
            token,
            Some(&send),
        )
        .await;
        assert_eq!(ok.0, 200, "{number} with its token: {}", ok.1);
        for (method, path) in [
            ("POST", format!("{number}/messages")),
            ("GET", format!("{number}?fields=quality_rating")),
            ("GET", format!("{waba}/message_templates")),
            ("GET", format!("{waba}/phone_numbers")),
            ("GET", format!("{waba}?fields=name")),
        ] {
            let answer = call(&sim, method, &path, other, Some(&send)).await;
            assert_unauthorized(&answer, &format!("{method} {path} with the other token"));
            let own = call(&sim, method, &path, token, Some(&send)).await;
            assert_eq!(own.0, 200, "{method} {path} with its own token: {}", own.1);
        }
    }
    // A token of no number is refused the same way; the default number's token is not served.
    assert_unauthorized(
        &call(
            &sim,
            "POST",
            &format!("{A}/messages"),
            "nobody",
            Some(&send),
        )
        .await,
        "an unknown token",
    );
    assert_unauthorized(
        &call(
            &sim,
            "POST",
            &format!("{A}/messages"),
            ACCESS_TOKEN,
            Some(&send),
        )
        .await,
        "the settings' token",
    );
    // Each account lists only its own numbers, and names its portfolio.
    let (_, phones) = call(
        &sim,
        "GET",
        &format!("{WABA_B}/phone_numbers"),
        TOKEN_B,
        None,
    )
    .await;
    let ids: Vec<&str> = phones["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .collect();
    assert_eq!(ids, [B]);
    assert_eq!(phones["data"][0]["quality_rating"], "YELLOW");
    let (_, account) = call(
        &sim,
        "GET",
        &format!("{WABA_B}?fields=owner_business_info"),
        TOKEN_B,
        None,
    )
    .await;
    assert_eq!(account["owner_business_info"]["id"], "822000000000002");
}

#[tokio::test]
async fn a_template_created_on_one_account_is_not_listed_on_the_other() {
    let (sim, _file) = two_numbers(None, 80).await;
    let create = json!({
        "name": "only_on_a", "language": "en", "category": "UTILITY",
        "components": [{"type": "BODY", "text": "Order {{1}} shipped"}]
    });
    let (status, v) = call(
        &sim,
        "POST",
        &format!("{WABA_A}/message_templates"),
        TOKEN_A,
        Some(&create),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let listed = |v: &Value| -> Vec<String> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    let (_, on_a) = call(
        &sim,
        "GET",
        &format!("{WABA_A}/message_templates?name=only_on_a"),
        TOKEN_A,
        None,
    )
    .await;
    assert_eq!(listed(&on_a), ["only_on_a"]);
    let (status, on_b) = call(
        &sim,
        "GET",
        &format!("{WABA_B}/message_templates?name=only_on_a"),
        TOKEN_B,
        None,
    )
    .await;
    assert_eq!(status, 200, "{on_b}");
    assert!(listed(&on_b).is_empty(), "{on_b}");
    // Both accounts start with the shipped set, under ids of their own.
    let (_, otp_a) = call(
        &sim,
        "GET",
        &format!("{WABA_A}/message_templates?name=warden_otp"),
        TOKEN_A,
        None,
    )
    .await;
    let (_, otp_b) = call(
        &sim,
        "GET",
        &format!("{WABA_B}/message_templates?name=warden_otp"),
        TOKEN_B,
        None,
    )
    .await;
    assert_eq!((listed(&otp_a).len(), listed(&otp_b).len()), (1, 1));
    assert_ne!(otp_a["data"][0]["id"], otp_b["data"][0]["id"]);
    // A's template, once approved, sends from A only.
    sim.control(
        "templates/only_on_a/en/decision",
        &json!({"status": "APPROVED", "waba_id": WABA_A}),
    )
    .await;
    let send = template("628123", "only_on_a", "en", &["1"], None);
    let (status, v) = call(&sim, "POST", &format!("{A}/messages"), TOKEN_A, Some(&send)).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = call(&sim, "POST", &format!("{B}/messages"), TOKEN_B, Some(&send)).await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (404, json!(132001)),
        "{v}"
    );
    // The same name can still be created on B.
    let (status, v) = call(
        &sim,
        "POST",
        &format!("{WABA_B}/message_templates"),
        TOKEN_B,
        Some(&create),
    )
    .await;
    assert_eq!(status, 200, "{v}");
}

#[tokio::test]
async fn an_inbound_to_number_two_is_signed_with_its_secret_and_carries_its_metadata() {
    let rx = receiver(0).await;
    let (sim, _file) = two_numbers(Some(rx.url.clone()), 80).await;
    let (status, v) = sim
        .control(
            "inbound",
            &json!({"from": "628111", "text": "hello B", "phone_number_id": B}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["phone_number_id"], B);
    rx.wait_for("inbound to B", |c| !c.is_empty()).await;
    let r = &rx.received()[0];
    let sig = r.signature.as_deref().expect("signature header");
    assert!(signature::verify(SECRET_B.as_bytes(), &r.body, sig));
    assert!(!signature::verify(SECRET_A.as_bytes(), &r.body, sig));
    let raw: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(raw["entry"][0]["id"], WABA_B);
    let value = &raw["entry"][0]["changes"][0]["value"];
    assert_eq!(value["metadata"]["phone_number_id"], B);
    assert_eq!(value["metadata"]["display_phone_number"], "15550002222");
    assert_eq!(value["messages"][0]["text"]["body"], "hello B");
    // Without phone_number_id: the first number, its secret and account.
    sim.control("inbound", &json!({"from": "628111", "text": "hello A"}))
        .await;
    rx.wait_for("inbound to A", |c| c.len() >= 2).await;
    let r = &rx.received()[1];
    assert!(signature::verify(
        SECRET_A.as_bytes(),
        &r.body,
        r.signature.as_deref().unwrap()
    ));
    let env: WebhookEnvelope = r.envelope();
    assert_eq!(env.entry[0].id, WABA_A);
    let Some(Change::Messages(m)) = env.changes().next() else {
        panic!("{env:?}")
    };
    assert_eq!(m.metadata.as_ref().unwrap().phone_number_id, A);
    // An unknown number is a 400 naming the served ones.
    let (status, v) = sim
        .control(
            "inbound",
            &json!({"from": "628111", "text": "x", "phone_number_id": "999"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains(B), "{v}");
}

#[tokio::test]
async fn status_webhooks_go_out_under_the_sending_number() {
    let rx = receiver(0).await;
    let (sim, _file) = two_numbers(Some(rx.url.clone()), 80).await;
    let send = text("628123", "from B", Some("cb-b"));
    let (status, v) = call(&sim, "POST", &format!("{B}/messages"), TOKEN_B, Some(&send)).await;
    assert_eq!(status, 200, "{v}");
    rx.wait_for("B's statuses", |c| c.len() >= 3).await;
    for r in rx.received() {
        assert!(signature::verify(
            SECRET_B.as_bytes(),
            &r.body,
            r.signature.as_deref().unwrap()
        ));
        let env = r.envelope();
        assert_eq!(env.entry[0].id, WABA_B);
        for c in env.changes() {
            let Change::Messages(m) = c else {
                panic!("{c:?}")
            };
            assert_eq!(m.metadata.as_ref().unwrap().phone_number_id, B);
        }
    }
}

#[tokio::test]
async fn throughput_is_per_number() {
    let (sim, _file) = two_numbers(None, 3).await;
    let send = text("628123", "x", None);
    let mut refused = Vec::new();
    for _ in 0..10 {
        let (status, v) = call(&sim, "POST", &format!("{A}/messages"), TOKEN_A, Some(&send)).await;
        if status != 200 {
            refused.push((status, v));
        }
    }
    assert!(refused.len() >= 5, "A takes 3 a second: {refused:?}");
    for (status, v) in &refused {
        assert_eq!(
            (*status, v["error"]["code"].clone()),
            (400, json!(130429)),
            "{v}"
        );
        assert!(
            v["error"]["error_data"]["details"]
                .as_str()
                .unwrap()
                .contains(A),
            "{v}"
        );
    }
    // B is not slowed by A's limit.
    for _ in 0..10 {
        let (status, v) = call(&sim, "POST", &format!("{B}/messages"), TOKEN_B, Some(&send)).await;
        assert_eq!(status, 200, "{v}");
    }
    // A's next second has room again.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, v) = call(&sim, "POST", &format!("{A}/messages"), TOKEN_A, Some(&send)).await;
    assert_eq!(status, 200, "{v}");
    // Refused sends are not counted.
    let stats = sim.stats().await;
    assert_eq!(
        stats["total_sends"],
        json!(10 + 10 - refused.len() as u64 + 1)
    );
    // The limit can be changed at run time: `null` lifts it.
    let (status, v) = sim
        .control(
            "throughput",
            &json!({"phone_number_id": A, "throughput_mps": null}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["phone_number_id"], A);
    assert!(v.get("throughput_mps").is_none(), "{v}");
    for _ in 0..10 {
        let (status, v) = call(&sim, "POST", &format!("{A}/messages"), TOKEN_A, Some(&send)).await;
        assert_eq!(status, 200, "{v}");
    }
    let (status, _) = sim
        .control(
            "throughput",
            &json!({"phone_number_id": A, "throughput_mps": 0}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn sim_quality_sends_a_signed_quality_update_for_the_number() {
    let rx = receiver(0).await;
    let (sim, _file) = two_numbers(Some(rx.url.clone()), 80).await;
    let (status, v) = sim
        .control("quality", &json!({"phone_number_id": B, "quality": "RED"}))
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(
        (v["quality_rating"].as_str(), v["phone_number_id"].as_str()),
        (Some("RED"), Some(B))
    );
    let changes = rx.wait_for("quality update", |c| !c.is_empty()).await;
    let Change::Quality(q) = &changes[0] else {
        panic!("{changes:?}")
    };
    assert_eq!(
        (q.display_phone_number.as_str(), q.event.as_str()),
        ("15550002222", "FLAGGED")
    );
    let r = &rx.received()[0];
    assert!(signature::verify(
        SECRET_B.as_bytes(),
        &r.body,
        r.signature.as_deref().unwrap()
    ));
    let raw: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(raw["entry"][0]["id"], WABA_B);
    assert_eq!(
        raw["entry"][0]["changes"][0]["field"],
        "phone_number_quality_update"
    );
    // Only B changed.
    let (_, b) = call(
        &sim,
        "GET",
        &format!("{B}?fields=quality_rating"),
        TOKEN_B,
        None,
    )
    .await;
    let (_, a) = call(
        &sim,
        "GET",
        &format!("{A}?fields=quality_rating"),
        TOKEN_A,
        None,
    )
    .await;
    assert_eq!(
        (b["quality_rating"].as_str(), a["quality_rating"].as_str()),
        (Some("RED"), Some("GREEN"))
    );
    let (status, _) = sim
        .control("quality", &json!({"phone_number_id": B, "quality": "BLUE"}))
        .await;
    assert_eq!(status, 400);
    // A reset puts each number back to its configured quality.
    sim.control("reset", &json!({})).await;
    let (_, b) = call(
        &sim,
        "GET",
        &format!("{B}?fields=quality_rating"),
        TOKEN_B,
        None,
    )
    .await;
    assert_eq!(b["quality_rating"], "YELLOW");
}

#[tokio::test]
async fn stats_entries_carry_the_sending_number() {
    let (sim, _file) = two_numbers(None, 80).await;
    call(
        &sim,
        "POST",
        &format!("{A}/messages"),
        TOKEN_A,
        Some(&text("628123", "x", Some("m-a"))),
    )
    .await;
    call(
        &sim,
        "POST",
        &format!("{B}/messages"),
        TOKEN_B,
        Some(&text("628123", "x", Some("m-b"))),
    )
    .await;
    let stats = sim.stats().await;
    assert_eq!(stats["by_message"]["m-a"]["phone_number_id"], A);
    assert_eq!(stats["by_message"]["m-b"]["phone_number_id"], B);
    assert_eq!(stats["total_sends"], 2);
}

#[tokio::test]
async fn a_bad_senders_file_stops_the_start_naming_the_field() {
    init();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), r#"[{"phone_number_id": "1", "display_phone_number": "1", "waba_id": "9", "access_token": "t"}]"#).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let config = warden_sim::SimConfig {
        senders: Some(file.path().to_owned()),
        ..config(None)
    };
    let Err(e) = warden_sim::start(config, listener) else {
        panic!("a senders file without app_secret must not start")
    };
    let message = e.to_string();
    assert!(message.contains("entry 0: field app_secret"), "{message}");
    assert!(
        message.contains(&file.path().display().to_string()),
        "{message}"
    );
}
