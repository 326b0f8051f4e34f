//! The sim's media store and its checks of rich send bodies, as the platform answers.

use crate::common;

use common::*;
use serde_json::{Value, json};

fn send(to: &str, kind: &str, object: Value) -> Value {
    json!({"messaging_product": "whatsapp", "to": to, "type": kind, kind: object,
           "biz_opaque_callback_data": format!("cb-{kind}")})
}

#[tokio::test]
async fn uploads_are_stored_described_and_served_with_the_token_only() {
    let sim = start_sim(config(None)).await;
    let bytes = b"\x89PNG\r\n\x1a\n-image-bytes".to_vec();
    let (ct, body) = warden_platform::media::multipart_body(&bytes, "image/png", "a.png");
    let r = sim
        .http
        .post(format!("{}/{API}/{PHONE_NUMBER_ID}/media", sim.url))
        .bearer_auth(ACCESS_TOKEN)
        .header("content-type", ct.clone())
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Without the token: refused.
    let r = sim
        .http
        .post(format!("{}/{API}/{PHONE_NUMBER_ID}/media", sim.url))
        .header("content-type", ct)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);

    let (status, info) = sim.get_api(&id).await;
    assert_eq!(status, 200, "{info}");
    assert_eq!(info["mime_type"], "image/png");
    assert_eq!(info["file_size"], bytes.len());
    assert_eq!(info["sha256"], warden_platform::media::sha256_hex(&bytes));
    let url = info["url"].as_str().unwrap();
    let got = sim
        .http
        .get(url)
        .bearer_auth(ACCESS_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    let denied = sim.http.get(url).send().await.unwrap();
    assert_eq!(denied.status().as_u16(), 401);

    // /sim/media stores raw bytes for inbound tests.
    let r: Value = sim
        .http
        .post(format!("{}/sim/media", sim.url))
        .header("content-type", "audio/ogg")
        .body(vec![1u8; 10])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let (_, info) = sim.get_api(r["id"].as_str().unwrap()).await;
    assert_eq!(info["mime_type"], "audio/ogg");
    assert_eq!(info["file_size"], 10);

    // A send naming that media id is accepted; an unknown one is 131052.
    let (status, v) = sim.send(&send("628123", "image", json!({"id": id}))).await;
    assert_eq!(status, 200, "{v}");
    let (status, v) = sim
        .send(&send("628123", "image", json!({"id": "999"})))
        .await;
    assert_eq!(
        (status, v["error"]["code"].clone()),
        (400, json!(131052)),
        "{v}"
    );
}

#[tokio::test]
async fn upload_errors_are_131053() {
    let sim = start_sim(config(None)).await;
    for (mime, data) in [
        ("image/gif", vec![1u8; 10]),
        ("image/webp", vec![0u8; 100 * 1024 + 1]),
        ("image/png", vec![]),
    ] {
        let (ct, body) = warden_platform::media::multipart_body(&data, mime, "f");
        let r = sim
            .http
            .post(format!("{}/{API}/{PHONE_NUMBER_ID}/media", sim.url))
            .bearer_auth(ACCESS_TOKEN)
            .header("content-type", ct)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{mime}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], 131053, "{mime}: {v}");
    }
}

#[tokio::test]
async fn rich_bodies_are_checked_like_the_platform() {
    let sim = start_sim(config(None)).await;
    let ok = [
        send(
            "628123",
            "image",
            json!({"link": "https://x.io/a.jpg", "caption": "c"}),
        ),
        send(
            "628123",
            "interactive",
            json!({"type": "button", "body": {"text": "b"},
            "action": {"buttons": [{"type": "reply", "reply": {"id": "a", "title": "t".repeat(20)}}]}}),
        ),
        send(
            "628123",
            "interactive",
            json!({"type": "list", "body": {"text": "b"},
            "action": {"button": "Open", "sections": [{"rows": (0..10).map(|i| json!({"id": format!("r{i}"), "title": "x"})).collect::<Vec<_>>()}]}}),
        ),
        send(
            "628123",
            "location",
            json!({"latitude": -6.2, "longitude": 106.8}),
        ),
        send(
            "628123",
            "reaction",
            json!({"message_id": "wamid.X", "emoji": ""}),
        ),
    ];
    for body in &ok {
        let (status, v) = sim.send(body).await;
        assert_eq!(status, 200, "{body}: {v}");
    }
    let stats = sim.stats().await;
    assert_eq!(stats["by_message"]["cb-location"]["type"], "location");
    assert_eq!(stats["by_message"]["cb-interactive"]["type"], "interactive");

    let bad = [
        (send("628123", "carrier_pigeon", json!({})), 131051),
        (
            send(
                "628123",
                "audio",
                json!({"link": "https://x.io/a.ogg", "caption": "no"}),
            ),
            131009,
        ),
        (send("628123", "image", json!({"link": "ftp://x"})), 131009),
        (
            send(
                "628123",
                "interactive",
                json!({"type": "button", "body": {"text": "b"},
            "action": {"buttons": [{"type": "reply", "reply": {"id": "a", "title": "t".repeat(21)}}]}}),
            ),
            131009,
        ),
        (
            send(
                "628123",
                "interactive",
                json!({"type": "button", "body": {"text": "b"},
            "action": {"buttons": (0..4).map(|i| json!({"type": "reply", "reply": {"id": format!("b{i}"), "title": "t"}})).collect::<Vec<_>>()}}),
            ),
            131009,
        ),
        (
            send(
                "628123",
                "interactive",
                json!({"type": "list", "body": {"text": "b"},
            "action": {"button": "Open", "sections": [{"rows": (0..11).map(|i| json!({"id": format!("r{i}"), "title": "x"})).collect::<Vec<_>>()}]}}),
            ),
            131009,
        ),
        (
            send(
                "628123",
                "location",
                json!({"latitude": 91, "longitude": 0}),
            ),
            131009,
        ),
        (
            json!({"messaging_product": "whatsapp", "to": "628123", "type": "image"}),
            131008,
        ),
    ];
    for (body, code) in &bad {
        let (status, v) = sim.send(body).await;
        assert_eq!(
            (status, v["error"]["code"].clone()),
            (400, json!(code)),
            "{body}: {v}"
        );
    }
}
