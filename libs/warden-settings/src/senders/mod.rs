//! The senders: the phone numbers (and their businesses) one deployment speaks for.
//!
//! With `SENDERS_PATH` unset there is one sender, `default`, made of the `PLATFORM_*`
//! variables ([`Senders::single_default`]). With it, the YAML file lists them
//! (docs/configuration.md, "Several numbers"):
//!
//! ```yaml
//! version: 1
//! senders:
//!   - id: a1                      # [a-z0-9_-]{1,32}, unique
//!     phone_number_id: "1000001"  # unique
//!     waba_id: "2000001"          # the WhatsApp Business Account
//!     portfolio_id: "3000001"     # the business portfolio
//!     access_token_env: SENDER_A1_TOKEN   # names a variable, never holds the secret
//!     app_secret_env: SENDER_A_APP_SECRET
//!     mps: 80                     # optional: until the platform says
//!     default: true               # exactly one
//!     marketing_messages: true    # optional: MARKETING templates via the Marketing Messages API
//!     marketing_product_policy: STRICT    # optional: CLOUD_API_FALLBACK (default) or STRICT
//! ```
//!
//! [`Senders::load`] checks everything at once and reports every problem with its line
//! and field ([`SenderProblem`]); the secrets are read from the named variables then, and
//! never printed ([`crate::Secret`]).

mod locate;
mod marketing;
mod parse;

pub use marketing::ProductPolicy;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::Platform;
use crate::secret::Secret;

/// The id of the one sender made of the `PLATFORM_*` variables (no senders file).
pub const DEFAULT_SENDER_ID: &str = "default";

/// The portfolio id of that sender: the deployment's one business portfolio.
pub const DEFAULT_PORTFOLIO_ID: &str = "default";

/// The most messages per second a sender's `mps` may say (the platform's highest
/// throughput tier).
pub const MAX_MPS: u32 = 1000;

/// The longest sender id.
pub const MAX_ID_LEN: usize = 32;

/// The stored key of the default sender, its business and its portfolio.
pub const STORED_DEFAULT: &str = "default";

/// Whether a stored key is the default sender's (or its business's or portfolio's).
pub fn is_stored_default(key: &str) -> bool {
    key == STORED_DEFAULT
}

/// The keys a sender's rows are stored under ([`Senders::key_of`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StoreKeys {
    /// Its conversations, windows and messages.
    pub sender: String,
    /// Consent and frequency caps (its WhatsApp Business Account).
    pub business: String,
    /// The messaging limit (its business portfolio).
    pub portfolio: String,
}

/// One phone number Warden sends from, with its business and credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sender {
    /// `[a-z0-9_-]{1,32}`: what agents and operators name it by.
    pub id: String,
    /// The platform's id of the phone number (the path of every send).
    pub phone_number_id: String,
    /// The WhatsApp Business Account the number belongs to (templates live there).
    pub waba_id: String,
    /// The business portfolio (its messaging limit is shared by its numbers).
    pub portfolio_id: String,
    /// Bearer token of the platform calls for this number.
    pub access_token: Secret,
    /// The webhook signature secret of the business's app. `None` only for the
    /// [`Senders::single_default`] sender when `PLATFORM_APP_SECRET` is unset.
    pub app_secret: Option<Secret>,
    /// The variable `access_token` was read from (safe to print).
    pub access_token_env: String,
    /// The variable `app_secret` was read from (safe to print).
    pub app_secret_env: String,
    /// Messages per second; `None`: until the platform says (`RATE_LIMIT_MPS` meanwhile).
    pub mps: Option<u32>,
    /// The sender used when a caller names none.
    pub default: bool,
    /// Its MARKETING templates go out through the Marketing Messages API
    /// (`/{phone_number_id}/marketing_messages`) instead of `/messages`.
    pub marketing_messages: bool,
    /// What the Marketing Messages API does when it cannot send a message itself.
    pub marketing_product_policy: ProductPolicy,
}

