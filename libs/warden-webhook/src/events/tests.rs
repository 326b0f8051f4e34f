//! Unit tests of `extract` (pure: no I/O).

use super::*;
use serde_json::json;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap()
}

fn body(changes: Value) -> Vec<u8> {
    json!({"object": "whatsapp_business_account",
           "entry": [{"id": "1", "time": 1_700_000_000, "changes": changes}]})
    .to_string()
    .into_bytes()
}

#[test]
fn refuses_what_is_not_a_platform_event() {
    assert!(matches!(
        extract(b"nope", now()),
        Err(BodyError::NotJson(_))
    ));
    assert!(extract(b"[]", now()).is_err());
    assert_eq!(
        extract(br#"{"object":"page","entry":[]}"#, now()).unwrap_err(),
        BodyError::WrongObject
    );
    assert_eq!(
        extract(br#"{"object":"whatsapp_business_account"}"#, now()).unwrap_err(),
        BodyError::NoEntries
    );
    assert_eq!(
        extract(
            br#"{"object":"whatsapp_business_account","entry":{}}"#,
            now()
        )
        .unwrap_err(),
        BodyError::NoEntries
    );
    let empty = extract(
        br#"{"object":"whatsapp_business_account","entry":[]}"#,
        now(),
    )
    .unwrap();
    assert!(empty.events.is_empty());
}

#[test]
fn keys_of_every_kind() {
    let b = body(json!([
        {"field": "messages", "value": {
            "messages": [{"from": "+62 812-3456-789", "id": "wamid.IN", "timestamp": "1700000001",
                          "type": "text", "text": {"body": " stop "}}],
            "statuses": [{"id": "wamid.OUT", "status": "DELIVERED", "timestamp": "1700000002",
                          "recipient_id": "628123456789"},
                         {"status": "read", "timestamp": 1700000003,
                          "biz_opaque_callback_data": "0190c3a0-0000-7000-8000-000000000001"}]}},
        {"field": "message_template_status_update", "value": {
            "event": "rejected", "message_template_id": 42, "message_template_name": "promo",
            "message_template_language": "en_US", "reason": "PROMOTIONAL"}},
        {"field": "user_preferences", "value": {"user_preferences": [
            {"wa_id": "628123456789", "category": "marketing_messages", "value": "stop",
             "timestamp": 1700000004}]}},
        {"field": "phone_number_quality_update", "value": {
            "display_phone_number": "15550100000", "event": "FLAGGED", "current_limit": "TIER_1K"}},
        {"field": "account_alerts", "value": {}}
    ]));
    let x = extract(&b, now()).unwrap();
    let keys: Vec<&str> = x.events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys[0], "msg:wamid.IN");
    assert_eq!(keys[1], "st:wamid.OUT:delivered");
    assert_eq!(keys[2], "st:cb:0190c3a0-0000-7000-8000-000000000001:read");
    assert_eq!(keys[3], "tpl:promo:en_US:REJECTED:42:1700000000");
    assert_eq!(keys[4], "pref:628123456789:stop:1700000004");
    assert!(keys[5].starts_with("q:"));
    assert_eq!(x.events.len(), 6);
    let EventBody::Inbound(inb) = &x.events[0].body else {
        panic!()
    };
    assert_eq!(inb.phone.digits(), "628123456789");
    assert_eq!(inb.keyword, Some(OptChange::Stop));
    assert_eq!(inb.at.timestamp(), 1_700_000_001);
    let EventBody::Template(t) = &x.events[3].body else {
        panic!()
    };
    assert_eq!(t.reason.as_deref(), Some("PROMOTIONAL"));
    assert_eq!(
        x.skipped,
        vec![Skipped {
            reason: "unknown_field",
            detail: "account_alerts".into()
        }]
    );
    // Same body again: same keys (replays are recognised).
    let again = extract(&b, now()).unwrap();
    let again: Vec<&str> = again.events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, again);
}

#[test]
fn duplicates_inside_one_post_count_once() {
    let st = json!({"id": "wamid.D", "status": "sent", "timestamp": "1700000000"});
    let b = body(json!([
        {"field": "messages", "value": {"statuses": [st.clone(), st.clone()]}},
        {"field": "messages", "value": {"statuses": [st]}}
    ]));
    let x = extract(&b, now()).unwrap();
    assert_eq!(x.events.len(), 1);
    assert_eq!(x.duplicates, 2);
}

#[test]
fn one_bad_change_does_not_spoil_the_batch() {
    let b = body(json!([
        {"field": "messages", "value": {"statuses": [{"id": "w", "status": 5}]}},
        {"field": "messages", "value": {"messages": [
            {"from": "abc", "id": "wamid.X", "type": "text", "text": {"body": "hi"}},
            {"from": "628123456789", "id": "", "type": "text"},
            {"from": "628123456789", "id": "wamid.OK\u{0}", "type": "text",
             "text": {"body": "a\u{0}b"}}]}},
        {"field": "messages", "value": {"statuses": [{"id": "w2", "status": "deleted"}]}},
        "not an object",
        {"value": {}}
    ]));
    let x = extract(&b, now()).unwrap();
    assert_eq!(x.events.len(), 1);
    assert_eq!(x.events[0].key, "msg:wamid.OK");
    let EventBody::Inbound(inb) = &x.events[0].body else {
        panic!()
    };
    assert_eq!(inb.content["text"]["body"], "ab");
    assert_eq!(inb.at, now(), "a missing timestamp is now");
    let reasons: Vec<_> = x.skipped.iter().map(|s| s.reason).collect();
    assert_eq!(
        reasons,
        [
            "malformed_change",
            "bad_phone",
            "bad_wamid",
            "status_kind",
            "malformed_change",
            "malformed_change"
        ]
    );
}

