//! The batched send path (`Core::send_batch`) against real Postgres: on random populations
//! (opt-outs, caps at the edge, tags, countries, quiet hours, open windows, conversation
//! holders, the platform's 131049 hold, duplicates, the portfolio messaging limit) a chunk judged and recorded by
//! the batch comes to exactly what the one send path (`Core::send`, one recipient at a
//! time in the same order) comes to on an identical database: the same outcome and
//! decision for every recipient and the same rows. And single sends to the same customers
//! racing the batch never pass the frequency cap together.

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use proptest::prelude::*;
use uuid::Uuid;
use warden_core::campaigns::fanout::RecipientPlan;
use warden_core::send::batch::{BatchOutcome, Previewed};
use warden_core::{Core, SendError, SendKind, SendRequest, TemplateSend};
use warden_rules::kinds::MessageType;
use warden_rules::phone::{PhoneNumber, canonicalize};
use warden_rules::policy::PolicySet;
use warden_store::schema::templates;

use crate::common::TestCore;

/// One customer of a random population.
#[derive(Debug, Clone)]
struct Person {
    /// 0: Indonesia, 1: North America (blocked for marketing), 2: United Kingdom.
    country: u8,
    opted_out: bool,
    vip: bool,
    /// Messages of the template's category counted in the last 24 h (cap: 2).
    prior: u8,
    window_open: bool,
    /// A platform 131049 in the last 24 h.
    held_131049: bool,
    /// Reached by the portfolio in the last 24 h.
    reached: bool,
    /// Sent the same content a minute ago (duplicate_guard).
    duplicate: bool,
    /// Who holds the open conversation: 0 nobody set, 1 human, 2 other_app, 3 agents.
    holder: u8,
}

#[derive(Debug, Clone)]
struct World {
    people: Vec<Person>,
    quiet_now: bool,
    marketing: bool,
    /// The portfolio's messaging limit (None: not learnt).
    limit: Option<u32>,
    /// The template's format (a marketing world only): 0 plain, 1 carousel, 2 limited-time
    /// offer; the batch must reach the single path's decisions whatever the format.
    format: u8,
}

fn person() -> impl Strategy<Value = Person> {
    (
        0u8..3,
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.15),
        0u8..4,
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.1),
        0u8..4,
    )
        .prop_map(
            |(
                country,
                opted_out,
                vip,
                prior,
                window_open,
                held_131049,
                reached,
                duplicate,
                holder,
            )| {
                Person {
                    holder,
                    country,
                    opted_out,
                    vip,
                    prior,
                    window_open,
                    held_131049,
                    reached,
                    duplicate,
                }
            },
        )
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec(person(), 1..40),
        prop::bool::weighted(0.25),
        prop::bool::weighted(0.7),
        prop::option::weighted(0.4, 1u32..30),
        0u8..3,
    )
        .prop_map(|(people, quiet_now, marketing, limit, format)| World {
            people,
            quiet_now,
            marketing,
            limit,
            format: if marketing { format } else { 0 },
        })
}

