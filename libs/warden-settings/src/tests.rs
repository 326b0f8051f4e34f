//! The tree's loading: defaults, sources, every problem named.

use super::*;

fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn defaults_follow_the_contract() {
    let s = Settings::from_sources(None, &env(&[])).unwrap();
    assert_eq!(s.http_port, 8080);
    assert_eq!(s.database.user, "warden");
    assert_eq!(s.database.password, "warden");
    assert_eq!(s.database.name, "warden");
    assert_eq!(s.redis.addr, "127.0.0.1:6379");
    assert_eq!(s.nats_url, "nats://127.0.0.1:4222");
    assert_eq!(s.platform.api_url, "http://127.0.0.1:8089");
    assert_eq!(s.rate_limit_mps, 80);
    assert_eq!(s.delivery_stream, "DELIVERY");
    assert_eq!(s.delivery_subject("whatsapp"), "delivery.outbound.whatsapp");
    assert!(s.platform.app_secret.is_none());
    assert_eq!(s.tier, Tier::Oss);
}

#[test]
fn api_version_defaults_to_v25_and_takes_any_vnn() {
    let s = Settings::from_sources(None, &env(&[])).unwrap();
    assert_eq!(s.platform.api_version, "v25.0");
    let s = Settings::from_sources(None, &env(&[("PLATFORM_API_VERSION", "v24.0")])).unwrap();
    assert_eq!(s.platform.api_version, "v24.0");
    for ok in ["v25.0", "v20.0", "v1.0", "v100.0"] {
        assert!(is_api_version(ok), "{ok}");
    }
    for bad in [
        "25.0", "v25", "v25.1", "v.0", "vx.0", "v1000.0", "V25.0", "", "sim",
    ] {
        assert!(!is_api_version(bad), "{bad}");
        if !bad.is_empty() {
            let err =
                Settings::from_sources(None, &env(&[("PLATFORM_API_VERSION", bad)])).unwrap_err();
            assert!(err.to_string().contains("PLATFORM_API_VERSION"), "{err}");
        }
    }
}

#[test]
fn bad_values_name_the_variable() {
    for (var, value) in [
        ("SERVER_HTTP_PORT", "eighty"),
        ("SERVER_HTTP_PORT", "70000"),
        ("DB_PORT", "-1"),
        ("REDIS_DB", "x"),
        ("TIER", "gold"),
        ("RATE_LIMIT_MPS", "0"),
        ("SCHEDULER_POLL_INTERVAL", "soon"),
        ("MESSAGE_CONTENT_RETENTION", "forever"),
        ("MESSAGE_CONTENT_RETENTION", "0d"),
        ("DB_SSLMODE", "verify-full"),
        ("PLATFORM_API_URL", "ftp://x"),
        ("DELIVERY_STREAM", "a.b"),
    ] {
        let err = Settings::from_sources(None, &env(&[(var, value)])).unwrap_err();
        let line = err.to_string();
        assert!(line.starts_with(var), "{line}");
        assert!(!line.contains('\n'));
    }
}

#[test]
fn content_retention_defaults_to_90_days() {
    let s = Settings::from_sources(None, &env(&[])).unwrap();
    assert_eq!(s.message_content_retention, DEFAULT_CONTENT_RETENTION);
    let s = Settings::from_sources(None, &env(&[("MESSAGE_CONTENT_RETENTION", "30d")])).unwrap();
    assert_eq!(
        s.message_content_retention,
        Duration::from_secs(30 * 86_400)
    );
}

#[test]
fn config_file_is_overridden_by_env() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warden.toml");
    std::fs::write(
        &path,
        "db_host = \"db.internal\"\nserver_http_port = 9000\ntier = \"pro\"\n",
    )
    .unwrap();
    let s = Settings::from_sources(Some(&path), &env(&[("SERVER_HTTP_PORT", "9100")])).unwrap();
    assert_eq!(s.database.host, "db.internal");
    assert_eq!(s.http_port, 9100);
    assert_eq!(s.tier, Tier::Pro);
}

