use super::*;
use proptest::prelude::*;
use serde_json::json;

fn buttons(n: usize, title_len: usize) -> Value {
    let b: Vec<Value> = (0..n)
        .map(|i| json!({"type": "reply", "reply": {"id": format!("b{i}"), "title": "t".repeat(title_len)}}))
        .collect();
    json!({"type": "interactive", "interactive": {
        "type": "button", "body": {"text": "Pick one"}, "action": {"buttons": b}}})
}

fn list(rows: usize, title_len: usize, desc_len: usize, label_len: usize) -> Value {
    let r: Vec<Value> = (0..rows)
        .map(|i| json!({"id": format!("r{i}"), "title": "x".repeat(title_len), "description": "d".repeat(desc_len)}))
        .collect();
    json!({"type": "interactive", "interactive": {
        "type": "list", "body": {"text": "Slots"},
        "action": {"button": "l".repeat(label_len), "sections": [{"title": "Today", "rows": r}]}}})
}

fn field(v: &Value) -> String {
    RichMessage::from_json(v).unwrap_err().field
}

#[test]
fn button_edges() {
    assert!(RichMessage::from_json(&buttons(3, 20)).is_ok());
    assert_eq!(field(&buttons(4, 5)), "buttons");
    assert_eq!(field(&buttons(0, 5)), "buttons");
    assert_eq!(field(&buttons(2, 21)), "buttons[0].title");
    let e = RichMessage::from_json(&buttons(1, 21)).unwrap_err();
    assert!(e.to_string().contains("at most 20"), "{e}");
    let mut dup = buttons(2, 5);
    dup["interactive"]["action"]["buttons"][1]["reply"]["id"] = json!("b0");
    assert_eq!(field(&dup), "buttons[1].id");
}

#[test]
fn list_edges() {
    assert!(RichMessage::from_json(&list(10, 24, 72, 20)).is_ok());
    assert_eq!(field(&list(11, 5, 5, 5)), "sections");
    assert_eq!(field(&list(2, 25, 5, 5)), "sections[0].rows[0].title");
    assert_eq!(field(&list(2, 5, 73, 5)), "sections[0].rows[0].description");
    assert_eq!(field(&list(2, 5, 5, 21)), "button_label");
    // 10 rows over two sections is fine; 11 over two is not.
    let two = |a: usize, b: usize| {
        let rows = |p: &str, n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"id": format!("{p}{i}"), "title": "t"}))
                .collect()
        };
        json!({"type": "interactive", "interactive": {"type": "list", "body": {"text": "b"},
            "action": {"button": "Open", "sections": [
                {"title": "A", "rows": rows("a", a)}, {"title": "B", "rows": rows("b", b)}]}}})
    };
    assert!(RichMessage::from_json(&two(5, 5)).is_ok());
    assert_eq!(field(&two(5, 6)), "sections");
}

#[test]
fn body_header_footer_edges() {
    let mut v = buttons(1, 5);
    v["interactive"]["body"]["text"] = json!("b".repeat(1024));
    assert!(RichMessage::from_json(&v).is_ok());
    v["interactive"]["body"]["text"] = json!("b".repeat(1025));
    assert_eq!(field(&v), "body");
    let mut v = buttons(1, 5);
    v["interactive"]["header"] = json!({"type": "text", "text": "h".repeat(60)});
    v["interactive"]["footer"] = json!({"text": "f".repeat(60)});
    assert!(RichMessage::from_json(&v).is_ok());
    v["interactive"]["header"]["text"] = json!("h".repeat(61));
    assert_eq!(field(&v), "header");
    v["interactive"]["header"]["text"] = json!("h");
    v["interactive"]["footer"]["text"] = json!("f".repeat(61));
    assert_eq!(field(&v), "footer");
}

#[test]
fn cta_url() {
    let v = |text: &str, url: &str| {
        json!({"type": "interactive", "interactive": {"type": "cta_url", "body": {"text": "Track"},
        "action": {"name": "cta_url", "parameters": {"display_text": text, "url": url}}}})
    };
    assert!(RichMessage::from_json(&v("Track order", "https://shop.example/o/1")).is_ok());
    assert_eq!(field(&v(&"d".repeat(21), "https://x.io")), "display_text");
    assert_eq!(field(&v("Go", "ftp://x.io")), "url");
}

