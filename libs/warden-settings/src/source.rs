//! Where a value comes from (the environment, else the config file, else the default), and
//! the problems found while reading: a bad value is recorded and its default used, so one
//! load reports every bad variable at once.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use crate::duration::parse_duration;
use crate::error::{Problem, Problems, SettingsError};

pub(crate) struct Source<'a> {
    file: HashMap<String, String>,
    env: &'a HashMap<String, String>,
    problems: Vec<Problem>,
}

impl<'a> Source<'a> {
    pub(crate) fn new(file: HashMap<String, String>, env: &'a HashMap<String, String>) -> Self {
        Source {
            file,
            env,
            problems: Vec::new(),
        }
    }

    pub(crate) fn get(&self, variable: &str) -> Option<String> {
        self.env
            .get(variable)
            .cloned()
            .or_else(|| self.file.get(&variable.to_ascii_lowercase()).cloned())
    }

    /// A variable read from the environment only (not a config file key).
    pub(crate) fn env_only(&self, variable: &str) -> Option<String> {
        self.env.get(variable).cloned()
    }

    /// The value trimmed, `None` when unset or blank.
    pub(crate) fn trimmed(&self, variable: &str) -> Option<String> {
        self.get(variable)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    pub(crate) fn string(&self, variable: &str, default: &str) -> String {
        self.get(variable).unwrap_or_else(|| default.to_string())
    }

    pub(crate) fn problem(&mut self, variable: &str, reason: impl Into<String>) {
        self.problems.push(Problem::new(variable, reason));
    }

    pub(crate) fn optional_number<T: std::str::FromStr>(&mut self, variable: &str) -> Option<T> {
        let raw = self.get(variable)?;
        if raw.trim().is_empty() {
            return None;
        }
        match raw.trim().parse::<T>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.problem(
                    variable,
                    format!(
                        "`{raw}` is not a valid number (expected {})",
                        number_hint::<T>()
                    ),
                );
                None
            }
        }
    }

    pub(crate) fn number<T: std::str::FromStr>(&mut self, variable: &str, default: T) -> T {
        self.optional_number(variable).unwrap_or(default)
    }

    /// A whole number of at least `min` (the dispatcher's knobs and their wording).
    pub(crate) fn whole<T: std::str::FromStr + PartialOrd>(
        &mut self,
        variable: &str,
        min: T,
        default: T,
    ) -> T {
        let Some(v) = self.trimmed(variable) else {
            return default;
        };
        match v.parse::<T>() {
            Ok(n) if n >= min => n,
            _ => {
                self.problem(variable, format!("`{v}` is not a whole number in range"));
                default
            }
        }
    }

    /// A duration (`500ms`, `2s`, `1m`); unset or blank: `default`.
    pub(crate) fn duration(&mut self, variable: &str, default: Duration) -> Duration {
        let Some(v) = self.trimmed(variable) else {
            return default;
        };
        match parse_duration(&v) {
            Ok(d) => d,
            Err(e) => {
                self.problem(variable, e.to_string());
                default
            }
        }
    }

    /// `value` when nothing was wrong, else every problem.
    pub(crate) fn finish<T>(self, value: T) -> Result<T, SettingsError> {
        if self.problems.is_empty() {
            Ok(value)
        } else {
            Err(SettingsError::Invalid(Problems(self.problems)))
        }
    }
}

fn number_hint<T>() -> &'static str {
    match std::any::type_name::<T>() {
        "u16" => "an integer from 0 to 65535",
        "u8" => "an integer from 0 to 255",
        _ => "a non-negative integer",
    }
}

/// The config file's keys (variable names in lower case) and their values as text.
pub(crate) fn read_file(
    path: &Path,
    known: impl Fn(&str) -> bool,
) -> Result<HashMap<String, String>, SettingsError> {
    let file_err = |reason: String| SettingsError::File {
        path: path.display().to_string(),
        reason,
    };
    if !path.is_file() {
        return Err(file_err("not found".into()));
    }
    let cfg = config::Config::builder()
        .add_source(config::File::from(path).format(config::FileFormat::Toml))
        .build()
        .map_err(|e| file_err(e.to_string()))?;
    let table = cfg
        .try_deserialize::<HashMap<String, config::Value>>()
        .map_err(|e| file_err(e.to_string()))?;
    let mut out = HashMap::new();
    for (key, value) in table {
        let key = key.to_ascii_lowercase();
        if !known(&key) {
            return Err(file_err(format!("unknown key `{key}`")));
        }
        let text = value
            .into_string()
            .map_err(|e| file_err(format!("`{key}`: {e}")))?;
        out.insert(key, text);
    }
    Ok(out)
}
