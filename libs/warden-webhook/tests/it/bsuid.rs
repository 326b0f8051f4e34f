//! Customers without phone numbers: webhooks with and without `wa_id` /
//! `from`, identified by business-scoped user IDs (BSUIDs). Every shape is stored and
//! obeyed (window, STOP), a phone and a BSUID seen together name one customer (two
//! records merge, the stricter consent wins, the history is kept), and an opt-out holds
//! whatever identifier addresses the customer.

use crate::common;

use chrono::Utc;
use common::*;
use serde_json::Value;
use warden_rules::compliance::Decision;
use warden_rules::kinds::ContentKind;
use warden_rules::phone::PhoneNumber;

fn bsuid() -> String {
    format!("ID.{}", rand::random::<u64>())
}

fn key(id: &str) -> PhoneNumber {
    warden_rules::bsuid::customer_key(id).unwrap()
}

/// A fixture of `tests/fixtures/bsuid` with its placeholders filled.
fn fixture(name: &str, phone: &str, bsuid: &str, parent: &str, wamid: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/bsuid/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let raw = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let filled = raw
        .replace("__PHONE__", phone)
        .replace("__BSUID__", bsuid)
        .replace("__PARENT__", parent)
        .replace("__WAMID__", wamid)
        .replace("__TS__", &now().to_string())
        .replace("__PNID__", PHONE_NUMBER_ID);
    serde_json::from_str(&filled).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A text message from a user with a username and no visible phone.
fn phoneless_text(bsuid: &str, text: &str, wamid: &str) -> Value {
    envelope(vec![serde_json::json!({"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"profile": {"name": "Ana", "username": "@ana"}, "user_id": bsuid}],
        "messages": [{"from_user_id": bsuid, "id": wamid, "timestamp": now().to_string(),
                      "type": "text", "text": {"body": text}}]}})])
}

/// A text message carrying both the phone and the BSUID.
fn linked_text(phone: &str, bsuid: &str, text: &str, wamid: &str) -> Value {
    envelope(vec![serde_json::json!({"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"profile": {"name": "Ana", "username": "@ana"}, "wa_id": phone,
                      "user_id": bsuid}],
        "messages": [{"from": phone, "from_user_id": bsuid, "id": wamid,
                      "timestamp": now().to_string(), "type": "text", "text": {"body": text}}]}})])
}

async fn marketing(h: &Harness, id: &str) -> Decision {
    h.core
        .check(
            &key(id),
            None,
            ContentKind::Template(warden_rules::kinds::TemplateCategory::Marketing),
            Utc::now(),
        )
        .await
        .unwrap()
}