#[test]
fn media_rules() {
    let m = |t: &str, obj: Value| json!({"type": t, t: obj});
    assert!(
        RichMessage::from_json(&m(
            "image",
            json!({"link": "https://x.io/a.jpg", "caption": "hi"})
        ))
        .is_ok()
    );
    assert!(
        RichMessage::from_json(&m(
            "document",
            json!({"id": "123", "filename": "invoice.pdf"})
        ))
        .is_ok()
    );
    assert_eq!(field(&m("image", json!({}))), "link");
    assert_eq!(
        field(&m("image", json!({"id": "1", "link": "https://x.io"}))),
        "link"
    );
    assert_eq!(
        field(&m("audio", json!({"id": "1", "caption": "no"}))),
        "caption"
    );
    assert_eq!(
        field(&m("sticker", json!({"id": "1", "caption": "no"}))),
        "caption"
    );
    assert_eq!(
        field(&m("image", json!({"id": "1", "filename": "a"}))),
        "filename"
    );
    assert_eq!(
        field(&m("image", json!({"id": "1", "caption": "c".repeat(1025)}))),
        "caption"
    );
    assert_eq!(field(&m("image", json!({"id": "1", "bogus": 1}))), "image");
    // Contact cards are a kind of their own now: an empty list is refused by name.
    assert_eq!(
        field(&json!({"type": "contacts", "contacts": []})),
        "contacts"
    );
}

#[test]
fn location_and_reaction() {
    let l = |lat: f64, lon: f64| json!({"type": "location", "location": {"latitude": lat, "longitude": lon}});
    assert!(RichMessage::from_json(&l(-6.2, 106.8)).is_ok());
    assert!(RichMessage::from_json(&l(90.0, -180.0)).is_ok());
    assert_eq!(field(&l(90.1, 0.0)), "latitude");
    assert_eq!(field(&l(0.0, 180.5)), "longitude");
    let r =
        |e: &str| json!({"type": "reaction", "reaction": {"message_id": "wamid.X", "emoji": e}});
    assert!(RichMessage::from_json(&r("👍")).is_ok());
    assert!(RichMessage::from_json(&r("")).is_ok());
    assert!(RichMessage::from_json(&r("👍🏽")).is_ok());
    assert_eq!(field(&r("ok")), "emoji");
}

#[test]
fn context_round_trips() {
    let v = json!({"type": "location", "location": {"latitude": 1.5, "longitude": 2.0, "name": "Shop"},
                   "context": {"message_id": "wamid.Q"}});
    let m = RichMessage::from_json(&v).unwrap();
    assert_eq!(m.context.as_deref(), Some("wamid.Q"));
    assert_eq!(m.to_json(), v);
    assert_eq!(
        field(
            &json!({"type": "location", "location": {"latitude": 1, "longitude": 2}, "extra": 1})
        ),
        "\"extra\""
    );
}

#[test]
fn upload_limits() {
    assert_eq!(
        check_upload("image/jpeg", &vec![0; 5 * MB]).unwrap().0,
        MediaType::Image
    );
    assert_eq!(
        check_upload("image/png", &vec![0; 5 * MB + 1])
            .unwrap_err()
            .field,
        "data"
    );
    assert_eq!(
        check_upload("IMAGE/PNG; charset=x", &[1]).unwrap().0,
        MediaType::Image
    );
    assert_eq!(
        check_upload("video/mp4", &vec![0; 16 * MB]).unwrap().0,
        MediaType::Video
    );
    assert_eq!(
        check_upload("audio/ogg", &vec![0; 16 * MB + 1])
            .unwrap_err()
            .field,
        "data"
    );
    assert_eq!(
        check_upload("application/pdf", &[1]).unwrap().0,
        MediaType::Document
    );
    assert_eq!(
        check_upload("image/webp", &vec![0; 100 * KB]).unwrap().0,
        MediaType::Sticker
    );
    assert!(check_upload("image/webp", &vec![0; 100 * KB + 1]).is_err());
    let mut animated = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\x02".to_vec();
    animated.resize(300 * KB, 0);
    assert!(webp_is_animated(&animated));
    assert!(check_upload("image/webp", &animated).is_ok());
    animated.resize(500 * KB + 1, 0);
    let e = check_upload("image/webp", &animated).unwrap_err();
    assert!(e.problem.contains("500 KB"), "{e}");
    assert_eq!(
        check_upload("application/x-msdownload", &[1])
            .unwrap_err()
            .field,
        "mime_type"
    );
    assert_eq!(
        check_upload("image/gif", &[1]).unwrap_err().field,
        "mime_type"
    );
    assert_eq!(check_upload("image/png", &[]).unwrap_err().field, "data");
}

fn label(max: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[a-zA-Z0-9 éü]{{0,{}}}[a-zA-Z]", max - 1)).unwrap()
}

fn media_object(t: MediaType) -> impl Strategy<Value = MediaObject> {
    (
        any::<bool>(),
        "[a-z0-9]{1,20}",
        proptest::option::of(label(1024)),
        proptest::option::of(label(100)),
    )
        .prop_map(move |(by_id, s, caption, filename)| MediaObject {
            id: by_id.then(|| s.clone()),
            link: (!by_id).then(|| format!("https://cdn.example/{s}")),
            caption: caption.filter(|_| t.takes_caption()),
            filename: filename.filter(|_| t == MediaType::Document),
        })
}

