//! Charts drawn on the server as inline SVG: they need no JavaScript and no chart library,
//! and each carries a `<title>` and a `<desc>` (named by `aria-labelledby`) that say what
//! it shows in words; the page puts a table of the same numbers beside it.

use std::fmt::Write;

use warden_core::reports::overview::Hour;

const SENDS: &str = "#0b57d0";
const REFUSALS: &str = "#b3261e";

/// `&`, `<`, `>` and `"` escaped (labels are ours, but an SVG is markup all the same).
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// 12345 -> "12,345".
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// The smallest of 1, 2, 5 x 10^k at or above `n` (the axis's top), at least 1.
fn nice_top(n: i64) -> i64 {
    let mut step = 1;
    loop {
        for m in [1, 2, 5] {
            if m * step >= n {
                return m * step;
            }
        }
        step *= 10;
    }
}

/// Sends and refusals per hour as grouped bars, with a y axis, every third hour labelled,
/// a legend, and each bar's value in its own `<title>` (a tooltip).
pub fn hourly(id: &str, hours: &[Hour]) -> String {
    let (w, h) = (760.0, 240.0);
    let (left, right, top, bottom) = (56.0, 8.0, 28.0, 36.0);
    let plot_w = w - left - right;
    let plot_h = h - top - bottom;
    let max = hours
        .iter()
        .map(|x| x.sends.max(x.refusals))
        .max()
        .unwrap_or(0);
    let top_value = nice_top(max.max(1));
    let total_sends: i64 = hours.iter().map(|x| x.sends).sum();
    let total_refusals: i64 = hours.iter().map(|x| x.refusals).sum();
    let label = |x: &Hour| x.hour.format("%H:00").to_string();
    let busiest = hours.iter().max_by_key(|x| x.sends);
    let span = match (hours.first(), hours.last()) {
        (Some(a), Some(b)) => format!(
            "from {} to {} UTC",
            a.hour.format("%Y-%m-%d %H:00"),
            b.hour.format("%Y-%m-%d %H:00")
        ),
        _ => "no hours".to_string(),
    };
    let mut desc = format!(
        "Outbound messages recorded and refusals in each hour {span}: {} recorded and {} refused in all.",
        thousands(total_sends),
        thousands(total_refusals)
    );
    if let Some(b) = busiest.filter(|b| b.sends > 0) {
        let _ = write!(
            desc,
            " Busiest hour {} UTC with {} recorded.",
            label(b),
            thousands(b.sends)
        );
    }
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="{id}" class="chart" viewBox="0 0 {w} {h}" width="100%" style="max-width:{w}px" role="img" aria-labelledby="{id}-title {id}-desc" xmlns="http://www.w3.org/2000/svg"><title id="{id}-title">Sends and refusals per hour, last 24 hours</title><desc id="{id}-desc">{}</desc>"#,
        esc(&desc)
    );
    // Legend.
    let _ = write!(
        svg,
        r##"<g font-size="12" aria-hidden="true"><rect x="{left}" y="6" width="12" height="12" fill="{SENDS}"/><text x="{}" y="16">Recorded (sends)</text><rect x="{}" y="6" width="12" height="12" fill="{REFUSALS}"/><text x="{}" y="16">Refused</text></g>"##,
        left + 16.0,
        left + 140.0,
        left + 156.0
    );
    // Axis and grid: 0, half, top.
    for (i, v) in [0, top_value / 2, top_value].into_iter().enumerate() {
        let y = top + plot_h - plot_h * (i as f64) / 2.0;
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#d9dde1"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" aria-hidden="true">{}</text>"##,
            w - right,
            left - 6.0,
            y + 4.0,
            thousands(v)
        );
    }
    let n = hours.len().max(1) as f64;
    let group = plot_w / n;
    let bar = (group * 0.4).max(1.0);
    for (i, x) in hours.iter().enumerate() {
        let gx = left + group * i as f64 + group * 0.1;
        for (j, (value, colour, what)) in [
            (x.sends, SENDS, "recorded"),
            (x.refusals, REFUSALS, "refused"),
        ]
        .into_iter()
        .enumerate()
        {
            let bh = plot_h * value as f64 / top_value as f64;
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{bar:.1}" height="{bh:.1}" fill="{colour}"><title>{} UTC: {} {what}</title></rect>"#,
                gx + bar * j as f64,
                top + plot_h - bh,
                label(x),
                thousands(value)
            );
        }
        if i % 3 == 0 {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" aria-hidden="true">{}</text>"#,
                gx + bar,
                h - bottom + 16.0,
                label(x)
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// One stage of the delivery funnel.
pub struct Stage<'a> {
    pub label: &'a str,
    pub n: i64,
}

