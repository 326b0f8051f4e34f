//! The read models and the retry the gateway's tools call, against real Postgres, Redis and
//! NATS: a message's delivery status (its failure explained), the conversation list by
//! window state, the template list's case-insensitive filters, retry_failed_messages' one
//! message (requeued, or skipped with its reason) and the rate card's DEFAULT fallback.

use chrono::{SubsecRound, TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_core::account::pricing::{self, ReportedPricing};
use warden_core::account::rate_card::{self, DEFAULT_COUNTRY};
use warden_core::conversations::list::WindowFilter;
use warden_core::delivery::knowledge::{self, ErrorInfo};
use warden_core::delivery::retries::{RetryOutcome, retry_failed};
use warden_core::delivery::tracking::message_status;
use warden_core::templates::list::TemplateFilters;
use warden_core::{
    RefusalMode, SendError, SendKind, SendRequest, TemplateSend, conversations, customers,
    templates,
};
use warden_rules::kinds::{Category, MessageType};
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_store::schema::{audit_logs, conversation_pricing, messages};

use crate::common::TestCore;

const ACTOR: &str = "read-models-test";

/// A core on a fresh database (migrated and seeded: error knowledge base, built-in rate
/// card), Redis and a stream of its own, and an APPROVED utility template `order`.
async fn harness() -> TestCore {
    let h = TestCore::builder()
        .pool_size(8)
        .test_policies()
        .redis()
        .stream()
        .actor(ACTOR)
        .build()
        .await;
    h.sql(
        "INSERT INTO templates (name, locale, category, status, body_text)
         VALUES ('order', 'en', 'utility', 'APPROVED', 'Order {{1}}')",
    )
    .await;
    h
}

fn phone() -> PhoneNumber {
    let n = 8_000_000_000 + (Uuid::new_v4().as_u128() % 999_999_999) as u64;
    canonicalize(&format!("62{n}")).unwrap()
}

/// An accepted (queued) utility template message to `to`.
async fn send_order(h: &TestCore, to: &PhoneNumber) -> Uuid {
    let req = SendRequest::from_tool(
        to.clone(),
        "whatsapp",
        SendKind::Template(TemplateSend {
            name: "order".into(),
            locale: "en".into(),
            variables: vec!["1".into()],
            ..Default::default()
        }),
        MessageType::Template,
        ACTOR,
    );
    h.core.send(req).await.unwrap().message_id
}

/// The platform's failure `code` recorded on `id` as a status webhook records it.
async fn fail(h: &TestCore, id: Uuid, code: i32) -> ErrorInfo {
    let mut c = h.core.pg().get().await.unwrap();
    let info = ErrorInfo::from(&knowledge::explain(&mut c, code).await.unwrap());
    assert!(
        warden_core::delivery::outcomes::apply_status(
            &mut c,
            id,
            "failed",
            Utc::now(),
            None,
            Some(&info)
        )
        .await
        .unwrap()
    );
    info
}

async fn row_status(h: &TestCore, id: Uuid) -> (String, i32, Option<i32>) {
    let mut c = h.core.pg().get().await.unwrap();
    messages::table
        .find(id)
        .select((
            messages::status,
            messages::retry_count,
            messages::error_code,
        ))
        .first(&mut c)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_message_reports_its_error_explained() {
    let h = harness().await;
    let p = phone();
    let failed = send_order(&h, &p).await;
    let info = fail(&h, failed, 131026).await;

    let st = message_status(&h.core, failed).await.unwrap().unwrap();
    assert_eq!(st.message_id, failed);
    assert_eq!(st.customer_id, p.digits());
    assert_eq!(st.channel, "whatsapp");
    assert_eq!(st.direction, "outbound");
    assert_eq!(st.status, "failed");
    assert_eq!(st.template_name.as_deref(), Some("order"));
    assert_eq!(st.sent_by.as_deref(), Some(ACTOR));
    assert_eq!(st.pricing, None);
    let error = st.error.unwrap();
    assert_eq!(error, info);
    assert_eq!(error.code, 131026);
    assert_eq!(error.category, "recipient");
    assert!(!error.can_retry);
    assert!(error.human_explanation.contains("could not be delivered"));

    // Only the code stored: the knowledge base explains it.
    let bare = send_order(&h, &p).await;
    h.sql(&format!(
        "UPDATE messages SET status = 'failed', error_code = 131000 WHERE id = '{bare}'"
    ))
    .await;
    let error = message_status(&h.core, bare)
        .await
        .unwrap()
        .unwrap()
        .error
        .unwrap();
    assert_eq!(error.code, 131000);
    assert_eq!(error.category, "upstream_transient");
    assert!(error.can_retry);
    assert_eq!(
        error.human_explanation,
        "The message failed because of an unknown error on the platform."
    );

    // Stored with its explanation but no action: the fallback action.
    h.sql(&format!(
        "UPDATE messages SET error_category = 'recipient', error_explanation = 'Gone.',
                    error_can_retry = NULL, error_suggested_action = NULL WHERE id = '{bare}'"
    ))
    .await;
    let error = message_status(&h.core, bare)
        .await
        .unwrap()
        .unwrap()
        .error
        .unwrap();
    assert_eq!(
        (
            error.category.as_str(),
            error.can_retry,
            error.human_explanation.as_str()
        ),
        ("recipient", false, "Gone.")
    );
    assert_eq!(
        error.suggested_action,
        "Use explain_error with the code for what to do next."
    );

    // A dispatcher's claim reads queued; no error while not failed; priced once reported.
    let claimed = send_order(&h, &p).await;
    h.sql(&format!(
        "UPDATE messages SET status = 'sending' WHERE id = '{claimed}'"
    ))
    .await;
    {
        let mut c = h.core.pg().get().await.unwrap();
        let reported = ReportedPricing {
            billable: Some(true),
            pricing_model: Some("PMP"),
            category: Some("utility"),
            pricing_type: Some("regular"),
        };
        pricing::record(&mut c, claimed, &reported).await.unwrap();
    }
    let st = message_status(&h.core, claimed).await.unwrap().unwrap();
    assert_eq!(st.status, "queued");
    assert_eq!(st.error, None);
    let priced = st.pricing.unwrap();
    assert_eq!(priced.currency, "USD");
    assert_eq!(priced.charge.billable, Some(true));
    assert_eq!(priced.charge.category.as_deref(), Some("utility"));
    assert_eq!(priced.charge.actual_e4, 250, "the ID utility rate");

    assert_eq!(message_status(&h.core, Uuid::new_v4()).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversations_filter_by_window_and_page_with_a_total() {
    let h = harness().await;
    // Postgres keeps microseconds: times read back equal the ones written.
    let now = Utc::now().trunc_subsecs(6);
    let mut c = h.core.pg().get().await.unwrap();
    // (customer, hours since they wrote, archived), oldest conversation first.
    let mut ids = Vec::new();
    for (i, (ago, archived)) in [
        (Some(1), false),  // open
        (Some(23), false), // open, closing within 2 hours
        (Some(30), false), // closed
        (None, false),     // never wrote: closed
        (Some(2), true),   // open but archived: never listed
    ]
    .into_iter()
    .enumerate()
    {
        let p = phone();
        customers::ensure(&mut c, &p).await.unwrap();
        if let Some(hours) = ago {
            conversations::record_inbound(
                &mut c,
                &p,
                "whatsapp",
                "default",
                now - TimeDelta::hours(hours),
            )
            .await
            .unwrap();
        } else {
            diesel::sql_query(format!(
                "INSERT INTO conversations (customer_phone, channel) VALUES ('{}', 'whatsapp')",
                p.digits()
            ))
            .execute(&mut c)
            .await
            .unwrap();
        }
        let id: Uuid = diesel::sql_query(format!(
            "UPDATE conversations SET created_at = now() - interval '{} minutes',
                    archived_at = CASE WHEN {archived} THEN now() END
              WHERE customer_phone = '{}' RETURNING id",
            60 - i,
            p.digits()
        ))
        .get_result::<IdRow>(&mut c)
        .await
        .unwrap()
        .id;
        ids.push(id);
    }
    drop(c);
    let page = |filter, limit, offset| {
        let core = h.core.clone();
        async move {
            let page =
                conversations::list::list(&core, "whatsapp", None, filter, limit, offset, now)
                    .await
                    .unwrap();
            let rows: Vec<_> = page.conversations.into_iter().map(|c| c.view).collect();
            let listed: Vec<Uuid> = rows.iter().map(|c| c.id.unwrap()).collect();
            (listed, page.total, rows)
        }
    };

    let (listed, total, rows) = page(WindowFilter::All, 50, 0).await;
    assert_eq!((listed, total), (ids[..4].to_vec(), 4));
    assert!(rows[0].window_open);
    assert_eq!(rows[0].time_remaining_secs, 23 * 3600);
    assert_eq!(rows[0].window_expires_at, Some(now + TimeDelta::hours(23)));
    assert!(!rows[3].window_open && rows[3].window_expires_at.is_none());
    assert!(rows.iter().all(|r| !r.archived));

    // A page further on: the total still counts every match.
    let (listed, total, _) = page(WindowFilter::All, 2, 1).await;
    assert_eq!((listed, total), (ids[1..3].to_vec(), 4));
    let (listed, total, _) = page(WindowFilter::All, 2, 4).await;
    assert_eq!((listed, total), (vec![], 4));

    let (listed, total, _) = page(WindowFilter::Open, 50, 0).await;
    assert_eq!((listed, total), (ids[..2].to_vec(), 2));
    let (listed, total, _) = page(WindowFilter::ExpiringSoon, 50, 0).await;
    assert_eq!((listed, total), (vec![ids[1]], 1));
    let (listed, total, _) = page(WindowFilter::Closed, 1, 0).await;
    assert_eq!((listed, total), (vec![ids[2]], 2));

    // Another channel has none of them.
    let other = conversations::list::list(&h.core, "sms", None, WindowFilter::All, 50, 0, now)
        .await
        .unwrap();
    assert_eq!((other.conversations.len(), other.total), (0, 0));
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: Uuid,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_filter_case_insensitively_with_a_total() {
    let h = harness().await;
    h.sql(
        "INSERT INTO templates (name, locale, category, status, body_text, pending_category, pending_category_at)
         VALUES ('alpha', 'en', 'Utility', 'approved', 'A', NULL, NULL),
                ('alpha', 'pt_BR', 'utility', 'APPROVED', 'A', NULL, NULL),
                ('beta', 'EN', 'UTILITY', 'Approved', 'B', 'marketing', now() + interval '3 days'),
                ('delta', 'en', 'utility', 'PENDING', 'D', NULL, NULL),
                ('gamma', 'en', 'marketing', 'APPROVED', 'G', 'utility', now() - interval '1 day')",
    )
    .await;
    let list =
        |status: Option<&str>, category: Option<&str>, locale: Option<&str>, limit, offset| {
            let core = h.core.clone();
            let filters = TemplateFilters {
                business: None,
                status: status.map(Into::into),
                category: category.map(Into::into),
                locale: locale.map(Into::into),
            };
            async move {
                let page = templates::list::list(&core, &filters, limit, offset)
                    .await
                    .unwrap();
                let names: Vec<(String, String)> = page
                    .templates
                    .iter()
                    .map(|t| (t.template.name.clone(), t.template.locale.clone()))
                    .collect();
                (names, page.total, page.templates)
            }
        };
    let pair = |n: &str, l: &str| (n.to_string(), l.to_string());

    // Every template (the harness's `order` too), by name then locale.
    let (names, total, _) = list(None, None, None, 50, 0).await;
    assert_eq!(total, 6);
    assert_eq!(
        names,
        [
            pair("alpha", "en"),
            pair("alpha", "pt_BR"),
            pair("beta", "EN"),
            pair("delta", "en"),
            pair("gamma", "en"),
            pair("order", "en")
        ]
    );

    // Each filter in any case; the stored values in any case match.
    let (names, total, _) = list(Some("aPPROVED"), Some(" UTILITY "), Some("En"), 50, 0).await;
    assert_eq!(total, 3);
    assert_eq!(
        names,
        [pair("alpha", "en"), pair("beta", "EN"), pair("order", "en")]
    );
    let (names, total, _) = list(Some("approved"), Some("utility"), Some("en"), 1, 1).await;
    assert_eq!((names, total), (vec![pair("beta", "EN")], 3));
    let (names, total, _) = list(Some("pending"), None, None, 50, 0).await;
    assert_eq!((names, total), (vec![pair("delta", "en")], 1));
    let (names, total, _) = list(None, None, Some("PT_br"), 50, 0).await;
    assert_eq!((names, total), (vec![pair("alpha", "pt_BR")], 1));
    // The stored category is filtered, not a pending one.
    let (names, total, _) = list(None, Some("marketing"), None, 50, 0).await;
    assert_eq!((names, total), (vec![pair("gamma", "en")], 1));
    let (names, total, _) = list(Some("REJECTED"), None, None, 50, 0).await;
    assert_eq!((names, total), (vec![], 0));

    // What the list shows beside each: the category in force now and one announced.
    let now = Utc::now();
    let (_, _, rows) = list(None, None, None, 50, 0).await;
    let beta = &rows[2];
    assert_eq!(beta.effective_category(now), "UTILITY");
    let (to, at) = beta.upcoming_category(now).unwrap();
    assert_eq!(to, "marketing");
    assert!(at > now + TimeDelta::days(2));
    let gamma = &rows[4];
    assert_eq!(gamma.effective_category(now), "utility");
    assert_eq!(gamma.upcoming_category(now), None);
    assert_eq!(rows[0].upcoming_category(now), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_requeues_a_retryable_failure_and_skips_the_rest_with_their_reasons() {
    let h = harness().await;
    let p = phone();
    let retryable = send_order(&h, &p).await;
    let permanent = send_order(&h, &p).await;
    let still_queued = send_order(&h, &p).await;
    let no_code = send_order(&h, &p).await;
    fail(&h, retryable, 131000).await;
    let info = fail(&h, permanent, 131026).await;
    h.sql(&format!(
        "UPDATE messages SET status = 'failed' WHERE id = '{no_code}'"
    ))
    .await;

    let outcome = retry_failed(&h.core, retryable, ACTOR).await.unwrap();
    assert_eq!(
        outcome,
        RetryOutcome::Requeued {
            retry_count: 1,
            published: true
        }
    );
    assert_eq!(
        row_status(&h, retryable).await,
        ("queued".to_string(), 1, None)
    );
    {
        let mut c = h.core.pg().get().await.unwrap();
        let (actor, details): (String, serde_json::Value) = audit_logs::table
            .filter(audit_logs::action.eq("message_retried"))
            .filter(audit_logs::entity_id.eq(retryable.to_string()))
            .select((audit_logs::actor, audit_logs::details))
            .first(&mut c)
            .await
            .unwrap();
        assert_eq!(actor, ACTOR);
        assert_eq!(details["previous_error_code"], 131000);
        assert_eq!(details["retry_count"], 1);
    }
    // Queued again, it is no longer failed.
    assert_eq!(
        retry_failed(&h.core, retryable, ACTOR).await.unwrap(),
        RetryOutcome::Skipped(
            "the message is queued, not failed; only failed messages are retried".into()
        )
    );

    assert_eq!(
        retry_failed(&h.core, permanent, ACTOR).await.unwrap(),
        RetryOutcome::Skipped(format!(
            "error 131026 (Message undeliverable) is not retryable: {} {}",
            info.human_explanation, info.suggested_action
        ))
    );
    assert_eq!(row_status(&h, permanent).await.0, "failed");
    assert_eq!(
        retry_failed(&h.core, no_code, ACTOR).await.unwrap(),
        RetryOutcome::Skipped(
            "the failure carries no platform error code, so the error knowledge base cannot call it retryable (error 0 is not retryable); send a new message instead".into()
        )
    );
    h.sql(&format!(
        "UPDATE messages SET status = 'sending' WHERE id = '{still_queued}'"
    ))
    .await;
    assert_eq!(
        retry_failed(&h.core, still_queued, ACTOR).await.unwrap(),
        RetryOutcome::Skipped(
            "the message is queued, not failed; only failed messages are retried".into()
        )
    );
    assert_eq!(
        retry_failed(&h.core, Uuid::new_v4(), ACTOR).await.unwrap(),
        RetryOutcome::Skipped("no message with this id".into())
    );

    // A compliance failure stands: free-form text to a customer who never wrote.
    let mut req = SendRequest::from_tool(
        phone(),
        "whatsapp",
        SendKind::Text { body: "hi".into() },
        MessageType::Service,
        ACTOR,
    );
    req.refusal = RefusalMode::RecordFailed;
    let Err(SendError::RefusedRecorded { message_id, .. }) = h.core.send(req).await else {
        panic!("a closed window is refused and recorded");
    };
    let RetryOutcome::Skipped(reason) = retry_failed(&h.core, message_id, ACTOR).await.unwrap()
    else {
        panic!("a compliance failure is never retried");
    };
    assert!(
        reason.starts_with("not retried: it failed a compliance check (")
            && reason.ends_with(
                "), which a retry cannot change; send a new message once check_compliance allows it"
            ),
        "{reason}"
    );
    let mut c = h.core.pg().get().await.unwrap();
    let retried: i64 = audit_logs::table
        .filter(audit_logs::action.eq("message_retried"))
        .count()
        .get_result(&mut c)
        .await
        .unwrap();
    assert_eq!(retried, 1, "only the requeued message has an audit row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_lookup_falls_back_to_default() {
    let h = harness().await;
    let pg = h.core.pg();
    let own = rate_card::rate(pg, "ID", Category::Marketing)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            own.country.as_str(),
            own.conversation_type.as_str(),
            own.cost_e4
        ),
        ("ID", "marketing", 411)
    );
    assert_eq!(own.currency, "USD");

    // No rate of its own (or only one not in force yet): the DEFAULT row.
    h.sql(
        "INSERT INTO conversation_pricing
                (country, conversation_type, cost_e4, currency, pricing_category, pricing_model_version, effective_date)
         VALUES ('ZZ', 'marketing', 1, 'USD', 'marketing', 'future', current_date + 30)",
    )
    .await;
    let fallback = rate_card::rate(pg, "ZZ", Category::Marketing)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (fallback.country.as_str(), fallback.cost_e4),
        (DEFAULT_COUNTRY, 604)
    );
    let service = rate_card::rate(pg, DEFAULT_COUNTRY, Category::Service)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((service.country.as_str(), service.cost_e4), ("DEFAULT", 0));

    // No card at all: nothing to price with.
    let mut c = pg.get().await.unwrap();
    diesel::delete(conversation_pricing::table.filter(conversation_pricing::country.eq("DEFAULT")))
        .execute(&mut c)
        .await
        .unwrap();
    drop(c);
    assert!(
        rate_card::rate(pg, "ZZ", Category::Marketing)
            .await
            .unwrap()
            .is_none()
    );
}