fn rich() -> impl Strategy<Value = RichMessage> {
    let media = proptest::sample::select(MediaType::ALL.to_vec())
        .prop_flat_map(|t| media_object(t).prop_map(move |m| RichBody::Media(t, m)));
    let buttons = (
        label(1024),
        proptest::collection::vec(label(20), 1..=3),
        proptest::option::of(label(60)),
    )
        .prop_map(|(body, titles, footer)| {
            RichBody::Interactive(Box::new(Interactive {
                header: None,
                body: Some(TextObject { text: body }),
                footer: footer.map(|text| TextObject { text }),
                action: Action::Buttons(ButtonsAction {
                    buttons: titles
                        .into_iter()
                        .enumerate()
                        .map(|(i, title)| ReplyButton {
                            kind: "reply".into(),
                            reply: Reply {
                                id: format!("id{i}"),
                                title,
                            },
                        })
                        .collect(),
                }),
            }))
        });
    let list = (
        label(60),
        label(20),
        proptest::collection::vec((label(24), proptest::option::of(label(72))), 1..=10),
    )
        .prop_map(|(header, button, rows)| {
            RichBody::Interactive(Box::new(Interactive {
                header: Some(Header {
                    kind: "text".into(),
                    text: Some(header),
                    image: None,
                    video: None,
                    document: None,
                }),
                body: Some(TextObject {
                    text: "Choose".into(),
                }),
                footer: None,
                action: Action::List(ListAction {
                    button,
                    sections: vec![Section {
                        title: None,
                        product_items: None,
                        rows: rows
                            .into_iter()
                            .enumerate()
                            .map(|(i, (title, description))| Row {
                                id: format!("r{i}"),
                                title,
                                description,
                            })
                            .collect(),
                    }],
                }),
            }))
        });
    let cta_url = (label(1024), label(20), "[a-z0-9/]{1,40}", any::<bool>()).prop_map(
        |(body, display_text, path, with_footer)| {
            RichBody::Interactive(Box::new(Interactive {
                header: None,
                body: Some(TextObject { text: body }),
                footer: with_footer.then(|| TextObject { text: "f".into() }),
                action: Action::CtaUrl(CtaUrlAction {
                    parameters: CtaParameters {
                        display_text,
                        url: format!("https://shop.example/{path}"),
                    },
                }),
            }))
        },
    );
    // Micro-degrees (what a GPS gives): decimal text that parses back exactly.
    let location = (
        -90_000_000i64..=90_000_000,
        -180_000_000i64..=180_000_000,
        proptest::option::of(label(100)),
    )
        .prop_map(|(lat, lon, name)| {
            RichBody::Location(Location {
                latitude: lat as f64 / 1e6,
                longitude: lon as f64 / 1e6,
                name,
                address: None,
            })
        });
    let reaction = (
        "[A-Za-z0-9.=]{5,40}",
        proptest::sample::select(vec!["", "👍", "❤️", "😂"]),
    )
        .prop_map(|(id, e)| {
            RichBody::Reaction(Reaction {
                message_id: format!("wamid.{id}"),
                emoji: e.into(),
            })
        });
    (
        prop_oneof![media, buttons, list, cta_url, location, reaction],
        proptest::option::of("wamid\\.[A-Za-z0-9]{4,30}"),
    )
        .prop_map(|(body, context)| RichMessage { body, context })
}

proptest! {
    /// Platform JSON in -> stored -> platform body out is the same message.
    #[test]
    fn platform_json_round_trips(m in rich()) {
        let json = m.to_json();
        let stored = serde_json::to_string(&json).unwrap();
        let back = RichMessage::from_json(&serde_json::from_str(&stored).unwrap()).unwrap();
        prop_assert_eq!(&back, &m);
        prop_assert_eq!(back.to_json(), json);
    }

    /// Titles are accepted up to their limit and refused one past it, naming the field.
    #[test]
    fn button_title_limit(n in 1usize..40) {
        let r = RichMessage::from_json(&buttons(1, n));
        if n <= MAX_BUTTON_TITLE_CHARS {
            prop_assert!(r.is_ok());
        } else {
            prop_assert_eq!(r.unwrap_err().field, "buttons[0].title");
        }
    }

    /// Any JSON never panics the parser.
    #[test]
    fn arbitrary_json_never_panics(kind in proptest::sample::select(RICH_TYPES.to_vec()), s in ".{0,40}", n in any::<i64>()) {
        let _ = RichMessage::from_json(&json!({"type": kind, kind: {"text": s, "id": n, "rows": [s]}}));
    }
}
