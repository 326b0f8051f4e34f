//! The format values of a send: cards, the offer's expiry and the code.

use super::*;
use crate::kinds::TemplateCategory;
use crate::template_spec::formats::authentication::{Authentication, OtpType};
use crate::template_spec::formats::carousel::parse_cards;
use crate::template_spec::formats::offer::parse_offer;
use crate::template_spec::{TemplateFormat, parse_buttons};
use proptest::prelude::*;

fn carousel() -> TemplateSpec {
    let cards = parse_cards(&json!([
        {"header": {"format": "IMAGE", "example": "4::a"}, "body": "Card {{1}}",
         "buttons": [{"type": "QUICK_REPLY", "text": "More"}, {"type": "URL", "text": "Buy", "url": "https://x.example/p/{{1}}"}]},
        {"header": {"format": "IMAGE", "example": "4::b"},
         "buttons": [{"type": "QUICK_REPLY", "text": "More"}, {"type": "URL", "text": "Buy", "url": "https://x.example/p/{{1}}"}]},
    ]))
    .unwrap();
    let spec = TemplateSpec {
        body: "Hi {{1}}, our picks".into(),
        format: TemplateFormat::Carousel(cards),
        ..Default::default()
    };
    spec.validate(TemplateCategory::Marketing).unwrap();
    spec
}

fn offer(has_expiration: bool) -> TemplateSpec {
    let spec = TemplateSpec {
        body: "Use code {{1}}".into(),
        buttons: parse_buttons(&json!([
            {"type": "COPY_CODE", "text": "Copy", "example": "SAVE10"},
            {"type": "URL", "text": "Shop", "url": "https://x.example/s"},
        ]))
        .unwrap(),
        format: TemplateFormat::LimitedTimeOffer(
            parse_offer(&json!({"text": "Ends soon", "has_expiration": has_expiration})).unwrap(),
        ),
        ..Default::default()
    };
    spec.validate(TemplateCategory::Marketing).unwrap();
    spec
}

fn auth() -> TemplateSpec {
    Authentication {
        otp_type: OtpType::CopyCode,
        code_expiration_minutes: Some(10),
        add_security_recommendation: true,
        package_name: None,
        signature_hash: None,
    }
    .into_spec()
}

fn cards() -> Value {
    json!([
        {"header": {"link": "https://x.example/1.jpg"}, "variables": ["A"], "buttons": [{"payload": "more-1"}, {"text": "p1"}]},
        {"header": {"id": "media-2"}, "buttons": [null, {"text": "p2"}]},
    ])
}

#[test]
fn a_carousel_send_resolves_each_card_and_again_to_itself() {
    let spec = carousel();
    let out = resolve(&spec, &["Ana".into()], &[carousel_component(&cards())]).unwrap();
    assert_eq!(out[0]["type"], "body");
    let c = &out[1];
    assert_eq!(c["type"], "carousel");
    assert_eq!(c["cards"][0]["card_index"], 0);
    assert_eq!(
        c["cards"][0]["components"][0],
        json!({"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.example/1.jpg"}}]})
    );
    assert_eq!(c["cards"][1]["components"][1]["sub_type"], "url");
    assert_eq!(resolve(&spec, &[], &out).unwrap(), out);
}

#[test]
fn a_carousel_send_names_what_is_wrong() {
    let spec = carousel();
    let e = resolve(&spec, &["Ana".into()], &[]).unwrap_err();
    assert!(e.0.contains("`cards` is required"), "{e}");
    let mut bad = cards();
    bad[1]["header"] = json!({"link": "ftp://x"});
    let e = resolve(&spec, &["Ana".into()], &[carousel_component(&bad)]).unwrap_err();
    assert!(e.0.starts_with("cards[1]:") && e.0.contains("link"), "{e}");
    let e = resolve(
        &spec,
        &["Ana".into()],
        &[carousel_component(&json!([cards()[0]]))],
    )
    .unwrap_err();
    assert!(
        e.0.contains("has 1 entries") && e.0.contains("2 cards"),
        "{e}"
    );
    let mut missing = cards();
    missing[0]["variables"] = json!([]);
    let e = resolve(&spec, &["Ana".into()], &[carousel_component(&missing)]).unwrap_err();
    assert!(e.0.starts_with("cards[0]:"), "{e}");
    let e = resolve(&offer(true), &["C".into()], &[carousel_component(&cards())]).unwrap_err();
    assert!(e.0.contains("`cards` is only for a carousel"), "{e}");
}

