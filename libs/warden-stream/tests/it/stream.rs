//! Against a real NATS with JetStream: setup is idempotent and republishing de-duplicates.

use std::collections::HashMap;

use warden_stream::{DeliveryJob, DeliveryStream};

fn settings(stream: &str) -> warden_settings::Settings {
    let mut s = warden_settings::Settings::load(None).unwrap();
    s.delivery_stream = stream.to_string();
    s
}

fn unique_stream() -> String {
    format!("T_{}", uuid::Uuid::new_v4().simple()).to_uppercase()
}

#[tokio::test]
async fn setup_is_idempotent_and_republish_is_deduplicated() {
    let name = unique_stream();
    let s = settings(&name);
    let a = DeliveryStream::connect(&s).await.unwrap();
    let b = DeliveryStream::connect(&s).await.unwrap(); // second process, same stream
    assert_eq!(
        a.subject("whatsapp"),
        format!("{}.outbound.whatsapp", name.to_lowercase())
    );

    let job = DeliveryJob {
        message_id: uuid::Uuid::new_v4(),
        customer_id: "6281234567890".into(),
        channel: "whatsapp".into(),
        attempt: 1,
    };
    let first = a.publish(&job, &HashMap::new()).await.unwrap();
    let again = b.publish(&job, &HashMap::new()).await.unwrap();
    assert!(!first.duplicate);
    assert!(
        again.duplicate,
        "same Nats-Msg-Id inside the window is a duplicate"
    );

    let mut stream = a.jetstream.get_stream(&name).await.unwrap();
    assert_eq!(stream.info().await.unwrap().state.messages, 1);
    a.jetstream.delete_stream(&name).await.unwrap();
}

#[tokio::test]
async fn unreachable_nats_is_one_clear_line() {
    let mut s = settings(&unique_stream());
    s.nats_url = "nats://127.0.0.1:1".into();
    let Err(err) = DeliveryStream::connect(&s).await else {
        panic!("connecting to a closed port must fail");
    };
    let line = err.to_string();
    assert!(
        line.starts_with("cannot reach NATS at nats://127.0.0.1:1"),
        "{line}"
    );
    assert!(!line.contains('\n'));
}
