//! Fixed SQL statements with array binds (`unnest`), prepared once per connection.
//!
//! diesel's `sql_query` and multi-row `insert_into(..).values(vec)` are never put in the
//! prepared-statement cache, so each call costs an extra Parse round trip and a fresh
//! plan. A [`Stmt`] has fixed SQL text (one bind per gap) whatever the number of rows, so
//! diesel-async caches it by its text: one round trip per execution, any batch size.

use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Array, Jsonb, Nullable, Text, Timestamptz};
use serde_json::Value;
use uuid::Uuid;

/// One bind value.
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
