//! The senders file: its text to [`Sender`]s, every problem found in one pass.
//!
//! The text is read as a YAML value first (a syntax error is the one problem then); each
//! field is then checked on its own, so a file with five mistakes gets five lines. Lines
//! come from [`super::locate`], asked only for the problems.

use std::collections::HashMap;

use serde_yaml::Value;

use super::locate::{self, Step};
use super::{MAX_ID_LEN, MAX_MPS, SenderProblem};
use crate::secret::Secret;
use crate::senders::{ProductPolicy, Sender};

mod marketing;

/// The fields of an entry, in the documented order.
pub(super) const FIELDS: &[&str] = &[
    "id",
    "phone_number_id",
    "waba_id",
    "portfolio_id",
    "access_token_env",
    "app_secret_env",
    "mps",
    "default",
    "marketing_messages",
    "marketing_product_policy",
];

/// The longest platform id (phone number, account, portfolio) accepted.
const MAX_PLATFORM_ID_LEN: usize = 64;
/// The longest environment variable name accepted.
const MAX_ENV_NAME_LEN: usize = 128;

/// The file's senders, or every problem sorted by line.
pub(super) fn parse(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Sender>, Vec<SenderProblem>> {
    let mut file = File {
        text,
        problems: Vec::new(),
    };
    let senders = file.read(env);
    let mut problems = file.problems;
    match senders {
        Some(senders) if problems.is_empty() => Ok(senders),
        _ => {
            if problems.is_empty() {
                problems.push(SenderProblem {
                    line: 1,
                    field: "senders".into(),
                    reason: "cannot be read".into(),
                });
            }
            problems.sort_by_key(|p| p.line);
            Err(problems)
        }
    }
}

struct File<'t> {
    text: &'t str,
    problems: Vec<SenderProblem>,
}

/// An entry's fields as far as they are valid, with where it is.
struct Draft {
    index: usize,
    id: Option<String>,
    phone_number_id: Option<String>,
    waba_id: Option<String>,
    portfolio_id: Option<String>,
    access_token: Option<(String, Secret)>,
    app_secret: Option<(String, Secret)>,
    mps: Option<u32>,
    default: bool,
    marketing_messages: bool,
    marketing_product_policy: ProductPolicy,
}

impl Draft {
    fn sender(self) -> Option<Sender> {
        let (access_token_env, access_token) = self.access_token?;
        let (app_secret_env, app_secret) = self.app_secret?;
        Some(Sender {
            id: self.id?,
            phone_number_id: self.phone_number_id?,
            waba_id: self.waba_id?,
            portfolio_id: self.portfolio_id?,
            access_token,
            app_secret: Some(app_secret),
            access_token_env,
            app_secret_env,
            mps: self.mps,
            default: self.default,
            marketing_messages: self.marketing_messages,
            marketing_product_policy: self.marketing_product_policy,
        })
    }
}

fn entry_path(index: usize) -> Vec<Step> {
    vec![Step::Key("senders".into()), Step::Index(index)]
}

fn field_path(index: usize, field: &str) -> Vec<Step> {
    let mut path = entry_path(index);
    path.push(Step::Key(field.into()));
    path
}

fn field_name(index: usize, field: &str) -> String {
    format!("senders[{index}].{field}")
}