/// The policies of a world: a cap of 2 a day, vip and +1 excluded from marketing, a
/// duplicate guard, and quiet hours (held) around `now` or away from it.
fn policies(now: DateTime<Utc>, quiet_now: bool) -> PolicySet {
    let h = now.hour();
    let (start, end) = if quiet_now {
        ((h + 23) % 24, (h + 1) % 24)
    } else {
        ((h + 2) % 24, (h + 3) % 24)
    };
    let yaml = format!(
        "version: 1
policies:
  - id: cap
    type: frequency_limit
    message_types: [marketing, utility]
    max: 2
    window: 24h
  - id: quiet
    type: quiet_hours
    message_types: [marketing]
    start: \"{start:02}:00\"
    end: \"{end:02}:00\"
    timezone: UTC
    action: hold
  - id: skip_vip
    type: tag_exclusion
    message_types: [marketing]
    tags: [vip]
  - id: no_plus1
    type: country_block
    message_types: [marketing]
    prefixes: [\"1\"]
  - id: no_repeats
    type: duplicate_guard
    window: 10m
    message_types: [marketing, utility]
"
    );
    PolicySet::from_yaml(&yaml).unwrap()
}

fn phone_of(i: usize, p: &Person) -> PhoneNumber {
    let text = match p.country {
        0 => format!("+62812{:07}", 1000 + i),
        1 => format!("+1415555{:04}", 1000 + i),
        _ => format!("+447700{:06}", 900_000 + i),
    };
    canonicalize(&text).unwrap()
}

const CAMPAIGN: &str = "0192a000-0000-7000-8000-000000000043";

fn kind() -> SendKind {
    SendKind::Template(TemplateSend {
        name: "promo".into(),
        locale: "en".into(),
        variables: vec!["Ana".into()],
        ..Default::default()
    })
}

fn plan() -> RecipientPlan {
    plan_for(0)
}

/// The campaign's one parameter set for a template of `format` (see [`World::format`]).
fn plan_for(format: u8) -> RecipientPlan {
    use warden_rules::template_params::formats::{carousel_component, offer_component};
    let components = match format {
        1 => vec![carousel_component(&serde_json::json!([
            {"header": {"link": "https://shop.example/1.jpg"}, "buttons": [{"payload": "more"}]},
            {"header": {"link": "https://shop.example/2.jpg"}},
        ]))],
        2 => vec![
            serde_json::json!({"type": "button", "sub_type": "copy_code", "index": 0,
                               "parameters": [{"type": "coupon_code", "coupon_code": "SAVE10"}]}),
            offer_component((Utc::now() + TimeDelta::days(2)).timestamp_millis()),
        ],
        _ => Vec::new(),
    };
    RecipientPlan {
        campaign_id: CAMPAIGN.parse().unwrap(),
        template_name: "promo".into(),
        locale: "en".into(),
        variables: vec!["Ana".into()],
        components,
        senders: Vec::new(),
    }
}

/// The stored components of a template of `format` (None: body only).
fn components_of(format: u8) -> Option<serde_json::Value> {
    use serde_json::json;
    use warden_rules::template_spec::formats::carousel::parse_cards;
    use warden_rules::template_spec::formats::offer::parse_offer;
    use warden_rules::template_spec::{TemplateFormat, TemplateSpec, parse_buttons};
    let card = json!({"header": {"format": "IMAGE", "example": "4::h"},
                      "buttons": [{"type": "QUICK_REPLY", "text": "More"}]});
    let spec = match format {
        1 => TemplateSpec {
            body: "Hello {{1}}".into(),
            format: TemplateFormat::Carousel(parse_cards(&json!([card.clone(), card])).unwrap()),
            ..Default::default()
        },
        2 => TemplateSpec {
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
        _ => return None,
    };
    spec.validate(warden_rules::kinds::TemplateCategory::Marketing)
        .unwrap();
    Some(serde_json::Value::Array(spec.to_components()))
}

/// A database holding `world`, judged at `now`.
async fn build(world: &World, now: DateTime<Utc>) -> TestCore {
    let h = TestCore::builder()
        .pool_size(8)
        .policies(policies(now, world.quiet_now))
        .clock_at(now)
        .build()
        .await;
    let core = &h.core;
    let category = if world.marketing {
        "marketing"
    } else {
        "utility"
    };
    let mut conn = core.pg().get().await.unwrap();
    diesel::insert_into(templates::table)
        .values((
            templates::name.eq("promo"),
            templates::locale.eq("en"),
            templates::category.eq(category),
            templates::status.eq("APPROVED"),
            templates::body_text.eq("Hello {{1}}"),
            templates::components.eq(components_of(world.format)),
            templates::parameter_format.eq(components_of(world.format).map(|_| "positional")),
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    diesel::sql_query(
        "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name,
                                locale, variables, audience_filter, sender_id)
         VALUES ($1, 'batch', $2, 'running', now(), 'promo', 'en', '[\"Ana\"]', '{}', 'default')",
    )
    .bind::<SqlUuid, _>(CAMPAIGN.parse::<Uuid>().unwrap())
    .bind::<Text, _>(category)
    .execute(&mut conn)
    .await
    .unwrap();
    let content = kind().to_content();
    for (i, p) in world.people.iter().enumerate() {
        let phone = phone_of(i, p);
        let digits = phone.digits().to_string();
        warden_core::customers::ensure(&mut conn, &phone)
            .await
            .unwrap();
        let tags: Vec<String> = if p.vip { vec!["vip".into()] } else { vec![] };
        diesel::sql_query(
            "UPDATE customers SET opt_in_marketing = $2, opt_in_utility = $3, tags = $4,
                    marketing_limited_at = $5 WHERE phone = $1",
        )
        .bind::<Text, _>(&digits)
        .bind::<diesel::sql_types::Bool, _>(!p.opted_out)
        .bind::<diesel::sql_types::Bool, _>(!(p.opted_out && p.country == 2))
        .bind::<diesel::sql_types::Array<Text>, _>(tags)
        .bind::<diesel::sql_types::Nullable<Timestamptz>, _>(
            p.held_131049.then(|| now - TimeDelta::hours(1)),
        )
        .execute(&mut conn)
        .await
        .unwrap();
        for k in 0..p.prior {
            diesel::sql_query(
                "INSERT INTO message_frequencies (customer_phone, business, category, message_id, counted_at)
                 VALUES ($1, 'default', $2, $3, $4)",
            )
            .bind::<Text, _>(&digits)
            .bind::<Text, _>(category)
            .bind::<SqlUuid, _>(Uuid::now_v7())
            .bind::<Timestamptz, _>(now - TimeDelta::hours(2 + i64::from(k)))
            .execute(&mut conn)
            .await
            .unwrap();
        }
        if p.window_open {
            warden_core::conversations::record_inbound(
                &mut conn,
                &phone,
                "whatsapp",
                "default",
                now - TimeDelta::hours(1),
            )
            .await
            .unwrap();
            if p.holder > 0 {
                let kind = ["human", "other_app", "agents"][usize::from(p.holder - 1)];
                diesel::sql_query(
                    "UPDATE conversations SET holder = $2, holder_since = $3, holder_by = 'test',
                            holder_until = $4 WHERE customer_phone = $1",
                )
                .bind::<Text, _>(&digits)
                .bind::<Text, _>(kind)
                .bind::<Timestamptz, _>(now - TimeDelta::minutes(30))
                .bind::<Timestamptz, _>(now + TimeDelta::hours(1))
                .execute(&mut conn)
                .await
                .unwrap();
            }
        }
        if p.reached {
            diesel::sql_query(
                "INSERT INTO portfolio_reach (customer_phone, reached_at, message_id, portfolio)
                 VALUES ($1, $2, $3, 'default')",
            )
            .bind::<Text, _>(&digits)
            .bind::<Timestamptz, _>(now - TimeDelta::hours(3))
            .bind::<SqlUuid, _>(Uuid::now_v7())
            .execute(&mut conn)
            .await
            .unwrap();
        }
        if p.duplicate {
            diesel::sql_query(
                "INSERT INTO messages (id, customer_phone, channel, direction, message_type,
                                       category, status, content, created_at)
                 VALUES ($1, $2, 'whatsapp', 'outbound', 'template', $3, 'delivered', $4, $5)",
            )
            // The same id in both databases (refusals quote it).
            .bind::<SqlUuid, _>(Uuid::from_u128(
                0x0192_a000_0000_7000_8000_0000_0000_0000 + i as u128,
            ))
            .bind::<Text, _>(&digits)
            .bind::<Text, _>(category)
            .bind::<diesel::sql_types::Jsonb, _>(&content)
            .bind::<Timestamptz, _>(now - TimeDelta::minutes(1))
            .execute(&mut conn)
            .await
            .unwrap();
        }
    }
    drop(conn);
    if let Some(limit) = world.limit {
        assert!(
            warden_core::account::portfolio::learn_from_platform(
                core.pg(),
                "default",
                &limit.to_string(),
                "get_account_quality",
                "test",
            )
            .await
            .unwrap()
        );
    }
    h
}

/// What one recipient came to, comparably across the two paths.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Sent,
    Refused(String, Option<String>, String),
    Held(String, Option<String>),
    Paused,
    NotAttempted,
    Error(String),
}

fn seen_batch(o: &BatchOutcome) -> Seen {
    match o {
        BatchOutcome::Enqueued { .. } => Seen::Sent,
        BatchOutcome::Refused { decision: d, .. } => Seen::Refused(
            d.reason_code.as_str().into(),
            d.policy_id.clone(),
            d.human_explanation.clone(),
        ),
        BatchOutcome::Held { decision: d, .. } => {
            Seen::Held(d.reason_code.as_str().into(), d.policy_id.clone())
        }
        BatchOutcome::CampaignPaused(_) => Seen::Paused,
        BatchOutcome::NotAttempted => Seen::NotAttempted,
        BatchOutcome::Error { code, .. } => Seen::Error((*code).into()),
    }
}

fn seen_single(r: &Result<warden_core::Accepted, SendError>) -> Seen {
    match r {
        Ok(_) => Seen::Sent,
        Err(SendError::RefusedRecorded { decision: d, .. }) => Seen::Refused(
            d.reason_code.as_str().into(),
            d.policy_id.clone(),
            d.human_explanation.clone(),
        ),
        Err(SendError::Held { decision: d, .. }) => {
            Seen::Held(d.reason_code.as_str().into(), d.policy_id.clone())
        }
        Err(SendError::CampaignPaused(_)) => Seen::Paused,
        Err(e) => Seen::Error(e.code().into()),
    }
}

/// The rows a run leaves, comparably (ids and wall-clock columns left out).
async fn rows(core: &Core) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Line {
        #[diesel(sql_type = Text)]
        line: String,
    }
    let mut conn = core.pg().get().await.unwrap();
    let lines: Vec<Line> = diesel::sql_query(
        "SELECT 'message ' || customer_phone || ' ' || status || ' ' || category || ' ' ||
                coalesce(error_category, '-') || ' ' || coalesce(error_explanation, '-') || ' ' ||
                coalesce(deliver_at::text, '-') || ' ' || coalesce(campaign_id::text, '-') AS line
           FROM messages WHERE direction = 'outbound' AND campaign_id IS NOT NULL
         UNION ALL
         SELECT 'counted ' || customer_phone || ' ' || business || ' ' || category
           FROM message_frequencies
         UNION ALL
         SELECT 'reach ' || portfolio || ' ' || customer_phone || ' ' || reached_at::text
           FROM portfolio_reach
         UNION ALL
         SELECT 'hold ' || h.reason || ' ' || h.held_until::text || ' ' || m.customer_phone
           FROM message_holds h JOIN messages m ON m.id = h.message_id
         UNION ALL
         SELECT 'actor ' || a.actor || ' ' || m.customer_phone
           FROM message_actors a JOIN messages m ON m.id = a.message_id
         UNION ALL
         SELECT 'audit ' || action || ' ' || actor FROM audit_logs
          WHERE action IN ('message_refused_at_dispatch', 'message_held', 'campaign_paused')
         UNION ALL
         SELECT 'campaign ' || status || ' ' || failed_count || ' ' || coalesce(status_reason, '-')
           FROM campaigns
         ORDER BY 1",
    )
    .load(&mut conn)
    .await
    .unwrap();
    lines.into_iter().map(|l| l.line).collect()
}

