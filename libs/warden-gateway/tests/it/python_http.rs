//! The built `mcp-gateway --http`, two replicas, driven by the official Python MCP SDK
//! (`tests/python/http_session.py`) through a client that alternates between them: SDK 2.x
//! (protocol 2026-07-28, stateless) and SDK 1.x (2025-11-25, sessions shared through Redis).
//!
//! Python: the venvs `scripts/pydeps.sh` creates (`target/pyenv`, `target/pyenv-legacy`);
//! this test never installs anything.

use crate::common;
use crate::http_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use http_support::GatewayProc;
use warden_test_support::procs;

fn sdk_python(venv: &str, major: &str) -> PathBuf {
    let python = procs::target_dir().join(venv).join("bin/python");
    let ok = Command::new(&python)
        .args([
            "-c",
            &format!(
                "import importlib.metadata as m, sys; sys.exit(not m.version('mcp').startswith('{major}'))"
            ),
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the Python MCP SDK {major}x is not installed in {}: run scripts/pydeps.sh (make test does)",
        python.display()
    );
    python
}

async fn run_session(venv: &str, major: &str, expect: &str) {
    let python = sdk_python(venv, major);
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let a = GatewayProc::start(&settings, &[]);
    let b = GatewayProc::start(&settings, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/http_session.py");
    let urls = [a.url(), b.url()];
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args(urls)
            .output()
            .expect("run the python session")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python SDK {major}x session failed ({}):\n{stdout}\n{stderr}\n--- replica A:\n{}\n--- replica B:\n{}",
        output.status,
        a.log(),
        b.log()
    );
    assert!(stdout.contains(expect), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_2x_speaks_2026_07_28_across_two_replicas() {
    run_session("pyenv", "2.", "http 2026-07-28 session over 2 replicas: ok").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_1x_keeps_a_2025_11_25_session_across_two_replicas() {
    run_session(
        "pyenv-legacy",
        "1.",
        "http 2025-11-25 session over 2 replicas: ok",
    )
    .await;
}
