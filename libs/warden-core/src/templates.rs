//! Template lookup for sends, and the one place a template's status is updated from what
//! the platform reports (status webhooks and sync), with one locale rule.

use chrono::{DateTime, Utc};
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

/// How a template's language is compared everywhere (webhooks, sync): `en_US`, `en-US` and
/// `EN_us` are one locale. The SQL twin is [`LOCALE_MATCHES_SQL`].
pub fn same_locale(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.trim().replace('-', "_").to_ascii_lowercase();
    norm(a) == norm(b)
}

/// `locale` of the row equals the bound text parameter `$N`, as [`same_locale`] says
/// (`{}` is replaced by the parameter's placeholder).
const LOCALE_MATCHES_SQL: &str =
    "lower(replace(btrim(locale), '-', '_')) = lower(replace(btrim({}), '-', '_'))";

/// The stored template of `name` in any of `locales` (compared as [`same_locale`] does);
/// the oldest row when several match.
pub async fn find_for_locales(
    conn: &mut AsyncPgConnection,
    name: &str,
    locales: &[&str],
) -> QueryResult<Option<Template>> {
    let wanted: Vec<String> = locales
        .iter()
        .map(|l| l.trim().replace('-', "_").to_ascii_lowercase())
        .collect();
    templates::table
        .filter(templates::name.eq(name))
        .filter(
            diesel::dsl::sql::<diesel::sql_types::Text>("lower(replace(btrim(locale), '-', '_'))")
                .eq_any(wanted),
        )
        .order(templates::created_at.asc())
        .select(Template::as_select())
        .first(conn)
        .await
        .optional()
}

/// A status change the platform reported for a template.
#[derive(Debug, Clone)]
pub struct StatusChange<'a> {
    pub name: &'a str,
    pub language: &'a str,
    /// The new status; None leaves it (an event that only notes something).
    pub status: Option<&'a str>,
    /// `Some(reason)` replaces the stored rejection reason; None keeps it.
    pub reason: Option<Option<&'a str>>,
    pub category: Option<&'a str>,
    pub platform_id: Option<&'a str>,
    /// Applies only to a template in this status (UNARCHIVED: only from ARCHIVED).
    pub only_from: Option<&'a str>,
    /// When the platform decided it (the event's own time).
    pub at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    id: uuid::Uuid,
}

/// Apply a status change to the stored template(s) of that name and locale, by the
/// event's own time: a change older than the stored status's time is not applied, so a
/// late APPROVED never overrides a newer PAUSED (same-second events apply in arrival
/// order). Returns the ids of the rows it changed (empty: not stored here, not in the
/// state it applies to, or older than what is stored).
pub async fn apply_status_change(
    conn: &mut AsyncPgConnection,
    change: &StatusChange<'_>,
) -> QueryResult<Vec<uuid::Uuid>> {
    use diesel::sql_types::{Bool, Nullable, Text, Timestamptz};
    let sql = format!(
        "UPDATE templates SET \
             status = COALESCE($3, status), \
             rejection_reason = CASE WHEN $4 THEN $5 ELSE rejection_reason END, \
             category = COALESCE($6, category), \
             platform_id = COALESCE($7, platform_id), \
             status_event_at = CASE WHEN $3 IS NULL THEN status_event_at \
                                    ELSE GREATEST(status_event_at, $9) END, \
             updated_at = now() \
         WHERE name = $1 AND {} \
           AND ($8::text IS NULL OR status = $8) \
           AND ($3 IS NULL OR status_event_at IS NULL OR status_event_at <= $9) \
         RETURNING id",
        LOCALE_MATCHES_SQL.replace("{}", "$2")
    );
    let rows: Vec<IdRow> = diesel::sql_query(sql)
        .bind::<Text, _>(change.name)
        .bind::<Text, _>(change.language)
        .bind::<Nullable<Text>, _>(change.status)
        .bind::<Bool, _>(change.reason.is_some())
        .bind::<Nullable<Text>, _>(change.reason.flatten())
        .bind::<Nullable<Text>, _>(change.category)
        .bind::<Nullable<Text>, _>(change.platform_id)
        .bind::<Nullable<Text>, _>(change.only_from)
        .bind::<Timestamptz, _>(change.at)
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}
