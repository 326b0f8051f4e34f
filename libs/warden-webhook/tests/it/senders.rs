//! Several senders: a POST must be signed with the app secret of a number it names; the
//! events of a number that is no sender are acknowledged and not stored.

use serde_json::{Value, json};
use warden_platform::signature;

use crate::common::*;

const A_SECRET: &str = "app-secret-of-business-a";
const B_SECRET: &str = "app-secret-of-business-b";
const A1: &str = "104000000000001";
const A2: &str = "104000000000002";
const B1: &str = "104000000000003";

const SENDERS: &str = r#"
version: 1
senders:
  - {id: a1, phone_number_id: "104000000000001", waba_id: "204000000000001", portfolio_id: "304000000000001", access_token_env: T_A1, app_secret_env: S_A, default: true}
  - {id: a2, phone_number_id: "104000000000002", waba_id: "204000000000001", portfolio_id: "304000000000001", access_token_env: T_A2, app_secret_env: S_A}
  - {id: b1, phone_number_id: "104000000000003", waba_id: "204000000000002", portfolio_id: "304000000000002", access_token_env: T_B1, app_secret_env: S_B}
"#;

async fn two_businesses() -> Harness {
    Harness::start_with(|settings| {
        let env = |name: &str| match name {
            "S_A" => Some(A_SECRET.to_string()),
            "S_B" => Some(B_SECRET.to_string()),
            _ => Some(format!("token-{name}")),
        };
        settings.senders_file =
            Some(warden_settings::Senders::from_yaml(SENDERS, &env).expect("a valid senders file"));
    })
    .await
}

fn inbound_to(number: &str, from: &str, wamid: &str) -> Value {
    envelope(vec![json!({"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550100000", "phone_number_id": number},
        "contacts": [{"profile": {"name": "Test Customer"}, "wa_id": from}],
        "messages": [text_message(from, "hello", now(), wamid)]}})])
}

async fn post_as(h: &Harness, secret: &str, payload: &Value) -> u16 {
    let body = serde_json::to_vec(payload).unwrap();
    let sig = signature::sign(secret.as_bytes(), &body);
    post_raw(&h.http, &h.url, &body, Some(&sig))
        .await
        .status()
        .as_u16()
}