fn offer_buttons() -> Vec<Value> {
    vec![
        json!({"type": "button", "sub_type": "copy_code", "index": 0, "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]}),
    ]
}

#[test]
fn an_offer_send_takes_its_expiry_when_it_has_one() {
    let spec = offer(true);
    let mut given = offer_buttons();
    given.push(offer_component(1_900_000_000_000));
    let out = resolve(&spec, &["SAVE10".into()], &given).unwrap();
    assert_eq!(out[1]["type"], "limited_time_offer");
    assert_eq!(
        out[1]["parameters"][0]["limited_time_offer"]["expiration_time_ms"],
        1_900_000_000_000i64
    );
    assert_eq!(resolve(&spec, &[], &out).unwrap(), out);
    let e = resolve(&spec, &["SAVE10".into()], &offer_buttons()).unwrap_err();
    assert!(e.0.contains("`offer_expires_at` is required"), "{e}");
    let e = resolve(&offer(false), &["SAVE10".into()], &given).unwrap_err();
    assert!(e.0.contains("without has_expiration"), "{e}");
    assert!(resolve(&offer(false), &["SAVE10".into()], &offer_buttons()).is_ok());
    let e = resolve(
        &carousel(),
        &["Ana".into()],
        &[offer_component(5), carousel_component(&cards())],
    )
    .unwrap_err();
    assert!(e.0.contains("`offer_expires_at` is only for"), "{e}");
}

#[test]
fn an_authentication_send_takes_the_code_once() {
    let spec = auth();
    let out = resolve(&spec, &[], &[code_component("123456")]).unwrap();
    assert_eq!(
        json!(out),
        json!([
            {"type": "body", "parameters": [{"type": "text", "text": "123456"}]},
            {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "123456"}]},
        ])
    );
    assert_eq!(resolve(&spec, &[], &out).unwrap(), out);
    assert!(
        resolve(&spec, &[], &[])
            .unwrap_err()
            .0
            .contains("`code` is required")
    );
    assert!(
        resolve(&spec, &[], &[code_component("1234567890123456")])
            .unwrap_err()
            .0
            .contains("1 to 15")
    );
    assert!(
        resolve(&spec, &["1".into()], &[code_component("12")])
            .unwrap_err()
            .0
            .contains("once")
    );
    let e = resolve(&offer(false), &["X".into()], &[code_component("12")]).unwrap_err();
    assert!(e.0.contains("`code` is only for an AUTHENTICATION"), "{e}");
}

proptest! {
    #[test]
    fn code_lengths_are_judged_by_characters(code in "\\PC{0,20}") {
        let n = code.chars().count();
        let ok = resolve(&auth(), &[], &[code_component(&code)]).is_ok();
        if ok {
            prop_assert!((1..=15).contains(&n));
        }
        if (1..=15).contains(&n) && code.chars().all(|c| c.is_ascii_alphanumeric()) {
            prop_assert!(ok);
        }
    }

    #[test]
    fn card_values_never_panic_and_resolve_to_themselves(
        link in "https://[a-z]{1,8}\\.example/[a-z0-9]{0,8}",
        v in "[A-Za-z0-9]{1,12}",
        payload in "\\PC{0,20}",
        drop_header in any::<bool>(),
    ) {
        let mut given = cards();
        given[0]["header"] = json!({"link": link});
        given[0]["variables"] = json!([v]);
        given[0]["buttons"][0] = json!({"payload": payload});
        if drop_header {
            given[1].as_object_mut().unwrap().remove("header");
        }
        match resolve(&carousel(), &["Ana".into()], &[carousel_component(&given)]) {
            Ok(out) => {
                prop_assert!(!drop_header);
                prop_assert_eq!(resolve(&carousel(), &[], &out).unwrap(), out);
            }
            Err(e) => prop_assert!(e.0.contains("cards["), "{}", e),
        }
    }
}
