//! `warden-admin operators ...`: the console's operators. Flags in, one
//! `warden_core::operators` call, a line out.

use std::io::Read as _;

use clap::Subcommand;
use warden_core::operators::{self, OperatorError, OperatorView, Role};
use warden_service::StartError;
use warden_store::PgPool;

#[derive(Subcommand)]
pub enum OperatorsCommand {
    /// Create an operator of the console. Without --password-stdin a one-time password is
    /// generated and printed (shown once; only an argon2 hash is kept).
    Create {
        /// The operator's name (audited as `operator:NAME`).
        name: String,
        /// viewer (reads only), operator (reads and acts) or admin.
        #[arg(long)]
        role: String,
        /// Read the password from standard input (its first line; at least 12 characters).
        #[arg(long)]
        password_stdin: bool,
    },
    /// List operators (name, role, status, created); never the hashes.
    List,
    /// Refuse the operator's logins from now on and end its sessions (its history stays
    /// attributed to it).
    Disable { name: String },
}

/// Bad input on the command line or standard input (exit code 2).
#[derive(Debug)]
struct Input(String);

impl std::fmt::Display for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Input {}

fn fail(e: OperatorError) -> StartError {
    match e {
        OperatorError::Core(e) => StartError::Failed(anyhow::anyhow!("postgres: {e}")),
        other => StartError::config(other),
    }
}

fn describe(o: &OperatorView) -> String {
    format!(
        "{}\t{}\t{}\t{}",
        o.name,
        o.role.as_str(),
        o.status,
        o.created_at.format("%Y-%m-%dT%H:%M:%SZ")
    )
}

pub async fn run(pg: &PgPool, command: OperatorsCommand, actor: &str) -> Result<(), StartError> {
    match command {
        OperatorsCommand::Create {
            name,
            role,
            password_stdin,
        } => {
            let role = Role::parse(&role).map_err(fail)?;
            let password = if password_stdin {
                let mut raw = String::new();
                std::io::stdin()
                    .read_to_string(&mut raw)
                    .map_err(|e| StartError::config(Input(format!("standard input: {e}"))))?;
                Some(raw.lines().next().unwrap_or_default().to_string())
            } else {
                None
            };
            let created = operators::create(pg, &name, role, password, actor)
                .await
                .map_err(fail)?;
            match created.generated_password {
                Some(password) => {
                    eprintln!(
                        "operator {} created; its one-time password follows (shown once, store it now):",
                        describe(&created.operator)
                    );
                    // The password alone on stdout, so it can be piped into a secret store.
                    println!("{password}");
                }
                None => eprintln!("operator {} created", describe(&created.operator)),
            }
        }
        OperatorsCommand::List => {
            println!("name\trole\tstatus\tcreated_at");
            for o in operators::list(pg).await.map_err(fail)? {
                println!("{}", describe(&o));
            }
        }
        OperatorsCommand::Disable { name } => {
            let o = operators::disable(pg, &name, actor).await.map_err(fail)?;
            eprintln!("operator {} is now {}", o.name, o.status);
        }
    }
    Ok(())
}
