//! Property test over the real entry paths: the same customer state and the same
//! content get the same decision and reason code from check_compliance, send_message,
//! reply_customer, send_template, schedule_message (at scheduling and at dispatch, as the
//! scheduler builds the send), a campaign recipient (as the scheduler builds it),
//! retry_failed_messages and the dispatcher's recheck, whatever `message_type` the caller
//! gives (free-form content: text, and send_interactive's commerce kinds product,
//! product_list and catalog), and that decision is the rule table's (`warden_test_support::rule_table`), with
//! the conversation held by nobody else, a person or another app (`rule_table::held`). Every
//! case runs each path on a fresh customer set up in that state, against real Postgres,
//! Redis and NATS.

use crate::common;

use chrono::{TimeDelta, Utc};
use common::*;
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};
use uuid::Uuid;
use warden_core::{Core, Recheck, RefusalMode, SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_rules::phone::canonicalize;
use warden_store::schema::{conversations, message_frequencies, messages};
use warden_test_support::rule_table::{self, Customer, Holder, OptOut, Window, customers, holders};

/// What is sent: free text, a commerce interactive message, or one of the test templates
/// (stored category / status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Content {
    Text,
    /// send_interactive kind product.
    Product,
    /// send_interactive kind product_list.
    ProductList,
    /// send_interactive kind catalog.
    Catalog,
    Marketing,
    Utility,
    Authentication,
    /// A utility template that is PAUSED.
    Paused,
}

impl Content {
    /// Free-form (a service message): it needs the care window.
    fn free_form(self) -> bool {
        self.template().is_none()
    }
    fn template(self) -> Option<&'static str> {
        match self {
            Content::Text | Content::Product | Content::ProductList | Content::Catalog => None,
            Content::Marketing => Some("pt_marketing"),
            Content::Utility => Some("pt_utility"),
            Content::Authentication => Some("pt_authentication"),
            Content::Paused => Some("pt_paused"),
        }
    }
    fn category(self) -> &'static str {
        match self {
            Content::Text | Content::Product | Content::ProductList | Content::Catalog => "service",
            Content::Marketing => "marketing",
            Content::Utility | Content::Paused => "utility",
            Content::Authentication => "authentication",
        }
    }
    /// send_interactive's arguments for a commerce kind (without `to`).
    fn interactive_args(self) -> Option<Value> {
        match self {
            Content::Product => Some(json!({"kind": "product", "catalog_id": "1234567890",
                "product_retailer_id": "sku-1"})),
            Content::ProductList => {
                Some(json!({"kind": "product_list", "catalog_id": "1234567890",
                "header": "Picks", "body": "Tap one",
                "sections": [{"title": "Shoes", "product_items": [{"product_retailer_id": "sku-1"}]}]}))
            }
            Content::Catalog => Some(json!({"kind": "catalog", "body": "Browse"})),
            _ => None,
        }
    }
    fn json(self) -> Value {
        match self {
            Content::Product => {
                return json!({"type": "interactive", "interactive": {"type": "product",
                    "action": {"catalog_id": "1234567890", "product_retailer_id": "sku-1"}}});
            }
            Content::ProductList => {
                return json!({"type": "interactive", "interactive": {"type": "product_list",
                    "header": {"type": "text", "text": "Picks"}, "body": {"text": "Tap one"},
                    "action": {"catalog_id": "1234567890", "sections": [{"title": "Shoes",
                        "product_items": [{"product_retailer_id": "sku-1"}]}]}}});
            }
            Content::Catalog => {
                return json!({"type": "interactive", "interactive": {"type": "catalog_message",
                    "body": {"text": "Browse"}, "action": {"name": "catalog_message"}}});
            }
            _ => {}
        }
        match self.template() {
            None => json!({"type": "text", "text": {"body": "Your order shipped."}}),
            Some(name) => json!({"type": "template",
                "template": {"name": name, "language": "en", "variables": ["Ana"]}}),
        }
    }
    fn kind(self) -> SendKind {
        SendKind::from_content(&self.json()).unwrap()
    }
}

/// The rule table's decision (`warden_test_support::rule_table`, shared with warden-rules'
/// `tests/it/rule_table.rs`) for `c` with the conversation held by `h`: the paused template
/// is the one not approved.
fn table(s: &Customer, h: Holder, c: Content) -> &'static str {
    rule_table::held(
        rule_table::decision(s, c.category(), c != Content::Paused),
        h,
        c.category(),
    )
}

