//! Several numbers and businesses (examples/senders.yaml: A1 and A2 of business A, B1 of
//! business B), against real Postgres: what belongs to the number (the care window), to the
//! business (opt-outs, the frequency cap) and to the portfolio (the messaging limit), all
//! decided on the one send path.

use std::collections::HashMap;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_core::campaigns::fanout::recipients::{RecipientPlan, sender_for};
use warden_core::customers::{self, OptScope};
use warden_core::{Core, CoreError, SendError, SendKind, SendRequest, TemplateSend, conversations};
use warden_rules::compliance::ReasonCode;
use warden_rules::keywords::OptChange;
use warden_rules::kinds::MessageType;
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_settings::Senders;
use warden_store::schema::{message_senders, templates};

use crate::common::TestCore;

const CAP: &str = "version: 1
policies:
  - id: marketing_cap
    type: frequency_limit
    message_types: [marketing]
    max: 2
    window: 24h
";

fn example_senders() -> Senders {
    let env: HashMap<&str, &str> = [
        ("SENDER_A1_TOKEN", "tok-a1"),
        ("SENDER_A2_TOKEN", "tok-a2"),
        ("SENDER_B1_TOKEN", "tok-b1"),
        ("SENDER_A_APP_SECRET", "app-a"),
        ("SENDER_B_APP_SECRET", "app-b"),
    ]
    .into();
    Senders::from_yaml(include_str!("../../../../examples/senders.yaml"), &|name| {
        env.get(name).map(|v| v.to_string())
    })
    .unwrap()
}

async fn harness() -> TestCore {
    let h = TestCore::builder()
        .senders(example_senders())
        .policies_yaml(CAP)
        .build()
        .await;
    let core = &h.core;
    let mut conn = core.pg().get().await.unwrap();
    // Each business has its own copy of both templates (templates belong to a business).
    let businesses: Vec<String> = core
        .senders()
        .all()
        .iter()
        .map(|s| core.senders().key_of(s).business)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let each = businesses.iter().flat_map(|b| {
        [("promo", "marketing"), ("order_update", "utility")].map(|(n, c)| (b.clone(), n, c))
    });
    for (business, name, category) in each {
        diesel::insert_into(templates::table)
            .values((
                templates::business.eq(business),
                templates::name.eq(name),
                templates::locale.eq("en"),
                templates::category.eq(category),
                templates::status.eq("APPROVED"),
                templates::body_text.eq("Hello {{1}}"),
            ))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    drop(conn);
    h
}

fn phone() -> PhoneNumber {
    let n = 8_000_000_000 + (uuid::Uuid::new_v4().as_u128() % 999_999_999) as u64;
    canonicalize(&format!("62{n}")).unwrap()
}

fn template(to: &PhoneNumber, name: &str, from: &str) -> SendRequest {
    SendRequest::from_tool(
        to.clone(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: name.into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        }),
        MessageType::Template,
        "test",
    )
    .from_sender(Some(from))
}

fn text(to: &PhoneNumber, from: &str) -> SendRequest {
    SendRequest::from_tool(
        to.clone(),
        "whatsapp",
        SendKind::Text { body: "hi".into() },
        MessageType::Service,
        "test",
    )
    .from_sender(Some(from))
}

/// OK, or the refusal's reason code.
async fn outcome(core: &Core, req: SendRequest) -> String {
    match core.send(req).await {
        Ok(accepted) => {
            assert!(!accepted.from.is_empty());
            "OK".into()
        }
        Err(SendError::Refused(d)) => d.reason_code.as_str().to_string(),
        Err(e) => panic!("unexpected: {e:?}"),
    }
}

async fn stop(core: &Core, sender: &str, p: &PhoneNumber) {
    let business = core.sender_keys(Some(sender)).unwrap().business;
    let mut conn = core.pg().get().await.unwrap();
    assert!(
        customers::apply_opt_change(
            &mut conn,
            &business,
            p,
            OptChange::Stop,
            OptScope::All,
            "stop_keyword",
            "test",
            Utc::now(),
        )
        .await
        .unwrap()
    );
}

