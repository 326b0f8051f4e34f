//! The built binaries as processes (scripts/test.sh builds them before the tests run):
//! several starting at once on a fresh database, bad configuration, unreachable Postgres.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use warden_store::testing::TestDatabase;
use warden_test_support::platform::APP_SECRET;
use warden_test_support::{binary as bin, free_port, procs, repo_path};

fn policies() -> PathBuf {
    repo_path("policies/default.yaml")
}

fn command(name: &str, db: &TestDatabase, stream: &str) -> Command {
    let mut cmd = Command::new(bin(name));
    cmd.env("DB_NAME", db.name())
        .env("DELIVERY_STREAM", stream)
        .env("POLICIES_PATH", policies())
        .env("PLATFORM_APP_SECRET", APP_SECRET)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Wait for `200 OK` on `/health`.
fn wait_http_ok(port: u16, child: &mut Child) {
    procs::wait_healthy(child, port, Duration::from_secs(60), String::new);
    let health = procs::get_health(port).unwrap_or_default();
    assert!(health.ends_with("OK"), "{health}");
}

fn stop(child: Child) -> Output {
    procs::stop(child, Duration::from_secs(15))
}

#[test]
fn four_binaries_started_together_on_an_empty_database_all_come_up_and_stop_on_sigterm() {
    let db = TestDatabase::create();
    let stream = format!("T_{}", uuid::Uuid::new_v4().simple()).to_uppercase();
    let (wp, dp, sp) = (free_port(), free_port(), free_port());
    let mut webhook = command("webhook", &db, &stream)
        .env("SERVER_HTTP_PORT", wp.to_string())
        .spawn()
        .unwrap();
    let mut dispatcher = command("dispatcher", &db, &stream)
        .env("ADMIN_HTTP_PORT", dp.to_string())
        .spawn()
        .unwrap();
    let mut scheduler = command("scheduler", &db, &stream)
        .env("ADMIN_HTTP_PORT", sp.to_string())
        .spawn()
        .unwrap();
    let migrate = command("warden-admin", &db, &stream)
        .arg("migrate")
        .output()
        .unwrap();
    assert!(
        migrate.status.success(),
        "{}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    wait_http_ok(wp, &mut webhook);
    wait_http_ok(dp, &mut dispatcher);
    wait_http_ok(sp, &mut scheduler);
    for child in [webhook, dispatcher, scheduler] {
        let out = stop(child);
        assert!(
            out.status.success(),
            "did not stop cleanly: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A second start of the admin tool changes nothing.
    let again = command("warden-admin", &db, &stream)
        .arg("migrate")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&again.stderr);
    assert!(
        again.status.success() && text.contains("0 migrations applied now"),
        "{text}"
    );
}

#[test]
fn a_bad_setting_exits_2_naming_the_variable() {
    for (name, var, value) in [
        ("webhook", "SERVER_HTTP_PORT", "eighty"),
        ("dispatcher", "RATE_LIMIT_MPS", "0"),
        ("scheduler", "SCHEDULER_POLL_INTERVAL", "often"),
        ("warden-admin", "DB_PORT", "x"),
    ] {
        let db_less = Command::new(bin(name))
            .args(if name == "warden-admin" {
                vec!["migrate"]
            } else {
                vec![]
            })
            .env(var, value)
            .output()
            .unwrap();
        assert_eq!(db_less.status.code(), Some(2), "{name} with {var}={value}");
        let stderr = String::from_utf8_lossy(&db_less.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        assert!(last.contains(var), "{name}: {stderr}");
    }
}

#[test]
fn unreachable_postgres_is_one_line_and_a_non_zero_exit() {
    let out = Command::new(bin("scheduler"))
        .env("POLICIES_PATH", policies())
        .env("DB_PORT", free_port().to_string())
        .env("ADMIN_HTTP_PORT", free_port().to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(
        last.starts_with("scheduler: cannot reach Postgres at 127.0.0.1:"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_unparsable_policy_file_stops_startup_naming_the_line() {
    let dir = std::env::temp_dir().join(format!(
        "warden-bad-policy-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("policies.yaml");
    std::fs::write(&path, "version: 1\npolicies: [\n  - id: broken\n").unwrap();
    let out = Command::new(bin("scheduler"))
        .env("POLICIES_PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("POLICIES_PATH") && stderr.contains("line"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bad_rate_card_stops_startup_naming_the_field() {
    let dir = std::env::temp_dir().join(format!(
        "warden-bad-pricing-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pricing.yaml");
    std::fs::write(
        &path,
        "currency: USD\ncards:\n  - effective_from: 2026-12-01\n    rates:\n      DEFAULT: {marketing: -0.5, utility: 0, authentication: 0, service: 0}\n",
    )
    .unwrap();
    let out = Command::new(bin("scheduler"))
        .env("POLICIES_PATH", policies())
        .env("PRICING_PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("PRICING_PATH") && stderr.contains("cards[0].rates.DEFAULT.marketing"),
        "{stderr}"
    );
    // A syntax error names the line.
    std::fs::write(
        &path,
        "currency: USD\ncards: [\n  - effective_from: 2026-12-01\n",
    )
    .unwrap();
    let out = Command::new(bin("scheduler"))
        .env("POLICIES_PATH", policies())
        .env("PRICING_PATH", &path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("PRICING_PATH") && stderr.contains("line"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_binary_answers_help() {
    for name in [
        "webhook",
        "dispatcher",
        "scheduler",
        "warden-admin",
        "platform-sim",
        "mcp-gateway",
    ] {
        let path = bin(name);
        let out = Command::new(path).arg("--help").output().unwrap();
        assert!(out.status.success(), "{name} --help");
        assert!(!out.stdout.is_empty());
    }
}

#[test]
fn every_binary_prints_its_config_with_secrets_redacted() {
    for name in [
        "webhook",
        "dispatcher",
        "scheduler",
        "warden-admin",
        "platform-sim",
        "mcp-gateway",
    ] {
        let out = Command::new(bin(name))
            .arg("--print-config")
            .env("DB_PASSWORD", "db-secret-1")
            .env("PLATFORM_ACCESS_TOKEN", "token-secret-2")
            .env("PLATFORM_APP_SECRET", "app-secret-3")
            // Nothing listens there: printing must not dial anything.
            .env("DB_PORT", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name} --print-config: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // mcp-gateway prints to stderr: its stdout is reserved for MCP messages.
        let stdout = if name == "mcp-gateway" {
            assert!(out.stdout.is_empty(), "mcp-gateway wrote to stdout");
            String::from_utf8_lossy(&out.stderr)
        } else {
            String::from_utf8_lossy(&out.stdout)
        };
        for secret in ["db-secret-1", "token-secret-2", "app-secret-3"] {
            assert!(
                !stdout.contains(secret),
                "{name} leaked {secret}:\n{stdout}"
            );
        }
        assert!(
            stdout.contains("platform_access_token = \"<redacted>\""),
            "{name}:\n{stdout}"
        );
        if name != "platform-sim" {
            assert!(
                stdout.contains("db_password = \"<redacted>\""),
                "{name}:\n{stdout}"
            );
            assert!(stdout.contains("db_port = 1"), "{name}:\n{stdout}");
            assert!(
                stdout.contains("dispatch_max_attempts = 8"),
                "{name}:\n{stdout}"
            );
        }
    }
}

#[test]
fn every_bad_setting_is_reported_on_its_own_line() {
    let out = Command::new(bin("dispatcher"))
        .env("TIER", "gold")
        .env("DISPATCH_LEASE", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let plain: Vec<&str> = stderr.lines().filter(|l| !l.starts_with('{')).collect();
    assert_eq!(
        plain,
        [
            "dispatcher: TIER: `gold` is not a tier; use `oss` or `pro`",
            "dispatcher: DISPATCH_LEASE: `soon` is not a duration like 30s, 500ms, 2m or 1h",
        ],
        "{stderr}"
    );
}
