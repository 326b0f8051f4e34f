//! Conversation history with 100,000 messages of one customer (plus other customers'
//! traffic): the first page and a deep page (before a message 90,000 back), each read
//! through `warden_core::conversations::view::history` as get_conversation_history does.
//! Goal: p99 <= 5 ms for both (keyset pagination on `messages_history_idx`).
//! `cargo run --release -p warden-bench --bin history-bench [-- MESSAGES]`; prints a JSON line.

use std::time::{Duration, Instant};

use diesel::sql_types::{BigInt, Text};
use diesel::{QueryableByName, sql_query};
use diesel_async::RunQueryDsl;
use warden_core::conversations::view::history;
use warden_store::testing::TestDatabase;

const PHONE: &str = "6281299990001";
const PAGE: i64 = 50;
const RUNS: usize = 1000;

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: uuid::Uuid,
}

fn summary(name: &str, mut ms: Vec<f64>) -> serde_json::Value {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (p50, p99) = (
        warden_bench::percentile(&ms, 0.5),
        warden_bench::percentile(&ms, 0.99),
    );
    eprintln!(
        "{name:<32} n={:<5} p50={p50:>7.3}ms p99={p99:>7.3}ms",
        ms.len()
    );
    serde_json::json!({"name": name, "n": ms.len(), "p50_ms": p50, "p99_ms": p99})
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let n: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let db = TestDatabase::create();
    let settings = db.settings.clone();
    warden_store::prepare(&settings.database, vec![]).await?;
    let pool = warden_store::connect(&settings.database, 2, Duration::from_secs(5)).await?;
    let mut c = pool.get().await?;
    // Set-up data in bulk (a bench executable; the product writes through warden-core).
    sql_query(
        "INSERT INTO customers (phone, country) \
         SELECT $1, 'ID' UNION ALL \
         SELECT '62813' || lpad(g::text, 8, '0'), 'ID' FROM generate_series(1, 1000) g",
    )
    .bind::<Text, _>(PHONE)
    .execute(&mut c)
    .await?;
    let t = Instant::now();
    // The customer's n messages, alternating direction, one second apart; and as many
    // again spread over 1,000 other customers, interleaved in time.
    sql_query(
        "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, \
                               status, content, wamid, created_at) \
         SELECT gen_random_uuid(), \
                CASE WHEN g % 2 = 0 THEN $1 ELSE '62813' || lpad((1 + g % 1000)::text, 8, '0') END, \
                'whatsapp', \
                CASE WHEN g % 4 = 0 THEN 'inbound' ELSE 'outbound' END, 'text', 'service', \
                CASE WHEN g % 4 = 0 THEN 'received' ELSE 'delivered' END, \
                jsonb_build_object('type', 'text', 'timestamp', '1764000000', \
                                   'text', jsonb_build_object('body', 'message number ' || g)), \
                'wamid.BENCH' || g, now() - make_interval(secs => ($2 * 2 - g)) \
         FROM generate_series(1, $2 * 2) g",
    )
    .bind::<Text, _>(PHONE)
    .bind::<BigInt, _>(n)
    .execute(&mut c)
    .await?;
    sql_query("ANALYZE messages").execute(&mut c).await?;
    eprintln!(
        "seeded {} messages in {:.1}s",
        n * 2,
        t.elapsed().as_secs_f64()
    );
    // `before` for the deep page: the message 90% of the way back.
    let deep: Id = sql_query(
        "SELECT id FROM messages WHERE customer_phone = $1 AND channel = 'whatsapp' \
         ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1",
    )
    .bind::<Text, _>(PHONE)
    .bind::<BigInt, _>(n * 9 / 10)
    .get_result(&mut c)
    .await?;

    let mut first = Vec::with_capacity(RUNS);
    let mut deep_ms = Vec::with_capacity(RUNS);
    for i in 0..RUNS + 100 {
        let t = Instant::now();
        let page = history(&mut c, PHONE, "whatsapp", &default_sender(), PAGE, None).await?;
        let a = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(page.messages.len() as i64, PAGE);
        let t = Instant::now();
        let page = history(
            &mut c,
            PHONE,
            "whatsapp",
            &default_sender(),
            PAGE,
            Some(deep.id),
        )
        .await?;
        let b = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(page.messages.len() as i64, PAGE);
        // The first 100 rounds warm the connection's prepared statements and the cache.
        if i >= 100 {
            first.push(a);
            deep_ms.push(b);
        }
    }
    drop(c);
    let report = serde_json::json!({
        "messages": n,
        "page": PAGE,
        "results": [summary("history first page", first), summary("history deep page", deep_ms)],
    });
    println!("{report}");
    Ok(())
}

/// The default sender, as a read names it (no senders file).
fn default_sender() -> warden_core::senders::SenderRef {
    warden_core::senders::SenderRef {
        key: "default".into(),
        id: "default".into(),
    }
}
