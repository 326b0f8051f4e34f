//! Live updates and charts: `/live/overview` answers the database's numbers and follows
//! them as they change, `/live/inbox` is the inbox table alone, both are refused without a
//! session; the overview draws its charts as accessible inline SVG with a table of the same
//! numbers.

use chrono::Utc;
use serde_json::Value;
use warden_core::operators::Role;
use warden_core::{SendError, SendKind, SendRequest};
use warden_rules::kinds::MessageType;

use crate::common::*;

const A: &str = "6281234567810";
const B: &str = "6281234567811";

const DAY: &str = "created_at >= now() - interval '24 hours'";

async fn customer(c: &Console, phone: &str) {
    c.exec(&format!(
        "INSERT INTO customers (phone, country) VALUES ('{phone}', 'ID') ON CONFLICT DO NOTHING"
    ))
    .await;
}

/// A message of `phone` `age` ago, as the send path or the webhook would leave it.
async fn message(c: &Console, phone: &str, direction: &str, status: &str, age: &str) {
    c.exec(&format!(
        "INSERT INTO messages (id, customer_phone, direction, message_type, category, status, created_at)
         VALUES (gen_random_uuid(), '{phone}', '{direction}', 'text', 'service', '{status}', now() - interval '{age}')"
    ))
    .await;
}

/// A customer waiting in the inbox: a conversation whose latest message is theirs.
async fn waiting(c: &Console, phone: &str, text: &str) {
    customer(c, phone).await;
    c.exec(&format!(
        "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at)
         VALUES ('{phone}', 'whatsapp', now(), now() + interval '24 hours')"
    ))
    .await;
    c.exec(&format!(
        "INSERT INTO messages (id, customer_phone, direction, message_type, category, status, content)
         VALUES (gen_random_uuid(), '{phone}', 'inbound', 'text', 'service', 'received',
                 jsonb_build_object('type', 'text', 'text', jsonb_build_object('body', '{text}')))"
    ))
    .await;
}

/// What the database says the overview's JSON should say.
async fn expected(c: &Console) -> Value {
    let out = format!("{DAY} AND direction = 'outbound'");
    let n = |cond: String| async move {
        c.count(&format!("SELECT count(*) AS n FROM messages WHERE {cond}"))
            .await
    };
    serde_json::json!({
        "recorded": n(out.clone()).await,
        "waiting": n(format!("{out} AND status IN ('scheduled','queued','sending')")).await,
        "sent": n(format!("{out} AND status IN ('sent','delivered','read')")).await,
        "delivered": n(format!("{out} AND status IN ('delivered','read')")).await,
        "read": n(format!("{out} AND status = 'read'")).await,
        "failed": n(format!("{out} AND status = 'failed'")).await,
        "inbound": n(format!("{DAY} AND direction = 'inbound'")).await,
        "refusals": c.count("SELECT count(*) AS n FROM audit_logs WHERE occurred_at >= now() - interval '24 hours' AND action IN ('send_refused', 'message_refused_at_dispatch')").await,
    })
}

async fn live(b: &mut Browser) -> Value {
    let res = b.get("/live/overview").await;
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["cache-control"], "no-store");
    res.json().await.unwrap()
}

