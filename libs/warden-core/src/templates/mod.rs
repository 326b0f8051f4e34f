//! Templates: lookup for sends, the record of a template the gateway submitted, and the one
//! place a template's status is stored from what the platform reports — status webhooks
//! ([`record_status_event`]) and live reads ([`sync_from_platform`]) — through one upsert
//! ([`apply_status_change`]) with one locale rule ([`same_locale`]) and one ordering rule:
//! a report older than the stored status's time never overwrites it. A template is read
//! as its [`effective`] category; what the platform changes in it besides its status
//! (category, quality) is [`changes`]; list_templates' filtered pages are [`list`].

pub mod changes;
pub mod list;

use std::convert::Infallible;
use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use serde_json::json;
use uuid::Uuid;
use warden_rules::kinds::TemplateCategory;
use warden_rules::template_spec::{SpecError, TemplateSpec};
use warden_rules::templates::MAX_NAME_CHARS;
use warden_store::models::Template;
use warden_store::schema::templates;
use warden_store::tx::{Abort, transact};
use warden_store::{DbError, PgPool};

use crate::db::infallible;

pub const APPROVED: &str = "APPROVED";
/// The status of a template submitted for review.
pub const PENDING: &str = "PENDING";

/// The stored template of `name` in exactly `locale` of the business stored as `business`
/// (templates belong to a business). A name no template can have is answered without a
/// query.
pub async fn find(
    conn: &mut AsyncPgConnection,
    business: &str,
    name: &str,
    locale: &str,
) -> QueryResult<Option<Template>> {
    if impossible_name(name) {
        return Ok(None);
    }
    templates::table
        .filter(templates::business.eq(business))
        .filter(templates::name.eq(name))
        .filter(templates::locale.eq(locale))
        .select(with_pending())
        .first(conn)
        .await
        .optional()
        .map(|t| t.map(with_effective_category))
}

/// Every stored template, as stored (sync_webhooks compares each with the platform's).
pub async fn all_stored(conn: &mut AsyncPgConnection) -> QueryResult<Vec<Template>> {
    templates::table
        .select(Template::as_select())
        .load(conn)
        .await
}

/// A template row with its pending category change (`templates::changes`).
type WithPending = (Template, Option<String>, Option<DateTime<Utc>>);

type WithPendingSelect = (
    diesel::helper_types::AsSelect<Template, diesel::pg::Pg>,
    templates::pending_category,
    templates::pending_category_at,
);

fn with_pending() -> WithPendingSelect {
    (
        Template::as_select(),
        templates::pending_category,
        templates::pending_category_at,
    )
}

/// The category a template has at `now`: its pending one once that is due.
pub fn effective<'a>(
    category: &'a str,
    pending: Option<&'a str>,
    pending_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> &'a str {
    match (pending, pending_at) {
        (Some(p), Some(at)) if at <= now && !p.is_empty() => p,
        _ => category,
    }
}

/// [`effective`] in SQL, over the `templates` row.
pub const EFFECTIVE_CATEGORY_SQL: &str = "CASE WHEN templates.pending_category_at <= now() \
     AND templates.pending_category <> '' THEN templates.pending_category ELSE templates.category END";

/// The template as sends read it: a platform re-categorisation counts from its time on.
fn with_effective_category((mut t, pending, at): WithPending) -> Template {
    let now = Utc::now();
    let category = effective(&t.category, pending.as_deref(), at, now).to_owned();
    t.category = category;
    t
}

/// The ids of the stored templates of `business` named `name` in any of `locales`
/// (compared as [`same_locale`] does), oldest first.
pub async fn ids_for(
    conn: &mut AsyncPgConnection,
    business: &str,
    name: &str,
    locales: &[&str],
) -> QueryResult<Vec<Uuid>> {
    templates::table
        .filter(templates::business.eq(business))
        .filter(templates::name.eq(name))
        .filter(locale_in(locales))
        .order((templates::created_at.asc(), templates::id.asc()))
        .select(templates::id)
        .load(conn)
        .await
}

