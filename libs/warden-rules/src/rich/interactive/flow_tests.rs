use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::rich::RichMessage;

fn body(parameters: Value) -> Value {
    json!({"type": "interactive", "interactive": {
        "type": "flow",
        "body": {"text": "Book a table"},
        "action": {"name": "flow", "parameters": parameters},
    }})
}

fn good() -> Value {
    json!({
        "flow_message_version": "3",
        "flow_token": "tok-1",
        "flow_id": "1234567890",
        "flow_cta": "Book now",
        "mode": "published",
        "flow_action": "navigate",
        "flow_action_payload": {"screen": "WELCOME", "data": {"party": 2}},
    })
}

/// The field a body is refused for, or "" when accepted.
fn refused(parameters: Value) -> String {
    match RichMessage::from_json(&body(parameters)) {
        Ok(_) => String::new(),
        Err(e) => e.field,
    }
}

fn with(key: &str, value: Value) -> Value {
    let mut p = good();
    p[key] = value;
    p
}

fn without(key: &str) -> Value {
    let mut p = good();
    p.as_object_mut().unwrap().remove(key);
    p
}

#[test]
fn a_flow_body_is_stored_in_the_platforms_shape() {
    let m = RichMessage::from_json(&body(good())).unwrap();
    let stored = m.to_json();
    assert_eq!(stored, body(good()));
    assert_eq!(stored["interactive"]["action"]["name"], "flow");
    assert_eq!(
        stored["interactive"]["action"]["parameters"]["flow_message_version"],
        "3"
    );
    // And it reads back the same.
    assert_eq!(RichMessage::from_json(&stored).unwrap(), m);
}

#[test]
fn mode_and_flow_action_default_to_published_and_navigate() {
    let mut p = good();
    let o = p.as_object_mut().unwrap();
    o.remove("mode");
    o.remove("flow_action");
    let stored = RichMessage::from_json(&body(p)).unwrap().to_json();
    let params = &stored["interactive"]["action"]["parameters"];
    assert_eq!(params["mode"], "published");
    assert_eq!(params["flow_action"], "navigate");
}

#[test]
fn each_refusal_names_its_field() {
    let cases: Vec<(Value, &str)> = vec![
        (without("flow_id"), "flow_id"),
        (with("flow_name", json!("booking")), "flow_name"),
        (with("flow_cta", json!("")), "flow_cta"),
        (with("flow_cta", json!("x".repeat(21))), "flow_cta"),
        (with("flow_cta", json!("Book 📅")), "flow_cta"),
        (with("flow_token", json!("")), "flow_token"),
        (with("flow_token", json!("t".repeat(257))), "flow_token"),
        (with("flow_token", json!("a\u{7}b")), "flow_token"),
        (with("flow_action", json!("jump")), "flow_action"),
        (with("mode", json!("live")), "mode"),
        (
            with("flow_message_version", json!("2")),
            "flow_message_version",
        ),
        (without("flow_action_payload"), "screen"),
        (
            with("flow_action_payload", json!({"screen": "A", "data": {}})),
            "data",
        ),
        (
            with("flow_action_payload", json!({"screen": "A", "data": [1]})),
            "data",
        ),
        (with("flow_action", json!("data_exchange")), "screen"),
        (with("flow_id", json!("")), "flow_id"),
    ];
    for (p, field) in cases {
        assert_eq!(refused(p.clone()), field, "{p}");
    }
}

#[test]
fn data_exchange_needs_no_screen() {
    let mut p = with("flow_action", json!("data_exchange"));
    p.as_object_mut().unwrap().remove("flow_action_payload");
    assert_eq!(refused(p), "");
    assert_eq!(refused(with("flow_cta", json!("x".repeat(20)))), "");
    assert_eq!(refused(with("flow_token", json!("t".repeat(256)))), "");
    let by_name = {
        let mut p = without("flow_id");
        p["flow_name"] = json!("booking");
        p
    };
    assert_eq!(refused(by_name), "");
}

#[test]
fn a_flow_header_is_text_only_and_other_kinds_keys_are_refused() {
    let mut b = body(good());
    b["interactive"]["header"] =
        json!({"type": "image", "image": {"link": "https://x.example/a.jpg"}});
    assert_eq!(RichMessage::from_json(&b).unwrap_err().field, "header");
    let mut b = body(good());
    b["interactive"]["action"]["buttons"] = json!([]);
    assert_eq!(RichMessage::from_json(&b).unwrap_err().field, "buttons");
    // Flow parameters under a cta_url are named by the flow's own key.
    let mut b = body(good());
    b["interactive"]["type"] = json!("cta_url");
    b["interactive"]["action"]["name"] = json!("cta_url");
    assert_eq!(RichMessage::from_json(&b).unwrap_err().field, "flow_cta");
    // A CTA's parameters under a flow are named by the CTA's.
    let mut b = body(json!({"display_text": "Go", "url": "https://x.example"}));
    b["interactive"]["type"] = json!("flow");
    assert_eq!(RichMessage::from_json(&b).unwrap_err().field, "url");
    let mut b = body(good());
    b["interactive"]["action"]["name"] = json!("cta_url");
    assert_eq!(RichMessage::from_json(&b).unwrap_err().field, "action.name");
}