async fn stored(h: &Harness, wamid: &str) -> i64 {
    h.count(&format!(
        "SELECT count(*) AS n FROM messages WHERE wamid = '{wamid}'"
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_business_signs_for_its_own_numbers() {
    let h = two_businesses().await;
    let (a1, a2, b1) = (wamid(), wamid(), wamid());
    assert_eq!(
        post_as(&h, A_SECRET, &inbound_to(A1, &phone(), &a1)).await,
        200
    );
    // One app secret for both numbers of business A.
    assert_eq!(
        post_as(&h, A_SECRET, &inbound_to(A2, &phone(), &a2)).await,
        200
    );
    assert_eq!(
        post_as(&h, B_SECRET, &inbound_to(B1, &phone(), &b1)).await,
        200
    );
    for w in [&a1, &a2, &b1] {
        assert_eq!(stored(&h, w).await, 1, "{w}");
    }

    // A's secret on B's event, B's on A's, or a secret of nobody: refused, nothing stored.
    let forged = wamid();
    assert_eq!(
        post_as(&h, A_SECRET, &inbound_to(B1, &phone(), &forged)).await,
        401
    );
    assert_eq!(
        post_as(&h, B_SECRET, &inbound_to(A2, &phone(), &forged)).await,
        401
    );
    assert_eq!(
        post_as(&h, "nobody's", &inbound_to(A1, &phone(), &forged)).await,
        401
    );
    assert_eq!(stored(&h, &forged).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_number_that_is_no_sender_is_acknowledged_not_stored() {
    let h = two_businesses().await;
    let (unknown, ours) = (wamid(), wamid());
    let metric = || async {
        h.metrics()
            .await
            .lines()
            .find_map(|l| l.strip_prefix("warden_webhook_unknown_sender_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let before = metric().await;
    assert_eq!(
        post_as(
            &h,
            A_SECRET,
            &inbound_to("104999999999999", &phone(), &unknown)
        )
        .await,
        200
    );
    assert_eq!(stored(&h, &unknown).await, 0);
    assert!(metric().await >= before + 1.0);

    // One POST naming a number of B and one of A, signed by A: only A's event is stored.
    let mut mixed = inbound_to(A1, &phone(), &ours);
    let b_change = inbound_to(B1, &phone(), &wamid())["entry"][0]["changes"][0].clone();
    mixed["entry"][0]["changes"]
        .as_array_mut()
        .unwrap()
        .push(b_change);
    assert_eq!(post_as(&h, A_SECRET, &mixed).await, 200);
    assert_eq!(stored(&h, &ours).await, 1);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM messages WHERE direction = 'inbound'")
            .await,
        1
    );
}

fn stop_to(number: &str, from: &str, wamid: &str) -> Value {
    envelope(vec![json!({"field": "messages", "value": {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "15550100000", "phone_number_id": number},
        "contacts": [{"profile": {"name": "Test Customer"}, "wa_id": from}],
        "messages": [text_message(from, "STOP", now(), wamid)]}})])
}

fn quality_of(account: &str, event: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": account, "changes": [
        {"field": "phone_number_quality_update", "value": {
            "display_phone_number": "15550100003", "event": event, "current_limit": "TIER_1K"}}]}]})
}

/// The stored rows of a customer: (sender of each conversation, business of each consent).
async fn rows_of(h: &Harness, customer: &str) -> (i64, i64, i64) {
    let conversations = |sender: &str| {
        format!(
            "SELECT count(*) AS n FROM conversations WHERE customer_phone = '{customer}' AND sender_id = '{sender}'"
        )
    };
    (
        h.count(&conversations("default")).await,
        h.count(&conversations("a2")).await,
        h.count(&format!(
            "SELECT count(*) AS n FROM business_consent WHERE customer_phone = '{customer}' \
             AND business = '204000000000002' AND NOT opt_in_marketing"
        ))
        .await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_messages_open_the_window_of_the_number_they_were_sent_to() {
    let h = two_businesses().await;
    let customer = phone();
    assert_eq!(
        post_as(&h, A_SECRET, &inbound_to(A2, &customer, &wamid())).await,
        200
    );
    // The conversation is A2's; A1 (the default sender) has none.
    assert_eq!(rows_of(&h, &customer).await, (0, 1, 0));
    let p = warden_rules::phone::canonicalize(&customer).unwrap();
    let a2 = h.core.conversation(&p, "whatsapp", "a2").await.unwrap();
    assert!(a2.window_open);
    let a1 = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    assert!(!a1.window_open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_to_b1_stops_business_b_only() {
    let h = two_businesses().await;
    let customer = phone();
    assert_eq!(
        post_as(&h, B_SECRET, &stop_to(B1, &customer, &wamid())).await,
        200
    );
    // Business B's consent row says no marketing; the customer row (business A) is untouched.
    assert_eq!(rows_of(&h, &customer).await.2, 1);
    let p = warden_rules::phone::canonicalize(&customer).unwrap();
    let marketing = warden_rules::kinds::MessageType::Marketing.described_content();
    let b = h
        .core
        .check(&p, Some("b1"), marketing, chrono::Utc::now())
        .await
        .unwrap();
    assert_eq!(b.reason_code.as_str(), "USER_OPTED_OUT");
    let a = h
        .core
        .check(&p, Some("a2"), marketing, chrono::Utc::now())
        .await
        .unwrap();
    assert_ne!(a.reason_code.as_str(), "USER_OPTED_OUT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flagged_number_sends_no_marketing_until_unflagged() {
    let h = two_businesses().await;
    let protected = || {
        h.count("SELECT count(*) AS n FROM sender_protection WHERE sender_id = 'b1' AND source = 'quality_flagged'")
    };
    assert_eq!(
        post_as(&h, B_SECRET, &quality_of("204000000000002", "FLAGGED")).await,
        200
    );
    assert_eq!(protected().await, 1);
    // Business A's numbers are not touched.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM sender_protection WHERE sender_id IN ('default', 'a2')")
            .await,
        0
    );
    let audited = h
        .count("SELECT count(*) AS n FROM audit_logs WHERE action = 'sender_protected' AND entity_id = 'b1'")
        .await;
    assert_eq!(audited, 1);
    assert_eq!(
        post_as(&h, B_SECRET, &quality_of("204000000000002", "UNFLAGGED")).await,
        200
    );
    assert_eq!(protected().await, 0);
}

fn template_approved(account: &str, name: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": account, "time": now(), "changes": [
        {"field": "message_template_status_update", "value": {
            "event": "APPROVED", "message_template_id": 7, "message_template_name": name,
            "message_template_language": "en", "reason": "NONE"}}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_decision_changes_its_business_template_only() {
    let h = two_businesses().await;
    h.exec(
        "INSERT INTO templates (business, name, locale, category, status, body_text) VALUES
         ('default', 'promo', 'en', 'marketing', 'PENDING', 'Sale'),
         ('204000000000002', 'promo', 'en', 'marketing', 'PENDING', 'Sale')",
    )
    .await;
    assert_eq!(
        post_as(&h, B_SECRET, &template_approved("204000000000002", "promo")).await,
        200
    );
    let status = |business: &str| {
        let sql = format!(
            "SELECT count(*) AS n FROM templates WHERE business = '{business}' AND status = 'APPROVED'"
        );
        let h = &h;
        async move { h.count(&sql).await }
    };
    assert_eq!(status("204000000000002").await, 1);
    assert_eq!(status("default").await, 0);
}

fn quality_of_display(account: &str, display: &str, event: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": account, "changes": [
        {"field": "phone_number_quality_update", "value": {
            "display_phone_number": display, "event": event, "current_limit": "TIER_1K"}}]}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quality_update_of_a_business_with_several_numbers_finds_its_number() {
    let h = two_businesses().await;
    // a2's display number is known (read from the platform); a1's is not.
    h.exec(
        "INSERT INTO number_throughput (channel, sender, high_throughput, coexistence, source, display_phone_number)
         VALUES ('whatsapp', 'a2', false, true, 'test', '15550100002')",
    )
    .await;
    h.exec(
        "INSERT INTO sender_numbers (sender_id, display_phone_number, display_digits)
         VALUES ('a2', '+1 555-010-0002', '15550100002')",
    )
    .await;
    let upgrade = quality_of_display("204000000000001", "15550100002", "THROUGHPUT_UPGRADE");
    assert_eq!(post_as(&h, A_SECRET, &upgrade).await, 200);
    let high = |sender: &str| {
        let sql = format!(
            "SELECT count(*) AS n FROM number_throughput WHERE sender = '{sender}' AND high_throughput"
        );
        let h = &h;
        async move { h.count(&sql).await }
    };
    assert_eq!(high("a2").await, 1);
    assert_eq!(high("default").await, 0);
    let flagged = quality_of_display("204000000000001", "15550100002", "FLAGGED");
    assert_eq!(post_as(&h, A_SECRET, &flagged).await, 200);
    let protected = |sender: &str| {
        let sql =
            format!("SELECT count(*) AS n FROM sender_protection WHERE sender_id = '{sender}'");
        let h = &h;
        async move { h.count(&sql).await }
    };
    assert_eq!(protected("a2").await, 1);
    assert_eq!(protected("default").await, 0);
    // A display number Warden cannot tell (a1's is not known): neither a flag nor an upgrade
    // is applied on a guess; both are kept until the platform says whose number it is.
    let unknown = quality_of_display("204000000000001", "15550109999", "FLAGGED");
    assert_eq!(post_as(&h, A_SECRET, &unknown).await, 200);
    assert_eq!(protected("default").await, 0);
    let unknown = quality_of_display("204000000000001", "15550109999", "THROUGHPUT_UPGRADE");
    assert_eq!(post_as(&h, A_SECRET, &unknown).await, 200);
    assert_eq!(high("default").await, 0);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM quality_updates_unmatched")
            .await,
        2
    );
}

/// A message to `number` whose metadata shows `display` (as every event of the number does).
fn inbound_shown_as(number: &str, display: &str) -> Value {
    let mut v = inbound_to(number, &phone(), &wamid());
    v["entry"][0]["changes"][0]["value"]["metadata"]["display_phone_number"] = json!(display);
    v
}

fn quality_named(account: &str, display: &str, event: &str) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": account, "time": now(), "changes": [
        {"field": "phone_number_quality_update", "value": {
            "display_phone_number": display, "event": event, "current_limit": "TIER_1K"}}]}]})
}