/// The table without the template's status (what is checked when a send is only scheduled).
fn compliance_table(s: &Customer, c: Content) -> &'static str {
    rule_table::decision(s, c.category(), true)
}

/// What the dispatcher re-checks: template status, opt-out, the holder, window.
fn recheck_table(s: &Customer, h: Holder, c: Content) -> &'static str {
    rule_table::held(
        rule_table::recheck(s, c.category(), c != Content::Paused),
        h,
        c.category(),
    )
}

fn us_phone() -> String {
    let n = Uuid::new_v4().as_u128() % 10_000_000;
    format!("1415{n:07}")
}

/// A fresh customer in state `s` whose conversation `held` holds; returns its canonical
/// number.
async fn customer(h: &Harness, s: &Customer, held: Holder) -> String {
    let phone = if s.us { us_phone() } else { phone() };
    let p = canonicalize(&phone).unwrap();
    {
        let mut c = h.conn().await;
        warden_core::customers::ensure(&mut c, &p).await.unwrap();
    }
    h.tag(&phone, &s.tags()).await;
    match s.opt_out {
        OptOut::None => {}
        OptOut::Marketing => h.opt_out(&phone, false).await,
        OptOut::All => h.opt_out(&phone, true).await,
    }
    if s.cap_reached {
        let mut c = h.conn().await;
        for _ in 0..2 {
            diesel::insert_into(message_frequencies::table)
                .values((
                    message_frequencies::customer_phone.eq(p.digits()),
                    message_frequencies::category.eq("marketing"),
                    message_frequencies::message_id.eq(Uuid::now_v7()),
                ))
                .execute(&mut c)
                .await
                .unwrap();
        }
    }
    let now = Utc::now();
    match s.window {
        Window::Never => {}
        Window::Open => {
            h.inbound(&phone, now - TimeDelta::hours(1)).await;
        }
        Window::Closed => {
            h.inbound(&phone, now - TimeDelta::hours(25)).await;
        }
        Window::Implausible => {
            // A timestamp from the future (as a broken or forged webhook would carry),
            // stored directly: the decision must not trust it.
            h.inbound(&phone, now - TimeDelta::hours(30)).await;
            let mut c = h.conn().await;
            diesel::update(
                conversations::table.filter(conversations::customer_phone.eq(p.digits())),
            )
            .set(conversations::last_inbound_at.eq(now + TimeDelta::days(2)))
            .execute(&mut c)
            .await
            .unwrap();
            Core::new(h.deps.clone(), "test")
                .windows()
                .forget(p.digits(), "whatsapp", "default")
                .await;
        }
    }
    // A person (a hand-off) or another app (a handover) holds the conversation.
    let to = match held {
        Holder::Agents => None,
        Holder::Human => Some(warden_rules::holder::HolderKind::Human),
        Holder::OtherApp => Some(warden_rules::holder::HolderKind::OtherApp),
    };
    if let Some(to) = to {
        let mut c = h.conn().await;
        let change = warden_core::conversations::holder::Change {
            to,
            until: None,
            by: "test",
            reason: "the property test's holder",
            actor: "test",
        };
        warden_core::conversations::holder::set(
            &mut c,
            &p,
            "whatsapp",
            "default",
            &change,
            Utc::now(),
        )
        .await
        .unwrap();
    }
    p.digits().to_string()
}

