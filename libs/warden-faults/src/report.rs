//! How the drill executables talk to `fault-drills`: human-readable lines go to stderr,
//! and stdout carries exactly one line, the JSON report that `fault-drills` parses.

use std::io::Write;
use std::process::ExitCode;

/// Write the one JSON report line to stdout.
pub fn emit(report: &serde_json::Value) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (the caller went away) leaves nobody to tell.
    let _ = writeln!(out, "{report}");
}

/// Exit status for bad arguments: the reason and the usage text on stderr, code 2.
pub fn usage_error(tool: &str, usage: &str, reason: &str) -> ExitCode {
    if !reason.is_empty() {
        eprintln!("{tool}: {reason}");
    }
    eprintln!("{usage}");
    ExitCode::from(2)
}

/// Exit status of a drill run: 0 when it passed, 1 when it failed or could not run.
pub fn exit_code(tool: &str, outcome: anyhow::Result<bool>) -> ExitCode {
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("{tool}: {e:#}");
            ExitCode::FAILURE
        }
    }
}
