//! The formats' create-time rules: every refusal names its field.

use super::authentication::{
    Authentication, OtpType, PRESET_BODY, is_package_name, is_signature_hash,
};
use super::carousel::parse_cards;
use super::offer::parse_offer;
use super::*;
use crate::template_spec::{Header, HeaderFormat, parse_buttons};
use proptest::prelude::*;
use serde_json::json;

fn card(format: &str, buttons: Value) -> Value {
    json!({"header": {"format": format, "example": "4::h"}, "body": "Card {{1}}", "buttons": buttons})
}

fn two_buttons() -> Value {
    json!([{"type": "QUICK_REPLY", "text": "More"}, {"type": "URL", "text": "Buy", "url": "https://x.example/{{1}}"}])
}

fn carousel_spec(cards: Value) -> Result<TemplateSpec, SpecError> {
    Ok(TemplateSpec {
        body: "Our picks for {{1}}".into(),
        format: TemplateFormat::Carousel(parse_cards(&cards)?),
        ..Default::default()
    })
}

fn field_of(r: Result<(), SpecError>) -> String {
    r.unwrap_err().field
}

#[test]
fn a_carousel_round_trips_through_its_components() {
    let spec = carousel_spec(json!([
        card("IMAGE", two_buttons()),
        card("IMAGE", two_buttons())
    ]))
    .unwrap();
    spec.validate(TemplateCategory::Marketing).unwrap();
    let components = spec.to_components();
    assert_eq!(components[1]["type"], "CAROUSEL");
    assert_eq!(
        components[1]["cards"][0]["components"][0],
        json!({"type": "HEADER", "format": "IMAGE", "example": {"header_handle": ["4::h"]}})
    );
    let back = TemplateSpec::from_components(&json!(components), None, "").unwrap();
    assert_eq!(back, spec);
    assert!(!spec.is_body_only());
}

#[test]
fn a_broken_carousel_names_the_field() {
    let ok = || json!([card("IMAGE", two_buttons()), card("IMAGE", two_buttons())]);
    let check = |cards: Value| {
        field_of(carousel_spec(cards).and_then(|s| s.validate(TemplateCategory::Marketing)))
    };
    assert_eq!(check(json!([card("IMAGE", two_buttons())])), "cards");
    assert_eq!(
        check(json!(vec![card("IMAGE", two_buttons()); 11])),
        "cards"
    );
    assert_eq!(
        check(json!([
            card("IMAGE", two_buttons()),
            card("VIDEO", two_buttons())
        ])),
        "cards[1].header.format"
    );
    assert_eq!(
        check(json!([
            card("TEXT", two_buttons()),
            card("TEXT", two_buttons())
        ])),
        "cards[0].header.format"
    );
    let phone = json!([{"type": "PHONE_NUMBER", "text": "Call", "phone_number": "+1555"}]);
    assert_eq!(
        check(json!([card("IMAGE", phone.clone()), card("IMAGE", phone)])),
        "cards[0].buttons[0].type"
    );
    let swapped = json!([{"type": "URL", "text": "Buy", "url": "https://x.example/{{1}}"}, {"type": "QUICK_REPLY", "text": "More"}]);
    assert_eq!(
        check(json!([
            card("IMAGE", two_buttons()),
            card("IMAGE", swapped)
        ])),
        "cards[1].buttons[0].type"
    );
    let one = json!([{"type": "QUICK_REPLY", "text": "More"}]);
    assert_eq!(
        check(json!([card("IMAGE", two_buttons()), card("IMAGE", one)])),
        "cards[1].buttons"
    );
    assert_eq!(
        check(json!([card("IMAGE", json!([])), card("IMAGE", json!([]))])),
        "cards[0].buttons"
    );
    let mut no_example = ok();
    no_example[1]["header"] = json!({"format": "IMAGE"});
    assert_eq!(check(no_example), "cards[1].header.example");
    let mut long = ok();
    long[0]["body"] = json!("x".repeat(161));
    assert_eq!(check(long), "cards[0].body");
    let mut bad_url = ok();
    bad_url[1]["buttons"][1]["url"] = json!("ftp://x");
    assert_eq!(check(bad_url), "cards[1].buttons[1].url");
    let mut unknown = ok();
    unknown[0]["footer"] = json!("x");
    assert_eq!(field_of(parse_cards(&unknown).map(|_| ())), "cards[0]");
    let spec = carousel_spec(ok()).unwrap();
    assert_eq!(
        field_of(spec.validate(TemplateCategory::Utility)),
        "category"
    );
    let with_header = TemplateSpec {
        header: Some(Header {
            format: HeaderFormat::Image,
            text: None,
        }),
        ..spec.clone()
    };
    assert_eq!(
        field_of(with_header.validate(TemplateCategory::Marketing)),
        "header"
    );
    let no_body = TemplateSpec {
        body: String::new(),
        ..spec
    };
    assert_eq!(
        field_of(no_body.validate(TemplateCategory::Marketing)),
        "body_text"
    );
}

