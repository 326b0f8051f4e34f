//! Phone numbers and their quality (`GET /{waba-id}/phone_numbers`,
//! `GET /{phone-number-id}?fields=...`).

use crate::lenient;
use serde::{Deserialize, Serialize};

/// Fields Warden asks for when it reads a number's quality.
pub const QUALITY_FIELDS: &str = "id,display_phone_number,verified_name,quality_rating,messaging_limit_tier,throughput,is_on_biz_app,name_status";

/// A business phone number. Every field but `id` is optional because the platform
/// only returns the fields that were asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhoneNumber {
    #[serde(default, deserialize_with = "lenient::string")]
    pub id: String,
    #[serde(
        default,
        deserialize_with = "lenient::opt_string",
        skip_serializing_if = "Option::is_none"
    )]
    pub display_phone_number: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_name: Option<String>,
    /// GREEN, YELLOW, RED, NA, UNKNOWN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_rating: Option<String>,
    /// TIER_50, TIER_250, TIER_1K, TIER_2K, TIER_10K, TIER_100K, TIER_UNLIMITED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_limit_tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<Throughput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_verification_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_type: Option<String>,
    /// The review of the number's display name: APPROVED, PENDING_REVIEW, DECLINED, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name_status: Option<String>,
    /// True for a number in coexistence with the WhatsApp Business app (fixed 20 mps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_on_biz_app: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// STANDARD (80 mps) or HIGH (up to 1,000 mps).
    #[serde(default)]
    pub level: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_partial_fields() {
        let p: PhoneNumber = serde_json::from_value(json!({
            "quality_rating": "GREEN", "messaging_limit_tier": "TIER_1K",
            "throughput": {"level": "STANDARD"}, "id": 100000000000001u64
        }))
        .unwrap();
        assert_eq!(p.id, "100000000000001");
        assert_eq!(p.throughput.unwrap().level, "STANDARD");
        assert_eq!(p.verified_name, None);
    }
}
