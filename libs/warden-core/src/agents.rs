//! Remote agents: who may call the gateway over HTTP, their scopes, status and guardrails
//! (`warden-admin agents ...`).
//!
//! An API key is `wdn_` + a 16-hex-digit key id + 43 base64url characters (32 random
//! bytes). It is shown once at creation and never stored: the row keeps the key id (to
//! find it) and HMAC-SHA256 of the secret part keyed with a per-key random salt. The keys
//! are high-entropy, so a keyed hash is as good as a slow password hash here and costs
//! microseconds per request. Revoked and suspended agents keep their row, so what they did
//! stays attributed.
//!
//! Guardrails are enforced in [`crate::send::guardrails`], inside the send transaction;
//! the senders an agent may use (`Guardrails::senders`, ids of the senders file) by the
//! gateway, where it resolves a call's `from`.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::Serialize;
use serde_json::json;
use warden_rules::kinds::Category;
use warden_store::PgPool;
use warden_store::schema::agents;

use crate::CoreError;

/// Every scope an agent may hold (the gateway's `Scope`, by name).
pub const SCOPE_NAMES: [&str; 6] = [
    "read",
    "send",
    "schedule",
    "campaigns",
    "templates",
    "admin",
];
/// What every API key starts with (recognisable in logs and secret scanners).
pub const KEY_PREFIX: &str = "wdn_";
const KEY_ID_HEX: usize = 16;
const SECRET_BYTES: usize = 32;
/// Names the services write their own audit rows as: an agent may not take one.
const RESERVED: [&str; 6] = [
    "mcp-gateway",
    "webhook",
    "dispatcher",
    "scheduler",
    "warden-admin",
    "platform-sim",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentStatus {
    Active,
    Suspended,
    /// Final: the key never works again.
    Revoked,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Suspended => "suspended",
            AgentStatus::Revoked => "revoked",
        }
    }
    fn parse(s: &str) -> AgentStatus {
        match s {
            "active" => AgentStatus::Active,
            "suspended" => AgentStatus::Suspended,
            // Anything unexpected is treated as the safest state.
            _ => AgentStatus::Revoked,
        }
    }
}

/// Per-agent limits; `None` is no limit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guardrails {
    pub max_sends_per_minute: Option<i32>,
    pub max_marketing_per_day: Option<i32>,
    /// Categories the agent may send (marketing, utility, authentication, service).
    pub allowed_message_types: Option<Vec<Category>>,
    /// The senders (ids of the senders file) the agent may send from and read; `None`: all.
    pub senders: Option<Vec<String>>,
}

impl Guardrails {
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "max_sends_per_minute": self.max_sends_per_minute,
            "max_marketing_per_day": self.max_marketing_per_day,
            "allowed_message_types": types_column(&self.allowed_message_types),
            "senders": self.senders,
        })
    }
}

