//! Operators: the people who use the console (`warden-admin operators ...`), their
//! sessions and the login throttle.
//!
//! A password is kept only as an argon2id hash (PHC string). A session is a random
//! 32-byte token in the cookie; the row keeps its SHA-256, the operator, the session's
//! CSRF token and when it ends. Five failed logins for one name within a minute refuse
//! that name until the oldest leaves the minute, whether or not the name exists. Disabled
//! operators keep their row (what they did stays attributed) and lose their sessions.
//! Everything an operator does is audited as `operator:NAME` ([`actor`]).

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use ring::digest;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::json;
use warden_store::PgPool;
use warden_store::schema_operators::{operator_login_failures, operator_sessions, operators};

use crate::CoreError;

/// How long a console session lasts after login.
pub const SESSION_TTL: Duration = Duration::hours(12);
/// Failed logins for one name within [`THROTTLE_WINDOW`] before that name is refused.
pub const THROTTLE_FAILURES: i64 = 5;
/// The throttle's window.
pub const THROTTLE_WINDOW: Duration = Duration::minutes(1);
/// Length of a generated one-time password (base64url characters).
const GENERATED_PASSWORD_BYTES: usize = 18;
/// Shortest password accepted.
pub const MIN_PASSWORD_CHARS: usize = 12;

/// What an operator may do in the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Reads every page; every POST is refused.
    Viewer,
    /// Reads, and acts: take over, reply, release, campaigns, customers, agents.
    Operator,
    /// What an operator may, and is named apart for what only admins will do.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
    pub fn parse(s: &str) -> Result<Role, OperatorError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            other => Err(OperatorError::Invalid(format!(
                "role `{other}`: use viewer, operator or admin"
            ))),
        }
    }
    /// Whether this role may change anything (any POST but logout).
    pub fn may_act(self) -> bool {
        self != Role::Viewer
    }
}

/// One operator as `operators list` shows it (never the hash).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorView {
    pub name: String,
    pub role: Role,
    /// `active` or `disabled`.
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A created operator, and the one-time password when none was given.
#[derive(Debug)]
pub struct CreatedOperator {
    pub operator: OperatorView,
    pub generated_password: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error("{0}")]
    Invalid(String),
    #[error("no operator named `{0}`")]
    NotFound(String),
    #[error("an operator named `{0}` already exists")]
    Exists(String),
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<diesel::result::Error> for OperatorError {
    fn from(e: diesel::result::Error) -> Self {
        OperatorError::Core(e.into())
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for OperatorError {
    fn from(e: bb8::RunError<E>) -> Self {
        OperatorError::Core(e.into())
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = operators)]
struct Row {
    name: String,
    role: String,
    password_hash: String,
    status: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl Row {
    fn view(&self) -> OperatorView {
        OperatorView {
            name: self.name.clone(),
            // The column's CHECK admits only the three; anything else reads as the least.
            role: Role::parse(&self.role).unwrap_or(Role::Viewer),
            status: self.status.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// The actor an operator's actions are audited as.
pub fn actor(name: &str) -> String {
    format!("operator:{name}")
}

/// A name: 1..64 of lower-case letters, digits, `-`, `_`, `.`, starting alphanumeric.
pub fn validate_name(name: &str) -> Result<(), OperatorError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(OperatorError::Invalid(format!(
            "operator name `{name}`: use 1 to 64 lower-case letters, digits, `-`, `_` or `.`, starting with a letter or digit"
        )))
    }
}

fn random<const N: usize>() -> Result<[u8; N], CoreError> {
    let mut out = [0u8; N];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| CoreError::Unavailable("the system's random source failed".into()))?;
    Ok(out)
}

/// A random URL-safe token of `N` bytes.
fn token<const N: usize>() -> Result<String, CoreError> {
    Ok(URL_SAFE_NO_PAD.encode(random::<N>()?))
}

fn sha256(token: &str) -> Vec<u8> {
    digest::digest(&digest::SHA256, token.as_bytes())
        .as_ref()
        .to_vec()
}

/// argon2id with the crate's default parameters (on a blocking thread: it takes tens of
/// milliseconds on purpose).
async fn hash_password(password: String) -> Result<String, CoreError> {
    tokio::task::spawn_blocking(move || {
        Argon2::default()
            .hash_password(password.as_bytes())
            .map(|h| h.to_string())
            .map_err(|e| CoreError::Unavailable(format!("argon2: {e}")))
    })
    .await
    .map_err(|e| CoreError::Unavailable(format!("argon2: {e}")))?
}

/// Whether `password` matches the PHC string `hash` (false for a malformed hash).
async fn verify_password(password: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&hash).is_ok_and(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
    })
    .await
    .unwrap_or(false)
}

/// A hash no password matches, verified for unknown names so a refusal takes as long
/// whether or not the name exists.
static DUMMY_HASH: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    Argon2::default()
        .hash_password(b"no operator has this password")
        .map(|h| h.to_string())
        .unwrap_or_default()
});

