//! Page timings of the operator console over a large deployment: 100,000 customers and
//! 1,000,000 messages (seeded set-based, [`seed`]), the console's real server in process on
//! 127.0.0.1:0, an operator created through the core and logged in through the login form,
//! then every page requested in turn over HTTP (overview, inbox, one conversation, customer
//! search by phone / BSUID / name, one customer with a consent timeline, campaigns, one
//! campaign, templates, agents, policies, audit with filters, the live endpoints). The
//! pages are interleaved so each sees the same conditions. Goal: p99 <= 200 ms per page.
//!
//! `cargo run --release -p warden-bench --bin console-bench -- [--customers N]
//! [--messages N] [--requests N]`; prints progress on stderr and one JSON line on stdout.
//! CONSOLE_BENCH_KEEP=1 keeps the database (its name is printed) for EXPLAIN ANALYZE.

mod seed;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use diesel::sql_types::Text;
use diesel::{QueryableByName, sql_query};
use diesel_async::RunQueryDsl;
use warden_console::render::encode;
use warden_core::Core;
use warden_core::operators::{self, Role};
use warden_service::Dependencies;
use warden_store::testing::TestDatabase;

const PASSWORD: &str = "console bench passphrase";
/// Untimed rounds first: connections, prepared statements, Postgres's cache.
const WARMUP: usize = 5;

#[derive(Parser)]
struct Args {
    #[arg(long, default_value_t = 100_000)]
    customers: i64,
    #[arg(long, default_value_t = 1_000_000)]
    messages: i64,
    /// Refusals and other audit rows (consent changes come on top, from the customers).
    #[arg(long, default_value_t = 200_000)]
    audit: i64,
    /// Timed requests of each page.
    #[arg(long, default_value_t = 100)]
    requests: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _ = warden_telemetry::init_with_default_filter("console-bench", None, "warn");
    // The database guard drops (and removes the database) outside the runtime.
    let db = TestDatabase::create();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let result = rt.block_on(bench(&args, &db));
    drop(rt);
    if std::env::var("CONSOLE_BENCH_KEEP").is_ok_and(|v| v == "1") {
        eprintln!("kept database {}", db.name());
        std::mem::forget(db);
    }
    result
}

#[derive(QueryableByName)]
struct One {
    #[diesel(sql_type = Text)]
    v: String,
}