fn offer_spec(offer: Value, buttons: Value) -> Result<TemplateSpec, SpecError> {
    Ok(TemplateSpec {
        body: "Use {{1}} today".into(),
        buttons: parse_buttons(&buttons)?,
        format: TemplateFormat::LimitedTimeOffer(parse_offer(&offer)?),
        ..Default::default()
    })
}

fn offer_buttons() -> Value {
    json!([{"type": "COPY_CODE", "text": "Copy", "example": "SAVE"}, {"type": "URL", "text": "Shop", "url": "https://x.example"}])
}

#[test]
fn an_offer_round_trips_and_names_its_fields() {
    let spec = offer_spec(
        json!({"text": "Ends soon!", "has_expiration": true}),
        offer_buttons(),
    )
    .unwrap();
    spec.validate(TemplateCategory::Marketing).unwrap();
    let components = spec.to_components();
    assert_eq!(components[0]["type"], "LIMITED_TIME_OFFER");
    assert_eq!(
        TemplateSpec::from_components(&json!(components), None, "").unwrap(),
        spec
    );

    assert_eq!(
        field_of(spec.validate(TemplateCategory::Utility)),
        "category"
    );
    let footer = TemplateSpec {
        footer: Some("x".into()),
        ..spec.clone()
    };
    assert_eq!(
        field_of(footer.validate(TemplateCategory::Marketing)),
        "footer"
    );
    let long = offer_spec(
        json!({"text": "x".repeat(17), "has_expiration": false}),
        offer_buttons(),
    )
    .unwrap();
    assert_eq!(
        field_of(long.validate(TemplateCategory::Marketing)),
        "limited_time_offer.text"
    );
    let url_only = json!([{"type": "URL", "text": "Shop", "url": "https://x.example"}]);
    let no_code = offer_spec(
        json!({"text": "Ends", "has_expiration": true}),
        url_only.clone(),
    )
    .unwrap();
    assert_eq!(
        field_of(no_code.validate(TemplateCategory::Marketing)),
        "buttons"
    );
    offer_spec(json!({"text": "Ends", "has_expiration": false}), url_only)
        .unwrap()
        .validate(TemplateCategory::Marketing)
        .unwrap();
    let code_only = json!([{"type": "COPY_CODE", "text": "Copy", "example": "SAVE"}]);
    let no_url = offer_spec(json!({"text": "Ends"}), code_only).unwrap();
    assert_eq!(
        field_of(no_url.validate(TemplateCategory::Marketing)),
        "buttons"
    );
    let late_code = json!([{"type": "URL", "text": "Shop", "url": "https://x.example"}, {"type": "COPY_CODE", "text": "Copy", "example": "SAVE"}]);
    let late = offer_spec(json!({"text": "Ends"}), late_code).unwrap();
    assert_eq!(
        field_of(late.validate(TemplateCategory::Marketing)),
        "buttons[1].type"
    );
    assert_eq!(
        field_of(parse_offer(&json!({"text": 3})).map(|_| ())),
        "limited_time_offer.text"
    );
    assert_eq!(
        field_of(parse_offer(&json!({"text": "x", "has_expiration": 1})).map(|_| ())),
        "limited_time_offer.has_expiration"
    );
}

fn auth(
    otp: OtpType,
    package: Option<&str>,
    hash: Option<&str>,
    minutes: Option<u32>,
) -> TemplateSpec {
    Authentication {
        otp_type: otp,
        code_expiration_minutes: minutes,
        add_security_recommendation: true,
        package_name: package.map(Into::into),
        signature_hash: hash.map(Into::into),
    }
    .into_spec()
}

