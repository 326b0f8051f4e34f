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

/// The load average (1, 5 and 15 minutes) as `/proc/loadavg` gives it ("" when unknown).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub mod stdio {
    //! A pipelined MCP client over a spawned `mcp-gateway`'s stdio: several calls in flight
    //! on one gateway, each answer routed back to its caller by JSON-RPC id.

    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};

    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::process::{Child, ChildStdin, Command};
    use tokio::sync::{Mutex, oneshot};

    type Waiting = Arc<std::sync::Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

    pub struct Gateway {
        child: Child,
        stdin: Mutex<ChildStdin>,
        waiting: Waiting,
        next_id: AtomicU64,
    }

    impl Gateway {
        /// Spawns `command` (stdin/stdout piped, killed on drop) and completes the MCP
        /// initialisation.
        pub async fn spawn(mut command: Command) -> anyhow::Result<Self> {
            let mut child = command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true)
                .spawn()?;
            let stdin = child.stdin.take().expect("piped");
            let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
            let waiting: Waiting = Arc::default();
            let routes = waiting.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    if let Some(id) = msg.get("id").and_then(Value::as_u64)
                        && let Some(tx) = routes.lock().expect("routes").remove(&id)
                    {
                        let _ = tx.send(msg);
                    }
                }
                // stdout closed: every caller still waiting gets an error (its sender dropped).
                routes.lock().expect("routes").clear();
            });
            let gateway = Gateway {
                child,
                stdin: Mutex::new(stdin),
                waiting,
                next_id: AtomicU64::new(0),
            };
            gateway
                .request(
                    "initialize",
                    json!({"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "warden-bench", "version": "1"}}),
                )
                .await?;
            gateway
                .write(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await?;
            Ok(gateway)
        }

        pub fn pid(&self) -> Option<u32> {
            self.child.id()
        }

        async fn write(&self, msg: &Value) -> anyhow::Result<()> {
            let mut line = msg.to_string();
            line.push('\n');
            let mut stdin = self.stdin.lock().await;
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await?;
            Ok(())
        }

        /// One JSON-RPC request; its response (result or error) as the gateway sent it.
        pub async fn request(&self, method: &str, params: Value) -> anyhow::Result<Value> {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
            let (tx, rx) = oneshot::channel();
            self.waiting.lock().expect("routes").insert(id, tx);
            self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                .await?;
            rx.await
                .map_err(|_| anyhow::anyhow!("gateway closed stdout before answering {method}"))
        }

        /// `tools/call`; its result, or an error when the call failed or the tool refused.
        pub async fn call(&self, tool: &str, args: Value) -> anyhow::Result<Value> {
            let res = self
                .request("tools/call", json!({"name": tool, "arguments": args}))
                .await?;
            super::tool_result(tool, &res)
        }
    }
}

/// The `result` of a `tools/call` answer, or an error when the call failed or the tool
/// refused (`isError`).
pub fn tool_result(tool: &str, answer: &serde_json::Value) -> anyhow::Result<serde_json::Value> {
    let result = answer
        .get("result")
        .cloned()
        .ok_or_else(|| anyhow::anyhow!("{tool}: {answer}"))?;
    anyhow::ensure!(
        result.get("isError") != Some(&serde_json::Value::Bool(true)),
        "{tool} failed: {result}"
    );
    Ok(result)
}
