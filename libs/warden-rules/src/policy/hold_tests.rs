//! Quiet hours' `action: deny | hold` and `timezone: customer` (docs/compliance.md, Platform
//! limits).

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::quiet_hours::format_clock;
use super::*;
use crate::compliance::{ComplianceInput, ReasonCode, decide};
use crate::kinds::Category;
use crate::phone::canonicalize;

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn file(extra: &str) -> String {
    format!(
        "version: 1\npolicies:\n  - id: night\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"08:00\"\n    timezone: UTC\n{extra}"
    )
}

fn quiet(set: &PolicySet) -> &QuietHours {
    match set.get("night").unwrap().rule() {
        Rule::QuietHours(q) => q,
        other => panic!("{other:?}"),
    }
}

#[test]
fn action_defaults_to_deny_and_parses_hold() {
    let deny = PolicySet::from_yaml(&file("")).unwrap();
    assert_eq!(quiet(&deny).action(), QuietAction::Deny);
    let explicit = PolicySet::from_yaml(&file("    action: deny\n")).unwrap();
    assert_eq!(quiet(&explicit).action(), QuietAction::Deny);
    let hold = PolicySet::from_yaml(&file("    action: hold\n")).unwrap();
    assert!(quiet(&hold).holds());
    // The stored JSON keeps the action and reads back the same.
    let policy = hold.get("night").unwrap();
    assert_eq!(policy.to_json()["action"], "hold");
    assert_eq!(Policy::from_json(&policy.to_json()).unwrap(), *policy);
    assert!(deny.get("night").unwrap().to_json().get("action").is_none());
}

#[test]
fn bad_action_or_unknown_field_stops_startup() {
    let e = PolicySet::from_yaml(&file("    action: delay\n")).unwrap_err();
    assert_eq!(e.policy_id(), Some("night"));
    assert!(
        e.to_string().contains("`action` must be deny or hold"),
        "{e}"
    );
    let e = PolicySet::from_yaml(&file("    hold_for: 1h\n")).unwrap_err();
    assert!(e.to_string().contains("unknown field `hold_for`"), "{e}");
    // `action` belongs to quiet_hours only.
    let e = PolicySet::from_yaml(
        "version: 1\npolicies:\n  - id: cap\n    type: frequency_limit\n    max: 2\n    action: hold\n",
    )
    .unwrap_err();
    assert!(e.to_string().contains("belongs to type quiet_hours"), "{e}");
}

#[test]
fn customer_timezone_reads_the_numbers_country() {
    let set = PolicySet::from_yaml(
        "version: 1\npolicies:\n  - id: night\n    type: quiet_hours\n    start: \"21:00\"\n    end: \"08:00\"\n    timezone: customer\n    action: hold\n",
    )
    .unwrap();
    let q = quiet(&set);
    assert_eq!(q.zone(), QuietZone::Customer);
    assert_eq!(set.get("night").unwrap().to_json()["timezone"], "customer");
    let jakarta = canonicalize("+6281234567890").unwrap(); // UTC+7
    let london = canonicalize("+447911123456").unwrap(); // UTC+0 in January
    let at = utc(2026, 1, 10, 15, 0); // 22:00 Jakarta, 15:00 London
    assert!(q.contains_for(&jakarta, at));
    assert!(!q.contains_for(&london, at));
    // Ends at 08:00 Jakarta = 01:00 UTC the next day.
    assert_eq!(q.ends_after(&jakarta, at), Some(utc(2026, 1, 11, 1, 0)));
    assert_eq!(q.ends_after(&london, at), None);
}