#[test]
fn an_authentication_template_follows_the_platform() {
    let one_tap = auth(
        OtpType::OneTap,
        Some("com.example.app"),
        Some("K8a/AINcGX7"),
        Some(10),
    );
    one_tap.validate(TemplateCategory::Authentication).unwrap();
    assert_eq!(one_tap.body, PRESET_BODY);
    let components = one_tap.to_components();
    assert_eq!(
        json!(components),
        json!([
            {"type": "BODY", "add_security_recommendation": true},
            {"type": "FOOTER", "code_expiration_minutes": 10},
            {"type": "BUTTONS", "buttons": [{"type": "OTP", "otp_type": "ONE_TAP",
                "supported_apps": [{"package_name": "com.example.app", "signature_hash": "K8a/AINcGX7"}]}]},
        ])
    );
    assert_eq!(
        TemplateSpec::from_components(&json!(components), None, PRESET_BODY).unwrap(),
        one_tap
    );

    let v = |s: TemplateSpec| field_of(s.validate(TemplateCategory::Authentication));
    assert_eq!(
        v(auth(OtpType::ZeroTap, None, Some("K8a/AINcGX7"), None)),
        "package_name"
    );
    assert_eq!(
        v(auth(OtpType::OneTap, Some("com.example.app"), None, None)),
        "signature_hash"
    );
    assert_eq!(
        v(auth(
            OtpType::OneTap,
            Some("example"),
            Some("K8a/AINcGX7"),
            None
        )),
        "package_name"
    );
    assert_eq!(
        v(auth(
            OtpType::OneTap,
            Some("com.example.app"),
            Some("short"),
            None
        )),
        "signature_hash"
    );
    assert_eq!(
        v(auth(OtpType::CopyCode, None, None, Some(91))),
        "code_expiration_minutes"
    );
    assert_eq!(
        v(auth(OtpType::CopyCode, None, None, Some(0))),
        "code_expiration_minutes"
    );
    assert_eq!(
        v(auth(OtpType::CopyCode, Some("com.example.app"), None, None)),
        "package_name"
    );
    let copy = auth(OtpType::CopyCode, None, None, None);
    assert_eq!(
        field_of(copy.validate(TemplateCategory::Marketing)),
        "category"
    );
    let footer = TemplateSpec {
        footer: Some("x".into()),
        ..copy
    };
    assert_eq!(v(footer), "footer");
    assert!(OtpType::parse("two_tap").is_err());
}

proptest! {
    #[test]
    fn package_names_match_the_android_rule(s in "[a-zA-Z0-9_.]{0,30}") {
        let parts: Vec<&str> = s.split('.').collect();
        let want = parts.len() >= 2 && parts.iter().all(|p| {
            p.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        });
        prop_assert_eq!(is_package_name(&s), want);
    }

    #[test]
    fn signature_hashes_have_eleven_base64_characters(s in "[A-Za-z0-9+/=_-]{0,14}") {
        let want = s.len() == 11 && !s.contains(['=', '_', '-']);
        prop_assert_eq!(is_signature_hash(&s), want);
    }

    #[test]
    fn a_carousel_takes_two_to_ten_cards(n in 0usize..14, video in any::<bool>()) {
        let format = if video { "VIDEO" } else { "IMAGE" };
        let spec = carousel_spec(json!(vec![card(format, two_buttons()); n])).unwrap();
        let r = spec.validate(TemplateCategory::Marketing);
        prop_assert_eq!(r.is_ok(), (2..=10).contains(&n));
        if (2..=10).contains(&n) {
            let back = TemplateSpec::from_components(&json!(spec.to_components()), None, "").unwrap();
            prop_assert_eq!(back, spec);
        }
    }

    #[test]
    fn an_offer_line_has_one_to_sixteen_characters(text in "[a-zA-Z !]{0,20}") {
        let spec = offer_spec(json!({"text": text, "has_expiration": true}), offer_buttons()).unwrap();
        let ok = spec.validate(TemplateCategory::Marketing).is_ok();
        prop_assert_eq!(ok, !text.trim().is_empty() && text.chars().count() <= 16);
    }

    #[test]
    fn parsing_any_cards_never_panics(v in "\\PC{0,12}", n in 0usize..4) {
        let cards = json!(vec![json!({"header": {"format": v.clone(), "example": v.clone()}, "body": v.clone(), "buttons": [{"type": v.clone(), "text": v.clone()}]}); n]);
        if let Ok(c) = parse_cards(&cards) {
            let spec = TemplateSpec { body: "b".into(), format: TemplateFormat::Carousel(c), ..Default::default() };
            let _ = spec.validate(TemplateCategory::Marketing);
        }
    }
}
