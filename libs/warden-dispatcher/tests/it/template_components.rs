//! A template send with header and button parameters goes out in full: the dispatcher
//! builds the platform body from the stored components, and platform-sim (holding the
//! template as created, with its IMAGE header and URL button) accepts exactly that body.

use crate::common;

use std::time::Duration;

use common::{Harness, unique_phone};
use serde_json::json;
use warden_platform::template::TemplateComponent;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_template_with_components_reaches_the_platform_in_full() {
    let h = Harness::new(500).await;
    // The template as the platform holds it after create_template.
    h.sim
        .state
        .templates
        .write()
        .unwrap()
        .insert(warden_sim::templates::Template {
            id: "tpl-components".into(),
            name: "order_shipped_full".into(),
            language: "en".into(),
            category: "UTILITY".into(),
            status: "APPROVED".into(),
            body: "Order {{1}} ships".into(),
            params: 1,
            reason: None,
            components: vec![
                TemplateComponent {
                    kind: "HEADER".into(),
                    format: Some("IMAGE".into()),
                    ..TemplateComponent::default()
                },
                TemplateComponent {
                    kind: "BUTTONS".into(),
                    buttons: Some(json!([
                        {"type": "URL", "text": "Track", "url": "https://shop.example/t/{{1}}"}
                    ])),
                    ..TemplateComponent::default()
                },
            ],
            named: None,
        });
    let components = json!([
        {"type": "header", "parameters": [{"type": "image", "image": {"link": "https://shop.example/p.jpg"}}]},
        {"type": "body", "parameters": [{"type": "text", "text": "A1"}]},
        {"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": "A1"}]}
    ]);
    let (good_to, bad_to) = (unique_phone(), unique_phone());
    let good = h
        .insert_message(
            &good_to,
            json!({"type": "template", "template": {"name": "order_shipped_full", "locale": "en",
                   "variables": [], "components": components}}),
            None,
            "queued",
        )
        .await;
    // Stored without its header parameter: the platform refuses it (132000, not retried).
    let mut without_header = components.clone();
    without_header.as_array_mut().unwrap().remove(0);
    let bad = h
        .insert_message(
            &bad_to,
            json!({"type": "template", "template": {"name": "order_shipped_full", "locale": "en",
                   "variables": [], "components": without_header}}),
            None,
            "queued",
        )
        .await;
    let (d, stop) = h.dispatcher(h.config()).await;
    h.publish(good, &good_to).await;
    h.publish(bad, &bad_to).await;

    h.wait_status(good, &["sent"], WAIT).await;
    let stat = h.sim.stats().by_message[&good.to_string()].clone();
    assert_eq!(stat.count, 1);
    let sent = stat.template.expect("the sim kept the template body");
    assert_eq!(sent["name"], "order_shipped_full");
    assert_eq!(sent["language"]["code"], "en");
    assert_eq!(sent["components"], components, "sent exactly as stored");

    h.wait_status(bad, &["failed"], WAIT).await;
    assert_eq!(
        h.sim.count(bad),
        0,
        "refused by the platform, never accepted"
    );
    assert_eq!(
        h.count_where(&format!("id = '{bad}' AND error_code = 132000"))
            .await,
        1,
        "the platform's 132000 recorded"
    );

    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
