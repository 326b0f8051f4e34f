//! Edge and property tests of template_spec.
use super::*;
use proptest::prelude::*;

fn spec() -> TemplateSpec {
    TemplateSpec {
        body: "Hi {{1}}".into(),
        ..Default::default()
    }
}

fn button(kind: &str, extra: Value) -> Value {
    let mut o = json!({"type": kind, "text": "Go"});
    for (k, v) in extra.as_object().unwrap() {
        o[k] = v.clone();
    }
    o
}

fn with_buttons(buttons: Value) -> Result<(), SpecError> {
    let mut s = spec();
    s.buttons = parse_buttons(&buttons)?;
    s.validate(TemplateCategory::Marketing)
}

#[test]
fn ten_buttons_pass_eleven_fail() {
    let ten: Vec<Value> = (0..10).map(|_| button("QUICK_REPLY", json!({}))).collect();
    assert!(with_buttons(json!(ten)).is_ok());
    let eleven: Vec<Value> = (0..11).map(|_| button("QUICK_REPLY", json!({}))).collect();
    let e = with_buttons(json!(eleven)).unwrap_err();
    assert_eq!(e.field, "buttons");
    assert!(
        e.problem.contains("11") && e.problem.contains("at most 10"),
        "{e}"
    );
}

#[test]
fn two_url_buttons_pass_three_fail() {
    let url = |n: u8| button("URL", json!({"url": format!("https://x.example/{n}")}));
    assert!(with_buttons(json!([url(1), url(2)])).is_ok());
    let e = with_buttons(json!([url(1), url(2), url(3)])).unwrap_err();
    assert!(e.to_string().contains("3 URL buttons; at most 2"), "{e}");
    let phone = || button("PHONE_NUMBER", json!({"phone_number": "+628123"}));
    assert!(with_buttons(json!([phone()])).is_ok());
    assert!(
        with_buttons(json!([phone(), phone()]))
            .unwrap_err()
            .to_string()
            .contains("at most 1")
    );
}

#[test]
fn quick_replies_are_grouped() {
    let qr = || button("QUICK_REPLY", json!({}));
    let url = || button("URL", json!({"url": "https://x.example"}));
    assert!(with_buttons(json!([qr(), qr(), url()])).is_ok());
    assert!(with_buttons(json!([url(), qr(), qr()])).is_ok());
    let e = with_buttons(json!([qr(), url(), qr()])).unwrap_err();
    assert!(e.problem.contains("together"), "{e}");
}

#[test]
fn url_variable_only_at_the_end() {
    assert!(
        with_buttons(json!([button(
            "URL",
            json!({"url": "https://x.example/t/{{1}}"})
        )]))
        .is_ok()
    );
    for bad in [
        "https://x.example/{{1}}/t",
        "https://x.example/{{2}}",
        "https://x/{{1}}{{1}}",
        "ftp://x",
    ] {
        let e = with_buttons(json!([button("URL", json!({"url": bad}))])).unwrap_err();
        assert_eq!(e.field, "buttons[0].url", "{bad}");
    }
    let e = with_buttons(json!([{"type": "URL", "text": "x"}])).unwrap_err();
    assert_eq!(e.field, "buttons[0].url");
}

#[test]
fn button_fields() {
    let long = "a".repeat(26);
    let e = with_buttons(json!([{"type": "QUICK_REPLY", "text": long}])).unwrap_err();
    assert!(e.to_string().contains("26 characters; at most 25"), "{e}");
    assert!(with_buttons(json!([{"type": "QUICK_REPLY", "text": "a".repeat(25)}])).is_ok());
    assert!(with_buttons(json!([{"type": "BOGUS", "text": "x"}])).is_err());
    assert!(with_buttons(json!([button("COPY_CODE", json!({}))])).is_err());
    assert!(with_buttons(json!([button("COPY_CODE", json!({"example": "SAVE10"}))])).is_ok());
    assert!(
        with_buttons(json!([button(
            "PHONE_NUMBER",
            json!({"phone_number": "call me"})
        )]))
        .is_err()
    );
    assert!(with_buttons(json!({"type": "URL"})).is_err());
    assert!(with_buttons(json!([{"type": "QUICK_REPLY", "text": "x", "colour": 1}])).is_err());
}

