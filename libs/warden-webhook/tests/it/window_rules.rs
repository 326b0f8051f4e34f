//! Which inbound webhooks may open the care window (docs/operations.md, Webhook ingestion):
//! only a customer's own message, for our number, with a plausible timestamp.

use crate::common;

use common::*;
use serde_json::{Value, json};
use warden_core::conversations::inbound::NoWindow;
use warden_webhook::metrics;

fn no_window(reason: NoWindow) -> u64 {
    metrics::NO_WINDOW
        .with_label_values(&[reason.as_str()])
        .get()
}

async fn window_of(h: &Harness, phone: &str) -> (bool, Option<i64>) {
    let p = warden_rules::phone::canonicalize(phone).unwrap();
    let view = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    (
        view.window_open,
        view.last_inbound_at.map(|t| t.timestamp()),
    )
}

async fn stored(h: &Harness, wamid: &str) -> i64 {
    h.count(&format!(
        "SELECT count(*) AS n FROM messages WHERE wamid = '{wamid}' AND direction = 'inbound'"
    ))
    .await
}

/// A text message whose `timestamp` is the given JSON (or absent).
fn stamped(from: &str, ts: Option<Value>, wamid: &str) -> Value {
    let mut m = json!({"from": from, "id": wamid, "type": "text", "text": {"body": "hello"}});
    if let Some(ts) = ts {
        m["timestamp"] = ts;
    }
    envelope(vec![messages_change(vec![m])])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_with_an_implausible_timestamp_is_stored_and_counted_but_opens_no_window() {
    let h = Harness::start().await;
    let from = phone();
    let before = no_window(NoWindow::ImplausibleTimestamp);
    let cases = [
        None,                                   // missing
        Some(json!("0")),                       // zero
        Some(json!("1230768000")),              // 2009-01-01
        Some(json!((now() + 600).to_string())), // 10 minutes ahead
    ];
    let mut ids = Vec::new();
    for ts in cases {
        let id = wamid();
        h.deliver(&stamped(&from, ts, &id)).await;
        ids.push(id);
    }
    for id in &ids {
        assert_eq!(stored(&h, id).await, 1, "the message itself is kept");
    }
    assert_eq!(
        window_of(&h, &from).await,
        (false, None),
        "no window from an implausible time"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM conversations WHERE customer_phone = '{from}'"
        ))
        .await,
        0
    );
    assert_eq!(no_window(NoWindow::ImplausibleTimestamp) - before, 4);

    // An open window is not extended by one either (in the same batch as a real message).
    let real = now() - 3 * 3600;
    let ahead = wamid();
    h.deliver(&envelope(vec![messages_change(vec![
        text_message(&from, "real", real, &wamid()),
        json!({"from": from, "id": ahead, "type": "text", "text": {"body": "from the future"},
               "timestamp": (now() + 86_400).to_string()}),
    ])]))
    .await;
    assert_eq!(window_of(&h, &from).await, (true, Some(real)));
    assert_eq!(stored(&h, &ahead).await, 1);
    assert_eq!(no_window(NoWindow::ImplausibleTimestamp) - before, 5);

    // A stop keyword is obeyed whatever its timestamp says.
    let stop = json!({"from": from, "id": wamid(), "type": "text", "text": {"body": "STOP"},
                      "timestamp": "0"});
    h.deliver(&envelope(vec![messages_change(vec![stop])]))
        .await;
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{from}' AND NOT opt_in_marketing AND NOT opt_in_utility"
        ))
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_system_message_opens_no_window() {
    let h = Harness::start().await;
    let from = phone();
    let before = no_window(NoWindow::NotFromCustomer);
    let id = wamid();
    let system = json!({"from": from, "id": id, "timestamp": (now() - 60).to_string(),
                        "type": "system",
                        "system": {"body": "User A changed from 628110000 to 628110001",
                                   "new_wa_id": "628110001", "type": "user_changed_number"}});
    h.deliver(&envelope(vec![messages_change(vec![system])]))
        .await;
    assert_eq!(stored(&h, &id).await, 1, "stored for the record");
    assert_eq!(window_of(&h, &from).await, (false, None));
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{from}' AND last_interaction_at IS NULL"
        ))
        .await,
        1,
        "not an interaction of the customer either"
    );
    assert_eq!(no_window(NoWindow::NotFromCustomer) - before, 1);

    // The customer's own message does open it.
    let ts = now() - 30;
    h.deliver(&inbound(&from, "hi", ts, &wamid())).await;
    assert_eq!(window_of(&h, &from).await, (true, Some(ts)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_for_another_business_number_are_acknowledged_not_stored_and_counted() {
    let h = Harness::start().await;
    let from = phone();
    let before = metrics::FOREIGN.get();
    let elsewhere =
        json!({"display_phone_number": "15550199999", "phone_number_id": "999999999999999"});
    let msg = wamid();
    let out = {
        let mut c = h.conn().await;
        outbound_message(&mut c, &from, "sent", Some("wamid.OURS"), None).await
    };
    let body = envelope(vec![
        json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": elsewhere,
            "contacts": [{"wa_id": from}],
            "messages": [text_message(&from, "hi other business", now() - 10, &msg)]}}),
        json!({"field": "messages", "value": {"messaging_product": "whatsapp", "metadata": elsewhere,
            "statuses": [status_item("wamid.OURS", "read", &from, Some(&out.to_string()), None)]}}),
        json!({"field": "user_preferences", "value": {"messaging_product": "whatsapp", "metadata": elsewhere,
            "user_preferences": [{"wa_id": from, "category": "marketing_messages", "value": "stop",
                                  "timestamp": now()}]}}),
    ]);
    h.deliver(&body).await;
    assert_eq!(stored(&h, &msg).await, 0, "not stored");
    assert_eq!(
        window_of(&h, &from).await,
        (false, None),
        "opens nothing of ours"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE id = '{out}' AND status = 'sent'"
        ))
        .await,
        1,
        "a status for another number moves nothing"
    );
    assert_eq!(
        h.count(&format!(
            "SELECT count(*) AS n FROM customers WHERE phone = '{from}' AND opt_in_marketing"
        ))
        .await,
        1,
        "a preference for another number changes no consent of ours"
    );
    assert_eq!(
        h.count("SELECT count(*) AS n FROM webhook_events").await,
        0,
        "nothing recorded"
    );
    assert_eq!(metrics::FOREIGN.get() - before, 3);

    // The same message for our number is stored and opens the window.
    h.deliver(&inbound(&from, "hi", now() - 10, &msg)).await;
    assert_eq!(stored(&h, &msg).await, 1);
    assert!(window_of(&h, &from).await.0);
}
