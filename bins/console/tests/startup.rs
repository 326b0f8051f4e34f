//! The built `console` binary: it serves on CONSOLE_HTTP_ADDR (health 200, pages 303 to
//! /login without a session) and stops on SIGTERM; a bad CONSOLE_HTTP_ADDR is exit 2 naming
//! the variable, before any dependency is dialled.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use warden_store::testing::TestDatabase;
use warden_test_support::{free_port, procs};

fn get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serves_on_its_address_and_sends_strangers_to_login() {
    let db = TestDatabase::create();
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_console"))
        .env_clear()
        .envs(procs::env_of(&db.settings))
        .env("POLICIES_PATH", warden_test_support::policies_path())
        .env("CONSOLE_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run console");
    procs::wait_healthy(&mut child, port, Duration::from_secs(60), || {
        "console did not become healthy".into()
    });
    let home = get(port, "/");
    assert!(home.starts_with("HTTP/1.1 303"), "{home}");
    assert!(
        home.to_ascii_lowercase().contains("location: /login"),
        "{home}"
    );
    let login = get(port, "/login");
    assert!(
        login.starts_with("HTTP/1.1 200")
            && login.contains("<form method=\"post\" action=\"/login\">")
    );
    let out = procs::stop(child, Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_bad_address_is_a_configuration_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_console"))
        .env("CONSOLE_HTTP_ADDR", "nowhere")
        // Nothing listens there: had it dialled Postgres first, it would exit 1.
        .env("DB_PORT", "1")
        .output()
        .expect("run console");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CONSOLE_HTTP_ADDR"), "{stderr}");
}
