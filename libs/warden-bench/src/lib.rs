//! Helpers shared by the benchmark binaries: percentiles and the JSON report line.

/// p50/p99/mean of microsecond samples, printed as one aligned line and returned as JSON.
pub fn summarise(name: &str, mut micros: Vec<f64>) -> serde_json::Value {
    micros.sort_by(|a, b| a.total_cmp(b));
    let pick = |p: f64| micros[((micros.len() as f64 - 1.0) * p).round() as usize];
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    let (p50, p99) = (pick(0.5), pick(0.99));
    eprintln!(
        "{name:<34} n={:<6} p50={:>8.3}ms p99={:>8.3}ms mean={:>8.3}ms",
        micros.len(),
        p50 / 1e3,
        p99 / 1e3,
        mean / 1e3
    );
    serde_json::json!({"name": name, "n": micros.len(), "p50_ms": p50 / 1e3, "p99_ms": p99 / 1e3, "mean_ms": mean / 1e3})
}
