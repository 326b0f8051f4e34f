//! Which inbound messages open (or extend) the care window, and from when.
//!
//! docs/compliance.md, Compliance decisions: an inbound message opens the window only if it is
//! a customer message (not `system`), is for a number we serve, and its timestamp is
//! plausible (present, after 2010, at most 5 minutes in the future). Anything else is
//! stored (when ours) and counted, and opens nothing. The number check happens where the
//! webhook reads `metadata.phone_number_id` (events for other numbers are not stored at
//! all); the other two are decided here, purely.

use chrono::{DateTime, TimeDelta, Utc};

/// 2010-01-01T00:00:00Z: no real platform message is older.
pub const EARLIEST_PLAUSIBLE: i64 = 1_262_304_000;
/// Clock skew tolerated on a message's timestamp.
pub const MAX_FUTURE_SKEW: TimeDelta = TimeDelta::minutes(5);

/// Why an inbound message opens no window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoWindow {
    /// Missing, 0, before 2010, or more than 5 minutes ahead of us.
    ImplausibleTimestamp,
    /// A `system` message (e.g. "user changed number"): the platform wrote it, not the customer.
    NotFromCustomer,
}

impl NoWindow {
    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            NoWindow::ImplausibleTimestamp => "implausible_timestamp",
            NoWindow::NotFromCustomer => "not_from_customer",
        }
    }
}

/// Message types the platform writes itself, not the customer.
fn from_platform(message_type: &str) -> bool {
    message_type.trim().eq_ignore_ascii_case("system")
}

/// The plausible time of a platform timestamp (unix seconds): never later than `now`
/// (a few minutes of skew are forgiven, the window does not start in the future).
pub fn plausible_time(ts: i64, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    if ts < EARLIEST_PLAUSIBLE {
        return None;
    }
    let at = DateTime::<Utc>::from_timestamp(ts, 0)?;
    if at > now + MAX_FUTURE_SKEW {
        return None;
    }
    Some(at.min(now))
}

/// When an inbound message of `message_type` stamped `ts` opens the window, or why it
/// opens none.
pub fn window_opened_at(
    message_type: &str,
    ts: i64,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, NoWindow> {
    if from_platform(message_type) {
        return Err(NoWindow::NotFromCustomer);
    }
    plausible_time(ts, now).ok_or(NoWindow::ImplausibleTimestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    #[test]
    fn only_plausible_customer_messages_open_the_window() {
        let n = now();
        let ok = |ts| window_opened_at("text", ts, n);
        assert_eq!(ok(1_799_999_000).unwrap().timestamp(), 1_799_999_000);
        // Slightly ahead: forgiven, but the window starts now, not in the future.
        assert_eq!(ok(1_800_000_200).unwrap(), n);
        for bad in [
            0,
            -5,
            1_000_000_000,
            EARLIEST_PLAUSIBLE - 1,
            1_800_000_301,
            i64::MAX,
        ] {
            assert_eq!(ok(bad), Err(NoWindow::ImplausibleTimestamp), "{bad}");
        }
        assert_eq!(
            ok(EARLIEST_PLAUSIBLE).unwrap().timestamp(),
            EARLIEST_PLAUSIBLE
        );
        assert_eq!(
            window_opened_at("system", 1_799_999_000, n),
            Err(NoWindow::NotFromCustomer)
        );
        assert_eq!(
            window_opened_at("SYSTEM", 0, n),
            Err(NoWindow::NotFromCustomer)
        );
        assert!(window_opened_at("button", 1_799_999_000, n).is_ok());
    }
}
