//! `warden-admin senders check FILE`, run as the built binary: a good file prints one `ok`
//! line and exits 0; a bad one prints every problem with its line and exits 1. The
//! variables the file names are read from the command's own environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EXAMPLE: &str = include_str!("../../../examples/senders.yaml");

/// The example's variables, with values that must never be printed.
const EXAMPLE_ENV: &[(&str, &str)] = &[
    ("SENDER_A1_TOKEN", "tok-a1-VALUE"),
    ("SENDER_A2_TOKEN", "tok-a2-VALUE"),
    ("SENDER_B1_TOKEN", "tok-b1-VALUE"),
    ("SENDER_A_APP_SECRET", "app-a-VALUE"),
    ("SENDER_B_APP_SECRET", "app-b-VALUE"),
];

fn check(file: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden-admin"))
        .args(["senders", "check"])
        .arg(file)
        // Only what the test gives: the result must not depend on the caller's shell.
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .expect("run warden-admin")
}

fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
    let path = dir.path().join("senders.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_no_secret(out: &Output) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    for (_, value) in EXAMPLE_ENV {
        assert!(!all.contains(value), "{value} printed:\n{all}");
    }
}

#[test]
fn a_good_file_is_ok() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, EXAMPLE);
    let out = check(&path, EXAMPLE_ENV);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "ok: 3 senders (a1, a2, b1), default a1\n"
    );
    assert_no_secret(&out);

    // The repository's example, as shipped.
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/senders.yaml");
    let out = check(&shipped, EXAMPLE_ENV);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn every_problem_is_printed_with_its_line_and_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let bad = EXAMPLE
        .replace("id: a2", "id: A2")
        .replace("mps: 80", "mps: 0")
        .replace(
            "phone_number_id: \"104000000000003\"",
            "phone_number_id: \"104000000000001\"",
        );
    let path = write(&dir, &bad);
    let out = check(&path, EXAMPLE_ENV);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    let shown = path.display().to_string();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{shown}: line 13: senders[0].mps: must be at least 1 (leave it out to use what the platform says)"
            ),
            format!(
                "{shown}: line 16: senders[1].id: `A2` is not an id: 1 to 32 of a-z, 0-9, `_`, `-`"
            ),
            format!(
                "{shown}: line 25: senders[2].phone_number_id: `104000000000001` is already the number of senders[0] (line 7)"
            ),
            format!("{shown}: 3 problems"),
        ],
        "{stderr}"
    );
    assert_no_secret(&out);
}

#[test]
fn the_variables_must_be_set_here() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, EXAMPLE);
    // B1's token missing, A's app secret empty.
    let env: Vec<(&str, &str)> = EXAMPLE_ENV
        .iter()
        .copied()
        .filter(|(name, _)| *name != "SENDER_B1_TOKEN")
        .map(|(name, value)| {
            if name == "SENDER_A_APP_SECRET" {
                (name, "")
            } else {
                (name, value)
            }
        })
        .collect();
    let out = check(&path, &env);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let shown = path.display().to_string();
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            format!("{shown}: line 12: senders[0].app_secret_env: `SENDER_A_APP_SECRET` is empty"),
            format!("{shown}: line 21: senders[1].app_secret_env: `SENDER_A_APP_SECRET` is empty"),
            format!("{shown}: line 28: senders[2].access_token_env: `SENDER_B1_TOKEN` is not set"),
            format!("{shown}: 3 problems"),
        ],
        "{stderr}"
    );
    assert_no_secret(&out);
}

#[test]
fn a_missing_file_is_a_problem_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.yaml");
    let out = check(&path, EXAMPLE_ENV);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!("cannot read {}: ", path.display())),
        "{stderr}"
    );
}
