//! A fresh database per test (`t_<uuid>`), dropped when the guard goes out of scope.
//!
//! Connection settings come from the usual environment (DB_HOST, DB_USER, ...), so tests
//! run against whatever Postgres `make test` prepared.

use diesel::prelude::*;
use diesel_async::AsyncPgConnection;
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use warden_settings::{Database, Settings};

type SyncPg = AsyncConnectionWrapper<AsyncPgConnection>;

pub struct TestDatabase {
    pub settings: Settings,
    admin: Database,
}

impl TestDatabase {
    /// Create an empty database and return settings pointing at it.
    pub fn create() -> Self {
        let mut settings = Settings::load(None).expect("test settings");
        let admin = settings.database.clone();
        let name = format!("t_{}", uuid::Uuid::new_v4().simple());
        run_admin(&admin, &format!("CREATE DATABASE \"{name}\""));
        settings.database.name = name;
        TestDatabase { settings, admin }
    }

    pub fn name(&self) -> &str {
        &self.settings.database.name
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name());
        let admin = self.admin.clone();
        // A blocking connection may not run on a tokio worker: use a plain thread.
        let _ = std::thread::spawn(move || run_admin(&admin, &sql)).join();
    }
}

fn run_admin(admin: &Database, sql: &str) {
    let admin = admin.clone();
    let sql = sql.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let _guard = rt.enter();
        let url = admin.url_for("postgres");
        let mut conn = <SyncPg as Connection>::establish(&url).unwrap_or_else(|e| {
            panic!(
                "test database admin connection to {}: {e}",
                admin.display_target()
            )
        });
        diesel::sql_query(&sql)
            .execute(&mut conn)
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
    .join()
    .expect("admin thread");
}
