//! `template_category_update` and `message_template_quality_update`: what the platform
//! changes in a template after approval, apart from its status (applied by
//! `warden_core::templates::changes`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{MAX_ID_LEN, clean, clip, value_int, value_text};

/// A template change other than its status.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateChangeEvent {
    pub name: String,
    pub language: String,
    pub change: TemplateChange,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TemplateChange {
    /// Lower-case categories. `effective_at` None: already in effect (a completed change).
    Category {
        new_category: String,
        previous_category: Option<String>,
        effective_at: Option<DateTime<Utc>>,
    },
    /// The platform's quality score (GREEN, YELLOW, RED, UNKNOWN).
    Quality {
        score: String,
        previous: Option<String>,
    },
}

pub const FIELD_CATEGORY: &str = "template_category_update";
pub const FIELD_QUALITY: &str = "message_template_quality_update";

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .map(value_text)
        .map(|s| clip(&clean(s.trim()), MAX_ID_LEN))
        .filter(|s| !s.is_empty())
}

fn category(v: &Value, key: &str) -> Option<String> {
    text(v, key)
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| matches!(c.as_str(), "marketing" | "utility" | "authentication"))
}

/// Parse one change of `field` (one of the two above). Err: why it is skipped.
pub fn parse(field: &str, value: &Value) -> Result<TemplateChangeEvent, &'static str> {
    let name = text(value, "message_template_name").ok_or("template_change_without_name")?;
    let language = text(value, "message_template_language").unwrap_or_default();
    let change = match field {
        FIELD_CATEGORY => {
            // Impending: `correct_category` is the one to come, at `category_update_timestamp`;
            // `new_category` is then the current one. Completed: `new_category` is in effect.
            if let Some(correct) = category(value, "correct_category") {
                let at = value
                    .get("category_update_timestamp")
                    .and_then(value_int)
                    .and_then(|ts| DateTime::<Utc>::from_timestamp(ts, 0));
                TemplateChange::Category {
                    new_category: correct,
                    previous_category: category(value, "new_category"),
                    effective_at: at,
                }
            } else {
                TemplateChange::Category {
                    new_category: category(value, "new_category")
                        .ok_or("template_category_without_category")?,
                    previous_category: category(value, "previous_category"),
                    effective_at: None,
                }
            }
        }
        FIELD_QUALITY => TemplateChange::Quality {
            score: text(value, "new_quality_score")
                .map(|s| s.to_ascii_uppercase())
                .ok_or("template_quality_without_score")?,
            previous: text(value, "previous_quality_score").map(|s| s.to_ascii_uppercase()),
        },
        _ => return Err("unknown_field"),
    };
    Ok(TemplateChangeEvent {
        name,
        language,
        change,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn reads_impending_and_completed_category_changes_and_quality() {
        let impending = json!({"message_template_id": 1, "message_template_name": "order_update",
            "message_template_language": "en_US", "correct_category": "MARKETING",
            "new_category": "UTILITY", "category_update_timestamp": 1_900_000_000});
        let e = parse(FIELD_CATEGORY, &impending).unwrap();
        assert_eq!(e.name, "order_update");
        assert_eq!(
            e.change,
            TemplateChange::Category {
                new_category: "marketing".into(),
                previous_category: Some("utility".into()),
                effective_at: DateTime::<Utc>::from_timestamp(1_900_000_000, 0),
            }
        );
        let done = json!({"message_template_name": "order_update", "message_template_language": "en",
            "previous_category": "UTILITY", "new_category": "MARKETING"});
        assert!(matches!(
            parse(FIELD_CATEGORY, &done).unwrap().change,
            TemplateChange::Category { ref new_category, effective_at: None, .. } if new_category == "marketing"
        ));
        let q = json!({"message_template_name": "a", "message_template_language": "en",
            "previous_quality_score": "GREEN", "new_quality_score": "yellow"});
        assert_eq!(
            parse(FIELD_QUALITY, &q).unwrap().change,
            TemplateChange::Quality {
                score: "YELLOW".into(),
                previous: Some("GREEN".into())
            }
        );
        assert!(parse(FIELD_CATEGORY, &json!({"new_category": "MARKETING"})).is_err());
        assert!(
            parse(
                FIELD_CATEGORY,
                &json!({"message_template_name": "a", "new_category": "PROMO"})
            )
            .is_err()
        );
    }

    proptest! {
        #[test]
        fn never_panics_on_any_value(name in ".{0,40}", cat in ".{0,20}", ts in proptest::option::of(any::<i64>())) {
            let v = json!({"message_template_name": name, "correct_category": cat,
                "new_category": cat, "category_update_timestamp": ts});
            let _ = parse(FIELD_CATEGORY, &v);
            let _ = parse(FIELD_QUALITY, &v);
        }
    }
}
