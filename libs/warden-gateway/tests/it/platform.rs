//! The tools that call the platform (an in-process platform-sim): create_template,
//! sync_template_status, sync_webhooks, get_account_quality, and UPSTREAM_ERROR.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::{Harness, Opts, phone};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::json;
use uuid::Uuid;
use warden_store::schema::{messages, templates};

fn with_sim() -> Opts {
    Opts {
        sim: true,
        ..Opts::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_template_then_sync_its_decision() {
    let h = Harness::with(with_sim()).await;
    let c = h
        .ok(
            "create_template",
            json!({"name": "order_ready", "category": "utility", "language": "en", "body_text": "Order {{1}} is ready"}),
        )
        .await;
    assert_eq!(c["status"], "PENDING");
    assert_eq!(c["template_name"], "order_ready");
    assert_eq!(c["locale"], "en");
    assert_eq!(c["category"], "UTILITY");
    assert!(c["platform_id"].as_str().is_some_and(|p| !p.is_empty()));
    assert!(c["note"].as_str().unwrap().contains("webhook"));
    assert_eq!(h.audits("template_created").await, 1);
    let listed = h
        .ok("list_templates", json!({"status_filter": "PENDING"}))
        .await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["templates"][0]["category"], "utility");
    // A PENDING template cannot be sent yet.
    h.err(
        "TEMPLATE_NOT_APPROVED",
        "send_template",
        json!({"to": phone(), "template_name": "order_ready", "variables": "[\"1\"]"}),
    )
    .await;

    // Still pending upstream.
    let s = h
        .ok(
            "sync_template_status",
            json!({"template_name": "order_ready"}),
        )
        .await;
    assert_eq!(s["status"], "PENDING");
    assert!(s.get("reason").is_none());

    h.sim().decide("order_ready", "en", "APPROVED", "").await;
    let s = h
        .ok(
            "sync_template_status",
            json!({"template_name": "order_ready", "locale": "en"}),
        )
        .await;
    assert_eq!(s["status"], "APPROVED");
    assert_eq!(s["previous_status"], "PENDING");
    assert_eq!(s["category"], "utility");
    assert_eq!(h.audits("template_status_synced").await, 1);
    h.ok(
        "send_template",
        json!({"to": phone(), "template_name": "order_ready", "variables": "[\"1\"]"}),
    )
    .await;

    // Rejection carries the reason and what to do.
    h.ok(
        "create_template",
        json!({"name": "too_pushy", "category": "MARKETING", "language": "en", "body_text": "BUY {{1}} NOW"}),
    )
    .await;
    h.sim()
        .decide(
            "too_pushy",
            "en",
            "REJECTED",
            "promotional content in bad taste",
        )
        .await;
    let s = h
        .ok(
            "sync_template_status",
            json!({"template_name": "too_pushy"}),
        )
        .await;
    assert_eq!(s["status"], "REJECTED");
    assert!(s["reason"].as_str().unwrap().contains("bad taste"), "{s}");
    assert!(!s["suggested_action"].as_str().unwrap().is_empty());

    // A template that exists upstream only (the sim's shipped set) is imported.
    let s = h
        .ok(
            "sync_template_status",
            json!({"template_name": "warden_order_update", "locale": "id"}),
        )
        .await;
    assert_eq!(s["status"], "APPROVED");
    assert!(s["previous_status"].is_null());
    let listed = h.ok("list_templates", json!({"locale_filter": "id"})).await;
    assert_eq!(listed["templates"][0]["name"], "warden_order_update");
    assert!(
        listed["templates"][0]["body_text"]
            .as_str()
            .unwrap()
            .contains("{{1}}")
    );

    h.err(
        "NOT_FOUND",
        "sync_template_status",
        json!({"template_name": "never_made"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_template_validation_and_upstream_refusal() {
    let h = Harness::with(with_sim()).await;
    let ok = json!({"name": "fine_name", "category": "UTILITY", "language": "en", "body_text": "Hi {{1}}"});
    let with = |k: &str, v: serde_json::Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    for bad in [
        with("name", json!("Bad Name")),
        with("name", json!("a".repeat(513))),
        with("category", json!("PROMO")),
        with("language", json!("english please")),
        with("body_text", json!("x".repeat(1025))),
        with("body_text", json!("Hi {{2}}")),
    ] {
        h.err("INVALID_ARGUMENT", "create_template", bad).await;
    }
    assert_eq!(h.count("SELECT count(*) AS n FROM templates").await, 0);
    h.ok("create_template", ok.clone()).await;
    // Same name and language again: refused locally.
    let e = h
        .err("INVALID_ARGUMENT", "create_template", ok.clone())
        .await;
    assert!(e["message"].as_str().unwrap().contains("already exists"));
    // Exists upstream only: the platform refuses, explained.
    h.sim()
        .create_upstream("made_elsewhere", "en", "UTILITY", "Hello {{1}}")
        .await;
    let e = h
        .err("UPSTREAM_ERROR", "create_template", json!({"name": "made_elsewhere", "category": "UTILITY", "language": "en", "body_text": "Hello {{1}}"}))
        .await;
    assert!(e["message"].as_str().unwrap().contains("100"), "{e}");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM templates WHERE name = 'made_elsewhere'")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_quality_is_read_live() {
    let h = Harness::with(with_sim()).await;
    let q = h.ok("get_account_quality", json!({})).await;
    assert_eq!(q["waba_id"], common::WABA_ID);
    for k in [
        "name",
        "quality_tier",
        "quality_rating",
        "current_limit",
        "limit_tier",
    ] {
        assert!(q[k].as_str().is_some_and(|s| !s.is_empty()), "{k}: {q}");
    }
    assert_eq!(q["quality_rating"], "GREEN");
    assert_eq!(q["quality_tier"], "HIGH");
    // The portfolio limit is a number (the sim's TIER_1K reads as 2,000), never a string.
    let ml = &q["messaging_limit"];
    assert_eq!(ml["limit"], 2000, "{q}");
    assert_eq!(
        (ml["unlimited"].clone(), ml["known"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(ml["used"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_platform_is_an_error_answer() {
    let h = Harness::start().await; // the platform URL points at a closed port
    let e = h.err("UNAVAILABLE", "get_account_quality", json!({})).await;
    assert!(e["message"].as_str().unwrap().contains("platform"));
    h.err(
        "UNAVAILABLE",
        "create_template",
        json!({"name": "x_y", "category": "UTILITY", "language": "en", "body_text": "Hi"}),
    )
    .await;
    h.err(
        "UNAVAILABLE",
        "sync_template_status",
        json!({"template_name": "x_y"}),
    )
    .await;
    // sync_webhooks still reconciles messages and says templates were not re-read.
    let s = h.ok("sync_webhooks", json!({})).await;
    assert_eq!(s["template_synced"], false);
    assert!(s["note"].as_str().unwrap().contains("not re-read"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_webhooks_resyncs_templates_and_settles_only_what_it_can() {
    let h = Harness::with(with_sim()).await;
    h.ok("create_template", json!({"name": "later_ok", "category": "UTILITY", "language": "en", "body_text": "Hi {{1}}"}))
        .await;
    h.sim().decide("later_ok", "en", "APPROVED", "").await;
    h.insert_template("promo", "en", "marketing", "APPROVED", "Hi {{1}}")
        .await;

    // Three sends; make one look stuck after the platform accepted it (wamid recorded),
    // one stuck with an unknown outcome, one whose publish was lost a while ago.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = h
            .ok(
                "send_template",
                json!({"to": phone(), "template_name": "promo", "variables": "[\"x\"]"}),
            )
            .await;
        let id = r["message_id"].as_str().unwrap();
        // Its published mark first: the lost publish below clears it.
        h.published(id).await;
        ids.push(Uuid::parse_str(id).unwrap());
    }
    {
        let mut c = h.conn().await;
        let expired = Utc::now() - TimeDelta::minutes(5);
        diesel::update(messages::table.find(ids[0]))
            .set((
                messages::status.eq("sending"),
                messages::lease_until.eq(expired),
                messages::wamid.eq("wamid.TEST-ACCEPTED"),
            ))
            .execute(&mut c)
            .await
            .unwrap();
        diesel::update(messages::table.find(ids[1]))
            .set((
                messages::status.eq("sending"),
                messages::lease_until.eq(expired),
            ))
            .execute(&mut c)
            .await
            .unwrap();
        diesel::update(messages::table.find(ids[2]))
            .set((
                messages::published_at.eq(None::<chrono::DateTime<Utc>>),
                messages::created_at.eq(Utc::now() - TimeDelta::minutes(10)),
            ))
            .execute(&mut c)
            .await
            .unwrap();
    }
    let s = h.ok("sync_webhooks", json!({})).await;
    assert_eq!(s["template_synced"], true);
    assert_eq!(s["templates_updated"], 1, "{s}");
    assert_eq!(s["messages_reconciled"], 2, "{s}");
    assert_eq!(s["messages_awaiting_status"], 1, "{s}");
    assert_eq!(h.message(&ids[0].to_string()).await.status, "sent");
    assert_eq!(
        h.message(&ids[1].to_string()).await.status,
        "sending",
        "never settled blindly"
    );
    assert!(h.message(&ids[2].to_string()).await.published_at.is_some());
    let status: String = {
        let mut c = h.conn().await;
        templates::table
            .filter(templates::name.eq("later_ok"))
            .select(templates::status)
            .first(&mut c)
            .await
            .unwrap()
    };
    assert_eq!(status, "APPROVED");
    assert_eq!(h.audits("webhooks_synced").await, 1);

    // Idempotent: nothing left to do the second time.
    let s = h.ok("sync_webhooks", json!({})).await;
    assert_eq!(s["templates_updated"], 0);
    assert_eq!(s["messages_reconciled"], 0);
    assert_eq!(s["messages_awaiting_status"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_template_status_bounds_the_name_before_calling_the_platform() {
    let h = Harness::with(with_sim()).await;
    // 70,000 characters would make a request URL over 64 KB: refused locally, with the
    // same limit and wording as create_template, and without the name echoed in full.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "sync_template_status",
            json!({"template_name": "A".repeat(70_000)}),
        )
        .await;
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("70000 characters"), "{m}");
    assert!(m.contains("at most 512"), "{m}");
    assert!(!m.contains("AAAA"), "{m}");
    assert!(!m.contains("http"), "{m}");
    assert!(m.chars().count() < 200, "{m}");
    assert!(
        e["suggested_action"].as_str().unwrap().contains("512"),
        "{e}"
    );
    assert!(
        !e["suggested_action"]
            .as_str()
            .unwrap()
            .contains("PLATFORM_API_URL"),
        "{e}"
    );
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "sync_template_status",
            json!({"template_name": "a".repeat(513)}),
        )
        .await;
    assert!(
        e["message"].as_str().unwrap().contains("at most 512"),
        "{e}"
    );
    // The locale goes into the URL too: a language code or nothing.
    let e = h
        .err(
            "INVALID_ARGUMENT",
            "sync_template_status",
            json!({"template_name": "order_ready", "locale": "x".repeat(70_000)}),
        )
        .await;
    assert!(e["message"].as_str().unwrap().chars().count() < 200, "{e}");
    // At the limit the platform is asked; its "no such template" names the name, bounded.
    let e = h
        .err(
            "NOT_FOUND",
            "sync_template_status",
            json!({"template_name": "a".repeat(512)}),
        )
        .await;
    let m = e["message"].as_str().unwrap();
    assert!(m.contains("no template named"), "{m}");
    assert!(m.contains("(512 characters)"), "{m}");
    assert!(m.chars().count() < 200, "{m}");
    assert_eq!(h.count("SELECT count(*) AS n FROM templates").await, 0);
}

async fn calls_by_version(h: &Harness) -> serde_json::Value {
    let sim = h.sim.as_ref().unwrap();
    let stats: serde_json::Value = sim
        .http
        .get(format!("{}/sim/stats", sim.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    stats["by_version"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_calls_use_the_configured_api_version() {
    let h = Harness::with(with_sim()).await;
    h.ok("get_account_quality", json!({})).await;
    let default_calls = calls_by_version(&h).await;
    let map = default_calls.as_object().unwrap();
    assert_eq!(map.keys().collect::<Vec<_>>(), ["v25.0"], "{default_calls}");

    // A second gateway on the same stack, pinned to another version by its settings.
    let mut settings = (*h.deps.settings).clone();
    settings.platform.api_version = "v24.0".into();
    let deps = common::deps_for(settings, false).await;
    let client = common::connect(warden_gateway::Gateway::new(deps).unwrap()).await;
    let params = rmcp::model::CallToolRequestParams::new("get_account_quality")
        .with_arguments(serde_json::Map::new());
    let res = client.call_tool(params).await.unwrap();
    assert_ne!(res.is_error, Some(true), "{res:?}");
    let pinned = calls_by_version(&h).await;
    assert!(pinned["v24.0"].as_u64().unwrap() >= 1, "{pinned}");
    assert_eq!(pinned["v25.0"], default_calls["v25.0"], "{pinned}");
}

/// With a senders file, the gateway's platform calls use the default sender's number and
/// token, not the `PLATFORM_*` ones (here set to a token the platform refuses).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_calls_use_the_default_senders_token() {
    fn wrong_platform_token(s: &mut warden_settings::Settings) {
        s.platform.access_token = "a-token-the-platform-refuses".into();
    }
    let refused = Harness::with(Opts {
        sim: true,
        adjust: wrong_platform_token,
        ..Opts::default()
    })
    .await;
    refused
        .err("UPSTREAM_ERROR", "get_account_quality", json!({}))
        .await;

    let h = Harness::with(Opts {
        sim: true,
        adjust: |s| {
            wrong_platform_token(s);
            let file = format!(
                "version: 1\nsenders:\n  - {{id: main, phone_number_id: \"{}\", waba_id: \"{}\", portfolio_id: \"1\", access_token_env: T_MAIN, app_secret_env: S_MAIN, default: true}}\n",
                common::PHONE_NUMBER_ID,
                common::WABA_ID
            );
            let env = |name: &str| match name {
                "T_MAIN" => Some(common::ACCESS_TOKEN.to_string()),
                _ => Some("an-app-secret".to_string()),
            };
            s.senders_file = Some(warden_settings::Senders::from_yaml(&file, &env).unwrap());
        },
        ..Opts::default()
    })
    .await;
    let q = h.ok("get_account_quality", json!({})).await;
    assert_eq!(q["waba_id"], common::WABA_ID);
    assert_eq!(q["quality_rating"], "GREEN");
}
