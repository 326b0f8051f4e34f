//! Small glue between use cases and `warden_store::tx`: [`infallible`] for transactions
//! that cannot refuse, and [`execute`] / [`load`] for writes of one statement, each in a
//! transaction of its own through `warden_store::tx::transact` (so a serialization failure
//! or deadlock is retried like any other write's; the statement is built anew for each
//! attempt).

use std::convert::Infallible;

use diesel::pg::Pg;
use diesel::query_builder::{BoxedSqlQuery, SqlQuery};
use diesel_async::RunQueryDsl;
use futures::FutureExt;
use warden_store::tx::{TxError, transact};
use warden_store::{DbError, PgPool};

use crate::CoreError;

/// The result of a transaction whose use case cannot refuse: only the database can fail.
pub(crate) fn infallible<T>(result: Result<T, TxError<Infallible>>) -> Result<T, DbError> {
    result.map_err(|e| match e {
        TxError::Db(e) => e,
        TxError::App(never) => match never {},
    })
}

/// A raw statement with its parameters bound.
pub(crate) type Statement = BoxedSqlQuery<'static, Pg, SqlQuery>;

/// Run the statement `build` makes; returns how many rows it changed. `what` names the use
/// case in logs.
pub(crate) async fn execute(
    pg: &PgPool,
    what: &str,
    build: impl Fn() -> Statement + Send + Sync,
) -> Result<usize, CoreError> {
    let n = transact::<_, CoreError, _>(pg, what, |c| {
        let q = build();
        async move { Ok(q.execute(c).await?) }.boxed()
    })
    .await?;
    Ok(n)
}

/// Run the statement `build` makes and read the rows it returns.
pub(crate) async fn load<U>(
    pg: &PgPool,
    what: &str,
    build: impl Fn() -> Statement + Send + Sync,
) -> Result<Vec<U>, CoreError>
where
    U: diesel::QueryableByName<Pg> + Send + 'static,
{
    let rows = transact::<_, CoreError, _>(pg, what, |c| {
        let q = build();
        async move { Ok(q.load::<U>(c).await?) }.boxed()
    })
    .await?;
    Ok(rows)
}