/// The delivery funnel as horizontal bars, each as long as its share of the first stage.
pub fn funnel(id: &str, stages: &[Stage<'_>]) -> String {
    let (w, row, left, right) = (760.0, 26.0, 96.0, 96.0);
    let h = row * stages.len() as f64 + 8.0;
    let top_value = stages.iter().map(|s| s.n).max().unwrap_or(0).max(1);
    let words = stages
        .iter()
        .map(|s| format!("{} {}", s.label.to_lowercase(), thousands(s.n)))
        .collect::<Vec<_>>()
        .join(", ");
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg id="{id}" class="chart" viewBox="0 0 {w} {h}" width="100%" style="max-width:{w}px" role="img" aria-labelledby="{id}-title {id}-desc" xmlns="http://www.w3.org/2000/svg"><title id="{id}-title">Delivery funnel, last 24 hours</title><desc id="{id}-desc">Outbound messages by how far they got: {}.</desc>"#,
        esc(&words)
    );
    for (i, s) in stages.iter().enumerate() {
        let y = 4.0 + row * i as f64;
        let bw = (w - left - right) * s.n as f64 / top_value as f64;
        let colour = if s.label == "Failed" { REFUSALS } else { SENDS };
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" aria-hidden="true">{}</text><rect x="{left}" y="{y:.1}" width="{bw:.1}" height="{:.1}" fill="{colour}"><title>{}: {}</title></rect><text x="{:.1}" y="{:.1}" font-size="12" aria-hidden="true">{}</text>"#,
            left - 8.0,
            y + row * 0.6,
            esc(s.label),
            row - 8.0,
            esc(s.label),
            thousands(s.n),
            left + bw + 6.0,
            y + row * 0.6,
            thousands(s.n)
        );
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};

    use super::*;

    #[test]
    fn numbers_and_axis() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(nice_top(1), 1);
        assert_eq!(nice_top(3), 5);
        assert_eq!(nice_top(120), 200);
        assert_eq!(nice_top(1000), 1000);
    }

    #[test]
    fn the_hourly_chart_says_what_it_shows() {
        let start = Utc.with_ymd_and_hms(2026, 11, 27, 10, 0, 0).unwrap();
        let hours: Vec<Hour> = (0..25)
            .map(|i| Hour {
                hour: start + Duration::hours(i),
                sends: if i == 4 { 1500 } else { i },
                refusals: i % 3,
            })
            .collect();
        let svg = hourly("c", &hours);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains(r#"aria-labelledby="c-title c-desc""#));
        assert!(
            svg.contains("Busiest hour 14:00 UTC with 1,500 recorded"),
            "{svg}"
        );
        // Two bars an hour.
        assert_eq!(svg.matches("<rect x=").count(), 50 + 2);
        let empty = hourly("e", &[]);
        assert!(empty.contains("no hours"));
    }

    #[test]
    fn the_funnel_names_every_stage() {
        let svg = funnel(
            "f",
            &[
                Stage {
                    label: "Recorded",
                    n: 10,
                },
                Stage {
                    label: "Failed",
                    n: 0,
                },
            ],
        );
        assert!(svg.contains("recorded 10, failed 0"), "{svg}");
    }
}
