//! Quiet hours: a local clock interval, whose zone is fixed or the customer's, that denies
//! or holds messages.

use chrono::{DateTime, Timelike, Utc};
use chrono_tz::Tz;

use super::PolicyReason;
use crate::phone::PhoneNumber;

/// Quiet hours: local clock times in a time zone during which nothing is sent.
///
/// The interval is `start` inclusive to `end` exclusive, at minute resolution.
/// When `start > end` it crosses midnight (20:00 -> 08:00 is 20:00..24:00 and
/// 00:00..08:00). When `start == end` it is empty: quiet hours never apply (an
/// all-day block is written 00:00 -> 24:00, or as a `country_block`/disabled type).
/// Times are local wall-clock times, so daylight-saving changes move them in UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuietHours {
    pub(super) start: u16,
    pub(super) end: u16,
    timezone: QuietZone,
    pub(super) action: QuietAction,
}

/// Whose clock quiet hours are read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuietZone {
    /// One IANA zone for every customer.
    Fixed(Tz),
    /// `timezone: customer`: the zone of the customer's country ([`crate::zones`]).
    Customer,
}

/// What quiet hours do to a message that falls inside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QuietAction {
    /// Refuse it (single sends, scheduled and campaign messages alike).
    #[default]
    Deny,
    /// Scheduled and campaign messages wait until the quiet period ends (then are checked
    /// again); single sends are still refused, with `retry_after_secs`.
    Hold,
}

impl QuietAction {
    /// As written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            QuietAction::Deny => "deny",
            QuietAction::Hold => "hold",
        }
    }
}

pub(super) const MINUTES_PER_DAY: u16 = 24 * 60;

impl QuietHours {
    /// Builds quiet hours from `HH:MM` texts and an IANA zone name (or `customer`).
    /// `end` may be `24:00` (end of day); `start` may not. The action is `deny`.
    pub fn new(start: &str, end: &str, timezone: &str) -> Result<Self, PolicyReason> {
        let timezone = if timezone.trim() == "customer" {
            QuietZone::Customer
        } else {
            QuietZone::Fixed(parse_timezone(timezone)?)
        };
        Ok(Self {
            start: parse_clock("start", start, false)?,
            end: parse_clock("end", end, true)?,
            timezone,
            action: QuietAction::Deny,
        })
    }

    /// The same quiet hours with `action`.
    pub fn with_action(mut self, action: QuietAction) -> Self {
        self.action = action;
        self
    }

    /// Deny or hold.
    pub fn action(&self) -> QuietAction {
        self.action
    }

    /// True for `action: hold`.
    pub fn holds(&self) -> bool {
        self.action == QuietAction::Hold
    }

    /// Whose clock is read.
    pub fn zone(&self) -> QuietZone {
        self.timezone
    }

    /// The zone the clock times are read in for `phone`.
    pub fn zone_for(&self, phone: &PhoneNumber) -> Tz {
        match self.timezone {
            QuietZone::Fixed(tz) => tz,
            QuietZone::Customer => crate::zones::customer_zone(phone),
        }
    }

