//! What can be wrong with the settings: every bad variable is one [`Problem`] (one line);
//! a process reports all of them at once and exits with code 2.

use std::fmt;

/// One bad variable: `VARIABLE: reason`, on one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {reason}")]
pub struct Problem {
    pub variable: String,
    pub reason: String,
}

impl Problem {
    pub fn new(variable: &str, reason: impl Into<String>) -> Problem {
        Problem {
            variable: variable.to_string(),
            reason: reason.into(),
        }
    }
}

/// The problems of one load, in the order the variables were read; displayed one per line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, problem) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    /// One or more variables have bad values: one line per problem.
    #[error("{0}")]
    Invalid(Problems),
    #[error("config file {path}: {reason}")]
    File { path: String, reason: String },
}

impl SettingsError {
    /// Every problem (a file error is one problem naming the file).
    pub fn problems(&self) -> Vec<String> {
        match self {
            SettingsError::Invalid(problems) => {
                problems.0.iter().map(ToString::to_string).collect()
            }
            SettingsError::File { .. } => vec![self.to_string()],
        }
    }
}

impl From<Problem> for SettingsError {
    fn from(problem: Problem) -> Self {
        SettingsError::Invalid(Problems(vec![problem]))
    }
}

/// Why a duration (`30s`, `500ms`, `2m`) did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("`{0}` is not a duration like 30s, 500ms, 2m or 1h")]
    NotADuration(String),
    #[error("`{0}` has an unknown unit; use ms, s, m, h or d")]
    UnknownUnit(String),
    #[error("`{0}` is not a valid duration")]
    OutOfRange(String),
}
