//! The 24-hour customer care window.
//!
//! The window opens at the customer's inbound message (its own platform timestamp)
//! and is open while `now < last_inbound_at + 24h`: exactly 24 hours later it is
//! closed. Only customer messages open it; callers pass the last inbound time only.

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;

/// How long a customer message keeps the window open.
pub const CARE_WINDOW: TimeDelta = TimeDelta::hours(24);

/// "Expiring soon" means the window closes within this much time.
pub const EXPIRING_SOON: TimeDelta = TimeDelta::hours(2);

/// When the window opened by `last_inbound_at` closes; `None` when there was no
/// inbound message (no window). Saturates at the latest representable time.
pub fn expires_at(last_inbound_at: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    last_inbound_at.map(|t| {
        t.checked_add_signed(CARE_WINDOW)
            .unwrap_or(DateTime::<Utc>::MAX_UTC)
    })
}

/// How far in the future an inbound timestamp may be (clock skew) and still count.
pub const MAX_FUTURE_SKEW: TimeDelta = TimeDelta::minutes(5);

/// True when an inbound timestamp can be real (docs/compliance.md): after 2010 and at most
/// [`MAX_FUTURE_SKEW`] after `now`. Compliance decisions ignore any other as if there
/// were no inbound message, so a forged or broken timestamp never opens a window.
pub fn plausible_inbound(at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    let floor =
        DateTime::<Utc>::from_timestamp(1_262_304_000, 0).unwrap_or(DateTime::<Utc>::MIN_UTC); // 2010-01-01
    at >= floor && at <= now + MAX_FUTURE_SKEW
}

/// The last inbound time a decision may rely on: `None` when it is implausible.
pub fn usable_inbound(
    last_inbound_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    last_inbound_at.filter(|t| plausible_inbound(*t, now))
}

/// True while `now < last_inbound_at + 24h`.
pub fn window_open(last_inbound_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    expires_at(last_inbound_at).is_some_and(|end| now < end)
}

/// Whole seconds left, rounded up so that an open window never reports 0;
/// 0 when closed or when there is no window.
pub fn time_remaining_secs(last_inbound_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> i64 {
    match expires_at(last_inbound_at) {
        Some(end) if now < end => {
            let left = end - now;
            let secs = left.num_seconds();
            if left - TimeDelta::seconds(secs) > TimeDelta::zero() {
                secs + 1
            } else {
                secs
            }
        }
        _ => 0,
    }
}

/// True when the window is open and closes within [`EXPIRING_SOON`] (2 hours, inclusive).
pub fn expiring_soon(last_inbound_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    match expires_at(last_inbound_at) {
        Some(end) if now < end => end - now <= EXPIRING_SOON,
        _ => false,
    }
}

/// Everything a caller reports about the window at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WindowState {
    /// Whether free-form messages may be sent.
    pub open: bool,
    /// Seconds left (0 when closed).
    pub time_remaining_secs: i64,
    /// When the window closes (or closed); `None` without an inbound message.
    pub expires_at: Option<DateTime<Utc>>,
    /// Open and closing within 2 hours.
    pub expiring_soon: bool,
}

impl WindowState {
    /// The window state at `now` for a customer whose last inbound message was at `last_inbound_at`.
    pub fn at(last_inbound_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> Self {
        Self {
            open: window_open(last_inbound_at, now),
            time_remaining_secs: time_remaining_secs(last_inbound_at, now),
            expires_at: expires_at(last_inbound_at),
            expiring_soon: expiring_soon(last_inbound_at, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use proptest::prelude::*;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 30, 12, 0, 0).unwrap()
    }

    #[test]
    fn no_inbound_means_no_window() {
        assert!(!window_open(None, t0()));
        assert_eq!(time_remaining_secs(None, t0()), 0);
        assert_eq!(expires_at(None), None);
        assert!(!expiring_soon(None, t0()));
    }

    #[test]
    fn exactly_24h_is_closed() {
        let last = Some(t0());
        let end = t0() + TimeDelta::hours(24);
        assert!(window_open(last, end - TimeDelta::milliseconds(1)));
        assert!(!window_open(last, end));
        assert!(!window_open(last, end + TimeDelta::seconds(1)));
        assert_eq!(time_remaining_secs(last, end), 0);
        assert_eq!(
            time_remaining_secs(last, end - TimeDelta::milliseconds(1)),
            1
        );
        assert_eq!(time_remaining_secs(last, end - TimeDelta::seconds(1)), 1);
        assert_eq!(expires_at(last), Some(end));
    }

    #[test]
    fn open_at_inbound_instant_and_full_day_left() {
        let last = Some(t0());
        assert!(window_open(last, t0()));
        assert_eq!(time_remaining_secs(last, t0()), 86_400);
        // An inbound timestamp slightly in the future (clock skew) keeps it open.
        assert!(window_open(last, t0() - TimeDelta::minutes(1)));
    }

    #[test]
    fn expiring_soon_boundaries() {
        let last = Some(t0());
        let end = t0() + CARE_WINDOW;
        assert!(!expiring_soon(
            last,
            end - TimeDelta::hours(2) - TimeDelta::seconds(1)
        ));
        assert!(expiring_soon(last, end - TimeDelta::hours(2)));
        assert!(expiring_soon(last, end - TimeDelta::seconds(1)));
        assert!(!expiring_soon(last, end));
        let s = WindowState::at(last, end - TimeDelta::hours(1));
        assert!(s.open && s.expiring_soon);
        assert_eq!(s.time_remaining_secs, 3600);
    }

    #[test]
    fn far_future_does_not_overflow() {
        let last = Some(DateTime::<Utc>::MAX_UTC);
        assert_eq!(expires_at(last), Some(DateTime::<Utc>::MAX_UTC));
        assert!(window_open(last, t0()));
    }

    proptest! {
        #[test]
        fn open_iff_time_remains(offset_secs in -200_000i64..200_000) {
            let last = Some(t0());
            let now = t0() + TimeDelta::seconds(offset_secs);
            let open = window_open(last, now);
            prop_assert_eq!(open, time_remaining_secs(last, now) > 0);
            prop_assert_eq!(open, offset_secs < 86_400);
        }
    }
}