#[test]
fn emoji_are_told_from_letters() {
    for c in ['📅', '✅', '❤', '\u{FE0F}', '🇮'] {
        assert!(is_emoji(c), "{c}");
    }
    for c in ['a', 'é', 'ß', 'Ж', '中', '1', ' ', '-'] {
        assert!(!is_emoji(c), "{c}");
    }
}

#[test]
fn a_submission_is_read_or_kept_raw() {
    let s = read_submission(Some(&json!(
        r#"{"flow_token":"tok-9","date":"2026-12-24","party":4}"#
    )));
    assert!(!s.parse_error);
    assert_eq!(s.flow_token.as_deref(), Some("tok-9"));
    assert_eq!(s.response["party"], 4);

    for broken in ["{not json", "[1,2]", "42", "\"text\"", ""] {
        let s = read_submission(Some(&json!(broken)));
        assert!(s.parse_error, "{broken}");
        assert_eq!(s.response["raw"], broken);
        assert_eq!(s.flow_token, None);
    }
    let s = read_submission(None);
    assert!(s.parse_error);
    let s = read_submission(Some(&json!({"flow_token": "t"})));
    assert!(!s.parse_error);
    assert_eq!(s.flow_token.as_deref(), Some("t"));
    let s = read_submission(Some(&json!(r#"{"flow_token": 5}"#)));
    assert_eq!(s.flow_token, None);
}

fn printable(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9_.:-]{{1,{max}}}")).unwrap()
}

proptest! {
    /// Any well-formed flow is accepted, stored in the platform's shape and read back the same.
    #[test]
    fn any_valid_flow_round_trips(
        by_id in any::<bool>(),
        reference in printable(40),
        cta in "[a-zA-Z][a-zA-Z ]{0,19}",
        token in printable(256),
        draft in any::<bool>(),
        navigate in any::<bool>(),
        screen in "[A-Z_]{1,30}",
        data in proptest::option::of(proptest::collection::btree_map("[a-z]{1,8}", 0i64..100, 1..4)),
    ) {
        let mut p = json!({
            "flow_message_version": "3",
            "flow_token": token,
            "flow_cta": cta,
            "mode": if draft { "draft" } else { "published" },
            "flow_action": if navigate { "navigate" } else { "data_exchange" },
        });
        p[if by_id { "flow_id" } else { "flow_name" }] = json!(reference);
        if navigate {
            let mut payload = json!({"screen": screen});
            if let Some(d) = data {
                payload["data"] = json!(d);
            }
            p["flow_action_payload"] = payload;
        }
        let m = RichMessage::from_json(&body(p.clone())).unwrap();
        let stored = m.to_json();
        prop_assert_eq!(&stored, &body(p));
        prop_assert_eq!(RichMessage::from_json(&stored).unwrap(), m);
    }

    /// Any flow_cta is accepted exactly when it has 1..20 characters, is not blank and
    /// holds no emoji or control character; a refusal names `flow_cta`.
    #[test]
    fn flow_cta_is_judged_by_its_limits(cta in "(\\PC|📅|\u{7}){0,24}") {
        let expect_ok = !cta.trim().is_empty()
            && cta.chars().count() <= MAX_FLOW_CTA_CHARS
            && !cta.chars().any(|c| is_emoji(c) || c.is_control());
        let field = refused(with("flow_cta", json!(cta)));
        if expect_ok {
            prop_assert_eq!(field, "");
        } else {
            prop_assert_eq!(field, "flow_cta");
        }
    }

    /// Reading any submission text never fails, and keeps what was sent.
    #[test]
    fn any_submission_text_is_kept(raw in "\\PC{0,80}") {
        let s = read_submission(Some(&json!(raw)));
        match serde_json::from_str::<Value>(&raw) {
            Ok(Value::Object(o)) => {
                prop_assert!(!s.parse_error);
                prop_assert_eq!(s.response, o);
            }
            _ => {
                prop_assert!(s.parse_error);
                prop_assert_eq!(&s.response["raw"], &json!(raw));
            }
        }
    }
}