/// No template can have this name (it is longer than any template name may be).
pub fn impossible_name(name: &str) -> bool {
    name.chars().count() > MAX_NAME_CHARS
}

/// How a template's language is compared everywhere (webhooks, sync): `en_US`, `en-US` and
/// `EN_us` are one locale. The SQL twin is [`LOCALE_KEY_SQL`].
pub fn same_locale(a: &str, b: &str) -> bool {
    locale_key(a) == locale_key(b)
}

fn locale_key(s: &str) -> String {
    s.trim().replace('-', "_").to_ascii_lowercase()
}

/// A row's `locale` normalised as [`locale_key`] does.
const LOCALE_KEY_SQL: &str = "lower(replace(btrim(locale), '-', '_'))";

type LocaleFilter =
    diesel::dsl::EqAny<diesel::expression::SqlLiteral<diesel::sql_types::Text>, Vec<String>>;

/// Rows whose locale is one of `locales`, as [`same_locale`] compares them.
fn locale_in(locales: &[&str]) -> LocaleFilter {
    let wanted: Vec<String> = locales.iter().map(|l| locale_key(l)).collect();
    diesel::dsl::sql::<diesel::sql_types::Text>(LOCALE_KEY_SQL).eq_any(wanted)
}

/// The stored template of `business` named `name` in any of `locales` (compared as
/// [`same_locale`] does); the oldest row when several match.
pub async fn find_for_locales(
    conn: &mut AsyncPgConnection,
    business: &str,
    name: &str,
    locales: &[&str],
) -> QueryResult<Option<Template>> {
    templates::table
        .filter(templates::business.eq(business))
        .filter(templates::name.eq(name))
        .filter(locale_in(locales))
        .order((templates::created_at.asc(), templates::id.asc()))
        .select(with_pending())
        .first(conn)
        .await
        .optional()
        .map(|t| t.map(with_effective_category))
}

/// A status the platform reported for a template (a status webhook or a live read).
#[derive(Debug, Clone)]
pub struct StatusChange<'a> {
    /// The stored key of the business whose template it is (its WhatsApp Business Account).
    pub business: &'a str,
    pub name: &'a str,
    /// The locales the report is about, compared as [`same_locale`] does (a webhook: its
    /// language; a live read: the locale asked for and the one the platform answered).
    pub locales: &'a [&'a str],
    /// The new status; None leaves it (an event that only notes something).
    pub status: Option<&'a str>,
    /// `Some(reason)` replaces the stored rejection reason; None keeps it.
    pub reason: Option<Option<&'a str>>,
    /// Lower case; None (or empty) keeps the stored one.
    pub category: Option<&'a str>,
    pub platform_id: Option<&'a str>,
    pub body_text: Option<&'a str>,
    /// Applies only to a template in this status (UNARCHIVED: only from ARCHIVED).
    pub only_from: Option<&'a str>,
    /// When the platform decided it (an event's own time; a live read's time).
    pub at: DateTime<Utc>,
}

/// One stored template a status change was applied to.
#[derive(Debug, Clone)]
pub struct Applied {
    /// The row just before.
    pub before: Template,
    /// The row as stored now.
    pub row: Template,
}

impl Applied {
    /// Whether what an operator sees of the template changed.
    pub fn changed(&self) -> bool {
        visibly_changed(&self.before, &self.row)
    }
}

/// Status, category or reason differ (what an operator sees of a template).
fn visibly_changed(before: &Template, after: &Template) -> bool {
    before.status != after.status
        || before.category != after.category
        || before.rejection_reason != after.rejection_reason
}

