//! A template's review decision (`message_template_status_update`) and the platform's
//! later changes to it (`template_changes`).

use chrono::{DateTime, Utc};
use serde_json::Value;
use warden_platform::webhook::TemplateStatusUpdate;

use super::{Builder, EventBody, clean, clip, template_changes};

/// A template review decision.
#[derive(Debug, Clone)]
pub struct TemplateEvent {
    pub name: String,
    pub language: String,
    /// Upper case: APPROVED, REJECTED, PAUSED, ...
    pub event: String,
    pub template_id: String,
    /// None for `NONE` / null / empty.
    pub reason: Option<String>,
    /// Lower case: marketing, utility, authentication.
    pub category: Option<String>,
    /// When the platform decided it: the entry's `time` (arrival when it has none or an
    /// implausible one). Template status is applied by this time, never arrival order.
    pub at: DateTime<Utc>,
}

impl Builder<'_> {
    pub(super) fn template(
        &mut self,
        update: TemplateStatusUpdate,
        entry_time: Option<i64>,
        fp: &str,
        now: DateTime<Utc>,
    ) {
        let name = clean(&update.message_template_name);
        let language = clean(&update.message_template_language);
        let event = clean(&update.event).trim().to_ascii_uppercase();
        if name.is_empty() || name.len() > 512 || language.len() > 64 || event.is_empty() {
            self.skip("bad_template_update", clip(&name, 64));
            return;
        }
        if event.len() > 64
            || !event
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            self.skip("bad_template_event", clip(&event, 64));
            return;
        }
        let template_id = clip(&clean(&update.message_template_id), 64);
        let reason = update
            .reason
            .as_deref()
            .map(|r| clip(clean(r).trim(), 512))
            .filter(|r| !r.is_empty() && !r.eq_ignore_ascii_case("NONE"));
        let category = update
            .message_template_category
            .as_deref()
            .map(|c| clean(c).trim().to_ascii_lowercase())
            .filter(|c| matches!(c.as_str(), "marketing" | "utility" | "authentication"));
        let when = entry_time.map_or_else(|| fp.to_string(), |t| t.to_string());
        let key = format!("tpl:{name}:{language}:{event}:{template_id}:{when}");
        self.push(
            key,
            EventBody::Template(TemplateEvent {
                name,
                language,
                event,
                template_id,
                reason,
                category,
                at: entry_time
                    .and_then(|t| warden_core::conversations::inbound::plausible_time(t, now))
                    .unwrap_or(now),
            }),
        );
    }

    /// A template's category or quality changed (`template_changes`).
    pub(super) fn template_change(&mut self, field: &str, value: &Value, fp: &str) {
        match template_changes::parse(field, value) {
            Ok(e) => self.push(format!("tchg:{fp}"), EventBody::TemplateChange(e)),
            Err(reason) => self.skip(reason, clip(field, 64)),
        }
    }
}