async fn check(world: World) -> Vec<Seen> {
    let now = Utc::now();
    let phones: Vec<PhoneNumber> = world
        .people
        .iter()
        .enumerate()
        .map(|(i, p)| phone_of(i, p))
        .collect();
    let mut sorted = phones.clone();
    sorted.sort_by(|a, b| a.digits().cmp(b.digits()));

    // The single path, one recipient at a time in phone order, stopping where the
    // scheduler stops (the campaign paused at the messaging limit).
    let single = build(&world, now).await;
    let plan = plan_for(world.format);
    let mut by_single = Vec::new();
    let mut paused = false;
    for phone in &sorted {
        if paused {
            by_single.push(Seen::NotAttempted);
            continue;
        }
        let r = single.core.send(plan.request(phone.clone(), "test")).await;
        let seen = seen_single(&r);
        paused = seen == Seen::Paused;
        by_single.push(seen);
    }

    // The batch, with a preview first (which must write nothing and agree).
    let batched = build(&world, now).await;
    let before = rows(&batched.core).await;
    let mut reaches = Default::default();
    let previewed = batched
        .core
        .preview_batch(&plan.batch(sorted.clone(), "test"), &mut reaches)
        .await
        .unwrap();
    assert_eq!(
        rows(&batched.core).await,
        before,
        "the preview wrote nothing"
    );
    let outcomes = batched
        .core
        .send_batch(plan.batch(sorted.clone(), "test"))
        .await;
    let by_batch: Vec<Seen> = outcomes.iter().map(seen_batch).collect();
    assert_eq!(by_batch, by_single, "world: {world:?}");
    for (p, s) in previewed.iter().zip(&by_single) {
        match (p, s) {
            (Previewed::Send, Seen::Sent) => {}
            (Previewed::Refuse(d), Seen::Refused(code, policy, _) | Seen::Held(code, policy)) => {
                assert_eq!(
                    (d.reason_code.as_str(), &d.policy_id),
                    (code.as_str(), policy)
                );
            }
            // Past the limit the real run pauses; the preview counts the limit's refusals.
            (Previewed::Refuse(d), Seen::Paused | Seen::NotAttempted) => {
                assert!(
                    warden_core::account::portfolio::is_messaging_limit(d) || paused,
                    "{d:?}"
                );
            }
            (Previewed::Send, Seen::NotAttempted) if paused => {}
            other => panic!("preview {other:?} in world {world:?}"),
        }
    }
    assert_eq!(
        rows(&batched.core).await,
        rows(&single.core).await,
        "world: {world:?}"
    );
    by_single
}