/// THE template-status upsert's update: apply `change` to every stored template of that
/// name whose locale matches (oldest first), by the report's own time — a change older
/// than the stored status's time is not applied, so a late APPROVED never overrides a newer
/// PAUSED (same-second reports apply in arrival order). Locks the rows it reads. Returns
/// the rows it changed (empty: not stored here, not in the state it applies to, or older
/// than what is stored).
pub async fn apply_status_change(
    conn: &mut AsyncPgConnection,
    change: &StatusChange<'_>,
) -> QueryResult<Vec<Applied>> {
    let current: Vec<(Template, Option<DateTime<Utc>>)> = templates::table
        .filter(templates::business.eq(change.business))
        .filter(templates::name.eq(change.name))
        .filter(locale_in(change.locales))
        .order((templates::created_at.asc(), templates::id.asc()))
        .select((Template::as_select(), templates::status_event_at))
        .for_update()
        .load(conn)
        .await?;
    let mut applied = Vec::with_capacity(current.len());
    for (before, stored_at) in current {
        if change.only_from.is_some_and(|from| before.status != from) {
            continue;
        }
        if change.status.is_some() && stored_at.is_some_and(|stored| stored > change.at) {
            continue;
        }
        let status = change.status.unwrap_or(&before.status);
        let reason = match change.reason {
            Some(reason) => reason,
            None => before.rejection_reason.as_deref(),
        };
        let category = change
            .category
            .filter(|c| !c.is_empty())
            .unwrap_or(&before.category);
        let status_event_at = if change.status.is_some() {
            Some(change.at)
        } else {
            stored_at
        };
        let row = diesel::update(templates::table.find(before.id))
            .set((
                templates::status.eq(status),
                templates::rejection_reason.eq(reason),
                templates::category.eq(category),
                templates::platform_id.eq(change.platform_id.or(before.platform_id.as_deref())),
                templates::body_text.eq(change.body_text.unwrap_or(&before.body_text)),
                templates::status_event_at.eq(status_event_at),
                templates::updated_at.eq(diesel::dsl::now),
            ))
            .returning(Template::as_returning())
            .get_result(conn)
            .await?;
        applied.push(Applied { before, row });
    }
    Ok(applied)
}

/// A template status webhook: what it changes and what the audit trail keeps of it.
#[derive(Debug, Clone)]
pub struct StatusEvent<'a> {
    /// The platform's event (APPROVED, PAUSED, FLAGGED, ...).
    pub event: &'a str,
    /// The language as the event spelled it.
    pub language: &'a str,
    /// The reason and template id as the event carried them.
    pub reported_reason: Option<&'a str>,
    pub reported_template_id: &'a str,
    pub change: StatusChange<'a>,
}

/// A status webhook's template event, applied through [`apply_status_change`] inside the
/// caller's transaction and audited when it changed a row. Returns the ids of the rows it
/// changed (empty: ignored, see [`apply_status_change`]).
pub async fn record_status_event(
    conn: &mut AsyncPgConnection,
    event: &StatusEvent<'_>,
    actor: &str,
) -> QueryResult<Vec<Uuid>> {
    let applied = apply_status_change(conn, &event.change).await?;
    let ids: Vec<Uuid> = applied.iter().map(|a| a.row.id).collect();
    if ids.is_empty() {
        return Ok(ids);
    }
    warden_store::audit::record(
        conn,
        actor,
        "template_status_updated",
        "template",
        &format!("{}:{}", event.change.name, event.language),
        json!({
            "event": event.event,
            "status": event.change.status,
            "reason": event.reported_reason,
            "platform_id": event.reported_template_id,
            "template_ids": ids,
            "event_at": event.change.at,
        }),
    )
    .await?;
    Ok(ids)
}

/// A template as the platform describes it now (a live read).
#[derive(Debug, Clone)]
pub struct PlatformTemplate {
    pub name: String,
    pub language: String,
    /// As the platform spells it (any case).
    pub status: String,
    /// As the platform spells it (any case; may be empty).
    pub category: String,
    /// The platform's reason; "NONE" or empty means none.
    pub rejected_reason: Option<String>,
    /// The platform's id (may be empty).
    pub id: String,
    pub body_text: Option<String>,
    /// Every component as the platform lists it (platform shape); None: not reported.
    pub components: Option<serde_json::Value>,
    /// `POSITIONAL` / `NAMED` as the platform spells it; None: positional.
    pub parameter_format: Option<String>,
}

impl PlatformTemplate {
    fn status(&self) -> String {
        self.status.trim().to_ascii_uppercase()
    }

    fn category(&self) -> String {
        self.category.trim().to_ascii_lowercase()
    }

