//! Measures one full compliance check (cache hit, policies loaded, frequency count) and
//! one accepted send (row committed, message handed to the stream) against the real services, and the same send with an
//! idempotency key and a `duplicate_guard` on, interleaved with the plain one so
//! both see the same machine load.
//! `cargo run --release -p warden-bench --bin check-bench [-- N]`; prints a JSON line too
//! (with this process's peak RSS).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_core::Dependencies;
use warden_core::{
    Core, RefusalMode, SendKind, SendRequest, TemplateSend, conversations, customers,
};
use warden_rules::kinds::MessageType;
use warden_store::schema::templates;
use warden_store::testing::TestDatabase;

fn summary(name: &str, mut micros: Vec<f64>) -> serde_json::Value {
    micros.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    let (p50, p99) = (
        warden_bench::percentile(&micros, 0.5),
        warden_bench::percentile(&micros, 0.99),
    );
    eprintln!(
        "{name:<28} n={:<6} mean={mean:>8.1}us p50={p50:>8.1}us p99={p99:>8.1}us",
        micros.len()
    );
    serde_json::json!({"name": name, "n": micros.len(), "mean_us": mean, "p50_us": p50, "p99_us": p99})
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    warden_telemetry::install_crypto_provider();
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5000);
    let db = TestDatabase::create();
    let mut settings = db.settings.clone();
    settings.delivery_stream = format!("BENCH_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
    let (policies, seeds) = warden_core::policy_file::load(&settings.policies_path)?;
    warden_store::prepare(&settings.database, seeds).await?;
    let deps = Dependencies {
        pg: warden_store::connect(&settings.database, 8, Duration::from_secs(5)).await?,
        redis: Some(
            warden_core::deps::connect_redis(&settings.redis, Duration::from_secs(2))
                .await
                .map_err(anyhow::Error::msg)?,
        ),
        stream: Some(warden_stream::DeliveryStream::connect(&settings).await?),
        settings: Arc::new(settings.clone()),
        policies: Arc::new(policies),
    };
    // The same core with a duplicate guard added to the shipped policies.
    let mut guarded = deps.policies.policies().to_vec();
    guarded.push(warden_rules::policy::Policy::from_json(
        &serde_json::json!(
            {"id": "bench_no_repeats", "type": "duplicate_guard", "window": "10m"}
        ),
    )?);
    let safe_deps = Dependencies {
        policies: Arc::new(warden_rules::policy::PolicySet::from_policies(guarded)?),
        ..deps.clone()
    };
    let core = Core::new(deps, "bench");
    let safe_core = Core::new(safe_deps, "bench");
    let mut conn = core.pg().get().await?;
    diesel::insert_into(templates::table)
        .values((
            templates::name.eq("bench_receipt"),
            templates::locale.eq("en"),
            templates::category.eq("utility"),
            templates::status.eq("APPROVED"),
            templates::body_text.eq("Order {{1}} shipped"),
        ))
        .execute(&mut conn)
        .await?;
    let phone = warden_rules::phone::canonicalize("6281299990000")?;
    customers::ensure(&mut conn, &phone).await?;
    let conv = conversations::record_inbound(
        &mut conn,
        &phone,
        "whatsapp",
        "default",
        Utc::now() - TimeDelta::minutes(5),
    )
    .await?;
    core.refresh_window_cache(&conv).await;
    drop(conn);

    for _ in 0..200 {
        core.check(
            &phone,
            None,
            MessageType::Marketing.described_content(),
            Utc::now(),
        )
        .await?;
    }
    let mut checks = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        core.check(
            &phone,
            None,
            MessageType::Marketing.described_content(),
            Utc::now(),
        )
        .await?;
        checks.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut sends = Vec::with_capacity(n / 5);
    let mut safe_sends = Vec::with_capacity(n / 5);
    for i in 0..n / 5 {
        let req = |prefix: &str| -> anyhow::Result<SendRequest> {
            Ok(SendRequest {
                sender: None,
                phone: warden_rules::phone::canonicalize(&format!("{prefix}{:08}", i))?,
                channel: "whatsapp".into(),
                kind: SendKind::Template(TemplateSend {
                    name: "bench_receipt".into(),
                    locale: "en".into(),
                    variables: vec![i.to_string()],
                    ..Default::default()
                }),
                message_type: MessageType::Template,
                campaign_id: None,
                existing_message_id: None,
                refusal: RefusalMode::Error,
                actor: "bench",
            })
        };
        let t = Instant::now();
        let accepted = core.send(req("62813")?).await?;
        sends.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(accepted.published);
        let key = warden_core::send::idempotency::IdempotencyKey {
            actor: "bench".into(),
            key: format!("bench-{i}"),
            tool: "send_template".into(),
            args_hash: warden_rules::safety::idempotency::fingerprint(
                "send_template",
                &serde_json::json!({"to": format!("62814{i:08}"), "template_name": "bench_receipt", "variables": [i.to_string()]}),
            ),
        };
        let t = Instant::now();
        let accepted = safe_core.send_keyed(req("62814")?, Some(key)).await?;
        safe_sends.push(t.elapsed().as_secs_f64() * 1e6);
        assert!(accepted.published && !accepted.replayed);
    }
    let p99 = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        warden_bench::percentile(&v, 0.99)
    };
    let ratio = p99(&safe_sends) / p99(&sends);
    eprintln!("p99 ratio (key + duplicate_guard) / plain: {ratio:.3}");
    let report = serde_json::json!({
        "machine": format!("{} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)),
        "results": [summary("compliance check (dry run)", checks), summary("send accepted (row + ack)", sends),
                    summary("send accepted, key + duplicate_guard", safe_sends)],
        "safety_p99_ratio": ratio,
        "peak_rss_mib": warden_bench::own_peak_rss_mib(),
    });
    println!("{report}");
    if let Some(stream) = core.stream() {
        let _ = stream
            .jetstream
            .delete_stream(&settings.delivery_stream)
            .await;
    }
    Ok(())
}
