//! Templates per business account: which registry an account has, and the platform's
//! decisions on a template (approval after the delay, or a scripted status), each with its
//! `message_template_status_update` sent under that account.

use std::sync::{Arc, RwLock};

use warden_platform::webhook::{Change, TemplateStatusUpdate};

use super::Sim;
use crate::templates::{Registry, Template};

impl Sim {
    /// The templates of business account `waba_id`; `None` for an account the sim does not
    /// serve.
    pub fn registry(&self, waba_id: &str) -> Option<&RwLock<Registry>> {
        if waba_id == self.numbers.first().waba_id() {
            return Some(&self.templates);
        }
        self.more_templates.get(waba_id)
    }

    /// The first number's account (the control endpoints' default).
    pub fn first_waba(&self) -> &str {
        self.numbers.first().waba_id()
    }

    /// The webhook origin of an account's own events (template decisions): its first number.
    pub(crate) fn waba_origin(&self, waba_id: &str) -> usize {
        self.numbers.of_waba(waba_id).next().map_or(0, |n| n.origin)
    }

    /// [`Sim::decide_in`] the first number's account.
    pub fn decide(
        &self,
        name: &str,
        language: &str,
        status: &str,
        reason: Option<String>,
    ) -> Option<Template> {
        self.decide_in(self.first_waba(), name, language, status, reason)
    }

    /// Sets a template's status and queues its `message_template_status_update`.
    /// `None` when the account has no such template.
    pub fn decide_in(
        &self,
        waba_id: &str,
        name: &str,
        language: &str,
        status: &str,
        reason: Option<String>,
    ) -> Option<Template> {
        self.decide_if(waba_id, name, language, status, reason, None)
    }

    /// Like [`Sim::decide_in`], but only when the current status is `only_from` (checked
    /// under the same lock, so a concurrent manual decision is never overwritten).
    fn decide_if(
        &self,
        waba_id: &str,
        name: &str,
        language: &str,
        status: &str,
        reason: Option<String>,
        only_from: Option<&str>,
    ) -> Option<Template> {
        let t = {
            let mut reg = self
                .registry(waba_id)?
                .write()
                .unwrap_or_else(|p| p.into_inner());
            let t = reg.get_mut(name, language)?;
            if only_from.is_some_and(|from| t.status != from) {
                return None;
            }
            t.status = status.to_owned();
            t.reason = match status {
                "APPROVED" => None,
                _ => reason.clone(),
            };
            t.clone()
        };
        self.template_webhook(waba_id, &t, reason.or_else(|| Some("NONE".to_owned())));
        Some(t)
    }

    fn template_webhook(&self, waba_id: &str, t: &Template, reason: Option<String>) {
        if let Some(q) = &self.webhooks {
            q.push(
                self.waba_origin(waba_id),
                [Change::TemplateStatus(TemplateStatusUpdate {
                    event: t.status.clone(),
                    message_template_id: t.id.clone(),
                    message_template_name: t.name.clone(),
                    message_template_language: t.language.clone(),
                    reason,
                    message_template_category: Some(t.category.clone()),
                })],
            );
        }
    }

    /// Approves the account's template after the configured delay, unless something
    /// decided it meanwhile (a manual REJECTED must stand).
    pub fn schedule_approval_in(self: &Arc<Self>, waba_id: String, name: String, language: String) {
        let sim = Arc::clone(self);
        let delay = self.config.approval_delay;
        self.runtime.spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if sim
                .decide_if(&waba_id, &name, &language, "APPROVED", None, Some("PENDING"))
                .is_some()
            {
                tracing::info!(template = %name, language = %language, waba_id = %waba_id, "template approved");
            }
        });
    }
}
