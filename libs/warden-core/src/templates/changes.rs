//! What the platform changes in a template after approval, apart from its status:
//!
//! - **Category** (`template_category_update`). A completed change (`previous_category`,
//!   `new_category`) applies at once; an impending one (`correct_category`,
//!   `category_update_timestamp`) is stored as `pending_category` / `pending_category_at`
//!   and the template is *read* as the new category from that moment on
//!   ([`super::effective`], used by `templates::find`, and [`super::EFFECTIVE_CATEGORY_SQL`],
//!   used by the dispatcher's recheck). Every send decides its category from the stored
//!   template, so a utility template re-categorised as marketing obeys marketing rules
//!   (opt-out, cap, +1 block) from then on, including the next batch of a campaign that
//!   uses it.
//! - **Quality** (`message_template_quality_update`): the score, shown by `list_templates`.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use serde_json::json;
use warden_store::schema::templates;

/// A category change the platform reported.
#[derive(Clone, Debug)]
pub struct CategoryChange<'a> {
    /// The stored key of the business whose template it is.
    pub business: &'a str,
    pub name: &'a str,
    pub language: &'a str,
    /// Lower case: marketing, utility, authentication.
    pub new_category: &'a str,
    pub previous_category: Option<&'a str>,
    /// When it takes effect (an impending change's `category_update_timestamp`); None:
    /// it already has.
    pub effective_at: Option<DateTime<Utc>>,
}

/// Store a category change in the caller's transaction, on every stored template of that
/// name and language; audited. Returns how many templates it touched.
pub async fn apply_category(
    c: &mut AsyncPgConnection,
    change: &CategoryChange<'_>,
    now: DateTime<Utc>,
    actor: &str,
) -> QueryResult<usize> {
    let ids =
        crate::templates::ids_for(c, change.business, change.name, &[change.language]).await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let due = change.effective_at.is_none_or(|at| at <= now);
    let n = if due {
        diesel::update(templates::table.filter(templates::id.eq_any(&ids)))
            .set((
                templates::category.eq(change.new_category),
                templates::pending_category.eq(None::<String>),
                templates::pending_category_at.eq(None::<DateTime<Utc>>),
                templates::updated_at.eq(diesel::dsl::now),
            ))
            .execute(c)
            .await?
    } else {
        diesel::update(templates::table.filter(templates::id.eq_any(&ids)))
            .set((
                templates::pending_category.eq(change.new_category),
                templates::pending_category_at.eq(change.effective_at),
                templates::updated_at.eq(diesel::dsl::now),
            ))
            .execute(c)
            .await?
    };
    warden_store::audit::record(
        c,
        actor,
        "template_category_updated",
        "template",
        &format!("{}:{}", change.name, change.language),
        json!({
            "new_category": change.new_category,
            "previous_category": change.previous_category,
            "effective_at": change.effective_at,
            "applied_now": due,
            "template_ids": ids,
        }),
    )
    .await?;
    Ok(n)
}

/// Store the quality score of `business`'s template (`message_template_quality_update`).
pub async fn apply_quality(
    c: &mut AsyncPgConnection,
    business: &str,
    name: &str,
    language: &str,
    score: &str,
    at: DateTime<Utc>,
) -> QueryResult<usize> {
    let ids = crate::templates::ids_for(c, business, name, &[language]).await?;
    if ids.is_empty() {
        return Ok(0);
    }
    diesel::update(
        templates::table
            .filter(templates::id.eq_any(&ids))
            // An older score never replaces a newer one.
            .filter(
                templates::quality_updated_at
                    .is_null()
                    .or(templates::quality_updated_at.le(at)),
            ),
    )
    .set((
        templates::quality_score.eq(score),
        templates::quality_updated_at.eq(at),
    ))
    .execute(c)
    .await
}