#[tokio::test]
async fn a_stop_to_one_number_stops_its_business_not_another() {
    let h = harness().await;
    let (p, q) = (phone(), phone());
    stop(&h.core, "a1", &p).await;
    assert_eq!(
        outcome(&h.core, template(&p, "promo", "a2")).await,
        "USER_OPTED_OUT"
    );
    assert_eq!(
        outcome(&h.core, template(&p, "promo", "a1")).await,
        "USER_OPTED_OUT"
    );
    assert_eq!(outcome(&h.core, template(&p, "promo", "b1")).await, "OK");
    // And the other way round: B's STOP leaves A's consent alone.
    stop(&h.core, "b1", &q).await;
    assert_eq!(
        outcome(&h.core, template(&q, "promo", "b1")).await,
        "USER_OPTED_OUT"
    );
    assert_eq!(outcome(&h.core, template(&q, "promo", "a2")).await, "OK");
    // check_compliance reads the same.
    let content = MessageType::Marketing.described_content();
    let d = h
        .core
        .check(&q, Some("b1"), content, Utc::now())
        .await
        .unwrap();
    assert_eq!(d.reason_code, ReasonCode::UserOptedOut);
    let d = h
        .core
        .check(&q, Some("a1"), content, Utc::now())
        .await
        .unwrap();
    assert!(d.allowed);
}

#[tokio::test]
async fn a_window_opened_on_one_number_does_not_open_another() {
    let h = harness().await;
    let p = phone();
    let a1 = h.core.sender_keys(Some("a1")).unwrap();
    let mut conn = h.core.pg().get().await.unwrap();
    customers::ensure(&mut conn, &p).await.unwrap();
    conversations::record_inbound(
        &mut conn,
        &p,
        "whatsapp",
        &a1.sender,
        Utc::now() - TimeDelta::minutes(5),
    )
    .await
    .unwrap();
    drop(conn);
    assert_eq!(outcome(&h.core, text(&p, "a1")).await, "OK");
    assert_eq!(outcome(&h.core, text(&p, "a2")).await, "TEMPLATE_REQUIRED");
    assert_eq!(outcome(&h.core, text(&p, "b1")).await, "TEMPLATE_REQUIRED");
    let view = h.core.conversation(&p, "whatsapp", "a2").await.unwrap();
    assert!(!view.window_open);
    let view = h
        .core
        .conversation(&p, "whatsapp", &a1.sender)
        .await
        .unwrap();
    assert!(view.window_open);
}

#[tokio::test]
async fn the_frequency_cap_counts_across_a_business_numbers() {
    let h = harness().await;
    let p = phone();
    assert_eq!(outcome(&h.core, template(&p, "promo", "a1")).await, "OK");
    assert_eq!(outcome(&h.core, template(&p, "promo", "a2")).await, "OK");
    assert_eq!(
        outcome(&h.core, template(&p, "promo", "a2")).await,
        "FREQUENCY_CAP_EXCEEDED"
    );
    assert_eq!(
        outcome(&h.core, template(&p, "promo", "a1")).await,
        "FREQUENCY_CAP_EXCEEDED"
    );
    // Business B has sent nothing to them.
    assert_eq!(outcome(&h.core, template(&p, "promo", "b1")).await, "OK");
    let st = h.core.frequency(&p, Some("a2"), Utc::now()).await.unwrap();
    assert!(st.is_capped);
    let st = h.core.frequency(&p, Some("b1"), Utc::now()).await.unwrap();
    assert!(!st.is_capped);
}