#[test]
fn otp_only_in_authentication() {
    let otp = json!([{"type": "OTP", "otp_type": "COPY_CODE"}]);
    let e = with_buttons(otp.clone()).unwrap_err();
    assert!(e.problem.contains("AUTHENTICATION"), "{e}");
    let mut s = spec();
    s.buttons = parse_buttons(&otp).unwrap();
    assert!(s.validate(TemplateCategory::Authentication).is_ok());
    s.buttons = parse_buttons(&json!([{"type": "QUICK_REPLY", "text": "x"}])).unwrap();
    assert!(s.validate(TemplateCategory::Authentication).is_err());
    s.buttons = parse_buttons(&json!([{"type": "OTP", "otp_type": "MAGIC"}])).unwrap();
    assert!(s.validate(TemplateCategory::Authentication).is_err());
}

#[test]
fn header_text_limits() {
    let mut s = spec();
    s.header = Some(parse_header(&json!({"format": "TEXT", "text": "a".repeat(60)})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    s.header = Some(parse_header(&json!({"format": "TEXT", "text": "a".repeat(61)})).unwrap());
    let e = s.validate(TemplateCategory::Utility).unwrap_err();
    assert_eq!(e.field, "header.text");
    assert!(e.problem.contains("61 characters; at most 60"), "{e}");
    s.header = Some(parse_header(&json!({"format": "text", "text": "Order {{1}}"})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    assert_eq!(s.header_variable(), Some(None));
    s.header = Some(parse_header(&json!({"format": "TEXT", "text": "{{1}} {{1}}"})).unwrap());
    assert!(
        s.validate(TemplateCategory::Utility)
            .unwrap_err()
            .problem
            .contains("at most 1")
    );
    s.header = Some(parse_header(&json!({"format": "TEXT", "text": "{{2}}"})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_err());
    s.header = Some(parse_header(&json!({"format": "TEXT"})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_err());
    s.header = Some(parse_header(&json!({"format": "IMAGE", "text": "x"})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_err());
    s.header = Some(parse_header(&json!({"format": "IMAGE"})).unwrap());
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    assert_eq!(s.header_variable(), None);
    assert!(parse_header(&json!({"format": "GIF"})).is_err());
    assert!(parse_header(&json!("TEXT")).is_err());
    assert!(parse_header(&json!({})).is_err());
}

#[test]
fn footer_limits() {
    let mut s = spec();
    s.footer = Some("f".repeat(60));
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    s.footer = Some("f".repeat(61));
    let e = s.validate(TemplateCategory::Utility).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("footer has 61 characters; at most 60"),
        "{e}"
    );
    s.footer = Some("Hi {{1}}".into());
    assert!(s.validate(TemplateCategory::Utility).is_err());
}

#[test]
fn named_parameters() {
    let mut s = TemplateSpec {
        parameter_format: ParameterFormat::Named,
        body: "Hi {{first_name}}, order {{order_id}} for {{first_name}}".into(),
        ..Default::default()
    };
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    assert_eq!(named_params(&s.body), ["first_name", "order_id"]);
    s.body = "Hi {{First}}".into();
    let e = s.validate(TemplateCategory::Utility).unwrap_err();
    assert!(e.problem.contains("lower-case"), "{e}");
    s.body = "Hi {{1}}".into();
    assert!(
        s.validate(TemplateCategory::Utility)
            .unwrap_err()
            .problem
            .contains("named")
    );
    s.body = "Hi {{first-name}}".into();
    assert!(s.validate(TemplateCategory::Utility).is_err());
    s.body = "Hi {{ok}}".into();
    s.header = Some(Header {
        format: HeaderFormat::Text,
        text: Some("For {{who}}".into()),
    });
    assert!(s.validate(TemplateCategory::Utility).is_ok());
    assert_eq!(s.header_variable(), Some(Some("who".into())));
    assert!(ParameterFormat::parse(Some("NAMED")).is_ok());
    assert!(ParameterFormat::parse(Some("numbers")).is_err());
    assert!(
        is_param_name("a_1") && !is_param_name("1a") && !is_param_name("") && !is_param_name("aB")
    );
}

#[test]
fn components_round_trip() {
    let s = TemplateSpec {
        parameter_format: ParameterFormat::Positional,
        header: Some(Header {
            format: HeaderFormat::Image,
            text: None,
        }),
        body: "Order {{1}} ships".into(),
        footer: Some("Reply STOP to opt out".into()),
        buttons: parse_buttons(&json!([
            {"type": "URL", "text": "Track", "url": "https://x.example/t/{{1}}"},
            {"type": "QUICK_REPLY", "text": "Thanks"},
            {"type": "COPY_CODE", "text": "Copy", "example": "SAVE10"},
        ]))
        .unwrap(),
        ..Default::default()
    };
    s.validate(TemplateCategory::Marketing).unwrap();
    let c = json!(s.to_components());
    assert_eq!(c[0]["type"], "HEADER");
    assert_eq!(c[1]["example"]["body_text"], json!([["example1"]]));
    assert_eq!(
        c[3]["buttons"][0]["example"],
        json!(["https://x.example/t/example"])
    );
    let back = TemplateSpec::from_components(&c, Some("positional"), "").unwrap();
    assert_eq!(back, s);
    let none = TemplateSpec::from_components(&Value::Null, None, "Hi {{1}}").unwrap();
    assert!(none.is_body_only());
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC{0,80}", n in 0usize..14) {
        let _ = tokens(&s);
        let _ = named_params(&s);
        let buttons: Vec<Value> = (0..n).map(|i| json!({"type": if i % 2 == 0 { "URL" } else { "QUICK_REPLY" }, "text": s.clone(), "url": s.clone()})).collect();
        let _ = with_buttons(json!(buttons));
        let mut sp = spec();
        sp.header = Some(Header { format: HeaderFormat::Text, text: Some(s.clone()) });
        let _ = sp.validate(TemplateCategory::Marketing);
    }

    #[test]
    fn button_count_limit_is_exact(n in 0usize..20) {
        let qr: Vec<Value> = (0..n).map(|_| json!({"type": "QUICK_REPLY", "text": "ok"})).collect();
        prop_assert_eq!(with_buttons(json!(qr)).is_ok(), n <= MAX_BUTTONS);
    }

    #[test]
    fn header_length_limit_is_exact(n in 1usize..90) {
        let mut s = spec();
        s.header = Some(Header { format: HeaderFormat::Text, text: Some("é".repeat(n)) });
        prop_assert_eq!(s.validate(TemplateCategory::Utility).is_ok(), n <= MAX_HEADER_CHARS);
    }

    #[test]
    fn valid_specs_survive_the_store(
        qr in 0usize..4, urls in 0usize..3, footer in proptest::option::of("[a-z ]{1,60}"),
    ) {
        let mut buttons: Vec<Value> = (0..qr).map(|i| json!({"type": "QUICK_REPLY", "text": format!("q{i}")})).collect();
        buttons.extend((0..urls).map(|i| json!({"type": "URL", "text": "t", "url": format!("https://x.example/{i}/{{{{1}}}}")})));
        let s = TemplateSpec {
            body: "Hi {{1}}".into(),
            footer: footer.filter(|f| !f.trim().is_empty()),
            buttons: parse_buttons(&json!(buttons)).unwrap(),
            ..Default::default()
        };
        prop_assert!(s.validate(TemplateCategory::Marketing).is_ok());
        let back = TemplateSpec::from_components(&json!(s.to_components()), Some("positional"), "").unwrap();
        prop_assert_eq!(back, s);
    }
}
