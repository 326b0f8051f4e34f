//! Who is asking: the session cookie, login (with its throttle), logout, and the checks
//! every POST passes (the session's CSRF token, a role that may act).
//!
//! Cookies are written by hand (`HttpOnly; SameSite=Strict; Path=/`, `Secure` with
//! `CONSOLE_SECURE_COOKIES=true`): the session cookie holds a random token whose SHA-256
//! the core keeps. The login form carries its own CSRF token, a random value also set as
//! a short-lived cookie (there is no session yet to hold it).

use std::future::Future;
use std::pin::Pin;

use actix_web::http::StatusCode;
use actix_web::http::header::{COOKIE, RETRY_AFTER, SET_COOKIE};
use actix_web::{FromRequest, HttpRequest, HttpResponse, ResponseError, web};
use minijinja::context;
use serde::Deserialize;
use warden_core::operators::{self, Login, Session};

use crate::render::see_other;
use crate::state::AppState;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "warden_session";
/// The login form's CSRF cookie.
pub const LOGIN_COOKIE: &str = "warden_login";

/// The value of cookie `name` in the request, if sent.
pub fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
}

fn set_cookie(state: &AppState, name: &str, value: &str, max_age_secs: i64) -> String {
    format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{}",
        if state.secure_cookies { "; Secure" } else { "" }
    )
}

/// The login form's CSRF token: two UUID v4, 244 random bits from the OS.
fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// A logged-in operator; without a valid session the request is answered 303 `/login`.
pub struct Signed(pub Session);

/// Answered in place of the handler: 303 to /login, or 503.
#[derive(Debug)]
pub struct NotSigned(Option<String>);

impl NotSigned {
    /// Why sessions could not be read; `None` when there is simply no valid session.
    pub fn reason(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl std::fmt::Display for NotSigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.as_deref().unwrap_or("no session"))
    }
}

impl ResponseError for NotSigned {
    fn status_code(&self) -> StatusCode {
        match self.0 {
            None => StatusCode::SEE_OTHER,
            Some(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
    fn error_response(&self) -> HttpResponse {
        match &self.0 {
            None => see_other("/login"),
            Some(why) => HttpResponse::ServiceUnavailable()
                .content_type("text/plain; charset=utf-8")
                .body(why.clone()),
        }
    }
}

impl FromRequest for Signed {
    type Error = NotSigned;
    type Future = Pin<Box<dyn Future<Output = Result<Self, Self::Error>>>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let token = cookie(req, SESSION_COOKIE);
        Box::pin(async move {
            let (Some(state), Some(token)) = (state, token) else {
                return Err(NotSigned(None));
            };
            match operators::session(state.core.pg(), &token).await {
                Ok(Some(s)) => Ok(Signed(s)),
                Ok(None) => Err(NotSigned(None)),
                Err(e) => Err(NotSigned(Some(format!(
                    "the console cannot read sessions now: {e}"
                )))),
            }
        })
    }
}

/// The fields any action's form may carry (each action reads its own).
#[derive(Debug, Default, Deserialize)]
pub struct ActionForm {
    #[serde(default)]
    pub csrf_token: String,
    /// A reply's text.
    #[serde(default)]
    pub text: String,
    /// A rejection's reason.
    #[serde(default)]
    pub reason: String,
    /// A confirmation (forget asks for the customer's key typed again).
    #[serde(default)]
    pub confirm: String,
}

impl Signed {
    /// May this session change something with this form? 403 when the form's token is not
    /// the session's, or the operator is a viewer. Returns the actor to audit as.
    pub fn act(&self, state: &AppState, csrf_token: &str) -> Result<String, HttpResponse> {
        if !self.0.csrf_matches(csrf_token) {
            return Err(state.templates.error(
                StatusCode::FORBIDDEN,
                "Refused",
                "This form is out of date or was not sent from the console (its security token does not match). Reload the page and try again.",
            ));
        }
        if !self.0.role.may_act() {
            return Err(state.templates.error(
                StatusCode::FORBIDDEN,
                "Refused",
                "Viewers can read every page but cannot change anything. Ask an admin for the operator role.",
            ));
        }
        Ok(self.0.actor())
    }
}

fn login_form(
    state: &AppState,
    status: StatusCode,
    name: &str,
    error: Option<&str>,
    headers: Option<(&str, String)>,
) -> HttpResponse {
    let token = random_token();
    let mut res = state.templates.page_with(
        status,
        "login.html",
        context! { name => name, error => error, csrf_token => &token },
    );
    let value = set_cookie(state, LOGIN_COOKIE, &token, 3600);
    if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&value) {
        res.headers_mut().append(SET_COOKIE, v);
    }
    if let Some((k, v)) = headers
        && let (Ok(k), Ok(v)) = (
            actix_web::http::header::HeaderName::from_bytes(k.as_bytes()),
            actix_web::http::header::HeaderValue::from_str(&v),
        )
    {
        res.headers_mut().insert(k, v);
    }
    res
}

/// `GET /login`.
pub async fn login_page(state: web::Data<AppState>) -> HttpResponse {
    login_form(&state, StatusCode::OK, "", None, None)
}

#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    csrf_token: String,
}

