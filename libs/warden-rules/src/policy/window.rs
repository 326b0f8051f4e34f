//! Rolling-window lengths as the file writes them: `3600s`, `30m`, `24h`, `7d`.

use chrono::TimeDelta;

use super::{MAX_WINDOW, PolicyReason};

/// Parses a rolling-window length: a positive whole number and a unit, `s`, `m`,
/// `h` or `d` (`3600s`, `30m`, `24h`, `7d`), at most 366 days.
pub fn parse_window(text: &str) -> Result<TimeDelta, PolicyReason> {
    let bad = || PolicyReason::Window {
        text: text.to_string(),
    };
    let t = text.trim();
    let unit = t.chars().last().ok_or_else(bad)?;
    let number = &t[..t.len() - unit.len_utf8()];
    if number.is_empty() || number.len() > 12 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: i64 = number.parse().map_err(|_| bad())?;
    let secs_per_unit = match unit.to_ascii_lowercase() {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        _ => return Err(bad()),
    };
    let secs = n.checked_mul(secs_per_unit).ok_or_else(bad)?;
    if secs <= 0 || secs > MAX_WINDOW.num_seconds() {
        return Err(bad());
    }
    Ok(TimeDelta::seconds(secs))
}

/// Formats a window the way the file writes it: `24h`, `30m`, `7d`, `90s`
/// (days only for whole days of 2 or more, so the usual `24h` stays `24h`).
pub fn format_window(window: TimeDelta) -> String {
    let s = window.num_seconds();
    if s >= 2 * 86_400 && s % 86_400 == 0 {
        format!("{}d", s / 86_400)
    } else if s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn windows() {
        for (text, secs) in [
            ("24h", 86_400),
            ("30m", 1800),
            ("7d", 604_800),
            ("3600s", 3600),
            (" 2H ", 7200),
        ] {
            assert_eq!(parse_window(text).unwrap().num_seconds(), secs, "{text}");
        }
        for bad in [
            "",
            "h",
            "24",
            "-1h",
            "1.5h",
            "1w",
            "0s",
            "367d",
            "99999999999999d",
            "24 h",
            "٣h",
        ] {
            assert!(parse_window(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_window(TimeDelta::hours(24)), "24h");
        assert_eq!(format_window(TimeDelta::days(7)), "7d");
        assert_eq!(format_window(TimeDelta::minutes(90)), "90m");
        assert_eq!(format_window(TimeDelta::seconds(61)), "61s");
    }

    proptest! {
        #[test]
        fn window_format_round_trips(secs in 1i64..=(366 * 86_400)) {
            let w = TimeDelta::seconds(secs);
            prop_assert_eq!(parse_window(&format_window(w)).unwrap(), w);
        }
    }
}
