//! The compliance core against real Postgres, Redis and NATS: the cap under concurrency,
//! opt-outs, care windows, Redis outages, NATS outages, dispatch-time refusals.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_core::customers::{self, OptScope};
use warden_core::{
    Core, RefusalMode, SendError, SendKind, SendRequest, TemplateSend, conversations,
};
use warden_rules::keywords::OptChange;
use warden_rules::kinds::MessageType;
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_store::schema::{audit_logs, messages, templates};

use crate::common::TestCore;

/// A core under the tests' policy file with Redis (when it answers) and, `with_nats`, a
/// stream of its own; `redis_addr`: a private Redis instead of the shared one.
async fn harness(with_nats: bool, redis_addr: Option<&str>) -> TestCore {
    let b = TestCore::builder().test_policies();
    let b = match redis_addr {
        Some(addr) => b.redis_at(addr),
        None => b.redis(),
    };
    if with_nats { b.stream() } else { b }.build().await
}

fn phone() -> PhoneNumber {
    let n: u64 = rand_digits();
    canonicalize(&format!("62{n}")).unwrap()
}

fn rand_digits() -> u64 {
    let id = uuid::Uuid::new_v4().as_u128();
    8_000_000_000 + (id % 999_999_999) as u64
}

async fn add_template(core: &Core, name: &str, category: &str, status: &str) {
    let mut conn = core.pg().get().await.unwrap();
    diesel::insert_into(templates::table)
        .values((
            templates::name.eq(name),
            templates::locale.eq("en"),
            templates::category.eq(category),
            templates::status.eq(status),
            templates::body_text.eq("Hello {{1}}"),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
}

fn template_send(phone: &PhoneNumber, name: &str, mode: RefusalMode) -> SendRequest {
    SendRequest {
        sender: None,
        phone: phone.clone(),
        channel: "whatsapp".into(),
        kind: SendKind::Template(TemplateSend {
            name: name.into(),
            locale: "en".into(),
            variables: vec!["Ana".into()],
            ..Default::default()
        }),
        message_type: MessageType::Template,
        campaign_id: None,
        existing_message_id: None,
        refusal: mode,
        actor: "test",
    }
}

fn text_send(phone: &PhoneNumber) -> SendRequest {
    SendRequest {
        sender: None,
        phone: phone.clone(),
        channel: "whatsapp".into(),
        kind: SendKind::Text { body: "hi".into() },
        message_type: MessageType::Service,
        campaign_id: None,
        existing_message_id: None,
        refusal: RefusalMode::Error,
        actor: "test",
    }
}

async fn status_of(core: &Core, id: uuid::Uuid) -> (String, Option<chrono::DateTime<Utc>>) {
    let mut conn = core.pg().get().await.unwrap();
    messages::table
        .find(id)
        .select((messages::status, messages::published_at))
        .first(&mut conn)
        .await
        .unwrap()
}

/// The send answers before the stream's ack; its published mark follows.
async fn wait_published(core: &Core, id: uuid::Uuid) {
    warden_test_support::wait::until(Duration::from_secs(10), "the published mark", || async {
        status_of(core, id).await.1.is_some()
    })
    .await;
}

/// The customer texts STOP for marketing (as a user_preferences webhook records it);
/// true when their consent changed.
async fn stop_marketing(conn: &mut diesel_async::AsyncPgConnection, p: &PhoneNumber) -> bool {
    customers::apply_opt_change(
        conn,
        "default",
        p,
        OptChange::Stop,
        OptScope::Marketing,
        "user_preferences",
        "test",
        Utc::now(),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_marketing_sends_pass_the_cap_exactly_twice() {
    let h = harness(true, None).await;
    add_template(&h.core, "promo", "marketing", "APPROVED").await;
    let p = phone();
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let core = h.core.clone();
        let req = template_send(&p, "promo", RefusalMode::Error);
        tasks.push(tokio::spawn(async move { core.send(req).await }));
    }
    let mut accepted = 0;
    let mut capped = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(a) => {
                assert_eq!(a.status, "queued");
                assert!(a.published);
                accepted += 1;
            }
            Err(e) => {
                assert_eq!(e.code(), "FREQUENCY_CAP_EXCEEDED", "{e}");
                capped += 1;
            }
        }
    }
    assert_eq!((accepted, capped), (2, 8));
    // The dry run agrees and writes nothing.
    let d = h
        .core
        .check(
            &p,
            None,
            MessageType::Marketing.described_content(),
            Utc::now(),
        )
        .await
        .unwrap();
    assert!(!d.allowed);
    assert_eq!(d.reason_code.as_str(), "FREQUENCY_CAP_EXCEEDED");
    assert!(
        h.core
            .frequency(&p, None, Utc::now())
            .await
            .unwrap()
            .is_capped
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_form_needs_an_open_window_from_the_inbound_timestamp() {
    let h = harness(true, None).await;
    let p = phone();
    let err = h.core.send(text_send(&p)).await.unwrap_err();
    assert_eq!(err.code(), "TEMPLATE_REQUIRED");

    // An inbound message 23h59m ago opens it; an older late message does not shorten it.
    let mut conn = h.core.pg().get().await.unwrap();
    customers::ensure(&mut conn, &p).await.unwrap();
    let recent = Utc::now() - TimeDelta::minutes(23 * 60 + 59);
    let conv = conversations::record_inbound(&mut conn, &p, "whatsapp", "default", recent)
        .await
        .unwrap();
    h.core.refresh_window_cache(&conv).await;
    let late = conversations::record_inbound(
        &mut conn,
        &p,
        "whatsapp",
        "default",
        recent - TimeDelta::hours(5),
    )
    .await
    .unwrap();
    h.core.refresh_window_cache(&late).await;
    assert_eq!(
        late.last_inbound_at.unwrap().timestamp(),
        recent.timestamp()
    );
    let view = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    assert!(view.window_open);
    assert!(view.time_remaining_secs > 0 && view.time_remaining_secs <= 60);
    let ok = h.core.send(text_send(&p)).await.unwrap();
    assert_eq!(status_of(&h.core, ok.message_id).await.0, "queued");

    // Exactly 24 h old: closed.
    let q = phone();
    customers::ensure(&mut conn, &q).await.unwrap();
    conversations::record_inbound(
        &mut conn,
        &q,
        "whatsapp",
        "default",
        Utc::now() - TimeDelta::hours(24),
    )
    .await
    .unwrap();
    assert_eq!(
        h.core.send(text_send(&q)).await.unwrap_err().code(),
        "TEMPLATE_REQUIRED"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opt_out_lands_in_one_place_with_an_audit_row() {
    let h = harness(true, None).await;
    add_template(&h.core, "promo", "marketing", "APPROVED").await;
    add_template(&h.core, "receipt", "utility", "APPROVED").await;
    let p = phone();
    let mut conn = h.core.pg().get().await.unwrap();
    assert!(stop_marketing(&mut conn, &p).await);
    // Re-applying changes nothing.
    assert!(!stop_marketing(&mut conn, &p).await);
    let err = h
        .core
        .send(template_send(&p, "promo", RefusalMode::Error))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "USER_OPTED_OUT");
    // Marketing opt-out leaves utility allowed.
    h.core
        .send(template_send(&p, "receipt", RefusalMode::Error))
        .await
        .unwrap();

    let actions: Vec<String> = audit_logs::table
        .filter(audit_logs::entity_id.eq(p.digits()))
        .select(audit_logs::action)
        .load(&mut conn)
        .await
        .unwrap();
    assert!(
        actions.contains(&"customer_opted_out".to_string()),
        "{actions:?}"
    );
    assert!(actions.contains(&"send_refused".to_string()), "{actions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn template_problems_are_named() {
    let h = harness(true, None).await;
    add_template(&h.core, "pending_one", "utility", "PENDING").await;
    add_template(&h.core, "receipt", "utility", "APPROVED").await;
    let p = phone();
    assert_eq!(
        h.core
            .send(template_send(&p, "nope", RefusalMode::Error))
            .await
            .unwrap_err()
            .code(),
        "NOT_FOUND"
    );
    assert_eq!(
        h.core
            .send(template_send(&p, "pending_one", RefusalMode::Error))
            .await
            .unwrap_err()
            .code(),
        "TEMPLATE_NOT_APPROVED"
    );
    let mut bad = template_send(&p, "receipt", RefusalMode::Error);
    bad.kind = SendKind::Template(TemplateSend {
        name: "receipt".into(),
        locale: "en".into(),
        ..Default::default()
    });
    assert_eq!(
        h.core.send(bad).await.unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_down_still_accepts_and_leaves_the_row_for_the_relay() {
    let h = harness(false, None).await;
    add_template(&h.core, "receipt", "utility", "APPROVED").await;
    let p = phone();
    let accepted = h
        .core
        .send(template_send(&p, "receipt", RefusalMode::Error))
        .await
        .unwrap();
    assert_eq!(accepted.status, "queued");
    assert!(!accepted.published);
    let (status, published_at) = status_of(&h.core, accepted.message_id).await;
    assert_eq!(status, "queued");
    assert!(published_at.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusal_at_dispatch_records_a_failed_compliance_message() {
    let h = harness(true, None).await;
    let p = phone();
    let mut req = text_send(&p);
    req.refusal = RefusalMode::RecordFailed;
    let Err(SendError::RefusedRecorded {
        message_id,
        decision,
    }) = h.core.send(req).await
    else {
        panic!("a closed window must be refused and recorded");
    };
    assert_eq!(decision.reason_code.as_str(), "TEMPLATE_REQUIRED");
    let mut conn = h.core.pg().get().await.unwrap();
    let (status, category, explanation): (String, Option<String>, Option<String>) = messages::table
        .find(message_id)
        .select((
            messages::status,
            messages::error_category,
            messages::error_explanation,
        ))
        .first(&mut conn)
        .await
        .unwrap();
    assert_eq!(status, "failed");
    assert_eq!(category.as_deref(), Some("compliance"));
    assert!(explanation.unwrap().contains("TEMPLATE_REQUIRED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_test_answers_stay_correct() {
    // A Redis of the test's own, so stopping it cannot disturb other tests.
    let mut redis = warden_test_support::redis::PrivateRedis::start_anywhere();
    let h = harness(true, Some(&format!("127.0.0.1:{}", redis.port))).await;
    assert!(h.core.redis().is_some());
    let p = phone();
    let mut conn = h.core.pg().get().await.unwrap();
    customers::ensure(&mut conn, &p).await.unwrap();
    let conv = conversations::record_inbound(
        &mut conn,
        &p,
        "whatsapp",
        "default",
        Utc::now() - TimeDelta::hours(1),
    )
    .await
    .unwrap();
    h.core.refresh_window_cache(&conv).await;
    assert!(
        h.core
            .windows()
            .get(p.digits(), "whatsapp", "default")
            .await
            .is_some(),
        "cached while Redis is up"
    );

    redis.stop();
    let view = h
        .core
        .conversation(&p, "whatsapp", "default")
        .await
        .unwrap();
    assert!(view.window_open);
    assert!((view.time_remaining_secs - 23 * 3600).abs() < 60);
    h.core
        .send(text_send(&p))
        .await
        .expect("sends still work without Redis");
    let d = h
        .core
        .check(
            &p,
            None,
            MessageType::Service.described_content(),
            Utc::now(),
        )
        .await
        .unwrap();
    assert!(d.allowed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_sights_create_one_customer() {
    let h = harness(false, None).await;
    let p = phone();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let core = h.core.clone();
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            let mut conn = core.pg().get().await.unwrap();
            customers::ensure(&mut conn, &p).await.unwrap()
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().phone, p.digits());
    }
    let mut conn = h.core.pg().get().await.unwrap();
    let n: i64 = warden_store::schema::customers::table
        .filter(warden_store::schema::customers::phone.eq(p.digits()))
        .count()
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deliberate_republish_is_not_swallowed_by_the_duplicate_window() {
    let h = harness(true, None).await;
    add_template(&h.core, "receipt", "utility", "APPROVED").await;
    let p = phone();
    let accepted = h
        .core
        .send(template_send(&p, "receipt", RefusalMode::Error))
        .await
        .unwrap();
    assert!(accepted.published);
    // The stream's ack and the published mark follow the answer.
    wait_published(&h.core, accepted.message_id).await;
    // A campaign resume or a lost stream message: the row was published before.
    assert!(h.core.publish(accepted.message_id).await.unwrap());
    let stream = h.core.stream().unwrap();
    let mut info = stream
        .jetstream
        .get_stream(&stream.stream_name)
        .await
        .unwrap();
    assert_eq!(
        info.info().await.unwrap().state.messages,
        2,
        "the republish reached the stream"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_opt_change_arriving_late_does_not_override_a_newer_one() {
    let h = harness(false, None).await;
    let p = phone();
    let mut conn = h.core.pg().get().await.unwrap();
    let now = Utc::now();
    customers::apply_opt_change(
        &mut conn,
        "default",
        &p,
        OptChange::Resume,
        OptScope::Marketing,
        "user_preferences",
        "test",
        now,
    )
    .await
    .unwrap();
    customers::apply_opt_change(
        &mut conn,
        "default",
        &p,
        OptChange::Stop,
        OptScope::Marketing,
        "user_preferences",
        "test",
        now - TimeDelta::minutes(5),
    )
    .await
    .unwrap();
    assert!(
        customers::find(&mut conn, &p)
            .await
            .unwrap()
            .unwrap()
            .opt_in_marketing
    );
}

/// A deadlock on the send path (another transaction holds the frequency key the send
/// needs and then waits for the customer row the send holds) is retried by
/// `warden_store::tx`: the send is accepted once, and the aborted attempt left nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deadlocked_send_is_retried_and_accepted_once() {
    let h = harness(false, None).await;
    add_template(&h.core, "notice", "utility", "APPROVED").await;
    let p = phone();
    let message_id = uuid::Uuid::now_v7();
    let mut setup = h.core.pg().get().await.unwrap();
    customers::ensure(&mut setup, &p).await.unwrap();
    diesel::sql_query(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status, content)
         VALUES ($1, $2, 'whatsapp', 'outbound', 'template', 'utility', 'scheduled', '{}')",
    )
    .bind::<diesel::sql_types::Uuid, _>(message_id)
    .bind::<diesel::sql_types::Text, _>(p.digits())
    .execute(&mut setup)
    .await
    .unwrap();
    drop(setup);

    // The other transaction takes the message's frequency key first ...
    let mut other = h.core.pg().get().await.unwrap();
    diesel::sql_query("BEGIN")
        .execute(&mut other)
        .await
        .unwrap();
    diesel::sql_query(
        "INSERT INTO message_frequencies (customer_phone, category, message_id) VALUES ($1, 'utility', $2)",
    )
    .bind::<diesel::sql_types::Text, _>(p.digits())
    .bind::<diesel::sql_types::Uuid, _>(message_id)
    .execute(&mut other)
    .await
    .unwrap();

    // ... the send locks the customer, then waits for that key ...
    let retried_before = warden_store::tx::retried_total();
    let mut req = template_send(&p, "notice", RefusalMode::Error);
    req.existing_message_id = Some(message_id);
    let core = h.core.clone();
    let send = tokio::spawn(async move { core.send(req).await });
    wait_for_lock_waiters(&h.core, 1).await;

    // ... and the other transaction now waits for the customer: a cycle. The send waited
    // first, so its deadlock check fires first and aborts its own attempt.
    #[derive(QueryableByName)]
    struct Phone {
        #[diesel(sql_type = diesel::sql_types::Text)]
        phone: String,
    }
    let locked: Phone =
        diesel::sql_query("SELECT phone FROM customers WHERE phone = $1 FOR UPDATE")
            .bind::<diesel::sql_types::Text, _>(p.digits())
            .get_result(&mut other)
            .await
            .expect("the send was the deadlock's victim, so this lock is granted");
    assert_eq!(locked.phone, p.digits());
    diesel::sql_query("ROLLBACK")
        .execute(&mut other)
        .await
        .unwrap();
    drop(other);

    let accepted = tokio::time::timeout(Duration::from_secs(30), send)
        .await
        .expect("the send finishes")
        .unwrap()
        .expect("the retried send is accepted");
    assert_eq!(accepted.message_id, message_id);
    assert!(
        warden_store::tx::retried_total() > retried_before,
        "the deadlock was retried"
    );
    let (status, _) = status_of(&h.core, message_id).await;
    assert_eq!(status, "queued");
    let mut conn = h.core.pg().get().await.unwrap();
    let counted: i64 = warden_store::schema::message_frequencies::table
        .filter(warden_store::schema::message_frequencies::message_id.eq(message_id))
        .count()
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(counted, 1, "counted once: the aborted attempt left nothing");
    let retries: i32 = messages::table
        .find(message_id)
        .select(messages::retry_count)
        .first(&mut conn)
        .await
        .unwrap();
    assert_eq!(retries, 0);
}

/// Until `n` sessions of this database wait for a lock (deadline 10 s).
async fn wait_for_lock_waiters(core: &Core, n: i64) {
    #[derive(QueryableByName)]
    struct Waiting {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut conn = core.pg().get().await.unwrap();
    loop {
        let w: Waiting = diesel::sql_query(
            "SELECT count(*) AS n FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .get_result(&mut conn)
        .await
        .unwrap();
        if w.n >= n {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no session waits for a lock"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// check_compliance reads in one statement what the send path reads in several: the same
/// state gives the same answer, and a check writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_check_reads_the_state_a_send_decides_on() {
    use warden_store::schema::customers as customer_rows;
    let h = harness(false, None).await;
    let marketing = MessageType::Marketing.described_content();
    let service = MessageType::Service.described_content();
    let utility = MessageType::Utility.described_content();
    let check = |p: PhoneNumber, content| {
        let core = h.core.clone();
        async move {
            let d = core.check(&p, None, content, Utc::now()).await.unwrap();
            d.reason_code.as_str().to_string()
        }
    };

    // Never seen: opted in, no window; and the check does not create the customer.
    let unknown = phone();
    assert_eq!(check(unknown.clone(), marketing).await, "OK");
    assert_eq!(check(unknown.clone(), service).await, "TEMPLATE_REQUIRED");
    let mut conn = h.core.pg().get().await.unwrap();
    let rows: i64 = customer_rows::table
        .filter(customer_rows::phone.eq(unknown.digits()))
        .count()
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(rows, 0, "a check wrote a customer");

    // Opted out of marketing: marketing refused, utility allowed.
    let opted_out = phone();
    assert!(stop_marketing(&mut conn, &opted_out).await);
    assert_eq!(check(opted_out.clone(), marketing).await, "USER_OPTED_OUT");
    assert_eq!(check(opted_out.clone(), utility).await, "OK");

    // Tagged vip: the tag_exclusion policy refuses marketing.
    let vip = phone();
    customers::ensure(&mut conn, &vip).await.unwrap();
    diesel::update(customer_rows::table.find(vip.digits()))
        .set(customer_rows::tags.eq(vec!["vip".to_string()]))
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(check(vip.clone(), marketing).await, "POLICY_RESTRICTION");

    // An inbound message an hour ago: free-form allowed, and a send agrees.
    let talking = phone();
    customers::ensure(&mut conn, &talking).await.unwrap();
    conversations::record_inbound(
        &mut conn,
        &talking,
        "whatsapp",
        "default",
        Utc::now() - TimeDelta::hours(1),
    )
    .await
    .unwrap();
    assert_eq!(check(talking.clone(), service).await, "OK");
    h.core.send(text_send(&talking)).await.unwrap();
    assert_eq!(
        h.core.send(text_send(&unknown)).await.unwrap_err().code(),
        "TEMPLATE_REQUIRED"
    );
}