    pub(super) fn zone_name(&self) -> &'static str {
        match self.timezone {
            QuietZone::Fixed(tz) => tz.name(),
            QuietZone::Customer => "customer",
        }
    }

    /// True when `at` falls inside the quiet interval on `phone`'s clock.
    pub fn contains_for(&self, phone: &PhoneNumber, at: DateTime<Utc>) -> bool {
        self.contains_minute(minute_in(self.zone_for(phone), at))
    }

    /// When the quiet period that contains `at` ends on `phone`'s clock (the first minute
    /// outside it, at `end`). `None` when `at` is not quiet or quiet hours never end
    /// (00:00-24:00). A local `end` skipped by a daylight-saving jump ends at the first
    /// local minute after it.
    pub fn ends_after(&self, phone: &PhoneNumber, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        use chrono::{Duration, NaiveTime, TimeZone};
        let tz = self.zone_for(phone);
        if !self.contains_for(phone, at) {
            return None;
        }
        let local = at.with_timezone(&tz).naive_local();
        let (end_day_offset, end_minute) = if self.end == MINUTES_PER_DAY {
            (1, 0)
        } else {
            (0, self.end)
        };
        let end_clock =
            NaiveTime::from_hms_opt(u32::from(end_minute / 60), u32::from(end_minute % 60), 0)?;
        // The next local `end` after now: today's, or tomorrow's when today's has passed.
        let mut candidate = (local.date() + Duration::days(end_day_offset)).and_time(end_clock);
        if candidate <= local {
            candidate += Duration::days(1);
        }
        // Several steps only around daylight-saving changes or an interval whose end
        // comes round again inside it (never for a valid interval); bounded anyway.
        for _ in 0..4 {
            let mut probe = candidate;
            // A local time that happens twice (clocks set back): the first one after `at`.
            let instant = loop {
                let found: Vec<DateTime<Utc>> = match tz.from_local_datetime(&probe) {
                    chrono::LocalResult::Single(t) => vec![t.with_timezone(&Utc)],
                    chrono::LocalResult::Ambiguous(a, b) => {
                        vec![a.with_timezone(&Utc), b.with_timezone(&Utc)]
                    }
                    // Skipped by a jump forward: the next local minute.
                    chrono::LocalResult::None => {
                        probe += Duration::minutes(1);
                        continue;
                    }
                };
                break found.into_iter().find(|t| *t > at);
            };
            if let Some(instant) = instant
                && !self.contains_for(phone, instant)
            {
                return Some(self.first_quiet_gap(phone, at, instant).unwrap_or(instant));
            }
            candidate += Duration::days(1);
        }
        None
    }

    /// A clock set back between `at` and `until` can drop the local time out of the quiet
    /// period before `end` comes (01:07-02:00 quiet, 01:59 EDT becomes 01:00 EST): the first
    /// whole minute after `at` that is not quiet, when there is one before `until`. Only
    /// searched when the zone's offset changes in between (twice a year at most).
    fn first_quiet_gap(
        &self,
        phone: &PhoneNumber,
        at: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        use chrono::{Duration, Offset, TimeZone, Timelike};
        let tz = self.zone_for(phone);
        let offset = |t: DateTime<Utc>| tz.offset_from_utc_datetime(&t.naive_utc()).fix();
        if offset(at) == offset(until) {
            return None;
        }
        let mut t = at.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        while t < until {
            if !self.contains_for(phone, t) {
                return Some(t);
            }
            t += Duration::minutes(1);
        }
        None
    }

    /// Start as `HH:MM`.
    pub fn start(&self) -> String {
        format_clock(self.start)
    }

    /// End as `HH:MM` (`24:00` for end of day).
    pub fn end(&self) -> String {
        format_clock(self.end)
    }

    /// The time zone the clock times are in (`None` for `timezone: customer`).
    pub fn timezone(&self) -> Option<Tz> {
        match self.timezone {
            QuietZone::Fixed(tz) => Some(tz),
            QuietZone::Customer => None,
        }
    }

    /// True when `minute_of_day` (0..1440, local) falls inside the quiet interval.
    pub fn contains_minute(&self, minute_of_day: u16) -> bool {
        let m = minute_of_day;
        if self.start == self.end {
            false
        } else if self.start < self.end {
            self.start <= m && m < self.end
        } else {
            m >= self.start || m < self.end
        }
    }

    /// The local minute of day of `at` in this zone (UTC for `timezone: customer`; use
    /// [`QuietHours::contains_for`] with a phone).
    pub fn local_minute(&self, at: DateTime<Utc>) -> u16 {
        minute_in(self.timezone().unwrap_or(Tz::UTC), at)
    }

    /// True when `at` falls inside the quiet interval, in local time (UTC for
    /// `timezone: customer`).
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.contains_minute(self.local_minute(at))
    }

    /// `20:00-08:00 Asia/Jakarta`, for explanations.
    pub fn describe(&self) -> String {
        format!("{}-{} {}", self.start(), self.end(), self.zone_name())
    }
}

pub(super) fn minute_in(tz: Tz, at: DateTime<Utc>) -> u16 {
    let local = at.with_timezone(&tz);
    (local.hour() * 60 + local.minute()) as u16
}

fn parse_clock(field: &str, text: &str, allow_24: bool) -> Result<u16, PolicyReason> {
    let bad = || PolicyReason::Clock {
        field: field.to_string(),
        text: text.to_string(),
    };
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let digits = |s: &str, min: usize, max: usize| {
        (min..=max).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 1, 2) || !digits(m, 2, 2) {
        return Err(bad());
    }
    let (h, m): (u16, u16) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    match (h, m) {
        (24, 0) if allow_24 => Ok(MINUTES_PER_DAY),
        (0..=23, 0..=59) => Ok(h * 60 + m),
        _ => Err(bad()),
    }
}

