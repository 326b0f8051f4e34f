//! Helpers shared by the benchmark binaries: percentiles, peak memory and the JSON report
//! line.

pub mod http1;

/// The `p` quantile (0..=1) of ascending `sorted` samples (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Peak resident set size (VmHWM) of process `pid` (`self` for this one), MiB.
pub fn peak_rss_mib(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

/// This process's peak resident set size, MiB (0 when unknown).
pub fn own_peak_rss_mib() -> f64 {
    peak_rss_mib("self").unwrap_or(0.0)
}

/// A free loopback port (bound and released; the caller binds it next).
pub fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// p50/p99/mean of microsecond samples, printed as one aligned line and returned as JSON.
pub fn summarise(name: &str, mut micros: Vec<f64>) -> serde_json::Value {
    micros.sort_by(|a, b| a.total_cmp(b));
    let pick = |p: f64| percentile(&micros, p);
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    let (p50, p90, p99) = (pick(0.5), pick(0.9), pick(0.99));
    let max = micros.last().copied().unwrap_or(0.0);
    eprintln!(
        "{name:<34} n={:<6} p50={:>8.3}ms p90={:>8.3}ms p99={:>8.3}ms max={:>8.3}ms mean={:>8.3}ms",
        micros.len(),
        p50 / 1e3,
        p90 / 1e3,
        p99 / 1e3,
        max / 1e3,
        mean / 1e3
    );
    serde_json::json!({"name": name, "n": micros.len(), "p50_ms": p50 / 1e3, "p90_ms": p90 / 1e3,
        "p99_ms": p99 / 1e3, "max_ms": max / 1e3, "mean_ms": mean / 1e3})
}