/// One agent as `agents list` shows it (never the key or its hash).
#[derive(Clone, Debug, PartialEq)]
pub struct AgentView {
    pub name: String,
    pub key_id: String,
    pub scopes: Vec<String>,
    pub status: AgentStatus,
    pub guardrails: Guardrails,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A created agent and its key, shown this once.
#[derive(Debug)]
pub struct CreatedAgent {
    pub agent: AgentView,
    pub key: String,
}

/// What `agents update` changes; `None` leaves a field as it is, `Some(None)` clears a limit.
#[derive(Clone, Debug, Default)]
pub struct AgentUpdate {
    pub scopes: Option<Vec<String>>,
    pub max_sends_per_minute: Option<Option<i32>>,
    pub max_marketing_per_day: Option<Option<i32>>,
    pub allowed_message_types: Option<Option<Vec<Category>>>,
    /// `Some(None)`: every sender again.
    pub senders: Option<Option<Vec<String>>>,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("{0}")]
    Invalid(String),
    #[error("no agent named `{0}`")]
    NotFound(String),
    #[error("an agent named `{0}` already exists")]
    Exists(String),
    #[error("agent `{0}` is revoked; create a new agent instead")]
    Revoked(String),
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<diesel::result::Error> for AgentError {
    fn from(e: diesel::result::Error) -> Self {
        AgentError::Core(e.into())
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for AgentError {
    fn from(e: bb8::RunError<E>) -> Self {
        AgentError::Core(e.into())
    }
}

/// What a presented key resolves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyCheck {
    Valid {
        agent: String,
        scopes: Vec<String>,
        /// The senders it may use (ids); `None`: all.
        senders: Option<Vec<String>>,
    },
    /// Not a key of ours, or a wrong secret.
    Unknown,
    /// The agent exists but is suspended or revoked.
    Inactive { agent: String, status: AgentStatus },
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = agents)]
struct Row {
    name: String,
    key_id: String,
    key_salt: Vec<u8>,
    key_hash: Vec<u8>,
    scopes: Vec<String>,
    status: String,
    max_sends_per_minute: Option<i32>,
    max_marketing_per_day: Option<i32>,
    allowed_message_types: Option<Vec<String>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    senders: Option<Vec<String>>,
}

impl Row {
    fn view(self) -> AgentView {
        AgentView {
            name: self.name,
            key_id: self.key_id,
            scopes: self.scopes,
            status: AgentStatus::parse(&self.status),
            guardrails: Guardrails {
                max_sends_per_minute: self.max_sends_per_minute,
                max_marketing_per_day: self.max_marketing_per_day,
                allowed_message_types: self
                    .allowed_message_types
                    .map(|v| v.iter().filter_map(|c| c.parse().ok()).collect()),
                senders: self.senders,
            },
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A name: 1..64 of lower-case letters, digits, `-`, `_`, `.`, starting alphanumeric.
pub fn validate_name(name: &str) -> Result<(), AgentError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    if !ok {
        return Err(AgentError::Invalid(format!(
            "agent name `{name}`: use 1 to 64 lower-case letters, digits, `-`, `_` or `.`, starting with a letter or digit"
        )));
    }
    if RESERVED.contains(&name) {
        return Err(AgentError::Invalid(format!(
            "agent name `{name}` is reserved for a Warden service"
        )));
    }
    Ok(())
}

/// Scope names: comma-separated, each one of [`SCOPE_NAMES`]; sorted, without repeats.
pub fn parse_scopes(list: &str) -> Result<Vec<String>, AgentError> {
    let mut out: Vec<String> = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let s = s.to_ascii_lowercase();
        if !SCOPE_NAMES.contains(&s.as_str()) {
            return Err(AgentError::Invalid(format!(
                "unknown scope `{s}`; scopes are {}",
                SCOPE_NAMES.join(", ")
            )));
        }
        if !out.contains(&s) {
            out.push(s);
        }
    }
    if out.is_empty() {
        return Err(AgentError::Invalid(format!(
            "give at least one scope: {}",
            SCOPE_NAMES.join(", ")
        )));
    }
    out.sort_by_key(|s| SCOPE_NAMES.iter().position(|n| n == s));
    Ok(out)
}

/// Message categories, comma-separated (`text` = service).
pub fn parse_message_types(list: &str) -> Result<Vec<Category>, AgentError> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let c: Category = s.parse().map_err(|_| {
            AgentError::Invalid(format!(
                "unknown message type `{s}`; use marketing, utility, authentication or service"
            ))
        })?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}

/// Sender ids, comma-separated, each a sender of `senders` (its id, or its phone_number_id
/// naming it); sorted in the file's order, without repeats. `all` is every sender (`None`).
pub fn parse_senders(
    list: &str,
    senders: &warden_settings::Senders,
) -> Result<Option<Vec<String>>, AgentError> {
    if list.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut ids: Vec<&str> = Vec::new();
    let mut unknown: Vec<&str> = Vec::new();
    for given in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match senders.get(given) {
            Some(s) if !ids.contains(&s.id.as_str()) => ids.push(&s.id),
            Some(_) => {}
            None => unknown.push(given),
        }
    }
    if !unknown.is_empty() {
        return Err(AgentError::Invalid(format!(
            "--senders: {} {} not in the senders file; its senders are {} (or `all`)",
            unknown
                .iter()
                .map(|u| format!("`{u}`"))
                .collect::<Vec<_>>()
                .join(", "),
            if unknown.len() == 1 { "is" } else { "are" },
            senders.ids().join(", ")
        )));
    }
    if ids.is_empty() {
        return Err(AgentError::Invalid(format!(
            "--senders: give at least one of {} (or `all`)",
            senders.ids().join(", ")
        )));
    }
    let order = senders.ids();
    ids.sort_by_key(|id| order.iter().position(|o| o == id));
    Ok(Some(ids.into_iter().map(str::to_string).collect()))
}

