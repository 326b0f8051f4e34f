//! resolve's tests: what each part of a template takes, and what a send may give.
use super::*;
use crate::template_spec::{Header, parse_buttons};
use proptest::prelude::*;

fn full() -> TemplateSpec {
    TemplateSpec {
        parameter_format: ParameterFormat::Positional,
        header: Some(Header {
            format: HeaderFormat::Image,
            text: None,
        }),
        body: "Order {{1}} ships {{2}}".into(),
        footer: Some("Thanks".into()),
        buttons: parse_buttons(&json!([
            {"type": "URL", "text": "Track", "url": "https://x.example/t/{{1}}"},
            {"type": "PHONE_NUMBER", "text": "Call", "phone_number": "+6212"},
            {"type": "COPY_CODE", "text": "Copy", "example": "SAVE"},
            {"type": "QUICK_REPLY", "text": "Ok"},
        ]))
        .unwrap(),
        ..Default::default()
    }
}

fn image() -> Value {
    json!({"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.example/a.jpg"}}]})
}
fn url_button() -> Value {
    json!({"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]})
}
fn code_button() -> Value {
    json!({"type": "button", "sub_type": "copy_code", "index": 2, "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]})
}
fn vars() -> Vec<String> {
    vec!["A1".into(), "today".into()]
}

#[test]
fn a_full_send_resolves_in_platform_order() {
    let out = resolve(&full(), &vars(), &[code_button(), url_button(), image()]).unwrap();
    assert_eq!(
        json!(out),
        json!([
            {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://x.example/a.jpg"}}]},
            {"type": "body", "parameters": [{"type": "text", "text": "A1"}, {"type": "text", "text": "today"}]},
            {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]},
            {"type": "button", "sub_type": "copy_code", "index": "2", "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]},
        ])
    );
    // The same, with the body as a component, resolves the same.
    let body = json!({"type": "body", "parameters": [{"type": "text", "text": "A1"}, {"type": "text", "text": "today"}]});
    assert_eq!(
        resolve(&full(), &[], &[image(), body, url_button(), code_button()]).unwrap(),
        out
    );
    // Resolving the output again gives the output (what the dispatcher sends is what was checked).
    assert_eq!(resolve(&full(), &[], &out).unwrap(), out);
}

#[test]
fn what_is_missing_is_named() {
    let e = resolve(&full(), &vars(), &[url_button(), code_button()]).unwrap_err();
    assert!(e.0.contains("header is IMAGE"), "{e}");
    let e = resolve(&full(), &vars(), &[image(), code_button()]).unwrap_err();
    assert!(
        e.0.contains("button 0 (URL)") && e.0.contains("{{1}}"),
        "{e}"
    );
    let e = resolve(&full(), &vars(), &[image(), url_button()]).unwrap_err();
    assert!(e.0.contains("button 2 (COPY_CODE)"), "{e}");
    let e = resolve(
        &full(),
        &vars()[..1],
        &[image(), url_button(), code_button()],
    )
    .unwrap_err();
    assert!(e.0.contains("exactly 2"), "{e}");
    let text_header = json!({"type": "header", "parameters": [{"type": "text", "text": "x"}]});
    let e = resolve(
        &full(),
        &vars(),
        &[text_header, url_button(), code_button()],
    )
    .unwrap_err();
    assert!(e.0.contains("must be {\"type\": \"image\""), "{e}");
    let no_link = json!({"type": "header", "parameters": [{"type": "image", "image": {}}]});
    assert!(resolve(&full(), &vars(), &[no_link, url_button(), code_button()]).is_err());
    let phone = json!({"type": "button", "sub_type": "phone_number", "index": 1, "parameters": []});
    assert!(
        resolve(
            &full(),
            &vars(),
            &[image(), url_button(), code_button(), phone]
        )
        .unwrap_err()
        .0
        .contains("takes no parameter")
    );
    let wrong = json!({"type": "button", "sub_type": "quick_reply", "index": 0, "parameters": []});
    assert!(
        resolve(&full(), &vars(), &[image(), wrong, code_button()])
            .unwrap_err()
            .0
            .contains("sub_type must be \"url\"")
    );
    let out_of_range = json!({"type": "button", "sub_type": "url", "index": 9, "parameters": []});
    assert!(
        resolve(
            &full(),
            &vars(),
            &[image(), url_button(), code_button(), out_of_range]
        )
        .is_err()
    );
    let body = json!({"type": "body", "parameters": []});
    assert!(
        resolve(
            &TemplateSpec {
                body: "Hi {{1}}".into(),
                ..Default::default()
            },
            &vars()[..1],
            &[body]
        )
        .unwrap_err()
        .0
        .contains("not both")
    );
}

#[test]
fn body_only_templates_behave_as_before() {
    let spec = TemplateSpec {
        body: "Hi {{1}}".into(),
        ..Default::default()
    };
    assert_eq!(
        json!(resolve(&spec, &["Ana".into()], &[]).unwrap()),
        json!([{"type": "body", "parameters": [{"type": "text", "text": "Ana"}]}])
    );
    let plain = TemplateSpec {
        body: "Hello".into(),
        ..Default::default()
    };
    assert!(resolve(&plain, &[], &[]).unwrap().is_empty());
    assert_eq!(
        resolve(&spec, &[], &[]).unwrap_err().0,
        validate_variables("Hi {{1}}", &[]).unwrap_err().to_string()
    );
    assert!(
        resolve(&spec, &[], &[image()])
            .unwrap_err()
            .0
            .contains("no header")
    );
}

#[test]
fn named_and_positional_do_not_mix() {
    let named = TemplateSpec {
        parameter_format: ParameterFormat::Named,
        body: "Hi {{first_name}}, order {{order_id}}".into(),
        ..Default::default()
    };
    let values = vec![
        ("order_id".to_owned(), "7".to_owned()),
        ("first_name".to_owned(), "Ana".to_owned()),
    ];
    let out = resolve(&named, &[], &[named_body_component(&values)]).unwrap();
    assert_eq!(out[0]["parameters"][0]["parameter_name"], "first_name");
    let e = resolve(&named, &["Ana".into(), "7".into()], &[]).unwrap_err();
    assert!(
        e.0.contains("named parameters ({{first_name}}, {{order_id}})"),
        "{e}"
    );
    let e = resolve(&named, &[], &[named_body_component(&values[..1])]).unwrap_err();
    assert!(e.0.contains("\"first_name\" is missing"), "{e}");
    let extra = [values.clone(), vec![("x".to_owned(), "1".to_owned())]].concat();
    assert!(
        resolve(&named, &[], &[named_body_component(&extra)])
            .unwrap_err()
            .0
            .contains("no parameter {{x}}")
    );
    let positional = TemplateSpec {
        body: "Hi {{1}}".into(),
        ..Default::default()
    };
    let e = resolve(&positional, &[], &[named_body_component(&values)]).unwrap_err();
    assert!(e.0.contains("positional"), "{e}");
}

#[test]
fn named_text_header() {
    let spec = TemplateSpec {
        parameter_format: ParameterFormat::Named,
        header: Some(Header {
            format: HeaderFormat::Text,
            text: Some("For {{who}}".into()),
        }),
        body: "Hi".into(),
        ..Default::default()
    };
    let h = json!({"type": "header", "parameters": [{"type": "text", "parameter_name": "who", "text": "Ana"}]});
    assert!(resolve(&spec, &[], &[h]).is_ok());
    let h = json!({"type": "header", "parameters": [{"type": "text", "text": "Ana"}]});
    assert!(
        resolve(&spec, &[], &[h])
            .unwrap_err()
            .0
            .contains("named \"who\"")
    );
    assert!(
        resolve(&spec, &[], &[])
            .unwrap_err()
            .0
            .contains("header has a variable")
    );
}

#[test]
fn variables_by_name_or_number() {
    assert_eq!(
        parse_any_variables(&json!({"first_name": "Ana", "n": 2})).unwrap(),
        Variables::Named(vec![
            ("first_name".into(), "Ana".into()),
            ("n".into(), "2".into())
        ])
    );
    assert_eq!(
        parse_any_variables(&json!({"1": "a"})).unwrap(),
        Variables::Positional(vec!["a".into()])
    );
    assert_eq!(
        parse_any_variables(&json!(["a"])).unwrap(),
        Variables::Positional(vec!["a".into()])
    );
    assert!(parse_any_variables(&json!({"1": "a", "name": "b"})).is_err());
    assert!(parse_any_variables(&json!({"Name": "b"})).is_err());
    assert!(parse_any_variables(&json!({"name": ["b"]})).is_err());
}

proptest! {
    #[test]
    fn resolve_never_panics(c in "\\PC{0,40}", i in 0u64..12, t in "[a-z_]{0,12}") {
        let comps = vec![
            json!({"type": t.clone(), "index": i, "sub_type": t, "parameters": [{"type": "text", "text": c.clone()}]}),
            json!({"type": "button", "index": i.to_string(), "sub_type": "url", "parameters": [{"type": "image", "image": {"link": c.clone()}}]}),
        ];
        let _ = resolve(&full(), std::slice::from_ref(&c), &comps);
    }

    #[test]
    fn resolved_components_resolve_to_themselves(a in "[a-zA-Z0-9]{1,10}", b in "[a-z]{1,10}", code in "[A-Z0-9]{1,15}") {
        let code_button = json!({"type": "button", "sub_type": "copy_code", "index": 2, "parameters": [{"type": "coupon_code", "coupon_code": code}]});
        let out = resolve(&full(), &[a.clone(), b], &[image(), url_button(), code_button]).unwrap();
        prop_assert_eq!(resolve(&full(), &[], &out).unwrap(), out);
    }
}
