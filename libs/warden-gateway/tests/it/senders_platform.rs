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