/// A limit given on the command line: a whole number >= 0, or `none` for no limit.
pub fn parse_limit(flag: &str, value: &str) -> Result<Option<i32>, AgentError> {
    if value.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    value
        .parse::<i32>()
        .ok()
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| {
            AgentError::Invalid(format!(
                "{flag} `{value}`: give a whole number >= 0, or `none`"
            ))
        })
}

/// Split a presented key into (key id, secret); `None` when it is not shaped like ours.
pub fn split_key(key: &str) -> Option<(&str, &str)> {
    let rest = key.strip_prefix(KEY_PREFIX)?;
    if rest.len() <= KEY_ID_HEX || !rest.is_char_boundary(KEY_ID_HEX) {
        return None;
    }
    let (id, secret) = rest.split_at(KEY_ID_HEX);
    let id_ok = id
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    (id_ok && secret.len() <= 128).then_some((id, secret))
}

fn mac(salt: &[u8], secret: &str) -> hmac::Tag {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, salt), secret.as_bytes())
}

fn random<const N: usize>() -> Result<[u8; N], AgentError> {
    let mut out = [0u8; N];
    SystemRandom::new()
        .fill(&mut out)
        .map_err(|_| AgentError::Invalid("the system's random source failed".into()))?;
    Ok(out)
}

fn types_column(types: &Option<Vec<Category>>) -> Option<Vec<String>> {
    types
        .as_ref()
        .map(|v| v.iter().map(|c| c.as_str().to_string()).collect())
}

/// `agents create`: a new active agent and its key (printed once by the caller).
pub async fn create(
    pg: &PgPool,
    name: &str,
    scopes: Vec<String>,
    guardrails: Guardrails,
    actor: &str,
) -> Result<CreatedAgent, AgentError> {
    validate_name(name)?;
    let key_id = hex_lower(&random::<{ KEY_ID_HEX / 2 }>()?);
    let secret = URL_SAFE_NO_PAD.encode(random::<SECRET_BYTES>()?);
    let salt = random::<16>()?;
    let hash = mac(&salt, &secret);
    let key = format!("{KEY_PREFIX}{key_id}{secret}");
    let mut conn = pg.get().await?;
    let inserted = diesel::insert_into(agents::table)
        .values((
            agents::name.eq(name),
            agents::key_id.eq(&key_id),
            agents::key_salt.eq(salt.as_slice()),
            agents::key_hash.eq(hash.as_ref()),
            agents::scopes.eq(&scopes),
            agents::max_sends_per_minute.eq(guardrails.max_sends_per_minute),
            agents::max_marketing_per_day.eq(guardrails.max_marketing_per_day),
            agents::allowed_message_types.eq(types_column(&guardrails.allowed_message_types)),
            agents::senders.eq(&guardrails.senders),
        ))
        .on_conflict(agents::name)
        .do_nothing()
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await
        .optional()?;
    let Some(row) = inserted else {
        return Err(AgentError::Exists(name.to_string()));
    };
    let agent = row.view();
    warden_store::audit::record(
        &mut conn,
        actor,
        "agent_created",
        "agent",
        name,
        json!({"scopes": agent.scopes, "key_id": agent.key_id, "guardrails": agent.guardrails.to_json()}),
    )
    .await?;
    Ok(CreatedAgent { agent, key })
}

/// `agents list`, by name.
pub async fn list(pg: &PgPool) -> Result<Vec<AgentView>, AgentError> {
    let mut conn = pg.get().await?;
    let rows = agents::table
        .order(agents::name)
        .select(Row::as_select())
        .load(&mut conn)
        .await?;
    Ok(rows.into_iter().map(Row::view).collect())
}

