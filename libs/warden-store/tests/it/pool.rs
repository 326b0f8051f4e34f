//! The pool's checkout check: it sends no statement, and it refuses a connection whose
//! session Postgres ended (bb8 then discards it and hands out another).

use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text};
use diesel_async::RunQueryDsl;
use diesel_async::pooled_connection::PoolableConnection;
use warden_store::testing::TestDatabase;

#[derive(QueryableByName)]
struct Pid {
    #[diesel(sql_type = Integer)]
    pid: i32,
}

async fn backend_pid(conn: &mut diesel_async::AsyncPgConnection) -> i32 {
    diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result::<Pid>(conn)
        .await
        .expect("pg_backend_pid")
        .pid
}

#[derive(QueryableByName)]
struct Query {
    #[diesel(sql_type = Text)]
    query: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkout_sends_no_statement() {
    let db = TestDatabase::create();
    let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(5))
        .await
        .unwrap();
    let pid = {
        let mut conn = pool.get().await.unwrap();
        let pid = backend_pid(&mut conn).await;
        diesel::sql_query("SELECT 'last statement before the checkouts'")
            .execute(&mut *conn)
            .await
            .unwrap();
        pid
    };
    for _ in 0..3 {
        drop(pool.get().await.unwrap());
    }
    let admin = warden_store::connect(&db.settings.database, 1, Duration::from_secs(5))
        .await
        .unwrap();
    // pg_stat_activity shows each session's latest statement as soon as it starts.
    let last: Query = diesel::sql_query(format!(
        "SELECT query FROM pg_stat_activity WHERE pid = {pid}"
    ))
    .get_result(&mut *admin.get().await.unwrap())
    .await
    .unwrap();
    assert_eq!(last.query, "SELECT 'last statement before the checkouts'");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_postgres_closed_fails_the_checkout_check() {
    use bb8::ManageConnection;
    let db = TestDatabase::create();
    let manager = warden_store::pool::manager(db.settings.database.url());
    let mut conn = manager.connect().await.unwrap();
    manager
        .is_valid(&mut conn)
        .await
        .expect("an open connection passes");
    let pid = backend_pid(&mut conn).await;

    // As a Postgres restart does: the server ends the session.
    let pool = warden_store::connect(&db.settings.database, 1, Duration::from_secs(5))
        .await
        .unwrap();
    diesel::sql_query(format!("SELECT pg_terminate_backend({pid})"))
        .execute(&mut *pool.get().await.unwrap())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !conn.is_broken() {
        assert!(
            Instant::now() < deadline,
            "the driver never saw the session end"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // bb8 discards a connection that fails this check and hands out another.
    assert!(manager.is_valid(&mut conn).await.is_err());
}