    /// The platform's reason, or None for "NONE"/empty.
    fn reason(&self) -> Option<&str> {
        self.rejected_reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("none"))
    }

    /// This report is about the stored template `local` (same name, same locale).
    pub fn describes(&self, local: &Template) -> bool {
        self.name == local.name && same_locale(&self.language, &local.locale)
    }

    /// What this report says differs from the stored template `local` (status, category
    /// or reason): a re-sync would change it.
    pub fn differs_from(&self, local: &Template) -> bool {
        !self.status.trim().eq_ignore_ascii_case(&local.status)
            || !self.category.trim().eq_ignore_ascii_case(&local.category)
            || self.reason() != local.rejection_reason.as_deref()
    }
}

/// Which live read stored a template's status (kept in the audit trail).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncSource {
    /// sync_template_status: one template, asked for by name and locale.
    SyncTemplateStatus,
    /// sync_webhooks: every stored template re-read.
    SyncWebhooks,
}

impl SyncSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SyncSource::SyncTemplateStatus => "sync_template_status",
            SyncSource::SyncWebhooks => "sync_webhooks",
        }
    }
}

/// What a live read left stored.
#[derive(Debug, Clone)]
pub struct Synced {
    /// The stored status before (None: the template was not stored here).
    pub previous_status: Option<String>,
    /// The template as stored now.
    pub template: Template,
}

/// Store what the platform says about a template of the business stored as `business` now
/// (read with one of its numbers), asked for in `locale`: the stored
/// template(s) of that name and locale (or the platform's language) are updated through
/// [`apply_status_change`], stamped with the read's time; a template stored nowhere is
/// imported. Audited (`template_status_synced`) when the status, category or reason
/// changed. One transaction, retried on transient conflicts.
pub async fn sync_from_platform(
    pg: &PgPool,
    business: &str,
    report: &PlatformTemplate,
    locale: &str,
    source: SyncSource,
    actor: &'static str,
) -> Result<Synced, DbError> {
    // Whole seconds, as status webhooks are stamped: an event of the same second still
    // applies after this read (it may be newer than what was read).
    let read_at = Utc::now().trunc_subsecs(0);
    let report = Arc::new(report.clone());
    let locale = locale.to_string();
    let business = business.to_string();
    let result = transact(pg, source.as_str(), move |c| {
        let report = Arc::clone(&report);
        let locale = locale.clone();
        let business = business.clone();
        async move {
            let (status, category) = (report.status(), report.category());
            let platform_id = Some(report.id.as_str()).filter(|i| !i.is_empty());
            let locales = [locale.as_str(), report.language.as_str()];
            let change = StatusChange {
                business: &business,
                name: &report.name,
                locales: &locales,
                status: Some(&status),
                reason: Some(report.reason()),
                category: Some(&category),
                platform_id,
                body_text: report.body_text.as_deref(),
                only_from: None,
                at: read_at,
            };
            let applied = apply_status_change(c, &change).await?;
            let (before, template) = match applied.into_iter().next() {
                Some(Applied { before, row }) => (Some(before), row),
                // Stored, with a status decided after this read: it stays.
                None => match find_for_locales(c, &business, &report.name, &locales).await? {
                    Some(t) => (Some(t.clone()), t),
                    None => (None, insert_reported(c, &change, &report, &locale).await?),
                },
            };
            // A template made elsewhere (or before components were kept) learns its
            // header, footer, buttons and parameter format, so sends to it are checked
            // against them as for one created here.
            let template = store_reported_components(c, template, &report).await?;
            let changed = before
                .as_ref()
                .is_none_or(|b| visibly_changed(b, &template));
            let previous_status = before.map(|b| b.status);
            if changed {
                warden_store::audit::record(
                    c,
                    actor,
                    "template_status_synced",
                    "template",
                    &format!("{}/{}", template.name, template.locale),
                    json!({
                        "from": previous_status,
                        "to": template.status,
                        "source": source.as_str(),
                        "platform_id": template.platform_id,
                    }),
                )
                .await?;
            }
            Ok::<_, Abort<Infallible>>(Synced {
                previous_status,
                template,
            })
        }
        .boxed()
    })
    .await;
    infallible(result)
}