#[test]
fn config_file_rejects_unknown_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warden.toml");
    std::fs::write(&path, "db_hots = \"x\"\n").unwrap();
    let err = Settings::from_sources(Some(&path), &env(&[])).unwrap_err();
    assert!(err.to_string().contains("db_hots"));
}

#[test]
fn urls_encode_credentials_and_debug_hides_them() {
    let s = Settings::from_sources(
        None,
        &env(&[("DB_PASSWORD", "p@ss:word/"), ("REDIS_PASSWORD", "r p")]),
    )
    .unwrap();
    assert!(s.database.url().contains("p%40ss%3Aword%2F"));
    assert!(s.redis.url().starts_with("redis://:r%20p@"));
    let dbg = format!("{s:?}");
    assert!(!dbg.contains("p@ss"));
    assert!(!dbg.contains("dev-access-token"));
}

#[test]
fn every_bad_variable_is_one_line() {
    let err = Settings::from_sources(
        None,
        &env(&[
            ("SERVER_HTTP_PORT", "eighty"),
            ("TIER", "gold"),
            ("DISPATCH_MAX_ATTEMPTS", "0"),
            ("PAIR_RATE_INTERVAL", "soon"),
        ]),
    )
    .unwrap_err();
    assert_eq!(
        err.problems(),
        vec![
            "TIER: `gold` is not a tier; use `oss` or `pro`",
            "SERVER_HTTP_PORT: `eighty` is not a valid number (expected an integer from 0 to 65535)",
            "DISPATCH_MAX_ATTEMPTS: `0` is not a whole number in range",
            "PAIR_RATE_INTERVAL: `soon` is not a duration like 30s, 500ms, 2m or 1h",
        ]
    );
    assert_eq!(err.to_string().lines().count(), 4);
}

#[test]
fn dispatch_defaults_and_overrides() {
    let s = Settings::from_sources(None, &env(&[])).unwrap();
    assert_eq!(s.dispatch, Dispatch::default());
    assert_eq!(s.dispatch.max_attempts, 8);
    assert_eq!(s.dispatch.pair_interval, Duration::from_secs(6));
    assert_eq!(s.dispatch.unknown_max_wait, Duration::from_secs(900));
    let s = Settings::from_sources(
        None,
        &env(&[
            ("PAIR_RATE_INTERVAL", "0"),
            ("DISPATCH_MAX_ATTEMPTS", " 3 "),
            ("DISPATCHER_REPLICAS", "2"),
            ("DISPATCH_BACKOFF_BASE", "100ms"),
            ("DISPATCH_CONCURRENCY", ""),
        ]),
    )
    .unwrap();
    assert_eq!(s.dispatch.pair_interval, Duration::ZERO);
    assert_eq!(s.dispatch.max_attempts, 3);
    assert_eq!(s.dispatch.replicas, 2);
    assert_eq!(s.dispatch.backoff_base, Duration::from_millis(100));
    assert_eq!(s.dispatch.concurrency, 64);
}

#[test]
fn dispatch_messages_keep_their_wording() {
    for (pairs, line) in [
        (
            vec![("DISPATCHER_REPLICAS", "0")],
            "DISPATCHER_REPLICAS: `0` is not a whole number of at least 1",
        ),
        (
            vec![("DISPATCH_ACK_WAIT", "500ms")],
            "DISPATCH_ACK_WAIT: must be at least 1s",
        ),
        (
            vec![("DISPATCH_LEASE", "0")],
            "DISPATCH_LEASE: must be at least 1s",
        ),
        (
            vec![("PLATFORM_TIMEOUT", "0s")],
            "PLATFORM_TIMEOUT: must be more than 0",
        ),
        (
            vec![
                ("DISPATCH_BACKOFF_BASE", "10m"),
                ("DISPATCH_BACKOFF_CAP", "1m"),
            ],
            "DISPATCH_BACKOFF_CAP: must not be shorter than DISPATCH_BACKOFF_BASE",
        ),
        (
            vec![("SCHEDULER_POLL_INTERVAL", "0s")],
            "SCHEDULER_POLL_INTERVAL: must be greater than zero",
        ),
    ] {
        let err = Settings::from_sources(None, &env(&pairs)).unwrap_err();
        assert_eq!(err.to_string(), line);
    }
}