#[test]
fn batch_decisions_equal_single_decisions_on_random_populations() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(8);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runner
        .run(&world(), |w| {
            rt.block_on(check(w));
            Ok(())
        })
        .unwrap();
}

/// A campaign of a carousel template and one of a limited-time offer template: on a
/// population with opt-outs, caps at the edge, quiet hours and vip tags, the batch reaches
/// the single path's decision for every recipient and leaves the same rows (the stored
/// content is the resolved carousel or offer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn carousel_and_offer_campaigns_reach_the_single_paths_decisions() {
    for format in [1, 2] {
        let people = (0..12)
            .map(|i| Person {
                country: (i % 3) as u8,
                opted_out: i % 5 == 0,
                vip: i % 7 == 0,
                prior: (i % 4) as u8,
                window_open: i % 2 == 0,
                held_131049: i == 3,
                reached: false,
                duplicate: false,
                holder: 0,
            })
            .collect();
        let seen = check(World {
            people,
            quiet_now: false,
            marketing: true,
            limit: None,
            format,
        })
        .await;
        assert!(seen.contains(&Seen::Sent), "some are sent: {seen:?}");
        assert!(
            seen.iter().any(|s| matches!(s, Seen::Refused(..))),
            "some are refused: {seen:?}"
        );
    }
}

