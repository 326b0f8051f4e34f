//! list_templates: the stored templates page by page, filtered by status, category and
//! locale, each case-insensitively (the platform and callers spell them either way).
//! Never writes.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use warden_store::models::Template;
use warden_store::schema::templates;

use super::effective;
use crate::{Core, CoreError};

diesel::define_sql_function! {
    #[sql_name = "lower"]
    fn sql_lower(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}
diesel::define_sql_function! {
    #[sql_name = "upper"]
    fn sql_upper(x: diesel::sql_types::Text) -> diesel::sql_types::Text;
}

/// What a page keeps; `None` keeps every value. Matched case-insensitively: the status
/// upper-cased, the category and locale trimmed and lower-cased (each compared with the
/// stored value in the same case).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TemplateFilters {
    /// The stored key of one business (templates belong to a business); None: every one.
    pub business: Option<String>,
    /// APPROVED, PENDING, REJECTED, ...
    pub status: Option<String>,
    /// marketing, utility or authentication (the stored category, not a pending one).
    pub category: Option<String>,
    pub locale: Option<String>,
}

/// A stored template with what list_templates shows beside it.
#[derive(Clone, Debug)]
pub struct ListedTemplate {
    pub template: Template,
    /// A re-categorisation the platform announced (`templates::changes`) and its time.
    pub pending_category: Option<String>,
    pub pending_category_at: Option<DateTime<Utc>>,
    pub quality_score: Option<String>,
}

impl ListedTemplate {
    /// The category sends obey at `now` (a re-categorisation counts from its time).
    pub fn effective_category(&self, now: DateTime<Utc>) -> &str {
        effective(
            &self.template.category,
            self.pending_category.as_deref(),
            self.pending_category_at,
            now,
        )
    }

    /// The announced category and when it takes effect, while that is after `now`.
    pub fn upcoming_category(&self, now: DateTime<Utc>) -> Option<(&str, DateTime<Utc>)> {
        let at = self.pending_category_at.filter(|at| *at > now)?;
        Some((self.pending_category.as_deref()?, at))
    }
}

/// One page of templates and how many match in all.
#[derive(Clone, Debug)]
pub struct TemplatesPage {
    pub templates: Vec<ListedTemplate>,
    /// Every template the filters match, not only this page's.
    pub total: i64,
}

/// At most `limit` templates matching `filters` from `offset`, by name then locale.
pub async fn list(
    core: &Core,
    filters: &TemplateFilters,
    limit: i64,
    offset: i64,
) -> Result<TemplatesPage, CoreError> {
    let status = filters.status.as_deref().map(str::to_ascii_uppercase);
    let category = filters.category.as_deref().map(lower);
    let locale = filters.locale.as_deref().map(lower);
    let query = || {
        let mut q = templates::table.into_boxed();
        if let Some(b) = &filters.business {
            q = q.filter(templates::business.eq(b.clone()));
        }
        if let Some(s) = &status {
            q = q.filter(sql_upper(templates::status).eq(s.clone()));
        }
        if let Some(c) = &category {
            q = q.filter(sql_lower(templates::category).eq(c.clone()));
        }
        if let Some(l) = &locale {
            q = q.filter(sql_lower(templates::locale).eq(l.clone()));
        }
        q
    };
    let mut conn = core.pg().get().await?;
    let total: i64 = query().count().get_result(&mut conn).await?;
    type Row = (
        Template,
        Option<String>,
        Option<DateTime<Utc>>,
        Option<String>,
    );
    let rows: Vec<Row> = query()
        .order((
            templates::name.asc(),
            templates::locale.asc(),
            templates::business.asc(),
        ))
        .limit(limit)
        .offset(offset)
        .select((
            Template::as_select(),
            templates::pending_category,
            templates::pending_category_at,
            templates::quality_score,
        ))
        .load(&mut conn)
        .await?;
    Ok(TemplatesPage {
        templates: rows
            .into_iter()
            .map(
                |(template, pending_category, pending_category_at, quality_score)| ListedTemplate {
                    template,
                    pending_category,
                    pending_category_at,
                    quality_score,
                },
            )
            .collect(),
        total,
    })
}

fn lower(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}
