//! Start-up against a real Postgres: tables, seeds, idempotence, concurrent starts.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};
use diesel_async::RunQueryDsl;
use warden_store::testing::TestDatabase;
use warden_store::{PolicySeed, prepare};

const TABLES: &[&str] = &[
    "customers",
    "conversations",
    "messages",
    "templates",
    "policies",
    "campaigns",
    "message_frequencies",
    "error_knowledge_base",
    "audit_logs",
    "conversation_pricing",
    "webhook_events",
    "account_quality_events",
    "webhook_progress",
];

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

fn policy(id: &str) -> PolicySeed {
    PolicySeed {
        id: id.into(),
        policy_type: "tag_exclusion".into(),
        message_types: vec!["marketing".into()],
        enabled: true,
        definition: serde_json::json!({"tags": ["vip"]}),
    }
}

async fn counts(db: &TestDatabase) -> Vec<(String, i64)> {
    let pool = warden_store::connect(&db.settings.database, 2, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let mut conn = pool.get().await.unwrap();
    let mut out = Vec::new();
    for table in TABLES {
        let c: Count = diesel::sql_query(format!("SELECT count(*) AS n FROM {table}"))
            .get_result(&mut conn)
            .await
            .unwrap();
        out.push((table.to_string(), c.n));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_database_gets_every_table_and_seed_and_a_second_start_changes_nothing() {
    let db = TestDatabase::create();
    let first = prepare(&db.settings.database, vec![policy("skip_vip")])
        .await
        .unwrap();
    assert!(first.migrations_applied >= 1);
    assert!(first.error_codes >= 40);
    let card_rows: usize = warden_rules::pricing::builtin()
        .cards
        .iter()
        .map(|c| c.rates.values().map(|r| r.len()).sum::<usize>())
        .sum();
    assert_eq!(first.pricing_rows, card_rows);
    let before = counts(&db).await;
    let get = |c: &[(String, i64)], t: &str| c.iter().find(|(n, _)| n == t).unwrap().1;
    assert!(get(&before, "error_knowledge_base") >= 40);
    assert_eq!(get(&before, "conversation_pricing"), card_rows as i64);
    assert_eq!(get(&before, "policies"), 1);

    let second = prepare(&db.settings.database, vec![policy("skip_vip")])
        .await
        .unwrap();
    assert_eq!(second.migrations_applied, 0);
    assert_eq!(
        counts(&db).await,
        before,
        "a second start must not change row counts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_starting_at_once_all_succeed() {
    let db = TestDatabase::create();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let settings = db.settings.database.clone();
        tasks.push(tokio::spawn(async move {
            prepare(&settings, vec![policy("p")]).await
        }));
    }
    let mut applied = 0;
    for t in tasks {
        applied += t
            .await
            .unwrap()
            .expect("concurrent start-up")
            .migrations_applied;
    }
    let migrations = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("up.sql").is_file())
        .count();
    assert_eq!(
        applied, migrations,
        "each migration is applied exactly once across the four starts"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_removed_from_the_file_are_disabled_not_applied() {
    let db = TestDatabase::create();
    prepare(&db.settings.database, vec![policy("a"), policy("b")])
        .await
        .unwrap();
    prepare(&db.settings.database, vec![policy("b")])
        .await
        .unwrap();
    let pool = warden_store::connect(&db.settings.database, 1, std::time::Duration::from_secs(5))
        .await
        .unwrap();
    let mut conn = pool.get().await.unwrap();
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let enabled: Vec<Row> =
        diesel::sql_query("SELECT id FROM policies WHERE enabled AND in_file ORDER BY id")
            .load(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        enabled.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        vec!["b"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_postgres_is_one_clear_line() {
    let mut settings = warden_settings::Settings::load(None).unwrap();
    settings.database.port = 1; // nothing listens there
    let Err(err) =
        warden_store::connect(&settings.database, 1, std::time::Duration::from_millis(200)).await
    else {
        panic!("connecting to a closed port must fail");
    };
    let line = err.to_string();
    assert!(
        line.starts_with("cannot reach Postgres at 127.0.0.1:1/"),
        "{line}"
    );
    assert!(!line.contains('\n'));
}
