//! Template status events, applied by their own time through `warden_core::templates`.

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use serde_json::json;

use super::ACTOR;
use crate::events::TemplateEvent;

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

pub(super) async fn apply_template(
    c: &mut AsyncPgConnection,
    t: &TemplateEvent,
) -> QueryResult<bool> {
    let movement = template_move(t);
    let (status, reason, only_from) = match movement {
        TemplateMove::Set(status, reason) => (Some(status), reason, None),
        TemplateMove::Unarchive => (Some("APPROVED"), None, Some("ARCHIVED")),
        TemplateMove::Note => (None, None, None),
    };
    let platform_id = Some(t.template_id.as_str()).filter(|id| !id.is_empty() && *id != "0");
    let rows = warden_core::templates::apply_status_change(
        c,
        &warden_core::templates::StatusChange {
            name: &t.name,
            language: &t.language,
            status,
            reason,
            category: t.category.as_deref(),
            platform_id,
            only_from,
            at: t.at,
        },
    )
    .await?;
    if rows.is_empty() {
        tracing::info!(
            template = %t.name,
            language = %t.language,
            event = %t.event,
            "template status update for a template not stored here, not in a state it applies to, or older than its stored status; ignored"
        );
        return Ok(false);
    }
    let entity = format!("{}:{}", t.name, t.language);
    warden_store::audit::record(
        c,
        ACTOR,
        "template_status_updated",
        "template",
        &entity,
        json!({
            "event": t.event,
            "status": status,
            "reason": t.reason,
            "platform_id": t.template_id,
            "template_ids": rows,
            "event_at": t.at,
        }),
    )
    .await?;
    tracing::info!(template = %t.name, language = %t.language, event = %t.event, "template status updated");
    Ok(true)
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
