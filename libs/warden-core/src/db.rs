//! Small glue between use cases and `warden_store::tx`.

use std::convert::Infallible;

use warden_store::DbError;
use warden_store::tx::TxError;

/// The result of a transaction whose use case cannot refuse: only the database can fail.
pub(crate) fn infallible<T>(result: Result<T, TxError<Infallible>>) -> Result<T, DbError> {
    result.map_err(|e| match e {
        TxError::Db(e) => e,
        TxError::App(never) => match never {},
    })
}