impl File<'_> {
    fn problem(&mut self, line: usize, field: impl Into<String>, reason: impl Into<String>) {
        self.problems.push(SenderProblem {
            line,
            field: field.into(),
            reason: reason.into(),
        });
    }

    /// A problem with the value of the field at `path`.
    fn at_value(&mut self, path: &[Step], field: impl Into<String>, reason: impl Into<String>) {
        let line = locate::value_line(self.text, path);
        self.problem(line, field, reason);
    }

    /// A problem with the key at `path` (an unknown field).
    fn at_key(&mut self, path: &[Step], field: impl Into<String>, reason: impl Into<String>) {
        let line = locate::key_line(self.text, path);
        self.problem(line, field, reason);
    }

    fn read(&mut self, env: &dyn Fn(&str) -> Option<String>) -> Option<Vec<Sender>> {
        let doc: Value = match serde_yaml::from_str(self.text) {
            Ok(doc) => doc,
            Err(e) => {
                let location = e.location().map(|l| (l.line(), l.column()));
                let mut message = e.to_string();
                if let Some((line, column)) = location {
                    // The line is reported once, in front; drop the parser's repeat.
                    message = message.replacen(&format!(" at line {line} column {column}"), "", 1);
                }
                self.problem(location.map_or(1, |(line, _)| line), "yaml", message);
                return None;
            }
        };
        let top = match doc {
            Value::Mapping(top) => top,
            Value::Null => {
                self.problem(
                    1,
                    "file",
                    "the file is empty; it needs `version: 1` and a `senders` list",
                );
                return None;
            }
            other => {
                self.problem(
                    locate::value_line(self.text, &[]),
                    "file",
                    format!(
                        "the top level must be a mapping with `version` and `senders`, not {}",
                        kind(&other)
                    ),
                );
                return None;
            }
        };
        for key in top.keys() {
            match key.as_str() {
                Some("version" | "senders") => {}
                _ => {
                    let name = key_text(key);
                    self.at_key(
                        &[Step::Key(name.clone())],
                        shown_key(&name),
                        "unknown field; the file has `version` and `senders`",
                    );
                }
            }
        }
        match top.get("version") {
            None => self.problem(1, "version", "missing; write `version: 1`"),
            Some(v) if v.as_u64() == Some(1) => {}
            Some(v) => self.at_value(
                &[Step::Key("version".into())],
                "version",
                format!("{} is not a version; the only version is 1", shown(v)),
            ),
        }
        let senders_path = [Step::Key("senders".into())];
        let items = match top.get("senders") {
            None => {
                self.problem(
                    locate::value_line(self.text, &[]),
                    "senders",
                    "missing; list the senders under `senders:`",
                );
                return None;
            }
            Some(Value::Sequence(items)) if items.is_empty() => {
                self.at_value(&senders_path, "senders", "must list at least one sender");
                return None;
            }
            Some(Value::Sequence(items)) => items,
            Some(other) => {
                self.at_value(
                    &senders_path,
                    "senders",
                    format!("must be a list of senders, not {}", kind(other)),
                );
                return None;
            }
        };
        let drafts: Vec<Draft> = items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| self.entry(index, item, env))
            .collect();
        self.across(&drafts, items.len());
        let senders: Option<Vec<Sender>> = drafts.into_iter().map(Draft::sender).collect();
        senders.filter(|s| s.len() == items.len())
    }

    /// One entry's own checks.
    fn entry(
        &mut self,
        index: usize,
        item: &Value,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Draft> {
        let Value::Mapping(map) = item else {
            self.at_value(
                &entry_path(index),
                format!("senders[{index}]"),
                format!(
                    "must be a mapping with {}, not {}",
                    FIELDS.join(", "),
                    kind(item)
                ),
            );
            return None;
        };
        for key in map.keys() {
            let name = key_text(key);
            if key.as_str().is_some_and(|k| FIELDS.contains(&k)) {
                continue;
            }
            let hint = if ["access_token", "app_secret", "token", "secret"].contains(&name.as_str())
            {
                format!(
                    "unknown field; the file names the variable holding a secret (`{name}_env`), never holds the secret"
                )
            } else {
                format!("unknown field; the fields are {}", FIELDS.join(", "))
            };
            self.at_key(
                &field_path(index, &name),
                field_name(index, &shown_key(&name)),
                hint,
            );
        }
        let mut draft = Draft {
            index,
            id: None,
            phone_number_id: None,
            waba_id: None,
            portfolio_id: None,
            access_token: None,
            app_secret: None,
            mps: None,
            default: false,
            marketing_messages: false,
            marketing_product_policy: ProductPolicy::default(),
        };
        draft.id = self.text_field(index, map, "id", &|id| {
            if is_sender_id(id) {
                Ok(())
            } else {
                Err(format!(
                    "`{}` is not an id: 1 to {MAX_ID_LEN} of a-z, 0-9, `_`, `-`",
                    clip(id)
                ))
            }
        });
        for field in ["phone_number_id", "waba_id", "portfolio_id"] {
            let value = self.text_field(index, map, field, &|v| {
                if is_platform_id(v) {
                    Ok(())
                } else {
                    Err(format!(
                        "`{}` is not a platform id: 1 to {MAX_PLATFORM_ID_LEN} of letters, digits, `_`, `-`",
                        clip(v)
                    ))
                }
            });
            match field {
                "phone_number_id" => draft.phone_number_id = value,
                "waba_id" => draft.waba_id = value,
                _ => draft.portfolio_id = value,
            }
        }
        draft.access_token = self.secret_field(index, map, "access_token_env", env);
        draft.app_secret = self.secret_field(index, map, "app_secret_env", env);
        draft.mps = self.mps(index, map);
        draft.default = self.default_flag(index, map);
        draft.marketing_messages = self.marketing_flag(index, map);
        draft.marketing_product_policy = self.product_policy(index, map);
        Some(draft)
    }

    /// A required text field (a string, or a whole number written without quotes).
    fn text_field(
        &mut self,
        index: usize,
        map: &serde_yaml::Mapping,
        field: &str,
        check: &dyn Fn(&str) -> Result<(), String>,
    ) -> Option<String> {
        let Some(value) = map.get(field) else {
            self.at_value(
                &entry_path(index),
                field_name(index, field),
                "missing; every sender has it",
            );
            return None;
        };
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Number(n) if n.is_u64() => n.to_string(),
            other => {
                self.at_value(
                    &field_path(index, field),
                    field_name(index, field),
                    format!("must be text, not {}", kind(other)),
                );
                return None;
            }
        };
        match check(&text) {
            Ok(()) => Some(text),
            Err(reason) => {
                self.at_value(&field_path(index, field), field_name(index, field), reason);
                None
            }
        }
    }

    /// A `*_env` field: the variable's name, and its value read now. Never prints the
    /// value, nor the field's text when it does not look like a name (it may be the secret).
    fn secret_field(
        &mut self,
        index: usize,
        map: &serde_yaml::Mapping,
        field: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<(String, Secret)> {
        let path = field_path(index, field);
        let name = field_name(index, field);
        let Some(value) = map.get(field) else {
            self.at_value(
                &entry_path(index),
                name,
                "missing; name the environment variable holding the secret",
            );
            return None;
        };
        let Some(variable) = value.as_str().filter(|v| is_env_name(v)) else {
            self.at_value(
                &path,
                name,
                format!(
                    "not an environment variable name (A-Z, 0-9 and `_`, not starting with a digit, at most {MAX_ENV_NAME_LEN}); the file names the variable holding the secret, never the secret itself"
                ),
            );
            return None;
        };
        match env(variable) {
            None => {
                self.at_value(&path, name, format!("`{variable}` is not set"));
                None
            }
            Some(v) if v.trim().is_empty() => {
                self.at_value(&path, name, format!("`{variable}` is empty"));
                None
            }
            Some(v) => Some((variable.to_string(), Secret::new(v.trim()))),
        }
    }

    fn mps(&mut self, index: usize, map: &serde_yaml::Mapping) -> Option<u32> {
        let value = map.get("mps")?;
        let path = field_path(index, "mps");
        let name = field_name(index, "mps");
        match value {
            Value::Null => None,
            Value::Number(n) => match n.as_u64() {
                Some(0) => {
                    self.at_value(
                        &path,
                        name,
                        "must be at least 1 (leave it out to use what the platform says)",
                    );
                    None
                }
                Some(mps) if mps <= u64::from(MAX_MPS) => u32::try_from(mps).ok(),
                Some(mps) => {
                    self.at_value(
                        &path,
                        name,
                        format!(
                            "{mps} messages per second is more than any number may send ({MAX_MPS})"
                        ),
                    );
                    None
                }
                None => {
                    self.at_value(
                        &path,
                        name,
                        format!("`{n}` is not a whole number of messages per second"),
                    );
                    None
                }
            },
            other => {
                self.at_value(
                    &path,
                    name,
                    format!(
                        "must be a whole number of messages per second, not {}",
                        kind(other)
                    ),
                );
                None
            }
        }
    }

    fn default_flag(&mut self, index: usize, map: &serde_yaml::Mapping) -> bool {
        match map.get("default") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(other) => {
                self.at_value(
                    &field_path(index, "default"),
                    field_name(index, "default"),
                    format!("must be true or false, not {}", kind(other)),
                );
                false
            }
        }
    }

    /// What concerns several entries: unique ids and numbers, one account per portfolio,
    /// exactly one default.
    fn across(&mut self, drafts: &[Draft], entries: usize) {
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let mut numbers: HashMap<&str, usize> = HashMap::new();
        for d in drafts {
            if let Some(id) = d.id.as_deref() {
                if let Some(&first) = ids.get(id) {
                    self.at_value(
                        &field_path(d.index, "id"),
                        field_name(d.index, "id"),
                        format!(
                            "`{id}` is already the id of senders[{first}] (line {})",
                            self.entry_line(first)
                        ),
                    );
                } else {
                    ids.insert(id, d.index);
                }
            }
            if let Some(number) = d.phone_number_id.as_deref() {
                if let Some(&first) = numbers.get(number) {
                    self.at_value(
                        &field_path(d.index, "phone_number_id"),
                        field_name(d.index, "phone_number_id"),
                        format!(
                            "`{number}` is already the number of senders[{first}] (line {})",
                            self.entry_line(first)
                        ),
                    );
                } else {
                    numbers.insert(number, d.index);
                }
            }
        }
        // `get` takes an id or a phone number id: an id must not be another's number.
        for d in drafts {
            let Some(id) = d.id.as_deref() else { continue };
            if let Some(&other) = numbers.get(id).filter(|&&other| other != d.index) {
                self.at_value(
                    &field_path(d.index, "id"),
                    field_name(d.index, "id"),
                    format!(
                        "`{id}` is the phone_number_id of senders[{other}] (line {}); an id must not be another sender's number",
                        self.entry_line(other)
                    ),
                );
            }
        }
        // The default sender's rows are stored under the key `default` (see
        // `Senders::key_of`): another sender must not be called that.
        for d in drafts {
            if d.id.as_deref() == Some(super::DEFAULT_SENDER_ID) && !d.default {
                self.at_value(
                    &field_path(d.index, "id"),
                    field_name(d.index, "id"),
                    "`default` is reserved for the default sender; choose another id".to_string(),
                );
            }
        }
        // A business account belongs to one portfolio.
        let mut portfolios: HashMap<&str, (usize, &str)> = HashMap::new();
        for d in drafts {
            let (Some(waba), Some(portfolio)) = (d.waba_id.as_deref(), d.portfolio_id.as_deref())
            else {
                continue;
            };
            match portfolios.get(waba) {
                Some(&(first, theirs)) if theirs != portfolio => self.at_value(
                    &field_path(d.index, "portfolio_id"),
                    field_name(d.index, "portfolio_id"),
                    format!(
                        "waba_id `{waba}` is in portfolio `{theirs}` at senders[{first}] (line {}); a business account belongs to one portfolio",
                        self.entry_line(first)
                    ),
                ),
                Some(_) => {}
                None => {
                    portfolios.insert(waba, (d.index, portfolio));
                }
            }
        }
        let defaults: Vec<usize> = drafts
            .iter()
            .filter(|d| d.default)
            .map(|d| d.index)
            .collect();
        match defaults.as_slice() {
            // Entries that are not mappings could not say; the problem is theirs.
            [] if drafts.len() == entries => self.at_key(
                &[Step::Key("senders".into())],
                "default",
                "no sender is the default; mark exactly one with `default: true`",
            ),
            [] | [_] => {}
            [first, more @ ..] => {
                let first_line = self.entry_line(*first);
                for &index in more {
                    self.at_value(
                        &field_path(index, "default"),
                        field_name(index, "default"),
                        format!(
                            "a second default (senders[{first}] at line {first_line} is one); exactly one sender is the default"
                        ),
                    );
                }
            }
        }
    }

    fn entry_line(&self, index: usize) -> usize {
        locate::value_line(self.text, &entry_path(index))
    }
}

/// `[a-z0-9_-]{1,32}`.
pub(super) fn is_sender_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

fn is_platform_id(id: &str) -> bool {
    (1..=MAX_PLATFORM_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// An upper-case variable name (a token pasted here has lower-case letters or symbols).
fn is_env_name(name: &str) -> bool {
    (1..=MAX_ENV_NAME_LEN).contains(&name.len())
        && !name.as_bytes()[0].is_ascii_digit()
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// What kind of YAML value `v` is, for messages (never its content).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true/false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// A scalar shown in a message (`version: 2`), clipped.
fn shown(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("`{n}`"),
        Value::String(s) => format!("`{}`", clip(s)),
        other => kind(other).to_string(),
    }
}

/// The text a key is matched by (a non-text key as YAML writes it).
fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "~".to_string(),
        other => kind(other).to_string(),
    }
}

/// A key as a field name in a message: short, printable.
fn shown_key(key: &str) -> String {
    clip(key)
}

/// At most 40 characters, control characters escaped: a value in a message stays one line.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(40).flat_map(char::escape_debug).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}