/// `operators create`: a new active operator. Without `password` a one-time password is
/// generated and returned (shown once by the caller).
pub async fn create(
    pg: &PgPool,
    name: &str,
    role: Role,
    password: Option<String>,
    actor: &str,
) -> Result<CreatedOperator, OperatorError> {
    validate_name(name)?;
    let (password, generated) = match password {
        Some(p) => {
            let p = p.trim_end_matches(['\r', '\n']).to_string();
            if p.chars().count() < MIN_PASSWORD_CHARS {
                return Err(OperatorError::Invalid(format!(
                    "the password must be at least {MIN_PASSWORD_CHARS} characters"
                )));
            }
            (p, false)
        }
        None => (token::<GENERATED_PASSWORD_BYTES>()?, true),
    };
    let hash = hash_password(password.clone()).await?;
    let mut conn = pg.get().await?;
    let inserted = diesel::insert_into(operators::table)
        .values((
            operators::name.eq(name),
            operators::role.eq(role.as_str()),
            operators::password_hash.eq(&hash),
        ))
        .on_conflict(operators::name)
        .do_nothing()
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?;
    let Some(row) = inserted else {
        return Err(OperatorError::Exists(name.to_string()));
    };
    warden_store::audit::record(
        &mut conn,
        actor,
        "operator_created",
        "operator",
        name,
        json!({"role": role.as_str(), "password": if generated { "generated" } else { "given" }}),
    )
    .await?;
    Ok(CreatedOperator {
        operator: row.view(),
        generated_password: generated.then_some(password),
    })
}

/// `operators list`, by name.
pub async fn list(pg: &PgPool) -> Result<Vec<OperatorView>, OperatorError> {
    let mut conn = pg.get().await?;
    let rows = operators::table
        .order(operators::name)
        .select(Row::as_select())
        .load(&mut conn)
        .await?;
    Ok(rows.iter().map(Row::view).collect())
}