/// `POST /login`: 303 to `/` with the session cookie; 401 with the form again; 429 when
/// the name failed five times within a minute; 403 without the form's token.
pub async fn login(
    state: web::Data<AppState>,
    req: HttpRequest,
    form: web::Form<LoginForm>,
) -> HttpResponse {
    let expected = cookie(&req, LOGIN_COOKIE).unwrap_or_default();
    if expected.is_empty() || expected != form.csrf_token {
        return state.templates.error(
            StatusCode::FORBIDDEN,
            "Refused",
            "The login form is out of date (its security token does not match). Open the login page again.",
        );
    }
    match operators::login(state.core.pg(), &form.name, &form.password).await {
        Ok(Login::Opened { session, .. }) => {
            let max_age = (session.expires_at - chrono::Utc::now())
                .num_seconds()
                .max(0);
            HttpResponse::SeeOther()
                .insert_header((actix_web::http::header::LOCATION, "/"))
                .append_header((
                    SET_COOKIE,
                    set_cookie(&state, SESSION_COOKIE, &session.token, max_age),
                ))
                .append_header((SET_COOKIE, set_cookie(&state, LOGIN_COOKIE, "", 0)))
                .finish()
        }
        Ok(Login::Refused) => login_form(
            &state,
            StatusCode::UNAUTHORIZED,
            &form.name,
            Some("Wrong name or password (or the operator is disabled)."),
            None,
        ),
        Ok(Login::Throttled { retry_after_secs }) => login_form(
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            &form.name,
            Some(&format!(
                "Too many failed logins for this name: try again in {retry_after_secs} seconds."
            )),
            Some((RETRY_AFTER.as_str(), retry_after_secs.to_string())),
        ),
        Err(e) => state.templates.error(
            StatusCode::SERVICE_UNAVAILABLE,
            "Unavailable",
            &format!("Logins cannot be checked now: {e}"),
        ),
    }
}

/// `POST /logout`: ends the session (with the session's CSRF token) and goes to /login.
pub async fn logout(
    state: web::Data<AppState>,
    req: HttpRequest,
    signed: Signed,
    form: web::Form<ActionForm>,
) -> HttpResponse {
    if !signed.0.csrf_matches(&form.csrf_token) {
        return state.templates.error(
            StatusCode::FORBIDDEN,
            "Refused",
            "This form is out of date (its security token does not match). Reload the page and try again.",
        );
    }
    if let Some(token) = cookie(&req, SESSION_COOKIE)
        && let Err(e) = operators::logout(state.core.pg(), &token).await
    {
        return state.templates.error(
            StatusCode::SERVICE_UNAVAILABLE,
            "Unavailable",
            &format!("The session could not be ended now: {e}"),
        );
    }
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, "/login"))
        .append_header((SET_COOKIE, set_cookie(&state, SESSION_COOKIE, "", 0)))
        .finish()
}
