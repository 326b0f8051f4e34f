//! Every page answers an operator, the overview's numbers are the database's, and the
//! actions: reply as the operator, forget with confirmation, campaign pause/resume/cancel,
//! the policy tester (nothing sent), the consent timeline.

use chrono::Utc;
use serde_json::json;
use warden_core::operators::Role;
use warden_core::{SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_rules::phone::PhoneNumber;

use crate::common::*;

const A: &str = "6281234567890";
const B: &str = "6281234567891";
const C: &str = "6281234567892";

fn phone(p: &str) -> PhoneNumber {
    p.parse().unwrap()
}

/// A customer who wrote "hi" just now (window open), as the webhook would store it.
async fn customer_wrote(c: &Console, who: &str, text: &str) {
    let key = c.core.sender_keys(None).unwrap().sender;
    let mut conn = c.pg.get().await.unwrap();
    warden_core::customers::ensure(&mut conn, &phone(who))
        .await
        .unwrap();
    warden_core::conversations::record_inbound(
        &mut conn,
        &phone(who),
        "whatsapp",
        &key,
        Utc::now(),
    )
    .await
    .unwrap();
    drop(conn);
    c.exec(&format!(
        "INSERT INTO messages (id, customer_phone, direction, message_type, category, status, content)
         VALUES (gen_random_uuid(), '{who}', 'inbound', 'text', 'service', 'received', '{}')",
        json!({"type": "text", "text": {"body": text}})
    ))
    .await;
}

fn text_to(who: &str, body: &str, actor: &'static str) -> SendRequest {
    SendRequest::from_tool(
        phone(who),
        "whatsapp",
        SendKind::Text {
            body: body.to_string(),
        },
        MessageType::Service,
        actor,
    )
}

/// The number in the cell after `marker` (`data-stage="sent">12<`).
fn number_after(html: &str, marker: &str) -> i64 {
    let at = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in page"));
    let rest = &html[at + marker.len()..];
    let rest = &rest[rest.find('>').unwrap() + 1..];
    rest[..rest.find('<').unwrap()].trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_answers_and_the_overview_counts_what_the_database_holds() {
    let c = Console::start().await;
    customer_wrote(&c, A, "hi there").await;
    let bot = c.core.as_actor("bot");
    bot.send(text_to(A, "hello from the bot", "bot"))
        .await
        .unwrap();
    // B never wrote: free-form text is refused (audited send_refused TEMPLATE_REQUIRED).
    match bot.send(text_to(B, "hello?", "bot")).await {
        Err(SendError::Refused(d)) => assert_eq!(d.reason_code.as_str(), "TEMPLATE_REQUIRED"),
        other => panic!("{other:?}"),
    }
    for (status, age) in [
        ("delivered", "1 hour"),
        ("read", "2 hours"),
        ("failed", "3 hours"),
        ("sent", "3 days"),
    ] {
        c.exec(&format!(
            "INSERT INTO messages (id, customer_phone, direction, message_type, category, status, created_at)
             VALUES (gen_random_uuid(), '{A}', 'outbound', 'text', 'service', '{status}', now() - interval '{age}')"
        ))
        .await;
    }
    let mut b = c.logged_in("ana", Role::Operator).await;
    let home = b.page("/").await;
    let day = "created_at >= now() - interval '24 hours' AND direction = 'outbound'";
    let expect = [
        (
            "recorded",
            format!("SELECT count(*) AS n FROM messages WHERE {day}"),
        ),
        (
            "waiting",
            format!(
                "SELECT count(*) AS n FROM messages WHERE {day} AND status IN ('scheduled','queued','sending')"
            ),
        ),
        (
            "sent",
            format!(
                "SELECT count(*) AS n FROM messages WHERE {day} AND status IN ('sent','delivered','read')"
            ),
        ),
        (
            "delivered",
            format!(
                "SELECT count(*) AS n FROM messages WHERE {day} AND status IN ('delivered','read')"
            ),
        ),
        (
            "read",
            format!("SELECT count(*) AS n FROM messages WHERE {day} AND status = 'read'"),
        ),
        (
            "failed",
            format!("SELECT count(*) AS n FROM messages WHERE {day} AND status = 'failed'"),
        ),
    ];
    for (stage, sql) in expect {
        let shown = number_after(&home, &format!("data-stage=\"{stage}\""));
        assert_eq!(shown, c.count(&sql).await, "{stage}");
    }
    assert_eq!(number_after(&home, "data-stage=\"recorded\""), 4);
    assert!(home.contains("TEMPLATE_REQUIRED"), "refusals by code");
    assert_eq!(number_after(&home, "id=\"refusals\""), 1);

    // A was answered by the bot; C waits.
    customer_wrote(&c, C, "anyone?").await;
    let inbox = b.page("/conversations").await;
    assert!(inbox.contains(C) && inbox.contains("anyone?"), "{inbox}");
    assert!(!inbox.contains(A) && !inbox.contains(B), "{inbox}");
    let conv = b.page(&format!("/conversations/{A}")).await;
    assert!(
        conv.contains("hi there") && conv.contains("hello from the bot"),
        "{conv}"
    );
    assert!(
        conv.contains("<label for=\"text\">"),
        "the reply form is labelled"
    );
    let found = b.page("/customers?q=%2B62%20812").await;
    assert!(
        found.contains(A) && found.contains(B) && found.contains(C),
        "{found}"
    );
    let none = b.page("/customers?q=nobody").await;
    assert!(none.contains("No customer matches"));
    b.page(&format!("/customers/{A}")).await;
    for path in [
        "/campaigns",
        "/templates",
        "/agents",
        "/policies",
        "/audit",
        "/audit?actor=bot&action=send_refused",
    ] {
        let html = b.page(path).await;
        assert!(html.contains("<h1>"), "{path} has a heading");
    }
    let audit = b
        .page(&format!(
            "/audit?actor=bot&action=send_refused&customer=%2B{B}"
        ))
        .await;
    assert!(audit.contains("TEMPLATE_REQUIRED"), "{audit}");
    // The row names the business it touched: the default sender's account.
    let waba = c.core.senders().default().waba_id.clone();
    assert!(audit.contains(&format!("<td>{waba}</td>")), "{audit}");
    // Unknown things are 404, not errors.
    assert_eq!(b.get("/campaigns/not-a-uuid").await.status().as_u16(), 404);
    assert_eq!(
        b.get(&format!("/campaigns/{}", uuid::Uuid::new_v4()))
            .await
            .status()
            .as_u16(),
        404
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_replies_through_the_send_path() {
    let c = Console::start().await;
    customer_wrote(&c, A, "is my order late?").await;
    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = format!("/conversations/{A}");
    let res = b
        .act(
            &page,
            &format!("{page}/reply"),
            &[("text", "Checking now — Ana")],
        )
        .await;
    assert_eq!(res.status().as_u16(), 303);
    let back = res.headers()["location"].to_str().unwrap().to_string();
    assert!(
        back.starts_with(&page) && back.contains("Reply%20queued"),
        "{back}"
    );
    let html = b.page(&back).await;
    assert!(html.contains("Reply queued"));
    assert!(
        html.contains("Checking now — Ana") && html.contains("operator ana"),
        "{html}"
    );
    assert_eq!(
        c.count(&format!("SELECT count(*) AS n FROM messages WHERE customer_phone = '{A}' AND direction = 'outbound' AND status = 'queued'")).await,
        1
    );
    // Without a window the same rules as any send: refused, shown, nothing recorded.
    let res = b
        .act(
            &page,
            &format!("/conversations/{B}/reply"),
            &[("text", "hello")],
        )
        .await;
    let back = res.headers()["location"].to_str().unwrap().to_string();
    assert!(back.contains("error=1"), "{back}");
    assert!(b.page(&back).await.contains("TEMPLATE_REQUIRED"));
    assert_eq!(
        c.count(&format!(
            "SELECT count(*) AS n FROM messages WHERE customer_phone = '{B}'"
        ))
        .await,
        0
    );
    assert_eq!(
        c.count(&format!("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND action = 'send_refused' AND entity_id = '{B}'")).await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consent_timeline_tags_and_forget_with_confirmation() {
    let c = Console::start().await;
    customer_wrote(&c, A, "STOP").await;
    c.exec(&format!(
        "UPDATE customers SET tags = '{{vip,eu}}' WHERE phone = '{A}'"
    ))
    .await;
    {
        let mut conn = c.pg.get().await.unwrap();
        for (action, source) in [
            ("customer_opted_out", "keyword:STOP"),
            ("customer_opted_in", "keyword:START"),
        ] {
            warden_store::audit::record(
                &mut conn,
                "webhook",
                action,
                "customer",
                A,
                json!({"source": source, "scope": "marketing+utility", "business": "default"}),
            )
            .await
            .unwrap();
        }
    }
    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = format!("/customers/{A}");
    let html = b.page(&page).await;
    let out = html.find("keyword:STOP").expect("opt-out in the timeline");
    let back_in = html.find("keyword:START").expect("opt-in in the timeline");
    assert!(out < back_in, "oldest first");
    assert!(html.contains("vip, eu"), "tags");

    let res = b
        .act(&page, &format!("{page}/forget"), &[("confirm", "wrong")])
        .await;
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=1")
    );
    assert_eq!(
        c.count(&format!(
            "SELECT count(*) AS n FROM suppressions WHERE phone = '{A}'"
        ))
        .await,
        0
    );
    let res = b
        .act(&page, &format!("{page}/forget"), &[("confirm", A)])
        .await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(
        c.count(&format!(
            "SELECT count(*) AS n FROM suppressions WHERE phone = '{A}'"
        ))
        .await,
        1
    );
    assert_eq!(
        c.count(&format!("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND entity_id = '{A}' AND action LIKE '%forgotten%'")).await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_tester_decides_and_sends_nothing() {
    let c = Console::start().await;
    customer_wrote(&c, A, "hi").await;
    c.exec(&format!(
        "UPDATE customers SET tags = '{{blocked}}' WHERE phone = '{A}'"
    ))
    .await;
    let mut b = c.logged_in("vi", Role::Viewer).await;
    let html = b
        .page(&format!(
            "/policies?customer=%2B{A}&message_type=service&text=hello"
        ))
        .await;
    assert!(html.contains("Refused"), "{html}");
    assert!(
        html.contains("<strong id=\"rule\">test_blocked_customers</strong>"),
        "{html}"
    );
    let html = b
        .page(&format!(
            "/policies?customer={B}&message_type=service&text="
        ))
        .await;
    assert!(
        html.contains("<strong id=\"rule\">TEMPLATE_REQUIRED</strong>"),
        "{html}"
    );
    let html = b
        .page("/policies?customer=%2B1%20415%20555%200100&message_type=marketing")
        .await;
    assert!(html.contains("test_no_marketing_to_plus1"), "{html}");
    let html = b
        .page(&format!("/policies?customer={B}&message_type=bogus"))
        .await;
    assert!(html.contains("use service, marketing"), "{html}");
    assert!(
        html.contains("test_marketing_cap"),
        "running policies listed"
    );
    assert_eq!(
        c.count("SELECT count(*) AS n FROM messages WHERE direction = 'outbound'")
            .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaigns_pause_resume_cancel_as_the_operator() {
    let c = Console::start().await;
    let id = uuid::Uuid::new_v4();
    c.exec(&format!(
        "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name)
         VALUES ('{id}', 'spring sale', 'marketing', 'scheduled', now() + interval '1 day', 'warden_promo')"
    ))
    .await;
    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = format!("/campaigns/{id}");
    assert!(b.page("/campaigns").await.contains("spring sale"));
    let status = async |c: &Console| {
        warden_core::campaigns::get(&c.pg, id)
            .await
            .unwrap()
            .campaign
            .status
    };
    assert_eq!(
        b.act(&page, &format!("{page}/pause"), &[])
            .await
            .status()
            .as_u16(),
        303
    );
    assert_eq!(status(&c).await, "paused");
    // Pausing again is not a transition: 409, unchanged.
    assert_eq!(
        b.act(&page, &format!("{page}/pause"), &[])
            .await
            .status()
            .as_u16(),
        409
    );
    assert_eq!(
        b.act(&page, &format!("{page}/resume"), &[])
            .await
            .status()
            .as_u16(),
        303
    );
    assert_eq!(status(&c).await, "running");
    assert_eq!(
        b.act(
            &page,
            &format!("{page}/cancel"),
            &[("reason", "wrong audience")]
        )
        .await
        .status()
        .as_u16(),
        303
    );
    assert_eq!(status(&c).await, "cancelled");
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND action IN ('campaign_paused','campaign_resumed','campaign_cancelled')").await,
        3
    );
    let html = b.page(&page).await;
    assert!(
        html.contains("<strong id=\"status\">cancelled</strong>"),
        "{html}"
    );
}

/// An agent's campaign under CAMPAIGN_APPROVAL=required waits in pending_approval (the
/// scheduler does not start it), an operator approves it (scheduled, then started) or
/// rejects it with a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_campaigns_wait_for_an_operator() {
    use warden_core::campaigns::create::{
        Approval, CampaignSenders, CampaignType, NewCampaign, schedule_campaign_gated,
    };
    let c = Console::start().await;
    c.exec(
        "INSERT INTO templates (id, name, locale, category, status, body_text)
         VALUES (gen_random_uuid(), 'warden_promo', 'en', 'marketing', 'APPROVED', 'Sale: {{1}}')",
    )
    .await;
    let new = |name: &str| NewCampaign {
        name: name.to_string(),
        campaign_type: CampaignType::Marketing,
        template_name: "warden_promo".into(),
        locale: "en".into(),
        variables: vec!["20%".into()],
        named_variables: vec![],
        components: vec![],
        audience_filter: json!({}),
        deliver_at: Utc::now(),
    };
    let mut ids = Vec::new();
    for name in ["approved one", "rejected one"] {
        let created = schedule_campaign_gated(
            &c.pg,
            new(name),
            CampaignSenders::default(),
            "bot",
            None,
            Approval::Required,
        )
        .await
        .unwrap();
        ids.push(created.id);
    }
    let status = async |id: uuid::Uuid| {
        warden_core::campaigns::get(&c.pg, id)
            .await
            .unwrap()
            .campaign
    };
    // Due now, yet the scheduler's start leaves them alone.
    let started = warden_core::campaigns::fanout::start_due(&c.pg, "scheduler")
        .await
        .unwrap();
    assert!(started.is_empty(), "{started:?}");
    assert_eq!(status(ids[0]).await.status, "pending_approval");

    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = format!("/campaigns/{}", ids[0]);
    let html = b.page(&page).await;
    assert!(
        html.contains("id=\"approve\"") && !html.contains("id=\"pause\""),
        "{html}"
    );
    // Pause is not a transition of a pending campaign.
    assert_eq!(
        b.act(&page, &format!("{page}/pause"), &[])
            .await
            .status()
            .as_u16(),
        409
    );
    assert_eq!(
        b.act(&page, &format!("{page}/approve"), &[])
            .await
            .status()
            .as_u16(),
        303
    );
    assert_eq!(status(ids[0]).await.status, "scheduled");
    let started = warden_core::campaigns::fanout::start_due(&c.pg, "scheduler")
        .await
        .unwrap();
    assert_eq!(started, vec![ids[0]]);
    // Approving twice is refused.
    assert_eq!(
        b.act(&page, &format!("{page}/approve"), &[])
            .await
            .status()
            .as_u16(),
        409
    );

    let page = format!("/campaigns/{}", ids[1]);
    let res = b
        .act(&page, &format!("{page}/reject"), &[("reason", "")])
        .await;
    assert!(
        res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=1")
    );
    assert_eq!(status(ids[1]).await.status, "pending_approval");
    let res = b
        .act(
            &page,
            &format!("{page}/reject"),
            &[("reason", "too many recipients on a Sunday")],
        )
        .await;
    assert_eq!(res.status().as_u16(), 303);
    let rejected = status(ids[1]).await;
    assert_eq!(rejected.status, "rejected");
    assert_eq!(
        rejected.status_reason.as_deref(),
        Some("too many recipients on a Sunday")
    );
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND action IN ('campaign_approved', 'campaign_rejected')").await,
        2
    );
    assert!(!b.page("/campaigns").await.contains("pending_approval"));
}

/// Take over: a person holds the conversation (the agent's free-form reply is refused
/// CONVERSATION_HELD, the operator's goes out), release gives it back to the agents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn take_over_reply_and_release() {
    let c = Console::start().await;
    customer_wrote(&c, A, "can a person help?").await;
    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = format!("/conversations/{A}");
    let html = b.page(&page).await;
    assert!(html.contains("Held by <strong>agents</strong>"), "{html}");
    assert!(html.contains("id=\"take\"") && !html.contains("id=\"release\""));

    let res = b.act(&page, &format!("{page}/take"), &[]).await;
    assert_eq!(res.status().as_u16(), 303);
    let html = b.page(&page).await;
    assert!(html.contains("Held by <strong>human</strong>"), "{html}");
    assert!(html.contains("id=\"release\""));
    let holder = c.core.holder(&phone(A), None).await.unwrap();
    assert_eq!(holder.kind, "human");

    // The agent is refused; the operator is not.
    let bot = c.core.as_actor("bot");
    match bot.send(text_to(A, "I can help!", "bot")).await {
        Err(SendError::Refused(d)) => assert_eq!(d.reason_code.as_str(), "CONVERSATION_HELD"),
        other => panic!("{other:?}"),
    }
    let res = b
        .act(
            &page,
            &format!("{page}/reply"),
            &[("text", "Hi, Ana here.")],
        )
        .await;
    assert!(
        !res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=1")
    );
    assert_eq!(
        c.count(&format!("SELECT count(*) AS n FROM messages WHERE customer_phone = '{A}' AND direction = 'outbound'")).await,
        1
    );

    let res = b.act(&page, &format!("{page}/release"), &[]).await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(c.core.holder(&phone(A), None).await.unwrap().kind, "agents");
    bot.send(text_to(A, "Anything else?", "bot")).await.unwrap();
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND action = 'holder_changed'").await,
        2
    );
}

/// Whether `html` shows a time with more than millisecond precision (the stored value as
/// is, `04:27:18.323091Z`).
fn shows_raw_microseconds(html: &str) -> bool {
    let b = html.as_bytes();
    (0..b.len().saturating_sub(8)).any(|i| {
        b[i] == b':'
            && b[i + 1].is_ascii_digit()
            && b[i + 2].is_ascii_digit()
            && b[i + 3] == b'.'
            && b[i + 4..].iter().take_while(|c| c.is_ascii_digit()).count() > 3
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_reads_for_people_times_agents_and_what_consent_allows() {
    let c = Console::start().await;
    customer_wrote(&c, A, "hi there").await;
    // The local (stdio) agent answers.
    c.core
        .as_actor("stdio")
        .send(text_to(A, "hello from the agent", "stdio"))
        .await
        .unwrap();
    let mut b = c.logged_in("ana", Role::Operator).await;
    let html = b.page(&format!("/conversations/{A}")).await;

    // Times: a <time> element with the exact time on hover, rendered in the operator's zone
    // by the page's script; never the stored value with microseconds.
    assert!(html.contains("<time datetime=\""), "{html}");
    assert!(html.contains(" UTC\">"), "{html}");
    assert!(html.contains("window.wardenTimes"), "{html}");
    assert!(!shows_raw_microseconds(&html), "{html}");
    // The agent is named: the local caller as "agent (local)", never `stdio`.
    assert!(html.contains("<td>agent (local)</td>"), "{html}");
    assert!(!html.contains(">stdio<"), "{html}");
    // The window is open and the customer consents: the reply goes out.
    assert!(html.contains("id=\"consent\""), "{html}");
    assert!(!html.contains("id=\"reply-refused\""), "{html}");

    // The customer sends STOP: the page says so before the operator types.
    c.exec(&format!(
        "UPDATE customers SET opt_in_marketing = false, opt_in_utility = false WHERE phone = '{A}'"
    ))
    .await;
    let html = b.page(&format!("/conversations/{A}")).await;
    let refused = &html[html
        .find("id=\"reply-refused\"")
        .unwrap_or_else(|| panic!("the reply is said to be refused: {html}"))..];
    assert!(refused.contains("USER_OPTED_OUT"), "{html}");
    let consent = &html[html.find("id=\"consent\"").unwrap()..];
    let marketing = &consent[consent.find("Marketing templates").unwrap()..];
    assert!(
        marketing[..marketing.find("</li>").unwrap()].contains("refused"),
        "{html}"
    );
    // The console page of the customer and the audit log name people too.
    let audit = b.page("/audit").await;
    assert!(!shows_raw_microseconds(&audit), "{audit}");
    let inbox = b.page("/conversations").await;
    assert!(!shows_raw_microseconds(&inbox), "{inbox}");
}
