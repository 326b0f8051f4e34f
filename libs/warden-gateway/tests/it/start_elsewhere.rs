//! The built `mcp-gateway` started from another directory, as agent hosts start it: with
//! POLICIES_PATH unset and no `policies/default.yaml` there it serves with the built-in
//! default policies (and says so on stderr); a POLICIES_PATH that is set but missing still
//! exits 2.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use warden_test_support::procs::wait_exit;

/// The gateway in `dir`, on the test database, without POLICIES_PATH unless given.
fn spawn(dir: &Path, settings: &warden_settings::Settings, policies: Option<&str>) -> Child {
    let d = &settings.database;
    let mut cmd = Command::new(warden_test_support::binary("mcp-gateway"));
    cmd.current_dir(dir)
        .env_remove("POLICIES_PATH")
        .env("DB_HOST", &d.host)
        .env("DB_PORT", d.port.to_string())
        .env("DB_USER", &d.user)
        .env("DB_PASSWORD", &d.password)
        .env("DB_NAME", &d.name)
        .env("DB_SSLMODE", d.sslmode.as_str())
        .env("REDIS_ADDR", &settings.redis.addr)
        .env("NATS_URL", &settings.nats_url)
        .env("DELIVERY_STREAM", &settings.delivery_stream)
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(p) = policies {
        cmd.env("POLICIES_PATH", p);
    }
    cmd.spawn().expect("start mcp-gateway")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_elsewhere_it_uses_the_builtin_default_policies() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().to_path_buf();
    let out = tokio::task::spawn_blocking(move || {
        let mut child = spawn(&dir, &settings, None);
        let mut stdin = child.stdin.take().unwrap();
        writeln!(
            stdin,
            "{}",
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}})
        )
        .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        drop(stdin); // EOF: the session ends and the process exits.
        (line, wait_exit(child, Duration::from_secs(20)))
    })
    .await
    .unwrap();
    let (line, output) = out;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let answer: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}\n{stderr}"));
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    assert!(
        stderr.contains("built-in default policies"),
        "the log names the policies used: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_missing_policies_path_still_exits_2() {
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let elsewhere = tempfile::tempdir().unwrap();
    let dir = elsewhere.path().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        let child = spawn(&dir, &settings, Some("/nonexistent/policies.yaml"));
        wait_exit(child, Duration::from_secs(20))
    })
    .await
    .unwrap();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
