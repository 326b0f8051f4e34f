//! The normaliser against a corpus of realistic platform message objects (one or more of
//! every type), plus properties over arbitrary JSON.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;

fn msg(kind: &str, part: Value) -> Value {
    let mut m = json!({
        "from": "6281234567890",
        "id": "wamid.HBgNNjI4MTIzNDU2Nzg5MBUCABIYFjNFQjBDMEQ5RkY2QUY4QjQ0NUEyAA==",
        "timestamp": "1764000000",
        "type": kind,
    });
    if !part.is_null() {
        m[kind] = part;
    }
    m
}

#[test]
fn text_and_reply_context() {
    let mut m = msg("text", json!({"body": "Is my order on its way?"}));
    m["context"] = json!({"from": "15550001111", "id": "wamid.OURS1"});
    let n = normalise(&m);
    assert_eq!(n.kind, "text");
    assert_eq!(n.text.as_deref(), Some("Is my order on its way?"));
    assert_eq!(n.context_wamid.as_deref(), Some("wamid.OURS1"));
    assert_eq!(n.timestamp, Some(1_764_000_000));
    assert!(n.media.is_none() && n.reaction.is_none() && n.amends.is_none());
}

#[test]
fn media_of_every_kind() {
    let image = normalise(&msg(
        "image",
        json!({"caption": "the broken part", "mime_type": "image/jpeg",
               "sha256": "Tzv3W0dRV0dGbmJkQ0dXb3g1cGlGZz09", "id": "1479537139650973"}),
    ));
    assert_eq!(image.kind, "image");
    assert_eq!(image.text.as_deref(), Some("the broken part"));
    let media = image.media.unwrap();
    assert_eq!(media.media_id.as_deref(), Some("1479537139650973"));
    assert_eq!(media.mime_type.as_deref(), Some("image/jpeg"));
    assert_eq!(media.voice, None);
    assert_eq!(media.filename, None);

    let video = normalise(&msg(
        "video",
        json!({"mime_type": "video/mp4", "sha256": "abc", "id": "2"}),
    ));
    assert_eq!((video.kind, video.text), ("video", None));

    let voice = normalise(&msg(
        "audio",
        json!({"mime_type": "audio/ogg; codecs=opus", "sha256": "h", "id": "3", "voice": true}),
    ));
    assert_eq!(voice.media.unwrap().voice, Some(true));
    let audio = normalise(&msg(
        "audio",
        json!({"mime_type": "audio/mpeg", "sha256": "h", "id": "4"}),
    ));
    assert_eq!(audio.media.unwrap().voice, Some(false));

    let doc = normalise(&msg(
        "document",
        json!({"caption": "invoice", "filename": "INV-42.pdf", "mime_type": "application/pdf",
               "sha256": "h", "id": "5"}),
    ));
    assert_eq!(doc.text.as_deref(), Some("invoice"));
    assert_eq!(doc.media.unwrap().filename.as_deref(), Some("INV-42.pdf"));

    let sticker = normalise(&msg(
        "sticker",
        json!({"mime_type": "image/webp", "sha256": "h", "id": "6", "animated": true}),
    ));
    assert_eq!(sticker.media.unwrap().animated, Some(true));
}

#[test]
fn reaction_location_contacts_order() {
    let r = normalise(&msg(
        "reaction",
        json!({"message_id": "wamid.OURS2", "emoji": "\u{1F44D}"}),
    ));
    assert_eq!(r.kind, "reaction");
    assert_eq!(r.text, None);
    assert_eq!(
        r.reaction,
        Some(("\u{1F44D}".to_string(), Some("wamid.OURS2".to_string())))
    );
    // A removed reaction has no emoji.
    let removed = normalise(&msg("reaction", json!({"message_id": "wamid.OURS2"})));
    assert_eq!(removed.reaction.unwrap().0, "");

    let l = normalise(&msg(
        "location",
        json!({"latitude": -6.2, "longitude": "106.816666", "name": "Monas",
               "address": "Gambir, Jakarta", "url": "https://example.com"}),
    ));
    let loc = l.location.unwrap();
    assert_eq!((loc.latitude, loc.longitude), (-6.2, 106.816666));
    assert_eq!(loc.name.as_deref(), Some("Monas"));
    // Live or malformed locations without coordinates carry none.
    assert!(
        normalise(&msg("location", json!({"name": "x"})))
            .location
            .is_none()
    );

    let c = normalise(&msg(
        "contacts",
        json!([{"name": {"formatted_name": "Ana"}, "phones": [{"phone": "+62 811"}]}]),
    ));
    assert_eq!((c.kind, c.text), ("contacts", None));

    let o = normalise(&msg(
        "order",
        json!({"catalog_id": "1", "text": "two please",
               "product_items": [{"product_retailer_id": "sku", "quantity": "2",
                                  "item_price": "10", "currency": "USD"}]}),
    ));
    assert_eq!(o.text.as_deref(), Some("two please"));
}

