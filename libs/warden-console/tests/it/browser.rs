//! The console in a real browser: headless Chromium (Debian `chromium`) driven through
//! `chromedriver --port=0` with fantoccini. Login, the overview's numbers against the
//! database and their live refresh, the charts, take over + reply (delivered to platform-sim by a dispatcher) + release, approve a pending campaign and watch it start,
//! pause it, a consent timeline after a STOP webhook, the policy tester, a POST without its
//! token refused, a viewer refused. A screenshot of every page goes to
//! `target/console-shots/`. Needs `scripts/browser-deps.sh` (run by `make test`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use chrono::Utc;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use warden_core::operators::Role;
use warden_core::{SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;
use warden_test_support::platform::{ACCESS_TOKEN, APP_SECRET, PHONE_NUMBER_ID, WABA_ID};

use crate::common::*;

const A: &str = "6281234500001";
const B: &str = "6281234500002";

/// chromedriver on a free port, and a headless Chromium session on it.
struct Driver {
    client: Client,
    _chromedriver: Child,
}

impl Driver {
    async fn start() -> Driver {
        let missing =
            "chromedriver or chromium is missing: run scripts/browser-deps.sh (make test runs it)";
        let mut child = Command::new("chromedriver")
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect(missing);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("started successfully on port ").nth(1) {
                    return rest.trim_end_matches('.').trim().parse::<u16>().unwrap();
                }
            }
            panic!("chromedriver exited without saying its port");
        })
        .await
        .expect("chromedriver did not start within 20 s");
        // Keep reading its output so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let binary = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect(missing);
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         "--window-size=1280,1000", "--lang=en-US"],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session through chromedriver");
        Driver {
            client,
            _chromedriver: child,
        }
    }
}

fn shots_dir() -> PathBuf {
    let dir = warden_test_support::workspace_root().join("target/console-shots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots_dir().join(format!("{name}.png")), png).unwrap();
}

async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap()
}

async fn path_of(c: &Client) -> String {
    c.current_url().await.unwrap().path().to_string()
}

/// Click `css` (a link or a form's button) and wait for the next page to have loaded.
async fn click(c: &Client, css: &str) {
    c.execute("window.__before_click = true;", vec![])
        .await
        .unwrap();
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap();
    loaded(c, css).await;
}

/// Wait until the page marked before an action is replaced and the new one has loaded.
async fn loaded(c: &Client, what: &str) {
    let check = "return window.__before_click === undefined && document.readyState === 'complete';";
    for _ in 0..200 {
        if let Ok(v) = c.execute(check, vec![]).await
            && v == json!(true)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no new page after {what} within 10 s");
}

async fn fill(c: &Client, css: &str, value: &str) {
    let e = c
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"));
    e.clear().await.unwrap();
    e.send_keys(value).await.unwrap();
}

async fn login(c: &Client, base: &str, name: &str) {
    c.goto(&format!("{base}/")).await.unwrap();
    assert_eq!(
        path_of(c).await,
        "/login",
        "a page without a session goes to /login"
    );
    fill(c, "#name", name).await;
    fill(c, "#password", PASSWORD).await;
    click(c, "button[type=submit]").await;
    assert_eq!(path_of(c).await, "/", "logged in as {name}");
}

/// A signed webhook POST of one inbound text, as the platform sends it.
async fn customer_writes(webhook: &str, from: &str, body: &str) {
    let payload = json!({"object": "whatsapp_business_account",
        "entry": [{"id": WABA_ID, "time": Utc::now().timestamp(), "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550100000", "phone_number_id": PHONE_NUMBER_ID},
            "contacts": [{"profile": {"name": "Test Customer"}, "wa_id": from}],
            "messages": [{"from": from, "id": format!("wamid.{}", uuid::Uuid::new_v4().simple()),
                          "timestamp": Utc::now().timestamp().to_string(), "type": "text",
                          "text": {"body": body}}]}}]}]})
    .to_string();
    let res = reqwest::Client::new()
        .post(format!("{webhook}/webhook"))
        .header("content-type", "application/json")
        .header(
            warden_platform::signature::HEADER,
            warden_platform::signature::sign(APP_SECRET.as_bytes(), payload.as_bytes()),
        )
        .body(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(
        res.status().as_u16(),
        200,
        "webhook took {body:?} from {from}"
    );
}

