//! Template status events: what each platform event means for the stored template, stored
//! through `crate::templates::record_status_event` (the one template-status upsert),
//! and the platform's other template changes (category, quality: `crate::templates::changes`).

use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel_async::AsyncPgConnection;

use crate::templates::changes::{self, CategoryChange};
use crate::templates::{StatusChange, StatusEvent};

/// A template review decision (`message_template_status_update`).
#[derive(Clone, Debug)]
pub struct TemplateReview<'a> {
    pub name: &'a str,
    pub language: &'a str,
    /// Upper case: APPROVED, REJECTED, PAUSED, ...
    pub event: &'a str,
    pub template_id: &'a str,
    pub reason: Option<&'a str>,
    /// Lower case: marketing, utility, authentication.
    pub category: Option<&'a str>,
    /// When the platform decided it: applied by this time, never arrival order.
    pub at: DateTime<Utc>,
}

/// A template change other than its status.
#[derive(Clone, Debug)]
pub struct TemplateChanged<'a> {
    pub name: &'a str,
    pub language: &'a str,
    pub change: TemplateChange<'a>,
}

#[derive(Clone, Debug)]
pub enum TemplateChange<'a> {
    /// Lower-case categories. `effective_at` None: already in effect.
    Category {
        new_category: &'a str,
        previous_category: Option<&'a str>,
        effective_at: Option<DateTime<Utc>>,
    },
    /// The platform's quality score (GREEN, YELLOW, RED, UNKNOWN).
    Quality { score: &'a str },
}

/// The template status an event leaves, and what happens to the stored reason.
enum TemplateMove<'a> {
    /// Set status; `Some(reason)` replaces the stored reason, `None` keeps it.
    Set(&'a str, Option<Option<&'a str>>),
    /// UNARCHIVED: back to APPROVED, only from ARCHIVED.
    Unarchive,
    /// FLAGGED, LOCKED, UNLOCKED: the template stays usable; nothing to store.
    Note,
}

fn template_move<'a>(t: &TemplateReview<'a>) -> TemplateMove<'a> {
    let reason = t.reason;
    match t.event {
        "APPROVED" | "REINSTATED" => TemplateMove::Set("APPROVED", Some(None)),
        "REJECTED" => TemplateMove::Set("REJECTED", Some(reason)),
        "UNARCHIVED" => TemplateMove::Unarchive,
        "FLAGGED" | "LOCKED" | "UNLOCKED" => TemplateMove::Note,
        // PAUSED, DISABLED, PENDING, IN_APPEAL, LIMIT_EXCEEDED, ARCHIVED, DELETED, ...
        other => TemplateMove::Set(other, reason.map(Some)),
    }
}

/// Store a template status event of the business stored as `business` through the core's
/// one template-status upsert (by the event's own time, one locale rule) inside the
/// caller's transaction. Returns whether a stored template changed.
pub async fn apply_status(
    c: &mut AsyncPgConnection,
    business: &str,
    t: &TemplateReview<'_>,
    actor: &str,
) -> QueryResult<bool> {
    let (status, reason, only_from) = match template_move(t) {
        TemplateMove::Set(status, reason) => (Some(status), reason, None),
        TemplateMove::Unarchive => (Some("APPROVED"), None, Some("ARCHIVED")),
        TemplateMove::Note => (None, None, None),
    };
    let platform_id = Some(t.template_id).filter(|id| !id.is_empty() && *id != "0");
    let locales = [t.language];
    let event = StatusEvent {
        event: t.event,
        language: t.language,
        reported_reason: t.reason,
        reported_template_id: t.template_id,
        change: StatusChange {
            business,
            name: t.name,
            locales: &locales,
            status,
            reason,
            category: t.category,
            platform_id,
            body_text: None,
            only_from,
            at: t.at,
        },
    };
    let changed = crate::templates::record_status_event(c, &event, actor).await?;
    if changed.is_empty() {
        tracing::info!(
            template = %t.name,
            language = %t.language,
            event = %t.event,
            "template status update for a template not stored here, not in a state it applies to, or older than its stored status; ignored"
        );
        return Ok(false);
    }
    tracing::info!(template = %t.name, language = %t.language, event = %t.event, "template status updated");
    Ok(true)
}

/// A template of the business stored as `business` whose category or quality the platform
/// changed.
pub async fn apply_change(
    c: &mut AsyncPgConnection,
    business: &str,
    t: &TemplateChanged<'_>,
    actor: &str,
) -> QueryResult<bool> {
    let now = Utc::now();
    let n = match t.change {
        TemplateChange::Category {
            new_category,
            previous_category,
            effective_at,
        } => {
            let change = CategoryChange {
                business,
                name: t.name,
                language: t.language,
                new_category,
                previous_category,
                effective_at,
            };
            changes::apply_category(c, &change, now, actor).await?
        }
        TemplateChange::Quality { score } => {
            changes::apply_quality(c, business, t.name, t.language, score, now).await?
        }
    };
    if n == 0 {
        tracing::info!(template = %t.name, language = %t.language,
            "template change for a template not stored here; ignored");
    }
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_events_map_to_statuses() {
        let t = |event: &'static str, reason: Option<&'static str>| TemplateReview {
            name: "n",
            language: "en",
            event,
            template_id: "1",
            reason,
            category: None,
            at: Utc::now(),
        };
        let set = |e: &TemplateReview| match template_move(e) {
            TemplateMove::Set(s, r) => Some((s.to_string(), r.map(|r| r.map(String::from)))),
            _ => None,
        };
        assert_eq!(
            set(&t("APPROVED", None)),
            Some(("APPROVED".into(), Some(None)))
        );
        assert_eq!(
            set(&t("REINSTATED", None)),
            Some(("APPROVED".into(), Some(None)))
        );
        assert_eq!(
            set(&t("REJECTED", Some("PROMOTIONAL"))),
            Some(("REJECTED".into(), Some(Some("PROMOTIONAL".into()))))
        );
        assert_eq!(set(&t("PAUSED", None)), Some(("PAUSED".into(), None)));
        assert!(matches!(
            template_move(&t("FLAGGED", None)),
            TemplateMove::Note
        ));
        assert!(matches!(
            template_move(&t("UNARCHIVED", None)),
            TemplateMove::Unarchive
        ));
    }
}
