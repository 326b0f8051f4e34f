//! Several numbers against platform-sim serving three numbers of two businesses: the
//! gateway calls the platform as the number a tool names (its token, its business's
//! templates), the webhook stores a template decision for the business it came from, and
//! the dispatcher sends from the number a message was accepted for.

use std::time::Duration;

use serde_json::{Value, json};
use warden_settings::Senders;

use crate::common::phone;
use crate::common::stack::Stack;

const SENDERS_YAML: &str = include_str!("../../../../examples/senders.yaml");
const BUSINESS_B: &str = "204000000000002";
const B1: &str = "104000000000003";

/// Warden's settings for the sim's numbers (examples/sim-senders.json, its dev tokens).
fn sim_senders() -> Senders {
    Senders::from_yaml(SENDERS_YAML, &|name| {
        Some(
            match name {
                "SENDER_A1_TOKEN" => "dev-token-a1",
                "SENDER_A2_TOKEN" => "dev-token-a2",
                "SENDER_B1_TOKEN" => "dev-token-b1",
                "SENDER_A_APP_SECRET" => "dev-app-secret-a",
                "SENDER_B_APP_SECRET" => "dev-app-secret-b",
                _ => return None,
            }
            .to_string(),
        )
    })
    .unwrap()
}

async fn stack() -> Stack {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sim-senders.json");
    Stack::start_on(|s| s.senders_file = Some(sim_senders()), Some(file)).await
}

fn names(v: &Value) -> Vec<(String, String)> {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_business_template_is_created_decided_and_sent_as_that_business() {
    let s = stack().await;
    // Created with b1's token in business B's account.
    let created = s
        .ok(
            "create_template",
            json!({"name": "b_offer", "category": "MARKETING", "language": "en",
                   "body_text": "Offer {{1}}", "from": "b1"}),
        )
        .await;
    assert_eq!(created["status"], "PENDING", "{created}");
    // The platform approves it: a webhook signed with B's secret, stored for B.
    let decided = s
        .http
        .post(format!("{}/sim/templates/b_offer/en/decision", s.sim_url))
        .json(&json!({"status": "APPROVED", "waba_id": BUSINESS_B}))
        .send()
        .await
        .unwrap();
    assert!(decided.status().is_success(), "{}", decided.status());
    warden_test_support::wait::until(Duration::from_secs(15), "B's template approved", || async {
        let b = s.ok("list_templates", json!({"from": "b1"})).await;
        names(&b) == [("b_offer".to_string(), "APPROVED".to_string())]
    })
    .await;
    // Business A has no such template.
    let a = s.ok("list_templates", json!({})).await;
    assert!(names(&a).iter().all(|(n, _)| n != "b_offer"), "{a}");
    let p = phone();
    let send = |from: &str| {
        json!({"to": p, "template_name": "b_offer", "locale": "en",
               "variables": ["20%"], "from": from})
    };
    s.err("NOT_FOUND", "send_template", send("a1")).await;
    let sent = s.ok("send_template", send("b1")).await;
    let id = sent["message_id"].as_str().unwrap().to_string();
    // The dispatcher sent it from B1's number (the sim answers each number's token only).
    let stat = warden_test_support::wait::until_some(
        Duration::from_secs(30),
        "the sim received the send",
        || async { s.sim.stats().by_message.get(&id).cloned() },
    )
    .await;
    assert_eq!(stat.phone_number_id, B1);

    // B1's standing, read with B1's token.
    let q = s.ok("get_account_quality", json!({"from": "b1"})).await;
    assert_eq!(q["phone_number_id"], B1, "{q}");
    assert_eq!(q["waba_id"], BUSINESS_B, "{q}");
    // A file uploaded for b1 goes to B1's number.
    let up = s
        .ok(
            "upload_media",
            json!({"data": "aGVsbG8=", "mime_type": "text/plain", "filename": "a.txt", "from": "b1"}),
        )
        .await;
    assert!(
        up["media_id"].as_str().is_some_and(|m| !m.is_empty()),
        "{up}"
    );
}

const A1: &str = "104000000000001";
const A2: &str = "104000000000002";

/// list_senders' entry for `id`.
async fn listed(s: &Stack, id: &str) -> Value {
    let v = s.ok("list_senders", json!({})).await;
    v["senders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed: {v}"))
}

/// Wait until the webhook server's start-up read of the numbers is recorded.
async fn numbers_read(s: &Stack) {
    warden_test_support::wait::until(
        Duration::from_secs(15),
        "the numbers read from the platform",
        || async {
            let v = s.ok("list_senders", json!({})).await;
            v["senders"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| n["display_phone_number"].is_string())
        },
    )
    .await;
}

