//! Templates over HTTP: creation, approval after the delay, decisions, paging, and the set
//! the sim starts with.

use crate::common;

use common::*;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;
use warden_platform::webhook::Change;

fn template_updates(changes: &[Change]) -> Vec<warden_platform::webhook::TemplateStatusUpdate> {
    changes
        .iter()
        .filter_map(|c| match c {
            Change::TemplateStatus(t) => Some(t.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn created_templates_are_approved_after_the_delay() {
    let rx = receiver(0).await;
    let mut cfg = config(Some(rx.url.clone()));
    // Long enough that the PENDING checks below never race the approval.
    cfg.approval_delay = Duration::from_secs(1);
    let sim = start_sim(cfg).await;
    let create = json!({"name": "spring_sale", "language": "en", "category": "marketing",
        "components": [{"type": "BODY", "text": "Hi {{1}}, spring sale: {{2}}",
                        "example": {"body_text": [["Ana", "20%"]]}}]});
    let (status, v) = sim
        .post_api(&format!("{WABA_ID}/message_templates"), &create)
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "PENDING");
    assert_eq!(v["category"], "MARKETING");
    let id = v["id"].as_str().unwrap().to_owned();

    let (_, list) = sim
        .get_api(&format!("{WABA_ID}/message_templates?name=spring_sale"))
        .await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    assert_eq!(list["data"][0]["status"], "PENDING");
    // Not approved yet: not sendable.
    let (_, sent) = sim
        .send(&template("628123", "spring_sale", "en", &["a", "b"], None))
        .await;
    assert_eq!(sent["error"]["code"], 132001);

    let changes = rx
        .wait_for("approval", |c| !template_updates(c).is_empty())
        .await;
    let t = &template_updates(&changes)[0];
    assert_eq!(t.event, "APPROVED");
    assert_eq!(t.message_template_id, id);
    assert_eq!(t.message_template_name, "spring_sale");
    assert_eq!(t.message_template_language, "en");
    assert_eq!(t.message_template_category.as_deref(), Some("MARKETING"));
    let raw: Value = serde_json::from_slice(&rx.received()[0].body).unwrap();
    assert_eq!(
        raw["entry"][0]["changes"][0]["field"],
        "message_template_status_update"
    );
    assert!(raw["entry"][0]["changes"][0]["value"]["message_template_id"].is_u64());

    let (_, list) = sim
        .get_api(&format!(
            "{WABA_ID}/message_templates?name=spring_sale&language=en"
        ))
        .await;
    assert_eq!(list["data"][0]["status"], "APPROVED");
    assert_eq!(
        list["data"][0]["components"][0]["text"],
        "Hi {{1}}, spring sale: {{2}}"
    );
    let (status, _) = sim
        .send(&template("628123", "spring_sale", "en", &["a", "b"], None))
        .await;
    assert_eq!(status, 200);

    // Same name and language again: refused.
    let (status, v) = sim
        .post_api(&format!("{WABA_ID}/message_templates"), &create)
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(100)),
        "{v}"
    );
}

#[tokio::test]
async fn template_creation_is_validated() {
    let sim = start_sim(config(None)).await;
    let path = format!("{WABA_ID}/message_templates");
    let bad = [
        json!({"name": "Bad Name", "language": "en", "category": "UTILITY",
               "components": [{"type": "BODY", "text": "x"}]}),
        json!({"name": "ok_name", "language": "en", "category": "PROMO",
               "components": [{"type": "BODY", "text": "x"}]}),
        json!({"name": "ok_name", "language": "en", "category": "UTILITY", "components": []}),
        json!({"name": "ok_name", "language": "", "category": "UTILITY",
               "components": [{"type": "BODY", "text": "x"}]}),
        json!({"name": "ok_name", "language": "en", "category": "UTILITY",
               "components": [{"type": "BODY", "text": "{{2}} only"}]}),
    ];
    for b in &bad {
        let (status, v) = sim.post_api(&path, b).await;
        assert_eq!(
            (status, v["error"]["code"].clone()),
            (400, json!(100)),
            "{b}: {v}"
        );
    }
    let r = sim
        .http
        .post(format!("{}/{API}/{path}", sim.url))
        .bearer_auth(ACCESS_TOKEN)
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let (status, _) = sim
        .post_api(
            "999/message_templates",
            &json!({"name": "x", "language": "en", "category": "UTILITY",
                    "components": [{"type": "BODY", "text": "x"}]}),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn a_manual_decision_wins_over_the_automatic_approval() {
    let rx = receiver(0).await;
    let mut cfg = config(Some(rx.url.clone()));
    cfg.approval_delay = Duration::from_millis(800);
    let sim = start_sim(cfg).await;
    let create = json!({"name": "risky", "language": "id", "category": "MARKETING",
        "components": [{"type": "BODY", "text": "Promo {{1}}"}]});
    let (status, _) = sim
        .post_api(&format!("{WABA_ID}/message_templates"), &create)
        .await;
    assert_eq!(status, 200);
    let (status, v) = sim
        .control(
            "templates/risky/id/decision",
            &json!({"status": "REJECTED", "reason": "PROMOTIONAL"}),
        )
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "REJECTED");
    assert_eq!(v["rejected_reason"], "PROMOTIONAL");

    let changes = rx
        .wait_for("rejection", |c| !template_updates(c).is_empty())
        .await;
    let t = &template_updates(&changes)[0];
    assert_eq!(
        (t.event.as_str(), t.reason.as_deref()),
        ("REJECTED", Some("PROMOTIONAL"))
    );
    assert_eq!(t.message_template_language, "id");

    // Nothing overrode it past the approval delay: a witness template created after it is
    // approved automatically later than `risky` would have been, and webhooks keep order.
    let witness = json!({"name": "witness", "language": "id", "category": "UTILITY",
        "components": [{"type": "BODY", "text": "Order {{1}} shipped"}]});
    let (status, _) = sim
        .post_api(&format!("{WABA_ID}/message_templates"), &witness)
        .await;
    assert_eq!(status, 200);
    let changes = rx
        .wait_for("the witness's automatic approval", |c| {
            template_updates(c)
                .iter()
                .any(|t| t.message_template_name == "witness")
        })
        .await;
    let risky: Vec<_> = template_updates(&changes)
        .into_iter()
        .filter(|t| t.message_template_name == "risky")
        .collect();
    assert_eq!(risky.len(), 1, "{risky:?}");
    let (_, list) = sim
        .get_api(&format!("{WABA_ID}/message_templates?name=risky"))
        .await;
    assert_eq!(list["data"][0]["status"], "REJECTED");

    // Other decisions on a shipped template: PAUSED blocks sends with 132015.
    let (status, _) = sim
        .control(
            "templates/warden_otp/en/decision",
            &json!({"status": "paused"}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, v) = sim
        .send(&template("628123", "warden_otp", "en", &["1234"], None))
        .await;
    assert_eq!(v["error"]["code"], 132015);
    let changes = rx
        .wait_for("pause", |c| template_updates(c).len() >= 2)
        .await;
    assert_eq!(
        template_updates(&changes)[1].reason.as_deref(),
        Some("NONE")
    );

    let (status, _) = sim
        .control("templates/nope/en/decision", &json!({"status": "APPROVED"}))
        .await;
    assert_eq!(status, 404);
    let (status, _) = sim
        .control("templates/risky/id/decision", &json!({"reason": "x"}))
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn template_list_pages() {
    let sim = start_sim(config(None)).await;
    let mut seen = Vec::new();
    let mut url = format!("{}/{API}/{WABA_ID}/message_templates?limit=3", sim.url);
    for _ in 0..10 {
        let v: Value = sim
            .http
            .get(&url)
            .bearer_auth(ACCESS_TOKEN)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for t in v["data"].as_array().unwrap() {
            seen.push(format!("{}/{}", t["name"], t["language"]));
        }
        match v["paging"]["next"].as_str() {
            Some(next) => url = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7, "{seen:?}");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 7);
    let (_, v) = sim
        .get_api(&format!(
            "{WABA_ID}/message_templates?category=authentication"
        ))
        .await;
    assert_eq!(v["data"][0]["name"], "warden_otp");
}

#[tokio::test]
async fn templates_come_from_sim_templates() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(
        &path,
        r#"[{"name": "only_one", "language": "pt_BR", "category": "UTILITY", "body": "Oi {{1}}"}]"#,
    )
    .unwrap();
    let mut cfg = config(None);
    cfg.templates = Some(path);
    let sim = start_sim(cfg).await;
    let (_, v) = sim.get_api(&format!("{WABA_ID}/message_templates")).await;
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["status"], "APPROVED");
    assert_eq!(
        sim.send(&template("628123", "only_one", "pt_BR", &["x"], None))
            .await
            .0,
        200
    );

    // A missing or broken explicit file stops startup with a clear error.
    init();
    let mut cfg = config(None);
    cfg.templates = Some(dir.path().join("missing.json"));
    let err = warden_sim::start(cfg, std::net::TcpListener::bind("127.0.0.1:0").unwrap())
        .err()
        .expect("missing file is an error");
    assert!(err.to_string().contains("missing.json"), "{err}");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "[{\"name\": 1}]").unwrap();
    let mut cfg = config(None);
    cfg.templates = Some(broken);
    assert!(warden_sim::start(cfg, std::net::TcpListener::bind("127.0.0.1:0").unwrap()).is_err());
}