fn compare(shown: &Value, want: &Value) {
    for stage in ["recorded", "waiting", "sent", "delivered", "read", "failed"] {
        assert_eq!(shown["funnel"][stage], want[stage], "funnel {stage}");
    }
    assert_eq!(shown["inbound"], want["inbound"], "inbound");
    assert_eq!(shown["refusals"], want["refusals"], "refusals");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_counters_are_the_databases_and_follow_it() {
    let c = Console::start().await;
    customer(&c, A).await;
    for (status, age) in [
        ("delivered", "1 hour"),
        ("read", "2 hours"),
        ("failed", "3 hours"),
        ("queued", "5 minutes"),
        ("sent", "3 days"),
    ] {
        message(&c, A, "outbound", status, age).await;
    }
    message(&c, A, "inbound", "received", "10 minutes").await;
    // A refusal through the send path: B never wrote, free-form text needs a template.
    let bot = c.core.as_actor("bot");
    let refused = bot
        .send(SendRequest::from_tool(
            B.parse().unwrap(),
            "whatsapp",
            SendKind::Text {
                body: "hello?".into(),
            },
            MessageType::Service,
            "bot",
        ))
        .await;
    assert!(matches!(refused, Err(SendError::Refused(_))), "{refused:?}");

    let mut b = c.logged_in("vic", Role::Viewer).await;
    let first = live(&mut b).await;
    let want = expected(&c).await;
    compare(&first, &want);
    assert_eq!(
        first["funnel"]["recorded"], 4,
        "the one 3 days old is not counted"
    );
    assert_eq!(first["refusals"], 1);
    assert_eq!(first["share"]["delivered"], 50, "2 of 4 delivered or read");

    // Nothing reloaded: the next poll answers what changed since.
    message(&c, A, "outbound", "read", "1 minute").await;
    message(&c, A, "inbound", "received", "1 minute").await;
    let second = live(&mut b).await;
    compare(&second, &expected(&c).await);
    assert_eq!(second["funnel"]["recorded"], 5);
    assert_eq!(second["funnel"]["read"], 2);
    assert_eq!(second["inbound"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_inbox_is_the_inbox_table_alone() {
    let c = Console::start().await;
    waiting(&c, A, "where is my parcel?").await;
    let mut b = c.logged_in("ana", Role::Operator).await;
    let page = b.page("/conversations").await;
    assert!(page.contains("id=\"inbox-live\"") && page.contains("/live/inbox"));
    let res = b.get("/live/inbox").await;
    assert_eq!(res.status().as_u16(), 200);
    let fragment = res.text().await.unwrap();
    assert!(!fragment.contains("<html"), "a fragment, not a page");
    assert!(
        fragment.contains(A) && fragment.contains("where is my parcel?"),
        "{fragment}"
    );
    assert!(fragment.contains("1 customer whose latest message is unanswered"));
    // A second customer writes: the next poll lists both.
    waiting(&c, B, "hello?").await;
    let fragment = b.page("/live/inbox").await;
    assert!(fragment.contains(A) && fragment.contains(B), "{fragment}");
    assert!(fragment.contains("2 customers whose latest message"));
    // Pages past the end are empty, not errors.
    let empty = b.page("/live/inbox?offset=50").await;
    assert!(!empty.contains(A), "{empty}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_endpoints_are_refused_without_a_session() {
    let c = Console::start().await;
    waiting(&c, A, "private words").await;
    let mut anonymous = c.browser();
    for path in ["/live/overview", "/live/inbox"] {
        let res = anonymous.get(path).await;
        assert_eq!(res.status().as_u16(), 401, "{path} without a cookie");
        let body = res.text().await.unwrap();
        assert!(
            !body.contains("private words") && !body.contains(A),
            "{body}"
        );
    }
    // A made-up session, and one that ended.
    let mut forged = c.browser();
    forged.set_cookie("warden_session", "0123456789abcdef");
    assert_eq!(forged.get("/live/overview").await.status().as_u16(), 401);
    let mut b = c.logged_in("ana", Role::Operator).await;
    assert_eq!(b.get("/live/inbox").await.status().as_u16(), 200);
    let ended = b.cookie("warden_session");
    let token = csrf_of(&b.page("/").await);
    let res = b.post("/logout", &[("csrf_token", token.as_str())]).await;
    assert_eq!(res.status().as_u16(), 303);
    let mut after = c.browser();
    after.set_cookie("warden_session", &ended);
    assert_eq!(after.get("/live/inbox").await.status().as_u16(), 401);
    // They only read: no write answers on them.
    let mut b = c.logged_in("bo", Role::Operator).await;
    let status = b.post("/live/overview", &[]).await.status().as_u16();
    assert!(status == 404 || status == 405, "{status}");
}

/// The `<td class="num">` numbers of each row of the table `id`.
fn table_numbers(html: &str, id: &str) -> Vec<Vec<i64>> {
    let start = html
        .find(&format!("<table id=\"{id}\""))
        .unwrap_or_else(|| panic!("table {id}"));
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    table
        .split("<tr>")
        .skip(2)
        .map(|row| {
            row.split("<td class=\"num\">")
                .skip(1)
                .map(|cell| cell[..cell.find('<').unwrap()].trim().parse().unwrap())
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_draws_accessible_charts_of_the_same_numbers() {
    let c = Console::start().await;
    customer(&c, A).await;
    for age in ["10 minutes", "2 hours", "2 hours 10 minutes", "30 hours"] {
        message(&c, A, "outbound", "delivered", age).await;
    }
    let mut b = c.logged_in("ana", Role::Operator).await;
    let home = b.page("/").await;
    for id in ["hours-chart", "funnel-chart"] {
        let svg = &home[home
            .find(&format!("<svg id=\"{id}\""))
            .unwrap_or_else(|| panic!("{id}"))..];
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(svg.contains("role=\"img\""), "{id}");
        assert!(
            svg.contains(&format!("aria-labelledby=\"{id}-title {id}-desc\"")),
            "{id}"
        );
        assert!(svg.contains(&format!("<title id=\"{id}-title\">")), "{id}");
        assert!(svg.contains(&format!("<desc id=\"{id}-desc\">")), "{id}");
        assert!(!svg.contains("<script"), "{id}");
    }
    assert!(home.contains("3 recorded and 0 refused in all"), "{home}");
    assert!(home.contains("recorded 3, waiting 0, sent 3, delivered 3, read 0, failed 0"));
    // The table beside the chart: every hour of the last 24, the same total as the funnel.
    let hours = table_numbers(&home, "hours");
    assert!((24..=25).contains(&hours.len()), "{} hours", hours.len());
    assert_eq!(hours.iter().map(|r| r[0]).sum::<i64>(), 3);
    assert_eq!(
        hours.last().unwrap()[0],
        c.count("SELECT count(*) AS n FROM messages WHERE created_at >= date_trunc('hour', now(), 'UTC')")
            .await,
        "the current hour"
    );
    let now = Utc::now().format("%Y-%m-%d %H:00").to_string();
    assert!(home.contains(&now), "the current hour {now} is labelled");
    // The funnel's table is still there, and the page works without its script.
    assert!(home.contains("data-stage=\"recorded\">3<"));
    // Without the script nothing claims to refresh: the note is hidden until it runs.
    assert!(home.contains("<span id=\"live-note\" hidden></span>"));
}