/// The sim changes a number's quality and sends its signed `phone_number_quality_update`
/// (which names the number by display number only).
async fn quality(s: &Stack, number: &str, rating: &str) {
    let r = s
        .http
        .post(format!("{}/sim/quality", s.sim_url))
        .json(&json!({"phone_number_id": number, "quality": rating}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
}

/// A marketing template from `from` to a new customer: `Ok(message_id)` or the refusal.
async fn promo(s: &Stack, from: &str) -> Result<Value, Value> {
    let args = json!({"to": phone(), "template_name": "warden_promo", "locale": "en",
                      "variables": ["Ana"], "from": from});
    let params = rmcp::model::CallToolRequestParams::new("send_template")
        .with_arguments(args.as_object().cloned().unwrap());
    let r = s.client.call_tool(params).await.unwrap();
    let v = r.structured_content.unwrap();
    if r.is_error == Some(true) {
        Err(v)
    } else {
        Ok(v)
    }
}

fn protected(r: &Result<Value, Value>) -> bool {
    r.as_ref().err().is_some_and(|e| {
        e["error"]["code"] == "POLICY_RESTRICTION"
            && e["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("sender_protection"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_senders_shows_each_number_as_the_platform_reads_it_from_a_fresh_start() {
    // No webhook has arrived: what list_senders shows was read from the platform at start.
    let s = stack().await;
    numbers_read(&s).await;
    for (id, display) in [
        ("a1", "15550001001"),
        ("a2", "15550001002"),
        ("b1", "15550002001"),
    ] {
        let n = listed(&s, id).await;
        assert_eq!(n["display_phone_number"], display, "{n}");
        assert_eq!(n["quality_rating"], "GREEN", "{n}");
        assert_eq!(n["name_status"], "APPROVED", "{n}");
        assert_eq!(n["protection"], Value::Null, "{n}");
    }
    assert_eq!(
        s.count("SELECT count(*) AS n FROM webhook_events").await,
        0,
        "no webhook yet"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quality_flag_protects_exactly_its_number_and_green_lifts_it() {
    let s = stack().await;
    s.ok(
        "sync_template_status",
        json!({"template_name": "warden_promo", "locale": "en", "from": "a1"}),
    )
    .await;
    numbers_read(&s).await;
    assert!(promo(&s, "a1").await.is_ok());

    // RED on A1 (named by its display number only): A1 sends no marketing, A2 still does.
    quality(&s, A1, "RED").await;
    warden_test_support::wait::until(Duration::from_secs(15), "a1 protected", || async {
        protected(&promo(&s, "a1").await)
    })
    .await;
    let a2 = promo(&s, "a2").await;
    assert!(a2.is_ok(), "a2 must not be protected by a1's flag: {a2:?}");
    assert_eq!(listed(&s, "a1").await["quality_rating"], "RED");
    assert_eq!(listed(&s, "a2").await["protection"], Value::Null);

    // GREEN on A1 lifts it, and the rating the platform gives is shown.
    quality(&s, A1, "GREEN").await;
    warden_test_support::wait::until(Duration::from_secs(15), "a1 lifted", || async {
        promo(&s, "a1").await.is_ok()
    })
    .await;
    warden_test_support::wait::until(Duration::from_secs(15), "a1 GREEN", || async {
        listed(&s, "a1").await["quality_rating"] == "GREEN"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quality_flag_whose_number_is_unknown_waits_for_the_platform_then_protects_only_it() {
    let s = stack().await;
    s.ok(
        "sync_template_status",
        json!({"template_name": "warden_promo", "locale": "en", "from": "a1"}),
    )
    .await;
    numbers_read(&s).await;
    // Warden forgets the display numbers (as before they were ever learnt).
    {
        use diesel_async::RunQueryDsl;
        let mut c = s.conn().await;
        diesel::sql_query("DELETE FROM sender_numbers")
            .execute(&mut c)
            .await
            .unwrap();
    }
    quality(&s, A2, "RED").await;
    // The update waits until the platform, asked, says whose number it is: then A2 only.
    warden_test_support::wait::until(Duration::from_secs(20), "a2 protected", || async {
        protected(&promo(&s, "a2").await)
    })
    .await;
    let a1 = promo(&s, "a1").await;
    assert!(a1.is_ok(), "a1 must not be protected by a2's flag: {a1:?}");
    assert_eq!(
        s.count("SELECT count(*) AS n FROM quality_updates_unmatched")
            .await,
        0
    );
    assert_eq!(
        listed(&s, "a2").await["display_phone_number"],
        "15550001002"
    );
}
