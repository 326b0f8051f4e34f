//! Every database failure is classified once, here, so each layer above answers it the same
//! way: a unique violation is a conflict with an existing row (the caller can say what
//! already exists, or treat the call as a replay), a serialization failure or deadlock that
//! outlived [`crate::tx`]'s retries is "busy, try again shortly", a dropped connection or an
//! exhausted pool is "unavailable", and anything else the database refused is a rejected
//! change (bad input the validators missed, or a bug) — never silently "unavailable".

use diesel::result::{DatabaseErrorKind, Error as DieselError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// A unique constraint already holds this key.
    #[error("conflicts with an existing row ({constraint})")]
    Conflict { constraint: String },
    /// A serialization failure or deadlock persisted after every retry; rolled back.
    #[error("database conflict persisted after {attempts} attempts: {last}")]
    Busy {
        attempts: u32,
        retry_after_secs: u64,
        last: String,
    },
    /// Postgres is unreachable, the connection dropped, or the pool is exhausted.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// The database refused the change (check, foreign key, not-null, bad value).
    #[error("database rejected the change: {0}")]
    Rejected(String),
    /// A row the caller required is absent (diesel's `NotFound` from `get_result`).
    #[error("row not found")]
    NotFound,
}

impl DbError {
    /// A caller may try the same call again later (nothing was written).
    pub fn is_retryable(&self) -> bool {
        matches!(self, DbError::Busy { .. } | DbError::Unavailable(_))
    }
}

impl From<DieselError> for DbError {
    fn from(e: DieselError) -> Self {
        classify(e)
    }
}

impl<E: std::error::Error + 'static> From<bb8::RunError<E>> for DbError {
    fn from(e: bb8::RunError<E>) -> Self {
        DbError::Unavailable(format!("no database connection: {e}"))
    }
}

/// What a caller that still met a conflict is told to wait.
pub const RETRY_AFTER_SECS: u64 = 1;

/// True for the conflicts a retry resolves: 40001 and 40P01. diesel names the first; the
/// second arrives as `Unknown` with Postgres's own message.
pub fn is_transient(e: &DieselError) -> bool {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _) => true,
        DieselError::DatabaseError(_, info) => info.message().starts_with("deadlock detected"),
        _ => false,
    }
}

/// The one classification of a diesel error.
pub fn classify(e: DieselError) -> DbError {
    match e {
        DieselError::NotFound => DbError::NotFound,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => DbError::Conflict {
            constraint: info
                .constraint_name()
                .map(str::to_owned)
                .unwrap_or_else(|| info.message().to_owned()),
        },
        ref transient if is_transient(transient) => DbError::Busy {
            attempts: 1,
            retry_after_secs: RETRY_AFTER_SECS,
            last: transient.to_string(),
        },
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            info,
        ) => DbError::Unavailable(info.message().to_owned()),
        DieselError::DatabaseError(
            DatabaseErrorKind::CheckViolation
            | DatabaseErrorKind::ForeignKeyViolation
            | DatabaseErrorKind::NotNullViolation,
            info,
        ) => DbError::Rejected(info.message().to_owned()),
        DieselError::DatabaseError(_, info) => {
            // Postgres reports a server shutting down or a lost socket as plain errors.
            let m = info.message();
            if m.contains("terminating connection")
                || m.contains("server closed the connection")
                // "the database system is shutting down / starting up / in recovery mode"
                || m.contains("database system is")
                || m.contains("connection")
                    && (m.contains("refused") || m.contains("closed") || m.contains("lost"))
            {
                DbError::Unavailable(m.to_owned())
            } else {
                DbError::Rejected(m.to_owned())
            }
        }
        DieselError::BrokenTransactionManager => {
            DbError::Unavailable("the connection's transaction state is broken".into())
        }
        other => DbError::Unavailable(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_conflicts_are_transient() {
        assert!(!is_transient(&DieselError::NotFound));
        assert!(!is_transient(&DieselError::RollbackTransaction));
    }

    #[test]
    fn not_found_stays_not_found() {
        assert_eq!(classify(DieselError::NotFound), DbError::NotFound);
        assert!(!DbError::NotFound.is_retryable());
    }

    #[test]
    fn broken_connection_is_unavailable() {
        assert!(classify(DieselError::BrokenTransactionManager).is_retryable());
    }
}
