//! Test harness: a fresh database per test and the real console server on 127.0.0.1:0,
//! with a client that keeps its cookies and reads the CSRF token from the pages.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::RunQueryDsl;
use warden_console::AppState;
use warden_console::render::encode;
use warden_core::Core;
use warden_core::operators::{self, Role};
use warden_service::Dependencies;
use warden_store::PgPool;
use warden_store::testing::TestDatabase;

/// A password long enough for `operators create`.
pub const PASSWORD: &str = "correct horse battery staple";

/// One running console over its own database.
pub struct Console {
    pub url: String,
    pub pg: PgPool,
    pub core: Core,
    handle: ServerHandle,
    /// Dropped last: the database goes away after the server.
    _db: TestDatabase,
}

impl Drop for Console {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        tokio::spawn(async move { handle.stop(false).await });
    }
}

impl Console {
    pub async fn start() -> Console {
        Self::start_with(|_| {}).await
    }

    pub async fn start_with(adjust: impl FnOnce(&mut warden_settings::Settings)) -> Console {
        Self::start_full(adjust, false).await
    }

    /// With a private JetStream delivery stream and Redis: what an operator's reply is
    /// published to (a dispatcher delivers it).
    pub async fn start_streaming() -> Console {
        Self::start_full(
            |s| s.delivery_stream = format!("TC_{}", uuid::Uuid::new_v4().simple()).to_uppercase(),
            true,
        )
        .await
    }

    async fn start_full(
        adjust: impl FnOnce(&mut warden_settings::Settings),
        streaming: bool,
    ) -> Console {
        warden_service::install_crypto_provider();
        let db = tokio::task::spawn_blocking(TestDatabase::create)
            .await
            .unwrap();
        let mut settings = db.settings.clone();
        warden_test_support::platform::use_test_account(&mut settings);
        settings.policies_path = warden_test_support::policies_path();
        settings.policies_path_set = true;
        adjust(&mut settings);
        let (policies, seeds) =
            warden_service::policies::load(&settings.policies_path).expect("tests' policies");
        warden_store::prepare(&settings.database, seeds)
            .await
            .expect("migrate");
        let pg = warden_store::connect(&settings.database, 6, Duration::from_secs(5))
            .await
            .expect("pool");
        let (redis, stream) = if streaming {
            let redis =
                warden_service::redis_pool::connect(&settings.redis, Duration::from_secs(2))
                    .await
                    .expect("redis (scripts/services.sh starts it)");
            let stream = warden_stream::DeliveryStream::connect(&settings)
                .await
                .expect("NATS with JetStream (scripts/services.sh starts it)");
            (Some(redis), Some(stream))
        } else {
            (None, None)
        };
        let deps = Dependencies {
            settings: Arc::new(settings),
            pg: pg.clone(),
            redis,
            stream,
            policies: Arc::new(policies),
        };
        let core = Core::new(deps, warden_console::ACTOR);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = warden_console::server(listener, AppState::new(core.clone())).unwrap();
        let handle = server.handle();
        tokio::spawn(server);
        Console {
            url,
            pg,
            core,
            handle,
            _db: db,
        }
    }

    /// An operator with [`PASSWORD`].
    pub async fn operator(&self, name: &str, role: Role) {
        operators::create(&self.pg, name, role, Some(PASSWORD.into()), "test")
            .await
            .expect("create operator");
    }

    /// A client logged in as `name` (created with `role` first).
    pub async fn logged_in(&self, name: &str, role: Role) -> Browser {
        self.operator(name, role).await;
        let mut b = self.browser();
        let res = b.login(name, PASSWORD).await;
        assert_eq!(res.status().as_u16(), 303, "login of {name}");
        b
    }

    pub fn browser(&self) -> Browser {
        Browser {
            base: self.url.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Vec::new(),
        }
    }

    pub async fn count(&self, sql: &str) -> i64 {
        #[derive(QueryableByName)]
        struct N {
            #[diesel(sql_type = BigInt)]
            n: i64,
        }
        let mut conn = self.pg.get().await.unwrap();
        diesel::sql_query(sql)
            .get_result::<N>(&mut conn)
            .await
            .unwrap()
            .n
    }

    pub async fn exec(&self, sql: &str) {
        let mut conn = self.pg.get().await.unwrap();
        diesel::sql_query(sql).execute(&mut conn).await.unwrap();
    }
}

/// A client that keeps cookies like a browser (no redirects followed: tests look at them).
pub struct Browser {
    base: String,
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
}

/// The value of `name="csrf_token" value="..."` in a page.
pub fn csrf_of(html: &str) -> String {
    let at = html
        .find("name=\"csrf_token\" value=\"")
        .expect("a form with a csrf_token");
    let rest = &html[at + "name=\"csrf_token\" value=\"".len()..];
    rest[..rest.find('"').unwrap()].to_string()
}

impl Browser {
    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep(&mut self, res: &reqwest::Response) {
        for v in res.headers().get_all("set-cookie") {
            let v = v.to_str().unwrap();
            let pair = v.split(';').next().unwrap();
            let (k, val) = pair.split_once('=').unwrap();
            self.cookies.retain(|(n, _)| n != k);
            let expired = v.contains("Max-Age=0");
            if !expired {
                self.cookies.push((k.to_string(), val.to_string()));
            }
        }
    }

    pub async fn get(&mut self, path: &str) -> reqwest::Response {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep(&res);
        res
    }

    /// GET `path`, insisting on 200, and its HTML.
    pub async fn page(&mut self, path: &str) -> String {
        let res = self.get(path).await;
        assert_eq!(res.status().as_u16(), 200, "GET {path}");
        res.text().await.unwrap()
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        let res = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(
                form.iter()
                    .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
                    .collect::<Vec<_>>()
                    .join("&"),
            )
            .send()
            .await
            .unwrap();
        self.keep(&res);
        res
    }

    /// POST `form` to `path` with the CSRF token of the page at `from`.
    pub async fn act(
        &mut self,
        from: &str,
        path: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let token = csrf_of(&self.page(from).await);
        let mut fields = vec![("csrf_token", token.as_str())];
        fields.extend_from_slice(form);
        self.post(path, &fields).await
    }

    pub async fn login(&mut self, name: &str, password: &str) -> reqwest::Response {
        let token = csrf_of(&self.page("/login").await);
        self.post(
            "/login",
            &[
                ("name", name),
                ("password", password),
                ("csrf_token", &token),
            ],
        )
        .await
    }

    pub fn cookie(&self, name: &str) -> String {
        self.cookies
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no cookie {name}"))
    }

    pub fn set_cookie(&mut self, name: &str, value: &str) {
        self.cookies.retain(|(k, _)| k != name);
        self.cookies.push((name.to_string(), value.to_string()));
    }

    pub fn has_cookie(&self, name: &str) -> bool {
        self.cookies.iter().any(|(k, _)| k == name)
    }
}