#[tokio::test]
async fn the_portfolio_limit_counts_across_a_portfolios_numbers() {
    let h = harness().await;
    let a = h.core.sender_keys(Some("a2")).unwrap().portfolio;
    assert!(
        warden_core::account::portfolio::learn_from_platform(h.core.pg(), &a, "1", "test", "test")
            .await
            .unwrap()
    );
    let (p, q) = (phone(), phone());
    assert_eq!(
        outcome(&h.core, template(&p, "order_update", "a1")).await,
        "OK"
    );
    // A second customer from the other number of the same portfolio: the limit is reached.
    assert_eq!(
        outcome(&h.core, template(&q, "order_update", "a2")).await,
        "POLICY_RESTRICTION"
    );
    // The customer already reached still may be written to, from either number.
    assert_eq!(
        outcome(&h.core, template(&p, "order_update", "a2")).await,
        "OK"
    );
    // Business B's portfolio has its own limit (not known: nothing enforced).
    assert_eq!(
        outcome(&h.core, template(&q, "order_update", "b1")).await,
        "OK"
    );
    let usage = warden_core::account::portfolio::current_usage(h.core.pg(), &a, Utc::now())
        .await
        .unwrap();
    assert_eq!(usage.used, 1);
}

#[tokio::test]
async fn messages_remember_their_number_and_unknown_senders_are_named() {
    let h = harness().await;
    let p = phone();
    let from_a2 = h
        .core
        .send(template(&p, "order_update", "a2"))
        .await
        .unwrap();
    assert_eq!(from_a2.from, "a2");
    // By phone number id too; the default sender's rows carry no extra row.
    let from_a1 = h
        .core
        .send(template(&p, "order_update", "104000000000001"))
        .await
        .unwrap();
    assert_eq!(from_a1.from, "a1");
    let mut conn = h.core.pg().get().await.unwrap();
    let rows: Vec<(uuid::Uuid, String)> = message_senders::table
        .select((message_senders::message_id, message_senders::sender_id))
        .load(&mut conn)
        .await
        .unwrap();
    assert_eq!(rows, vec![(from_a2.message_id, "a2".to_string())]);
    drop(conn);
    assert_eq!(
        h.core.message_sender(from_a1.message_id).await.unwrap(),
        "default"
    );
    match h.core.send(template(&p, "order_update", "c9")).await {
        Err(SendError::InvalidArgument(m)) => {
            assert!(m.contains("`c9`") && m.contains("a1, a2, b1"), "{m}")
        }
        other => panic!("unexpected: {other:?}"),
    }
    assert!(matches!(
        h.core.sender(Some("nope")),
        Err(CoreError::InvalidArgument(_))
    ));
}

#[test]
fn a_campaign_over_several_numbers_keeps_each_customer_on_one() {
    let senders = vec!["default".to_string(), "a2".to_string()];
    let plan = RecipientPlan {
        campaign_id: uuid::Uuid::now_v7(),
        template_name: "promo".into(),
        locale: "en".into(),
        variables: Vec::new(),
        components: Vec::new(),
        senders: senders.clone(),
    };
    let mut used: HashMap<String, usize> = HashMap::new();
    for _ in 0..200 {
        let p = phone();
        let first = plan.request(p.clone(), "test").sender.unwrap();
        for _ in 0..3 {
            assert_eq!(plan.request(p.clone(), "test").sender.unwrap(), first);
        }
        assert_eq!(sender_for(&senders, &p), Some(first.as_str()));
        *used.entry(first).or_default() += 1;
    }
    // Both numbers carry a share.
    assert_eq!(used.len(), 2, "{used:?}");
    assert!(used.values().all(|&n| n > 50), "{used:?}");
}