/// The senders of this deployment: never empty, exactly one default, ids and phone number
/// ids unique.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Senders {
    list: Vec<Sender>,
    default: usize,
}

impl Senders {
    /// One sender, `default`, from today's `PLATFORM_*` settings (no senders file): the
    /// number `PLATFORM_PHONE_NUMBER_ID` of the account `PLATFORM_ACCOUNT_ID`, with
    /// `PLATFORM_ACCESS_TOKEN` and `PLATFORM_APP_SECRET`, in portfolio
    /// [`DEFAULT_PORTFOLIO_ID`], its rate until the platform says.
    pub fn single_default(platform: &Platform) -> Senders {
        Senders {
            list: vec![Sender {
                id: DEFAULT_SENDER_ID.to_string(),
                phone_number_id: platform.phone_number_id.clone(),
                waba_id: platform.account_id.clone(),
                portfolio_id: DEFAULT_PORTFOLIO_ID.to_string(),
                access_token: Secret::new(platform.access_token.clone()),
                app_secret: platform.app_secret.clone().map(Secret::new),
                access_token_env: "PLATFORM_ACCESS_TOKEN".to_string(),
                app_secret_env: "PLATFORM_APP_SECRET".to_string(),
                mps: None,
                default: true,
                marketing_messages: false,
                marketing_product_policy: ProductPolicy::default(),
            }],
            default: 0,
        }
    }

    /// Parse and check a senders file's text. `env` gives the value of a variable the
    /// file names (`None`: unset). Every problem is reported, sorted by line.
    pub fn from_yaml(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Senders, Vec<SenderProblem>> {
        let list = parse::parse(text, env)?;
        // `parse` checks there is exactly one.
        let default = list.iter().position(|s| s.default).unwrap_or(0);
        Ok(Senders { list, default })
    }

    /// Read, parse and check the senders file at `path` (see [`Senders::from_yaml`]).
    pub fn load(
        path: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Senders, SendersError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SendersError::Read {
            path: shown.clone(),
            reason: e.to_string(),
        })?;
        Senders::from_yaml(&text, env).map_err(|problems| SendersError::Invalid {
            path: shown,
            problems,
        })
    }

    /// The sender used when a caller names none.
    pub fn default(&self) -> &Sender {
        &self.list[self.default]
    }

    /// The sender with this id, else the one with this phone number id.
    pub fn get(&self, id_or_phone_number_id: &str) -> Option<&Sender> {
        self.by_id(id_or_phone_number_id)
            .or_else(|| self.by_phone_number_id(id_or_phone_number_id))
    }

    /// The sender with this id.
    pub fn by_id(&self, id: &str) -> Option<&Sender> {
        self.list.iter().find(|s| s.id == id)
    }

    /// The sender of this phone number id (the `metadata.phone_number_id` of a webhook).
    pub fn by_phone_number_id(&self, phone_number_id: &str) -> Option<&Sender> {
        self.list
            .iter()
            .find(|s| s.phone_number_id == phone_number_id)
    }

    /// Every sender, in the file's order.
    pub fn all(&self) -> &[Sender] {
        &self.list
    }

    /// Every id, in the file's order (for messages listing the choices).
    pub fn ids(&self) -> Vec<&str> {
        self.list.iter().map(|s| s.id.as_str()).collect()
    }

    /// How many senders there are (at least 1).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Never true: there is always a default sender.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Whether `a` and `b` (ids or phone number ids) are numbers of the same business
    /// (WhatsApp Business Account). False when either is unknown.
    pub fn same_business(&self, a: &str, b: &str) -> bool {
        match (self.get(a), self.get(b)) {
            (Some(a), Some(b)) => a.waba_id == b.waba_id,
            _ => false,
        }
    }

    /// The senders of one business (WhatsApp Business Account), in the file's order.
    pub fn of_business<'a>(&'a self, waba_id: &'a str) -> impl Iterator<Item = &'a Sender> {
        self.list.iter().filter(move |s| s.waba_id == waba_id)
    }

