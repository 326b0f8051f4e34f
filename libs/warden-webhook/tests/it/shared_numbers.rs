//! The webhooks of a shared number (docs/compliance.md, "Shared numbers"): message echoes
//! are history (edits and deletes applied, replays stored once) that never open a window or
//! opt anyone out; handovers and standby copies move the holder and mark the number routed;
//! a poisoned item is skipped, never the batch.

use crate::common;

use common::*;
use serde_json::{Value, json};
use warden_rules::phone::canonicalize;

fn echoes(items: Vec<Value>) -> Value {
    envelope(vec![json!({"field": "smb_message_echoes", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(), "message_echoes": items}})])
}

fn echo(to: &str, wamid: &str, kind: &str, part: Value) -> Value {
    let mut e = json!({"from": "15550100000", "to": to, "id": wamid,
                       "timestamp": now().to_string(), "type": kind});
    e[kind] = part;
    e
}

async fn holder(h: &Harness, phone: &str) -> String {
    h.core
        .holder(&canonicalize(phone).unwrap(), None)
        .await
        .unwrap()
        .kind
}

async fn history(h: &Harness, phone: &str) -> Vec<Value> {
    let mut c = h.conn().await;
    let sender = h.core.sender_ref(None).unwrap();
    let page =
        warden_core::conversations::view::history(&mut c, phone, "whatsapp", &sender, 50, None)
            .await
            .unwrap();
    page.messages
        .into_iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoes_are_history_with_their_edits_and_deletes_and_never_a_window_or_a_stop() {
    let h = Harness::start().await;
    let p = phone();
    let (first, second) = (wamid(), wamid());
    h.deliver(&echoes(vec![
        echo(&p, &first, "text", json!({"body": "STOP"})),
        echo(&p, &second, "text", json!({"body": "see you at 5"})),
    ]))
    .await;
    // The platform retries: the same echoes again are stored once.
    h.deliver(&echoes(vec![echo(
        &p,
        &first,
        "text",
        json!({"body": "STOP"}),
    )]))
    .await;
    h.deliver(&echoes(vec![
        echo(
            &p,
            &wamid(),
            "edit",
            json!({"original_message_id": second,
            "message": {"type": "text", "text": {"body": "see you at 6"}}}),
        ),
        echo(
            &p,
            &wamid(),
            "revoke",
            json!({"original_message_id": first}),
        ),
    ]))
    .await;
    let messages = history(&h, &p).await;
    let of = |w: &str| {
        messages
            .iter()
            .find(|m| m["wamid"] == w)
            .cloned()
            .unwrap_or_else(|| panic!("{w} not in {messages:?}"))
    };
    let edited = of(&second);
    assert_eq!(edited["text"], "see you at 6", "{edited}");
    assert_eq!(edited["edited"], true);
    assert_eq!(edited["sent_by"], "business_app");
    assert_eq!(edited["direction"], "outbound");
    let deleted = of(&first);
    assert_eq!(deleted["deleted"], true, "{deleted}");
    assert_eq!(deleted["text"], Value::Null);
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE wamid = '{first}'"
        ))
        .await,
        1
    );
    // The business spoke, not the customer: no window, no opt-out, no count, no cost.
    let view = h
        .core
        .conversation(&canonicalize(&p).unwrap(), "whatsapp", "default")
        .await
        .unwrap();
    assert!(
        !view.window_open && view.last_inbound_at.is_none(),
        "{view:?}"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{p}'
               AND opt_in_marketing AND opt_in_utility"
        ))
        .await,
        1
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM message_frequencies WHERE customer_phone = '{p}'"
        ))
        .await,
        0
    );
    assert_eq!(holder(&h, &p).await, "human");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM routed_numbers").await,
        0,
        "coexistence is not routing"
    );
    // The customer answers: the person still holds the conversation.
    h.deliver(&inbound(&p, "ok thanks", now(), &wamid())).await;
    assert_eq!(holder(&h, &p).await, "human");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handovers_and_standby_copies_move_the_holder_and_route_the_number() {
    let h = Harness::start().await;
    let p = phone();
    h.deliver(&inbound(&p, "hi", now(), &wamid())).await;
    assert_eq!(holder(&h, &p).await, "agents");
    let handover = |kind: &str, ms: i64| {
        envelope(vec![json!({"field": "messaging_handovers", "value": {
            "messaging_product": "whatsapp", "metadata": metadata(),
            "contacts": [{"wa_id": p}], "timestamp": ms, "type": kind,
            kind: {"previous_role": "app", "new_role": "ai_agent"}}})])
    };
    let ms = now() * 1000;
    h.deliver(&handover("control_taken", ms)).await;
    assert_eq!(holder(&h, &p).await, "other_app");
    h.deliver(&handover("control_passed", ms + 1)).await;
    assert_eq!(holder(&h, &p).await, "agents");
    // The same notification again changes nothing.
    h.deliver(&handover("control_taken", ms)).await;
    assert_eq!(holder(&h, &p).await, "agents");
    h.deliver(&envelope(vec![json!({"field": "standby", "value": {
        "messaging_product": "whatsapp", "metadata": metadata(),
        "contacts": [{"wa_id": p}],
        "messages": [text_message(&p, "anyone?", now(), &wamid())]}})]))
        .await;
    assert_eq!(holder(&h, &p).await, "other_app");
    assert_eq!(
        h.count("SELECT count(*) AS n FROM routed_numbers WHERE sender_id = 'default'")
            .await,
        1
    );
    // A standby copy is not the customer writing to Warden: nothing stored, no window moved.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{p}'"
        ))
        .await,
        1
    );
    // The platform routes the customer's next message to Warden: the thread is ours again.
    h.deliver(&inbound(&p, "back to you", now(), &wamid()))
        .await;
    assert_eq!(holder(&h, &p).await, "agents");
    // Every change is in the history and the audit log:
    // agents -> other_app -> agents -> other_app -> agents.
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM conversation_holder_changes WHERE customer_phone = '{p}'"
        ))
        .await,
        4
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM audit_logs WHERE action = 'holder_changed' AND entity_id = '{p}'"
        ))
        .await,
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_item_is_skipped_and_the_rest_applied() {
    let h = Harness::start().await;
    let p = phone();
    let good = wamid();
    h.deliver(&echoes(vec![
        json!({"from": "15550100000", "id": wamid(), "type": "text"}),
        echo(&p, &good, "text", json!({"body": "hello"})),
    ]))
    .await;
    h.deliver(&envelope(vec![
        json!({"field": "messaging_handovers", "value": {
        "metadata": metadata(), "type": "control_stolen", "contacts": [{"wa_id": p}]}}),
    ]))
    .await;
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE wamid = '{good}'"
        ))
        .await,
        1
    );
    assert_eq!(holder(&h, &p).await, "human");
}