#[test]
fn config_file_takes_dispatch_keys() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("warden.toml");
    std::fs::write(
        &path,
        "dispatch_lease = \"90s\"\ndispatch_concurrency = 8\n",
    )
    .unwrap();
    let s = Settings::from_sources(Some(&path), &env(&[("DISPATCH_CONCURRENCY", "16")])).unwrap();
    assert_eq!(s.dispatch.lease, Duration::from_secs(90));
    assert_eq!(s.dispatch.concurrency, 16);
}

#[test]
fn hostname_comes_from_the_environment_only() {
    let s = Settings::from_sources(None, &env(&[("HOSTNAME", "node-7")])).unwrap();
    assert_eq!(s.hostname.as_deref(), Some("node-7"));
    let s = Settings::from_sources(None, &env(&[("HOSTNAME", "")])).unwrap();
    assert_eq!(s.hostname, None);
}

#[test]
fn print_config_redacts_secrets() {
    let s = Settings::from_sources(
        None,
        &env(&[
            ("DB_PASSWORD", "db-pw-1"),
            ("REDIS_PASSWORD", "redis-pw-2"),
            ("PLATFORM_ACCESS_TOKEN", "tok-3"),
            ("PLATFORM_WEBHOOK_VERIFY_TOKEN", "verify-4"),
            ("PLATFORM_APP_SECRET", "app-secret-5"),
            ("DB_HOST", "db.internal"),
        ]),
    )
    .unwrap();
    let text = s.print_config();
    for secret in ["db-pw-1", "redis-pw-2", "tok-3", "verify-4", "app-secret-5"] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    for line in [
        "db_password = \"<redacted>\"",
        "redis_password = \"<redacted>\"",
        "platform_access_token = \"<redacted>\"",
        "platform_webhook_verify_token = \"<redacted>\"",
        "platform_app_secret = \"<redacted>\"",
        "db_host = \"db.internal\"",
        "server_http_port = 8080",
        "dispatch_backoff_cap = \"5m\"",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    for variable in [
        "DB_PASSWORD",
        "PLATFORM_ACCESS_TOKEN",
        "PLATFORM_APP_SECRET",
        "X_TOKEN",
    ] {
        assert!(is_secret(variable), "{variable}");
    }
    assert!(!is_secret("DB_HOST"));
    // Unset ones are comments; an empty password is not hidden.
    let text = Settings::from_sources(None, &env(&[]))
        .unwrap()
        .print_config();
    assert!(text.contains("# platform_app_secret is not set"), "{text}");
    assert!(text.lines().any(|l| l == "redis_password = \"\""), "{text}");
}

#[test]
fn without_senders_path_one_default_sender_from_platform() {
    let mut s = Settings::from_sources(
        None,
        &env(&[
            ("PLATFORM_ACCESS_TOKEN", "tok-1"),
            ("PLATFORM_PHONE_NUMBER_ID", "555"),
            ("PLATFORM_APP_SECRET", "app-2"),
        ]),
    )
    .unwrap();
    assert_eq!(s.senders_path, None);
    assert!(s.senders_file.is_none());
    let senders = s.senders();
    assert_eq!(senders.ids(), ["default"]);
    assert_eq!(senders.default().phone_number_id, "555");
    assert_eq!(senders.default().access_token.expose(), "tok-1");
    assert!(s.print_config().contains(
        "# senders_path is not set (one sender, `default`, from the PLATFORM_* variables)"
    ));
    // Follows `platform` as it is now (tests change it after loading).
    s.platform.access_token = "tok-3".into();
    assert_eq!(s.senders().default().access_token.expose(), "tok-3");
}

#[test]
fn senders_path_is_loaded_and_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("senders.yaml");
    std::fs::write(&path, include_str!("../../../examples/senders.yaml")).unwrap();
    let shown = path.display().to_string();
    let vars = [
        ("SENDERS_PATH", shown.as_str()),
        ("SENDER_A1_TOKEN", "tok-a1"),
        ("SENDER_A2_TOKEN", "tok-a2"),
        ("SENDER_B1_TOKEN", "tok-b1"),
        ("SENDER_A_APP_SECRET", "app-a"),
        ("SENDER_B_APP_SECRET", "app-b"),
    ];
    let s = Settings::from_sources(None, &env(&vars)).unwrap();
    assert_eq!(s.senders_path.as_deref(), Some(path.as_path()));
    assert_eq!(s.senders().ids(), ["a1", "a2", "b1"]);
    assert_eq!(s.senders().default().access_token.expose(), "tok-a1");
    // The default sender's mps, not RATE_LIMIT_MPS, until the platform says.
    let with_limit = [&vars[..], &[("RATE_LIMIT_MPS", "25")]].concat();
    let limited = Settings::from_sources(None, &env(&with_limit)).unwrap();
    assert_eq!(
        limited.configured_mps(),
        (80, "senders file: mps 80 of sender a1".to_string())
    );
    let plain = Settings::from_sources(None, &env(&[("RATE_LIMIT_MPS", "25")])).unwrap();
    assert_eq!(
        plain.configured_mps(),
        (25, "RATE_LIMIT_MPS=25".to_string())
    );
    let text = s.print_config();
    assert!(
        text.lines()
            .any(|l| l == format!("senders_path = \"{shown}\"")),
        "{text}"
    );
    for secret in ["tok-a1", "tok-a2", "app-a"] {
        assert!(!text.contains(secret));
        assert!(!format!("{s:?}").contains(secret));
    }

    // Missing variables: every one is a problem of SENDERS_PATH, with the other bad
    // settings; never a value.
    let mut bad = vars[..2].to_vec();
    bad.push(("TIER", "gold"));
    let err = Settings::from_sources(None, &env(&bad)).unwrap_err();
    let problems = err.problems();
    assert_eq!(problems.len(), 6, "{problems:#?}");
    assert!(problems[0].starts_with("TIER: "), "{problems:#?}");
    assert_eq!(
        problems[1],
        format!(
            "SENDERS_PATH: {shown}: line 12: senders[0].app_secret_env: `SENDER_A_APP_SECRET` is not set"
        )
    );
    assert!(
        problems[1..]
            .iter()
            .all(|p| p.starts_with("SENDERS_PATH: "))
    );
    assert!(!err.to_string().contains("tok-a1"));

    // The secrets come from the environment only, not from the config file.
    let config = dir.path().join("warden.toml");
    std::fs::write(&config, "sender_a1_token = \"tok\"\n").unwrap();
    assert!(Settings::from_sources(Some(&config), &env(&vars)).is_err());

    // A path that is set but missing stops start-up too.
    let err =
        Settings::from_sources(None, &env(&[("SENDERS_PATH", "/nonexistent/s.yaml")])).unwrap_err();
    assert_eq!(err.problems().len(), 1);
    assert!(
        err.to_string()
            .starts_with("SENDERS_PATH: cannot read /nonexistent/s.yaml: "),
        "{err}"
    );
}

#[test]
fn printed_config_reads_back_as_the_same_settings() {
    let s = Settings::from_sources(
        None,
        &env(&[
            ("DB_HOST", "db \"quoted\" host"),
            ("SCHEDULER_POLL_INTERVAL", "500ms"),
            ("ADMIN_HTTP_PORT", "9191"),
            ("DISPATCH_UNKNOWN_MAX_WAIT", "1h"),
        ]),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("printed.toml");
    // Secrets are redacted: drop their lines, the defaults fill them in again.
    let printed: String = s
        .print_config()
        .lines()
        .filter(|l| !l.contains(REDACTED))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&path, printed).unwrap();
    let back = Settings::from_sources(Some(&path), &env(&[])).unwrap();
    assert_eq!(back.print_config(), s.print_config());
}
