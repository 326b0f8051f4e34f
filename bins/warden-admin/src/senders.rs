//! `warden-admin senders check FILE`: the senders file checked as a process would at start,
//! without settings or a database (usable in CI on a change of the file alone).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use warden_settings::Senders;

#[derive(Subcommand)]
pub enum SendersCommand {
    /// Check a senders file (SENDERS_PATH): its fields, unique ids and numbers, exactly one
    /// default, and that every variable it names is set and not empty in this environment.
    /// Prints `ok: N senders (ids), default ID`, or every problem with its line and exits 1.
    Check {
        /// The senders file (YAML).
        file: PathBuf,
    },
}

/// Run the command; its exit code (0: the file is good, 1: problems, each printed).
pub fn run(command: &SendersCommand) -> i32 {
    match command {
        SendersCommand::Check { file } => check(file),
    }
}

fn check(file: &Path) -> i32 {
    let env = warden_settings::process_env();
    match Senders::load(file, &|name| env.get(name).cloned()) {
        Ok(senders) => {
            println!("ok: {}", senders.summary());
            0
        }
        Err(e) => {
            let lines = e.lines();
            for line in &lines {
                eprintln!("{line}");
            }
            let n = lines.len();
            eprintln!(
                "{}: {n} problem{}",
                file.display(),
                if n == 1 { "" } else { "s" }
            );
            1
        }
    }
}
