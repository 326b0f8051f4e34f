//! The Marketing Messages API end to end: a1 has it (`marketing_messages: true` in the
//! senders file), a2 of the same business has not. A campaign of a MARKETING carousel
//! template from each, run by the scheduler, goes out through the dispatcher: a1's message at
//! `/marketing_messages` (platform-sim's stats say which endpoint), a2's at `/messages`;
//! the sim's status webhooks price them `marketing_lite` and `marketing`, which
//! get_delivery_status and get_spend report. Nothing else changes for the caller.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_settings::Senders;

use crate::common::phone;
use crate::common::stack::Stack;
use crate::template_formats::{card, carousel_args, send_cards};

const WAIT: Duration = Duration::from_secs(60);
const SENDERS_YAML: &str = include_str!("../../../../examples/senders.yaml");
/// Business A's account in examples/sim-senders.json (a1 and a2 share it).
const WABA_A: &str = "204000000000001";
const DEFAULT_LINE: &str =
    "    default: true                     # used when a caller names no sender\n";

/// examples/senders.yaml with the Marketing Messages API on for a1.
fn senders() -> Senders {
    let yaml = SENDERS_YAML.replace(
        DEFAULT_LINE,
        &format!(
            "{DEFAULT_LINE}    marketing_messages: true\n    marketing_product_policy: STRICT\n"
        ),
    );
    assert_ne!(yaml, SENDERS_YAML, "the example's default line moved");
    Senders::from_yaml(&yaml, &|name| {
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
    Stack::start_on(|s| s.senders_file = Some(senders()), Some(file)).await
}

async fn campaign_message(s: &Stack, campaign: Uuid) -> Option<Uuid> {
    use warden_store::schema::messages;
    let mut c = s.deps.pg.get().await.unwrap();
    messages::table
        .filter(messages::campaign_id.eq(campaign))
        .select(messages::id)
        .first(&mut c)
        .await
        .optional()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_marketing_campaign_takes_the_marketing_api_only_from_the_sender_that_has_it() {
    let s = stack().await;
    // A carousel made through create_template and approved by the platform's webhook.
    let mut create = carousel_args("warden_picks", json!([card("IMAGE"), card("IMAGE")]));
    create["from"] = json!("a1");
    s.ok("create_template", create).await;
    s.sim
        .decide_in(WABA_A, "warden_picks", "en", "APPROVED", None)
        .expect("the sim has the template");
    warden_test_support::wait::until(WAIT, "template approved", || async {
        use warden_store::schema::templates;
        let mut c = s.deps.pg.get().await.unwrap();
        templates::table
            .filter(templates::name.eq("warden_picks"))
            .select(templates::status)
            .first::<String>(&mut c)
            .await
            .is_ok_and(|st| st == "APPROVED")
    })
    .await;
    let later = (Utc::now() + TimeDelta::hours(1)).to_rfc3339();
    let mut campaigns = Vec::new();
    for from in ["a1", "a2"] {
        let to = phone();
        // A customer Warden knows (the campaign's audience names them).
        s.inbound_text(to.as_str().into(), "hello").await;
        let v = s
            .ok(
                "schedule_campaign",
                json!({"name": format!("spring-{from}"), "type": "marketing",
                       "template_name": "warden_picks", "deliver_at": later,
                       "variables": "{\"1\": \"Ana\"}", "from": from,
                       "cards": send_cards().to_string(),
                       "audience_filter": json!({"customer_ids": [to]}).to_string()}),
            )
            .await;
        assert_eq!(v["from"], from, "{v}");
        let id: Uuid = v["campaign_id"].as_str().unwrap().parse().unwrap();
        campaigns.push((from, id));
    }
    {
        let mut c = s.deps.pg.get().await.unwrap();
        diesel::sql_query("UPDATE campaigns SET deliver_at = now() - interval '1 minute'")
            .execute(&mut c)
            .await
            .unwrap();
    }
    let scheduler = warden_scheduler::Scheduler::new(
        warden_core::Core::new(s.deps.clone(), "scheduler"),
        warden_scheduler::Config::default(),
    );
    let mut messages = Vec::new();
    for (from, campaign) in &campaigns {
        let id = warden_test_support::wait::until_some(WAIT, "the campaign's message", || async {
            let _ = scheduler.tick().await;
            campaign_message(&s, *campaign).await
        })
        .await;
        messages.push((*from, id.to_string()));
    }

    for (from, id) in &messages {
        let (endpoint, category) = match *from {
            "a1" => ("marketing_messages", "marketing_lite"),
            _ => ("messages", "marketing"),
        };
        // The platform reported its pricing (status webhooks): delivered and priced.
        let status =
            warden_test_support::wait::until_some(WAIT, "priced and delivered", || async {
                let st = s.ok("get_delivery_status", json!({"message_id": id})).await;
                let done = matches!(st["status"].as_str(), Some("delivered" | "read"))
                    && st["pricing"]["category"].is_string();
                done.then_some(st)
            })
            .await;
        assert_eq!(status["pricing"]["category"], category, "{from}: {status}");
        assert_eq!(status["pricing"]["billable"], true, "{from}: {status}");
        let stat = s.sim.stats().by_message[id].clone();
        assert_eq!(stat.endpoint, endpoint, "{from}");
        assert_eq!(stat.kind, "template", "{from}");
        let components = stat.template.as_ref().unwrap()["components"].to_string();
        assert!(
            components.contains("carousel"),
            "{from}: the cards went out: {components}"
        );
        assert_eq!(stat.count, 1, "{from}: sent once");
    }

    // get_spend shows each on its own line, both billable at the marketing rate.
    let spend = s.ok("get_spend", json!({})).await;
    let line = |category: &str| -> Value {
        spend["by_category"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["category"] == category)
            .cloned()
            .unwrap_or_else(|| panic!("no {category} line: {spend}"))
    };
    for category in ["marketing_lite", "marketing"] {
        let l = line(category);
        assert_eq!(l["delivered"], 1, "{l}");
        assert_eq!(l["actual_billable"], 1, "{l}");
        assert_eq!(l["estimated_billable"], 1, "{l}");
        assert_ne!(l["actual"], "0.0000", "{l}");
    }
    assert_eq!(
        line("marketing_lite")["actual"],
        line("marketing")["actual"]
    );
}