/// `agents show`, and the agent `MCP_AGENT` names over stdio: `None` when there is none.
pub async fn find(pg: &PgPool, name: &str) -> Result<Option<AgentView>, AgentError> {
    let mut conn = pg.get().await?;
    let row = agents::table
        .find(name)
        .select(Row::as_select())
        .first(&mut conn)
        .await
        .optional()?;
    Ok(row.map(Row::view))
}

/// `agents suspend` / `resume` / `revoke`. Revoked is final.
pub async fn set_status(
    pg: &PgPool,
    name: &str,
    status: AgentStatus,
    actor: &str,
) -> Result<AgentView, AgentError> {
    let mut conn = pg.get().await?;
    let row = diesel::update(
        agents::table
            .find(name)
            .filter(agents::status.ne(AgentStatus::Revoked.as_str())),
    )
    .set((
        agents::status.eq(status.as_str()),
        agents::updated_at.eq(diesel::dsl::now),
    ))
    .returning(Row::as_returning())
    .get_result(&mut conn)
    .await
    .optional()?;
    let Some(row) = row else {
        return Err(missing_or_revoked(&mut conn, name).await);
    };
    warden_store::audit::record(
        &mut conn,
        actor,
        match status {
            AgentStatus::Active => "agent_resumed",
            AgentStatus::Suspended => "agent_suspended",
            AgentStatus::Revoked => "agent_revoked",
        },
        "agent",
        name,
        json!({}),
    )
    .await?;
    Ok(row.view())
}

