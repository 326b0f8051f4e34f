//! Access: login and its cookie, logout, the throttle, CSRF on every POST, viewers, and
//! every action audited as `operator:NAME`.

use crate::common::*;
use warden_core::agents::{self, Guardrails};
use warden_core::operators::Role;

fn set_cookie_of<'a>(res: &'a reqwest::Response, name: &str) -> &'a str {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie set"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_need_a_session_and_login_opens_one() {
    let c = Console::start().await;
    c.operator("ana", Role::Operator).await;
    let mut b = c.browser();
    for path in ["/", "/conversations", "/customers", "/campaigns", "/audit"] {
        let res = b.get(path).await;
        assert_eq!(res.status().as_u16(), 303, "{path}");
        assert_eq!(res.headers()["location"], "/login", "{path}");
    }
    // A POST without a session changes nothing either.
    assert_eq!(b.post("/logout", &[]).await.status().as_u16(), 303);

    let login = b.page("/login").await;
    assert!(login.contains("<label for=\"name\">") && login.contains("<label for=\"password\">"));
    let wrong = b.login("ana", "not the password").await;
    assert_eq!(wrong.status().as_u16(), 401);
    assert!(!b.has_cookie("warden_session"));

    let ok = b.login("ana", PASSWORD).await;
    assert_eq!(ok.status().as_u16(), 303);
    assert_eq!(ok.headers()["location"], "/");
    let cookie = set_cookie_of(&ok, "warden_session");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "{cookie}");
    let home = b.page("/").await;
    assert!(home.contains("ana (operator)"), "{home}");

    // Logout ends the session on the server, not only in this browser.
    let session = b.cookie("warden_session");
    let out = b.act("/", "/logout", &[]).await;
    assert_eq!(out.status().as_u16(), 303);
    assert_eq!(out.headers()["location"], "/login");
    let mut replay = c.browser();
    replay.set_cookie("warden_session", &session);
    assert_eq!(replay.get("/").await.status().as_u16(), 303);
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE actor = 'operator:ana' AND action IN ('operator_login', 'operator_logout')")
            .await,
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secure_cookies_when_asked() {
    let c = Console::start_with(|s| s.console.secure_cookies = true).await;
    c.operator("ana", Role::Viewer).await;
    let mut b = c.browser();
    let ok = b.login("ana", PASSWORD).await;
    assert_eq!(ok.status().as_u16(), 303);
    assert!(set_cookie_of(&ok, "warden_session").contains("; Secure"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_failures_within_a_minute_refuse_the_name() {
    let c = Console::start().await;
    c.operator("ana", Role::Operator).await;
    c.operator("bo", Role::Operator).await;
    let mut b = c.browser();
    for _ in 0..5 {
        assert_eq!(b.login("ana", "wrong").await.status().as_u16(), 401);
    }
    // Even the right password is refused now, for this name only.
    let res = b.login("ana", PASSWORD).await;
    assert_eq!(res.status().as_u16(), 429);
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(b.login("bo", PASSWORD).await.status().as_u16(), 303);
    // Once the failures are older than a minute the name may try again.
    c.exec("UPDATE operator_login_failures SET failed_at = failed_at - interval '61 seconds'")
        .await;
    let mut again = c.browser();
    assert_eq!(again.login("ana", PASSWORD).await.status().as_u16(), 303);
    // Unknown names are throttled the same way (nothing tells which names exist).
    for _ in 0..5 {
        assert_eq!(b.login("nobody", "x").await.status().as_u16(), 401);
    }
    assert_eq!(b.login("nobody", "x").await.status().as_u16(), 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_login_form_needs_its_token_and_disabled_operators_cannot_log_in() {
    let c = Console::start().await;
    c.operator("ana", Role::Admin).await;
    let mut b = c.browser();
    let res = b
        .post("/login", &[("name", "ana"), ("password", PASSWORD)])
        .await;
    assert_eq!(res.status().as_u16(), 403);
    let mut signed = c.logged_in("cy", Role::Operator).await;
    warden_core::operators::disable(&c.pg, "cy", "test")
        .await
        .unwrap();
    // Its session ends at once, and it cannot log in again.
    assert_eq!(signed.get("/").await.status().as_u16(), 303);
    assert_eq!(b.login("cy", PASSWORD).await.status().as_u16(), 401);
}

async fn agent(c: &Console, name: &str) {
    agents::create(
        &c.pg,
        name,
        vec!["read".into(), "send".into()],
        Guardrails::default(),
        "test",
    )
    .await
    .unwrap();
}

async fn status_of(c: &Console, name: &str) -> String {
    agents::find(&c.pg, name)
        .await
        .unwrap()
        .unwrap()
        .status
        .as_str()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_without_the_session_token_is_refused_and_changes_nothing() {
    let c = Console::start().await;
    agent(&c, "bot").await;
    let mut b = c.logged_in("ana", Role::Operator).await;
    for form in [
        vec![],
        vec![("csrf_token", "forged")],
        vec![("csrf_token", "")],
    ] {
        let res = b.post("/agents/bot/suspend", &form).await;
        assert_eq!(res.status().as_u16(), 403, "{form:?}");
    }
    // Another session's token is not this one's.
    let mut other = c.logged_in("bo", Role::Operator).await;
    let their = csrf_of(&other.page("/agents").await);
    let res = b
        .post("/agents/bot/suspend", &[("csrf_token", their.as_str())])
        .await;
    assert_eq!(res.status().as_u16(), 403);
    assert_eq!(status_of(&c, "bot").await, "active");
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'agent_suspended'")
            .await,
        0
    );

    // With the page's token it happens, audited as the operator.
    let res = b.act("/agents", "/agents/bot/suspend", &[]).await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(status_of(&c, "bot").await, "suspended");
    assert_eq!(
        c.count("SELECT count(*) AS n FROM audit_logs WHERE action = 'agent_suspended' AND actor = 'operator:ana' AND entity_id = 'bot'")
            .await,
        1
    );
    let res = b.act("/agents", "/agents/bot/resume", &[]).await;
    assert_eq!(res.status().as_u16(), 303);
    assert_eq!(status_of(&c, "bot").await, "active");
    let _ = other.get("/").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn viewers_read_every_page_and_change_nothing() {
    let c = Console::start().await;
    agent(&c, "bot").await;
    let mut v = c.logged_in("vi", Role::Viewer).await;
    let agents_page = v.page("/agents").await;
    assert!(
        !agents_page.contains("/agents/bot/suspend"),
        "no forms for viewers"
    );
    let res = v.act("/agents", "/agents/bot/revoke", &[]).await;
    assert_eq!(res.status().as_u16(), 403);
    let res = v
        .act("/", "/conversations/6281234567890/reply", &[("text", "hi")])
        .await;
    assert_eq!(res.status().as_u16(), 403);
    assert_eq!(status_of(&c, "bot").await, "active");
    assert_eq!(
        c.count("SELECT count(*) AS n FROM messages").await,
        0,
        "nothing sent"
    );
    // A viewer may still log out.
    assert_eq!(v.act("/", "/logout", &[]).await.status().as_u16(), 303);
}