async fn bench(args: &Args, db: &TestDatabase) -> anyhow::Result<()> {
    warden_service::install_crypto_provider();
    let mut settings = db.settings.clone();
    if let Ok(p) = std::env::var("POLICIES_PATH") {
        settings.policies_path = p.into();
    } else {
        settings.policies_path = "policies/default.yaml".into();
    }
    settings.policies_path_set = true;
    let (policies, seeds) = warden_service::policies::load(&settings.policies_path)
        .map_err(|e| anyhow::anyhow!("policies: {e}"))?;
    warden_store::prepare(&settings.database, seeds).await?;
    // The console's own pool size (docs/console.md).
    let pg = warden_store::connect(&settings.database, 6, Duration::from_secs(5)).await?;

    let t = Instant::now();
    {
        let mut c = pg.get().await?;
        seed::seed(&mut c, args.customers, args.messages, args.audit).await?;
    }
    let seed_s = t.elapsed().as_secs_f64();

    let deps = Dependencies {
        settings: Arc::new(settings),
        pg: pg.clone(),
        redis: None,
        stream: None,
        policies: Arc::new(policies),
    };
    let core = Core::new(deps, warden_console::ACTOR);
    operators::create(
        &pg,
        "bench",
        Role::Operator,
        Some(PASSWORD.into()),
        "console-bench",
    )
    .await
    .map_err(|e| anyhow::anyhow!("operator: {e}"))?;
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = warden_console::server(listener, warden_console::AppState::new(core))?;
    let handle = server.handle();
    tokio::spawn(server);

    let mut client = Client::new(&base);
    client.login("bench", PASSWORD).await?;

    // One customer of each kind the pages show.
    let wrote = seed::phone(5); // wrote (a conversation), customer 5
    let opted_out = seed::phone(10); // opted out: a consent timeline
    let bsuid = {
        let mut c = pg.get().await?;
        sql_query("SELECT bsuid AS v FROM customers WHERE phone = $1")
            .bind::<Text, _>(seed::phone(4))
            .get_result::<One>(&mut c)
            .await?
            .v
    };
    let campaign = {
        let mut c = pg.get().await?;
        sql_query("SELECT md5('campaign0')::uuid::text AS v")
            .get_result::<One>(&mut c)
            .await?
            .v
    };
    let pages: Vec<(&str, String)> = vec![
        ("overview", "/".into()),
        ("conversations inbox", "/conversations".into()),
        ("one conversation", format!("/conversations/{wrote}")),
        (
            "customer search by phone",
            "/customers?q=%2B62%20811%200000%201".into(),
        ),
        ("customer search by BSUID", format!("/customers?q={bsuid}")),
        (
            "customer search by name",
            "/customers?q=putri%20hidayat".into(),
        ),
        (
            "customer with consent timeline",
            format!("/customers/{opted_out}"),
        ),
        ("campaigns", "/campaigns".into()),
        ("one campaign", format!("/campaigns/{campaign}")),
        ("templates", "/templates".into()),
        ("agents", "/agents".into()),
        ("policies", "/policies".into()),
        ("audit", "/audit".into()),
        (
            "audit by actor and action",
            "/audit?actor=bot-3&action=send_refused".into(),
        ),
        (
            "audit by customer",
            format!("/audit?customer=%2B{opted_out}"),
        ),
        ("live overview (JSON)", "/live/overview".into()),
        ("live inbox (fragment)", "/live/inbox".into()),
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(args.requests); pages.len()];
    let t = Instant::now();
    for round in 0..WARMUP + args.requests {
        for (i, (name, path)) in pages.iter().enumerate() {
            let started = Instant::now();
            let (status, len) = client.get(path).await?;
            let micros = started.elapsed().as_secs_f64() * 1e6;
            if status != 200 || len == 0 {
                anyhow::bail!("{name}: GET {path} answered {status} ({len} bytes)");
            }
            if round >= WARMUP {
                samples[i].push(micros);
            }
        }
    }
    let timed_s = t.elapsed().as_secs_f64();
    handle.stop(true).await;
    let results: Vec<_> = pages
        .iter()
        .zip(samples)
        .map(|((name, path), s)| {
            let mut r = warden_bench::summarise(name, s);
            r["path"] = serde_json::json!(path);
            r
        })
        .collect();
    let report = serde_json::json!({
        "customers": args.customers,
        "messages": args.messages,
        "requests_per_page": args.requests,
        "seed_seconds": seed_s,
        "timed_seconds": timed_s,
        "peak_rss_mib": warden_bench::own_peak_rss_mib(),
        "results": results,
    });
    println!("{report}");
    Ok(())
}

/// A logged-in browser without redirects: cookies kept by hand, as the console sets them.
struct Client {
    base: String,
    http: reqwest::Client,
    cookies: Vec<(String, String)>,
}

impl Client {
    fn new(base: &str) -> Client {
        Client {
            base: base.to_string(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("http client"),
            cookies: Vec::new(),
        }
    }

    fn keep(&mut self, res: &reqwest::Response) {
        for v in res.headers().get_all("set-cookie") {
            let Some((k, val)) = v
                .to_str()
                .ok()
                .and_then(|v| v.split(';').next())
                .and_then(|p| p.split_once('='))
            else {
                continue;
            };
            self.cookies.retain(|(n, _)| n != k);
            self.cookies.push((k.to_string(), val.to_string()));
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// GET `path`: the status and the body's length (the whole body is read).
    async fn get(&mut self, path: &str) -> anyhow::Result<(u16, usize)> {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .send()
            .await?;
        let status = res.status().as_u16();
        Ok((status, res.bytes().await?.len()))
    }

    async fn login(&mut self, name: &str, password: &str) -> anyhow::Result<()> {
        let res = self.http.get(format!("{}/login", self.base)).send().await?;
        self.keep(&res);
        let html = res.text().await?;
        let marker = "name=\"csrf_token\" value=\"";
        let at = html
            .find(marker)
            .ok_or_else(|| anyhow::anyhow!("no csrf_token in the login form"))?;
        let rest = &html[at + marker.len()..];
        let token = &rest[..rest.find('"').unwrap_or(0)];
        let res = self
            .http
            .post(format!("{}/login", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(
                [
                    ("name", name),
                    ("password", password),
                    ("csrf_token", token),
                ]
                .iter()
                .map(|(k, v)| format!("{k}={}", encode(v)))
                .collect::<Vec<_>>()
                .join("&"),
            )
            .send()
            .await?;
        self.keep(&res);
        if res.status().as_u16() != 303 || !self.cookies.iter().any(|(k, _)| k == "warden_session")
        {
            anyhow::bail!("login answered {}", res.status());
        }
        Ok(())
    }
}
