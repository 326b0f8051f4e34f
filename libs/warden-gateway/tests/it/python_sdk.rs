//! The built `mcp-gateway` binary driven over stdio by the official Python MCP SDK
//! (`tests/python/stdio_session.py`): handshake, catalogue, calls validated against the
//! output schemas, the error envelope, every stdout line being JSON-RPC, and live updates
//! (resources/subscribe -> signed inbound POST to a `webhook` process -> notification).
//!
//! Python: `python3` when it can `import mcp`, else the venv at `target/pyenv` that
//! `scripts/pydeps.sh` creates (`make test` runs it; this test never installs anything).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn can_import_mcp(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python interpreter with the `mcp` SDK: fails naming the setup step when there is none.
pub(crate) fn python_with_mcp() -> PathBuf {
    let system = PathBuf::from("python3");
    if can_import_mcp(&system) {
        return system;
    }
    let python = warden_test_support::procs::target_dir().join("pyenv/bin/python");
    assert!(
        can_import_mcp(&python),
        "the Python MCP SDK is not installed (neither `python3` nor {} can `import mcp`): run scripts/pydeps.sh (make test does)",
        python.display()
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_binary_over_stdio_with_the_python_sdk() {
    let python = python_with_mcp();
    let binary = warden_test_support::binary("mcp-gateway");
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let d = &settings.database;
    let stream = settings.delivery_stream.clone();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/stdio_session.py");
    // A webhook in its own process: the session's live-update part POSTs to it.
    let hook = common::webhook::WebhookProc::start(&settings);
    let output = tokio::task::spawn_blocking({
        let settings = settings.clone();
        let d = d.clone();
        let webhook_url = hook.url();
        move || {
            Command::new(&python)
                .arg(&script)
                .arg(&binary)
                .env("DB_HOST", &d.host)
                .env("DB_PORT", d.port.to_string())
                .env("DB_USER", &d.user)
                .env("DB_PASSWORD", &d.password)
                .env("DB_NAME", &d.name)
                .env("DB_SSLMODE", d.sslmode.as_str())
                .env("REDIS_ADDR", &settings.redis.addr)
                .env("REDIS_PASSWORD", &settings.redis.password)
                .env("REDIS_DB", settings.redis.db.to_string())
                .env("NATS_URL", &settings.nats_url)
                .env("DELIVERY_STREAM", &settings.delivery_stream)
                .env("POLICIES_PATH", &settings.policies_path)
                .env("PLATFORM_API_URL", &settings.platform.api_url)
                .env(
                    "PLATFORM_PHONE_NUMBER_ID",
                    &settings.platform.phone_number_id,
                )
                .env("WEBHOOK_URL", &webhook_url)
                .env("WEBHOOK_SECRET", common::APP_SECRET)
                .env("TIER", "pro")
                .env("SERVER_MCP_NAME", "warden-stdio-test")
                .env("SERVER_MCP_VERSION", "7.7.7")
                .env("EXPECT_MCP_NAME", "warden-stdio-test")
                .env("EXPECT_MCP_VERSION", "7.7.7")
                .env("RUST_LOG", "debug")
                .output()
                .expect("run the python session")
        }
    })
    .await
    .unwrap();
    drop(hook);
    // The stream the binary created for this run.
    if let Ok(client) = async_nats::connect(&settings.nats_url).await {
        let _ = async_nats::jetstream::new(client)
            .delete_stream(&stream)
            .await;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python SDK session failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(stdout.contains("stdio session: ok"), "{stdout}");
    assert!(
        stdout.contains("live updates: webhook 200 -> notification"),
        "{stdout}"
    );
}
