//! Import against a real Postgres: bad rows reported by line, good rows kept, idempotent.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_import::import_file;
use warden_store::schema::customers;
use warden_store::testing::TestDatabase;

async fn conn(db: &TestDatabase) -> warden_store::PgPool {
    warden_store::prepare(&db.settings.database, vec![])
        .await
        .unwrap();
    warden_store::connect(&db.settings.database, 2, std::time::Duration::from_secs(5))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_with_bad_rows_keeps_the_good_ones_and_reports_line_numbers() {
    let db = TestDatabase::create();
    let pool = conn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.csv");
    std::fs::write(
        &path,
        "customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score\n\
         +62 812-3456-7890,true,true,vip|gold,0.9\n\
         not-a-phone,true,true,,0.1\n\
         447700900123,no,yes,,0.5\n\
         4915112345678,maybe,true,,0.5\n\
         6281234567891,1,0,,\n",
    )
    .unwrap();
    let mut report = Vec::new();
    let mut c = pool.get().await.unwrap();
    let summary = import_file(&mut c, &path, &mut report).await.unwrap();
    let report = String::from_utf8(report).unwrap();
    assert_eq!(summary.imported, 3);
    assert_eq!(summary.created, 3);
    assert_eq!(summary.skipped, 2);
    assert!(report.contains("line 3:"), "{report}");
    assert!(report.contains("line 5:"), "{report}");

    let (tags, marketing): (Vec<String>, bool) = customers::table
        .find("6281234567890")
        .select((customers::tags, customers::opt_in_marketing))
        .first(&mut c)
        .await
        .unwrap();
    assert_eq!(tags, vec!["vip", "gold"]);
    assert!(marketing);
    let (m, u, country): (bool, bool, String) = customers::table
        .find("447700900123")
        .select((
            customers::opt_in_marketing,
            customers::opt_in_utility,
            customers::country,
        ))
        .first(&mut c)
        .await
        .unwrap();
    assert_eq!((m, u, country.as_str()), (false, true, "GB"));

    // Importing again changes nothing but updates in place.
    let again = import_file(&mut c, &path, &mut Vec::new()).await.unwrap();
    assert_eq!((again.imported, again.created), (3, 0));
    let n: i64 = customers::table.count().get_result(&mut c).await.unwrap();
    assert_eq!(n, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jsonl_and_duplicates_within_a_batch() {
    let db = TestDatabase::create();
    let pool = conn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.jsonl");
    std::fs::write(
        &path,
        "{\"customer_id\":\"6281111111111\",\"opt_in\":{\"marketing\":true,\"utility\":true},\"tags\":[\"a\"],\"engagement_score\":0.2}\n\
         {\"customer_id\":\"6281111111111\",\"opt_in\":{\"marketing\":false,\"utility\":true},\"tags\":[\"b\"],\"engagement_score\":0.3}\n\
         {broken\n",
    )
    .unwrap();
    let mut report = Vec::new();
    let mut c = pool.get().await.unwrap();
    let summary = import_file(&mut c, &path, &mut report).await.unwrap();
    assert_eq!(summary.skipped, 1);
    assert!(String::from_utf8(report).unwrap().starts_with("line 3:"));
    let (tags, marketing): (Vec<String>, bool) = customers::table
        .find("6281111111111")
        .select((customers::tags, customers::opt_in_marketing))
        .first(&mut c)
        .await
        .unwrap();
    assert_eq!(
        (tags, marketing),
        (vec!["b".to_string()], false),
        "the last line for a customer wins"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_the_header_is_refused() {
    let db = TestDatabase::create();
    let pool = conn(&db).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.csv");
    std::fs::write(&path, "phone,marketing\n628,true\n").unwrap();
    let mut c = pool.get().await.unwrap();
    let err = import_file(&mut c, &path, &mut Vec::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("header"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_never_lifts_a_customers_own_opt_out() {
    let db = TestDatabase::create();
    let pool = conn(&db).await;
    let mut c = pool.get().await.unwrap();
    // 1: wrote STOP; 2: opted out by an earlier import; 3: stopped marketing on the platform.
    diesel::sql_query(
        "INSERT INTO customers (phone, country, opt_in_marketing, opt_in_utility, opt_change_reason, tags) VALUES
           ('6281000000001', 'ID', false, false, 'stop via keyword', '{}'),
           ('6281000000002', 'ID', false, false, NULL, '{}'),
           ('6281000000003', 'ID', false, true, 'stop via user_preferences', '{}')",
    )
    .execute(&mut c)
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("customers.csv");
    std::fs::write(
        &path,
        "customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score\n\
         6281000000001,true,true,VIP,0.5\n\
         6281000000002,true,true,VIP|Vip|Gold,0.5\n\
         6281000000003,false,true,gold,0.5\n\
         6281000000004,true,true,,0.5\n",
    )
    .unwrap();
    let mut report = Vec::new();
    let summary = import_file(&mut c, &path, &mut report).await.unwrap();
    let report = String::from_utf8(report).unwrap();
    assert_eq!((summary.imported, summary.skipped), (3, 1), "{report}");
    assert_eq!(summary.kept_opt_outs, 1);
    assert!(
        report.starts_with(
            "line 2: customer 6281000000001 opted out of marketing and utility themselves"
        ),
        "{report}"
    );
    async fn consent(
        c: &mut diesel_async::AsyncPgConnection,
        phone: &str,
    ) -> (bool, bool, Vec<String>) {
        customers::table
            .find(phone)
            .select((
                customers::opt_in_marketing,
                customers::opt_in_utility,
                customers::tags,
            ))
            .first(c)
            .await
            .unwrap()
    }
    assert_eq!(
        consent(&mut c, "6281000000001").await,
        (false, false, vec![])
    );
    assert_eq!(
        consent(&mut c, "6281000000002").await,
        (true, true, vec!["vip".to_string(), "gold".to_string()]),
        "an operator's own opt-out may be lifted; tags stored lower-cased"
    );
    assert_eq!(
        consent(&mut c, "6281000000003").await,
        (false, true, vec!["gold".to_string()]),
        "a row that keeps the opt-out is written"
    );
}
