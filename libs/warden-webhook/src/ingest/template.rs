//! Template status events: what each platform event means for the stored template, stored
//! through `warden_core::templates::record_status_event` (the one template-status upsert),
//! and the platform's other template changes (category, quality).

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use warden_core::templates::{StatusChange, StatusEvent};

use super::ACTOR;
use crate::events::{TemplateChange, TemplateChangeEvent, TemplateEvent};
use warden_core::templates::changes::{self, CategoryChange};

/// The template status an event leaves, and what happens to the stored reason.
enum TemplateMove<'a> {
    /// Set status; `Some(reason)` replaces the stored reason, `None` keeps it.
    Set(&'a str, Option<Option<&'a str>>),
    /// UNARCHIVED: back to APPROVED, only from ARCHIVED.
    Unarchive,
    /// FLAGGED, LOCKED, UNLOCKED: the template stays usable; nothing to store.
    Note,
}

fn template_move(t: &TemplateEvent) -> TemplateMove<'_> {
    let reason = t.reason.as_deref();
    match t.event.as_str() {
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
pub(super) async fn apply_template(
    c: &mut AsyncPgConnection,
    business: &str,
    t: &TemplateEvent,
) -> QueryResult<bool> {
    let (status, reason, only_from) = match template_move(t) {
        TemplateMove::Set(status, reason) => (Some(status), reason, None),
        TemplateMove::Unarchive => (Some("APPROVED"), None, Some("ARCHIVED")),
        TemplateMove::Note => (None, None, None),
    };
    let platform_id = Some(t.template_id.as_str()).filter(|id| !id.is_empty() && *id != "0");
    let locales = [t.language.as_str()];
    let event = StatusEvent {
        event: &t.event,
        language: &t.language,
        reported_reason: t.reason.as_deref(),
        reported_template_id: &t.template_id,
        change: StatusChange {
            business,
            name: &t.name,
            locales: &locales,
            status,
            reason,
            category: t.category.as_deref(),
            platform_id,
            body_text: None,
            only_from,
            at: t.at,
        },
    };
    let changed = warden_core::templates::record_status_event(c, &event, ACTOR).await?;
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
/// changed (`warden_core::templates::changes`).
pub(super) async fn apply_template_change(
    c: &mut AsyncPgConnection,
    business: &str,
    t: &TemplateChangeEvent,
) -> QueryResult<bool> {
    let now = chrono::Utc::now();
    let n = match &t.change {
        TemplateChange::Category {
            new_category,
            previous_category,
            effective_at,
        } => {
            let change = CategoryChange {
                business,
                name: &t.name,
                language: &t.language,
                new_category,
                previous_category: previous_category.as_deref(),
                effective_at: *effective_at,
            };
            changes::apply_category(c, &change, now, ACTOR).await?
        }
        TemplateChange::Quality { score, .. } => {
            changes::apply_quality(c, business, &t.name, &t.language, score, now).await?
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
        let t = |event: &str, reason: Option<&str>| TemplateEvent {
            name: "n".into(),
            language: "en".into(),
            event: event.into(),
            template_id: "1".into(),
            reason: reason.map(String::from),
            category: None,
            at: chrono::Utc::now(),
        };
        let set = |e: &TemplateEvent| match template_move(e) {
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