#[test]
fn long_keys_are_hashed_and_times_clamped() {
    let long = "w".repeat(250);
    let key = bounded_key(&format!("st:{long}:sent"));
    assert!(key.starts_with("st:h:") && key.len() < MAX_KEY_LEN);
    assert_eq!(event_time(0, now()), now());
    assert_eq!(event_time(i64::MAX, now()), now());
    assert_eq!(event_time(4_000_000_000, now()), now());
    assert_eq!(event_time(1_700_000_000, now()).timestamp(), 1_700_000_000);
    assert_eq!(clip("héllo", 2), "h");
}

#[test]
fn stop_buttons_are_keywords() {
    let b = body(json!([{"field": "messages", "value": {"messages": [
        {"from": "628123456789", "id": "wamid.B", "timestamp": "1700000000", "type": "button",
         "button": {"text": "Stop promotions", "payload": "x"}},
        {"from": "628123456789", "id": "wamid.C", "timestamp": "1700000000", "type": "text",
         "text": {"body": "please stop"}}]}}]));
    let x = extract(&b, now()).unwrap();
    let kw: Vec<_> = x
        .events
        .iter()
        .map(|e| match &e.body {
            EventBody::Inbound(i) => i.keyword,
            _ => panic!(),
        })
        .collect();
    assert_eq!(kw, [Some(OptChange::Stop), None]);
}

#[test]
fn events_for_another_number_are_counted_not_listed() {
    let meta = |id: &str| json!({"display_phone_number": "1555", "phone_number_id": id});
    let b = body(json!([
        {"field": "messages", "value": {"metadata": meta("999"), "messages": [
            {"from": "628123456789", "id": "wamid.A", "timestamp": "1700000000", "type": "text",
             "text": {"body": "hi"}}],
            "statuses": [{"id": "wamid.S", "status": "sent", "timestamp": "1700000000"}]}},
        {"field": "user_preferences", "value": {"metadata": meta("999"), "user_preferences": [
            {"wa_id": "628123456789", "category": "marketing_messages", "value": "stop",
             "timestamp": 1700000004}]}},
        {"field": "messages", "value": {"metadata": meta("111"), "messages": [
            {"from": "628123456789", "id": "wamid.B", "timestamp": "1700000000", "type": "text",
             "text": {"body": "hi"}}]}},
        {"field": "messages", "value": {"messages": [
            {"from": "628123456789", "id": "wamid.C", "timestamp": "1700000000", "type": "text",
             "text": {"body": "no metadata: ours"}}]}}
    ]));
    let x = extract_for(&b, now(), Some(&["111".to_string()])).unwrap();
    let keys: Vec<&str> = x.events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["msg:wamid.B", "msg:wamid.C"]);
    assert_eq!(x.foreign, 3);
    // Without a number of ours configured, nothing is filtered.
    assert_eq!(extract(&b, now()).unwrap().events.len(), 5);
}

#[test]
fn a_body_names_its_numbers_and_several_can_be_ours() {
    let meta = |id: &str| json!({"display_phone_number": "1555", "phone_number_id": id});
    let b = body(json!([
        {"field": "messages", "value": {"metadata": meta(" 222 "), "messages": [
            {"from": "628123456789", "id": "wamid.A", "timestamp": "1700000000", "type": "text",
             "text": {"body": "hi"}}]}},
        {"field": "messages", "value": {"metadata": meta("111"), "messages": [
            {"from": "628123456789", "id": "wamid.B", "timestamp": "1700000000", "type": "text",
             "text": {"body": "hi"}}]}},
        {"field": "messages", "value": {"metadata": meta("222"), "statuses": []}},
        {"field": "messages", "value": {"metadata": meta("333"), "messages": [
            {"from": "628123456789", "id": "wamid.C", "timestamp": "1700000000", "type": "text",
             "text": {"body": "hi"}}]}}
    ]));
    assert_eq!(named_numbers(&b), ["222", "111", "333"]);
    let x = extract_for(&b, now(), Some(&["111".to_string(), "222".to_string()])).unwrap();
    let keys: Vec<&str> = x.events.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["msg:wamid.A", "msg:wamid.B"]);
    assert_eq!(x.foreign, 1);
    assert!(named_numbers(b"not json").is_empty());
    assert!(named_numbers(br#"{"object":"whatsapp_business_account","entry":7}"#).is_empty());
}

#[test]
fn only_plausible_customer_messages_carry_a_window() {
    let b = body(json!([{"field": "messages", "value": {"messages": [
        {"from": "628123456789", "id": "wamid.OK", "timestamp": "1799999000", "type": "text",
         "text": {"body": "hi"}},
        {"from": "628123456789", "id": "wamid.OLD", "timestamp": "1000", "type": "text",
         "text": {"body": "hi"}},
        {"from": "628123456789", "id": "wamid.SYS", "timestamp": "1799999000", "type": "system",
         "system": {"body": "changed number"}}]}}]));
    let x = extract(&b, now()).unwrap();
    let windows: Vec<_> = x
        .events
        .iter()
        .map(|e| match &e.body {
            EventBody::Inbound(i) => i.window.map(|t| t.timestamp()),
            _ => panic!(),
        })
        .collect();
    assert_eq!(
        windows,
        [
            Ok(1_799_999_000),
            Err(NoWindow::ImplausibleTimestamp),
            Err(NoWindow::NotFromCustomer)
        ]
    );
}