/// `operators disable`: the operator can no longer log in and its sessions end now.
pub async fn disable(pg: &PgPool, name: &str, actor: &str) -> Result<OperatorView, OperatorError> {
    let mut conn = pg.get().await?;
    let row = diesel::update(operators::table.find(name))
        .set((
            operators::status.eq("disabled"),
            operators::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?;
    let Some(row) = row else {
        return Err(OperatorError::NotFound(name.to_string()));
    };
    let ended =
        diesel::delete(operator_sessions::table.filter(operator_sessions::operator_name.eq(name)))
            .execute(&mut conn)
            .await?;
    warden_store::audit::record(
        &mut conn,
        actor,
        "operator_disabled",
        "operator",
        name,
        json!({"sessions_ended": ended}),
    )
    .await?;
    Ok(row.view())
}

/// A session just opened: the cookie's token (never stored) and its CSRF token.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub token: String,
    pub csrf_token: String,
    pub expires_at: DateTime<Utc>,
}

/// What a login attempt came to.
#[derive(Debug)]
pub enum Login {
    Opened {
        operator: OperatorView,
        session: NewSession,
    },
    /// Wrong name, wrong password or a disabled operator (the caller cannot tell which).
    Refused,
    /// Too many failures for this name within the window.
    Throttled { retry_after_secs: u64 },
}

/// `POST /login`: check the throttle, then the password; open a session on success.
/// Failures are counted per name tried; a success is audited as the operator.
pub async fn login(pg: &PgPool, name: &str, password: &str) -> Result<Login, CoreError> {
    let name = name.trim();
    let now = Utc::now();
    let mut conn = pg.get().await?;
    let recent: Vec<DateTime<Utc>> = operator_login_failures::table
        .filter(operator_login_failures::name.eq(name))
        .filter(operator_login_failures::failed_at.gt(now - THROTTLE_WINDOW))
        .order(operator_login_failures::failed_at.asc())
        .select(operator_login_failures::failed_at)
        .load(&mut conn)
        .await?;
    if recent.len() as i64 >= THROTTLE_FAILURES {
        let oldest = recent[recent.len() - THROTTLE_FAILURES as usize];
        let wait = (oldest + THROTTLE_WINDOW - now).num_seconds().max(1);
        return Ok(Login::Throttled {
            retry_after_secs: wait as u64,
        });
    }
    let row = operators::table
        .find(name)
        .select(Row::as_select())
        .first(&mut conn)
        .await
        .optional()?;
    let hash = row
        .as_ref()
        .map_or_else(|| DUMMY_HASH.clone(), |r| r.password_hash.clone());
    let matches = verify_password(password.to_string(), hash).await;
    let row = match row {
        Some(r) if matches && r.status == "active" => r,
        _ => {
            diesel::insert_into(operator_login_failures::table)
                .values(operator_login_failures::name.eq(name))
                .execute(&mut conn)
                .await?;
            // Old failures are of no use to the throttle.
            diesel::delete(
                operator_login_failures::table
                    .filter(operator_login_failures::failed_at.lt(now - Duration::hours(1))),
            )
            .execute(&mut conn)
            .await?;
            return Ok(Login::Refused);
        }
    };
    let session = NewSession {
        token: token::<32>()?,
        csrf_token: token::<32>()?,
        expires_at: now + SESSION_TTL,
    };
    diesel::insert_into(operator_sessions::table)
        .values((
            operator_sessions::token_hash.eq(sha256(&session.token)),
            operator_sessions::operator_name.eq(&row.name),
            operator_sessions::csrf_token.eq(&session.csrf_token),
            operator_sessions::expires_at.eq(session.expires_at),
        ))
        .execute(&mut conn)
        .await?;
    diesel::delete(operator_sessions::table.filter(operator_sessions::expires_at.lt(now)))
        .execute(&mut conn)
        .await?;
    warden_store::audit::record(
        &mut conn,
        &actor(&row.name),
        "operator_login",
        "operator",
        &row.name,
        json!({}),
    )
    .await?;
    Ok(Login::Opened {
        operator: row.view(),
        session,
    })
}

/// A live session: who is logged in, and the token every form must carry.
#[derive(Debug, Clone)]
pub struct Session {
    pub operator: String,
    pub role: Role,
    pub csrf_token: String,
}

impl Session {
    /// The actor this session's actions are audited as.
    pub fn actor(&self) -> String {
        actor(&self.operator)
    }
    /// Whether `presented` is this session's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        let (a, b) = (self.csrf_token.as_bytes(), presented.as_bytes());
        // Every byte is looked at whatever differs first; only the lengths leak, and
        // every token has the same length.
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// The session a cookie's token names: unexpired, of an active operator. `None` otherwise.
pub async fn session(pg: &PgPool, token: &str) -> Result<Option<Session>, CoreError> {
    let mut conn = pg.get().await?;
    let row: Option<(String, String, String)> = operator_sessions::table
        .inner_join(operators::table)
        .filter(operator_sessions::token_hash.eq(sha256(token)))
        .filter(operator_sessions::expires_at.gt(Utc::now()))
        .filter(operators::status.eq("active"))
        .select((
            operators::name,
            operators::role,
            operator_sessions::csrf_token,
        ))
        .first(&mut conn)
        .await
        .optional()?;
    Ok(row.map(|(operator, role, csrf_token)| Session {
        operator,
        role: Role::parse(&role).unwrap_or(Role::Viewer),
        csrf_token,
    }))
}

/// `POST /logout`: the session ends now (audited when there was one).
pub async fn logout(pg: &PgPool, token: &str) -> Result<(), CoreError> {
    let mut conn = pg.get().await?;
    let ended: Option<String> = diesel::delete(
        operator_sessions::table.filter(operator_sessions::token_hash.eq(sha256(token))),
    )
    .returning(operator_sessions::operator_name)
    .get_result(&mut conn)
    .await
    .optional()?;
    if let Some(name) = ended {
        warden_store::audit::record(
            &mut conn,
            &actor(&name),
            "operator_logout",
            "operator",
            &name,
            json!({}),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_and_viewers_do_not_act() {
        assert_eq!(Role::parse("Viewer").unwrap(), Role::Viewer);
        assert_eq!(Role::parse("admin").unwrap(), Role::Admin);
        assert!(Role::parse("root").is_err());
        assert!(!Role::Viewer.may_act());
        assert!(Role::Operator.may_act() && Role::Admin.may_act());
    }

    #[test]
    fn names() {
        assert!(validate_name("ana.b-1").is_ok());
        for bad in ["", "Ana", "-a", "a b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
        assert_eq!(actor("ana"), "operator:ana");
    }

    #[test]
    fn csrf_compares_whole_tokens() {
        let s = Session {
            operator: "ana".into(),
            role: Role::Operator,
            csrf_token: "abc".into(),
        };
        assert!(s.csrf_matches("abc"));
        assert!(!s.csrf_matches("ab"));
        assert!(!s.csrf_matches(""));
    }

    #[tokio::test]
    async fn passwords_hash_and_verify() {
        let h = hash_password("correct horse battery".into()).await.unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("correct horse battery".into(), h.clone()).await);
        assert!(!verify_password("wrong".into(), h).await);
        assert!(!verify_password("x".into(), DUMMY_HASH.clone()).await);
        assert!(!verify_password("x".into(), "not a hash".into()).await);
    }
}