async fn protected_senders(h: &Harness) -> i64 {
    h.count("SELECT count(*) AS n FROM sender_protection").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_lands_on_the_number_whose_display_number_it_names_and_unflagged_lifts_it() {
    let h = two_businesses().await;
    // Warden learns each number's display number from the metadata of its events.
    for (number, display) in [(A1, "15550001001"), (A2, "15550001002")] {
        assert_eq!(
            post_as(&h, A_SECRET, &inbound_shown_as(number, display)).await,
            200
        );
    }
    assert_eq!(
        h.count("SELECT count(*) AS n FROM sender_numbers WHERE sender_id = 'a2' AND display_digits = '15550001002'")
            .await,
        1
    );
    assert_eq!(
        post_as(
            &h,
            A_SECRET,
            &quality_named("204000000000001", "15550001002", "FLAGGED")
        )
        .await,
        200
    );
    // A2 only: its sibling A1 (the default sender) is not protected.
    assert_eq!(
        h.count("SELECT count(*) AS n FROM sender_protection WHERE sender_id = 'a2' AND source = 'quality_flagged'")
            .await,
        1
    );
    assert_eq!(protected_senders(&h).await, 1);
    assert_eq!(
        post_as(
            &h,
            A_SECRET,
            &quality_named("204000000000001", "15550001002", "UNFLAGGED")
        )
        .await,
        200
    );
    assert_eq!(protected_senders(&h).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_whose_number_cannot_be_told_is_kept_never_widened_to_its_siblings() {
    // Nothing known of A's display numbers, and no platform to ask: the update is stored and
    // kept for when the platform answers; no number of A is protected on a guess.
    let h = two_businesses().await;
    assert_eq!(
        post_as(
            &h,
            A_SECRET,
            &quality_named("204000000000001", "15550001002", "FLAGGED")
        )
        .await,
        200
    );
    assert_eq!(protected_senders(&h).await, 0);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM quality_updates_unmatched WHERE account = '204000000000001' AND event = 'FLAGGED'")
            .await,
        1
    );
    // A1's display number is learnt; an update naming it still waits behind the kept one, so
    // the platform's order is kept when both apply.
    assert_eq!(
        post_as(&h, A_SECRET, &inbound_shown_as(A1, "15550001001")).await,
        200
    );
    assert_eq!(
        post_as(
            &h,
            A_SECRET,
            &quality_named("204000000000001", "15550001001", "FLAGGED")
        )
        .await,
        200
    );
    assert_eq!(protected_senders(&h).await, 0);
    assert_eq!(
        h.count("SELECT count(*) AS n FROM quality_updates_unmatched")
            .await,
        2
    );
}