/// The reported components in the stored form (the form create_template stores): None
/// for a body-only template or one whose components Warden does not understand (then
/// sends carry body parameters only, as before components were kept).
fn reported_spec(report: &PlatformTemplate, body: &str) -> Option<TemplateSpec> {
    let components = report.components.as_ref()?;
    match TemplateSpec::from_components(components, report.parameter_format.as_deref(), body) {
        Ok(spec) if spec.is_body_only() => None,
        Ok(spec) => Some(spec),
        Err(e) => {
            tracing::warn!(template = %report.name, error = %e, "template components not understood; kept as body only");
            None
        }
    }
}

async fn store_reported_components(
    c: &mut AsyncPgConnection,
    template: Template,
    report: &PlatformTemplate,
) -> QueryResult<Template> {
    let Some(spec) = reported_spec(report, &template.body_text) else {
        return Ok(template);
    };
    let components = Some(serde_json::Value::Array(spec.to_components()));
    let parameter_format = Some(spec.parameter_format.as_str().to_owned());
    if template.components == components && template.parameter_format == parameter_format {
        return Ok(template);
    }
    diesel::update(templates::table.find(template.id))
        .set((
            templates::components.eq(&components),
            templates::parameter_format.eq(&parameter_format),
            templates::updated_at.eq(diesel::dsl::now),
        ))
        .returning(Template::as_returning())
        .get_result(c)
        .await
}

/// A template stored nowhere yet, as the platform reported it (in its own language, or the
/// locale asked for when it gave none).
async fn insert_reported(
    conn: &mut AsyncPgConnection,
    change: &StatusChange<'_>,
    report: &PlatformTemplate,
    locale: &str,
) -> QueryResult<Template> {
    let language = if report.language.trim().is_empty() {
        locale
    } else {
        report.language.as_str()
    };
    let status = change.status.unwrap_or(PENDING);
    let reason = change.reason.flatten();
    diesel::insert_into(templates::table)
        .values((
            templates::business.eq(change.business),
            templates::name.eq(change.name),
            templates::locale.eq(language),
            templates::category.eq(change.category.unwrap_or_default()),
            templates::status.eq(status),
            templates::body_text.eq(change.body_text.unwrap_or_default()),
            templates::platform_id.eq(change.platform_id),
            templates::rejection_reason.eq(reason),
            templates::status_event_at.eq(Some(change.at)),
        ))
        .on_conflict((templates::business, templates::name, templates::locale))
        .do_update()
        .set((
            templates::status.eq(status),
            templates::rejection_reason.eq(reason),
            templates::updated_at.eq(diesel::dsl::now),
            templates::status_event_at.eq(Some(change.at)),
        ))
        .returning(Template::as_returning())
        .get_result(conn)
        .await
}

/// A template the platform accepted for review (create_template).
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The stored key of the business it was submitted for.
    pub business: String,
    pub name: String,
    pub language: String,
    pub category: TemplateCategory,
    pub body_text: String,
    /// The status the platform answered with (any case; empty means PENDING).
    pub status: String,
    pub platform_id: String,
    /// The components as submitted (platform shape); None for a body-only template.
    pub components: Option<serde_json::Value>,
    /// `positional` or `named`; None for positional.
    pub parameter_format: Option<String>,
}

/// What a stored template is made of (header, body, footer, buttons, parameter format).
/// A template stored before components were kept is its body alone.
pub fn spec_of(t: &Template) -> Result<TemplateSpec, SpecError> {
    TemplateSpec::from_components(
        t.components.as_ref().unwrap_or(&serde_json::Value::Null),
        t.parameter_format.as_deref(),
        &t.body_text,
    )
}