fn text_to(who: &str, body: &str) -> SendRequest {
    SendRequest::from_tool(
        who.parse().unwrap(),
        "whatsapp",
        SendKind::Text {
            body: body.to_string(),
        },
        MessageType::Service,
        "bot",
    )
}

/// platform-sim for the test account, sending its status webhooks to `webhook`.
fn start_sim(webhook: &str) -> (String, std::sync::Arc<warden_sim::Sim>) {
    let sim = warden_sim::start(
        warden_sim::SimConfig {
            http_host: "127.0.0.1".into(),
            http_port: 0,
            webhook_url: Some(format!("{webhook}/webhook")),
            access_token: ACCESS_TOKEN.into(),
            app_secret: APP_SECRET.into(),
            phone_number_id: PHONE_NUMBER_ID.into(),
            waba_id: WABA_ID.into(),
            workers: 2,
            ..warden_sim::SimConfig::default()
        },
        TcpListener::bind("127.0.0.1:0").unwrap(),
    )
    .expect("platform-sim starts");
    let url = sim.base_url();
    let state = sim.state();
    tokio::spawn(sim.wait());
    (url, state)
}

/// A dispatcher on the console's stream, calling platform-sim at `api_url`.
async fn start_dispatcher(
    c: &Console,
    api_url: &str,
) -> (
    warden_dispatcher::Dispatcher,
    tokio::sync::oneshot::Sender<()>,
) {
    let mut settings = (*c.core.dependencies().settings).clone();
    settings.platform.api_url = api_url.to_string();
    let settings = std::sync::Arc::new(settings);
    let deps = warden_service::Dependencies {
        settings: settings.clone(),
        ..c.core.dependencies().clone()
    };
    let mut config = warden_dispatcher::DispatcherConfig::defaults(&settings);
    config.bucket_channel = Some(format!("t-{}", uuid::Uuid::new_v4().simple()));
    config.dispatch.pair_interval = Duration::ZERO;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let dispatcher = warden_dispatcher::start(deps, config, async move {
        let _ = stopped.await;
    })
    .await
    .expect("dispatcher starts");
    (dispatcher, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_in_a_real_browser() {
    let c = Console::start_streaming().await;
    // The platform's door, on the same database: customers write through it.
    let webhook = {
        let core = warden_core::Core::new(c.core.dependencies().clone(), "webhook");
        let state = warden_webhook::AppState::new(core).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(warden_webhook::server(listener, state).unwrap());
        url
    };
    let (sim_url, sim) = start_sim(&webhook);
    customer_writes(&webhook, A, "hi, is my order on its way?").await;
    customer_writes(&webhook, B, "hello").await;
    let bot = c.core.as_actor("bot");
    bot.send(text_to(A, "Let me check.")).await.unwrap();
    c.operator("ana", Role::Operator).await;
    c.operator("vic", Role::Viewer).await;
    let d = Driver::start().await;
    let b = &d.client;
    let base = c.url.clone();

    // Login, through the form.
    b.goto(&format!("{base}/login")).await.unwrap();
    shot(b, "login").await;
    login(b, &base, "ana").await;
    shot(b, "overview").await;
    let day = "created_at >= now() - interval '24 hours' AND direction = 'outbound'";
    for (stage, sql) in [
        (
            "recorded",
            format!("SELECT count(*) AS n FROM messages WHERE {day}"),
        ),
        (
            "waiting",
            format!(
                "SELECT count(*) AS n FROM messages WHERE {day} AND status IN ('scheduled','queued','sending')"
            ),
        ),
    ] {
        let shown: i64 = text(b, &format!("td[data-stage=\"{stage}\"]"))
            .await
            .parse()
            .unwrap();
        assert_eq!(shown, c.count(&sql).await, "overview {stage}");
    }
    let inbound: i64 = text(b, "#inbound").await.parse().unwrap();
    assert_eq!(
        inbound,
        c.count("SELECT count(*) AS n FROM messages WHERE direction = 'inbound' AND created_at >= now() - interval '24 hours'").await
    );

    // Live: a message arrives while the overview is open; the counter follows within
    // seconds, without a reload (the page's script polls /live/overview).
    c.exec("INSERT INTO customers (phone, country) VALUES ('6281234500003', 'ID')")
        .await;
    c.exec(
        "INSERT INTO messages (id, customer_phone, direction, message_type, category, status)
         VALUES (gen_random_uuid(), '6281234500003', 'inbound', 'text', 'service', 'received')",
    )
    .await;
    warden_test_support::wait::until(
        Duration::from_secs(20),
        "the overview's inbound counter refreshes by itself",
        || async { text(b, "#inbound").await.parse::<i64>().ok() == Some(inbound + 1) },
    )
    .await;
    assert!(
        text(b, "#live-note")
            .await
            .contains("refresh every 5 seconds")
    );
    // The charts: inline SVG images with their names.
    for id in ["hours-chart", "funnel-chart"] {
        let svg = b.find(Locator::Css(&format!("svg#{id}"))).await.unwrap();
        assert_eq!(svg.attr("role").await.unwrap().as_deref(), Some("img"));
    }

    // Delivery starts now (the numbers above held still while they were compared).
    let (_dispatcher, _stop_dispatcher) = start_dispatcher(&c, &sim_url).await;

    // Take over, reply, release.
    b.goto(&format!("{base}/conversations")).await.unwrap();
    shot(b, "conversations").await;
    b.goto(&format!("{base}/conversations/{A}")).await.unwrap();
    assert!(text(b, "#holder").await.contains("agents"));
    click(b, "#take").await;
    assert!(text(b, "#holder").await.contains("human"), "taken over");
    fill(b, "#text", "Hi, this is Ana: it leaves today.").await;
    click(b, "#send-reply").await;
    assert!(text(b, ".flash").await.contains("Reply queued"));
    let history = text(b, "#history").await;
    assert!(history.contains("operator ana"), "{history}");
    // The page's script shows today's times relative, in the browser's zone.
    assert!(
        history.contains("just now") || history.contains("min ago"),
        "{history}"
    );
    assert!(!history.contains(" UTC"), "{history}");
    shot(b, "conversation").await;
    // The reply goes the way every send goes: the dispatcher delivers it to the platform.
    let delivered = format!(
        "SELECT count(*) AS n FROM messages WHERE customer_phone = '{A}' AND direction = 'outbound' AND content::text LIKE '%it leaves today%' AND wamid IS NOT NULL AND status IN ('sent', 'delivered', 'read')"
    );
    warden_test_support::wait::until(
        Duration::from_secs(30),
        "the operator's reply reaches platform-sim",
        || async { c.count(&delivered).await == 1 },
    )
    .await;
    assert!(sim.stats().by_recipient.get(A).copied().unwrap_or(0) >= 1);
    match bot.send(text_to(A, "Anything else?")).await {
        Err(SendError::Refused(d)) => assert_eq!(d.reason_code.as_str(), "CONVERSATION_HELD"),
        other => panic!("the agent's reply while held: {other:?}"),
    }
    click(b, "#release").await;
    assert!(text(b, "#holder").await.contains("agents"), "released");

    // A POST without its token: the form's hidden field removed in the page, then sent.
    b.execute(
        "window.__before_click = true; document.querySelectorAll('input[name=csrf_token]').forEach(e => e.remove()); document.getElementById('text').value = 'forged'; document.getElementById('send-reply').closest('form').submit();",
        vec![],
    )
    .await
    .unwrap();
    assert!(
        b.source()
            .await
            .unwrap()
            .contains("security token does not match")
    );
    assert_eq!(
        c.count("SELECT count(*) AS n FROM messages WHERE content::text LIKE '%forged%'")
            .await,
        0
    );

    // A pending campaign: approve, the scheduler starts it, pause.
    c.exec(
        "INSERT INTO templates (id, name, locale, category, status, body_text)
         VALUES (gen_random_uuid(), 'warden_promo', 'en', 'marketing', 'APPROVED', 'Sale: {{1}}')",
    )
    .await;
    let created = warden_core::campaigns::create::schedule_campaign_gated(
        &c.pg,
        warden_core::campaigns::create::NewCampaign {
            name: "weekend sale".into(),
            campaign_type: warden_core::campaigns::create::CampaignType::Marketing,
            template_name: "warden_promo".into(),
            locale: "en".into(),
            variables: vec!["20%".into()],
            named_variables: vec![],
            components: vec![],
            audience_filter: json!({"customer_ids": [A]}),
            deliver_at: Utc::now(),
        },
        Default::default(),
        "bot",
        None,
        warden_core::campaigns::create::Approval::Required,
    )
    .await
    .unwrap();
    b.goto(&format!("{base}/campaigns")).await.unwrap();
    assert!(text(b, "#campaigns").await.contains("pending_approval"));
    shot(b, "campaigns").await;
    b.goto(&format!("{base}/campaigns/{}", created.id))
        .await
        .unwrap();
    shot(b, "campaign-pending").await;
    click(b, "#approve").await;
    assert_eq!(text(b, "#status").await, "scheduled");
    let started = warden_core::campaigns::fanout::start_due(&c.pg, "scheduler")
        .await
        .unwrap();
    assert_eq!(started, vec![created.id]);
    b.refresh().await.unwrap();
    assert_eq!(text(b, "#status").await, "running");
    click(b, "#pause").await;
    assert_eq!(text(b, "#status").await, "paused");
    shot(b, "campaign").await;

    // STOP through the webhook, then the consent timeline.
    customer_writes(&webhook, B, "STOP").await;
    b.goto(&format!("{base}/customers?q={B}")).await.unwrap();
    shot(b, "customers").await;
    click(b, &format!("a[href=\"/customers/{B}\"]")).await;
    let timeline = text(b, "#consent").await;
    assert!(timeline.contains("opted out"), "{timeline}");
    assert!(text(b, "#marketing").await.contains("opted out"));
    shot(b, "customer").await;

    // The policy tester: nothing is sent.
    let before = c.count("SELECT count(*) AS n FROM messages").await;
    b.goto(&format!("{base}/policies")).await.unwrap();
    fill(b, "#customer", B).await;
    b.find(Locator::Css("#message_type option[value=marketing]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    click(b, "#tester button[type=submit]").await;
    let decision = text(b, "#decision").await;
    assert!(
        decision.contains("Refused") && decision.contains("USER_OPTED_OUT"),
        "{decision}"
    );
    shot(b, "policies").await;
    assert_eq!(c.count("SELECT count(*) AS n FROM messages").await, before);

    for page in ["templates", "agents", "audit"] {
        b.goto(&format!("{base}/{page}")).await.unwrap();
        assert!(!text(b, "h1").await.is_empty());
        shot(b, page).await;
    }

    // A viewer sees no forms, and a POST it makes anyway is refused.
    click(b, "header form button").await;
    assert_eq!(path_of(b).await, "/login");
    login(b, &base, "vic").await;
    b.goto(&format!("{base}/conversations/{A}")).await.unwrap();
    assert!(
        b.find(Locator::Css("#take")).await.is_err(),
        "no take-over form for viewers"
    );
    b.execute(
        "window.__before_click = true; const f = document.createElement('form'); f.method = 'post'; f.action = location.pathname + '/take';
         const t = document.createElement('input'); t.name = 'csrf_token'; t.value = document.querySelector('input[name=csrf_token]').value;
         f.appendChild(t); document.body.appendChild(f); f.submit();",
        vec![],
    )
    .await
    .unwrap();
    assert!(
        b.source()
            .await
            .unwrap()
            .contains("Viewers can read every page")
    );
    shot(b, "viewer-refused").await;
    assert_eq!(
        c.core.holder(&A.parse().unwrap(), None).await.unwrap().kind,
        "agents"
    );
    d.client.clone().close().await.unwrap();
}
