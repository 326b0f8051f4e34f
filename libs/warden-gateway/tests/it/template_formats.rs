//! Carousel, limited-time offer and authentication templates outside-in: create_template
//! (each rule refused before the platform sees it, naming the field), approval through the
//! sim's template-status webhook, send_template with cards, offer_expires_at and code
//! through the dispatcher to platform-sim (which checks the bodies as the platform does),
//! every refusal naming its parameter, and campaigns of a carousel and an offer template.

use crate::common;

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use uuid::Uuid;
use warden_sim::users::SimUser;

use common::stack::Stack;
use common::{WABA_ID, phone};

/// Approves `name` on the sim; the sim's template-status webhook reaches the webhook
/// server, which records it.
async fn approve(s: &Stack, name: &str) {
    s.sim
        .decide_in(WABA_ID, name, "en", "APPROVED", None)
        .expect("the sim has the template");
    warden_test_support::wait::until(Duration::from_secs(20), "template approved", || async {
        use warden_store::schema::templates;
        let mut c = s.deps.pg.get().await.unwrap();
        templates::table
            .filter(templates::name.eq(name))
            .select(templates::status)
            .first::<String>(&mut c)
            .await
            .is_ok_and(|st| st == "APPROVED")
    })
    .await;
}

/// Waits until the sim took message `id` and answers the `template` it received.
async fn received(s: &Stack, id: &str) -> Value {
    warden_test_support::wait::until_some(Duration::from_secs(20), "sent to the sim", || async {
        s.sim
            .stats()
            .by_message
            .get(id)
            .and_then(|m| m.template.clone())
    })
    .await
}

async fn status(s: &Stack, id: &str) -> String {
    use warden_store::schema::messages;
    let mut c = s.deps.pg.get().await.unwrap();
    messages::table
        .find(Uuid::parse_str(id).unwrap())
        .select(messages::status)
        .first(&mut c)
        .await
        .unwrap()
}

/// An INVALID_ARGUMENT whose message names `field`.
async fn refused(s: &Stack, tool: &str, args: Value, field: &str) -> Value {
    let e = s.err("INVALID_ARGUMENT", tool, args).await;
    let m = e["message"].as_str().unwrap_or("");
    assert!(m.contains(field), "{tool} names {field}: {e}");
    e
}

pub(crate) fn card(format: &str) -> Value {
    json!({"header": {"format": format, "example": "4::aW1hZ2U="}, "body": "Only {{1}}",
           "buttons": [{"type": "QUICK_REPLY", "text": "More like this"},
                       {"type": "URL", "text": "Buy", "url": "https://shop.example/p/{{1}}"}]})
}

pub(crate) fn carousel_args(name: &str, cards: Value) -> Value {
    json!({"name": name, "category": "MARKETING", "language": "en",
           "body_text": "Hi {{1}}, picks for you", "cards": cards.to_string()})
}