async fn opted_in_marketing(h: &Harness, customer: &str) -> bool {
    h.count(&format!(
        "SELECT count(*) AS n FROM customers WHERE phone = '{customer}' AND opt_in_marketing"
    ))
    .await
        == 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_platform_shape_with_and_without_wa_id_answers_200_and_is_stored() {
    let h = Harness::start().await;
    let (p, b, parent, w) = (
        phone(),
        bsuid(),
        format!("ID.ENT.{}", rand::random::<u32>()),
        wamid(),
    );
    // Outbound messages the statuses report on: to the phone-less customer (by BSUID).
    {
        let mut c = h.conn().await;
        for n in [6, 7, 8] {
            outbound_message(&mut c, &b, "accepted", Some(&format!("{w}{n}")), None).await;
        }
    }
    // Phone-less shapes first, then the phone appears (the two records merge), then the
    // number and the BSUID change.
    let order = [
        "02_text_username_only",
        "03_text_parent_bsuid_no_phone",
        "04_image_username_only",
        "05_button_username_only",
        "11_user_preferences_bsuid_only",
        "07_status_delivered_bsuid_only",
        "08_status_failed_bsuid_only",
        "12_text_phone_only_legacy",
        "01_text_with_phone_and_bsuid",
        "06_status_sent_with_phone_and_bsuid",
        "09_system_user_changed_number",
        "10_system_user_changed_user_id",
    ];
    for name in order {
        let body = fixture(name, &p, &b, &parent, &w);
        let res = h.post(&body).await;
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        assert_eq!((status, text.as_str()), (200, "EVENT_RECEIVED"), "{name}");
    }
    // Every inbound message is stored, on the one customer they all name.
    for n in [1, 2, 3, 4, 5, 9, 10, 12] {
        assert_eq!(
            h.count(&format!(
                "SELECT count(*) AS n FROM messages WHERE wamid = '{w}{n}' \
                 AND direction = 'inbound' AND customer_phone = '{p}'"
            ))
            .await,
            1,
            "inbound {n} stored under the customer's phone"
        );
    }
    // Every status was applied (and the messages moved with the merge).
    let statuses = h
        .count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{p}' AND direction = 'outbound' \
             AND ((wamid = '{w}6' AND status = 'sent') OR (wamid = '{w}7' AND status = 'delivered') \
                  OR (wamid = '{w}8' AND status = 'failed'))"
        ))
        .await;
    assert_eq!(statuses, 3);
    // One customer: the BSUID record merged into the phone's, the BSUID changed last.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{p}' AND bsuid = '{b}NEW' \
             AND parent_bsuid = '{parent}' AND username = '@realsheenanelson'"
        ))
        .await,
        1
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{b}'"
        ))
        .await,
        0
    );
    // The stop button and the preference of the phone-less user hold on the merged
    // customer, by phone, by the old and new BSUID, and on the number it changed to.
    assert!(!opted_in_marketing(&h, &p).await);
    for id in [p.as_str(), &format!("{b}NEW"), &parent, "16505559999"] {
        assert!(!marketing(&h, id).await.allowed, "{id} is opted out");
    }
    assert_eq!(
        h.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'customer_merged'")
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phoneless_message_opens_the_window_and_its_stop_opts_the_customer_out() {
    let h = Harness::start().await;
    let b = bsuid();
    h.deliver(&phoneless_text(&b, "hello", &wamid())).await;
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{b}' AND bsuid = '{b}' \
             AND username = '@ana' AND country = 'ID'"
        ))
        .await,
        1,
        "a customer keyed by its BSUID, with its country from the BSUID"
    );
    let view = h
        .core
        .conversation(&key(&b), "whatsapp", "default")
        .await
        .unwrap();
    assert!(view.window_open, "the window opened");
    assert!(marketing(&h, &b).await.allowed);

    h.deliver(&phoneless_text(&b, "STOP", &wamid())).await;
    assert!(!opted_in_marketing(&h, &b).await);
    assert!(!marketing(&h, &b).await.allowed);
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{b}' AND direction = 'inbound'"
        ))
        .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_by_bsuid_blocks_marketing_by_phone_after_linking_and_the_reverse() {
    let h = Harness::start().await;
    // A phone-less user stops; later a webhook shows their phone.
    let (p1, b1) = (phone(), bsuid());
    h.deliver(&phoneless_text(&b1, "STOP", &wamid())).await;
    assert!(marketing(&h, &p1).await.allowed, "not linked yet");
    h.deliver(&linked_text(&p1, &b1, "hi again", &wamid()))
        .await;
    assert!(!marketing(&h, &p1).await.allowed, "blocked by phone");
    assert!(!marketing(&h, &b1).await.allowed, "blocked by BSUID");

    // A customer known by phone stops; a BSUID-only message later is the same customer.
    let (p2, b2) = (phone(), bsuid());
    h.deliver(&inbound(&p2, "STOP", now(), &wamid())).await;
    h.deliver(&linked_text(&p2, &b2, "question", &wamid()))
        .await;
    h.deliver(&phoneless_text(&b2, "another", &wamid())).await;
    assert!(!marketing(&h, &b2).await.allowed, "blocked by BSUID");
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{p2}'"
        ))
        .await,
        3,
        "the phone-less message joined the customer's history"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_keeps_the_stricter_consent_the_tags_and_the_full_history() {
    let h = Harness::start().await;
    let (p, b) = (phone(), bsuid());
    // Two records of one person: by phone (tagged, opted in), by BSUID (opted out).
    h.deliver(&inbound(&p, "hello", now() - 3600, &wamid()))
        .await;
    h.deliver(&phoneless_text(&b, "STOP", &wamid())).await;
    {
        let mut c = h.conn().await;
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query(format!(
                "UPDATE customers SET tags = ARRAY['vip'] WHERE phone = '{p}'"
            )),
            &mut c,
        )
        .await
        .unwrap();
        diesel_async::RunQueryDsl::execute(
            diesel::sql_query(format!(
                "UPDATE customers SET tags = ARRAY['new'] WHERE phone = '{b}'"
            )),
            &mut c,
        )
        .await
        .unwrap();
        outbound_message(&mut c, &b, "sent", Some(&wamid()), None).await;
    }
    h.deliver(&linked_text(&p, &b, "it's me", &wamid())).await;

    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{p}' AND bsuid = '{b}' \
             AND NOT opt_in_marketing AND NOT opt_in_utility AND tags @> ARRAY['vip','new']"
        ))
        .await,
        1,
        "the stricter consent and every tag"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{b}'"
        ))
        .await,
        0
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{p}'"
        ))
        .await,
        4,
        "both histories (2 + 1 inbound, 1 outbound) plus the linking message"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM conversations WHERE customer_phone = '{p}'"
        ))
        .await,
        1,
        "one conversation per channel"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'customer_merged' \
             AND entity_id = '{p}' AND details->>'merged' = '{b}'"
        ))
        .await,
        1
    );
    // A replay of the linking webhook changes nothing.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone IN ('{p}', '{b}')"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bsuid_change_keeps_the_customer_and_every_opt_out() {
    let h = Harness::start().await;
    let b = bsuid();
    h.deliver(&phoneless_text(&b, "STOP", &wamid())).await;
    let new = format!("{b}X");
    h.deliver(&envelope(vec![
        serde_json::json!({"field": "messages", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "messages": [{"from_user_id": b, "id": wamid(), "timestamp": now().to_string(),
                      "type": "system", "system": {"body": "User changed their user ID",
                      "user_id": new, "type": "user_changed_user_id"}}]}}),
    ]))
    .await;
    assert!(
        !marketing(&h, &new).await.allowed,
        "the new BSUID is opted out"
    );
    h.deliver(&phoneless_text(&new, "hello", &wamid())).await;
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{b}'"
        ))
        .await,
        3,
        "the new BSUID's messages continue the same customer's history"
    );
}