/// Record a template the platform accepted for review, with its audit row. A decision
/// webhook may have stored the template first: its status is kept.
pub async fn record_submitted(
    pg: &PgPool,
    submitted: &Submitted,
    actor: &'static str,
) -> Result<Template, DbError> {
    let s = Arc::new(submitted.clone());
    let result = transact(pg, "create_template", move |c| {
        let s = Arc::clone(&s);
        async move {
            let status = Some(s.status.trim().to_ascii_uppercase())
                .filter(|st| !st.is_empty())
                .unwrap_or_else(|| PENDING.into());
            let row = diesel::insert_into(templates::table)
                .values((
                    templates::business.eq(&s.business),
                    templates::name.eq(&s.name),
                    templates::locale.eq(&s.language),
                    templates::category.eq(s.category.as_lower()),
                    templates::status.eq(&status),
                    templates::body_text.eq(&s.body_text),
                    templates::platform_id.eq(&s.platform_id),
                    templates::components.eq(&s.components),
                    templates::parameter_format.eq(&s.parameter_format),
                ))
                .on_conflict((templates::business, templates::name, templates::locale))
                .do_update()
                .set((
                    templates::platform_id.eq(&s.platform_id),
                    templates::components.eq(&s.components),
                    templates::parameter_format.eq(&s.parameter_format),
                    templates::body_text.eq(&s.body_text),
                    templates::category.eq(s.category.as_lower()),
                    templates::updated_at.eq(diesel::dsl::now),
                ))
                .returning(Template::as_returning())
                .get_result(c)
                .await?;
            warden_store::audit::record(
                c,
                actor,
                "template_created",
                "template",
                &format!("{}/{}", s.name, s.language),
                json!({"platform_id": s.platform_id, "category": s.category.as_upper(), "status": row.status}),
            )
            .await?;
            Ok::<_, Abort<Infallible>>(row)
        }
        .boxed()
    })
    .await;
    infallible(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(status: &str, category: &str, reason: Option<&str>) -> Template {
        let now = Utc::now();
        Template {
            id: Uuid::nil(),
            name: "order_update".into(),
            locale: "en_US".into(),
            category: category.into(),
            status: status.into(),
            body_text: "Hi {{1}}".into(),
            platform_id: None,
            rejection_reason: reason.map(String::from),
            created_at: now,
            updated_at: now,
            components: None,
            parameter_format: None,
            business: "default".into(),
        }
    }

    fn report(status: &str, category: &str, reason: Option<&str>) -> PlatformTemplate {
        PlatformTemplate {
            name: "order_update".into(),
            language: "en-us".into(),
            status: status.into(),
            category: category.into(),
            rejected_reason: reason.map(String::from),
            id: "1".into(),
            body_text: None,
            components: None,
            parameter_format: None,
        }
    }

    #[test]
    fn locales_compare_one_way() {
        assert!(same_locale("en_US", " EN-us "));
        assert!(!same_locale("en", "en_US"));
        let local = stored("APPROVED", "utility", None);
        assert!(report("approved", "UTILITY", Some("NONE")).describes(&local));
        assert!(!report("approved", "UTILITY", Some("NONE")).differs_from(&local));
        assert!(report("PAUSED", "UTILITY", None).differs_from(&local));
        assert!(report("APPROVED", "MARKETING", None).differs_from(&local));
        assert!(report("APPROVED", "utility", Some("spam")).differs_from(&local));
    }

    #[test]
    fn impossible_names_are_longer_than_any_template_name() {
        assert!(!impossible_name(&"a".repeat(MAX_NAME_CHARS)));
        assert!(impossible_name(&"a".repeat(MAX_NAME_CHARS + 1)));
    }
}

#[cfg(test)]
mod effective_tests {
    use super::*;
    use chrono::Duration;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn a_pending_category_applies_exactly_from_its_time(offset_s in -100_000i64..100_000) {
            let now = Utc::now();
            let at = now + Duration::seconds(offset_s);
            let got = effective("utility", Some("marketing"), Some(at), now);
            prop_assert_eq!(got, if offset_s <= 0 { "marketing" } else { "utility" });
        }
    }

    #[test]
    fn no_pending_keeps_the_stored_category() {
        let now = Utc::now();
        assert_eq!(effective("utility", None, None, now), "utility");
        assert_eq!(effective("utility", Some(""), Some(now), now), "utility");
    }
}
