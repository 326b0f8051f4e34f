//! The binary refuses to start without PLATFORM_APP_SECRET: exit 2, one line naming it,
//! before it dials any dependency (so it holds even with Postgres unreachable).

use std::process::Command;

#[test]
fn refuses_to_start_without_the_app_secret() {
    for secret in [None, Some("")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_webhook"));
        cmd.env_remove("PLATFORM_APP_SECRET")
            // Nothing listens there: had it tried Postgres first, it would exit 1.
            .env("DB_PORT", "1")
            .env("SERVER_HTTP_PORT", "0");
        if let Some(s) = secret {
            cmd.env("PLATFORM_APP_SECRET", s);
        }
        let out = cmd.output().expect("run webhook");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
        assert!(out.stdout.is_empty());
        let plain: Vec<&str> = stderr.lines().filter(|l| !l.starts_with('{')).collect();
        assert_eq!(plain.len(), 1, "one plain line: {stderr}");
        assert!(plain[0].contains("PLATFORM_APP_SECRET"), "{stderr}");
    }
}
