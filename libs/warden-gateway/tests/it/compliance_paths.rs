//! Property test over the real entry paths: the same customer state and the same
//! content get the same decision and reason code from check_compliance, send_message,
//! reply_customer, send_template (plain, carousel, limited-time offer, authentication code),
//! schedule_message (at scheduling and at dispatch, as the scheduler builds the send),
//! send_interactive's free-form kinds (flow, location and call permission requests,
//! product, product_list, catalog) and send_contacts, a campaign recipient (as the
//! scheduler builds it), retry_failed_messages and the dispatcher's recheck, whatever
//! `message_type` the caller gives, and that decision is the rule table's
//! (`warden_test_support::rule_table`), with
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
    /// A free-form Flow message (send_interactive kind flow).
    Flow,
    /// A marketing carousel (its cards given at send).
    Carousel,
    /// A marketing limited-time offer (its expiry given at send).
    Offer,
    /// An authentication template made with otp_type (its code given at send).
    Code,
}

impl Content {
    /// Free-form (a service message): it needs the care window.
    fn free_form(self) -> bool {
        self.template().is_none()
    }
    fn template(self) -> Option<&'static str> {
        match self {
            Content::Text
            | Content::Flow
            | Content::Product
            | Content::ProductList
            | Content::Catalog => None,
            Content::Marketing => Some("pt_marketing"),
            Content::Utility => Some("pt_utility"),
            Content::Authentication => Some("pt_authentication"),
            Content::Paused => Some("pt_paused"),
            Content::Carousel => Some("pt_carousel"),
            Content::Offer => Some("pt_offer"),
            Content::Code => Some("pt_code"),
        }
    }
    fn category(self) -> &'static str {
        match self {
            Content::Text
            | Content::Flow
            | Content::Product
            | Content::ProductList
            | Content::Catalog => "service",
            Content::Marketing | Content::Carousel | Content::Offer => "marketing",
            Content::Utility | Content::Paused => "utility",
            Content::Authentication | Content::Code => "authentication",
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
        if self == Content::Flow {
            return json!({"type": "interactive", "interactive": {"type": "flow",
                "body": {"text": "Book a table"},
                "action": {"name": "flow", "parameters": {"flow_message_version": "3",
                    "flow_token": "pt-flow", "flow_id": "1234", "flow_cta": "Book",
                    "mode": "published", "flow_action": "navigate",
                    "flow_action_payload": {"screen": "BOOKING"}}}}});
        }
        let Some(name) = self.template() else {
            return json!({"type": "text", "text": {"body": "Your order shipped."}});
        };
        let mut t = json!({"name": name, "language": "en", "variables": ["Ana"]});
        match self {
            Content::Carousel => t["cards"] = cards(),
            Content::Offer => {
                t["offer_expires_at"] = json!((Utc::now() + TimeDelta::days(2)).to_rfc3339());
                t["components"] = json!([coupon()]);
            }
            Content::Code => t = json!({"name": name, "language": "en", "code": "493021"}),
            _ => {}
        }
        json!({"type": "template", "template": t})
    }
    /// send_template's arguments for this content to `phone`.
    fn send_args(self, phone: &str) -> Value {
        let mut a =
            json!({"to": phone, "template_name": self.template().unwrap(), "variables": ["Ana"]});
        match self {
            Content::Carousel => a["cards"] = json!(cards().to_string()),
            Content::Offer => {
                a["offer_expires_at"] = json!((Utc::now() + TimeDelta::days(2)).to_rfc3339());
                a["components"] = json!(json!([coupon()]).to_string());
            }
            Content::Code => a = json!({"to": phone, "template_name": "pt_code", "code": "493021"}),
            _ => {}
        }
        a
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

fn cards() -> Value {
    json!([{"header": {"link": "https://shop.example/1.jpg"}}, {"header": {"link": "https://shop.example/2.jpg"}}])
}

fn coupon() -> Value {
    json!({"type": "button", "sub_type": "copy_code", "index": 0,
           "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]})
}

/// The stored components and body of the format templates (carousel, offer, code).
fn format_template(c: Content) -> (Value, &'static str) {
    use warden_rules::kinds::TemplateCategory;
    use warden_rules::template_spec::formats::authentication::{Authentication, OtpType};
    use warden_rules::template_spec::formats::carousel::parse_cards;
    use warden_rules::template_spec::formats::offer::parse_offer;
    use warden_rules::template_spec::{TemplateFormat, TemplateSpec, parse_buttons};
    let card = json!({"header": {"format": "IMAGE", "example": "4::h"},
                      "buttons": [{"type": "QUICK_REPLY", "text": "More"}]});
    let (spec, category) = match c {
        Content::Carousel => (
            TemplateSpec {
                body: "Hello {{1}}".into(),
                format: TemplateFormat::Carousel(
                    parse_cards(&json!([card.clone(), card])).unwrap(),
                ),
                ..Default::default()
            },
            TemplateCategory::Marketing,
        ),
        Content::Offer => (
            TemplateSpec {
                body: "Hello {{1}}".into(),
                buttons: parse_buttons(&json!([
                    {"type": "COPY_CODE", "text": "Copy", "example": "SAVE10"},
                    {"type": "URL", "text": "Shop", "url": "https://shop.example"},
                ]))
                .unwrap(),
                format: TemplateFormat::LimitedTimeOffer(
                    parse_offer(&json!({"text": "Ends soon", "has_expiration": true})).unwrap(),
                ),
                ..Default::default()
            },
            TemplateCategory::Marketing,
        ),
        _ => (
            Authentication {
                otp_type: OtpType::CopyCode,
                code_expiration_minutes: Some(5),
                add_security_recommendation: true,
                package_name: None,
                signature_hash: None,
            }
            .into_spec(),
            TemplateCategory::Authentication,
        ),
    };
    spec.validate(category).unwrap();
    let body = if c == Content::Code {
        "{{1}} is your verification code."
    } else {
        "Hello {{1}}"
    };
    (Value::Array(spec.to_components()), body)
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

/// Free-form sends of the newer kinds, `to` filled in per case.
fn free_form_kinds() -> [(&'static str, Value); 3] {
    [
        (
            "send_interactive",
            json!({"kind": "location_request", "body": "Where should we deliver?"}),
        ),
        (
            "send_interactive",
            json!({"kind": "call_permission_request", "body": "May we call you?"}),
        ),
        (
            "send_contacts",
            json!({"contacts": [{"name": {"formatted_name": "Support"},
                                 "phones": [{"phone": "+62 811 000", "type": "WORK"}]}]}),
        ),
    ]
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
            // The free-form kinds of every tool take the same path: a location request, a
            // call permission request (no grant, none sent yet) and contact cards.
            for (tool, args) in free_form_kinds() {
                let phone = customer(h, s, held).await;
                let mut args = args;
                args["to"] = json!(phone);
                let (e, v) = h.call(tool, args.clone()).await;
                prop_assert_eq!(code_of(e, &v), expected, "{} {} {} {}", tool, args, ctx, v);
            }
        }
        Content::Product | Content::ProductList | Content::Catalog => {
            let phone = customer(h, s, held).await;
            let mut args = c.interactive_args().unwrap();
            args["to"] = json!(phone);
            let (e, v) = h.call("send_interactive", args).await;
            prop_assert_eq!(code_of(e, &v), expected, "send_interactive {} {}", ctx, v);
        }
        Content::Flow => {
            let phone = customer(h, s, held).await;
            let (e, v) = h
                .call(
                    "send_interactive",
                    json!({"to": phone, "kind": "flow", "body": "Book a table",
                           "flow_id": "1234", "flow_cta": "Book", "screen": "BOOKING"}),
                )
                .await;
            prop_assert_eq!(
                code_of(e, &v),
                expected,
                "send_interactive flow {} {}",
                ctx,
                v
            );
            if !e {
                prop_assert!(v["flow_token"].as_str().is_some(), "flow_token {}", v);
            }
        }
        _ => {
            let phone = customer(h, s, held).await;
            let (e, v) = h.call("send_template", c.send_args(&phone)).await;
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
        Just(Content::Flow),
        Just(Content::Carousel),
        Just(Content::Offer),
        Just(Content::Code),
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
    for (c, category) in [
        (Content::Carousel, "marketing"),
        (Content::Offer, "marketing"),
        (Content::Code, "authentication"),
    ] {
        use warden_store::schema::templates;
        let name = c.template().unwrap();
        let (components, body) = format_template(c);
        h.insert_template(name, "en", category, "APPROVED", body)
            .await;
        let mut conn = h.conn().await;
        diesel::update(templates::table.filter(templates::name.eq(name)))
            .set((
                templates::components.eq(Some(components)),
                templates::parameter_format.eq(Some("positional")),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
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
