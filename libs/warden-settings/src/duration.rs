//! Durations as operators write them: `500ms`, `30s`, `2m`, `1h`, `1d`, or bare seconds.

use std::time::Duration;

use crate::error::DurationError;

/// Parse `30s`, `500ms`, `2m`, `1h`, `1d`, or a bare number of seconds.
pub fn parse_duration(raw: &str) -> Result<Duration, DurationError> {
    let s = raw.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| DurationError::NotADuration(raw.to_string()))?;
    let secs = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86400.0,
        _ => return Err(DurationError::UnknownUnit(raw.to_string())),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(DurationError::OutOfRange(raw.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A spelling [`parse_duration`] reads back as `d` (`0s`, `500ms`, `2m`, `1h`).
pub fn format_duration(d: Duration) -> String {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return format!("{}s", d.as_secs_f64());
    }
    if d.subsec_nanos() != 0 {
        return format!("{}ms", d.as_millis());
    }
    let secs = d.as_secs();
    match secs {
        0 => "0s".to_string(),
        s if s.is_multiple_of(86400) => format!("{}d", s / 86400),
        s if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        s if s.is_multiple_of(60) => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("5").unwrap(), Duration::from_secs(5));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1y").is_err());
    }

    #[test]
    fn messages_keep_their_wording() {
        assert_eq!(
            parse_duration("soon").unwrap_err().to_string(),
            "`soon` is not a duration like 30s, 500ms, 2m or 1h"
        );
        assert_eq!(
            parse_duration("1y").unwrap_err().to_string(),
            "`1y` has an unknown unit; use ms, s, m, h or d"
        );
    }

    #[test]
    fn formatted_durations_read_back() {
        for d in [
            Duration::ZERO,
            Duration::from_millis(500),
            Duration::from_secs(6),
            Duration::from_secs(90),
            Duration::from_secs(300),
            Duration::from_secs(7200),
            Duration::from_secs(86400),
        ] {
            let text = format_duration(d);
            assert_eq!(parse_duration(&text).unwrap(), d, "{text}");
        }
        assert_eq!(format_duration(Duration::from_secs(300)), "5m");
        assert_eq!(format_duration(Duration::from_secs(90)), "90s");
    }
}
