//! sim-bench: how many sends per second platform-sim takes with webhooks on.
//!
//! Starts the sim in-process with ONE HTTP worker thread (its webhook sender runs on
//! a separate "sim-main" runtime thread), a minimal webhook receiver that verifies
//! each signature and answers 200, and a load generator on its own thread that
//! drives N sends at concurrency C over keep-alive HTTP/1.1. Prints sends/s, p50/p99
//! latency, webhook delivery, and the CPU time each part used (from /proc), so the
//! sim's cost per send can be read apart from the load generator's.
//!
//! Also writes the figures (and this process's peak RSS) as JSON, by default to
//! `target/bench/sim.json`.
//!
//! `cargo run --release -p warden-bench --bin sim-bench -- [--sends N] [--concurrency C]
//!     [--json PATH | --no-json]`

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warden_platform::signature::Signer;
use warden_sim::SimConfig;

const SECRET: &str = "bench-secret";
const TOKEN: &str = "bench-token";

struct Args {
    sends: usize,
    concurrency: usize,
    workers: usize,
    json: Option<String>,
}

fn parse_args() -> Args {
    let mut a = Args {
        sends: 50_000,
        concurrency: 64,
        workers: 1,
        json: Some("target/bench/sim.json".into()),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--json" {
            a.json = Some(it.next().unwrap_or_else(|| {
                eprintln!("--json needs a path");
                std::process::exit(2)
            }));
            continue;
        }
        if flag == "--no-json" {
            a.json = None;
            continue;
        }
        let mut value = || {
            it.next()
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or_else(|| {
                    eprintln!("{flag} needs a number");
                    std::process::exit(2)
                })
        };
        match flag.as_str() {
            "--sends" => a.sends = value(),
            "--concurrency" => a.concurrency = value().max(1),
            "--workers" => a.workers = value().max(1),
            "-h" | "--help" => {
                println!(
                    "sim-bench [--sends N=50000] [--concurrency C=64] [--workers W=1] [--json PATH | --no-json]"
                );
                std::process::exit(0);
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    a
}

fn main() {
    let args = parse_args();
    let _ = rustls::crypto::ring::default_provider().install_default();

    // Webhook receiver: its own thread, so its CPU is not counted as the sim's.
    let recv_listener = TcpListener::bind("127.0.0.1:0").expect("bind receiver");
    let recv_port = recv_listener.local_addr().unwrap().port();
    let recv_stats = Arc::new(RecvStats::default());
    {
        let stats = Arc::clone(&recv_stats);
        std::thread::Builder::new()
            .name("receiver".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(receiver(recv_listener, stats));
            })
            .unwrap();
    }

    // The sim: HTTP worker thread(s) plus the "sim-main" runtime for webhooks/timers.
    let sim_listener = TcpListener::bind("127.0.0.1:0").expect("bind sim");
    let config = SimConfig {
        http_host: "127.0.0.1".into(),
        http_port: 0,
        webhook_url: Some(format!("http://127.0.0.1:{recv_port}/webhook")),
        access_token: TOKEN.into(),
        app_secret: SECRET.into(),
        workers: args.workers,
        webhook_queue: 1_000_000,
        ..SimConfig::default()
    };
    let phone_id = config.phone_number_id.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sim-main".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let running = warden_sim::start(config, sim_listener).expect("sim starts");
                tx.send((running.base_url(), running.state())).unwrap();
                let _ = running.wait().await;
            });
        })
        .unwrap();
    let (base_url, sim) = rx.recv().expect("sim started");
    let url = format!(
        "{base_url}/{}/{phone_id}/messages",
        warden_platform::API_VERSION
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(args.concurrency)
            .http1_only()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();

        // Warm-up: opens the keep-alive connections and touches every code path.
        drive(&http, &url, 2_000, args.concurrency, "warmup").await;
        wait_for_webhooks(&sim, Duration::from_secs(60)).await;

        let cpu_before = thread_cpu();
        let started = Instant::now();
        let mut latencies = drive(&http, &url, args.sends, args.concurrency, "bench").await;
        let elapsed = started.elapsed();
        let cpu_sends = thread_cpu();
        let drained = wait_for_webhooks(&sim, Duration::from_secs(120)).await;
        let all_done = started.elapsed();
        let cpu_after = thread_cpu();

        latencies.sort_unstable();
        let pct = |p: f64| {
            let i = ((latencies.len() as f64 - 1.0) * p).round() as usize;
            latencies[i.min(latencies.len() - 1)]
        };
        let w = sim.webhook_stats();
        let stats = sim.stats_counts();
        println!("sim-bench: {} sends, concurrency {}, sim HTTP workers {}, machine: {} CPU cores",
            args.sends, args.concurrency, args.workers,
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0));
        println!(
            "  throughput: {:.0} sends/s ({:.2} s)",
            args.sends as f64 / elapsed.as_secs_f64(),
            elapsed.as_secs_f64()
        );
        println!(
            "  latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            ms(pct(0.50)),
            ms(pct(0.99)),
            ms(*latencies.last().unwrap())
        );
        println!(
            "  webhooks: {} changes delivered in {} POSTs, {} dropped, all drained {:.2} s after start ({})",
            w.delivered,
            w.posts,
            w.webhooks_dropped,
            all_done.as_secs_f64(),
            if drained { "complete" } else { "TIMED OUT" }
        );
        println!(
            "  receiver: {} POSTs, {} bad signatures",
            recv_stats.posts.load(Ordering::Relaxed),
            recv_stats.bad_signatures.load(Ordering::Relaxed)
        );
        println!("  sim counters: total_sends {}, duplicates {}", stats.0, stats.1);
        let during = cpu_diff(&cpu_before, &cpu_sends);
        let overall = cpu_diff(&cpu_before, &cpu_after);
        println!("  CPU seconds while sending (wall {:.2} s) / until webhooks drained:", elapsed.as_secs_f64());
        for (group, secs) in &overall {
            println!("    {group:<28} {:>6.2} / {:>6.2}", during.get(group).copied().unwrap_or(0.0), secs);
        }
        let sim_cpu: f64 = overall
            .iter()
            .filter(|(g, _)| g.starts_with("sim"))
            .map(|(_, s)| s)
            .sum();
        if sim_cpu > 0.0 {
            println!(
                "  sim cost: {:.1} us CPU per send incl. its webhooks => {:.0} sends per sim core-second",
                sim_cpu * 1e6 / args.sends as f64,
                args.sends as f64 / sim_cpu
            );
        }
        let peak_rss = warden_bench::own_peak_rss_mib();
        println!("  peak RSS (VmHWM) of this process (sim + receiver + load): {peak_rss:.1} MiB");
        if let Some(path) = &args.json {
            let cpu: serde_json::Map<String, serde_json::Value> = overall
                .iter()
                .map(|(g, s)| (g.clone(), serde_json::json!(s)))
                .collect();
            let report = serde_json::json!({
                "bench": "platform_sim_sends",
                "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
                "sends": args.sends,
                "concurrency": args.concurrency,
                "sim_http_workers": args.workers,
                "seconds": elapsed.as_secs_f64(),
                "sends_per_s": args.sends as f64 / elapsed.as_secs_f64(),
                "p50_ms": ms(pct(0.50)),
                "p99_ms": ms(pct(0.99)),
                "max_ms": ms(*latencies.last().unwrap()),
                "webhook_changes_delivered": w.delivered,
                "webhook_posts": w.posts,
                "webhooks_dropped": w.webhooks_dropped,
                "webhooks_drained": drained,
                "receiver_bad_signatures": recv_stats.bad_signatures.load(Ordering::Relaxed),
                "sim_total_sends": stats.0,
                "duplicates": stats.1,
                "cpu_seconds": cpu,
                "sim_cpu_us_per_send": if sim_cpu > 0.0 { sim_cpu * 1e6 / args.sends as f64 } else { 0.0 },
                "sim_sends_per_core_second": if sim_cpu > 0.0 { args.sends as f64 / sim_cpu } else { 0.0 },
                "peak_rss_mib": peak_rss,
            });
            if let Some(dir) = std::path::Path::new(path).parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            match std::fs::write(path, serde_json::to_string_pretty(&report).unwrap()) {
                Ok(()) => println!("  written to {path}"),
                Err(e) => eprintln!("sim-bench: cannot write {path}: {e}"),
            }
        }
    });
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Sends `n` messages with `concurrency` in flight; returns each latency.
async fn drive(
    http: &reqwest::Client,
    url: &str,
    n: usize,
    concurrency: usize,
    tag: &'static str,
) -> Vec<Duration> {
    let next = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let http = http.clone();
        let url = url.to_owned();
        let next = Arc::clone(&next);
        let failures = Arc::clone(&failures);
        tasks.push(tokio::task::spawn(async move {
            let mut lat = Vec::with_capacity(n / concurrency + 1);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break lat;
                }
                // Half free-form text, half templates (exercises the template check).
                let body = if i.is_multiple_of(2) {
                    format!(
                        r#"{{"messaging_product":"whatsapp","recipient_type":"individual","to":"62811{:06}","type":"text","text":{{"preview_url":false,"body":"bench message {i}"}},"biz_opaque_callback_data":"{tag}-{i}"}}"#,
                        i % 5000
                    )
                } else {
                    format!(
                        r#"{{"messaging_product":"whatsapp","recipient_type":"individual","to":"62811{:06}","type":"template","template":{{"name":"warden_order_update","language":{{"code":"en"}},"components":[{{"type":"body","parameters":[{{"type":"text","text":"ORD-{i}"}}]}}]}},"biz_opaque_callback_data":"{tag}-{i}"}}"#,
                        i % 5000
                    )
                };
                let t = Instant::now();
                let ok = match http
                    .post(&url)
                    .bearer_auth(TOKEN)
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                {
                    Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                    Err(_) => false,
                };
                lat.push(t.elapsed());
                if !ok {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let failed = failures.load(Ordering::Relaxed);
    if failed > 0 {
        eprintln!("{tag}: {failed} sends failed");
    }
    all
}

async fn wait_for_webhooks(sim: &warden_sim::Sim, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let w = sim.webhook_stats();
        if w.queued == 0 && w.in_flight == 0 && w.delivered + w.webhooks_dropped >= w.enqueued {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[derive(Default)]
struct RecvStats {
    posts: AtomicU64,
    bad_signatures: AtomicU64,
}

/// A minimal HTTP/1.1 keep-alive server: reads each request, checks the signature,
/// answers 200 EVENT_RECEIVED.
async fn receiver(listener: TcpListener, stats: Arc<RecvStats>) {
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    let signer = Arc::new(Signer::new(SECRET.as_bytes()));
    loop {
        let Ok((mut sock, _)) = listener.accept().await else {
            continue;
        };
        let stats = Arc::clone(&stats);
        let signer = Arc::clone(&signer);
        tokio::spawn(async move {
            let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                // Parse as many complete requests as the buffer holds.
                while let Some(end) = find(&buf, b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                    let len = header(&head, "content-length")
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    let total = end + 4 + len;
                    if buf.len() < total {
                        break;
                    }
                    let sig = header(&head, "x-hub-signature-256").unwrap_or_default();
                    if !signer.verify(&buf[end + 4..total], &sig) {
                        stats.bad_signatures.fetch_add(1, Ordering::Relaxed);
                    }
                    stats.posts.fetch_add(1, Ordering::Relaxed);
                    buf.drain(..total);
                    let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 14\r\n\r\nEVENT_RECEIVED";
                    if sock.write_all(reply).await.is_err() {
                        return;
                    }
                }
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        });
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_owned())
    })
}

/// CPU seconds per thread group, from /proc/self/task/*/stat (Linux only).
fn thread_cpu() -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let tick = 100.0; // USER_HZ on Linux
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // comm is in parentheses and may hold spaces; fields after it are plain.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after comm/state.
        let (Some(u), Some(s)) = (fields.get(11), fields.get(12)) else {
            continue;
        };
        let secs = (u.parse::<f64>().unwrap_or(0.0) + s.parse::<f64>().unwrap_or(0.0)) / tick;
        let group = if comm.starts_with("actix-server") || comm.starts_with("actix-rt") {
            "sim: HTTP worker(s)/acceptor"
        } else if comm == "sim-main" {
            "sim: webhook sender thread"
        } else if comm == "receiver" {
            "webhook receiver"
        } else {
            "load generator (main)"
        };
        *out.entry(group.to_owned()).or_insert(0.0) += secs;
    }
    out
}

fn cpu_diff(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    b.iter()
        .map(|(k, v)| (k.clone(), v - a.get(k).copied().unwrap_or(0.0)))
        .collect()
}
