//! The platform's newer limits as the sim plays them: a number's throughput (upgrade to
//! HIGH, coexistence with the WhatsApp Business app, its sends per second) and a template's
//! category and quality changed by the platform in one account, each with the webhook the
//! platform sends.

use serde_json::{Value, json};
use warden_platform::webhook::{Change, PhoneNumberQualityUpdate};

use super::{Number, PhoneState, Sim};
use crate::webhooks::unix_now;

impl Sim {
    /// [`Sim::set_throughput_of`] the first number (its limit unchanged).
    pub fn set_throughput(&self, level: Option<String>, is_on_biz_app: Option<bool>) -> PhoneState {
        self.set_throughput_of(self.numbers.first(), level, is_on_biz_app, None)
    }

    /// Sets a number's throughput level (`STANDARD`/`HIGH`), coexistence, and its limit
    /// (`mps`: `Some(None)` lifts it). A move to HIGH queues a `phone_number_quality_update`
    /// with `event: THROUGHPUT_UPGRADE`.
    pub fn set_throughput_of(
        &self,
        number: &Number,
        level: Option<String>,
        is_on_biz_app: Option<bool>,
        mps: Option<Option<u32>>,
    ) -> PhoneState {
        if let Some(mps) = mps {
            number.set_throughput_mps(mps);
        }
        let (before, state) = number.update_phone(|p| {
            if let Some(level) = level {
                p.throughput_level = level;
            }
            if let Some(b) = is_on_biz_app {
                p.is_on_biz_app = b;
            }
        });
        let upgraded = before.throughput_level != "HIGH" && state.throughput_level == "HIGH";
        if upgraded && let Some(q) = &self.webhooks {
            q.push(
                number.origin,
                [Change::Quality(PhoneNumberQualityUpdate {
                    display_phone_number: number.spec.display_phone_number.clone(),
                    event: "THROUGHPUT_UPGRADE".to_owned(),
                    current_limit: Some(state.messaging_limit_tier.clone()),
                    old_limit: None,
                })],
            );
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
        let waba_id = self.first_waba().to_owned();
        self.recategorise_template_in(&waba_id, name, language, new_category, effective_at)
    }

    /// [`Sim::recategorise_template`] in business account `waba_id`.
    pub fn recategorise_template_in(
        self: &std::sync::Arc<Self>,
        waba_id: &str,
        name: &str,
        language: &str,
        new_category: &str,
        effective_at: Option<i64>,
    ) -> Option<Value> {
        let now = unix_now();
        let (id, previous) = {
            let reg = self
                .registry(waba_id)?
                .read()
                .unwrap_or_else(|p| p.into_inner());
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
                let (waba, name, language, category) = (
                    waba_id.to_owned(),
                    name.to_owned(),
                    language.to_owned(),
                    new_category.to_owned(),
                );
                let wait = std::time::Duration::from_secs(u64::try_from(at - now).unwrap_or(0));
                self.runtime.spawn(async move {
                    tokio::time::sleep(wait).await;
                    sim.set_category(&waba, &name, &language, &category);
                });
            }
            None => {
                value["previous_category"] = json!(previous);
                value["new_category"] = json!(new_category);
                self.set_category(waba_id, name, language, new_category);
            }
        }
        if let Some(q) = &self.webhooks {
            q.push(
                self.waba_origin(waba_id),
                [Change::Other {
                    field: "template_category_update".to_owned(),
                    value: value.clone(),
                }],
            );
        }
        Some(value)
    }

    fn set_category(&self, waba_id: &str, name: &str, language: &str, category: &str) {
        let Some(registry) = self.registry(waba_id) else {
            return;
        };
        let mut reg = registry.write().unwrap_or_else(|p| p.into_inner());
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
        self.template_quality_in(self.first_waba(), name, language, previous, new)
    }

    /// [`Sim::template_quality`] in business account `waba_id`.
    pub fn template_quality_in(
        &self,
        waba_id: &str,
        name: &str,
        language: &str,
        previous: &str,
        new: &str,
    ) -> Option<Value> {
        let id = {
            let reg = self
                .registry(waba_id)?
                .read()
                .unwrap_or_else(|p| p.into_inner());
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
            q.push(
                self.waba_origin(waba_id),
                [Change::Other {
                    field: "message_template_quality_update".to_owned(),
                    value: value.clone(),
                }],
            );
        }
        Some(value)
    }
}
