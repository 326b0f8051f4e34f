//! The platform's newer limits as the sim plays them: a number's throughput (upgrade to
//! HIGH, coexistence with the WhatsApp Business app) and a template's category and quality
//! changed by the platform, each with the webhook the platform sends.

use serde_json::{Value, json};
use warden_platform::webhook::{Change, PhoneNumberQualityUpdate};

use super::{PhoneState, Sim};
use crate::webhooks::unix_now;

impl Sim {
    /// Sets the number's throughput level (`STANDARD`/`HIGH`) and coexistence. A move to
    /// HIGH queues a `phone_number_quality_update` with `event: THROUGHPUT_UPGRADE`.
    pub fn set_throughput(&self, level: Option<String>, is_on_biz_app: Option<bool>) -> PhoneState {
        let (state, upgraded) = {
            let mut p = self.phone.lock().unwrap_or_else(|p| p.into_inner());
            let was_high = p.throughput_level == "HIGH";
            if let Some(level) = level {
                p.throughput_level = level;
            }
            if let Some(b) = is_on_biz_app {
                p.is_on_biz_app = b;
            }
            (p.clone(), !was_high && p.throughput_level == "HIGH")
        };
        if upgraded && let Some(q) = &self.webhooks {
            q.push([Change::Quality(PhoneNumberQualityUpdate {
                display_phone_number: self.config.display_phone_number.clone(),
                event: "THROUGHPUT_UPGRADE".to_owned(),
                current_limit: Some(state.messaging_limit_tier.clone()),
                old_limit: None,
            })]);
        }
        state
    }

    /// The platform re-categorises a template. `effective_at` (unix seconds) in the future:
    /// the impending notice (`correct_category`, `category_update_timestamp`), and the
    /// sim's own category changes then; otherwise the completed change
    /// (`previous_category`, `new_category`) at once. None: no such template.
    pub fn recategorise_template(
        self: &std::sync::Arc<Self>,
        name: &str,
        language: &str,
        new_category: &str,
        effective_at: Option<i64>,
    ) -> Option<Value> {
        let now = unix_now();
        let (id, previous) = {
            let reg = self.templates.read().unwrap_or_else(|p| p.into_inner());
            let t = reg.get(name, language)?;
            (t.id.clone(), t.category.clone())
        };
        let mut value = json!({
            "message_template_id": id.parse::<u64>().map(Value::from).unwrap_or(Value::String(id.clone())),
            "message_template_name": name,
            "message_template_language": language,
        });
        match effective_at.filter(|&at| at > now) {
            Some(at) => {
                value["correct_category"] = json!(new_category);
                value["new_category"] = json!(previous);
                value["category_update_timestamp"] = json!(at);
                let sim = std::sync::Arc::clone(self);
                let (name, language, category) = (
                    name.to_owned(),
                    language.to_owned(),
                    new_category.to_owned(),
                );
                let wait = std::time::Duration::from_secs(u64::try_from(at - now).unwrap_or(0));
                self.runtime.spawn(async move {
                    tokio::time::sleep(wait).await;
                    sim.set_category(&name, &language, &category);
                });
            }
            None => {
                value["previous_category"] = json!(previous);
                value["new_category"] = json!(new_category);
                self.set_category(name, language, new_category);
            }
        }
        if let Some(q) = &self.webhooks {
            q.push([Change::Other {
                field: "template_category_update".to_owned(),
                value: value.clone(),
            }]);
        }
        Some(value)
    }

    fn set_category(&self, name: &str, language: &str, category: &str) {
        let mut reg = self.templates.write().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = reg.get_mut(name, language) {
            t.category = category.to_owned();
        }
    }

    /// A template's quality score changes (`message_template_quality_update`).
    pub fn template_quality(
        &self,
        name: &str,
        language: &str,
        previous: &str,
        new: &str,
    ) -> Option<Value> {
        let id = {
            let reg = self.templates.read().unwrap_or_else(|p| p.into_inner());
            reg.get(name, language)?.id.clone()
        };
        let value = json!({
            "previous_quality_score": previous,
            "new_quality_score": new,
            "message_template_id": id.parse::<u64>().map(Value::from).unwrap_or(Value::String(id.clone())),
            "message_template_name": name,
            "message_template_language": language,
        });
        if let Some(q) = &self.webhooks {
            q.push([Change::Other {
                field: "message_template_quality_update".to_owned(),
                value: value.clone(),
            }]);
        }
        Some(value)
    }
}