#[test]
fn replies_to_buttons_and_lists() {
    let b = normalise(&msg(
        "button",
        json!({"payload": "STOP_PROMOS", "text": "Stop promotions"}),
    ));
    assert_eq!(b.text.as_deref(), Some("Stop promotions"));
    assert_eq!(
        b.interactive.unwrap().reply_id.as_deref(),
        Some("STOP_PROMOS")
    );

    let br = normalise(&msg(
        "interactive",
        json!({"type": "button_reply", "button_reply": {"id": "yes", "title": "Yes"}}),
    ));
    assert_eq!(br.text.as_deref(), Some("Yes"));
    assert_eq!(
        br.interactive,
        Some(InteractiveReply {
            reply_id: Some("yes".into()),
            title: Some("Yes".into()),
            description: None
        })
    );
    let lr = normalise(&msg(
        "interactive",
        json!({"type": "list_reply",
               "list_reply": {"id": "row-2", "title": "Tuesday", "description": "9-12"}}),
    ));
    assert_eq!(lr.interactive.unwrap().description.as_deref(), Some("9-12"));
    let flow = normalise(&msg(
        "interactive",
        json!({"type": "nfm_reply",
               "nfm_reply": {"name": "flow", "body": "Sent", "response_json": "{}"}}),
    ));
    assert_eq!(flow.text.as_deref(), Some("Sent"));
    assert!(flow.interactive.is_none());
    assert_eq!(flow.kind, "flow_response");
    let f = flow.flow.unwrap();
    assert!(!f.parse_error);
    assert!(f.response.is_empty());
    let broken = normalise(&msg(
        "interactive",
        json!({"type": "nfm_reply",
               "nfm_reply": {"name": "flow", "body": "Sent", "response_json": "{oops"}}),
    ));
    let f = broken.flow.unwrap();
    assert!(f.parse_error);
    assert_eq!(f.response["raw"], "{oops");
    let answered = normalise(&msg(
        "interactive",
        json!({"type": "nfm_reply", "nfm_reply": {
               "response_json": "{\"flow_token\":\"tok\",\"date\":\"2026-12-24\"}"}}),
    ));
    let f = answered.flow.unwrap();
    assert_eq!(f.flow_token.as_deref(), Some("tok"));
    assert_eq!(f.response["date"], "2026-12-24");
}

