//! `warden-admin operators ...`, run as the built binary against a fresh database: create
//! prints a one-time password alone on stdout (or takes one from stdin), list shows every
//! operator without secrets, disable ends its sessions; bad input is exit 2.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use warden_store::testing::TestDatabase;
use warden_test_support::procs;

fn admin(db: &TestDatabase, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_warden-admin"))
        .env_clear()
        .envs(procs::env_of(&db.settings))
        .env("POLICIES_PATH", warden_test_support::policies_path())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run warden-admin");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn create_list_disable() {
    let db = TestDatabase::create();
    let out = admin(
        &db,
        &["operators", "create", "ana", "--role", "admin"],
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let password = text(&out.stdout);
    let password = password.trim();
    assert!(
        password.len() >= 20,
        "a one-time password alone on stdout: {password:?}"
    );
    assert!(text(&out.stderr).contains("shown once"));

    let out = admin(
        &db,
        &[
            "operators",
            "create",
            "vi",
            "--role",
            "viewer",
            "--password-stdin",
        ],
        Some("a long enough passphrase\n"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        out.stdout.is_empty(),
        "nothing printed when the password was given"
    );

    let out = admin(&db, &["operators", "list"], None);
    let list = text(&out.stdout);
    assert!(
        list.contains("ana\tadmin\tactive") && list.contains("vi\tviewer\tactive"),
        "{list}"
    );
    assert!(
        !list.contains(password) && !list.contains("argon2"),
        "{list}"
    );

    let out = admin(&db, &["operators", "disable", "vi"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list = text(&admin(&db, &["operators", "list"], None).stdout);
    assert!(list.contains("vi\tviewer\tdisabled"), "{list}");

    for (args, stdin, says) in [
        (
            vec!["operators", "create", "ana", "--role", "admin"],
            None,
            "already exists",
        ),
        (
            vec!["operators", "create", "bo", "--role", "boss"],
            None,
            "viewer, operator or admin",
        ),
        (
            vec!["operators", "create", "Bo", "--role", "viewer"],
            None,
            "lower-case",
        ),
        (
            vec![
                "operators",
                "create",
                "cy",
                "--role",
                "viewer",
                "--password-stdin",
            ],
            Some("short\n"),
            "at least 12 characters",
        ),
        (
            vec!["operators", "disable", "nobody"],
            None,
            "no operator named `nobody`",
        ),
    ] {
        let out = admin(&db, &args, stdin);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains(says),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