/// A message row of `c` for `phone` in `status` (as an earlier acceptance left it).
async fn message_row(h: &Harness, phone: &str, c: Content, label: &str, status: &str) -> Uuid {
    let id = Uuid::now_v7();
    let mut conn = h.conn().await;
    diesel::insert_into(messages::table)
        .values((
            messages::id.eq(id),
            messages::customer_phone.eq(phone),
            messages::channel.eq("whatsapp"),
            messages::direction.eq("outbound"),
            messages::message_type.eq(label),
            messages::category.eq(c.category()),
            messages::status.eq(status),
            messages::content.eq(c.json()),
            messages::template_name.eq(c.template()),
            messages::template_locale.eq(c.template().map(|_| "en")),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    id
}

/// The reason code a recorded refusal carries (`CODE: explanation`), or OK when queued.
async fn row_outcome(h: &Harness, id: &str) -> String {
    let m = h.message(id).await;
    match m.status.as_str() {
        "queued" => "OK".into(),
        "failed" => {
            assert_eq!(m.error_category.as_deref(), Some("compliance"), "{m:?}");
            assert_eq!(m.error_can_retry, Some(false));
            let e = m.error_explanation.unwrap_or_default();
            e.split(':').next().unwrap_or_default().to_string()
        }
        other => panic!("unexpected status {other}"),
    }
}

fn code_of(is_error: bool, v: &Value) -> String {
    if is_error {
        v["error"]["code"].as_str().unwrap_or_default().to_string()
    } else {
        "OK".into()
    }
}

const LABELS: [&str; 5] = [
    "marketing",
    "utility",
    "authentication",
    "service",
    "template",
];

/// Runs every entry path for one (state, content, label) and checks each against the table.
async fn one_case(
    h: &Harness,
    s: &Customer,
    held: Holder,
    c: Content,
    label: &str,
) -> Result<(), TestCaseError> {
    let core = Core::new(h.deps.clone(), "test");
    let expected = table(s, held, c);
    let ctx = format!("{s:?} {held:?} {c:?} label={label}");

    // check_compliance: asked with the label that describes the content.
    if c != Content::Paused {
        let phone = customer(h, s, held).await;
        let described = if c.free_form() {
            "service"
        } else {
            c.category()
        };
        let v = h
            .ok(
                "check_compliance",
                json!({"customer_id": phone, "message_type": described}),
            )
            .await;
        prop_assert_eq!(
            v["reason_code"].as_str().unwrap(),
            expected,
            "check_compliance {}",
            ctx
        );
    }

    // The tools that send now.
    match c {
        Content::Text => {
            let phone = customer(h, s, held).await;
            let (e, v) = h
                .call("send_message", json!({"to": phone, "text": "Hi"}))
                .await;
            prop_assert_eq!(code_of(e, &v), expected, "send_message {} {}", ctx, v);
            let phone = customer(h, s, held).await;
            let (e, v) = h
                .call(
                    "reply_customer",
                    json!({"customer_id": phone, "message_text": "Hi"}),
                )
                .await;
            let reply = if expected == "TEMPLATE_REQUIRED" {
                "WINDOW_CLOSED"
            } else {
                expected
            };
            prop_assert_eq!(code_of(e, &v), reply, "reply_customer {} {}", ctx, v);
        }
        Content::Product | Content::ProductList | Content::Catalog => {
            let phone = customer(h, s, held).await;
            let mut args = c.interactive_args().unwrap();
            args["to"] = json!(phone);
            let (e, v) = h.call("send_interactive", args).await;
            prop_assert_eq!(code_of(e, &v), expected, "send_interactive {} {}", ctx, v);
        }
        _ => {
            let phone = customer(h, s, held).await;
            let (e, v) = h
                .call(
                    "send_template",
                    json!({"to": phone, "template_name": c.template().unwrap(), "variables": ["Ana"]}),
                )
                .await;
            prop_assert_eq!(code_of(e, &v), expected, "send_template {} {}", ctx, v);
        }
    }

    // schedule_message with the caller's label: opt-out is judged at scheduling (by the
    // content's category), the rest when the scheduler sends it.
    if !(c.free_form() && label == "template") {
        let phone = customer(h, s, held).await;
        let deliver_at = (Utc::now() + TimeDelta::minutes(30)).to_rfc3339();
        let (e, v) = h
            .call(
                "schedule_message",
                json!({"customer_id": phone, "message_type": label, "content": c.json(),
                       "deliver_at": deliver_at}),
            )
            .await;
        let at_scheduling = if compliance_table(s, c) == "USER_OPTED_OUT" {
            "USER_OPTED_OUT"
        } else {
            "OK"
        };
        prop_assert_eq!(
            code_of(e, &v),
            at_scheduling,
            "schedule_message {} {}",
            ctx,
            v
        );
        if !e {
            let id = v["message_id"].as_str().unwrap().to_string();
            let row = h.message(&id).await;
            prop_assert_eq!(
                row.category.as_str(),
                c.category(),
                "stored category {}",
                ctx
            );
            // What warden-scheduler does at deliver_at (messages.rs build_request).
            let result = core
                .send(SendRequest {
                    sender: None,
                    phone: canonicalize(&phone).unwrap(),
                    channel: "whatsapp".into(),
                    kind: SendKind::from_content(&row.content).unwrap(),
                    message_type: row.message_type.parse::<MessageType>().unwrap(),
                    campaign_id: None,
                    existing_message_id: Some(row.id),
                    refusal: RefusalMode::RecordFailed,
                    actor: "scheduler",
                })
                .await;
            prop_assert!(
                matches!(result, Ok(_) | Err(SendError::RefusedRecorded { .. })),
                "{ctx}: {result:?}"
            );
            prop_assert_eq!(
                row_outcome(h, &id).await,
                expected,
                "scheduled dispatch {}",
                ctx
            );
        }
    }

    // A campaign recipient, as warden-scheduler's campaigns.rs builds it.
    if !c.free_form() {
        let phone = customer(h, s, held).await;
        let result = core
            .send(SendRequest {
                sender: None,
                phone: canonicalize(&phone).unwrap(),
                channel: "whatsapp".into(),
                kind: c.kind(),
                message_type: MessageType::Template,
                campaign_id: None,
                existing_message_id: None,
                refusal: RefusalMode::RecordFailed,
                actor: "scheduler",
            })
            .await;
        let got = match &result {
            Ok(a) => row_outcome(h, &a.message_id.to_string()).await,
            Err(SendError::RefusedRecorded { message_id, .. }) => {
                row_outcome(h, &message_id.to_string()).await
            }
            Err(other) => panic!("{ctx}: {other:?}"),
        };
        prop_assert_eq!(got, expected, "campaign recipient {}", ctx);
    }

    // retry_failed_messages of a message that failed with a retryable platform error.
    {
        let phone = customer(h, s, held).await;
        let id = message_row(h, &phone, c, label, "queued").await;
        h.fail(&id.to_string(), 131000).await;
        let v = h
            .ok(
                "retry_failed_messages",
                json!({"message_ids": [id.to_string()]}),
            )
            .await;
        let item = &v["results"][0];
        if expected == "OK" {
            prop_assert_eq!(
                item["status"].as_str(),
                Some("retried"),
                "retry {} {}",
                ctx,
                v
            );
        } else {
            prop_assert_eq!(
                item["status"].as_str(),
                Some("skipped"),
                "retry {} {}",
                ctx,
                v
            );
            let reason = item["reason"].as_str().unwrap_or_default();
            prop_assert!(
                reason.contains(&format!("({expected})")),
                "retry {} {}",
                ctx,
                v
            );
        }
    }

    // The dispatcher's recheck of a queued message, right before the platform call.
    {
        let phone = customer(h, s, held).await;
        let id = message_row(h, &phone, c, label, "queued").await;
        let got = match warden_core::send::recheck::before_send(&h.deps.pg, id, "dispatcher")
            .await
            .unwrap()
        {
            Recheck::Send => "OK".to_string(),
            Recheck::Refused(d) => {
                prop_assert_eq!(
                    row_outcome(h, &id.to_string()).await,
                    d.reason_code.as_str()
                );
                d.reason_code.as_str().to_string()
            }
        };
        prop_assert_eq!(got, recheck_table(s, held, c), "dispatcher recheck {}", ctx);
    }
    Ok(())
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        Just(Content::Text),
        Just(Content::Product),
        Just(Content::ProductList),
        Just(Content::Catalog),
        Just(Content::Marketing),
        Just(Content::Utility),
        Just(Content::Authentication),
        Just(Content::Paused),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entry_path_gives_the_rule_tables_decision_whatever_the_label() {
    let h = Harness::start().await;
    for (name, category, status) in [
        ("pt_marketing", "marketing", "APPROVED"),
        ("pt_utility", "utility", "APPROVED"),
        ("pt_authentication", "authentication", "APPROVED"),
        ("pt_paused", "utility", "PAUSED"),
    ] {
        h.insert_template(name, "en", category, status, "Hello {{1}}")
            .await;
    }
    let cases: u32 = std::env::var("COMPLIANCE_PATH_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let handle = tokio::runtime::Handle::current();
    let strategy = (
        customers(),
        holders(),
        content(),
        proptest::sample::select(LABELS.to_vec()),
    );
    // proptest drives synchronously; each case runs on this test's runtime.
    let result = tokio::task::block_in_place(|| {
        runner.run(&strategy, |(s, held, c, label)| {
            handle.block_on(one_case(&h, &s, held, c, label))
        })
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