/// `agents update`: scopes and guardrails (a revoked agent cannot be changed).
pub async fn update(
    pg: &PgPool,
    name: &str,
    change: AgentUpdate,
    actor: &str,
) -> Result<AgentView, AgentError> {
    let mut conn = pg.get().await?;
    let Some(current) = agents::table
        .find(name)
        .select(Row::as_select())
        .first(&mut conn)
        .await
        .optional()?
    else {
        return Err(AgentError::NotFound(name.to_string()));
    };
    if AgentStatus::parse(&current.status) == AgentStatus::Revoked {
        return Err(AgentError::Revoked(name.to_string()));
    }
    let current = current.view();
    let scopes = change.scopes.clone().unwrap_or(current.scopes);
    let g = &current.guardrails;
    let sends = change
        .max_sends_per_minute
        .unwrap_or(g.max_sends_per_minute);
    let marketing = change
        .max_marketing_per_day
        .unwrap_or(g.max_marketing_per_day);
    let types = change
        .allowed_message_types
        .clone()
        .unwrap_or(g.allowed_message_types.clone());
    let senders = change.senders.clone().unwrap_or(g.senders.clone());
    let row = diesel::update(agents::table.find(name))
        .set((
            agents::scopes.eq(&scopes),
            agents::max_sends_per_minute.eq(sends),
            agents::max_marketing_per_day.eq(marketing),
            agents::allowed_message_types.eq(types_column(&types)),
            agents::senders.eq(&senders),
            agents::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Row::as_returning())
        .get_result(&mut conn)
        .await?;
    let view = row.view();
    warden_store::audit::record(
        &mut conn,
        actor,
        "agent_updated",
        "agent",
        name,
        json!({"scopes": view.scopes, "guardrails": view.guardrails.to_json()}),
    )
    .await?;
    Ok(view)
}

async fn missing_or_revoked(conn: &mut diesel_async::AsyncPgConnection, name: &str) -> AgentError {
    let exists = agents::table
        .find(name)
        .select(agents::name)
        .first::<String>(conn)
        .await
        .optional();
    match exists {
        Ok(Some(_)) => AgentError::Revoked(name.to_string()),
        Ok(None) => AgentError::NotFound(name.to_string()),
        Err(e) => e.into(),
    }
}

/// Resolve a presented API key (one primary-key read; the secret is compared in
/// constant time).
pub async fn verify_key(pg: &PgPool, presented: &str) -> Result<KeyCheck, CoreError> {
    let Some((key_id, secret)) = split_key(presented) else {
        return Ok(KeyCheck::Unknown);
    };
    let mut conn = pg.get().await?;
    let row = agents::table
        .filter(agents::key_id.eq(key_id))
        .select(Row::as_select())
        .first(&mut conn)
        .await
        .optional()?;
    let Some(row) = row else {
        return Ok(KeyCheck::Unknown);
    };
    let key = hmac::Key::new(hmac::HMAC_SHA256, &row.key_salt);
    if hmac::verify(&key, secret.as_bytes(), &row.key_hash).is_err() {
        return Ok(KeyCheck::Unknown);
    }
    Ok(match AgentStatus::parse(&row.status) {
        AgentStatus::Active => KeyCheck::Valid {
            agent: row.name,
            scopes: row.scopes,
            senders: row.senders,
        },
        status => KeyCheck::Inactive {
            agent: row.name,
            status,
        },
    })
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `&'static str` an actor name is written as (audit rows, message actors). The set
/// of names is bounded by the agents an operator creates (and the OAuth clients that
/// call), so each distinct name is leaked once and shared after.
pub fn intern(name: &str) -> &'static str {
    static NAMES: LazyLock<Mutex<HashSet<&'static str>>> =
        LazyLock::new(|| Mutex::new(HashSet::new()));
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_string().into_boxed_str());
    names.insert(leaked);
    leaked
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn scopes_parse_sorted_and_unknown_ones_are_refused() {
        assert_eq!(
            parse_scopes("send, READ,send").unwrap(),
            vec!["read".to_string(), "send".to_string()]
        );
        assert!(parse_scopes("read,root").is_err());
        assert!(parse_scopes(" , ").is_err());
    }

    #[test]
    fn names_and_limits() {
        assert!(validate_name("support-bot.eu_1").is_ok());
        for bad in ["", "Support", "-x", "a b", "scheduler", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_limit("--x", "5").unwrap(), Some(5));
        assert_eq!(parse_limit("--x", "none").unwrap(), None);
        assert!(parse_limit("--x", "-1").is_err());
        assert_eq!(
            parse_message_types("utility,text").unwrap(),
            vec![Category::Utility, Category::Service]
        );
        assert!(parse_message_types("template").is_err());
    }

    #[test]
    fn senders_are_ids_of_the_file_and_unknown_ones_are_named() {
        let env = |_: &str| Some("x".to_string());
        let file = warden_settings::Senders::from_yaml(
            include_str!("../../../examples/senders.yaml"),
            &env,
        )
        .unwrap();
        assert_eq!(
            parse_senders("b1, a1,104000000000001", &file).unwrap(),
            Some(vec!["a1".to_string(), "b1".to_string()])
        );
        assert_eq!(parse_senders("all", &file).unwrap(), None);
        let e = parse_senders("a1,c9,zz", &file).unwrap_err().to_string();
        assert!(e.contains("`c9`, `zz` are not in the senders file"), "{e}");
        assert!(e.contains("a1, a2, b1"), "{e}");
        assert!(parse_senders(" , ", &file).is_err());
    }

    #[test]
    fn interned_names_are_shared() {
        let a = intern("agent-a");
        let b = intern(&String::from("agent-a"));
        assert!(std::ptr::eq(a, b));
    }

    proptest! {
        /// Whatever an HTTP client sends as a key, splitting never panics, and only our
        /// shape splits.
        #[test]
        fn split_key_never_panics(s in "\\PC{0,80}") {
            if let Some((id, secret)) = split_key(&s) {
                prop_assert!(s.starts_with(KEY_PREFIX));
                prop_assert_eq!(id.len(), KEY_ID_HEX);
                prop_assert!(!secret.is_empty());
            }
        }

        #[test]
        fn a_key_splits_into_its_parts(id in "[0-9a-f]{16}", secret in "[A-Za-z0-9_-]{43}") {
            let key = format!("{KEY_PREFIX}{id}{secret}");
            prop_assert_eq!(split_key(&key), Some((id.as_str(), secret.as_str())));
        }
    }
}
