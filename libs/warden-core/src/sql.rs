//! Raw SQL helpers for the hot paths (dispatcher and webhook use cases): statements whose
//! text never changes, so diesel-async prepares them once per connection.
//!
//! diesel's `sql_query` and multi-row `insert_into(..).values(vec)` are never put in the
//! prepared-statement cache, so each call costs an extra Parse round trip and a fresh
//! plan. [`Cached`] marks a `sql_query` with fixed text as cacheable; a [`Stmt`] has fixed
//! SQL text (one bind per gap) whatever the number of rows (`unnest` over array binds).

use std::marker::PhantomData;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Array, Jsonb, Nullable, Text, Timestamptz};
use serde_json::Value;
use uuid::Uuid;

/// A raw SQL statement whose text never changes between calls (binds vary, text does
/// not), marked safe for diesel's prepared-statement cache. diesel treats every
/// `sql_query` as uncacheable, so Postgres would parse and plan each of these hot
/// statements on every message; cached, it does so once per connection.
pub struct Cached<Q>(pub Q);

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Cached<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

impl<Q> QueryId for Cached<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Cached<Q> {
    type SqlType = Q::SqlType;
}

/// One bind value of a [`Stmt`].
pub enum Bind<'a> {
    Text(&'a str),
    Texts(Vec<&'a str>),
    OptTexts(Vec<Option<&'a str>>),
    Uuids(Vec<Uuid>),
    OptTimes(Vec<Option<DateTime<Utc>>>),
    Jsons(Vec<&'a Value>),
}

/// `parts[0] bind[0] parts[1] bind[1] ... parts[n]`; `ST` is the row type it returns.
pub struct Stmt<'a, ST = ()> {
    parts: &'static [&'static str],
    binds: Vec<Bind<'a>>,
    row: PhantomData<ST>,
}

impl<'a, ST> Stmt<'a, ST> {
    pub fn new(parts: &'static [&'static str], binds: Vec<Bind<'a>>) -> Self {
        debug_assert_eq!(parts.len(), binds.len() + 1, "one bind per gap");
        Stmt {
            parts,
            binds,
            row: PhantomData,
        }
    }
}

impl<ST> QueryId for Stmt<'_, ST> {
    type QueryId = ();
    // No static id: the statement cache keys it by its SQL text, which never varies.
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<ST> QueryFragment<Pg> for Stmt<'_, ST> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        for (n, part) in self.parts.iter().enumerate() {
            out.push_sql(part);
            match self.binds.get(n) {
                None => {}
                Some(Bind::Text(v)) => out.push_bind_param::<Text, _>(v)?,
                Some(Bind::Texts(v)) => out.push_bind_param::<Array<Text>, _>(v)?,
                Some(Bind::OptTexts(v)) => out.push_bind_param::<Array<Nullable<Text>>, _>(v)?,
                Some(Bind::Uuids(v)) => {
                    out.push_bind_param::<Array<diesel::sql_types::Uuid>, _>(v)?
                }
                Some(Bind::OptTimes(v)) => {
                    out.push_bind_param::<Array<Nullable<Timestamptz>>, _>(v)?
                }
                Some(Bind::Jsons(v)) => out.push_bind_param::<Array<Jsonb>, _>(v)?,
            }
        }
        Ok(())
    }
}

impl<ST: diesel::sql_types::SqlType + diesel::expression::TypedExpressionType> Query
    for Stmt<'_, ST>
{
    type SqlType = ST;
}

/// A duration as whole milliseconds for an `interval '1 millisecond'` product.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// `.optional()` for `sql_query` results.
pub trait OptionalRow<T> {
    fn optional_row(self) -> Result<Option<T>, diesel::result::Error>;
}

impl<T> OptionalRow<T> for Result<T, diesel::result::Error> {
    fn optional_row(self) -> Result<Option<T>, diesel::result::Error> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(diesel::result::Error::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
