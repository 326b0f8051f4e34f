//! A business number's throughput (messages per second), from what the platform said:
//! 80 mps by default, 1,000 mps once upgraded (`phone_number_quality_update` with
//! `event: THROUGHPUT_UPGRADE`, or `throughput.level: HIGH` on the number), and a fixed
//! 20 mps for a number in coexistence with the WhatsApp Business app (`is_on_biz_app`).
//! Nothing known from the platform: the operator's `RATE_LIMIT_MPS` (default 80).

use serde::Serialize;

/// The platform's default per number.
pub const DEFAULT_MPS: u32 = 80;
/// After an automatic throughput upgrade.
pub const HIGH_MPS: u32 = 1000;
/// A number used with both the WhatsApp Business app and the API.
pub const COEXISTENCE_MPS: u32 = 20;

/// The `phone_number_quality_update` event that raises a number to [`HIGH_MPS`].
pub const UPGRADE_EVENT: &str = "THROUGHPUT_UPGRADE";

/// What the platform said about a number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NumberThroughput {
    /// Upgraded to high throughput.
    pub high: bool,
    /// In coexistence with the WhatsApp Business app.
    pub coexistence: bool,
}

/// Where a capacity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacitySource {
    /// Nothing known from the platform: `RATE_LIMIT_MPS`.
    Setting,
    /// The platform's default per number.
    PlatformDefault,
    /// A throughput upgrade.
    ThroughputUpgrade,
    /// Coexistence with the WhatsApp Business app.
    Coexistence,
}

impl CapacitySource {
    /// Its stored / reported spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            CapacitySource::Setting => "setting",
            CapacitySource::PlatformDefault => "platform_default",
            CapacitySource::ThroughputUpgrade => "throughput_upgrade",
            CapacitySource::Coexistence => "coexistence",
        }
    }
}

/// The capacity of a number and where it came from. Coexistence caps whatever else is
/// known (the platform fixes it at 20 mps).
pub fn capacity(known: Option<NumberThroughput>, setting_mps: u32) -> (u32, CapacitySource) {
    match known {
        None => (setting_mps.max(1), CapacitySource::Setting),
        Some(n) if n.coexistence => (COEXISTENCE_MPS, CapacitySource::Coexistence),
        Some(n) if n.high => (HIGH_MPS, CapacitySource::ThroughputUpgrade),
        Some(_) => (DEFAULT_MPS, CapacitySource::PlatformDefault),
    }
}

/// Is this `phone_number_quality_update` event a throughput upgrade?
pub fn is_upgrade_event(event: &str) -> bool {
    event.trim().eq_ignore_ascii_case(UPGRADE_EVENT)
}

/// Is this `throughput.level` of a number read from the platform the high level?
pub fn is_high_level(level: &str) -> bool {
    level.trim().eq_ignore_ascii_case("HIGH")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn capacity_follows_the_number() {
        assert_eq!(capacity(None, 80), (80, CapacitySource::Setting));
        assert_eq!(capacity(None, 0), (1, CapacitySource::Setting));
        let n = |high, coexistence| Some(NumberThroughput { high, coexistence });
        assert_eq!(
            capacity(n(false, false), 500),
            (80, CapacitySource::PlatformDefault)
        );
        assert_eq!(
            capacity(n(true, false), 80),
            (1000, CapacitySource::ThroughputUpgrade)
        );
        assert_eq!(
            capacity(n(true, true), 80),
            (20, CapacitySource::Coexistence)
        );
        assert!(is_upgrade_event("THROUGHPUT_UPGRADE"));
        assert!(is_upgrade_event(" throughput_upgrade "));
        assert!(!is_upgrade_event("UPGRADE"));
        assert!(is_high_level("HIGH") && !is_high_level("STANDARD"));
    }

    proptest! {
        #[test]
        fn coexistence_always_caps_at_twenty(high: bool, setting in 0u32..100_000) {
            let (mps, source) = capacity(Some(NumberThroughput { high, coexistence: true }), setting);
            prop_assert_eq!(mps, COEXISTENCE_MPS);
            prop_assert_eq!(source, CapacitySource::Coexistence);
        }
    }
}