#[test]
fn hold_decision_carries_the_end_of_quiet_hours() {
    let set = PolicySet::from_yaml(&file("    action: hold\n")).unwrap();
    let phone = canonicalize("+447911123456").unwrap();
    let input = ComplianceInput {
        category: Category::Utility,
        opted_out_marketing: false,
        opted_out_utility: false,
        tags: vec![],
        phone,
        last_inbound_at: None,
        recent_count: 0,
        now: utc(2026, 1, 10, 23, 30),
    };
    let d = decide(&set, &input);
    assert_eq!(d.reason_code, ReasonCode::PolicyRestriction);
    assert_eq!(d.retry_at, Some(utc(2026, 1, 11, 8, 0)));
    assert!(d.hold);
    assert_eq!(d.retry_after_secs(input.now), Some(8 * 3600 + 30 * 60));
    // deny: the same retry time is reported, but nothing is held.
    let deny = decide(&PolicySet::from_yaml(&file("")).unwrap(), &input);
    assert_eq!(deny.retry_at, Some(utc(2026, 1, 11, 8, 0)));
    assert!(!deny.hold);
    // Never-ending quiet hours cannot be waited out: refused, not held.
    let always = PolicySet::from_yaml(
        "version: 1\npolicies:\n  - id: night\n    type: quiet_hours\n    start: \"00:00\"\n    end: \"24:00\"\n    timezone: UTC\n    action: hold\n",
    )
    .unwrap();
    let d = decide(&always, &input);
    assert!(!d.allowed && !d.hold && d.retry_at.is_none());
}

#[test]
fn end_of_day_and_daylight_saving() {
    let phone = canonicalize("+12025550123").unwrap();
    let q = QuietHours::new("22:00", "24:00", "UTC").unwrap();
    assert_eq!(
        q.ends_after(&phone, utc(2026, 3, 1, 23, 15)),
        Some(utc(2026, 3, 2, 0, 0))
    );
    // New York, 2025-03-09: 02:00 EST jumps to 03:00 EDT; an end at 02:30 does not exist
    // that night and the quiet period ends at 03:00 EDT (07:00 UTC).
    let q = QuietHours::new("22:00", "02:30", "America/New_York").unwrap();
    assert_eq!(
        q.ends_after(&phone, utc(2025, 3, 9, 5, 0)),
        Some(utc(2025, 3, 9, 7, 0))
    );
}

proptest! {
    #[test]
    fn hold_ends_at_the_first_non_quiet_minute(
        start in 0u16..1440,
        end in 0u16..=1440,
        secs in 0i64..(3 * 365 * 86_400),
        zone in prop::sample::select(vec!["UTC", "Asia/Kathmandu", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Pacific/Chatham"]),
    ) {
        let q = QuietHours::new(&format_clock(start), &format_clock(end), zone).unwrap();
        let phone = canonicalize("+447911123456").unwrap();
        let at = utc(2024, 1, 1, 0, 0) + TimeDelta::seconds(secs);
        match q.ends_after(&phone, at) {
            None => prop_assert!(!q.contains(at) || (0..1440).all(|m| q.contains_minute(m))),
            Some(until) => {
                prop_assert!(q.contains(at));
                prop_assert!(until > at);
                prop_assert!(!q.contains(until));
                prop_assert!(until - at <= TimeDelta::hours(26));
                // Every whole minute before it is still quiet.
                let mut m = at + TimeDelta::minutes(1);
                while m < until - TimeDelta::minutes(1) {
                    prop_assert!(q.contains(m), "{m} is not quiet but ends_after said {until}");
                    m += TimeDelta::minutes(7);
                }
                let _ = zone.parse::<Tz>().unwrap();
            }
        }
    }
}

#[test]
fn a_clock_set_back_ends_the_hold_when_local_time_leaves_the_quiet_period() {
    // New York, 2026-11-01: 01:59:59 EDT (05:59:59 UTC) is followed by 01:00 EST.
    let q = QuietHours::new("01:07", "02:00", "America/New_York").unwrap();
    let phone = canonicalize("+447911123456").unwrap();
    let at = utc(2026, 11, 1, 5, 7); // 01:07 EDT: quiet
    assert!(q.contains(at));
    // 01:00 EST (06:00 UTC) is before 01:07: not quiet, so the hold ends there, not at
    // 02:00 EST (07:00 UTC).
    assert_eq!(q.ends_after(&phone, at), Some(utc(2026, 11, 1, 6, 0)));
}