/// Single sends to the same customers while the batch runs: every customer is one
/// message from the cap, so exactly one of (the batch's, the single send's) passes, and
/// each customer ends with exactly the cap counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_sends_racing_the_batch_never_pass_the_cap_together() {
    let now = Utc::now();
    let people: Vec<Person> = (0..96)
        .map(|i| Person {
            country: 0,
            opted_out: i % 11 == 0,
            vip: false,
            prior: 1,
            window_open: i % 3 == 0,
            held_131049: false,
            reached: false,
            duplicate: false,
            holder: 0,
        })
        .collect();
    let world = World {
        people: people.clone(),
        quiet_now: false,
        marketing: true,
        limit: None,
        format: 0,
    };
    let h = build(&world, now).await;
    let phones: Vec<PhoneNumber> = people
        .iter()
        .enumerate()
        .map(|(i, p)| phone_of(i, p))
        .collect();
    let plan = plan();
    let batch_core = h.core.clone();
    let chunks: Vec<Vec<PhoneNumber>> = phones.chunks(32).map(<[_]>::to_vec).collect();
    let plan_b = plan.clone();
    let batch = tokio::spawn(async move {
        let mut all = Vec::new();
        for chunk in chunks {
            all.extend(
                batch_core
                    .send_batch(plan_b.batch(chunk, "scheduler"))
                    .await,
            );
        }
        all
    });
    let single_core = h.core.clone();
    let racing = phones.clone();
    let singles = tokio::spawn(async move {
        let mut all = Vec::new();
        // A different content from the campaign's (the duplicate guard stays out of it).
        for phone in racing.iter().rev() {
            let req = SendRequest::from_tool(
                phone.clone(),
                "whatsapp",
                SendKind::Template(TemplateSend {
                    name: "promo".into(),
                    locale: "en".into(),
                    variables: vec!["Budi".into()],
                    ..Default::default()
                }),
                MessageType::Template,
                "test",
            );
            all.push(single_core.send(req).await);
        }
        all.reverse();
        all
    });
    let by_batch = batch.await.unwrap();
    let by_single = singles.await.unwrap();
    for (i, p) in people.iter().enumerate() {
        let b = matches!(by_batch[i], BatchOutcome::Enqueued { .. });
        let s = by_single[i].is_ok();
        if p.opted_out {
            assert!(
                !b && !s,
                "opted out {i}: {:?} {:?}",
                by_batch[i],
                by_single[i]
            );
            continue;
        }
        assert!(
            b ^ s,
            "customer {i}: batch {:?}, single {:?}",
            by_batch[i],
            by_single[i]
        );
        let refused = if b {
            by_single[i].as_ref().err().map(SendError::code)
        } else {
            by_batch[i].decision().map(|d| d.reason_code.as_str())
        };
        assert_eq!(refused, Some("FREQUENCY_CAP_EXCEEDED"), "customer {i}");
    }
    let mut conn = h.core.pg().get().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let over: N = diesel::sql_query(
        "SELECT count(*) AS n FROM (SELECT customer_phone FROM message_frequencies
           GROUP BY customer_phone HAVING count(*) > 2) x",
    )
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(over.n, 0, "a customer passed the cap");
}
