//! Template lookup for sends.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use warden_store::models::Template;
use warden_store::schema::templates;

pub const APPROVED: &str = "APPROVED";

pub async fn find(
    conn: &mut AsyncPgConnection,
    name: &str,
    locale: &str,
) -> QueryResult<Option<Template>> {
    templates::table
        .filter(templates::name.eq(name))
        .filter(templates::locale.eq(locale))
        .select(Template::as_select())
        .first(conn)
        .await
        .optional()
}