#[tokio::test]
async fn a_protected_number_sends_no_marketing_until_resumed() {
    use warden_core::account::protection;
    let h = harness().await;
    let p = phone();
    // A campaign from A2 and one from A1.
    let mut conn = h.core.pg().get().await.unwrap();
    let campaign = |sender: &str| {
        format!(
            "INSERT INTO campaigns (name, campaign_type, status, deliver_at, template_name, locale, \
             variables, audience_filter, sender_id) VALUES ('c-{sender}', 'marketing', 'running', now(), \
             'promo', 'en', '[]', '{{}}', '{sender}')"
        )
    };
    for sender in ["a2", "default"] {
        diesel::sql_query(campaign(sender))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let paused = protection::protect(
        &mut conn,
        "a2",
        "platform error 131048 (Spam rate limit hit)",
        "platform_error",
        "test",
    )
    .await
    .unwrap();
    assert_eq!(paused, 1, "only A2's campaign pauses");
    drop(conn);
    match h.core.send(template(&p, "promo", "a2")).await {
        Err(SendError::Refused(d)) => {
            assert_eq!(d.policy_id.as_deref(), Some("sender_protection"));
            assert!(
                d.human_explanation.contains("`a2`"),
                "{}",
                d.human_explanation
            );
            assert!(
                d.suggested_action.contains("resume_sender"),
                "{}",
                d.suggested_action
            );
        }
        other => panic!("unexpected: {other:?}"),
    }
    // Utility from A2 and marketing from A1 go on.
    assert_eq!(
        outcome(&h.core, template(&p, "order_update", "a2")).await,
        "OK"
    );
    assert_eq!(outcome(&h.core, template(&p, "promo", "a1")).await, "OK");
    assert!(h.core.resume_sender("a2").await.unwrap());
    assert!(
        !h.core.resume_sender("a2").await.unwrap(),
        "nothing left to lift"
    );
    assert_eq!(outcome(&h.core, template(&p, "promo", "a2")).await, "OK");
    let mut conn = h.core.pg().get().await.unwrap();
    let running: i64 = diesel::sql_query(
        "SELECT count(*) AS n FROM campaigns WHERE status = 'running' AND status_reason IS NULL",
    )
    .get_result::<Count>(&mut conn)
    .await
    .unwrap()
    .n;
    assert_eq!(running, 2, "the paused campaign runs again");
    let audited: i64 = diesel::sql_query(
        "SELECT count(*) AS n FROM audit_logs WHERE action IN ('sender_protected', 'sender_resumed') \
         AND entity_id = 'a2'",
    )
    .get_result::<Count>(&mut conn)
    .await
    .unwrap()
    .n;
    assert_eq!(audited, 2);
}

/// A template sent to `p` from `from`, then the platform's answer `effect` applied to it (as
/// the dispatcher would); returns how many campaigns that paused.
async fn platform_effect_on_a_send(
    h: &TestCore,
    p: &PhoneNumber,
    from: &str,
    effect: warden_core::delivery::platform_errors::SideEffect,
) -> usize {
    let sent = h
        .core
        .send(template(p, "order_update", from))
        .await
        .unwrap();
    let mut conn = h.core.pg().get().await.unwrap();
    warden_core::delivery::platform_errors::apply_effect(
        &mut conn,
        sent.message_id,
        &effect,
        Some(p),
        Utc::now(),
        "test",
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_halt_class_error_protects_the_number_it_came_from() {
    use warden_core::delivery::platform_errors::SideEffect;
    let h = harness().await;
    let p = phone();
    let blocked = SideEffect::ProtectSender("platform error 368 (Temporarily blocked)".into());
    platform_effect_on_a_send(&h, &p, "b1", blocked).await;
    let mut conn = h.core.pg().get().await.unwrap();
    let protected = warden_core::account::protection::all(&mut conn)
        .await
        .unwrap();
    drop(conn);
    assert_eq!(protected.len(), 1);
    assert_eq!(protected[0].sender_id, "b1");
    assert_eq!(
        outcome(&h.core, template(&p, "promo", "b1")).await,
        "POLICY_RESTRICTION"
    );
    assert_eq!(outcome(&h.core, template(&p, "promo", "a1")).await, "OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_halt_class_error_pauses_its_numbers_campaigns_only() {
    use warden_core::delivery::platform_errors::SideEffect;
    let expired = || SideEffect::PauseCampaigns("platform error 190 (Access token expired)".into());
    let h = harness().await;
    let p = phone();
    let mut conn = h.core.pg().get().await.unwrap();
    // A running campaign of b1, one of a1, one spread over a1 and b1's business A numbers.
    let mut ids = Vec::new();
    for (sender, senders) in [
        ("b1", None),
        ("default", None),
        ("default", Some(vec!["default", "a2"])),
    ] {
        let id: uuid::Uuid = diesel::sql_query(
            "INSERT INTO campaigns (name, campaign_type, status, deliver_at, template_name, sender_id, senders)
             VALUES ('c', 'marketing', 'running', now(), 'promo', $1, $2) RETURNING id",
        )
        .bind::<diesel::sql_types::Text, _>(sender)
        .bind::<diesel::sql_types::Nullable<diesel::sql_types::Array<diesel::sql_types::Text>>, _>(
            senders,
        )
        .get_result::<IdOf>(&mut conn)
        .await
        .unwrap()
        .id;
        ids.push(id);
    }
    drop(conn);
    let status = |id: uuid::Uuid| {
        let core = h.core.clone();
        async move {
            let mut conn = core.pg().get().await.unwrap();
            warden_store::schema::campaigns::table
                .find(id)
                .select(warden_store::schema::campaigns::status)
                .first::<String>(&mut conn)
                .await
                .unwrap()
        }
    };
    // An expired token on a message from b1: b1's campaign stops, business A's go on.
    let paused = platform_effect_on_a_send(&h, &p, "b1", expired()).await;
    assert_eq!(paused, 1);
    assert_eq!(status(ids[0]).await, "paused");
    assert_eq!(status(ids[1]).await, "running");
    assert_eq!(status(ids[2]).await, "running");
    // On a message from a2: the campaign spread over a1 and a2 stops, a1's alone goes on.
    platform_effect_on_a_send(&h, &p, "a2", expired()).await;
    assert_eq!(status(ids[1]).await, "running");
    assert_eq!(status(ids[2]).await, "paused");
}

#[derive(diesel::QueryableByName)]
struct IdOf {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: uuid::Uuid,
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

#[tokio::test]
async fn history_and_inbox_are_per_number() {
    use warden_core::conversations::inbound_batch::{self, Inbound};
    use warden_core::conversations::view;
    let h = harness().await;
    let p = phone();
    let a2 = h.core.sender_keys(Some("a2")).unwrap();
    let content = serde_json::json!({"type": "text", "text": {"body": "hello A2"}});
    let mut conn = h.core.pg().get().await.unwrap();
    let wamid = format!("wamid.{}", uuid::Uuid::new_v4().simple());
    inbound_batch::record(
        &mut conn,
        "whatsapp",
        &a2,
        &[Inbound {
            phone: &p,
            wamid: &wamid,
            message_type: "text",
            content: &content,
            window: Ok(Utc::now() - TimeDelta::minutes(1)),
        }],
    )
    .await
    .unwrap();
    drop(conn);
    let from_a1 = h
        .core
        .send(template(&p, "order_update", "a1"))
        .await
        .unwrap();
    let from_a2 = h.core.send(text(&p, "a2")).await.unwrap();

    let mut conn = h.core.pg().get().await.unwrap();
    let of = |id: &str| h.core.sender_ref(Some(id)).unwrap();
    let page = view::history(&mut conn, p.digits(), "whatsapp", &of("a2"), 50, None)
        .await
        .unwrap();
    assert_eq!(page.from, "a2");
    let ids: Vec<&str> = page
        .messages
        .iter()
        .map(|m| m.message_id.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "the inbound and the reply on A2: {ids:?}");
    assert!(ids.contains(&from_a2.message_id.to_string().as_str()));
    let page = view::history(&mut conn, p.digits(), "whatsapp", &of("a1"), 50, None)
        .await
        .unwrap();
    let ids: Vec<String> = page.messages.iter().map(|m| m.message_id.clone()).collect();
    assert_eq!(ids, vec![from_a1.message_id.to_string()]);

    // A2's conversation was answered; a second inbound puts it in the inbox, as A2's.
    let wamid = format!("wamid.{}", uuid::Uuid::new_v4().simple());
    inbound_batch::record(
        &mut conn,
        "whatsapp",
        &a2,
        &[Inbound {
            phone: &p,
            wamid: &wamid,
            message_type: "text",
            content: &content,
            window: Ok(Utc::now()),
        }],
    )
    .await
    .unwrap();
    let senders = h.core.senders();
    let all = view::inbox(&mut conn, "whatsapp", senders, None, 50, 0, Utc::now())
        .await
        .unwrap();
    let mine: Vec<_> = all
        .items
        .iter()
        .filter(|i| i.customer_id == p.digits())
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0].from, "a2");
    assert_eq!(mine[0].unanswered_count, 1);
    let only_a1 = view::inbox(
        &mut conn,
        "whatsapp",
        senders,
        Some(&[of("a1").key]),
        50,
        0,
        Utc::now(),
    )
    .await
    .unwrap();
    assert!(only_a1.items.iter().all(|i| i.customer_id != p.digits()));
}

fn bsuid(cc: &str) -> warden_rules::bsuid::Bsuid {
    warden_rules::bsuid::parse(&format!("{cc}.{}", rand::random::<u64>())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bsuid_belongs_to_the_portfolio_of_the_number_it_came_to() {
    use warden_core::customers::identity::{self, Address, Identity};
    let h = harness().await;
    let portfolio_b = h.core.sender_keys(Some("b1")).unwrap().portfolio;
    assert_ne!(portfolio_b, "default");
    let p = phone();
    let (in_a, in_b) = (bsuid("ID"), bsuid("ID"));
    let mut conn = h.core.pg().get().await.unwrap();
    // The same person wrote to A1 and to B1: one customer, a BSUID in each portfolio.
    for (portfolio, b) in [("default", &in_a), (portfolio_b.as_str(), &in_b)] {
        let id = Identity {
            phone: Some(p.clone()),
            bsuid: Some(b.clone()),
            ..Identity::default()
        };
        let key = identity::link(&mut conn, portfolio, &id, Utc::now(), "test")
            .await
            .unwrap();
        assert_eq!(key, Some(p.clone()));
    }
    for b in [&in_a, &in_b] {
        assert_eq!(identity::resolve(&mut conn, &b.key()).await.unwrap(), p);
    }
    let ids = identity::identifiers(&mut conn, &p).await.unwrap();
    assert_eq!(ids.bsuid.as_deref(), Some(in_a.as_str()));

    // Someone who wrote to B1 only, without a phone: reachable from B's numbers only.
    let only_b = bsuid("BR");
    let id = Identity {
        bsuid: Some(only_b.clone()),
        ..Identity::default()
    };
    let key = identity::link(&mut conn, &portfolio_b, &id, Utc::now(), "test")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        identity::address_for(&mut conn, &portfolio_b, key.digits())
            .await
            .unwrap(),
        Some(Address::Recipient(only_b.as_str().to_string()))
    );
    assert_eq!(
        identity::address_for(&mut conn, "default", key.digits())
            .await
            .unwrap(),
        None
    );
    drop(conn);
    assert_eq!(
        outcome(&h.core, template(&key, "order_update", "b1")).await,
        "OK"
    );
    match h.core.send(template(&key, "order_update", "a1")).await {
        Err(SendError::InvalidArgument(m)) => {
            assert!(m.contains("another business portfolio"), "{m}")
        }
        other => panic!("a1 used business B's BSUID: {other:?}"),
    }
    // A new BSUID for B (user_changed_user_id) replaces B's, not A's.
    let mut conn = h.core.pg().get().await.unwrap();
    let renewed = bsuid("ID");
    identity::change_bsuid(&mut conn, &portfolio_b, &p, &renewed, Utc::now(), "test")
        .await
        .unwrap();
    assert_eq!(
        identity::resolve(&mut conn, &renewed.key()).await.unwrap(),
        p
    );
    assert_eq!(identity::resolve(&mut conn, &in_a.key()).await.unwrap(), p);
    assert_eq!(
        identity::resolve(&mut conn, &in_b.key()).await.unwrap(),
        in_b.key(),
        "B's old BSUID no longer names the customer"
    );
}