#[test]
fn referral_system_edit_revoke_unsupported() {
    let mut m = msg("text", json!({"body": "I saw your ad"}));
    m["referral"] = json!({"source_url": "https://fb.me/x", "source_type": "ad",
                           "source_id": "123", "headline": "50% off", "body": "Today"});
    let n = normalise(&m);
    assert_eq!(n.referral.unwrap()["headline"], "50% off");

    let s = normalise(&msg(
        "system",
        json!({"body": "User A changed from 628110000 to 628110001",
               "new_wa_id": "628110001", "type": "user_changed_number"}),
    ));
    assert_eq!(s.kind, "system");
    assert_eq!(s.new_number.as_deref(), Some("628110001"));
    assert!(s.text.unwrap().contains("changed"));
    let other = normalise(&msg(
        "system",
        json!({"body": "identity changed", "type": "customer_identity_changed"}),
    ));
    assert_eq!(other.new_number, None);

    let e = normalise(&msg(
        "edit",
        json!({"original_message_id": "wamid.THEIRS1",
               "message": {"type": "text", "text": {"body": "fixed typo"}}}),
    ));
    assert_eq!(e.kind, "edit");
    assert_eq!(e.text.as_deref(), Some("fixed typo"));
    assert_eq!(
        e.amends,
        Some((
            "wamid.THEIRS1".into(),
            Amend::Edit {
                text: Some("fixed typo".into())
            }
        ))
    );
    let ec = normalise(&msg(
        "edit",
        json!({"original_message_id": "wamid.T2",
               "message": {"type": "image", "image": {"caption": "new caption", "id": "9"}}}),
    ));
    assert_eq!(ec.text.as_deref(), Some("new caption"));

    let r = normalise(&msg(
        "revoke",
        json!({"original_message_id": "wamid.THEIRS1"}),
    ));
    assert_eq!(r.amends, Some(("wamid.THEIRS1".into(), Amend::Revoke)));
    assert_eq!(r.text, None);

    let mut u = msg("unsupported", Value::Null);
    u["errors"] = json!([{"code": 131051, "title": "Message type unknown"}]);
    assert_eq!(normalise(&u).kind, "unsupported");
    assert_eq!(
        normalise(&msg("ephemeral", Value::Null)).kind,
        "unsupported"
    );
    assert_eq!(normalise(&msg("TEXT", json!({"body": "hi"}))).kind, "text");
}

#[test]
fn outbound_shapes() {
    let t = normalise(&json!({"type": "text", "text": {"body": "We shipped it"}}));
    assert_eq!((t.kind, t.text.as_deref()), ("text", Some("We shipped it")));
    let tpl = normalise(&json!({"type": "template",
        "template": {"name": "order_update", "locale": "en", "variables": ["1"]}}));
    assert_eq!((tpl.kind, tpl.text), ("template", None));
}

#[test]
fn text_is_cut_at_the_limit() {
    let n = normalise(&msg(
        "text",
        json!({"body": "é".repeat(MAX_TEXT_CHARS + 10)}),
    ));
    assert_eq!(n.text.unwrap().chars().count(), MAX_TEXT_CHARS);
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
        prop::sample::select(TYPES.to_vec()).prop_map(|t| json!(t)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "type",
                    "text",
                    "body",
                    "caption",
                    "id",
                    "context",
                    "image",
                    "audio",
                    "reaction",
                    "emoji",
                    "message_id",
                    "location",
                    "latitude",
                    "longitude",
                    "interactive",
                    "button_reply",
                    "list_reply",
                    "title",
                    "edit",
                    "revoke",
                    "original_message_id",
                    "message",
                    "system",
                    "new_wa_id",
                    "referral",
                ])
                .prop_map(String::from),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Any JSON normalises without panicking to a known type, with bounded text, and
    /// only the parts its type may carry.
    #[test]
    fn any_payload_normalises(v in arb_json()) {
        let n = normalise(&v);
        prop_assert!(TYPES.contains(&n.kind));
        if let Some(t) = &n.text {
            prop_assert!(t.chars().count() <= MAX_TEXT_CHARS);
            prop_assert!(!t.is_empty());
        }
        prop_assert!(n.media.is_none()
            || ["image", "video", "audio", "document", "sticker"].contains(&n.kind));
        prop_assert!(n.reaction.is_none() || n.kind == "reaction");
        prop_assert!(n.amends.is_none() || n.kind == "edit" || n.kind == "revoke");
        if let Some(l) = &n.location {
            prop_assert!(l.latitude.is_finite() && l.longitude.is_finite());
        }
    }

    /// A text message's text is its body, whatever the body holds (up to the cut).
    #[test]
    fn text_body_round_trips(body in ".{1,200}", ctx in proptest::option::of("wamid\\.[A-Za-z0-9=]{1,40}")) {
        let mut m = json!({"type": "text", "text": {"body": body}});
        if let Some(c) = &ctx {
            m["context"] = json!({"id": c});
        }
        let n = normalise(&m);
        prop_assert_eq!(n.text.as_deref(), Some(body.as_str()));
        prop_assert_eq!(n.context_wamid, ctx);
    }
}