    /// The senders grouped by business (WhatsApp Business Account id), each group in the
    /// file's order.
    pub fn by_business(&self) -> BTreeMap<&str, Vec<&Sender>> {
        let mut out: BTreeMap<&str, Vec<&Sender>> = BTreeMap::new();
        for s in &self.list {
            out.entry(s.waba_id.as_str()).or_default().push(s);
        }
        out
    }

    /// Where the rows of `sender` are kept: which sender, business and portfolio they
    /// belong to. The default sender, its business and its portfolio are stored as
    /// [`STORED_DEFAULT`], so rows written before a senders file existed stay theirs and
    /// one number writes nothing more than before.
    pub fn key_of(&self, sender: &Sender) -> StoreKeys {
        StoreKeys {
            sender: self.sender_key(sender).to_string(),
            business: self.business_key(sender).to_string(),
            portfolio: self.portfolio_key(sender).to_string(),
        }
    }

    /// The stored key of `sender`'s own rows (see [`Senders::key_of`]).
    pub fn sender_key<'a>(&self, sender: &'a Sender) -> &'a str {
        if sender.default {
            STORED_DEFAULT
        } else {
            &sender.id
        }
    }

    /// The stored key of `sender`'s business (see [`Senders::key_of`]).
    pub fn business_key<'a>(&self, sender: &'a Sender) -> &'a str {
        if sender.waba_id == self.default().waba_id {
            STORED_DEFAULT
        } else {
            &sender.waba_id
        }
    }

    /// The stored key of `sender`'s portfolio (see [`Senders::key_of`]).
    pub fn portfolio_key<'a>(&self, sender: &'a Sender) -> &'a str {
        if sender.portfolio_id == self.default().portfolio_id {
            STORED_DEFAULT
        } else {
            &sender.portfolio_id
        }
    }

    /// The sender whose rows carry the stored key `key` (see [`Senders::key_of`]); `None`
    /// for a sender no longer in the file.
    pub fn by_key(&self, key: &str) -> Option<&Sender> {
        if key == STORED_DEFAULT {
            Some(self.default())
        } else {
            self.by_id(key).filter(|s| !s.default)
        }
    }

    /// The id shown for rows stored under `key`: the sender's id, or the key itself for a
    /// sender no longer in the file.
    pub fn id_of_key<'a>(&'a self, key: &'a str) -> &'a str {
        self.by_key(key).map_or(key, |s| s.id.as_str())
    }

    /// "ok: 3 senders (a1, a2, b1), default a1": what `warden-admin senders check` prints.
    pub fn summary(&self) -> String {
        let n = self.list.len();
        format!(
            "{n} sender{} ({}), default {}",
            if n == 1 { "" } else { "s" },
            self.ids().join(", "),
            self.default().id
        )
    }
}

/// One thing wrong in a senders file: the line, the field (`senders[1].id`) and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderProblem {
    /// 1-based.
    pub line: usize,
    /// `version`, `senders`, `senders[2].mps` (entries counted from 0), or `yaml` for a
    /// syntax error.
    pub field: String,
    /// Never a secret's value.
    pub reason: String,
}

impl fmt::Display for SenderProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.field, self.reason)
    }
}

/// Why a senders file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendersError {
    Read {
        path: String,
        reason: String,
    },
    /// Every problem, sorted by line.
    Invalid {
        path: String,
        problems: Vec<SenderProblem>,
    },
}

impl SendersError {
    /// One line per problem, each naming the file: `senders.yaml: line 4: senders[0].id: ...`.
    pub fn lines(&self) -> Vec<String> {
        match self {
            SendersError::Read { path, reason } => vec![format!("cannot read {path}: {reason}")],
            SendersError::Invalid { path, problems } => {
                problems.iter().map(|p| format!("{path}: {p}")).collect()
            }
        }
    }
}

impl fmt::Display for SendersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

impl std::error::Error for SendersError {}

#[cfg(test)]
mod tests;