pub(super) fn format_clock(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

fn parse_timezone(name: &str) -> Result<Tz, PolicyReason> {
    name.trim()
        .parse::<Tz>()
        .map_err(|_| PolicyReason::Timezone {
            name: name.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeDelta, TimeZone};
    use proptest::prelude::*;

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn quiet_hours_across_midnight() {
        let q = QuietHours::new("20:00", "08:00", "UTC").unwrap();
        assert!(q.contains(utc(2025, 1, 1, 20, 0)));
        assert!(q.contains(utc(2025, 1, 1, 23, 59)));
        assert!(q.contains(utc(2025, 1, 2, 0, 0)));
        assert!(q.contains(utc(2025, 1, 2, 7, 59)));
        assert!(!q.contains(utc(2025, 1, 2, 8, 0)), "end is exclusive");
        assert!(!q.contains(utc(2025, 1, 2, 19, 59)));
        let day = QuietHours::new("09:00", "17:00", "UTC").unwrap();
        assert!(day.contains(utc(2025, 1, 1, 9, 0)));
        assert!(!day.contains(utc(2025, 1, 1, 17, 0)));
        assert!(!day.contains(utc(2025, 1, 1, 8, 59)));
        let never = QuietHours::new("10:00", "10:00", "UTC").unwrap();
        assert!((0..MINUTES_PER_DAY).all(|m| !never.contains_minute(m)));
        let always = QuietHours::new("00:00", "24:00", "UTC").unwrap();
        assert!((0..MINUTES_PER_DAY).all(|m| always.contains_minute(m)));
    }

    #[test]
    fn quiet_hours_in_kathmandu() {
        // UTC+05:45 all year.
        let q = QuietHours::new("11:00", "13:00", "Asia/Kathmandu").unwrap();
        assert!(!q.contains(utc(2025, 6, 1, 5, 14)), "10:59 local");
        assert!(q.contains(utc(2025, 6, 1, 5, 15)), "11:00 local");
        assert!(q.contains(utc(2025, 6, 1, 7, 14)), "12:59 local");
        assert!(!q.contains(utc(2025, 6, 1, 7, 15)), "13:00 local");
        // The acceptance scenario: a +/-1h window around the UTC clock never contains
        // the Kathmandu clock, at any minute of the day.
        for minute in 0..(24 * 60) {
            let now = utc(2025, 6, 1, 0, 0) + TimeDelta::minutes(minute);
            let start = format_clock(((minute + 1440 - 60) % 1440) as u16);
            let end = format_clock(((minute + 60) % 1440) as u16);
            let here = QuietHours::new(&start, &end, "UTC").unwrap();
            let there = QuietHours::new(&start, &end, "Asia/Kathmandu").unwrap();
            assert!(here.contains(now), "{start}-{end} at minute {minute}");
            assert!(
                !there.contains(now),
                "{start}-{end} Kathmandu at minute {minute}"
            );
        }
    }

    #[test]
    fn quiet_hours_follow_daylight_saving() {
        let q = QuietHours::new("22:00", "07:00", "America/New_York").unwrap();
        // 2025-03-09: clocks jump 02:00 EST -> 03:00 EDT.
        assert!(q.contains(utc(2025, 3, 9, 6, 30)), "01:30 EST");
        assert!(
            q.contains(utc(2025, 3, 9, 7, 30)),
            "03:30 EDT, after the gap"
        );
        assert!(
            !q.contains(utc(2025, 3, 9, 11, 30)),
            "07:30 EDT (06:30 in EST would be quiet)"
        );
        assert!(
            q.contains(utc(2025, 3, 8, 11, 30)),
            "06:30 EST the day before"
        );
        // 2025-11-02: 02:00 EDT -> 01:00 EST (01:xx happens twice; both quiet).
        assert!(q.contains(utc(2025, 11, 2, 5, 30)), "01:30 EDT");
        assert!(q.contains(utc(2025, 11, 2, 6, 30)), "01:30 EST");
        let london = QuietHours::new("09:00", "10:00", "Europe/London").unwrap();
        assert!(london.contains(utc(2025, 7, 1, 8, 30)), "09:30 BST");
        assert!(!london.contains(utc(2025, 1, 1, 8, 30)), "08:30 GMT");
        assert!(london.contains(utc(2025, 1, 1, 9, 30)), "09:30 GMT");
    }

    fn brute_force(start: u16, end: u16, minute: u16) -> bool {
        // Walk the clock from start to end (exclusive), wrapping at midnight.
        if start == end {
            return false;
        }
        let mut m = start;
        loop {
            if m == minute {
                return true;
            }
            m = (m + 1) % MINUTES_PER_DAY;
            if m == end % MINUTES_PER_DAY {
                return false;
            }
        }
    }

    proptest! {
        #[test]
        fn quiet_hours_match_brute_force(start in 0u16..1440, end in 0u16..=1440, minute in 0u16..1440) {
            let q = QuietHours::new(&format_clock(start), &format_clock(end), "UTC").unwrap();
            let expected = if end == MINUTES_PER_DAY {
                minute >= start
            } else {
                brute_force(start, end, minute)
            };
            prop_assert_eq!(q.contains_minute(minute), expected);
        }

        #[test]
        fn quiet_hours_use_local_minute(
            start in 0u16..1440,
            end in 0u16..1440,
            secs in 0i64..(10 * 365 * 86_400),
            zone in prop::sample::select(vec!["UTC", "Asia/Kathmandu", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Jakarta", "Pacific/Chatham"]),
        ) {
            let q = QuietHours::new(&format_clock(start), &format_clock(end), zone).unwrap();
            let at = utc(2020, 1, 1, 0, 0) + TimeDelta::seconds(secs);
            let local = at.with_timezone(&zone.parse::<Tz>().unwrap());
            let minute = (local.hour() * 60 + local.minute()) as u16;
            prop_assert_eq!(q.contains(at), brute_force(start, end, minute));
        }
    }
}
