//! The workspace's built binaries as child processes.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// The workspace root (this crate lives in `libs/warden-test-support`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root is two levels above this crate")
        .to_path_buf()
}

/// A file of the repository, e.g. `policies/default.yaml`.
pub fn repo_path(relative: &str) -> PathBuf {
    workspace_root().join(relative)
}

/// Where cargo puts build output (`CARGO_TARGET_DIR`, else `target/`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// A built binary of `bins/`; fails naming the build step when it is missing
/// (`make test` builds every binary before the tests).
pub fn binary(name: &str) -> PathBuf {
    let path = target_dir().join("debug").join(name);
    assert!(
        path.is_file(),
        "{} is not built: run `cargo build --bins` first (make test does)",
        path.display()
    );
    path
}

/// The environment that points a Warden binary at `settings`: the test's database, Redis,
/// NATS, stream, policy file and platform account.
pub fn env_of(settings: &warden_settings::Settings) -> Vec<(&'static str, String)> {
    let d = &settings.database;
    let p = &settings.platform;
    let mut env = vec![
        ("DB_HOST", d.host.clone()),
        ("DB_PORT", d.port.to_string()),
        ("DB_USER", d.user.clone()),
        ("DB_PASSWORD", d.password.clone()),
        ("DB_NAME", d.name.clone()),
        ("DB_SSLMODE", d.sslmode.as_str().to_string()),
        ("REDIS_ADDR", settings.redis.addr.clone()),
        ("REDIS_PASSWORD", settings.redis.password.clone()),
        ("REDIS_DB", settings.redis.db.to_string()),
        ("NATS_URL", settings.nats_url.clone()),
        ("DELIVERY_STREAM", settings.delivery_stream.clone()),
        (
            "POLICIES_PATH",
            settings.policies_path.display().to_string(),
        ),
        ("PLATFORM_API_URL", p.api_url.clone()),
        ("PLATFORM_ACCESS_TOKEN", p.access_token.clone()),
        ("PLATFORM_PHONE_NUMBER_ID", p.phone_number_id.clone()),
        ("PLATFORM_ACCOUNT_ID", p.account_id.clone()),
        (
            "PLATFORM_WEBHOOK_VERIFY_TOKEN",
            p.webhook_verify_token.clone(),
        ),
    ];
    if let Some(secret) = &p.app_secret {
        env.push(("PLATFORM_APP_SECRET", secret.clone()));
    }
    env
}

/// A local port nothing listens on (bound once, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// One blocking `GET /health`: the status line and body, if anything answered.
pub fn get_health(port: u16) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(b"GET /health HTTP/1.0\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Wait until the child answers 200 on `/health`; panics if it exits first or after
/// `timeout`, with `describe()` (e.g. its log tail) in the message.
pub fn wait_healthy(
    child: &mut Child,
    port: u16,
    timeout: Duration,
    describe: impl Fn() -> String,
) {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the process for port {port} exited ({status}) before it was healthy: {}",
                describe()
            );
        }
        if get_health(port)
            .is_some_and(|r| r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.0 200"))
        {
            return;
        }
        assert!(
            started.elapsed() < timeout,
            "no 200 from /health on port {port} within {timeout:?}: {}",
            describe()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Send SIGTERM (a clean stop).
pub fn sigterm(child: &Child) {
    // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
    #[allow(unsafe_code)]
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
}

/// SIGTERM, then wait up to `timeout` for the exit (SIGKILL after it); the output.
pub fn stop(child: Child, timeout: Duration) -> Output {
    sigterm(&child);
    wait_exit(child, timeout)
}

/// Wait up to `timeout` for the child to exit by itself (SIGKILL after it); the output.
pub fn wait_exit(mut child: Child, timeout: Duration) -> Output {
    let started = Instant::now();
    while matches!(child.try_wait(), Ok(None)) && started.elapsed() < timeout {
        std::thread::sleep(Duration::from_millis(20));
    }
    if matches!(child.try_wait(), Ok(None)) {
        let _ = child.kill();
    }
    child.wait_with_output().expect("reap the child")
}