pub(crate) fn send_cards() -> Value {
    json!([
        {"header": {"link": "https://shop.example/1.jpg"}, "variables": ["$10"], "buttons": [{"payload": "more-1"}, {"text": "p1"}]},
        {"header": {"link": "https://shop.example/2.jpg"}, "variables": ["$12"], "buttons": [null, {"text": "p2"}]},
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_carousel_is_created_approved_and_sent_and_every_broken_rule_is_named() {
    let s = Stack::start(|_| {}).await;
    // Refused before the platform sees them.
    refused(
        &s,
        "create_template",
        carousel_args("c1", json!([card("IMAGE")])),
        "cards",
    )
    .await;
    refused(
        &s,
        "create_template",
        carousel_args("c1", json!([card("IMAGE"), card("VIDEO")])),
        "cards[1].header.format",
    )
    .await;
    let mut phone_button = card("IMAGE");
    phone_button["buttons"][0] =
        json!({"type": "PHONE_NUMBER", "text": "Call", "phone_number": "+15550100"});
    refused(
        &s,
        "create_template",
        carousel_args("c1", json!([card("IMAGE"), phone_button])),
        "cards[1].buttons[0].type",
    )
    .await;
    let mut utility = carousel_args("c1", json!([card("IMAGE"), card("IMAGE")]));
    utility["category"] = json!("UTILITY");
    refused(&s, "create_template", utility, "category").await;
    assert_eq!(s.sim.stats().total_sends, 0);

    let c = s
        .ok(
            "create_template",
            carousel_args("picks", json!([card("IMAGE"), card("IMAGE")])),
        )
        .await;
    assert_eq!(
        (c["status"].as_str(), c["category"].as_str()),
        (Some("PENDING"), Some("MARKETING"))
    );
    approve(&s, "picks").await;
    let listed = s
        .ok("list_templates", json!({"status_filter": "APPROVED"}))
        .await;
    let t = &listed["templates"][0];
    assert_eq!(t["components"][1]["type"], "CAROUSEL", "{t}");
    assert_eq!(t["components"][1]["cards"].as_array().unwrap().len(), 2);

    let to = phone();
    let args = |cards: Option<Value>| {
        let mut a = json!({"to": to, "template_name": "picks", "variables": "[\"Ana\"]"});
        if let Some(c) = cards {
            a["cards"] = json!(c.to_string());
        }
        a
    };
    refused(&s, "send_template", args(None), "cards").await;
    let mut no_media = send_cards();
    no_media[1].as_object_mut().unwrap().remove("header");
    refused(&s, "send_template", args(Some(no_media)), "cards[1]").await;
    refused(
        &s,
        "send_template",
        args(Some(json!([send_cards()[0]]))),
        "cards",
    )
    .await;
    let mut with_code = args(Some(send_cards()));
    with_code["code"] = json!("123456");
    refused(&s, "send_template", with_code, "code").await;
    let mut with_offer = args(Some(send_cards()));
    with_offer["offer_expires_at"] = json!((Utc::now() + TimeDelta::days(1)).to_rfc3339());
    refused(&s, "send_template", with_offer, "offer_expires_at").await;

    let sent = s.ok("send_template", args(Some(send_cards()))).await;
    let id = sent["message_id"].as_str().unwrap();
    let row = s.message(id).await;
    assert_eq!(row.category, "marketing");
    let body = received(&s, id).await;
    let carousel = body["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "carousel")
        .cloned()
        .expect("a carousel component");
    assert_eq!(carousel["cards"][1]["card_index"], 1);
    assert_eq!(
        carousel["cards"][1]["components"][0]["parameters"][0]["image"]["link"],
        "https://shop.example/2.jpg"
    );
    warden_test_support::wait::until(Duration::from_secs(20), "accepted by the sim", || async {
        matches!(status(&s, id).await.as_str(), "sent" | "delivered" | "read")
    })
    .await;
}

fn offer_args(name: &str) -> Value {
    json!({"name": name, "category": "MARKETING", "language": "en",
           "body_text": "Use {{1}} before it ends",
           "header": "{\"format\": \"IMAGE\"}",
           "limited_time_offer": "{\"text\": \"Ends soon!\", \"has_expiration\": true}",
           "buttons": json!([{"type": "COPY_CODE", "text": "Copy", "example": "SAVE10"},
                             {"type": "URL", "text": "Shop", "url": "https://shop.example"}]).to_string()})
}

fn offer_send(to: &str) -> Value {
    json!({"to": to, "template_name": "flash", "variables": "[\"SAVE10\"]",
           "components": json!([
               {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://shop.example/o.jpg"}}]},
               {"type": "button", "sub_type": "copy_code", "index": 0, "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]},
           ]).to_string()})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_time_offer_needs_its_expiry_in_the_future() {
    let s = Stack::start(|_| {}).await;
    let mut footer = offer_args("flash");
    footer["footer"] = json!("Terms apply");
    refused(&s, "create_template", footer, "footer").await;
    let mut long = offer_args("flash");
    long["limited_time_offer"] = json!("{\"text\": \"This offer ends very soon\"}");
    refused(&s, "create_template", long, "limited_time_offer.text").await;
    let mut no_code = offer_args("flash");
    no_code["buttons"] =
        json!(json!([{"type": "URL", "text": "Shop", "url": "https://shop.example"}]).to_string());
    refused(&s, "create_template", no_code, "buttons").await;
    let mut utility = offer_args("flash");
    utility["category"] = json!("UTILITY");
    refused(&s, "create_template", utility, "category").await;

    s.ok("create_template", offer_args("flash")).await;
    approve(&s, "flash").await;
    let to = phone();
    refused(&s, "send_template", offer_send(&to), "offer_expires_at").await;
    let mut past = offer_send(&to);
    past["offer_expires_at"] = json!((Utc::now() - TimeDelta::hours(1)).to_rfc3339());
    refused(&s, "send_template", past, "offer_expires_at").await;
    let mut cards = offer_send(&to);
    cards["offer_expires_at"] = json!((Utc::now() + TimeDelta::days(2)).to_rfc3339());
    cards["cards"] = json!(send_cards().to_string());
    refused(&s, "send_template", cards, "cards").await;

    let at = Utc::now() + TimeDelta::days(2);
    let mut ok = offer_send(&to);
    ok["offer_expires_at"] = json!(at.to_rfc3339());
    let sent = s.ok("send_template", ok).await;
    let id = sent["message_id"].as_str().unwrap();
    assert_eq!(s.message(id).await.category, "marketing");
    let body = received(&s, id).await;
    let offer = body["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "limited_time_offer")
        .cloned()
        .expect("a limited_time_offer component");
    assert_eq!(
        offer["parameters"][0]["limited_time_offer"]["expiration_time_ms"],
        at.timestamp_millis()
    );
    warden_test_support::wait::until(Duration::from_secs(20), "accepted by the sim", || async {
        matches!(status(&s, id).await.as_str(), "sent" | "delivered" | "read")
    })
    .await;

    // The marketing cap and opt-outs apply as to any marketing template.
    let stopped = phone();
    s.opt_out(&stopped, false).await;
    let mut to_stopped = offer_send(&stopped);
    to_stopped["offer_expires_at"] = json!(at.to_rfc3339());
    s.err("USER_OPTED_OUT", "send_template", to_stopped).await;
}

fn auth_args(name: &str) -> Value {
    json!({"name": name, "category": "AUTHENTICATION", "language": "en",
           "otp_type": "ONE_TAP", "package_name": "com.example.shop",
           "signature_hash": "K8a/AINcGX7", "code_expiration_minutes": 10,
           "add_security_recommendation": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authentication_code_goes_to_a_phone_number_only() {
    let s = Stack::start(|_| {}).await;
    let without = |key: &str| {
        let mut a = auth_args("login_code");
        a.as_object_mut().unwrap().remove(key);
        a
    };
    refused(
        &s,
        "create_template",
        without("package_name"),
        "package_name",
    )
    .await;
    refused(
        &s,
        "create_template",
        without("signature_hash"),
        "signature_hash",
    )
    .await;
    let mut bad_hash = auth_args("login_code");
    bad_hash["signature_hash"] = json!("short");
    refused(&s, "create_template", bad_hash, "signature_hash").await;
    let mut bad_package = auth_args("login_code");
    bad_package["package_name"] = json!("shop");
    refused(&s, "create_template", bad_package, "package_name").await;
    let mut long = auth_args("login_code");
    long["code_expiration_minutes"] = json!(91);
    refused(&s, "create_template", long, "code_expiration_minutes").await;
    let mut with_body = auth_args("login_code");
    with_body["body_text"] = json!("Your code is {{1}}");
    refused(&s, "create_template", with_body, "body_text").await;
    let mut marketing = auth_args("login_code");
    marketing["category"] = json!("MARKETING");
    refused(&s, "create_template", marketing, "category").await;

    let c = s.ok("create_template", auth_args("login_code")).await;
    assert_eq!(c["category"], "AUTHENTICATION");
    approve(&s, "login_code").await;

    let to = phone();
    let send = |code: Option<&str>| {
        let mut a = json!({"to": to, "template_name": "login_code"});
        if let Some(code) = code {
            a["code"] = json!(code);
        }
        a
    };
    refused(&s, "send_template", send(None), "code").await;
    refused(&s, "send_template", send(Some("1234567890123456")), "code").await;
    let sent = s.ok("send_template", send(Some("493021"))).await;
    let id = sent["message_id"].as_str().unwrap();
    assert_eq!(s.message(id).await.category, "authentication");
    let body = received(&s, id).await;
    assert_eq!(
        body["components"],
        json!([
            {"type": "body", "parameters": [{"type": "text", "text": "493021"}]},
            {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "493021"}]},
        ])
    );

    // A customer known only by a BSUID cannot get a code: `to` is named.
    let b = format!("ID.{}", Uuid::new_v4().simple());
    let user = SimUser {
        phone: None,
        user_id: Some(b.clone()),
        parent_user_id: None,
        username: None,
    };
    s.inbound_text(user, "log me in").await;
    let mut to_bsuid = send(Some("493021"));
    to_bsuid["to"] = json!(b);
    let e = refused(&s, "send_template", to_bsuid, "`to`").await;
    assert!(
        e["message"].as_str().unwrap().contains("AUTHENTICATION"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaigns_of_a_carousel_and_an_offer_take_one_parameter_set() {
    let s = Stack::start(|_| {}).await;
    s.ok(
        "create_template",
        carousel_args("picks", json!([card("IMAGE"), card("IMAGE")])),
    )
    .await;
    approve(&s, "picks").await;
    let deliver_at = (Utc::now() + TimeDelta::hours(2)).to_rfc3339();
    let campaign = |cards: Value| {
        json!({"name": "weekly picks", "type": "marketing", "template_name": "picks",
               "deliver_at": deliver_at, "variables": "{\"1\": \"friend\"}",
               "cards": cards.to_string()})
    };
    let mut broken = send_cards();
    broken[0]["header"] = json!({"link": "ftp://x"});
    refused(
        &s,
        "schedule_campaign",
        campaign(broken.clone()),
        "cards[0]",
    )
    .await;
    let preview = |cards: Value| {
        let mut a = campaign(cards);
        a.as_object_mut().unwrap().remove("deliver_at");
        a
    };
    let scheduled = s.ok("schedule_campaign", campaign(send_cards())).await;
    assert!(scheduled["campaign_id"].is_string(), "{scheduled}");
    s.ok("preview_campaign", preview(send_cards())).await;

    s.ok("create_template", offer_args("flash")).await;
    approve(&s, "flash").await;
    let offer = |at: Option<String>| {
        let mut a = json!({"name": "flash sale", "type": "marketing", "template_name": "flash",
               "deliver_at": deliver_at, "variables": "{\"1\": \"SAVE10\"}",
               "components": offer_send("x")["components"].clone()});
        if let Some(at) = at {
            a["offer_expires_at"] = json!(at);
        }
        a
    };
    refused(&s, "schedule_campaign", offer(None), "offer_expires_at").await;
    let past = (Utc::now() - TimeDelta::hours(1)).to_rfc3339();
    refused(
        &s,
        "schedule_campaign",
        offer(Some(past)),
        "offer_expires_at",
    )
    .await;
    let later = (Utc::now() + TimeDelta::days(3)).to_rfc3339();
    let scheduled = s.ok("schedule_campaign", offer(Some(later))).await;
    assert!(scheduled["campaign_id"].is_string(), "{scheduled}");
}
